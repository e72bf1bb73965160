"""Hip and knee servo targets and the forelimb support force, as closed-form functions of time.

Targets (notes/invitro-vr.md §3.2; reference file inforces.dat columns 1-2). The authors' notebook
fitted 4th-order polynomials p(t) to the knee and hip angles of one recorded Kassina jump,
blended them by a tanh ramp into a 2.5 rad plateau, zeroed them at t = 0 and scaled them by 1.5
(knee) and -2 (hip):

    h(t) = w(t) p(t) + (1 - w(t)) * 2.5,   w(t) = (1 - tanh((t - t_c) / tau)) / 2
    delta(t) = gain * (h(t) - h(0))

We recovered p, t_c and tau by least squares on the 300 rows of inforces.dat, taken at the
notebook's sample times t_k = 0.3 k / 299 s: with p(t) = a0 + a2 t^2 + a3 t^3 + a4 t^4 (the fit
returns a1 = 0 to 1e-9), t_c = 0.11 s and tau = 1 / (20 pi) s (i.e. tanh(2 pi 5 (2t - 0.22))), the
residual is below 1e-13 rad, so the numbers below are the generator, not an approximation. The
coefficients are rounded to 7 significant digits (error < 2e-6 rad; tests/invitro/test_frog_targets.py
checks them against the file).

delta(t) is the rotation from the start pose: knee 0 -> +2.983 rad (extension), hip 0 -> -3.291
rad (extension). Our hinge angles are rotations from the straight limb, so the servo target is
start angle + delta. With our start pose (knee -3.14, hip +3.12) the end posture is knee -0.157
(9 deg short of straight) and hip -0.171 (10 deg past straight); our joint ranges include both.

Time base: the authors' program played row k at step k (1 ms), 0.33 % faster than the notebook
time base; we evaluate the closed form at the true simulation time.

Forelimb support (notes §3.2): F(t) = frac * m * g * (0.5 - 0.5 tanh(2 pi 5 (2t - 0.18))), world +z,
with m the mass of *our* model (the authors forgot to rescale it: their 0.0523 N is 51 % of the
unscaled 10.46 g frog, 15 % of their scaled model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .mjcf import BODY_FORELIMB_SUPPORT
from .spec import GRAVITY_M_S2, FrogSpec, frog_geometry

PLATEAU_RAD = 2.5
"""Angle the Kassina polynomials are blended into (rad, in the notebook's angle convention)."""
BLEND_CENTRE_S = 0.11
BLEND_TAU_S = 1.0 / (20.0 * math.pi)


@dataclass(frozen=True)
class TargetFit:
    """One joint's closed-form target: gain * (h(t) - h(0)), see the module docstring."""

    a0: float
    a2: float
    a3: float
    a4: float
    gain: float

    def h(self, t_s):
        t = np.asarray(t_s, dtype=float)
        p = self.a0 + t**2 * (self.a2 + t * (self.a3 + t * self.a4))
        w = 0.5 * (1.0 - np.tanh((t - BLEND_CENTRE_S) / BLEND_TAU_S))
        return w * p + (1.0 - w) * PLATEAU_RAD

    def delta_rad(self, t_s):
        """Rotation from the start pose (rad); scalar in, scalar out; array in, array out."""
        out = self.gain * (self.h(t_s) - self.h(0.0))
        return float(out) if np.ndim(out) == 0 else out

    def rate_rad_s(self, t_s, dt: float = 1e-6):
        """d delta / dt by central differences (rad/s)."""
        t = np.asarray(t_s, dtype=float)
        out = self.gain * (self.h(t + dt) - self.h(t - dt)) / (2 * dt)
        return float(out) if np.ndim(out) == 0 else out


KNEE_FIT = TargetFit(a0=0.5112406, a2=-34.45227, a3=5031.052, a4=-30016.70, gain=1.5)
HIP_FIT = TargetFit(a0=0.8544080, a2=122.7760, a3=2712.368, a4=-23967.27, gain=-2.0)


def knee_target_delta_rad(t_s):
    """Knee target, rotation from the start pose (rad): 0 at t = 0, +2.983 on the plateau."""
    return KNEE_FIT.delta_rad(t_s)


def hip_target_delta_rad(t_s):
    """Hip target, rotation from the start pose (rad): 0 at t = 0, -3.291 on the plateau."""
    return HIP_FIT.delta_rad(t_s)


def servo_targets_rad(t_s: float, spec: FrogSpec = FrogSpec()) -> tuple[float, float]:
    """(knee, hip) target hinge angles at t: start angle + delta (rotation from straight)."""
    start = frog_geometry(spec).start_rotations_rad
    return start["knee"] + knee_target_delta_rad(t_s), start["hip"] + hip_target_delta_rad(t_s)


def servo_controls(t_s: float, spec: FrogSpec = FrogSpec()) -> tuple[float, float]:
    """(knee_servo, hip_servo) ctrl values at t, with velocity feed-forward.

    A MuJoCo position actuator gives kp (ctrl - q) - kv qdot. Feeding ctrl = q* + (kv/kp) qdot*
    makes it kp (q* - q) + kv (qdot* - qdot): a PD servo on the tracking error, so the damping
    does not make the joint lag the moving target.
    """
    knee, hip = servo_targets_rad(t_s, spec)
    knee += spec.knee_kv_Nms_per_rad / spec.knee_kp_Nm_per_rad * KNEE_FIT.rate_rad_s(t_s)
    hip += spec.hip_kv_Nms_per_rad / spec.hip_kp_Nm_per_rad * HIP_FIT.rate_rad_s(t_s)
    return knee, hip


FORELIMB_BODY = BODY_FORELIMB_SUPPORT
"""Body whose xfrc_applied[:, 2] carries the forelimb support (massless, welded to the trunk)."""


def forelimb_support_N(t_s, spec: FrogSpec = FrogSpec()):
    """Upward forelimb support force (N) at t: frac * m_model * g * (0.5 - 0.5 tanh(...))."""
    m = frog_geometry(spec).total_mass_kg
    t = np.asarray(t_s, dtype=float)
    out = spec.forelimb_support_fraction * m * GRAVITY_M_S2 * (
        0.5 - 0.5 * np.tanh(2 * math.pi * 5 * (2 * t - 0.18)))
    return float(out) if np.ndim(out) == 0 else out
