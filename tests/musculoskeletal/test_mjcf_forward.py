"""`myotwin mjcf forward` (`musculoskeletal.mjcf_forward`) on MyoSuite's elbows against MuJoCo.

* The command's states.csv against mj_step with MuJoCo's RK4 at the same step, and with the
  file's own integrator (MuJoCo's Euler, implicit joint damping) and step, from the same
  state (hinges set by --initial-q, activations by --initial-activation) with the same
  constant ctrl by actuator name (TRImed's 0 is below the ctrlrange [0.001, 1], which both
  clamp): q within 1e-9 rad and act within
  1e-10 at every written row (the rollout test's tolerances, test_mjcf_muscles.py; observed
  ~1e-14), and muscle_forces.csv against -actuator_force of mj_forward at each written state
  (1e-9 N, forces up to ~1 kN).
* --muscle-mass-kg reaches the model: the run equals `inertia.with_muscle_mass` on the named
  muscles' paths followed by `musculoskeletal.rollout` (1e-12 rad; the physics of the mass
  points is checked in tests/inertia), and the mass slows the arm (a heavier limb, the same
  muscles).
* A step too large for the muscles' 10 ms activation dynamics diverges: the rows before it
  are written, the exit status is 3 and summary.json says so.
* Bad input is one line naming the file or field and the value (exit status 2); a model with
  contacts outside the engine's dynamics (MyoSuite's finger) is refused so, with the hint of
  --disable-contact, and with it runs as mj_step with MuJoCo's contact disabled.
"""

from __future__ import annotations

import csv
import json
import re

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import inertia
from myotwin.cli.main import main
from myotwin.engine.integrators import Integrator
from myotwin.musculoskeletal import (MusculoskeletalState, load_mjcf, musculoskeletal_model,
                                     rollout, with_muscle_masses)
from myotwin.musculoskeletal.mjcf_forward import file_integrator, without_contact
from shared_reference import SHARED

MYOSUITE = SHARED / "reference" / "mujoco" / "myosuite"
ELBOW2 = MYOSUITE / "myoelbow_2dof6muscles_nomesh.xml"
ELBOW1 = MYOSUITE / "myoelbow_1dof6muscles_nomesh.xml"
EXCITATION = {"TRIlong": 0.8, "TRIlat": 0.1, "TRImed": 0.0, "BIClong": 0.9, "BICshort": 0.4,
              "BRA": 1.0}


def _need(path):
    if not path.exists():
        pytest.skip(f"MyoSuite reference model {path} is absent")


def _table(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=float)


def _run(tmp_path, *args):
    status = main(["mjcf", "forward", *map(str, args), "--out", str(tmp_path)])
    return status, json.loads((tmp_path / "summary.json").read_text())


def _vs_mujoco_loop(m, states, n_steps, every, ctrl_at, key: int | None = None):
    """(largest |q| error, largest |act| error, largest joint travel) of states.csv rows
    against mj_step from MuJoCo's reset state (or keyframe `key`'s), d.ctrl = ctrl_at(k) set
    before step k, every `every`-th state from the first."""
    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, key)
    ref = [np.concatenate([d.qpos, d.act])]
    for k in range(n_steps):
        d.ctrl[:] = ctrl_at(k)
        mujoco.mj_step(m, d)
        ref.append(np.concatenate([d.qpos, d.act]))
    ref = np.array(ref)[::every]
    return (np.abs(states[:, 1:1 + m.nq] - ref[:, :m.nq]).max(),
            np.abs(states[:, 1 + m.nq + m.nv:] - ref[:, m.nq:]).max(),
            np.ptp(ref[:, :m.nq], axis=0).max())


