"""Hill-type muscle curves against Hill's equation, published curve shapes and scipy solvers."""

import math

import numpy as np
import pytest
from scipy import optimize

from myotwin.invitro.emulator.muscle import Muscle, active_force_length, force_velocity
from myotwin.invitro.emulator.params import MuscleParams

P = MuscleParams()
M = Muscle.build(P)
VMAX = P.vmax_m_per_s  # 8 L0/s = 0.19264 m/s


def fv(v_m_per_s):
    return M.force(P.L0_m, v_m_per_s, 1.0) / P.F0_N  # at L0, f_L = 1 and f_P = 0


def test_force_velocity_end_points():
    assert fv(0.0) == 1.0, "F(v=0) must be F0"
    assert fv(-VMAX) == 0.0, "F(v=-Vmax) must be 0"
    assert fv(-1.5 * VMAX) == 0.0, "beyond Vmax the muscle is slack, not pushing"


@pytest.mark.parametrize("frac", [0.1, 0.25, 0.5, 0.75, 0.9])
def test_shortening_branch_is_hills_hyperbola(frac):
    # Hill (1938): (F + a)(V + b) = (F0 + a) b with a = 0.25 F0 and b = a Vmax / F0, V the
    # shortening speed. Closed form F/F0 = (1 - V/Vmax) / (1 + V/(k Vmax)); at V = Vmax/2 this is
    # 0.5 / 3 = 1/6. Only rounding separates the two (1e-12).
    k = P.hill_a_rel
    f = fv(-frac * VMAX)
    assert f == pytest.approx((1 - frac) / (1 + frac / k), rel=1e-12), f"f_V at V = {frac} Vmax"
    F0, a = P.F0_N, k * P.F0_N
    b = a * VMAX / F0
    F, V = f * F0, frac * VMAX
    assert (F + a) * (V + b) == pytest.approx((F0 + a) * b, rel=1e-12), "Hill's equation"
    if frac == 0.5:
        assert f == pytest.approx(1 / 6, rel=1e-12)


def test_lengthening_branch_continuous_and_bounded():
    # Continuous at v = 0 (both sides -> 1), rising to the documented asymptote 1.5 F0, with a
    # slope at 0+ twice the shortening slope (Katz 1939 ratio, the documented choice).
    eps = 1e-9 * VMAX
    assert fv(eps) == pytest.approx(1.0, abs=1e-7) and fv(-eps) == pytest.approx(1.0, abs=1e-7)
    assert fv(1e6 * VMAX) == pytest.approx(P.ecc_force_max_rel, rel=1e-5)
    vs = np.linspace(0, 5 * VMAX, 200)
    f = np.array([fv(v) for v in vs])
    assert np.all(np.diff(f) > 0) and f.max() < P.ecc_force_max_rel
    d = 1e-7
    slope_ecc = (force_velocity(d, M.hill_k, M.ecc_max, M.ecc_c) - 1) / d
    slope_con = (1 - force_velocity(-d, M.hill_k, M.ecc_max, M.ecc_c)) / d
    # one-sided differences: error ~ curvature * d ~ 1e-5 relative
    assert slope_ecc / slope_con == pytest.approx(P.ecc_slope_ratio, rel=1e-4)


def test_passive_force_documented_values():
    # notes §5 (R): ~0.1 F0 at 1.2 L0, zero at and below the slack length 1.0 L0.
    F12 = M.force(1.2 * P.L0_m, 0.0, 0.0)
    assert F12 == pytest.approx(0.1 * P.F0_N, rel=1e-12), "passive force at 1.2 L0"
    assert M.force(1.0 * P.L0_m, 0.0, 0.0) == 0.0
    assert M.force(0.8 * P.L0_m, 0.0, 0.0) == 0.0
    # at the preparation's start length (25.66 mm = 1.066 L0) the documented rest force
    # 0.1 F0 (e^(10*0.0656) - 1)/(e^2 - 1) = 21.8 mN
    F_rest = M.force(0.02566, 0.0, 0.0)
    l = 0.02566 / P.L0_m
    assert F_rest == pytest.approx(0.1 * P.F0_N * math.expm1(10 * (l - 1)) / math.expm1(2), rel=1e-12)
    assert 0.020 < F_rest < 0.024


def test_active_force_length_against_gordon_huxley_julian():
    # GHJ 1966, frog sarcomeres (R): plateau 2.0-2.25 um, linear descending limb to zero at
    # 3.65 um; optimum taken as 2.2 um = L0. The Gaussian (width 0.45) stays within 0.1 of it on
    # 1.0-1.6 L0 (the largest gap, 0.0996, is at 1.19 L0: the Gaussian is rounder).
    for l in np.linspace(1.0, 1.6, 61):
        s = 2.2 * l
        ghj = 1.0 if s <= 2.25 else (3.65 - s) / (3.65 - 2.25)
        assert abs(active_force_length(l, P.fl_width_rel) - ghj) < 0.1, f"f_L at {l:.2f} L0"
    assert active_force_length(1.0, 0.45) == 1.0
    assert active_force_length(1.45, 0.45) == pytest.approx(math.exp(-1), rel=1e-12)
    assert active_force_length(0.55, 0.45) == pytest.approx(math.exp(-1), rel=1e-12)


def test_isometric_force_is_activation_times_F0_at_L0():
    for a in (0.0, 0.3, 1.0):
        assert M.force(P.L0_m, 0.0, a) == pytest.approx(a * P.F0_N, rel=1e-15)


# --- optional series elastic element --------------------------------------------------------
PS = MuscleParams(see_enabled=True)
MS = Muscle.build(PS)


def test_see_force_at_reference_strain():
    ls = PS.see_slack_length_m
    assert MS.see_force(ls * (1 + PS.see_strain_at_F0)) == pytest.approx(PS.F0_N, rel=1e-12)
    assert MS.see_force(0.99 * ls) == 0.0


@pytest.mark.parametrize("a", [0.0, 0.5, 1.0])
def test_see_static_equilibrium_matches_brentq(a):
    # Static fibre length in series with the SEE, vs scipy.optimize.brentq on the same
    # equilibrium written independently from the curve functions.
    L = 0.02566 + 0.002  # stretched so that passive force and SEE tension are both nonzero
    def resid(lf):
        l = lf / PS.L0_m
        fp = 0.0 if l <= 1 else PS.passive_ref_force_rel * math.expm1(10 * (l - 1)) / math.expm1(2)
        e = (L - lf) / PS.see_slack_length_m - 1
        ft = 0.0 if e <= 0 else (e / PS.see_strain_at_F0) ** 2
        return a * math.exp(-((l - 1) / 0.45) ** 2) + fp - ft
    ref = optimize.brentq(resid, 0.5 * PS.L0_m, L - PS.see_slack_length_m, xtol=1e-15)
    assert MS.see_static_fibre_length(L, a) == pytest.approx(ref, abs=1e-12)


def test_see_dynamic_step_converges_to_static_equilibrium():
    # Backward-Euler fibre dynamics with a held MTU length and full activation must settle at
    # the static equilibrium (the damping and force-velocity terms vanish at rest).
    L = 0.02566
    lf = MS.see_static_fibre_length(L, 0.0)
    for _ in range(5000):  # 0.5 s at 0.1 ms
        lf, F = MS.see_step(lf, L, 1.0, 1e-4)
    ref = MS.see_static_fibre_length(L, 1.0)
    assert lf == pytest.approx(ref, abs=1e-9), "fibre length"
    assert F == pytest.approx(MS.see_force(L - ref), rel=1e-6), "tension"
    assert F > 0.9 * PS.F0_N
