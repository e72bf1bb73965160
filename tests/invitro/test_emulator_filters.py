"""FPGA Butterworth filters of the emulator against scipy.signal (the reference design)."""

import math

import numpy as np
import pytest
from scipy import signal

from myotwin.invitro.emulator.filters import butterworth2_lowpass

FS = 10_000.0  # FPGA loop rate (seed)


@pytest.mark.parametrize("fc", [60.0, 100.0, 1000.0])
def test_coefficients_match_scipy_butter(fc):
    # scipy.signal.butter(2, fc, fs) designs by the bilinear transform with prewarping, the
    # same discretisation; differences are float rounding only (coefficients are O(1)).
    b_ref, a_ref = signal.butter(2, fc, btype="low", fs=FS)
    f = butterworth2_lowpass(fc, FS)
    np.testing.assert_allclose([f.b0, f.b1, f.b2], b_ref, rtol=1e-12, atol=1e-15,
                               err_msg=f"numerator of the {fc} Hz Butterworth")
    np.testing.assert_allclose([1.0, f.a1, f.a2], a_ref, rtol=0, atol=1e-12,
                               err_msg=f"denominator of the {fc} Hz Butterworth")


@pytest.mark.parametrize("fc", [60.0, 100.0])
def test_output_matches_lfilter_and_sosfilt(fc):
    # Same realisation as lfilter (transposed DF-II): outputs agree to rounding (1e-12 on
    # signals of unit size); sosfilt is a different realisation, so agreement is to ~1e-12 too.
    rng = np.random.default_rng(1)
    x = rng.standard_normal(5000)
    f = butterworth2_lowpass(fc, FS)
    y = np.asarray(f.filter(x))
    b, a = signal.butter(2, fc, fs=FS)
    np.testing.assert_allclose(y, signal.lfilter(b, a, x), rtol=0, atol=1e-12,
                               err_msg="biquad output vs scipy.signal.lfilter")
    sos = signal.butter(2, fc, fs=FS, output="sos")
    np.testing.assert_allclose(y, signal.sosfilt(sos, x), rtol=0, atol=1e-12,
                               err_msg="biquad output vs scipy.signal.sosfilt")
    # the pure step() gives the same sequence
    state, ys = (0.0, 0.0), []
    for xi in x[:200]:
        yi, state = f.step(state, xi)
        ys.append(yi)
    np.testing.assert_array_equal(ys, y[:200])


@pytest.mark.parametrize("fc", [60.0, 100.0])
def test_minus_3dB_at_cutoff(fc):
    # Prewarping puts the -3 dB point (|H| = 1/sqrt 2) exactly at the cutoff; compare also with
    # scipy.signal.freqz at a few frequencies (rounding only).
    f = butterworth2_lowpass(fc, FS)
    assert f.gain(fc, FS) == pytest.approx(1 / math.sqrt(2), abs=1e-12), "gain at the cutoff"
    assert f.dc_gain == pytest.approx(1.0, abs=1e-12), "DC gain"
    b, a = signal.butter(2, fc, fs=FS)
    freqs = np.array([1.0, fc / 2, fc, 3 * fc, 2000.0])
    _, h = signal.freqz(b, a, worN=freqs, fs=FS)
    np.testing.assert_allclose([f.gain(q, FS) for q in freqs], np.abs(h), rtol=1e-10)


def test_steady_state_matches_lfilter_zi():
    # The start state for a constant input equals scipy.signal.lfilter_zi(b, a) * x0, and the
    # output then stays at x0 (the lever and the force start at rest, no start transient).
    f = butterworth2_lowpass(60.0, FS)
    b, a = signal.butter(2, 60.0, fs=FS)
    x0 = 0.02566
    np.testing.assert_allclose(f.steady_state(x0), signal.lfilter_zi(b, a) * x0, rtol=1e-12, atol=1e-18)
    # 1e-12: the DC gain (b0+b1+b2)/(1+a1+a2) divides by 1+a1+a2 ~ 1.4e-3, which cancellation
    # leaves with a relative rounding error ~1e-13.
    y = f.filter([x0] * 100, state=f.steady_state(x0))
    np.testing.assert_allclose(y, x0, rtol=1e-12)


def test_state_space_form_matches_dlsim():
    # (A, B, C, D) of the realisation reproduce the filter through scipy.signal.dlsim.
    f = butterworth2_lowpass(100.0, FS)
    A, B, C, D = f.state_space()
    rng = np.random.default_rng(2)
    x = rng.standard_normal(300)
    _, y_ref, _ = signal.dlsim((np.array(A), np.array(B).reshape(2, 1), np.array(C).reshape(1, 2),
                                np.array([[D]]), 1 / FS), x)
    np.testing.assert_allclose(f.filter(x), y_ref[:, 0], atol=1e-12)


def test_rejects_bad_cutoff():
    with pytest.raises(ValueError, match="cutoff"):
        butterworth2_lowpass(6000.0, FS)