@pytest.mark.parametrize("integrator", ["rk4", "file"])
def test_states_and_forces_match_mujoco(tmp_path, integrator):
    """RK4 at 1 ms, and the file's own settings (MuJoCo's default Euler, its joint damping
    0.5 integrated implicitly, at the file's 2 ms) with no --integrator or --dt-s given."""
    _need(ELBOW2)
    m = mujoco.MjModel.from_xml_path(str(ELBOW2))
    joints = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    q0 = np.clip([0.9, 0.3], m.jnt_range[:, 0], m.jnt_range[:, 1])
    step = ["--dt-s", 1e-3, "--integrator", "rk4"] if integrator == "rk4" else []
    status, summary = _run(
        tmp_path, ELBOW2, "--excitation", *(f"{k}={v}" for k, v in EXCITATION.items()),
        "--initial-q", *(f"{j}={v}" for j, v in zip(joints, q0)),
        "--initial-activation", "0.2", "--duration-s", 0.3, *step, "--record-every-s", 2e-3)
    assert status == 0 and summary["message"] == "completed" and summary["rows_written"] == 151
    assert summary["integrator"] == ("rk4" if integrator == "rk4" else "euler")
    labels, states = _table(tmp_path / "states.csv")
    f_labels, forces = _table(tmp_path / "muscle_forces.csv")
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu)]
    assert labels == ["time_s", *(f"q:{j}" for j in joints), *(f"qd:{j}" for j in joints),
                      *(f"activation:{n}" for n in names)]
    assert f_labels == ["time_s", *names]

    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER and m.opt.timestep == 2e-3
    if integrator == "rk4":
        m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-3
    d = mujoco.MjData(m)
    d.qpos[:], d.act[:] = q0, 0.2
    d.ctrl[:] = [EXCITATION[n] for n in names]
    ref = [np.concatenate([d.qpos, d.qvel, d.act])]
    for _ in range(round(0.3 / m.opt.timestep)):
        mujoco.mj_step(m, d)
        ref.append(np.concatenate([d.qpos, d.qvel, d.act]))
    ref = np.array(ref)[::round(2e-3 / m.opt.timestep)]
    nq = m.nq + m.nv
    err_q = np.abs(states[:, 1:1 + m.nq] - ref[:, :m.nq]).max()
    err_a = np.abs(states[:, 1 + nq:] - ref[:, nq:]).max()
    err_f = 0.0
    check = mujoco.MjData(m)
    for row, f in zip(states, forces):
        check.qpos[:], check.qvel[:], check.act[:] = row[1:1 + m.nq], row[1 + m.nq:1 + nq], \
            row[1 + nq:]
        mujoco.mj_forward(m, check)
        err_f = max(err_f, np.abs(f[1:] + check.actuator_force).max())
    travel = np.ptp(ref[:, :m.nq], axis=0).max()
    print(f"q {err_q:.1e} rad, act {err_a:.1e}, force {err_f:.1e} N (travel {travel:.2f} rad)")
    assert travel > 0.2
    assert err_q <= 1e-9 and err_a <= 1e-10 and err_f <= 1e-9
    assert np.allclose(states[:, 0], np.arange(151) * 2e-3, atol=1e-12)


_KEY = ('<keyframe><key name="bent" time="0.25" qpos="1.1 0.4" qvel="-2 1.5" '
        'act="0.3 0.1 0.6 0.2 0.5 0.05" ctrl="0.9 0.1 0.7 0.2 0.3 1"/></keyframe>')


