"""Thelen 2003 curves (OpenSim's Thelen2003Muscle) vs OpenSim 4.6 and OpenSim's formulas.

Oracles:
* /work/shared/reference/opensim/arm26_reference.json (OpenSim 4.6 on arm26.osim, whose six
  muscles are Thelen2003Muscles): the fiber-tendon equilibrium at activation 0.5 and zero speed
  (Model.equilibrateMuscles) at 11 poses, given OpenSim's own MTU lengths, so the path geometry
  (and its omitted ellipsoid wraps) does not enter. OpenSim's Thelen2003Muscle::
  computeInitialFiberEquilibrium stops its Newton iteration once the force error
  |(a f_L f_V + f_PE) cos(phi) - f_T| F_iso < max(1e-8 F_iso, 10 SignificantReal), i.e. at a
  normalized residual below R_TOL = 1e-8; we solve to roundoff (~1e-14). So a quantity q of
  OpenSim's state can differ from ours by |dq/dx| R_TOL / |dR/dx| to first order in the fiber
  length along the tendon x: that is each pair's tolerance (observed: 0.97 of it on the worst
  pair, e.g. fiber lengths 2.4e-11 m, forces 7.9e-6 N), and OpenSim's state must satisfy our
  residual to R_TOL (observed 9.7e-9 there). Skipped if the reference is absent.
* OpenSim's formulas (Thelen2003Muscle.cpp: calcfal, calcfpe, calcfse, calcdlceN and the
  derivative and energy helpers), re-typed below as scalar Python in OpenSim's own
  (unnormalized) form, at points in every branch; roundoff tolerance 1e-12.
* Definitions: inverses invert, integrals differentiate to the curves (jax.grad) and match
  scipy's quad, derivatives are continuous where OpenSim's are.
"""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp

from myotwin.models import arm26
from myotwin.muscle import (
    ActivationLaw,
    activation_derivative,
    build_muscles,
    dynamics,
    equilibrium,
    force_activation,
    muscle_outputs,
    pennation,
)
from myotwin.muscle import thelen2003 as th
from myotwin.osim import muscles as osim_muscles
from shared_reference import SHARED

REFERENCE = SHARED / "reference" / "opensim" / "arm26_reference.json"
#: OpenSim's equilibrium tolerance, normalized by F_iso (computeInitialFiberEquilibrium).
R_TOL = 1e-8
#: Closed forms vs the same formulas re-arranged: roundoff of O(1) quantities.
ROUNDOFF = 1e-12
#: arm26.MUSCLES (names of the .osim reader) -> build_muscles keywords: the loader's table,
#: checked end to end against OpenSim in tests/osim/test_osim_muscles.py.
ARM26_KEYWORDS = osim_muscles.PARAMETERS["Thelen2003Muscle"]
QUANTITIES = ("fiber_length", "normalized_fiber_length", "pennation_angle", "tendon_length",
              "tendon_strain", "tendon_force", "active_fiber_force", "passive_fiber_force")
GENERIC = ("max_isometric_force_N", "optimal_fiber_length_m", "tendon_slack_length_m",
           "pennation_angle_at_optimal_rad", "fmax_tendon_strain", "fmax_muscle_strain")


# ----------------------------------------------------------------------------------------
# OpenSim's formulas as scalar Python (Thelen2003Muscle.cpp), independent of the module
# ----------------------------------------------------------------------------------------

def os_fal(l, kshape):
    return math.exp(-(l - 1.0) ** 2 / kshape)


def os_fpe(l, e0, kpe):
    return (math.exp(kpe * (l - 1.0) / e0) - 1.0) / (math.exp(kpe) - 1.0) if l > 1.0 else 0.0


def os_tendon_constants(e0):
    t1 = math.exp(3.0)
    e_toe = 99.0 * e0 * t1 / (166.0 * t1 - 67.0)
    return e_toe, 0.67 / (e0 - e_toe)


def os_fse(lt, e0):
    x, (e_toe, klin) = lt - 1.0, os_tendon_constants(e0)
    if x > e_toe:
        return klin * (x - e_toe) + 0.33
    if x > 0.0:
        return 0.33 / (math.exp(3.0) - 1.0) * (math.exp(3.0 * x / e_toe) - 1.0)
    return 0.0


