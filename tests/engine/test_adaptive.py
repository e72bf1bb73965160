"""Dormand-Prince 5(4) (engine/adaptive.py) against SciPy's RK45, whose controller it copies,
and against closed-form solutions: step counts and states, output times, pytree states,
failures, jit with traced tolerances and times, forward-mode derivatives, argument checks.
All float64 (conftest)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin.engine.adaptive import AdaptiveStatus, dormand_prince


def van_der_pol(t, y, args):
    return jnp.array([y[1], (1.0 - y[0] ** 2) * y[1] - y[0]])


def van_der_pol_np(t, y):
    return np.array([y[1], (1.0 - y[0] ** 2) * y[1] - y[0]])


W = 2.0  # harmonic oscillator x'' = -W^2 x, state (x, v)


def oscillator(t, y, args):
    return jnp.array([y[1], -(W**2) * y[0]])


@pytest.mark.parametrize("h0", [None, 0.01])
@pytest.mark.parametrize("rtol", [1e-6, 1e-10])
def test_one_output_time_is_scipy_rk45(h0, rtol):
    # Van der Pol (mu = 1) to T = 20 (three limit cycles, several rejections). Same tableau,
    # norm, controller and initial step as SciPy, so the same steps: equal accepted and
    # rejected counts (SciPy: len(t) - 1 accepted; nfev = 1 (+1 for the initial step's trial)
    # + 6 per attempt) and the end state equal up to roundoff: 1e-12 of the state's size
    # (observed <= 3e-14; our dot products are summed in another order than NumPy's).
    y0, t_end, atol = [2.0, 0.0], 20.0, rtol * 1e-3
    sol = solve_ivp(van_der_pol_np, (0.0, t_end), y0, method="RK45", rtol=rtol, atol=atol,
                    first_step=h0)
    assert sol.status == 0
    r = dormand_prince(van_der_pol, jnp.array(y0), 0.0, jnp.array([t_end]), rtol=rtol,
                       atol=atol, h0_s=h0)
    n_attempts = (sol.nfev - (2 if h0 is None else 1)) // 6
    assert int(r.status) == AdaptiveStatus.OK and int(r.n_done) == 1
    assert int(r.n_accepted) == len(sol.t) - 1
    assert int(r.n_rejected) == n_attempts - (len(sol.t) - 1) > 0
    np.testing.assert_allclose(np.asarray(r.ys[0]), sol.y[:, -1], rtol=0,
                               atol=1e-12 * np.abs(sol.y).max())
    np.testing.assert_array_equal(np.asarray(r.y_last), np.asarray(r.ys[0]))
    assert float(r.t_s) == t_end


def test_outputs_at_scipy_step_ends_are_scipy_states():
    # Output times at SciPy's own step ends (first step given): each of our steps is clipped
    # to SciPy's accepted step, so the states there are SciPy's up to roundoff (1e-12
    # relative to the state's size, observed ~1e-14). The counts differ on purpose: a step
    # SciPy rejected is clipped to the one it then accepted (no rejection here), and a step
    # falling an ulp short of an output time leaves a sliver step, hence the bound (observed
    # 436 steps for SciPy's 422).
    rtol = 1e-8
    sol = solve_ivp(van_der_pol_np, (0.0, 20.0), [2.0, 0.0], method="RK45", rtol=rtol,
                    atol=rtol * 1e-3, first_step=0.01)
    t_out = jnp.asarray(sol.t[1:])
    r = dormand_prince(van_der_pol, jnp.array([2.0, 0.0]), 0.0, t_out, rtol=rtol,
                       atol=rtol * 1e-3, h0_s=0.01)
    assert int(r.status) == AdaptiveStatus.OK and int(r.n_done) == t_out.shape[0]
    np.testing.assert_allclose(np.asarray(r.ys).T, sol.y[:, 1:], rtol=0,
                               atol=1e-12 * np.abs(sol.y).max())
    assert len(sol.t) - 1 <= int(r.n_accepted) <= 1.1 * (len(sol.t) - 1)


def test_rhs_traced_once_and_six_evaluations_per_attempt():
    # One trace: rhs(t0, y0) and the initial step's trial are rows of the loop's tableau. Calls
    # at run time (counted by a callback): those two, then 6 per attempt (FSAL), as SciPy.
    traces, calls = [], []

    def rhs(t, y, args):
        traces.append(1)
        jax.debug.callback(lambda: calls.append(1))
        return van_der_pol(t, y, args)

    r = dormand_prince(rhs, jnp.array([2.0, 0.0]), 0.0, jnp.array([3.0, 7.0]), rtol=1e-7,
                       atol=1e-10)
    jax.effects_barrier()
    assert len(traces) == 1
    assert len(calls) == 2 + 6 * (int(r.n_accepted) + int(r.n_rejected))


@pytest.mark.parametrize("rtol", [1e-6, 1e-9])
def test_harmonic_oscillator_at_output_times(rtol):
    # x = cos(W t), v = -W sin(W t) over 5 periods at 40 output times. RK45 keeps each local
    # error near rtol |y|; over ~10^2-10^3 steps they add up, mostly as a phase error, to a
    # few rtol times the amplitude (1 for x, W for v): bound 10 rtol (observed <= 3.7).
    t_out = jnp.linspace(0.1, 5 * 2 * np.pi / W, 40)
    r = dormand_prince(oscillator, jnp.array([1.0, 0.0]), 0.0, t_out, rtol=rtol,
                       atol=rtol * 1e-3)
    assert int(r.status) == AdaptiveStatus.OK and int(r.n_done) == 40
    exact = np.stack([np.cos(W * t_out), -W * np.sin(W * t_out)], axis=1)
    error = np.abs(np.asarray(r.ys) - exact) / np.array([1.0, W])
    assert error.max() < 10 * rtol, error.max() / rtol


def test_global_error_falls_with_rtol():
    # Order-5 steps under a per-step error control: the global error of the oscillator at
    # t = 5 periods falls about in proportion to rtol (observed 1050-1330x per 1000x);
    # require at least 100x.
    t_end = 5 * 2 * np.pi / W
    errors = []
    for rtol in (1e-5, 1e-8, 1e-11):
        r = dormand_prince(oscillator, jnp.array([1.0, 0.0]), 0.0, jnp.array([t_end]),
                           rtol=rtol, atol=rtol * 1e-3)
        errors.append(np.abs(np.asarray(r.ys[0]) - [1.0, 0.0]).max())
    assert errors[0] > 100 * errors[1] > 100 * 100 * errors[2], errors


class Pools(NamedTuple):
    vector: jax.Array  # (3,)
    matrix: jax.Array  # (2, 2)
    scalar: jax.Array  # ()


RATES = Pools(jnp.array([0.5, 1.0, 2.0]), jnp.array([[0.1, 3.0], [-0.2, 1.5]]),
              jnp.array(0.7))


def test_pytree_state_independent_exponentials():
    # y_i' = -r_i y_i, each leaf its own shape; y_i = y_i(0) exp(-r_i t). Bound: 10 rtol
    # relative (the local errors of ~90 steps, each kept near rtol |y|, add up to a few rtol;
    # observed <= 3.7).
    rtol = 1e-9
    y0 = Pools(jnp.array([1.0, -2.0, 3.0]), jnp.array([[1.0, 2.0], [3.0, 4.0]]),
               jnp.array(5.0))
    t_out = jnp.array([0.25, 1.0, 2.0])
    r = dormand_prince(lambda t, y, rates: jax.tree_util.tree_map(lambda a, b: -a * b, rates, y),
                       y0, 0.0, t_out, rtol=rtol, atol=1e-15, args=RATES)
    assert int(r.status) == AdaptiveStatus.OK
    assert isinstance(r.ys, Pools) and isinstance(r.y_last, Pools)
    for leaf, leaf0, rate in zip(r.ys, y0, RATES):
        assert leaf.shape == (3, *leaf0.shape)
        times = t_out.reshape((3,) + (1,) * leaf0.ndim)
        np.testing.assert_allclose(leaf, leaf0 * np.exp(-rate * times), rtol=10 * rtol)


def test_output_times_are_landed_and_do_not_shorten_later_steps():
    t_end = 5 * 2 * np.pi / W
    kw = dict(rtol=1e-8, atol=1e-11, h0_s=0.05)
    y0 = jnp.array([1.0, 0.0])
    one = dormand_prince(oscillator, y0, 0.0, jnp.array([t_end]), **kw)
    # A sliver output 1e-9 s after the start: its clipped step must not become the proposal
    # (which would cost ~log10(0.05 / 1e-8) ~ 7 extra steps to regrow): the next step is the
    # unclipped 0.05 s and the run costs one step more than without the output.
    sliver = dormand_prince(oscillator, y0, 0.0, jnp.array([1e-9]), **kw)
    assert float(sliver.h_next_s) == 0.05 and int(sliver.n_accepted) == 1
    both = dormand_prince(oscillator, y0, 0.0, jnp.array([1e-9, t_end]), **kw)
    assert int(both.n_accepted) == int(one.n_accepted) + 1
    # 40 output times at irregular spacing: each splits at most about one step.
    t_out = jnp.sort(jnp.asarray(np.random.default_rng(0).uniform(0.01, t_end, 39)))
    t_out = jnp.append(t_out, t_end)
    many = dormand_prince(oscillator, y0, 0.0, t_out, **kw)
    assert int(many.n_accepted) <= int(one.n_accepted) + 40
    assert float(many.t_s) == float(t_end) == float(one.t_s)  # bit for bit
    for r in (one, both, many):
        assert int(r.status) == AdaptiveStatus.OK


def test_finite_time_blow_up_stops_with_nan_rows():
    # y' = y^2, y(0) = 1: y = 1 / (1 - t) blows up at t = 1. The steps shrink with 1 - t until
    # they fall under 10 spacing(t): STEP_UNDERFLOW, as SciPy ("Required step size is less
    # than spacing between numbers", also at t = 1 within 1e-8).
    t_out = jnp.array([0.5, 0.9, 2.0, 3.0])
    r = dormand_prince(lambda t, y, a: y**2, jnp.array(1.0), 0.0, t_out, rtol=1e-8,
                       atol=1e-10)
    sol = solve_ivp(lambda t, y: y**2, (0.0, 2.0), [1.0], method="RK45", rtol=1e-8,
                    atol=1e-10)
    assert sol.status == -1 and "spacing" in sol.message
    assert int(r.status) == AdaptiveStatus.STEP_UNDERFLOW and int(r.n_done) == 2
    np.testing.assert_allclose(r.ys[:2], [2.0, 10.0], rtol=1e-7)
    assert np.all(np.isnan(np.asarray(r.ys[2:])))
    assert abs(float(r.t_s) - 1.0) < 1e-8 and abs(sol.t[-1] - 1.0) < 1e-8
    assert float(r.y_last) > 1e12


def test_nonfinite_rhs_is_rejected_until_the_step_underflows():
    # rhs NaN after t = 0.5: steps reaching past it are rejected and shrunk, the accepted
    # ones approach 0.5 until the step is under 10 spacing(0.5).
    rhs = lambda t, y, a: jnp.where(t > 0.5, jnp.nan, -y)  # noqa: E731
    r = dormand_prince(rhs, jnp.array(1.0), 0.0, jnp.array([0.4, 1.0]), rtol=1e-8,
                       atol=1e-10)
    assert int(r.status) == AdaptiveStatus.STEP_UNDERFLOW and int(r.n_done) == 1
    assert 0.5 - 1e-12 < float(r.t_s) <= 0.5 and int(r.n_rejected) > 0
    np.testing.assert_allclose(float(r.y_last), np.exp(-float(r.t_s)), rtol=1e-8)
    assert np.isfinite(float(r.ys[0])) and np.isnan(float(r.ys[1]))


def test_overflowing_state_is_nonfinite():
    # y' = 1e308: the first step (clipped to 1 s) ends at 1e308; the next (10x longer) step
    # overflows to inf with a zero error estimate (the scale is inf): NONFINITE, not taken.
    r = dormand_prince(lambda t, y, a: jnp.full_like(y, 1e308), jnp.zeros(2), 0.0,
                       jnp.array([1.0, 10.0]), rtol=1e-8, atol=1e-10, h0_s=5.0)
    assert int(r.status) == AdaptiveStatus.NONFINITE and int(r.n_done) == 1
    assert float(r.t_s) == 1.0
    np.testing.assert_allclose(r.y_last, [1e308, 1e308], rtol=1e-14)
    assert np.all(np.isnan(np.asarray(r.ys[1])))


def test_max_steps_counts_all_attempts():
    t_out = jnp.array([1.0, 5 * 2 * np.pi / W])
    r = dormand_prince(oscillator, jnp.array([1.0, 0.0]), 0.0, t_out, rtol=1e-8, atol=1e-11,
                       max_steps=30)
    assert int(r.status) == AdaptiveStatus.MAX_STEPS
    assert int(r.n_accepted) + int(r.n_rejected) == 30 and int(r.n_done) == 1
    assert np.all(np.isnan(np.asarray(r.ys[1]))) and 1.0 <= float(r.t_s) < float(t_out[1])


def test_jit_with_traced_tolerances_and_times():
    traces = []

    @jax.jit
    def run(y0, t_out, rtol, atol):
        traces.append(1)
        return dormand_prince(van_der_pol, y0, 0.0, t_out, rtol=rtol, atol=atol)

    y0, t_out = jnp.array([2.0, 0.0]), jnp.array([1.0, 4.0, 9.0])
    for rtol in (1e-6, 1e-9):
        jitted = run(y0, t_out, rtol, rtol * 1e-3)
        eager = dormand_prince(van_der_pol, y0, 0.0, t_out, rtol=rtol, atol=rtol * 1e-3)
        assert int(jitted.n_accepted) == int(eager.n_accepted)
        np.testing.assert_allclose(jitted.ys, eager.ys, rtol=1e-13)  # same steps, roundoff
    assert len(traces) == 1, "new tolerances must not retrace"
    shifted = run(y0, t_out + 0.5, 1e-9, 1e-12)
    assert float(shifted.t_s) == 9.5 and len(traces) == 1


def test_forward_mode_on_exponential_decay():
    # y' = -k y: y(t) = y0 exp(-k t), dy(t)/dy0 = exp(-k t). The jvp differentiates the steps
    # taken (frozen step sizes): on a linear problem that is y(t) / y0 up to roundoff (1e-14),
    # and within 10 rtol of the exact sensitivity (the discrete map's own error). Central
    # differences of the result (step 1e-4; the tolerance-relative controller takes the same
    # steps for y0 +- 1e-4): 1e-9 (observed 5e-12).
    k, rtol, y0 = 1.3, 1e-9, 2.0
    t_out = jnp.array([0.5, 1.0, 3.0])

    def final(y):
        return dormand_prince(lambda t, x, a: -k * x, y, 0.0, t_out, rtol=rtol,
                              atol=1e-14).ys

    ys, dys = jax.jvp(final, (jnp.array(y0),), (jnp.array(1.0),))
    np.testing.assert_allclose(dys, ys / y0, rtol=1e-14)
    np.testing.assert_allclose(dys, np.exp(-k * t_out), rtol=10 * rtol)
    fd = (final(jnp.array(y0 + 1e-4)) - final(jnp.array(y0 - 1e-4))) / 2e-4
    np.testing.assert_allclose(dys, fd, rtol=1e-9)
    with pytest.raises(ValueError, match="Reverse-mode differentiation"):
        jax.grad(lambda y: final(y)[-1])(jnp.array(y0))


@pytest.mark.parametrize("t_out", [[1.0, 1.0], [2.0, 1.0], [0.0, 1.0], [-1.0], [1.0, np.nan]])
def test_bad_output_times_raise(t_out):
    with pytest.raises(ValueError, match="t_out_s"):
        dormand_prince(oscillator, jnp.array([1.0, 0.0]), 0.0, jnp.array(t_out), rtol=1e-6,
                       atol=1e-9)


def test_bad_output_time_shapes_raise():
    for t_out in (jnp.zeros((0,)), jnp.ones((2, 2))):
        with pytest.raises(ValueError, match="1-D"):
            dormand_prince(oscillator, jnp.array([1.0, 0.0]), 0.0, t_out, rtol=1e-6,
                           atol=1e-9)


def test_breakpoints_make_a_kinked_rhs_exact():
    # y' = |t - 0.5| + 1: y(1) = 1 + 2 * 0.125 = 1.25 exactly. On each side of the kink the
    # solution is a quadratic, which the 5th-order step integrates exactly; with the kink as a
    # breakpoint no step straddles it: roundoff (1e-14; observed 0 in 3 steps). Without, a step
    # across the kink errs by O(h^3) and the controller's estimate misjudges it (observed
    # 5.0e-6 after 8 rejections, above rtol).
    def rhs(t, y, args):
        return jnp.abs(t - 0.5) + 1.0 + 0.0 * y

    kw = dict(rtol=1e-6, atol=1e-9, h0_s=0.3)
    exact = 1.25
    with_break = dormand_prince(rhs, jnp.array(0.0), 0.0, jnp.array([1.0]),
                                breakpoints_s=jnp.array([0.5]), **kw)
    without = dormand_prince(rhs, jnp.array(0.0), 0.0, jnp.array([1.0]), **kw)
    assert abs(float(with_break.ys[0]) - exact) < 1e-14
    assert abs(float(without.ys[0]) - exact) > 1e-7
    assert int(with_break.status) == AdaptiveStatus.OK


def test_n_used_stops_at_the_first_outputs_and_nan_h0_selects_the_step():
    # n_used = 3 of 5 outputs must give exactly the run to the first three (same steps: the
    # initial step is chosen over [t0, t_out[n_used - 1]] in both), NaN rows after; h0_s = NaN
    # must select the first step as h0_s = None does (bit for bit).
    t_out = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    kw = dict(rtol=1e-8, atol=1e-10)
    part = dormand_prince(van_der_pol, jnp.array([2.0, 0.0]), 0.0, t_out, n_used=3, **kw)
    short = dormand_prince(van_der_pol, jnp.array([2.0, 0.0]), 0.0, t_out[:3], **kw)
    assert int(part.n_done) == 3 and float(part.t_s) == 3.0
    assert np.all(np.isnan(np.asarray(part.ys)[3:]))
    np.testing.assert_array_equal(np.asarray(part.ys)[:3], np.asarray(short.ys))
    nan_h0 = dormand_prince(van_der_pol, jnp.array([2.0, 0.0]), 0.0, t_out[:3], h0_s=jnp.nan,
                            **kw)
    np.testing.assert_array_equal(np.asarray(nan_h0.ys), np.asarray(short.ys))
