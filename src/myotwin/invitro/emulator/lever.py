"""The ergometer lever: a speed-limited 2nd-order position servo with mechanical stops.

The Aurora 305C-LR follows its length input through its own position loop. We model the
closed loop as the 2nd-order system (docs/invitro/emulator.md §4)

    x'' = wn^2 (r - x) - 2 zeta wn x'

(wn = 2 pi f_n; f_n = 400 Hz, zeta = 1 by default: estimates, "well damped"), integrated
exactly for an input r held over each FPGA sub-step (zero-order hold: the FPGA's analogue
output is piecewise constant at 10 kHz). The discrete map is
    [x, v]' = Phi [x, v] + Gamma r,  Phi = expm(A h),  Gamma = (I - Phi) [1, 0]^T
where the last form uses A^-1 B = [-1, 0]^T (unit DC gain). Tests check Phi and Gamma against
`scipy.signal.cont2discrete(..., method='zoh')`.

Two nonlinearities of the real motor follow each exact step:
* speed limit (seed: ~400 mm/s): the new velocity is clipped to +-v_max and the position
  increment to +-v_max h, so neither the state's velocity nor the finite-difference speed
  can exceed the limit;
* mechanical stops: the position is clamped to [start + travel_min, start + travel_max];
  at a stop the velocity is zeroed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from myotwin.invitro.emulator.params import LeverParams

Mat2 = tuple[tuple[float, float], tuple[float, float]]


def expm2(m: Mat2) -> Mat2:
    """Matrix exponential of a real 2x2 matrix in closed form.

    With mu = trace/2 and d^2 = mu^2 - det (the eigenvalues are mu +- d):
    expm(M) = e^mu [cosh(d) I + sinh(d)/d (M - mu I)], with cos/sin when d^2 < 0 and the
    series of sinh(d)/d near d = 0 (critically damped servo).
    """
    (p, q), (r, s) = m
    mu = 0.5 * (p + s)
    d2 = 0.25 * (p - s) ** 2 + q * r
    if d2 > 1e-12:
        d = math.sqrt(d2)
        c, sd = math.cosh(d), math.sinh(d) / d
    elif d2 < -1e-12:
        d = math.sqrt(-d2)
        c, sd = math.cos(d), math.sin(d) / d
    else:  # |d| < 1e-6: Taylor to O(d^4), error < 1e-25
        c, sd = 1.0 + 0.5 * d2, 1.0 + d2 / 6.0
    e = math.exp(mu)
    return ((e * (c + sd * (p - mu)), e * sd * q),
            (e * sd * r, e * (c + sd * (s - mu))))


def servo_zoh(natural_hz: float, damping: float, step_s: float) -> tuple[Mat2, tuple[float, float]]:
    """(Phi, Gamma) of the unit-DC-gain 2nd-order servo discretised with a zero-order hold."""
    wn = 2.0 * math.pi * natural_hz
    a = ((0.0, step_s), (-wn * wn * step_s, -2.0 * damping * wn * step_s))
    phi = expm2(a)
    return phi, (1.0 - phi[0][0], -phi[1][0])


@dataclass(frozen=True)
class Lever:
    """Lever dynamics at one FPGA sub-step. Positions are muscle lengths (m)."""

    phi: Mat2
    gamma: tuple[float, float]
    step_s: float
    max_speed_m_per_s: float
    x_min_m: float
    x_max_m: float

    @classmethod
    def build(cls, params: LeverParams, start_length_m: float, step_s: float) -> "Lever":
        phi, gamma = servo_zoh(params.servo_natural_hz, params.servo_damping, step_s)
        return cls(phi, gamma, step_s, params.max_speed_m_per_s,
                   start_length_m + params.travel_min_m, start_length_m + params.travel_max_m)

    def step(self, x: float, v: float, target: float) -> tuple[float, float]:
        """Advance (position m, velocity m/s) by one sub-step towards `target` (held)."""
        (p00, p01), (p10, p11) = self.phi
        xn = p00 * x + p01 * v + self.gamma[0] * target
        vn = p10 * x + p11 * v + self.gamma[1] * target
        vmax = self.max_speed_m_per_s
        if vn > vmax:
            vn = vmax
        elif vn < -vmax:
            vn = -vmax
        dmax = vmax * self.step_s
        if xn - x > dmax:
            xn = x + dmax
        elif x - xn > dmax:
            xn = x - dmax
        if xn > self.x_max_m:
            xn, vn = self.x_max_m, 0.0
        elif xn < self.x_min_m:
            xn, vn = self.x_min_m, 0.0
        return xn, vn