def os_dfse(lt, e0):
    x, (e_toe, klin) = lt - 1.0, os_tendon_constants(e0)
    if x > e_toe:
        return klin
    return 0.33 / (math.exp(3.0) - 1.0) * (3.0 / e_toe) * math.exp(3.0 * x / e_toe)


def os_tendon_pe(strain, e0, l_ts=1.0, f_iso=1.0):
    """calcfsefisoPE, in OpenSim's unnormalized form."""
    e_toe, klin = os_tendon_constants(e0)
    c = f_iso * 0.33 / (math.exp(3.0) - 1.0)

    def toe(length):
        return c * ((l_ts * e_toe / 3.0) * math.exp(3.0 * (length - l_ts) / (l_ts * e_toe))
                    - length)

    def lin(length):
        return 0.5 * f_iso * klin * length ** 2 / l_ts + f_iso * length * (klin * (-1.0 - e_toe)
                                                                            + 0.33)
    length, l_toe = (strain + 1.0) * l_ts, (e_toe + 1.0) * l_ts
    if strain > e_toe:
        return toe(l_toe) - toe(l_ts) + lin(length) - lin(l_toe)
    return toe(length) - toe(l_ts) if strain > 0.0 else 0.0


def os_dlce(a, fal, fm, af, flen, thresh):
    """calcdlceN and calcDdlceDaFalFv: the normalized fiber velocity of the active fiber force
    Fm = a fal fv, and its derivative with respect to Fm."""
    afl = a * fal
    c = 0.25 + 0.75 * a

    def b_db(f):
        if f <= afl:
            return afl + f / af, 1.0 / af
        return (2.0 + 2.0 / af) * (afl * flen - f) / (flen - 1.0), -(2.0 + 2.0 / af) / (flen - 1.0)

    if 0.0 < fm < afl * flen * thresh:
        b, db = b_db(fm)
        return c * (fm - afl) / b, c / b - c * (fm - afl) / b ** 2 * db
    fm0 = 0.0 if fm <= 0.0 else thresh * afl * flen
    b, db = b_db(fm0)
    slope = c / b - c * (fm0 - afl) / b ** 2 * db
    return c * (fm0 - afl) / b + slope * (fm - fm0), slope


# ----------------------------------------------------------------------------------------
# Pointwise values vs OpenSim's formulas
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kshape, e0_m, kpe", [(0.45, 0.6, 5.0), (0.5, 0.6, 4.0)])
def test_fiber_curves_match_opensim_formulas(kshape, e0_m, kpe):
    # OpenSim defaults and arm26's values; the passive curve is 0 below optimal length
    # (OpenSim; the paper's formula would be slightly negative there).
    for l in (0.3, 0.6, 0.95, 1.0, 1.0 + 1e-9, 1.1, 1.3, 1.6, 1.9):
        assert float(th.active_force_length(l, kshape)) == pytest.approx(
            os_fal(l, kshape), abs=ROUNDOFF), f"f_L({l})"
        assert float(th.passive_force_length(l, e0_m, kpe)) == pytest.approx(
            os_fpe(l, e0_m, kpe), abs=ROUNDOFF), f"f_PE({l})"
    assert float(th.passive_force_length(1.0 + e0_m, e0_m, kpe)) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("e0", [0.04, 0.033])
def test_tendon_curve_matches_opensim_formulas(e0):
    e_toe, klin = os_tendon_constants(e0)
    # below slack, toe, toe end, linear region, the strain at one normalized force
    for lt in (0.9, 1.0, 1.0 + 0.3 * e_toe, 1.0 + e_toe, 1.0 + 0.5 * (e_toe + e0), 1.0 + e0,
               1.0 + 2.0 * e0):
        assert float(th.tendon_force_length(lt, e0)) == pytest.approx(
            os_fse(lt, e0), abs=ROUNDOFF), f"f_T({lt})"
    assert float(th.tendon_force_length(1.0 + e0, e0)) == pytest.approx(1.0, abs=1e-14)
    assert float(th.tendon_toe_strain(e0)) == pytest.approx(e_toe, rel=1e-14)
    assert float(th.tendon_linear_stiffness(e0)) == pytest.approx(klin, rel=1e-13)
    # the paper's rounded constants (Thelen 2003): e_toe = 0.609 e0, k_lin = 1.712/e0
    assert e_toe / e0 == pytest.approx(0.609, abs=5e-4)
    assert klin * e0 == pytest.approx(1.712, abs=5e-4)


