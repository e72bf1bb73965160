"""Ergometer lever: exact ZOH servo against scipy and closed forms; speed limit; stops."""

import math

import numpy as np
import pytest
from scipy import linalg, signal

from myotwin.invitro.emulator.lever import Lever, expm2, servo_zoh
from myotwin.invitro.emulator.params import LeverParams

H = 1e-4  # FPGA sub-step (10 kHz)
L_START = 0.02566


@pytest.mark.parametrize("m", [((0.0, 1.0), (-4.0, -1.0)),     # complex eigenvalues
                               ((0.0, 0.25), (-0.25, -0.5)),   # double eigenvalue -0.25
                               ((0.3, -1.2), (0.7, 0.1)),
                               ((-2.0, 0.5), (0.5, -3.0))])    # real, distinct
def test_expm2_matches_scipy_expm(m):
    # Closed-form 2x2 exponential vs scipy.linalg.expm (Pade); both are accurate to rounding.
    np.testing.assert_allclose(expm2(m), linalg.expm(np.array(m)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn,zeta", [(400.0, 1.0), (300.0, 0.7), (500.0, 1.5)])
def test_servo_zoh_matches_cont2discrete(fn, zeta):
    # Exact zero-order-hold discretisation of x'' = wn^2 (r - x) - 2 zeta wn x'.
    wn = 2 * math.pi * fn
    A = np.array([[0.0, 1.0], [-wn * wn, -2 * zeta * wn]])
    B = np.array([[0.0], [wn * wn]])
    Ad, Bd, *_ = signal.cont2discrete((A, B, np.eye(2), np.zeros((2, 1))), H, method="zoh")
    phi, gamma = servo_zoh(fn, zeta, H)
    np.testing.assert_allclose(phi, Ad, rtol=1e-11, atol=1e-12, err_msg="Phi")
    np.testing.assert_allclose(gamma, Bd[:, 0], rtol=1e-11, atol=1e-12, err_msg="Gamma")


def test_small_step_matches_critically_damped_closed_form():
    # A 50 um step never reaches the speed limit (peak speed = wn * step / e = 0.046 m/s), so
    # the lever is the linear servo; with zeta = 1 its step response is
    # x(t) = 1 - (1 + wn t) exp(-wn t), and the ZOH step is exact for a step input.
    p = LeverParams()
    lev = Lever.build(p, L_START, H)
    step = 50e-6
    wn = 2 * math.pi * p.servo_natural_hz
    x, v = L_START, 0.0
    for n in range(1, 201):
        x, v = lev.step(x, v, L_START + step)
        t = n * H
        ref = L_START + step * (1 - (1 + wn * t) * math.exp(-wn * t))
        vref = step * wn * wn * t * math.exp(-wn * t)
        assert x == pytest.approx(ref, abs=1e-15), f"position at t = {t}"
        assert v == pytest.approx(vref, rel=1e-9, abs=1e-12), f"velocity at t = {t}"


def test_speed_limit_and_settling_under_large_step():
    # A 5 mm step would reach ~wn*5mm/e = 4.6 m/s unlimited; the seed's motor limit is 0.4 m/s.
    p = LeverParams()
    lev = Lever.build(p, L_START, H)
    target = L_START - 0.005
    x, v = L_START, 0.0
    xs, vs = [x], [v]
    for _ in range(1000):  # 100 ms
        x, v = lev.step(x, v, target)
        xs.append(x)
        vs.append(v)
    xs, vs = np.array(xs), np.array(vs)
    fd_speed = np.abs(np.diff(xs)) / H
    # equality is allowed: the limiter sets |v| = v_max exactly; 1e-12 covers the subtraction
    assert np.max(np.abs(vs)) <= p.max_speed_m_per_s * (1 + 1e-12), "state velocity above the limit"
    assert np.max(fd_speed) <= p.max_speed_m_per_s * (1 + 1e-9), "finite-difference speed above the limit"
    assert np.max(fd_speed) > 0.99 * p.max_speed_m_per_s, "the limit was never reached (weak test)"
    # time at the limit ~ 5 mm / 0.4 m/s = 12.5 ms; by 100 ms it has settled to < 1 nm
    assert abs(xs[-1] - target) < 1e-9, f"lever did not settle: error {xs[-1] - target} m"


def test_mechanical_stops_clamp():
    p = LeverParams(travel_min_m=-0.002, travel_max_m=0.002)
    lev = Lever.build(p, L_START, H)
    x, v = L_START, 0.0
    for _ in range(1000):
        x, v = lev.step(x, v, L_START + 0.01)
        assert x <= L_START + 0.002 + 1e-15
    assert x == pytest.approx(L_START + 0.002, abs=1e-15) and v == 0.0
