"""Error-controlled rollout of a skeleton driven by Hill-type muscles
(`myotwin.musculoskeletal.adaptive`), against references outside the code under test:
  * SciPy's DOP853 (rtol = atol = 1e-12) integrating the same ODE, our code giving only the
    physics right-hand side (`state_derivative`) and NumPy's `np.interp` the excitations;
  * on a ball joint (quaternions), the fixed-step RK4 `rollout` (Runge-Kutta-Munthe-Kaas, a
    different method on the rotation manifold) at a small step;
  * `np.interp` for the input tables' semantics.
All float64 (conftest).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin import engine
from myotwin import muscle as mu
from myotwin import musculoskeletal as ms
from myotwin.engine.adaptive import AdaptiveStatus
from myotwin.models import chain
from myotwin.musculoskeletal.adaptive import adaptive_rollout, input_table, inputs_at
from myotwin.paths.on_model import muscle_lengths

# The chain of test_coupled_dynamics.py: three hinges, four muscles, initial state.
NAMES = chain.MUSCLES
Q0 = jnp.array([0.4, -0.3, 0.2])
QD0 = jnp.array([0.3, -0.5, 0.8])
TENDONS = {"explicit_force": "degroote2016", "damped_fiber_length": "millard2012",
           "rigid": "degroote2016", "fiber_length": "degroote2016"}

# Excitation ramps (rows at TABLE_T_S, linear in between, held after 0.04 s): each muscle's
# excitation rises and falls, so the Millard activation's time constant switches (u = a).
TABLE_T_S = np.array([0.0, 0.01, 0.025, 0.04])
TABLE_U = np.array([[0.2, 0.2, 0.2, 0.2],
                    [0.4, 0.1, 0.3, 0.3],
                    [0.25, 0.35, 0.15, 0.4],
                    [0.1, 0.3, 0.4, 0.2]])
T_OUT_S = np.array([0.005, 0.015, 0.03, 0.05])


def _chain_model(tendon):
    """The chain with 500 N muscles (test_coupled_dynamics uses 2000 N: over 0.05 s those
    swing the 1.2 kg chain to ~36 rad/s and slacken the explicit-force tendons, ~1000
    steps; 500 N still reaches ~23 rad/s)."""
    skeleton = engine.compile_model(mujoco.MjModel.from_xml_string(chain.mjcf(damping=0.01)))
    length = np.asarray(muscle_lengths(skeleton, Q0))
    muscles = mu.build_muscles(NAMES, curves=TENDONS[tendon], tendon=tendon,
                               max_isometric_force_N=500.0,
                               optimal_fiber_length_m=list(0.55 * length),
                               tendon_slack_length_m=list(0.5 * length),
                               pennation_at_optimal_rad=0.1)
    return ms.musculoskeletal_model(skeleton, muscles)


def _flat(state):
    """A state (fields with or without a leading output axis) as one array, fields
    concatenated along the last axis."""
    return np.concatenate([np.asarray(x) for x in state], axis=-1)


def _scipy_reference(msm, x0):
    """DOP853 (rtol = atol = 1e-12) of d/dt (q, qd, a, s) = state_derivative (hinges: q' =
    qd) with u(t) = np.interp of each table column; restarted at every table time and output
    time, so that no step straddles a kink of u and each output is a step end."""
    n_v, n_m = msm.skeleton.n_v, msm.n_muscles

    @jax.jit
    def rhs(y, u):
        x = ms.MusculoskeletalState(y[:n_v], y[n_v:2 * n_v], y[2 * n_v:2 * n_v + n_m],
                                    y[2 * n_v + n_m:])
        return jnp.concatenate(ms.state_derivative(msm, x, u))

    def f(t, y):
        u = np.array([np.interp(t, TABLE_T_S, TABLE_U[:, j]) for j in range(n_m)])
        return np.asarray(rhs(jnp.asarray(y), jnp.asarray(u)))

    breaks = np.union1d(TABLE_T_S[TABLE_T_S > 0], T_OUT_S)
    breaks = breaks[breaks <= T_OUT_S[-1]]
    y, t, out = _flat(x0), 0.0, {}
    for b in breaks:
        sol = solve_ivp(f, (t, b), y, method="DOP853", rtol=1e-12, atol=1e-12)
        assert sol.status == 0, sol.message
        y, t = sol.y[:, -1], b
        out[b] = y
    return np.stack([out[b] for b in T_OUT_S])


@pytest.mark.parametrize("tendon", sorted(TENDONS))
def test_chain_with_ramped_excitation_matches_scipy_dop853(tendon):
    """adaptive_rollout (rtol = atol = 1e-10) to four output times, excitations ramped through
    an InputTable, against SciPy's DOP853 at 1e-12 on the same ODE.

    Tolerance: |ours - ref| <= 1e-6 (1 + |ref|) per state. The reference is good to ~1e-11;
    the error is ours: error control bounds each step's local error (RMS over the 14 states)
    by ~1e-10, and over ~60-210 accepted steps, and at the kinks of the right-hand side (the
    inputs' corners; Millard's activation time constant switching where u = a; its curves'
    segment joins), the global error grows past the tolerance, as SciPy's own RK45 does (on the
    Millard activation ODE alone, RK45 at 1e-10 is off by 1e-8). Observed max error relative
    to 1 + |ref|: explicit_force 1e-10, rigid 2e-11, damped_fiber_length 1.5e-8 (1.5e-7
    rad/s on qd ~ 18 rad/s). Wrong inputs fail by far (explicit_force, same measure: each
    row held until the next instead of interpolated, 4e-2; the table 2 ms late, 9e-3)."""
    msm = _chain_model(tendon)
    x0 = ms.equilibrium_state(msm, Q0, QD0, 0.2)
    table = input_table(TABLE_T_S, TABLE_U, np.zeros((TABLE_T_S.size, msm.skeleton.n_u)))
    result = adaptive_rollout(msm, x0, 0.0, jnp.asarray(T_OUT_S), table, rtol=1e-10,
                              atol=1e-10)
    assert int(result.status) == AdaptiveStatus.OK and int(result.n_done) == T_OUT_S.size
    ours = _flat(result.ys)
    ref = _scipy_reference(msm, x0)
    assert np.max(np.abs(ref[:, 3:6])) > 5.0  # the chain swings: qd of several rad/s
    err = np.abs(ours - ref) / (1.0 + np.abs(ref))
    assert np.max(err) <= 1e-6, (np.max(err, axis=0), tendon)
    # the final state is the last output row
    np.testing.assert_array_equal(_flat(result.y_last), ours[-1])
    assert float(result.t_s) == T_OUT_S[-1]


# A body on a ball joint hanging under gravity, one muscle from a world site to the body.
BALL_XML = """
<mujoco model="ball_pendulum"><option><flag contact="disable"/></option>
<worldbody>
  <site name="o" pos="0.05 0.02 0.05"/>
  <body name="b" pos="0 0 0"><joint name="ball" type="ball" damping="0.005"/>
    <inertial pos="0.01 0 -0.15" mass="0.6" diaginertia="0.006 0.0055 0.0008"/>
    <site name="i" pos="0.03 0.01 -0.2"/>
  </body>