@pytest.mark.parametrize("a, af, flen", [(0.5, 0.3, 1.8), (1.0, 0.25, 1.4), (0.01, 0.25, 1.4)])
def test_force_velocity_matches_opensim_dlce(a, af, flen):
    # calcdlceN in OpenSim's unnormalized form with f_L = 0.8 (it cancels): every branch,
    # including both linear extrapolations (F <= 0 and F >= 0.95 F_len).
    fal, thresh = 0.8, 0.95
    for f in (-0.4, 0.0, 0.3, 1.0, 1.1, 0.5 * (1.0 + thresh * flen), thresh * flen,
              thresh * flen + 0.2):
        v, _ = os_dlce(a, fal, a * fal * f, af, flen, thresh)
        got_v = float(th.force_velocity_inverse(f, af, flen, thresh, a))
        got_f = float(th.force_velocity(v, af, flen, thresh, a))
        assert got_v == pytest.approx(v, abs=ROUNDOFF), f"v~ of F = {f}"
        assert got_f == pytest.approx(f, abs=ROUNDOFF), f"F of v~ = {v}"
    assert float(th.force_velocity(0.0, af, flen, thresh, a)) == 1.0
    assert float(th.force_velocity_inverse(0.0, af, flen, thresh, a)) == pytest.approx(
        -(0.25 + 0.75 * a), abs=1e-15)


def test_derivatives_are_continuous_where_opensims_are():
    # Tendon toe/linear junction: OpenSim's constants make f_T C1 there; both one-sided
    # jax derivatives equal OpenSim's k_lin (calcDfseDtlN) to roundoff of the exponential.
    for e0 in (0.04, 0.033):
        e_toe, klin = os_tendon_constants(e0)
        d = jax.grad(th.tendon_force_length)
        for lt in (1.0 + e_toe * (1 - 1e-12), 1.0 + e_toe, 1.0 + e_toe * (1 + 1e-12)):
            assert float(d(lt, e0)) == pytest.approx(klin, rel=1e-9), f"f_T' at {lt}"
        assert os_dfse(1.0 + e_toe, e0) == pytest.approx(klin, rel=1e-12)
        assert float(d(1.0 + 0.5 * e_toe, e0)) == pytest.approx(os_dfse(1.0 + 0.5 * e_toe, e0),
                                                                 rel=1e-12)
    # f-v at both extrapolation junctions (F = 0 and F = 0.95 F_len): C1, dF/dv~ on both
    # sides equals 1/(a f_L dv~/dFm) of OpenSim's calcDdlceDaFalFv, taken on either side of
    # the junction. At v~ = 0 OpenSim's curve has a kink (the eccentric slope is twice the
    # concentric one, Thelen's Eq. 7), which we keep.
    a, af, flen, thresh = 0.5, 0.3, 1.8, 0.95
    c, fal = 0.25 + 0.75 * a, 0.7
    dfv = jax.grad(th.force_velocity)
    for f_join in (0.0, thresh * flen):
        fm = a * fal * f_join
        v_join, _ = os_dlce(a, fal, fm, af, flen, thresh)
        for side in (-1.0, 1.0):
            _, dv_dfm = os_dlce(a, fal, fm + side * 1e-13, af, flen, thresh)
            hand = 1.0 / (a * fal * dv_dfm)
            for v in (v_join + side * 1e-12, v_join):
                assert float(dfv(v, af, flen, thresh, a)) == pytest.approx(hand, rel=1e-9), v
    left, right = (float(dfv(s * 1e-14, af, flen, thresh, a)) for s in (-1.0, 1.0))
    assert left == pytest.approx((af + 1.0) / (af * c), rel=1e-9)
    assert right == pytest.approx(2.0 * (af + 1.0) / (af * c), rel=1e-9)


