"""`myotwin osim forward` on a model without muscles: OpenSim's double_pendulum.osim, moved by
gravity and its two CoordinateActuators alone, against the textbook double pendulum and
against OpenSim 4.6's own forward simulation.

The model: two PinJoints about z, rod1 hung 1.1 m above the ground origin, each rod a 1 kg point
mass (zero inertia) 0.5 m from its joint, q2 relative to rod1, default q = (-pi/4, -pi/3), g =
9.80665 m/s^2 along -y; Torq1 and Torq2 apply control x optimal_force (1 N m) to q1 and q2.
The textbook equations of motion of this pendulum (Lagrange, point masses m1 = m2 = m, lengths
l1 = l2 = l):

    M(q) qdd + c(q, qd) + G(q) = tau,
    M = [[2 m l^2 + m l^2 + 2 m l^2 cos q2, m l^2 + m l^2 cos q2], [sym., m l^2]],
    c = m l^2 sin q2 [-(2 qd1 qd2 + qd2^2), qd1^2],
    G = m g l [2 sin q1 + sin(q1 + q2), sin(q1 + q2)],

integrated by SciPy's DOP853 at rtol = atol = 1e-12. Over 1 s the pendulum swings through
about two radians a joint. Tolerances 1e-8 rad and 1e-7 rad/s on every written row, for the
error-controlled run at accuracy 1e-10 and for RK4 at 1 ms (global error O(dt^4)); observed
2-4e-10 rad and 2-3e-9 rad/s, the two integrators' errors. A wrong sign of gravity, a missed
gear or a control read from the wrong column gives errors of 1e-2 rad and more.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin import musculoskeletal as ms
from myotwin import osim
from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import forward_final_state, opensim_package
from shared_reference import SHARED, needs

MODEL = SHARED / "reference/opensim/models/double_pendulum.osim"
MASS_KG, LENGTH_M, G = 1.0, 0.5, 9.80665
Q0 = (-0.78539816, -1.04719755)             # the file's default values
T_END_S = 1.0
TOL_RAD, TOL_RAD_PER_S = 1e-8, 1e-7


def _textbook(tau):
    """The textbook pendulum's right-hand side with joint torques tau(t) (2,)."""
    ml2 = MASS_KG * LENGTH_M ** 2

    def rhs(t, y):
        q1, q2, qd1, qd2 = y
        c2 = np.cos(q2)
        mass = ml2 * np.array([[3 + 2 * c2, 1 + c2], [1 + c2, 1.0]])
        bias = ml2 * np.sin(q2) * np.array([-(2 * qd1 * qd2 + qd2 ** 2), qd1 ** 2])
        gravity = MASS_KG * G * LENGTH_M * np.array([2 * np.sin(q1) + np.sin(q1 + q2),
                                                     np.sin(q1 + q2)])
        qdd = np.linalg.solve(mass, tau(t) - bias - gravity)
        return [qd1, qd2, *qdd]
    return rhs


def _reference(tau, times, y0=(*Q0, 0.0, 0.0)):
    sol = solve_ivp(_textbook(tau), (0.0, times[-1]), list(y0), method="DOP853",
                    rtol=1e-12, atol=1e-12, t_eval=times)
    return sol.y.T    # (n_rows, 4): q1, q2, qd1, qd2


