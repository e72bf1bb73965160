"""Activation dynamics: exact steps vs scipy's ODE solver, convergence order, and the twitch /
tetanus of the emulated muscle against closed forms and literature ranges."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.emulator import (
    Activation,
    ActivationParams,
    EmulatedDevice,
    zajac_rate,
    zajac_step,
)
from myotwin.invitro.wire import COMMAND_STIM_GATE, code_to_volts

AP = ActivationParams()
REST_CODE = 2000
# Preparation held at exactly L0: the start length is L0 and code 2000 commands zero change.
CAL_L0 = Calibration(lrest_m=0.02408, length_offset_V=code_to_volts(REST_CODE))


@pytest.mark.parametrize("u,a0", [(1.0, 0.0), (0.3, 0.9), (0.0, 1.0), (0.6, 0.2)])
def test_zajac_step_is_the_exact_solution(u, a0):
    # Reference: scipy's RK45 at tight tolerance on the same ODE (Zajac 1989, eq. 2).
    t_end = 0.05
    ref = solve_ivp(lambda t, y: [zajac_rate(y[0], u, AP.tau_act_s, AP.tau_deact_s)], (0, t_end), [a0],
                    rtol=1e-12, atol=1e-14).y[0, -1]
    assert zajac_step(a0, u, t_end, AP.tau_act_s, AP.tau_deact_s) == pytest.approx(ref, abs=1e-10)


def _twitch_reference(times):
    """Active state u(t) = 1 for t < plateau, then exp(-(t - plateau)/decay); Zajac activation."""
    d, tc = AP.release_plateau_s, AP.release_decay_s
    f1 = lambda t, y: [zajac_rate(y[0], 1.0, AP.tau_act_s, AP.tau_deact_s)]
    f2 = lambda t, y: [zajac_rate(y[0], math.exp(-(t - d) / tc), AP.tau_act_s, AP.tau_deact_s)]
    a_d = solve_ivp(f1, (0, d), [0.0], rtol=1e-12, atol=1e-14).y[0, -1]
    return solve_ivp(f2, (d, times[-1]), [a_d], t_eval=times, rtol=1e-12, atol=1e-14).y[0]


def _twitch_discrete(h, times):
    act = Activation.build(AP, h)
    a, c = 0.0, act.c_peak
    out, n = [], 0
    for t in times:
        while n * h < t - 1e-12:
            a, c = act.step(a, c)
            n += 1
        out.append(a)
    return np.array(out)


def test_twitch_activation_converges_first_order_to_ode_solution():
    # The device holds the active state over each 0.1 ms sub-step (sampled at its start), so
    # the discrete twitch differs from the continuous two-stage ODE by O(h). Check the error at
    # 10 kHz is small (< 2e-3 of full activation) and halves with h (order 1 +- 0.15).
    times = np.array([0.006, 0.010, 0.020, 0.050, 0.100])  # after the plateau
    ref = _twitch_reference(times)
    errs = [np.max(np.abs(_twitch_discrete(h, times) - ref)) for h in (1e-4, 5e-5, 2.5e-5)]
    assert errs[0] < 2e-3, f"twitch activation error at 10 kHz: {errs[0]}"
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(orders - 1) < 0.15), f"observed orders {orders}"


def _isometric_run(n_ticks, gate_ticks, stimulation=None, seed=0):
    """Host holding the lever at L0, with the stimulator gate on for ticks in gate_ticks."""
    dev = EmulatedDevice("framed", calibration=CAL_L0, stimulation=stimulation, seed=seed)
    proto, dec = dev.protocol, dev.protocol.sample_decoder()
    codes = []
    for k in range(n_ticks):
        s = dec.feed(dev.tick())[0]
        codes.append(s.code)
        gate = COMMAND_STIM_GATE if (k + 1) in gate_ticks else 0  # command applied at tick k+1
        dev.receive(proto.encode_command(s.seq, REST_CODE, gate))
    return dev, np.array(codes)


def test_tetanus_at_L0_follows_closed_form_and_reaches_F0():
    # 250 Hz keeps the active state saturated (plateau = pulse period), so from the first pulse
    # at t_on activation is exactly 1 - exp(-(t - t_on)/tau_act) and, isometric at L0,
    # F = F0 a (f_L = f_V = 1, no passive force). Rounding only: 1e-9 relative.
    on, off = 10, 170
    dev, codes = _isometric_run(250, range(on, off))
    log = dev.log
    F0 = dev.params.muscle.F0_N
    t_on = on * dev.period_s
    ks = np.arange(on, off + 1)
    ref = F0 * (1 - np.exp(-(log.t_s[ks] - t_on) / AP.tau_act_s))
    np.testing.assert_allclose(log.force_true_N[ks], ref, rtol=1e-9, atol=1e-12,
                               err_msg="isometric tetanus force vs F0 (1 - exp(-t/tau_act))")
    # >= 95 % of F0 within 100 ms of train onset (brief) -- here already at 30 ms
    k95 = on + np.argmax(log.force_true_N[on:] >= 0.95 * F0)
    assert (k95 - on) * dev.period_s <= 0.031
    # what the host sees after 150 ms: ADC force within 2 % of F0 (filter DC gain 1, noise
    # 2 mV = 4 mN rms, quantum 1.65 mN; 2 % = 30 mN)
    cal = dev.calibration
    F_meas = [cal.force_volts_to_newtons(code_to_volts(int(c))) for c in codes[on + 150: off]]
    assert np.allclose(F_meas, F0, rtol=0.02), f"measured tetanic force {np.mean(F_meas)} vs F0 {F0}"


def test_twitch_time_to_peak_and_twitch_tetanus_ratio():
    # One pulse (gate on for one tick). Literature (R, notes §5): frog twitch time-to-peak
    # 20-40 ms at 20-25 °C; twitch/tetanus ratio documented as plausible in 0.3-0.8.
    on = 10
    dev, _ = _isometric_run(300, range(on, on + 1))
    f = dev.log.force_true_N
    k_peak = int(np.argmax(f))
    tp = (k_peak - on) * dev.period_s
    ratio = f[k_peak] / dev.params.muscle.F0_N
    assert dev.pulses_fired == [on * dev.n_substeps], "exactly one pulse at the gate's rising edge"
    assert 0.020 <= tp <= 0.040, f"twitch time-to-peak {tp * 1e3:.1f} ms"
    assert 0.3 <= ratio <= 0.8, f"twitch/tetanus ratio {ratio:.3f}"
    assert f[-1] < 0.01 * dev.params.muscle.F0_N, "relaxed 290 ms after the pulse"


def test_force_frequency_fusion():
    # 250 Hz: fused, the force rises monotonically (no dip between pulses). 50 Hz: the active
    # state decays between pulses (period 20 ms > 4 ms plateau): the force dips by > 5 % of F0
    # within each period and its mean is lower.
    from myotwin.invitro.stimulation import StimulationSchedule
    dev, _ = _isometric_run(200, range(10, 200))
    f = dev.log.force_true_N[11:200]
    assert np.all(np.diff(f) >= 0), "250 Hz tetanus is not fused"
    dev50, _ = _isometric_run(200, range(10, 200), stimulation=StimulationSchedule(frequency_hz=50.0))
    f50 = dev50.log.force_true_N[120:200]
    F0 = dev.params.muscle.F0_N
    assert np.ptp(f50) > 0.05 * F0 and np.any(np.diff(f50) < 0), "50 Hz should be unfused"
    assert f50.mean() < f[109:].mean()