# ----------------------------------------------------------------------------------------
# Inverses and integrals
# ----------------------------------------------------------------------------------------

def test_inverses_round_trip():
    # Closed-form inverses of closed forms: roundoff only, over all branches.
    for a in (0.01, 0.5, 1.0):
        v = jnp.linspace(-2.0, 2.0, 161) * (0.25 + 0.75 * a)
        back = th.force_velocity_inverse(th.force_velocity(v, activation=a), activation=a)
        assert np.abs(np.asarray(back - v)).max() <= 1e-13, f"f_V^-1(f_V(v)) at a = {a}"
        f = jnp.linspace(-0.5, 1.8, 161)
        back = th.force_velocity(th.force_velocity_inverse(f, activation=a), activation=a)
        assert np.abs(np.asarray(back - f)).max() <= 1e-13, f"f_V(f_V^-1(f)) at a = {a}"
    for e0 in (0.04, 0.033):
        f = jnp.linspace(0.0, 2.5, 101)
        back = th.tendon_force_length(th.tendon_force_length_inverse(f, e0), e0)
        assert np.abs(np.asarray(back - f)).max() <= 1e-13, "f_T(f_T^-1(f))"
        lt = jnp.linspace(1.0, 1.0 + 3 * e0, 101)
        back = th.tendon_force_length_inverse(th.tendon_force_length(lt, e0), e0)
        assert np.abs(np.asarray(back - lt)).max() <= 1e-13, "f_T^-1(f_T(l))"
    assert float(th.tendon_force_length_inverse(0.0)) == 1.0
    assert math.isnan(float(th.tendon_force_length_inverse(-0.01)))


@pytest.mark.parametrize("e0, e0_m, kpe", [(0.04, 0.6, 5.0), (0.033, 0.6, 4.0)])
def test_integrals_are_the_antiderivatives(e0, e0_m, kpe):
    # jax.grad of the integral is the curve (exact antiderivative, roundoff); the integral is
    # zero at the zero-force length; it matches quad (error < 1e-12) and OpenSim's energy
    # formulas calcfsefisoPE / calcfpefisoPE (roundoff).
    d_tendon = jax.grad(th.tendon_force_length_integral)
    d_passive = jax.grad(th.passive_force_length_integral)
    e_toe, _ = os_tendon_constants(e0)
    for lt in (0.95, 1.0 + 0.2 * e_toe, 1.0 + e_toe, 1.0 + e0, 1.0 + 2.5 * e0):
        assert float(d_tendon(lt, e0)) == pytest.approx(float(th.tendon_force_length(lt, e0)),
                                                        abs=1e-12)
        ref = 0.0
        for lo, hi in ((1.0, min(lt, 1.0 + e_toe)), (1.0 + e_toe, lt)):
            if hi > lo:
                ref += quad(lambda s: os_fse(s, e0), lo, hi, epsabs=1e-15)[0]
        got = float(th.tendon_force_length_integral(lt, e0))
        assert got == pytest.approx(ref, abs=1e-12), f"int f_T to {lt}"
        # OpenSim's energy formula subtracts terms of size k_lin/2 ~ 25: rounding ~25 eps
        assert got == pytest.approx(os_tendon_pe(lt - 1.0, e0), abs=1e-13)
    for l in (0.7, 1.0, 1.2, 1.0 + e0_m, 1.8):
        assert float(d_passive(l, e0_m, kpe)) == pytest.approx(
            float(th.passive_force_length(l, e0_m, kpe)), abs=1e-12)
        ref, _ = quad(lambda s: os_fpe(s, e0_m, kpe), 1.0, max(l, 1.0), epsabs=1e-15)
        assert float(th.passive_force_length_integral(l, e0_m, kpe)) == pytest.approx(
            ref, abs=1e-12), f"int f_PE to {l}"
    assert float(th.tendon_force_length_integral(th.tendon_zero_force_length(e0), e0)) == 0.0
    assert float(th.passive_force_length_integral(1.0, e0_m, kpe)) == 0.0