def test_a_keyframe_starts_the_run_as_mj_resetdatakeyframe(tmp_path):
    """--keyframe: the elbow from a <key> (qpos, qvel, act, time 0.25 s, ctrl), its ctrl the
    muscles' excitations but TRIlat's (given 0.8), and q2's speed replaced (--initial-qd),
    against mj_step after mj_resetDataKeyframe (RK4, 1 ms): the tolerances of the run above
    (q 1e-9 rad, act 1e-10) and the key's time in the time column."""
    _need(ELBOW2)
    model = tmp_path / "elbow_key.xml"
    model.write_text(ELBOW2.read_text().replace("</mujoco>", _KEY + "</mujoco>"))
    m = mujoco.MjModel.from_xml_path(str(model))
    joints = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    out = tmp_path / "run"
    status, summary = _run(out, model, "--keyframe", "bent", "--excitation", "TRIlat=0.8",
                           "--initial-qd", f"{joints[1]}=0.5", "--duration-s", 0.1,
                           "--dt-s", 1e-3, "--integrator", "rk4", "--record-every-s", 1e-2)
    assert status == 0 and summary["keyframe"] == "bent" and summary["start_time_s"] == 0.25
    _, states = _table(out / "states.csv")
    m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-3
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qvel[m.jnt_dofadr[1]] = 0.5
    d.ctrl[1] = 0.8
    ref = [np.concatenate([[d.time], d.qpos, d.qvel, d.act])]
    for _ in range(100):
        mujoco.mj_step(m, d)
        ref.append(np.concatenate([[d.time], d.qpos, d.qvel, d.act]))
    ref = np.array(ref)[::10]
    np.testing.assert_allclose(states[:, 0], ref[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(states[0, 1:], ref[0, 1:])
    err_q = np.abs(states[:, 1:1 + m.nq] - ref[:, 1:1 + m.nq]).max()
    err_a = np.abs(states[:, 1 + m.nq + m.nv:] - ref[:, 1 + m.nq + m.nv:]).max()
    travel = np.ptp(ref[:, 1:1 + m.nq], axis=0).max()
    print(f"from keyframe 'bent': q {err_q:.1e} rad, act {err_a:.1e} (travel {travel:.2f} rad)")
    assert travel > 0.05 and err_q <= 1e-9 and err_a <= 1e-10
    # a key ctrl outside [0, 1] is refused for a muscle that takes it, not for one given its
    # excitation
    model.write_text(ELBOW2.read_text().replace(
        "</mujoco>", _KEY.replace('ctrl="0.9 0.1', 'ctrl="0.9 1.5') + "</mujoco>"))
    assert main(["mjcf", "forward", str(model), "--keyframe", "bent", "--duration-s", "0.01",
                 "--out", str(tmp_path / "refused")]) == 2
    assert not (tmp_path / "refused").exists()
    status, _ = _run(tmp_path / "given", model, "--keyframe", "0", "--excitation",
                     "TRIlat=0.8", "--duration-s", 0.01)
    assert status == 0


def test_muscle_mass_reaches_the_model_and_slows_the_arm(tmp_path):
    _need(ELBOW1)
    args = (ELBOW1, "--excitation", "BIClong=1", "BRA=1", "--duration-s", 0.1, "--dt-s", 1e-3)
    status, light = _run(tmp_path / "light", *args)
    assert status == 0
    masses = {"BICshort": 0.3}     # a via-point path (a wrapped one compiles for ~25 s more)
    status, heavy = _run(tmp_path / "heavy", *args, "--muscle-mass-kg",
                         *(f"{k}={v}" for k, v in masses.items()), "--mass-points", 5)
    assert status == 0 and heavy["mass_points"] == 5
    assert heavy["muscle_mass_kg"] == {"TRIlong": 0.0, "TRIlat": 0.0, "TRImed": 0.0,
                                       "BIClong": 0.0, "BRA": 0.0, **masses}
    _, states = _table(tmp_path / "heavy" / "states.csv")

    msm = load_mjcf(ELBOW1)
    skeleton = msm.skeleton
    for name, kg in masses.items():
        skeleton = inertia.with_muscle_mass(skeleton, f"{name}_tendon", kg, 5)
    heavy_msm = musculoskeletal_model(skeleton, msm.muscles, paths=list(msm.muscle_path))
    u = jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 1.0])
    s0 = MusculoskeletalState(jnp.zeros(1), jnp.zeros(1), jnp.zeros(6), jnp.zeros(6))
    ref = rollout(heavy_msm, s0, u, 1e-3, 100, Integrator.EULER)  # the file's integrator
    assert np.abs(states[:, 1] - np.asarray(ref.q[:, 0])).max() <= 1e-12
    (joint,) = light["final_q"]
    assert 0.0 < heavy["final_q"][joint] < light["final_q"][joint]   # flexed, less far


def test_an_implicit_integrator_in_the_file_needs_the_choice_made(tmp_path, capsys):
    _need(ELBOW1)
    text = ELBOW1.read_text().replace('<option timestep="0.002"/>',
                                      '<option timestep="0.002" integrator="implicitfast"/>')
    assert "implicitfast" in text
    path = tmp_path / "implicit_elbow.xml"   # the file has no meshes to find
    path.write_text(text)
    status = main(["mjcf", "forward", str(path), "--out", str(tmp_path / "o"),
                   "--excitation", "0.5", "--duration-s", "0.01"])
    err = capsys.readouterr().err
    assert status == 2 and 'integrator="implicitfast"> is not offered' in err
    assert not (tmp_path / "o").exists()
    status, summary = _run(tmp_path / "rk4", path, "--excitation", "0.5", "--duration-s",
                           "0.01", "--integrator", "rk4")
    assert status == 0 and summary["integrator"] == "rk4"


