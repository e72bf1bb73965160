"""`myotwin mjcf forward` on an MJCF model without MuJoCo muscles, against mj_step.

MuJoCo simulates any MJCF; a model whose actuators are motors and servos is a skeleton moved
by them (the group of no muscles, `musculoskeletal.load_mjcf`). The model here is a double
pendulum swinging in gravity, written in the test: joint damping and armature, a clamped
motor (ctrlrange [-1, 1], asked for 2) on the shoulder and a position servo (kp 5) on the
elbow. The command's states.csv against MuJoCo's own loop from the same state with the same
ctrl: q within 1e-9 rad and qd within 1e-8 rad/s at every written row (the muscle runs'
tolerances, test_mjcf_forward.py; both sides compute the same floating-point dynamics, so
roundoff over a few hundred steps is ~1e-14), for RK4 at 1 ms and for the file's Euler with
the damping implicit at 2 ms; and a controls file driving the motor, against a MuJoCo loop that
sets d.ctrl from the file's linear interpolation before each mj_step. A muscle input given to
this model changes nothing and is refused by name.
"""

from __future__ import annotations

import csv
import json

import mujoco
import numpy as np
import pytest

from myotwin.cli.main import main

PENDULUM = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.3" armature="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.02" mass="0.6"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="motor" joint="shoulder" ctrllimited="true" ctrlrange="-1 1"/>
    <position name="servo" joint="elbow" kp="5"/>
  </actuator>
</mujoco>
"""


@pytest.fixture
def pendulum(tmp_path):
    path = tmp_path / "pendulum.xml"
    path.write_text(PENDULUM)
    return path


def _table(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=float).reshape(len(rows) - 1, len(rows[0]))


def _mujoco_loop(m, n_steps, every, ctrl_at, q0):
    """qpos and qvel of mj_step from q0 at rest, d.ctrl = ctrl_at(k) set before step k,
    every `every`-th state from the first: (rows, nq + nv)."""
    d = mujoco.MjData(m)
    d.qpos[:] = q0
    ref = [np.concatenate([d.qpos, d.qvel])]
    for k in range(n_steps):
        d.ctrl[:] = ctrl_at(k)
        mujoco.mj_step(m, d)
        ref.append(np.concatenate([d.qpos, d.qvel]))
    return np.array(ref)[::every]


def _errors(states, ref):
    err_q = np.abs(states[:, 1:3] - ref[:, :2]).max()
    err_qd = np.abs(states[:, 3:5] - ref[:, 2:]).max()
    return err_q, err_qd, np.ptp(ref[:, :2], axis=0).max()


@pytest.mark.parametrize("integrator", ["rk4", "file"])
def test_a_skeleton_driven_by_its_actuators_matches_mujoco(tmp_path, pendulum, integrator):
    step = ["--dt-s", "1e-3", "--integrator", "rk4"] if integrator == "rk4" else []
    status = main(["mjcf", "forward", str(pendulum), "--out", str(tmp_path / "out"),
                   "--ctrl", "motor=2", "servo=0.4", "--initial-q", "shoulder=0.2",
                   "elbow=-0.3", "--duration-s", "0.4", "--record-every-s", "0.004", *step])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert status == 0 and summary["message"] == "completed" and summary["rows_written"] == 101
    assert summary["muscles"] == [] and summary["integrator"] == (
        "rk4" if integrator == "rk4" else "euler")
    labels, states = _table(tmp_path / "out" / "states.csv")
    assert labels == ["time_s", "q:shoulder", "q:elbow", "qd:shoulder", "qd:elbow"]
    f_labels, forces = _table(tmp_path / "out" / "muscle_forces.csv")
    assert f_labels == ["time_s"] and np.array_equal(forces[:, 0], states[:, 0])

    m = mujoco.MjModel.from_xml_string(PENDULUM)
    if integrator == "rk4":
        m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-3
    n = round(0.4 / m.opt.timestep)
    ref = _mujoco_loop(m, n, round(0.004 / m.opt.timestep), lambda k: [2.0, 0.4], [0.2, -0.3])
    err_q, err_qd, travel = _errors(states, ref)
    print(f"{integrator}: q {err_q:.1e} rad, qd {err_qd:.1e} rad/s (travel {travel:.2f} rad)")
    assert travel > 0.3
    assert err_q <= 1e-9 and err_qd <= 1e-8


def test_a_controls_file_drives_the_motor_as_a_mujoco_control_loop(tmp_path, pendulum):
    table = np.array([[0.0, -1.0], [0.1, 0.8], [0.25, 0.2]])
    path = tmp_path / "controls.csv"
    path.write_text("time_s,motor\n" + "".join(f"{t!r},{u!r}\n" for t, u in table.tolist()))
    status = main(["mjcf", "forward", str(pendulum), "--out", str(tmp_path / "out"),
                   "--controls", str(path), "--ctrl", "servo=-0.2", "--dt-s", "1e-3",
                   "--integrator", "rk4", "--duration-s", "0.3", "--record-every-s", "0.005"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert status == 0 and summary["controls_columns"] == ["motor"]
    _, states = _table(tmp_path / "out" / "states.csv")
    m = mujoco.MjModel.from_xml_string(PENDULUM)
    m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-3
    ref = _mujoco_loop(m, 300, 5, lambda k: [np.interp(k * 1e-3, table[:, 0], table[:, 1]),
                                             -0.2], [0.0, 0.0])
    err_q, err_qd, travel = _errors(states, ref)
    print(f"controls file: q {err_q:.1e} rad, qd {err_qd:.1e} rad/s (travel {travel:.2f} rad)")
    assert travel > 0.1
    assert err_q <= 1e-9 and err_qd <= 1e-8


@pytest.mark.parametrize("args, field", [
    (["--excitation", "0.5"], "excitation = 0.5"),
    (["--initial-activation", "0.1"], "activation0 = 0.1"),
    (["--muscle-mass-kg", "0.2"], "muscle_mass_kg = 0.2"),
])
def test_a_muscle_input_to_a_model_without_muscles_is_refused(tmp_path, pendulum, capsys,
                                                               args, field):
    status = main(["mjcf", "forward", str(pendulum), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert f"pendulum.xml: {field} given, but the model has no MuJoCo muscle actuator" in err
    assert not (tmp_path / "out").exists()