def test_power_balance_across_the_tendon_toe_junction():
    # tests/muscle/test_muscle_power.py's oracle (E(t) - E(0) = int F_T v_MT - F_active v_M dt,
    # LSODA rtol 1e-10: ~1e-9 of the energy swing, tolerance 1e-7 relative), driven so that the
    # tendon force crosses F_toe = 0.33 both ways (the shared test stays in the linear region).
    m = build_muscles(["m"], curves="thelen2003", tendon="explicit_force",
                      max_isometric_force_N=1000.0, optimal_fiber_length_m=0.1,
                      tendon_slack_length_m=0.2, pennation_at_optimal_rad=0.3)
    u, amp, l0 = 0.4, 0.01, 0.1 * math.cos(0.3) + 1.01 * 0.2

    def mt(t):
        return l0 + amp * jnp.sin(2 * math.pi * t), amp * 2 * math.pi * jnp.cos(2 * math.pi * t)

    @jax.jit
    def rhs_and_energy(t, y):
        out, dadt, dsdt = dynamics(m, u, y[0], *mt(t), y[1:2])
        dwdt = out.fiber_active_power_W + out.fiber_damping_power_W - out.musculotendon_power_W
        energy = out.fiber_potential_energy_J + out.tendon_potential_energy_J
        return jnp.concatenate([dadt, dsdt, dwdt]), energy[0]

    eq = equilibrium(m, u, *mt(0.0))
    sol = solve_ivp(lambda t, y: np.asarray(rhs_and_energy(t, jnp.asarray(y))[0]), (0.0, 1.0),
                    [u, float(eq.tendon_state[0]), 0.0], method="LSODA", rtol=1e-10,
                    atol=1e-12, t_eval=np.linspace(0.0, 1.0, 51))
    assert sol.success, sol.message
    assert sol.y[1].min() < th.F_TOE < sol.y[1].max(), "the toe/linear junction is not crossed"
    energy = np.array([float(rhs_and_energy(t, jnp.asarray(y))[1])
                       for t, y in zip(sol.t, sol.y.T)])
    swing = np.abs(energy - energy[0]).max()
    err = np.abs(energy - energy[0] - sol.y[2]).max()
    assert swing > 0.1 and err <= 1e-7 * swing, f"E(t) - E(0) vs work: {err:.2e} J of {swing}"


# ----------------------------------------------------------------------------------------
# arm26 equilibrium vs OpenSim 4.6
# ----------------------------------------------------------------------------------------

def _arm26_muscles(curves, tendon):
    keys = ARM26_KEYWORDS if curves == "thelen2003" else GENERIC
    cols = {ARM26_KEYWORDS[k]: [arm26.MUSCLES[n][k] for n in arm26.MUSCLE_NAMES]
            for k in keys if k in arm26.MUSCLES[arm26.MUSCLE_NAMES[0]]}
    return build_muscles(arm26.MUSCLE_NAMES, curves=curves, tendon=tendon, **cols)