def _controls(path, rows):
    lines = ["controls", "version=1", f"nRows={len(rows)}", "nColumns=3", "inDegrees=no",
             "endheader", "time\tTorq1\tTorq2"]
    lines += ["\t".join(repr(float(x)) for x in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _errors(ours, reference):
    """(max |q error| rad, max |qd error| rad/s) over the rows."""
    error = np.abs(ours - reference)
    return error[:, :2].max(), error[:, 2:].max()


def _run(tmp_path, capsys, *args, out="run", duration_s=T_END_S):
    out = tmp_path / out
    status = main(["osim", "forward", str(needs(MODEL)), "--out", str(out), "--duration-s",
                   str(duration_s), "--dt-s", "0.001", "--record-every-s", "0.01", *args])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    states = read_storage(out / "states.sto")
    columns = [f"/jointset/pin{k}/q{k}/{v}" for v in ("value", "speed") for k in (1, 2)]
    return summary, states, np.stack([states.column(c) for c in columns], axis=1)


@pytest.mark.parametrize("integrator", [["--integrator", "rk4"],
                                        ["--integrator", "rk45", "--accuracy", "1e-10"]],
                         ids=["rk4", "rk45"])
def test_passive_swing_is_the_textbook_double_pendulum(tmp_path, capsys, integrator):
    summary, states, ours = _run(tmp_path, capsys, *integrator)
    reference = _reference(lambda t: np.zeros(2), states.time_s)
    error_q, error_qd = _errors(ours, reference)
    print(f"{integrator[1]}: max error {error_q:.2e} rad, {error_qd:.2e} rad/s")
    assert summary["rows_written"] == 101 and summary["final_activation"] == {}
    assert np.ptp(reference[:, 1]) > 1.0          # a real swing, not a rest
    assert error_q <= TOL_RAD and error_qd <= TOL_RAD_PER_S
    forces = read_storage(tmp_path / "run" / "muscle_forces.sto")
    assert forces.labels == ("time",) and forces.data.shape == (101, 1)


def test_initial_speeds_and_pose_from_the_command_line(tmp_path, capsys):
    """--initial-qd (and --initial-q) start the swing from the given speeds and angle: the
    textbook pendulum from (q1, q2, qd1, qd2) = (Q0[0], 0.4, 1.5, -2.0), at the tolerances
    above (rk45 at 1e-10); and over a states file's row (its q2 speed replaced by 0)."""
    _, states, ours = _run(tmp_path, capsys, "--integrator", "rk45", "--accuracy", "1e-10",
                           "--initial-q", "q2=0.4", "--initial-qd", "q1=1.5", "q2=-2")
    reference = _reference(lambda t: np.zeros(2), states.time_s, (Q0[0], 0.4, 1.5, -2.0))
    error_q, error_qd = _errors(ours, reference)
    with capsys.disabled():
        print(f"from given speeds: max error {error_q:.2e} rad, {error_qd:.2e} rad/s")
    np.testing.assert_array_equal(ours[0], (Q0[0], 0.4, 1.5, -2.0))
    assert error_q <= TOL_RAD and error_qd <= TOL_RAD_PER_S
    # from that run's states file at 0.5 s with q2's speed replaced: --initial-qd over a row
    row = ours[np.flatnonzero(np.isclose(states.time_s, 0.5))[0]]
    _, later, restarted = _run(tmp_path, capsys, "--integrator", "rk45", "--accuracy",
                               "1e-10", "--initial-states", str(tmp_path / "run" / "states.sto"),
                               "--start-s", "0.5", "--initial-qd", "q2=0", out="restart",
                               duration_s=0.5)
    start = (row[0], row[1], row[2], 0.0)
    reference = _reference(lambda t: np.zeros(2), later.time_s - 0.5, start)
    np.testing.assert_array_equal(restarted[0], start)
    error_q, error_qd = _errors(restarted, reference)
    print(f"from a states row with q2's speed 0: max error {error_q:.2e} rad, "
          f"{error_qd:.2e} rad/s")
    assert error_q <= TOL_RAD and error_qd <= TOL_RAD_PER_S


def test_actuator_controls_drive_it_as_torques(tmp_path, capsys):
    """Torq1's control ramps from 0 to 2 over the second (linearly interpolated, as OpenSim's
    ControlLinear), Torq2's holds -0.5: torques of control x 1 N m on q1 and q2."""
    controls = _controls(tmp_path / "u.sto", [(0.0, 0.0, -0.5), (T_END_S, 2.0, -0.5)])
    _, states, ours = _run(tmp_path, capsys, "--controls", str(controls),
                           "--integrator", "rk45", "--accuracy", "1e-10")
    reference = _reference(lambda t: np.array([2.0 * t / T_END_S, -0.5]), states.time_s)
    passive = _reference(lambda t: np.zeros(2), states.time_s)
    error_q, error_qd = _errors(ours, reference)
    print(f"driven: max error {error_q:.2e} rad, {error_qd:.2e} rad/s; passive - driven "
          f"{np.max(np.abs(passive - ours)[:, :2]):.2e} rad")
    assert np.max(np.abs(passive - ours)[:, :2]) > 0.05    # the torques matter
    assert error_q <= TOL_RAD and error_qd <= TOL_RAD_PER_S


def test_a_run_started_from_a_states_file_continues_the_textbook_swing(tmp_path, capsys):
    """`--initial-states` with our own states.sto (OpenSim 4 names) at --start-s 0.5: the
    second half of the driven swing above, started from the first half's last row. The run
    starts at t = 0.5 s and reads the controls there (Torq1 ramping 1 -> 2, not 0 -> 1: that
    would leave it 0.2 rad off), so its rows follow the textbook solution from t = 0 with the
    same tolerances."""
    controls = _controls(tmp_path / "u.sto", [(0.0, 0.0, -0.5), (T_END_S, 2.0, -0.5)])
    rk45 = ("--controls", str(controls), "--integrator", "rk45", "--accuracy", "1e-10")
    _run(tmp_path, capsys, *rk45, out="first", duration_s=0.5)
    summary, states, ours = _run(tmp_path, capsys, *rk45, "--initial-states",
                                 str(tmp_path / "first" / "states.sto"), "--start-s", "0.5",
                                 out="second", duration_s=0.5)
    assert summary["start_s"] == 0.5 and summary["initial_states"]["defaulted"] == []
    assert states.time_s[0] == 0.5 and states.time_s[-1] == T_END_S
    times = np.concatenate([[0.0], states.time_s])
    reference = _reference(lambda t: np.array([2.0 * t / T_END_S, -0.5]), times)[1:]
    error_q, error_qd = _errors(ours, reference)
    print(f"restarted at 0.5 s: max error {error_q:.2e} rad, {error_qd:.2e} rad/s")
    assert error_q <= TOL_RAD and error_qd <= TOL_RAD_PER_S


def test_gradient_with_respect_to_a_control_matches_the_textbook():
    """Reverse mode through `musculoskeletal.rollout` of the group of no muscles (RK4, 1 ms,
    0.5 s): d q1(0.5 s) / d u1 for Torq1's constant control u1 = 0.5 against the central
    difference (h = 1e-3) of the textbook solutions. Tolerance 1e-6 relative: the difference's
    truncation error (h^2/6 times the third derivative), the integrators' (1e-10) and roundoff
    (1e-12 / h) lie below it (observed 2e-9); a gradient that missed the gear or the control's
    column would be off by O(1)."""
    loaded = osim.load(needs(MODEL))
    msm = ms.musculoskeletal_model(loaded.model, osim.build_muscles(loaded, tendon="opensim"),
                                   coordinates=loaded.coupling)
    assert msm.n_muscles == 0 and msm.muscles.names == ()
    start = ms.equilibrium_state(msm, jnp.asarray(Q0), jnp.zeros(2), jnp.zeros(0))
    n, dt_s, u1, h = 500, 1e-3, 0.5, 1e-3

    def final_q1(u):
        ctrl = jnp.stack([jnp.full(n, u), jnp.zeros(n)], axis=1)
        return ms.rollout(msm, start, jnp.zeros((n, 0)), dt_s, n, "rk4", ctrl).q[-1, 0]

    ours = float(jax.grad(final_q1)(u1))
    times = np.array([0.0, n * dt_s])
    ends = [_reference(lambda t, u=u: np.array([u, 0.0]), times)[-1, 0] for u in (u1 + h, u1 - h)]
    reference = (ends[0] - ends[1]) / (2 * h)
    print(f"dq1/du1: ours {ours:.12g}, textbook {reference:.12g}")
    assert abs(reference) > 1e-2
    assert abs(ours - reference) <= 1e-6 * abs(reference)


def test_matches_opensims_forward_simulation(tmp_path, capsys):
    """OpenSim's Manager (Runge-Kutta-Merson at accuracy 1e-11) with Torq1 and Torq2 at
    constant controls 1.5 and -0.5 (a PrescribedController), from the default pose at rest;
    ours rk45 at 1e-10; final coordinates at 1 s within 1e-8 rad (both integrators' errors;
    observed 9e-11)."""
    opensim_package()
    controls = _controls(tmp_path / "u.sto", [(0.0, 1.5, -0.5), (T_END_S, 1.5, -0.5)])
    summary, _, ours = _run(tmp_path, capsys, "--controls", str(controls),
                            "--integrator", "rk45", "--accuracy", "1e-10")
    q_ref, _ = forward_final_state(needs(MODEL), 0.0, T_END_S, 1e-11,
                                   controls={"Torq1": 1.5, "Torq2": -0.5})
    error = max(abs(summary["final_q"][k] - v) for k, v in q_ref.items())
    print(f"vs OpenSim: max |q - q_OpenSim| {error:.2e} rad")
    assert set(q_ref) == {"q1", "q2"}
    assert error <= TOL_RAD
    assert np.allclose(ours[-1, :2], [summary["final_q"]["q1"], summary["final_q"]["q2"]])