</worldbody>
<tendon><spatial name="m"><site site="o"/><site site="i"/></spatial></tendon>
</mujoco>"""
ROTVEC0 = np.array([0.3, -0.2, 0.5])
W0 = jnp.array([2.0, -1.0, 3.0])  # rad/s, body frame
BALL_U = 0.4


def _quat(rotvec):
    angle = float(np.linalg.norm(rotvec))
    return jnp.asarray(np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * rotvec / angle]))


@pytest.fixture(scope="module")
def ball():
    """(msm, x0, constant input table) of the ball-joint body with one explicit-force
    muscle."""
    skeleton = engine.compile_model(mujoco.MjModel.from_xml_string(BALL_XML))
    assert (skeleton.n_q, skeleton.n_v, skeleton.n_u) == (4, 3, 0)
    q0 = _quat(ROTVEC0)
    length = np.asarray(muscle_lengths(skeleton, q0))
    muscles = mu.build_muscles(("m",), curves="degroote2016", tendon="explicit_force",
                               max_isometric_force_N=100.0,
                               optimal_fiber_length_m=list(0.55 * length),
                               tendon_slack_length_m=list(0.5 * length),
                               pennation_at_optimal_rad=0.1)
    msm = ms.musculoskeletal_model(skeleton, muscles)
    x0 = ms.equilibrium_state(msm, q0, W0, 0.2)
    table = input_table([0.0], [[BALL_U]], np.zeros((1, 0)))  # one row: constant
    return msm, x0, table


def test_ball_joint_quaternions_stay_unit_and_match_fixed_step_rk4(ball):
    """Quaternions (ball joint, 0.2 s from 3.7 rad/s, gravity and a muscle acting):

    (a) every output's quaternion and y_last's have unit norm to 1e-12 (the rollout
        normalises them; roundoff of a 4-vector norm is ~1e-16);
    (b) the trajectory agrees with the fixed-step RK4 `rollout` (Munthe-Kaas on the rotation
        manifold, a different discretisation) at dt = 1e-4 s, q up to the quaternion's sign.
        RK4's global error is O(dt^4): observed RK4-vs-ours 1.2e-10 (qd) at dt = 2e-4 and
        9e-11 at 1e-4, so at 1e-4 the difference is already dominated by our own error at
        rtol = atol = 1e-10 (~1e-10). Tolerance 1e-8 (1 + |y|) per state, 100x margin; a
        wrong quaternion rate (a factor, a frame, w-first order) is off at order one.
    The excitation is constant (a one-row table), since `rollout` holds it over each step."""
    msm, x0, table = ball
    t_out = np.array([0.05, 0.1, 0.15, 0.2])
    result = adaptive_rollout(msm, x0, 0.0, jnp.asarray(t_out), table, rtol=1e-10,
                              atol=1e-10)
    assert int(result.status) == AdaptiveStatus.OK and int(result.n_done) == t_out.size
    quats = np.asarray(result.ys.q)
    np.testing.assert_allclose(np.linalg.norm(quats, axis=1), 1.0, rtol=0, atol=1e-12)
    assert abs(float(np.linalg.norm(np.asarray(result.y_last.q))) - 1.0) <= 1e-12
    # it turns (the quaternion moves by far more than the tolerance) and the muscle pulls
    assert np.min(np.abs(quats - np.asarray(x0.q)).max(axis=1)) > 0.03
    assert np.all(np.asarray(result.ys.tendon_state) > 0.005)

    dt = 1e-4
    n = int(round(t_out[-1] / dt))
    states = ms.rollout(msm, x0, jnp.array([BALL_U]), dt, n)
    rows = np.round(t_out / dt).astype(int)
    fixed = [np.asarray(x)[rows] for x in states]
    fixed[0] = fixed[0] * np.sign(np.sum(fixed[0] * quats, axis=1))[:, None]
    ref = np.concatenate(fixed, axis=1)
    ours = _flat(result.ys)
    err = np.abs(ours - ref) / (1.0 + np.abs(ref))
    assert np.max(err) <= 1e-8, np.max(err, axis=0)


def test_input_table_interpolates_linearly_and_holds_its_end_values():
    """`inputs_at` against np.interp (linear between rows, end values held outside) at rows,
    between rows and outside; tolerance 1e-15 (both interpolate the same two numbers; a few
    ulp of values <= 1)."""
    times = np.array([0.1, 0.2, 0.5, 0.6])
    u = np.array([[0.1, 0.9], [0.7, 0.3], [0.2, 0.2], [0.5, 0.0]])
    c = np.array([[1.0], [-2.0], [0.5], [3.0]])
    table = input_table(times, u, c)
    for t in [-1.0, 0.0, 0.1, 0.13, 0.2, 0.31, 0.5, 0.55, 0.6, 0.61, 7.0]:
        got_u, got_c = inputs_at(table, t)
        want_u = [np.interp(t, times, u[:, j]) for j in range(2)]
        np.testing.assert_allclose(np.asarray(got_u), want_u, rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.asarray(got_c), [np.interp(t, times, c[:, 0])],
                                   rtol=0, atol=1e-15)
    # no skeleton controls: an empty ctrl table gives an empty ctrl at any time
    empty = input_table(times, u, np.zeros((4, 0)))
    assert inputs_at(empty, 0.3)[1].shape == (0,)
    # a time given as text or several times: failed inside JAX before
    for t in ("0.1", [0.1, 0.2], True):
        with pytest.raises(ValueError, match=re.escape(f"inputs_at: t must be one number (s), "
                                                       f"got {t!r}")):
            inputs_at(table, t)


def test_a_one_row_table_is_constant():
    table = input_table(0.25, [0.3, 0.6, 0.1], [2.0])
    for t in [-5.0, 0.0, 0.25, 0.3, 100.0]:
        got_u, got_c = inputs_at(table, t)
        np.testing.assert_array_equal(np.asarray(got_u), [0.3, 0.6, 0.1])
        np.testing.assert_array_equal(np.asarray(got_c), [2.0])


@pytest.mark.parametrize("times", [[0.0, 0.1, 0.1], [0.0, 0.2, 0.1], [0.3, 0.2, 0.1],
                                   [0.0, np.nan, 0.2]])
def test_input_times_must_strictly_increase(times):
    with pytest.raises(ValueError, match="strictly increasing"):
        input_table(times, np.zeros((3, 2)), np.zeros((3, 0)))


@pytest.mark.parametrize("times, excitation, ctrl, message", [
    # np.asarray(float) took True as 1.0 (a time, an excitation) and "0.5" as 0.5
    ([True, 0.1], np.zeros((2, 2)), np.zeros((2, 0)),
     "input table: times must be numbers, got [True, 0.1]"),
    ([0.0], [["0.5", "0.5"]], np.zeros((1, 0)),
     "input table: excitation must be numbers, got [['0.5', '0.5']]"),
    ([0.0], [[True, 0.2]], np.zeros((1, 0)),
     "input table: excitation must be numbers, got [[True, 0.2]]"),
    ([0.0], [[0.2, 0.2]], None, "input table: ctrl must be numbers, got None"),
])
def test_input_tables_take_numbers_only(times, excitation, ctrl, message):
    with pytest.raises(ValueError) as err:
        input_table(times, excitation, ctrl)
    assert str(err.value) == message


def test_input_table_rejects_rows_that_do_not_match_its_times(ball):
    with pytest.raises(ValueError, match=r"excitation has shape \(3, 2\)"):
        input_table([0.0, 0.1], np.ones((3, 2)), np.zeros((2, 0)))
    with pytest.raises(ValueError, match=r"excitation has shape \(2, 2\)"):
        input_table([0.0, 0.1, 0.2], np.ones((2, 2)), np.zeros((3, 0)))
    with pytest.raises(ValueError, match=r"ctrl has shape \(1, 1\)"):
        input_table([0.0, 0.1], np.ones((2, 1)), np.zeros((1, 1)))
    with pytest.raises(ValueError, match=r"excitation must be finite and in \[0, 1\]; row 1 "
                                         r"\(t = 0.1 s\), column 0 is 1.5"):
        input_table([0.0, 0.1], [[0.2], [1.5]], np.zeros((2, 0)))     # was accepted
    with pytest.raises(ValueError, match=r"ctrl must be finite; row 0 \(t = 0 s\), column 0 "
                                         r"is nan"):
        input_table([0.0, 0.1], [[0.2], [0.5]], [[np.nan], [0.0]])
    msm, x0, _ = ball
    wide = input_table([0.0], np.full((1, msm.n_muscles + 1), 0.2), np.zeros((1, 0)))
    with pytest.raises(ValueError, match="2 excitation and 0 ctrl columns for 1 muscles"):
        adaptive_rollout(msm, x0, 0.0, jnp.array([0.1]), wide, rtol=1e-6, atol=1e-6)
    fits = input_table([0.0], np.full((1, msm.n_muscles), 0.2), np.zeros((1, 0)))
    with pytest.raises(ValueError, match=r"adaptive_rollout: state.tendon_state has shape "
                                         r"\(2,\), expected \(1,\) \(n_muscles = 1\)"):
        adaptive_rollout(msm, x0._replace(tendon_state=jnp.zeros(2)), 0.0, jnp.array([0.1]),
                         fits, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("change, message", [
    # all traced under its jit before: accepted, or refused inside JAX
    ({"rtol": True}, "adaptive_rollout: rtol must be finite numbers >= 0, got True"),
    ({"atol": -1e-6}, "adaptive_rollout: atol must be finite numbers >= 0, got -1e-06"),
    ({"rtol": "1e-6"}, "adaptive_rollout: rtol must be finite numbers >= 0, got '1e-6'"),
    ({"rtol": 0.0, "atol": 0.0}, "adaptive_rollout: rtol and atol are both 0"),
    ({"max_steps": 2.5}, "adaptive_rollout: max_steps must be an integer >= 1, got 2.5"),
    ({"max_steps": True}, "adaptive_rollout: max_steps must be an integer >= 1, got True"),
    ({"t0_s": np.nan}, "t_out_s must be finite, strictly increasing and after t0_s = nan"),
    ({"t_out_s": jnp.array([0.2, 0.1])}, "t_out_s must be finite, strictly increasing"),
    ({"t0_s": "0"}, "adaptive_rollout: t0_s must be numbers, got '0'"),
    ({"h0_s": "0.01"}, "adaptive_rollout: h0_s must be numbers, got '0.01'"),
    ({"table": (0.0, 0.2)}, "adaptive_rollout: table must be an InputTable (input_table), got "
                            "tuple"),
])
def test_bad_options_are_refused_before_compiling(ball, change, message):
    msm, x0, table = ball
    args = {"t0_s": 0.0, "t_out_s": jnp.array([0.1]), "table": table, "rtol": 1e-6,
            "atol": 1e-6, **change}
    with pytest.raises(ValueError) as err:
        adaptive_rollout(msm, x0, args.pop("t0_s"), args.pop("t_out_s"), args.pop("table"),
                         **args)
    assert message in str(err.value)


def test_output_times_may_be_a_list(ball):
    """(a list reached the jitted rollout as a list of scalars: a TracerArrayConversionError)"""
    msm, x0, table = ball
    result = adaptive_rollout(msm, x0, 0.0, [0.05, 0.1], table, rtol=1e-6, atol=1e-6)
    assert result.ys.q.shape == (2, 4) and int(result.status) == int(AdaptiveStatus.OK)


def test_n_used_integrates_to_the_first_outputs_only(ball):
    """t_out of 5 times with n_used = 3: rows 3..4 NaN, n_done 3, status OK, t_s exactly
    t_out[2]; rows 0..2 equal those of a call with t_out[:3] to 1e-14 (the same steps: the
    initial step is chosen over [t0, t_out[n_used - 1]] in both; only roundoff of two
    compilations may differ)."""
    msm, x0, table = ball
    t_out = jnp.array([0.02, 0.04, 0.06, 0.08, 0.1])
    part = adaptive_rollout(msm, x0, 0.0, t_out, table, rtol=1e-8, atol=1e-8, n_used=3)
    assert int(part.status) == AdaptiveStatus.OK and int(part.n_done) == 3
    assert float(part.t_s) == float(t_out[2])
    ys = _flat(part.ys)
    assert np.all(np.isnan(ys[3:])) and np.all(np.isfinite(ys[:3]))
    np.testing.assert_array_equal(_flat(part.y_last), ys[2])
    first = adaptive_rollout(msm, x0, 0.0, t_out[:3], table, rtol=1e-8, atol=1e-8)
    assert int(first.status) == AdaptiveStatus.OK
    assert int(first.n_accepted) == int(part.n_accepted)
    assert int(first.n_rejected) == int(part.n_rejected)
    np.testing.assert_allclose(ys[:3], _flat(first.ys), rtol=0, atol=1e-14)