def _ours(muscle, l_mt, a):
    """Our equilibrium at zero speed, the 8 reference quantities, and their first-order
    sensitivity |dq/dx| / |dR/dx| to the fiber length along the tendon x."""
    w = pennation.fiber_width(muscle.optimal_fiber_length_m, muscle.pennation_at_optimal_rad)
    l_ts, f_iso = muscle.tendon_slack_length_m, muscle.max_isometric_force_N

    def quantities(x):
        geo = pennation.from_fiber_length_along_tendon(x, w)
        lt_norm = (l_mt - x) / l_ts
        f_t = jax.vmap(lambda c, s: c.tendon_force_length(s))(muscle.curves, lt_norm)
        f_pe = jax.vmap(lambda c, s: c.passive_force_length(s))(
            muscle.curves, geo.fiber_length_m / muscle.optimal_fiber_length_m)
        return jnp.stack([geo.fiber_length_m, geo.fiber_length_m / muscle.optimal_fiber_length_m,
                          geo.pennation_rad, l_mt - x, lt_norm - 1.0, f_iso * f_t,
                          f_iso * (f_t / geo.cos_pennation - f_pe), f_iso * f_pe])

    def residual(x):
        geo = pennation.from_fiber_length_along_tendon(x, w)
        l_norm = geo.fiber_length_m / muscle.optimal_fiber_length_m
        curves = muscle.curves
        f_m = jax.vmap(lambda c, s: a * c.active_force_length(s) * c.force_velocity(0.0, a)
                       + c.passive_force_length(s))(curves, l_norm)
        f_t = jax.vmap(lambda c, s: c.tendon_force_length(s))(curves, (l_mt - x) / l_ts)
        return f_m * geo.cos_pennation - f_t

    eq = equilibrium(muscle, a, l_mt, 0.0)
    x = jnp.sqrt(eq.fiber_length_m ** 2 - w ** 2)
    out = muscle_outputs(muscle, a, l_mt, 0.0, eq.tendon_state)
    values = jnp.stack([out.fiber_length_m, out.norm_fiber_length, out.pennation_rad,
                        out.tendon_length_m, out.norm_tendon_length - 1.0, out.tendon_force_N,
                        out.active_fiber_force_N, out.passive_fiber_force_N])
    dq = jnp.diagonal(jax.jacfwd(quantities)(x), axis1=1, axis2=2)
    dr = jnp.diagonal(jax.jacfwd(residual)(x))
    return values, jnp.abs(dq) / jnp.abs(dr), eq.converged


@pytest.fixture(scope="module")
def reference():
    if not REFERENCE.exists():
        pytest.skip(f"OpenSim reference {REFERENCE} is absent")
    ref = json.loads(REFERENCE.read_text())
    names = arm26.MUSCLE_NAMES
    l_mt = np.array([[s["outputs"][n]["mtu_length"] for n in names] for s in ref["samples"]])
    eq = {q: np.array([[s["outputs"][n]["equilibrium_a0.5"][q] for n in names]
                       for s in ref["samples"]]) for q in QUANTITIES}
    acts = {s["outputs"][n]["equilibrium_a0.5"]["activation"] for s in ref["samples"]
            for n in names}
    assert acts == {0.5}
    return l_mt, eq


def _compare(muscle, reference):
    """Per quantity: max over the 66 pairs of |ours - OpenSim| / tolerance, and the worst
    absolute error; tolerance = R_TOL |dq/dx|/|dR/dx| plus 1e-14 |q| of roundoff."""
    l_mt, ref = reference
    values, sens, conv = jax.jit(jax.vmap(lambda l: _ours(muscle, l, 0.5)))(jnp.asarray(l_mt))
    assert bool(jnp.all(conv)), "our equilibrium did not converge"
    ratios, errors = {}, {}
    for i, q in enumerate(QUANTITIES):
        err = np.abs(np.asarray(values[:, i]) - ref[q])
        tol = R_TOL * np.asarray(sens[:, i]) + 1e-14 * np.abs(ref[q]) + 1e-300
        ratios[q], errors[q] = float((err / tol).max()), float(err.max())
    return ratios, errors


def test_arm26_equilibrium_matches_opensim(reference):
    muscle = _arm26_muscles("thelen2003", "explicit_force")
    ratios, errors = _compare(muscle, reference)
    for q in QUANTITIES:
        assert ratios[q] <= 1.0, (f"{q}: |ours - OpenSim| = {errors[q]:.3e} exceeds the "
                                  f"tolerance implied by OpenSim's 1e-8 F_iso equilibrium "
                                  f"criterion ({ratios[q]:.2f} x)")
    # OpenSim's own equilibrium state satisfies our equilibrium equation to OpenSim's
    # tolerance: this checks the curves at OpenSim's state, independent of our solver.
    l_mt, ref = reference
    w = np.asarray(muscle.optimal_fiber_length_m * jnp.sin(muscle.pennation_at_optimal_rad))
    x_os = np.sqrt(ref["fiber_length"] ** 2 - w ** 2)
    geo = pennation.from_fiber_length_along_tendon(jnp.asarray(x_os), jnp.asarray(w))
    l_norm = geo.fiber_length_m / muscle.optimal_fiber_length_m
    curves = muscle.curves
    fal = jax.vmap(jax.vmap(lambda c, s: c.active_force_length(s)), in_axes=(None, 0))(
        curves, l_norm)
    fpe = jax.vmap(jax.vmap(lambda c, s: c.passive_force_length(s)), in_axes=(None, 0))(
        curves, l_norm)
    fse = jax.vmap(jax.vmap(lambda c, s: c.tendon_force_length(s)), in_axes=(None, 0))(
        curves, (l_mt - x_os) / np.asarray(muscle.tendon_slack_length_m))
    residual = np.asarray((0.5 * fal + fpe) * geo.cos_pennation - fse)
    worst = np.abs(residual).max()
    assert worst < R_TOL, f"OpenSim's equilibrium state: our residual {worst:.2e}"


