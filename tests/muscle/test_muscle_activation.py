"""Activation dynamics vs the closed-form solutions of the first-order laws.

With constant excitation u the Millard/Thelen law separates:
  activation (u > a):   dt = tau_act (0.5 + 1.5 a)/(u - a) da
      t(a) = tau_act [ (0.5 + 1.5 u) ln((u - a0)/(u - a)) - 1.5 (a - a0) ]
  deactivation (u < a): dt = tau_deact da / ((u - a)(0.5 + 1.5 a))
      t(a) = tau_deact / (0.5 + 1.5 u) [ ln((a0 - u)/(a - u)) + ln((0.5 + 1.5 a)/(0.5 + 1.5 a0)) ]
(derived by partial fractions). Our da/dt is integrated with scipy's solve_ivp (DOP853,
rtol 1e-12) and the closed-form t(a) is evaluated at the computed a(t_k).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin.muscle import ActivationLaw, activation_derivative, activation_dynamics

# Integration error of DOP853 at rtol 1e-12 (~1e-12 in a) maps to a time error
# da / (da/dt) <= 1e-12 / 1e-1 (slowest rate kept, 1/s): tolerance 1e-10 s (observed 3e-13 s).
TIME_TOL = 1e-10


def _t_activation(a, a0, u, tau):
    return tau * ((0.5 + 1.5 * u) * np.log((u - a0) / (u - a)) - 1.5 * (a - a0))


def _t_deactivation(a, a0, u, tau):
    return tau / (0.5 + 1.5 * u) * (np.log((a0 - u) / (a - u))
                                    + np.log((0.5 + 1.5 * a) / (0.5 + 1.5 * a0)))


def _integrate(act, a0, u, t_end):
    f = jax.jit(lambda a: activation_derivative(act, a, u))
    sol = solve_ivp(lambda t, y: np.asarray(f(jnp.asarray(y))), (0.0, t_end), [a0],
                    method="DOP853", rtol=1e-12, atol=1e-14, t_eval=np.linspace(0, t_end, 41))
    assert sol.success
    return sol.t, sol.y[0]


def _check(t, a, a0, u, tau, closed):
    keep = np.abs(a - u) > 0.02          # stay off the asymptote (log of a tiny number)
    t_closed = closed(a[keep], a0, u, tau)
    err = np.abs(t_closed - t[keep])
    assert keep.sum() >= 10
    assert err.max() <= TIME_TOL, f"closed-form time of a(t) off by {err.max():.2e} s"


@pytest.mark.parametrize("a0, u", [(0.05, 0.9), (0.3, 1.0)])
def test_millard_activation_matches_closed_form(a0, u):
    act = activation_dynamics(ActivationLaw.MILLARD2012)   # OpenSim 0.010 / 0.040 s, a_min 0.01
    t, a = _integrate(act, a0, u, 0.06)
    _check(t, a, a0, u, 0.010, _t_activation)


@pytest.mark.parametrize("a0, u, u_eff", [(0.9, 0.2, 0.2), (0.8, 0.0, 0.01)])
def test_millard_deactivation_matches_closed_form(a0, u, u_eff):
    # u = 0 is clamped to a_min = 0.01 by OpenSim's model: the solution is the u = 0.01 one.
    act = activation_dynamics(ActivationLaw.MILLARD2012)
    t, a = _integrate(act, a0, u, 0.1)
    _check(t, a, a0, u_eff, 0.040, _t_deactivation)


def test_millard_activation_is_clamped_to_minimum_and_one():
    # OpenSim clamps activation and excitation to [a_min, 1] before the law.
    act = activation_dynamics(ActivationLaw.MILLARD2012, min_activation=0.05)
    got = np.asarray(activation_derivative(act, jnp.array([0.0, 1.2, 0.05]),
                                           jnp.array([0.0, 2.0, 0.05])))
    assert np.all(got == 0.0), got


@pytest.mark.parametrize("a0, u, closed, tau", [(0.05, 0.9, _t_activation, 0.015),
                                               (0.9, 0.1, _t_deactivation, 0.060)])
def test_degroote_law_with_sharp_switch_matches_closed_form(a0, u, closed, tau):
    # With smoothing b = 1e5, 0.5 tanh(b (u - a)) = +-0.5 to 1e-30 while |u - a| > 1e-3, so
    # De Groote's law equals the piecewise law above with tau_act = 0.015 s and
    # tau_deact = 0.060 s (OpenSim's DeGrooteFregly2016 defaults), without clamping.
    act = activation_dynamics(ActivationLaw.DEGROOTE2016, smoothing=1e5)
    t, a = _integrate(act, a0, u, 0.1 if tau < 0.05 else 0.3)
    _check(t, a, a0, u, tau, closed)


def test_degroote_default_law_blends_both_time_constants():
    # b = 0.1 (OpenSim's value): f = 0.5 tanh(0.1 (u - a)) is small, so both terms contribute;
    # the rate lies strictly between the pure activation and pure deactivation rates and the
    # law is smooth (odd in u - a to first order). Check the bracket at a few points.
    act = activation_dynamics(ActivationLaw.DEGROOTE2016)
    a = jnp.array([0.2, 0.5, 0.8])
    u = jnp.array([0.9, 0.1, 0.3])
    rate = np.asarray(activation_derivative(act, a, u))
    z = 0.5 + 1.5 * np.asarray(a)
    d = np.asarray(u - a)
    r_act, r_deact = d / (0.015 * z), d * z / 0.060
    lo, hi = np.minimum(r_act, r_deact), np.maximum(r_act, r_deact)
    assert np.all((rate > lo) & (rate < hi)), (rate, lo, hi)


@pytest.mark.parametrize("kwargs, message", [
    ({"tau_act_s": 0.0}, "activation: tau_act_s must be > 0"),
    ({"min_activation": 1.0}, "activation: min_activation must be in [0, 1)"),
    ({"law": ActivationLaw.DEGROOTE2016, "smoothing": -1.0}, "activation: smoothing must be > 0"),
    # np/jnp.asarray(float) took True as 1.0 and "0.02" as 0.02; inf was a frozen activation
    ({"tau_act_s": True}, "activation: tau_act_s must be numbers, got True"),
    ({"tau_deact_s": "0.02"}, "activation: tau_deact_s must be numbers, got '0.02'"),
    ({"tau_act_s": float("inf")}, "activation: tau_act_s must be finite, got inf"),
    ({"law": "mujoco", "max_excitation": [True]},
     "activation: max_excitation must be numbers, got [True]"),
    ({"law": "fast"}, "activation: law 'fast': expected one of ['millard2012', "),  # bare Enum
])
def test_bad_activation_parameters_are_rejected(kwargs, message):
    with pytest.raises(ValueError) as err:
        activation_dynamics(**kwargs)
    assert message in str(err.value)


def test_a_time_constant_can_be_differentiated():
    """The builder's checks let a traced time constant through (an optimiser may tune it):
    d(da/dt)/d tau_act of the MILLARD2012 law with u > a is -(u - a) / (tau_act^2 (0.5 +
    1.5 a)) (module docstring), against which jax.grad is checked to 1e-12 relative (a few
    float64 operations)."""
    a, u, tau = 0.3, 0.8, 0.01

    def rate(tau_act_s):
        act = activation_dynamics(ActivationLaw.MILLARD2012, tau_act_s=tau_act_s)
        return activation_derivative(act, a, u)

    expected = -(u - a) / (tau**2 * (0.5 + 1.5 * a))
    assert abs(float(jax.grad(rate)(tau)) - expected) <= 1e-12 * abs(expected)