def test_a_diverging_run_keeps_its_rows_and_says_so(tmp_path):
    _need(ELBOW1)
    status, summary = _run(tmp_path, ELBOW1, "--excitation", 1, "--duration-s", 2,
                           "--dt-s", 0.2, "--integrator", "rk4")
    assert status == 3 and summary["diverged"]
    assert "not finite or exceeds 1e+10 (MuJoCo's bound" in summary["message"]
    _, states = _table(tmp_path / "states.csv")
    assert summary["rows_written"] == len(states) >= 2 and np.isfinite(states).all()


def test_a_run_past_mujocos_bound_of_an_unstable_simulation_stops(tmp_path):
    """Semi-implicit Euler at 0.5 s steps: the state grows without becoming inf or NaN for
    many steps (q 1.2 -> 1.5e3 -> -2.4e5 ... rad). MuJoCo's mj_step calls such a state unstable
    once an entry exceeds 1e10 (mjMAXVAL); ours stops there with exit 3, and every row written
    is within that bound."""
    _need(ELBOW1)
    status, summary = _run(tmp_path, ELBOW1, "--excitation", 1, "--duration-s", 5,
                           "--dt-s", 0.5, "--integrator", "semi_implicit_euler")
    assert status == 3 and summary["diverged"] and summary["steps_done"] < 10, summary
    _, states = _table(tmp_path / "states.csv")
    assert np.abs(states).max() <= 1e10 and np.abs(states).max() > 1e3