def test_moving_fiber_speed_is_opensims_velocity_law():
    """A moving fiber (explicit tendon-force state, arm26's six muscles, activations 0.005-1,
    tendon forces from slack to 1.3 F_iso, lengthening and shortening): our fiber velocity is
    OpenSim's calcdlceN of the active fiber force F_m = f_T / cos(phi) - f_PE at the clamped
    activation (`os_dlce` above, OpenSim's unnormalized form), which carries the activation in
    its velocity scale 0.25 + 0.75 a. Tolerance 1e-12 relative to max(1, |v~|) (roundoff; the
    extrapolated branches reach |v~| ~ 1e2 at the lowest activation); passing no
    activation to the curve, i.e. a = 1, is off by up to 1/(0.25 + 0.75 a) - 1 ~ 2.9x here)."""
    muscle = _arm26_muscles("thelen2003", "explicit_force")
    n = muscle.n_muscles
    params = [arm26.MUSCLES[name] for name in muscle.names]
    l_mt = np.array([p["optimal_fiber_length_m"] + 1.02 * p["tendon_slack_length_m"]
                     for p in params])
    np.testing.assert_array_equal(np.asarray(muscle.activation.min_activation), 0.01)
    worst = 0.0
    for a in (0.005, 0.3, 0.5, 1.0):
        for f_t in (0.05, 0.2, 0.5, 0.9, 1.3):
            out = muscle_outputs(muscle, jnp.full(n, a), jnp.asarray(l_mt), jnp.zeros(n),
                                 jnp.full(n, f_t))
            a_c = max(a, 0.01)   # clamped at OpenSim's minimum_activation (arm26 sets none)
            for k, p in enumerate(params):
                fal = float(out.active_force_length_multiplier[k])
                fm = f_t / float(out.cos_pennation[k]) - float(out.passive_force_multiplier[k])
                expected, _ = os_dlce(a_c, fal, fm, p["af"], p["flen"], 0.95)
                err = abs(float(out.norm_fiber_velocity[k]) - expected)
                worst = max(worst, err / max(1.0, abs(expected)))
    assert worst <= 1e-12, f"fiber velocity differs from calcdlceN by {worst:.2e} (relative)"


@pytest.mark.parametrize("curves, tendon", [("degroote2016", "explicit_force"),
                                            ("millard2012", "damped_fiber_length")])
def test_other_curve_families_fail_the_arm26_comparison(reference, curves, tendon):
    # Same F_iso, l_opt, l_ts, pennation and strains (0.033 tendon, 0.6 passive), other curves:
    # the comparison must fail by orders of magnitude (observed fiber lengths off by ~4 mm).
    ratios, errors = _compare(_arm26_muscles(curves, tendon), reference)
    assert ratios["fiber_length"] > 1e4 and ratios["tendon_force"] > 1e4, (ratios, errors)
    assert errors["fiber_length"] > 1e-3, errors


# ----------------------------------------------------------------------------------------
# Activation, defaults, validation
# ----------------------------------------------------------------------------------------

def _t_deactivation(a, a0, u, tau):
    return tau / (0.5 + 1.5 * u) * (np.log((a0 - u) / (a - u))
                                    + np.log((0.5 + 1.5 * a) / (0.5 + 1.5 * a0)))


