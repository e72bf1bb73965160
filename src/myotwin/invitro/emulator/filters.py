"""Second-order Butterworth low-pass of the FPGA, as a discrete biquad in state-space form.

The seed's cRIO FPGA runs at 10 kHz and low-passes the length command at 60 Hz and the force
signal at 100 Hz with 2nd-order Butterworth filters (Methods). We discretise the analogue
prototype H(s) = 1 / (s^2 + sqrt(2) s + 1), s scaled by the cutoff, with the bilinear transform
and frequency prewarping, so the digital filter is exactly -3 dB at the cutoff. This is the
design of `scipy.signal.butter(2, fc, fs=fs)` (tests compare the two to 1e-12); scipy is not
imported here.

Coefficients (K = tan(pi fc / fs), n = 1 + sqrt(2) K + K^2):
    b = K^2 (1, 2, 1) / n,  a = (1, 2 (K^2 - 1) / n, (1 - sqrt(2) K + K^2) / n)

Realisation: transposed direct form II, i.e. the state-space system
    s[n+1] = A s[n] + B x[n],  y[n] = C s[n] + D x[n]
    A = [[-a1, 1], [-a2, 0]],  B = [b1 - a1 b0, b2 - a2 b0],  C = [1, 0],  D = b0
which is also what `scipy.signal.lfilter` runs, so the two agree to rounding. The state is
two floats; `Biquad.step` is pure. The device inlines the same three lines for speed.

Deviation from the hardware: the FPGA computes in fixed point; we use float64 (the converter
quanta of 0.8 mV dominate any fixed-point rounding of a 16-bit-plus FPGA word).
"""

from __future__ import annotations

import cmath
import math
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Biquad:
    """A second-order IIR section with a0 = 1: y = (b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2) x."""

    b0: float
    b1: float
    b2: float
    a1: float
    a2: float

    def step(self, state: tuple[float, float], x: float) -> tuple[float, tuple[float, float]]:
        """One sample: returns (y, new_state). Transposed direct form II."""
        s1, s2 = state
        y = self.b0 * x + s1
        return y, (self.b1 * x - self.a1 * y + s2, self.b2 * x - self.a2 * y)

    def steady_state(self, x: float) -> tuple[float, float]:
        """State in which a constant input `x` gives the constant output dc_gain * x.

        Same as `scipy.signal.lfilter_zi(b, a) * x`: solve s = A s + B x.
        """
        y = self.dc_gain * x
        s2 = self.b2 * x - self.a2 * y
        s1 = y - self.b0 * x
        return (s1, s2)

    @property
    def dc_gain(self) -> float:
        return (self.b0 + self.b1 + self.b2) / (1.0 + self.a1 + self.a2)

    def filter(self, xs: Iterable[float], state: tuple[float, float] = (0.0, 0.0)) -> list[float]:
        """Filter a sequence from `state` (default: at rest)."""
        out = []
        b0, b1, b2, a1, a2 = self.b0, self.b1, self.b2, self.a1, self.a2
        s1, s2 = state
        for x in xs:
            y = b0 * x + s1
            s1 = b1 * x - a1 * y + s2
            s2 = b2 * x - a2 * y
            out.append(y)
        return out

    def gain(self, f_hz: float, fs_hz: float) -> float:
        """Magnitude of the frequency response at `f_hz` for sample rate `fs_hz`."""
        z1 = cmath.exp(-2j * math.pi * f_hz / fs_hz)  # z^-1 on the unit circle
        num = self.b0 + self.b1 * z1 + self.b2 * z1 * z1
        den = 1.0 + self.a1 * z1 + self.a2 * z1 * z1
        return abs(num / den)

    def state_space(self) -> tuple[tuple[tuple[float, float], tuple[float, float]],
                                   tuple[float, float], tuple[float, float], float]:
        """(A, B, C, D) of the realisation used by `step`."""
        return (((-self.a1, 1.0), (-self.a2, 0.0)),
                (self.b1 - self.a1 * self.b0, self.b2 - self.a2 * self.b0), (1.0, 0.0), self.b0)


def butterworth2_lowpass(cutoff_hz: float, rate_hz: float) -> Biquad:
    """2nd-order Butterworth low-pass, bilinear transform with prewarping at the cutoff."""
    if not (math.isfinite(cutoff_hz) and math.isfinite(rate_hz) and 0 < cutoff_hz < rate_hz / 2):
        raise ValueError(f"butterworth2_lowpass: cutoff {cutoff_hz!r} Hz must be in (0, rate/2) "
                         f"for rate {rate_hz!r} Hz")
    k = math.tan(math.pi * cutoff_hz / rate_hz)
    r2 = math.sqrt(2.0)
    n = 1.0 + r2 * k + k * k
    b0 = k * k / n
    return Biquad(b0, 2.0 * b0, b0, 2.0 * (k * k - 1.0) / n, (1.0 - r2 * k + k * k) / n)