@pytest.mark.parametrize("args, message", [
    (["--excitation", "BICEPS=1"], "excitation: no such name 'BICEPS'"),
    (["--excitation", "1.5"], "excitation of 'TRIlong' must be in [0, 1], got 1.5"),
    (["--excitation", "1", "--initial-q", "knee=0.1"], "initial q: no joint named 'knee'"),
    (["--excitation", "1", "--initial-qd", "knee=0.1"], "initial qd: no joint named 'knee'"),
    (["--keyframe", "home"], "no keyframe 'home'; the keyframes are []"),
    (["--excitation", "1", "--duration-s", "0.0105", "--dt-s", "0.002"],
     "duration_s 0.0105 must be a whole number of steps"),
    (["--excitation", "1", "--muscle-mass-kg", "BRA=-1"],
     "muscle mass of 'BRA' must be >= 0 kg, got -1.0"),
    (["--excitation", "1", "--ctrl", "motor=1"], "ctrl: no such name 'motor'"),
    (["--excitation", "BRA=0.2", "BRA=0.9"], "BRA is given twice (BRA=0.2 and BRA=0.9)"),
    # float() read "0_5" as 5 (rad) and "0_0" as 0
    (["--excitation", "1", "--initial-q", "r_elbow_flex=0_5"],
     "--initial-q: '0_5' (for r_elbow_flex) is not a number"),
    (["--excitation", "0_0"], "--excitation: '0_0' is not a number"),
])
def test_bad_input_is_one_line_naming_the_field(tmp_path, capsys, args, message):
    _need(ELBOW1)
    status = main(["mjcf", "forward", str(ELBOW1), "--out", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("mass_points", [0, 2.5, True])
def test_mass_points_must_be_a_positive_integer(tmp_path, mass_points):
    """(int(2.5) = 2 points were placed before; True is an int in Python.)"""
    from myotwin.musculoskeletal.mjcf_forward import forward

    _need(ELBOW1)
    with pytest.raises(ValueError, match=rf"mass_points must be a positive integer, got "
                                         rf"{mass_points!r}$"):
        forward(ELBOW1, tmp_path / "out", excitation=1.0, muscle_mass_kg=0.1,
                mass_points=mass_points)
    assert not (tmp_path / "out").exists()


def test_a_non_finite_ctrl_for_every_actuator_is_named(tmp_path):
    """(dict(ctrl) in the message raised "'float' object is not iterable" for one number)"""
    from myotwin.musculoskeletal.mjcf_forward import forward

    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint name="j" type="hinge"/><geom size="0.1" mass="1"/>'
        '<site name="a" pos="0 0 0.1"/></body><site name="b" pos="0 0.2 0.2"/></worldbody>'
        '<tendon><spatial name="t"><site site="a"/><site site="b"/></spatial></tendon>'
        '<actuator><muscle name="mus" tendon="t" lengthrange="0.1 0.4"/>'
        '<motor name="mot" joint="j"/></actuator></mujoco>')
    with pytest.raises(ValueError, match="MJCF model: ctrl must be finite, got nan"):
        forward(m, tmp_path / "out", excitation=0.5, ctrl=float("nan"), duration_s=0.004)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keywords, message", [
    # numbers only: True ran as 1.0 and "0.5" as 0.5, None failed inside float()
    ({"excitation": True}, "excitation must be one number or name -> number, got True"),
    ({"excitation": "0.5"}, "excitation must be one number or name -> number, got '0.5'"),
    ({"excitation": {"BRA": None}}, "excitation of 'BRA' must be a number, got None"),
    ({"activation0": {"BRA": True}}, "initial activation of 'BRA' must be a number, got True"),
    ({"muscle_mass_kg": "0.1"}, "muscle mass must be one number or name -> number, got '0.1'"),
    ({"q0": {"r_elbow_flex": "0.3"}}, "initial q of 'r_elbow_flex' must be a number, got '0.3'"),
    ({"q0": [0.3]}, "initial q must be joint name -> value, got [0.3]"),   # AttributeError
    ({"chunk_steps": 0}, "chunk_steps must be a positive integer, got 0"),   # looped forever
    ({"chunk_steps": 2.5}, "chunk_steps must be a positive integer, got 2.5"),
    ({"disable_contact": "no"}, "disable_contact must be True or False, got 'no'"),
])
def test_bad_python_arguments_are_refused_by_name(tmp_path, keywords, message):
    from myotwin.musculoskeletal.mjcf_forward import forward

    _need(ELBOW1)
    with pytest.raises(ValueError) as err:
        forward(ELBOW1, tmp_path / "out", **{"excitation": 0.5, "duration_s": 0.002,
                                             **keywords})
    assert message in str(err.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    (None, "c.csv: no such controls file"),
    ("time_s,BRA\n", "c.csv: no rows after the header"),
    ("t,BRA\n0,1\n", "c.csv: the header must be time_s followed by actuator names"),
    ("time_s,BRA,BRA\n0,1,1\n", "c.csv: column name 'BRA' is empty or repeated"),
    ("time_s,BRA\n0,1\n0.1\n", "c.csv: row 3 has 1 values, the header 2"),
    ("time_s,BRA\n0,x\n", "c.csv: row 2, column 'BRA': 'x' is not a number"),
    ("\ufefftime_s,BRA\n0,y\n", "c.csv: row 2, column 'BRA': 'y' is not a number"),  # BOM
    ("time_s,BRA\n0,nan\n", "c.csv: row 2, column 'BRA': 'nan' is not finite"),
    ("time_s,BRA\n0,1\n1_0,1\n", "c.csv: row 3, column 'time_s': '1_0' is not a number"),
    ("time_s,BRA\n0,1\n0.2,1\n0.1,1\n",
     "c.csv: row 4: time_s 0.1 does not increase (the row before: 0.2)"),
    ("time_s,BRA,knee\n0,1,0\n", "c.csv: column 'knee' is not an actuator of"),
    ("time_s,BRA\n0,1\n0.1,1.5\n",
     "c.csv: column 'BRA', row 3 (t = 0.1 s): excitation 1.5 is outside [0, 1]"),
    ("", "no excitation: give one (--excitation), a controls file (--controls) or a "
     "keyframe (--keyframe)"),
])
def test_bad_controls_files_are_named(tmp_path, capsys, content, message):
    """--controls: the file, row, column and value at fault, before anything is written."""
    _need(ELBOW1)
    args = [] if content == "" else ["--controls", str(tmp_path / "c.csv")]
    if content:                                      # None: no file
        (tmp_path / "c.csv").write_text(content, encoding="utf-8")
    status = main(["mjcf", "forward", str(ELBOW1), "--out", str(tmp_path / "o"), *args])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