def test_thelen_activation_is_opensims_without_excitation_clamp():
    # OpenSim 4.6 (MuscleFirstOrderActivationDynamicModel::calcDerivative) clamps a only:
    # with u = 0 < a_min the deactivation follows the closed form with u = 0 (not a_min) while
    # a > a_min. DOP853 at rtol 1e-12 -> closed-form time error <= 1e-10 s (as for Millard).
    m = build_muscles(["m"], curves="thelen2003", tendon="rigid", max_isometric_force_N=1.0,
                      optimal_fiber_length_m=0.1, tendon_slack_length_m=0.2)
    act = m.activation
    assert act.law is ActivationLaw.THELEN2003
    got = [float(v[0]) for v in (act.tau_act_s, act.tau_deact_s, act.min_activation)]
    assert got == [0.015, 0.050, 0.01]
    f = jax.jit(lambda y: activation_derivative(act, y, jnp.zeros(1)))
    sol = solve_ivp(lambda t, y: np.asarray(f(jnp.asarray(y))), (0.0, 0.1), [0.8],
                    method="DOP853", rtol=1e-12, atol=1e-14, t_eval=np.linspace(0, 0.1, 21))
    assert sol.success and sol.y[0].min() > 0.05
    err = np.abs(_t_deactivation(sol.y[0], 0.8, 0.0, 0.050) - sol.t)
    assert err.max() <= 1e-10, f"closed-form time off by {err.max():.2e} s"
    # the activation is clamped to [a_min, 1] in the law and for force, as in OpenSim
    rates = np.asarray(activation_derivative(act, jnp.array([[0.0, 1.5]]),
                                             jnp.array([[0.01, 1.0]])))
    assert np.all(rates == 0.0), rates
    np.testing.assert_array_equal(np.asarray(force_activation(act, jnp.array([[0.0, 1.5]]))),
                                  [[0.01, 1.0]])


def test_thelen_defaults_are_opensims():
    m = build_muscles(["m"], curves="thelen2003", tendon="explicit_force",
                      max_isometric_force_N=1.0, optimal_fiber_length_m=0.1,
                      tendon_slack_length_m=0.2)
    c = m.curves
    got = [float(v[0]) for v in (
        c.tendon_strain_at_one_norm_force, c.passive_strain_at_one_norm_force,
        c.active_force_length_shape, c.passive_force_length_shape, c.force_velocity_shape,
        c.max_lengthening_force_multiplier, c.force_velocity_extrapolation_threshold,
        m.fiber_damping, m.max_contraction_velocity_Lopt_per_s)]
    assert got == [0.04, 0.6, 0.45, 5.0, 0.25, 1.4, 0.95, 0.0, 10.0]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"active_force_length_shape": [0.45, 0.0]},
     r"muscle 'm1': active_force_length_shape \[KshapeActive\] must be > 0, got 0.0"),
    ({"passive_force_length_shape": -1.0}, r"passive_force_length_shape \[KshapePassive\]"),
    ({"force_velocity_shape": 0.0}, r"muscle 'm0': force_velocity_shape \[Af\] must be > 0"),
    ({"max_lengthening_force_multiplier": 1.0},
     r"max_lengthening_force_multiplier \[Flen\] must be > 1, got 1.0"),
    ({"force_velocity_extrapolation_threshold": 0.5}, r"must be in \(1/Flen, 1\)"),
    ({"force_velocity_extrapolation_threshold": 1.0}, "got 1.0"),
    ({"min_activation": 0.001}, "min_activation must be >= 0.01 for the Thelen 2003"),
    ({"tendon_strain_at_one_norm_force": 0.0}, "muscle 'm0': tendon_strain_at_one_norm_force"),
    ({"fiber_damping": 0.1}, "fiber_damping must be 0 for the explicit"),
    ({"active_force_width_scale": 2.0}, "De Groote 2016 curves only"),
    ({"curves": "degroote2016", "force_velocity_shape": 0.3}, "Thelen 2003 curves only"),
])
def test_bad_thelen_parameters_are_rejected(kwargs, fragment):
    args = dict(curves="thelen2003", tendon="explicit_force", max_isometric_force_N=1000.0,
                optimal_fiber_length_m=0.1, tendon_slack_length_m=0.2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=fragment):
        build_muscles(["m0", "m1"], **args)
