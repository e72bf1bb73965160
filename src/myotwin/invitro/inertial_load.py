"""A muscle pulling a mass against a spring: the classic virtual inertial load.

The simplest plant of the loop (Lin & Rymer 1998 used such loads with closed-loop force
feedback): a point mass `mass_kg` held by a linear spring `stiffness_N_per_m` (and optional
damping) is pulled by the muscle tension. The MTU length is `length0_m - x`, where x is the
mass's displacement in the pulling direction. The step is the *exact* zero-order-hold
discretisation (matrix exponential), so a trial with a known force history has a closed-form
answer: tests use it to check the loop's plumbing independently of any physics engine.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import expm


class InertialLoadPlant:
    """Mass-spring-damper load. State (x, v): displacement and velocity along the pull."""

    channel_names = ("load_x_m", "load_v_m_per_s")

    def __init__(self, mass_kg: float = 0.01, stiffness_N_per_m: float = 100.0,
                 damping_N_s_per_m: float = 0.0, length0_m: float = 0.02566,
                 dt_s: float = 1e-3) -> None:
        for name, v in (("mass_kg", mass_kg), ("stiffness_N_per_m", stiffness_N_per_m),
                        ("length0_m", length0_m), ("dt_s", dt_s)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"InertialLoadPlant: field '{name}' = {v!r}: expected > 0")
        if not (math.isfinite(damping_N_s_per_m) and damping_N_s_per_m >= 0):
            raise ValueError(f"InertialLoadPlant: field 'damping_N_s_per_m' = "
                             f"{damping_N_s_per_m!r}: expected >= 0")
        self.mass_kg, self.k, self.c = mass_kg, stiffness_N_per_m, damping_N_s_per_m
        self.length0_m, self.dt_s = length0_m, dt_s
        a = np.array([[0.0, 1.0, 0.0], [-self.k / mass_kg, -self.c / mass_kg, 1.0 / mass_kg],
                      [0.0, 0.0, 0.0]])
        phi = expm(a * dt_s)          # augmented state (x, v, F) with F held over the step
        self._phi = phi[:2, :].tolist()
        self.reset()

    def reset(self) -> None:
        self.x = self.v = self.t = 0.0
        self.tension_N = 0.0

    def set_muscle_tension(self, tension_N: float) -> None:
        self.tension_N = float(tension_N)

    def step(self) -> None:
        (a0, a1, a2), (b0, b1, b2) = self._phi
        x, v, f = self.x, self.v, self.tension_N
        self.x, self.v = a0 * x + a1 * v + a2 * f, b0 * x + b1 * v + b2 * f
        self.t += self.dt_s

    def time_s(self) -> float:
        return self.t

    def mtu_length_m(self) -> float:
        return self.length0_m - self.x

    def channels(self) -> tuple[float, ...]:
        return (self.x, self.v)

    def fault(self) -> str | None:
        if not (math.isfinite(self.x) and math.isfinite(self.v)):
            return f"divergence: load state is not finite (x = {self.x}, v = {self.v})"
        return None