def test_binary_controls_and_mujocos_two_line_errors_are_one_line(tmp_path, capsys):
    """A controls file that is not UTF-8 text is named (it was Python's bare 'utf-8' codec
    message); MuJoCo's compiler message for a missing <include> (two lines: the error, then
    the element) is joined into one."""
    _need(ELBOW1)
    (tmp_path / "c.csv").write_bytes(b"\xff\xfe\x00binary")
    status = main(["mjcf", "forward", str(ELBOW1), "--out", str(tmp_path / "o"), "--controls",
                   str(tmp_path / "c.csv")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "c.csv: not a text (UTF-8) CSV file: invalid start byte at byte 0" in err, err
    model = tmp_path / "include.xml"
    model.write_text('<mujoco><include file="nonexistent_part.xml"/></mujoco>')
    status = main(["mjcf", "forward", str(model), "--out", str(tmp_path / "o"),
                   "--excitation", "0.5"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "include.xml: MuJoCo cannot compile it: " in err and "nonexistent_part.xml" in err
    assert "; Element 'include'" in err, err
    assert not (tmp_path / "o").exists()


def test_controls_file_drives_the_elbow_as_a_mujoco_control_loop(tmp_path):
    """A controls table (BIClong and TRIlong ramps, a BRA column overridden by a constant, one
    muscle constant, the others 0) against mj_step (RK4, 1 ms) with d.ctrl set from the
    table's linear interpolation at each step's start: q within 1e-9 rad and act within 1e-10
    (the constant-input tolerances above). 0.25 s runs past the table's last row (0.2 s), where
    the values hold; three chunks of 100 steps, the last one partial, check that each chunk
    takes its own rows of the table."""
    from myotwin.musculoskeletal.mjcf_forward import forward

    _need(ELBOW2)
    table = np.array([[0.0, 0.0, 0.9, 0.0], [0.05, 1.0, 0.1, 0.2], [0.12, 0.3, 0.0, 0.9],
                      [0.2, 0.6, 0.5, 0.4]])
    path = tmp_path / "controls.csv"
    path.write_text("time_s,BIClong,TRIlong,BRA\n"
                    + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in table))
    constant = {"TRIlat": 0.3, "BRA": 0.7}
    summary = forward(ELBOW2, tmp_path / "out", excitation=constant, controls=path,
                      duration_s=0.25, dt_s=1e-3, integrator="rk4", record_every_s=5e-3,
                      chunk_steps=100)
    assert summary["message"] == "completed" and summary["rows_written"] == 51
    assert summary["controls_columns"] == ["TRIlong", "BIClong"]     # the model's order
    assert summary["controls_file"] == str(path)
    _, states = _table(tmp_path / "out" / "states.csv")

    m = mujoco.MjModel.from_xml_path(str(ELBOW2))
    m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-3
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu)]
    column = {"BIClong": 1, "TRIlong": 2}
    err_q, err_a, travel = _vs_mujoco_loop(m, states, 250, 5, lambda k: [
        constant[n] if n in constant else
        np.interp(k * 1e-3, table[:, 0], table[:, column[n]]) if n in column else 0.0
        for n in names])
    print(f"controls file: q {err_q:.1e} rad, act {err_a:.1e}")
    assert travel > 0.1
    assert err_q <= 1e-9 and err_a <= 1e-10


def test_a_keyframe_and_a_controls_file_drive_the_elbow_as_a_mujoco_control_loop(tmp_path):
    """--keyframe with --controls: the file is read at absolute times from the key's time
    (0.25 s), as a MuJoCo loop reading d.time; muscles without a column take the key's ctrl.
    Against mj_step after mj_resetDataKeyframe (RK4, 1 ms) with d.ctrl set from the table at
    each step's start: the tolerances above (q 1e-9 rad, act 1e-10)."""
    _need(ELBOW2)
    model = tmp_path / "elbow_key.xml"
    model.write_text(ELBOW2.read_text().replace("</mujoco>", _KEY + "</mujoco>"))
    table = np.array([[0.2, 0.1, 0.8], [0.3, 0.9, 0.2], [0.4, 0.4, 0.6]])
    path = tmp_path / "controls.csv"
    path.write_text("time_s,BIClong,TRIlong\n"
                    + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in table))
    status, summary = _run(tmp_path / "run", model, "--keyframe", "bent", "--controls", path,
                           "--duration-s", 0.1, "--dt-s", 1e-3, "--integrator", "rk4",
                           "--record-every-s", 1e-2)
    assert status == 0 and summary["start_time_s"] == 0.25
    _, states = _table(tmp_path / "run" / "states.csv")
    m = mujoco.MjModel.from_xml_path(str(model))
    m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-3
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu)]
    key_ctrl = np.array(m.key_ctrl[0])
    column = {"BIClong": 1, "TRIlong": 2}
    err_q, err_a, travel = _vs_mujoco_loop(m, states, 100, 10, lambda k: [
        np.interp(0.25 + k * 1e-3, table[:, 0], table[:, column[n]]) if n in column
        else key_ctrl[a] for a, n in enumerate(names)], key=0)
    print(f"keyframe and controls file: q {err_q:.1e} rad, act {err_a:.1e}")
    assert travel > 0.05
    assert err_q <= 1e-9 and err_a <= 1e-10


