"""`myotwin osim forward` (`myotwin.osim.forward`): inputs, outputs, and physics checked against
closed forms.

* Excitations from an OpenSim controls file, through the command line: Tug_of_War's muscle1
  steps from 0.01 to 0.8 at t = 0.05 s; its activation must follow the closed-form solution of
  OpenSim's Thelen activation law (Thelen2003Muscle with MuscleFirstOrderActivationDynamicModel,
  OpenSim 4.6, u > a): t - t_s = tau_act ((0.5 + 1.5 u) ln((u - a0)/(u - a)) - 1.5 (a - a0)).
  RK4 at 0.1 ms integrates this ODE (time scale 8-25 ms) with a global error of 1.0e-9 in a
  (6.1e-11 at 0.05 ms: 16x, RK4's fourth order); the tolerance 5e-9 is five times that and
  still catches a step input applied one step early or late (an error of ~1e-2). The
  error-controlled integrator (`--integrator rk45 --accuracy 1e-10`) meets the same closed form
  through the step in the controls (it shrinks its step there), tolerance 5e-9 too.
* A CoordinateActuator's control from the controls file: two runs of a pendulum that differ only
  in the actuator's control c must differ by c F_opt / I_O t^2 / 2 over a short time t
  (Newton's law about the pivot; I_O = I_zz + m d^2). The neglected terms are of relative
  order omega^2 t^2 / 12 ~ 2e-4 at t = 2 ms (omega^2 ~ 700 s^-2 from gravity and the muscle's
  stiffness); tolerance 2e-3 relative.
* Divergence: a step far too large for the stiff tendons stops the run with exit status 3,
  the rows before the divergence written and the summary saying so; so does the
  error-controlled integrator running out of steps (`--max-steps`).
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from osim_synthetic import TINY, write_osim
from shared_reference import SHARED, needs

MODELS = SHARED / "reference" / "opensim" / "models"


def _model(name):
    return needs(MODELS / name)


def _controls(path, labels, rows):
    lines = ["controls", "version=1", f"nRows={len(rows)}", f"nColumns={len(labels)}",
             "inDegrees=no", "endheader", "\t".join(labels)]
    lines += ["\t".join(repr(float(x)) for x in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("integrator", [["--integrator", "rk4"],
                                        ["--integrator", "rk45", "--accuracy", "1e-10"]],
                         ids=["rk4", "rk45"])
def test_controls_file_step_gives_the_closed_form_activation(tmp_path, capsys, integrator):
    u0, u1, t_s = 0.01, 0.8, 0.05
    # a column for an actuator the model lacks (a CMC reserve) is ignored and listed
    controls = _controls(tmp_path / "u.sto", ("time", "muscle1", "muscle2", "reserve"),
                         [(0.0, u0, 0.05, 9.0), (t_s, u0, 0.05, 9.0),
                          (t_s + 1e-12, u1, 0.05, 9.0), (1.0, u1, 0.05, 9.0)])
    out = tmp_path / "run"
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--out", str(out),
                   "--controls", str(controls), "--duration-s", "0.1",
                   "--record-every-s", "0.001", *integrator])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["diverged"] is False and summary["controls_ignored_columns"] == ["reserve"]
    assert (summary["steps_done"] == 1000 if integrator[1] == "rk4"
            else summary["steps_done"] > 100)
    assert summary == json.loads((out / "summary.json").read_text())
    states = read_storage(out / "states.sto")
    t = states.time_s
    a1 = states.column("/forceset/muscle1/activation")
    a2 = states.column("/forceset/muscle2/activation")
    np.testing.assert_allclose(a1[t <= t_s], u0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(a2, 0.05, rtol=0, atol=1e-15)   # the other column, constant
    tau_act = 0.015   # OpenSim 4's default activation_time_constant (Tug_of_War sets none)
    after = t > t_s
    a = a1[after]
    closed_t = tau_act * ((0.5 + 1.5 * u1) * np.log((u1 - u0) / (u1 - a)) - 1.5 * (a - u0))
    # compare in activation: a(t) from the closed form's slope at each point
    slope = (u1 - a) / (tau_act * (0.5 + 1.5 * a))
    err = np.max(np.abs((closed_t - (t[after] - t_s)) * slope))
    assert a[-1] > 0.7 and err < 5e-9, err
    assert states.data.shape == (101, 1 + 2 + 2 * 2)
    forces = read_storage(out / "muscle_forces.sto")
    assert forces.labels == ("time", "muscle1", "muscle2")
    assert forces.column("muscle1")[-1] > 2 * forces.column("muscle2")[-1] > 0


def _tiny_with_actuator(root: ET.Element) -> None:
    forces = root.find(".//ForceSet/objects")
    forces.append(ET.fromstring(
        '<CoordinateActuator name="motor"><appliesForce>true</appliesForce>'
        "<min_control>-Inf</min_control><max_control>Inf</max_control>"
        "<coordinate>theta</coordinate><optimal_force>2</optimal_force>"
        "</CoordinateActuator>"))


def test_coordinate_actuator_control_enters_as_control_times_optimal_force(tmp_path):
    from myotwin import musculoskeletal as ms
    from myotwin import osim
    from myotwin.osim.forward import Inputs, forward
    from myotwin.osim.storage import read_storage as read

    path = write_osim(tmp_path, TINY, _tiny_with_actuator)
    loaded = osim.load(path)
    assert loaded.actuator_names == ("motor",)
    muscles = osim.build_muscles(loaded, tendon="explicit_force")
    msm = ms.musculoskeletal_model(loaded.model, muscles)
    duration, c = 0.002, 0.75
    theta = {}
    for control in (0.0, c):
        table = _controls(tmp_path / f"c{control}.sto", ("time", "m", "motor"),
                          [(0.0, 0.3, control), (1.0, 0.3, control)])
        inputs = Inputs(loaded, None, read(table))
        out = tmp_path / f"run{control}"
        forward(loaded, msm, out, inputs=inputs, duration_s=duration, dt_s=1e-4,
                q0={"theta": 0.4}, integrator="rk4")
        theta[control] = read(out / "states.sto").column("/jointset/hinge/theta/value")[-1]
    i_pivot = 0.02 + 1.5 * 0.2 ** 2   # TINY's link: I_zz about the COM + m d^2
    expected = 0.5 * c * 2.0 / i_pivot * duration ** 2
    assert math.isclose(theta[c] - theta[0.0], expected, rel_tol=2e-3), \
        (theta[c] - theta[0.0], expected)
    # the error-controlled integrator reads the control from the same table
    out = tmp_path / "run_rk45"
    forward(loaded, msm, out, inputs=inputs, duration_s=duration, dt_s=1e-4,
            q0={"theta": 0.4}, integrator="rk45", accuracy=1e-10)
    theta_rk45 = read(out / "states.sto").column("/jointset/hinge/theta/value")[-1]
    assert math.isclose(theta_rk45 - theta[0.0], expected, rel_tol=2e-3), \
        (theta_rk45 - theta[0.0], expected)


@pytest.mark.parametrize("excitation, q0, message", [
    (True, None, "excitation of m must be in [0, 1], got True"),
    ({"m": "0.5"}, None, "excitation of m must be in [0, 1], got '0.5'"),
    ([0.5], None, "excitation of m must be in [0, 1], got [0.5]"),
    ({"m": None}, None, "excitation of m must be in [0, 1], got None"),
    (0.5, {"theta": True}, "initial value of 'theta' must be a finite number, got True"),
    (0.5, {"theta": "x"}, "initial value of 'theta' must be a finite number, got 'x'"),
    (0.5, {"theta": float("nan")}, "initial value of 'theta' must be a finite number, got nan"),
    (0.5, {"speed": {"theta": "x"}}, "initial speed of 'theta' must be a finite number, got "
     "'x'"),
])
def test_excitations_and_initial_values_must_be_numbers(tmp_path, excitation, q0, message):
    """(True was taken as 1.0 and '0.5' as 0.5; a list, None or 'x' was an error of float().)"""
    from myotwin import osim
    from myotwin.osim.forward import Inputs
    from myotwin.osim.forward_start import initial_q, initial_qd

    loaded = osim.load(write_osim(tmp_path, TINY))
    with pytest.raises(ValueError) as err:
        if q0 and "speed" in q0:
            initial_qd(loaded, q0["speed"])
        else:
            initial_q(loaded, q0) if q0 else Inputs(loaded, excitation)
    assert message in str(err.value)


def test_controls_must_be_read_controls(tmp_path):
    """(A dict of columns was "'dict' object has no attribute 'labels'".)"""
    from myotwin import osim
    from myotwin.osim.forward import Inputs

    loaded = osim.load(write_osim(tmp_path, TINY))
    with pytest.raises(TypeError, match=r"controls must be read by osim.controls.read_controls "
                                        r"\(or be a Storage\) or None, got dict"):
        Inputs(loaded, None, {"m": 0.5})


_COUNT = r"{} must be a positive integer, got {!r}$"
_SECONDS = r"{} must be a positive number of seconds, got {!r}$"


@pytest.mark.parametrize("options, message", [
    # int(2.5) = 2 was taken and True (an int in Python) was 1 for each count; chunk_steps 0
    # looped for ever without writing a row
    *(({"integrator": integrator, name: v}, _COUNT.format(name, v))
      for name, integrator in (("max_steps", "rk45"), ("chunk_steps", "rk4"))
      for v in (0, 2.5, True)),
    # duration_s=True simulated 1 s, record_every_s=True wrote every second, a string was
    # float()'s or a comparison's error naming no argument
    ({"duration_s": True, "dt_s": 0.5}, _SECONDS.format("duration_s", True)),
    ({"dt_s": "1e-4"}, _SECONDS.format("dt_s", "1e-4")),
    ({"record_every_s": True}, _SECONDS.format("record_every_s", True)),
    # '1e-6' was taken as 1e-6 and 'x' was float()'s error naming no argument
    *(({"accuracy": v}, r"accuracy must be a number in \(0, 1\), got " + repr(v) + "$")
      for v in ("1e-6", "x", True)),
])
def test_forward_options_are_checked_before_any_work(tmp_path, options, message):
    from myotwin import musculoskeletal as ms
    from myotwin import osim
    from myotwin.osim.forward import Inputs, forward

    loaded = osim.load(write_osim(tmp_path, TINY))
    msm = ms.musculoskeletal_model(loaded.model,
                                   osim.build_muscles(loaded, tendon="explicit_force"))
    with pytest.raises(ValueError, match=message):
        forward(loaded, msm, tmp_path / "run", inputs=Inputs(loaded, 0.5),
                **{"duration_s": 0.01, **options})
    assert not (tmp_path / "run").exists()


def test_divergence_stops_with_the_rows_before_it(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--out", str(out),
                   "--excitation", "muscle1=0.9", "muscle2=0.05", "--duration-s", "0.2",
                   "--dt-s", "0.005", "--record-every-s", "0.005", "--integrator", "rk4"])
    assert status == 3
    err = capsys.readouterr().err
    assert "diverged" in err and "states.sto" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diverged"] is True and summary["steps_done"] < 40
    states = read_storage(out / "states.sto")
    assert states.data.shape[0] == summary["steps_done"] + 1
    assert np.all(np.isfinite(states.data))


def test_error_controlled_run_out_of_steps_stops_with_the_rows_before_it(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--out", str(out),
                   "--excitation", "muscle1=0.9", "muscle2=0.05", "--duration-s", "0.2",
                   "--record-every-s", "0.01", "--integrator", "rk45", "--accuracy", "1e-12",
                   "--max-steps", "50"])
    assert status == 3
    err = capsys.readouterr().err
    assert "max_steps attempts" in err and "states.sto" in err, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diverged"] is True and summary["integrator_status"] == "max_steps"
    states = read_storage(out / "states.sto")
    assert states.data.shape[0] == summary["rows_written"] < 21
    assert np.all(np.isfinite(states.data))


@pytest.mark.parametrize("args, message", [
    (["--excitation", "muscle3=0.5"], "no muscle named 'muscle3'"),
    (["--excitation", "1.5"], "excitation of muscle1 must be in [0, 1], got 1.5"),
    (["--excitation", "muscle1=0.5"], "muscle 'muscle2' has no excitation"),
    (["--excitation", "0.5", "--initial-q", "knee=1"], "no coordinate named 'knee'"),
    (["--excitation", "0.5", "--initial-qd", "knee=1"], "no coordinate named 'knee'"),
    (["--excitation", "0.5", "--initial-qd", "block_tz=x"],
     "--initial-qd: 'x' (for block_tz) is not a number"),
    (["--excitation", "0.5", "--duration-s", "0.00015"], "whole number of steps"),
    (["--excitation", "0.5", "--record-every-s", "0.00025"], "record_every_s 0.00025"),
    (["--excitation", "a=b"], "--excitation: 'b' (for a) is not a number"),
    (["--excitation", "0.5", "--replace-force-set"], "Tug_of_War.osim: an excitation is "
     "given, but the model has no muscles (force set files replaced its forces)"),
    (["--excitation", "0.5", "--integrator", "rk45", "--accuracy", "2"],
     "accuracy must be a number in (0, 1), got 2.0"),
])
def test_bad_input_is_one_line_with_exit_status_2(tmp_path, capsys, args, message):
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--out",
                   str(tmp_path / "run"), *args])
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


_BLOCK = "/jointset/ground_block/block_tz"


@pytest.mark.parametrize("labels, row, args, message", [
    ((f"{_BLOCK}/value", f"{_BLOCK}/speed"), (0.0, 0.0), ["--start-s", "-0.5"],
     r"states.sto: --start-s -0.5 precedes the file's first row \(0.0 s\)"),
    ((f"{_BLOCK}/value", f"{_BLOCK}/speed"), (0.0, 0.0), ["--tendon", "explicit_force"],
     r"states.sto: the states file gives each muscle the state OpenSim integrates for its "
     r"type, \{'muscle1': 'fiber_length', 'muscle2': 'fiber_length'\}, not the state of the "
     r"tendon model 'explicit_force'; start it with --tendon opensim \(or rigid\), or with "
     r"--solve-for-equilibrium$"),
    (("block_tz", f"{_BLOCK}/speed", "muscle1.activation"), (0.01, 0.0, 1.5), [],
     r"states.sto: activation of 'muscle1' at t = 0.0 s is 1.5, outside \[0, 1\]"),
    ((f"{_BLOCK}/value", f"{_BLOCK}/speed", "/forceset/muscle2/fiber_length"), (0.0, 0.0, 0.0),
     [],
     r"states.sto: fiber length of 'muscle2' at t = 0.0 s is 0.0 m, not positive"),
    ((f"{_BLOCK}/value",), (0.0,), [],
     r"states.sto: no column '/jointset/ground_block/block_tz/speed' \(or 'block_tz_u'\)"),
])
def test_initial_states_file_is_checked(tmp_path, capsys, labels, row, args, message):
    """--initial-states: a start before the file, a file that holds another tendon state than
    the run integrates, an activation outside [0, 1], a fiber of no length, a missing speed:
    one line naming the file and the value, exit status 2, nothing simulated."""
    path = tmp_path / "states.sto"
    lines = ["states", "version=1", "nRows=1", f"nColumns={len(labels) + 1}", "inDegrees=no",
             "endheader", "\t".join(("time", *labels)), "\t".join(map(repr, (0.0, *row)))]
    path.write_text("\n".join(lines) + "\n")
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--out",
                   str(tmp_path / "run"), "--excitation", "0.5", "--initial-states", str(path),
                   *args])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert re.search(message, err), err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args, message", [
    (["--start-s", "nan"], "start_s must be a finite number of seconds, got nan"),
    (["--solve-for-equilibrium"], "solve_for_equilibrium applies to initial states from a file "
                                  "(a run from the default pose starts in equilibrium)"),
])
def test_start_options_are_checked(tmp_path, capsys, args, message):
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--out",
                   str(tmp_path / "run"), "--excitation", "0.5", *args])
    assert status == 2
    assert message in capsys.readouterr().err


def test_controls_value_outside_the_unit_interval_is_named(tmp_path, capsys):
    """The file, column, row, time and value, as plain numbers (not NumPy's reprs)."""
    controls = _controls(tmp_path / "over.sto", ("time", "muscle1", "muscle2"),
                         [(0.0, 0.5, 1.3), (1.0, 0.5, 0.5)])
    status = main(["osim", "forward", str(_model("Tug_of_War.osim")), "--controls",
                   str(controls), "--duration-s", "0.1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert ("over.sto: column 'muscle2', row 1 (t = 0.0 s): excitation 1.3 is outside [0, 1]"
            in err), err


#: Thelen2003Muscle properties a DeGrooteFregly2016Muscle does not have.
_THELEN_ONLY = ("optimal_force", "FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive",
                "KshapePassive", "Af", "Flen", "fv_linear_extrap_threshold",
                "maximum_pennation_angle", "minimum_activation", "default_fiber_length")


def test_de_groote_states_are_written_as_opensim_names_them(tmp_path, capsys):
    """Tug_of_War with its muscles made DeGrooteFregly2016Muscle: states.sto holds each one's
    `/normalized_tendon_force` (OpenSim's state name for the type, = tendon force / F_iso),
    and OpenSim's AnalyzeTool reading that states file back gives the tendon forces of
    muscle_forces.sto (within its 8-decimal printing, 1e-8 N, and 1e-12 of the force). A run
    started from that states file (`--initial-states`) at one of its rows continues it."""
    from opensim_live import run_muscle_analysis

    root = ET.parse(_model("Tug_of_War.osim")).getroot()
    for muscle in root.iter("Thelen2003Muscle"):
        muscle.tag = "DeGrooteFregly2016Muscle"
        for tag in _THELEN_ONLY:
            for element in muscle.findall(tag):
                muscle.remove(element)
    model = tmp_path / "tug_degroote.osim"
    ET.ElementTree(root).write(model, encoding="unicode")
    out = tmp_path / "run"
    assert main(["osim", "forward", str(model), "--out", str(out), "--excitation",
                 "muscle1=0.6", "muscle2=0.2", "--duration-s", "0.02", "--integrator", "rk4",
                 "--record-every-s", "0.002"]) == 0
    capsys.readouterr()
    states = read_storage(out / "states.sto")
    forces = read_storage(out / "muscle_forces.sto")
    assert "/forceset/muscle1/fiber_length" not in states.labels
    for m in ("muscle1", "muscle2"):   # F_iso 1000 N in the file
        np.testing.assert_allclose(states.column(f"/forceset/{m}/normalized_tendon_force"),
                                   forces.column(m) / 1000.0, rtol=1e-15, atol=0)
    _, _, theirs = run_muscle_analysis(tmp_path, model, out / "states.sto", -1.0, 0.0, 0.02,
                                       (), ("TendonForce",), states=True)
    theirs = theirs["TendonForce"]
    np.testing.assert_allclose(theirs.time_s, forces.time_s, rtol=0, atol=1e-9)
    for m in ("muscle1", "muscle2"):
        assert np.abs(forces.column(m)).max() > 1.0   # real forces
        np.testing.assert_allclose(theirs.column(m), forces.column(m), rtol=1e-12, atol=1e-8)
    # a run started from this states file at one of its rows continues it: the same RK4 steps
    # from the same state (the file holds 17 significant digits), so the same rows to
    # roundoff; a tendon state read as anything but the normalized tendon force would not
    assert main(["osim", "forward", str(model), "--out", str(tmp_path / "restart"),
                 "--excitation", "muscle1=0.6", "muscle2=0.2", "--duration-s", "0.01",
                 "--integrator", "rk4", "--record-every-s", "0.002", "--initial-states",
                 str(out / "states.sto"), "--start-s", "0.01"]) == 0
    restart = read_storage(tmp_path / "restart" / "states.sto")
    later = states.time_s >= 0.01 - 1e-12
    np.testing.assert_allclose(restart.time_s, states.time_s[later], rtol=0, atol=1e-12)
    np.testing.assert_allclose(restart.data[:, 1:], states.data[later, 1:], rtol=1e-12,
                               atol=1e-15)