def test_missing_and_broken_files_are_named(tmp_path, capsys):
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body></mujoco>")
    for path, message in ((tmp_path / "none.xml", "none.xml: no such MJCF file"),
                          (tmp_path, f"{tmp_path}: is a directory, not an MJCF file"),
                          (broken, "broken.xml: MuJoCo cannot compile it")):
        status = main(["mjcf", "forward", str(path), "--out", str(tmp_path / "o"),
                       "--excitation", "1"])
        assert status == 2 and message in capsys.readouterr().err


def test_a_model_outside_the_engines_dynamics_is_refused_before_writing(tmp_path, capsys):
    """MyoSuite's finger loads (its muscles are checked in test_mjcf_muscles.py; its tendon
    limits are supported, tests/engine/test_tendons.py) but its cylinder/ellipsoid contacts
    and capsule-capsule pairs are outside the engine's dynamics."""
    finger = MYOSUITE / "myofinger_v0.xml"
    _need(finger)
    status = main(["mjcf", "forward", str(finger), "--out", str(tmp_path / "o"),
                   "--excitation", "0.5"])
    err = capsys.readouterr().err
    assert status == 2 and "myofinger_v0.xml: outside the engine's dynamics" in err
    assert ("contact pairs geom #0 (plane, body 'world') / geom #4 'mg2' (cylinder, body "
            "'middle'), geom #0 (plane, body 'world') / geom #6 'dg3' (cylinder, body "
            "'distal'), ") in err      # nine pairs, then the way out once:
    assert err.count("MuJoCo collides them but the engine only has sphere/capsule-plane "
                     "contact; to run without them, set contype=conaffinity=0") == 1
    assert "tendon" not in err
    assert err.rstrip().endswith("or run without any contact: --disable-contact "
                                 "(disable_contact=True)")
    assert not (tmp_path / "o").exists()


def test_myosuites_finger_without_contact_matches_mujoco(tmp_path):
    """--disable-contact: the finger runs as mj_step with MuJoCo's contact disabled (the
    file's Euler at its 2 ms, flexors driven into the joints' range): q within 1e-9 rad and
    act within 1e-10 at every written row (the elbow's tolerances above; observed ~5e-16). The
    copy the flag makes leaves the caller's model as it was."""
    finger = MYOSUITE / "myofinger_v0.xml"
    _need(finger)
    excitation = {"mflx": 0.8, "dflx": 0.5, "extn": 0.1}
    status, summary = _run(tmp_path, finger, "--disable-contact", "--excitation",
                           *(f"{k}={v}" for k, v in excitation.items()), "--duration-s", 0.2,
                           "--record-every-s", 0.01)
    assert status == 0 and summary["contact"] == "disabled" and summary["rows_written"] == 21
    _, states = _table(tmp_path / "states.csv")

    m = mujoco.MjModel.from_xml_path(str(finger))
    off = without_contact(m)
    assert m.opt.disableflags == 0
    assert off.opt.disableflags == mujoco.mjtDisableBit.mjDSBL_CONTACT
    ctrl = [excitation.get(mujoco.mj_id2name(off, mujoco.mjtObj.mjOBJ_ACTUATOR, a), 0.0)
            for a in range(off.nu)]
    err_q, err_a, travel = _vs_mujoco_loop(off, states, 100, 5, lambda k: ctrl)
    print(f"finger without contact: q {err_q:.1e} rad, act {err_a:.1e}")
    assert travel > 0.5       # the finger does flex
    assert err_q <= 1e-9 and err_a <= 1e-10



def test_with_muscle_masses_puts_each_mass_on_its_muscles_path():
    """`musculoskeletal.with_muscle_masses` (what --muscle-mass-kg uses) gives muscle i's mass
    to muscle i's path, in the given number of points, and refuses bad masses."""
    _need(ELBOW1)
    msm = load_mjcf(ELBOW1)
    masses = [0.0, 0.1, 0.0, 0.25, 0.0, 0.05]
    heavy = with_muscle_masses(msm, masses, 4)
    mm = heavy.skeleton.muscle_mass
    per_path = np.zeros(msm.skeleton.paths.n_paths)
    np.add.at(per_path, np.asarray(mm.point_path), np.asarray(mm.point_mass))
    np.testing.assert_allclose(per_path[np.asarray(msm.muscle_path)], masses, rtol=1e-14)
    assert mm.n_points == 4 * 3
    for bad, message in ((np.ones(5), "expected () or (6,)"),
                         ([0.1, -0.2, 0, 0, 0, 0], "muscle mass of 'TRIlat' must be >= 0 kg")):
        with pytest.raises(ValueError, match=re.escape(message)):
            with_muscle_masses(msm, bad, 4)


#: MJCF keywords of MuJoCo's integrators other than Euler and RK4 (mjtIntegrator).
_REFUSED_INTEGRATORS = ("implicit", "implicitfast", "discrete")


def _integrator_model(keyword):
    return mujoco.MjModel.from_xml_string(f'<mujoco><option integrator="{keyword}"/>'
                                          '<worldbody/></mujoco>')


def test_the_refused_integrators_are_all_of_mujocos_others():
    parsed = {int(_integrator_model(k).opt.integrator) for k in _REFUSED_INTEGRATORS}
    kept = {int(mujoco.mjtIntegrator.mjINT_EULER), int(mujoco.mjtIntegrator.mjINT_RK4)}
    assert parsed | kept == {int(v) for v in mujoco.mjtIntegrator.__members__.values()}


@pytest.mark.parametrize("keyword", _REFUSED_INTEGRATORS)
def test_the_refused_integrators_are_named_as_the_file_spells_them(keyword):
    """Each integrator of MuJoCo but Euler and RK4, in its MJCF spelling."""
    m = _integrator_model(keyword)
    with pytest.raises(ValueError, match=f'model.xml: <option integrator="{keyword}"> is not '
                                         "offered; choose the integrator"):
        file_integrator(m, "model.xml")


def test_mass_on_a_joint_muscle_is_one_line_naming_the_file(tmp_path, capsys):
    """A muscle with a joint transmission has no path to carry mass points: one mass for
    every muscle is refused, naming the file and the muscle, before anything is written; the
    mass on the spatial muscle alone runs."""
    xml = tmp_path / "two.xml"
    xml.write_text("""<mujoco><worldbody><site name="o" pos="0 0 0.3"/>
      <body><joint name="j" type="hinge" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
        <site name="i" pos="0.2 0 0.02"/></body></worldbody>
      <tendon><spatial name="t"><site site="o"/><site site="i"/></spatial></tendon>
      <actuator><muscle name="sp" tendon="t"/><muscle name="jm" joint="j" gear="0.05"/>
      </actuator></mujoco>""")
    out = tmp_path / "o"
    status = main(["mjcf", "forward", str(xml), "--out", str(out), "--excitation", "0.5",
                   "--muscle-mass-kg", "0.1", "--duration-s", "0.01"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{xml}: muscle 'jm' acts on a joint or a fixed tendon" in err
    assert not out.exists()
    status = main(["mjcf", "forward", str(xml), "--out", str(out), "--excitation", "0.5",
                   "--muscle-mass-kg", "sp=0.1", "--duration-s", "0.01"])
    assert status == 0 and (out / "summary.json").exists()
