"""MuJoCo's muscle curves (the `<muscle>` actuator: gaintype, biastype muscle), as MuJoCo's
engine computes them (mju_muscleGainLength, mju_muscleGain, mju_muscleBias in
engine_util_misc.c; MuJoCo documentation, "Muscles"). The spec is MuJoCo's code: tested
against `mujoco.mju_muscleGain` / `mju_muscleBias` (tests/muscle/test_mujoco_muscle.py).

MuJoCo normalizes the actuator length l by its length range [l_lo, l_hi] and the operating
range [r0, r1] of the normalized length: L0 = (l_hi - l_lo)/(r1 - r0), L = r0 + (l - l_lo)/L0,
V = v/(L0 vmax). That is a rigid-tendon Hill muscle without pennation whose optimal fiber
length is L0 and tendon slack length l_lo - r0 L0, so that L is the normalized fiber length
l~ and V the normalized fiber velocity v~ (`musculoskeletal.mjcf` builds the `Muscle`). With
a = (lmin + 1)/2, b = (1 + lmax)/2, y = fvmax - 1 (MuJoCo's names; each denominator is at
least mjMINVAL = 1e-15, as MuJoCo):

  active f_L   0 outside [lmin, lmax]; 1/2 x^2 with x = (L - lmin)/(a - lmin) on [lmin, a];
               1 - 1/2 x^2 with x = (1 - L)/(1 - a) on (a, 1] and x = (L - 1)/(b - 1) on
               (1, b]; 1/2 x^2 with x = (lmax - L)/(lmax - b) on (b, lmax].
  f_V          0 for V <= -1; (V + 1)^2 on (-1, 0]; fvmax - (y - V)^2/y on (0, y]; fvmax
               beyond.
  passive f_PE 0 for L <= 1; fpmax 1/2 x^2 with x = (L - 1)/(b - 1) on (1, b];
               fpmax (1/2 + x) with x = (L - b)/(b - 1) beyond.

MuJoCo's actuator force is -F0 (act f_L f_V + f_PE) (negative: it pulls), F0 = gainprm[2], or
scale/acc0 where that is negative. The passive curve's integral (the fiber's elastic energy
per F0 L0) is in closed form. MuJoCo's curves have no inverse of f_V over all of it (f_V is
flat beyond V = y and below V = -1), and MuJoCo's muscle has no tendon: these curves serve the
rigid tendon only (`model.build_muscles` refuses another tendon model).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

#: MuJoCo's mjMINVAL: the smallest denominator.
MINVAL = 1e-15
#: MuJoCo's defaults of the `<muscle>` shortcut (MJCF reference): lmin, lmax, vmax (L0/s),
#: fpmax, fvmax, timeconst (activation, deactivation; s).
DEFAULT_LMIN, DEFAULT_LMAX = 0.5, 1.6
DEFAULT_VMAX = 1.5
DEFAULT_FPMAX, DEFAULT_FVMAX = 1.3, 1.2
DEFAULT_TAU_ACT_S, DEFAULT_TAU_DEACT_S = 0.01, 0.04


def _den(x):
    return jnp.maximum(MINVAL, x)


def active_force_length(l_norm, lmin=DEFAULT_LMIN, lmax=DEFAULT_LMAX):
    """MuJoCo's active force-length multiplier (mju_muscleGainLength) at L = l_norm."""
    L = jnp.asarray(l_norm, dtype=float)
    a, b = 0.5 * (lmin + 1.0), 0.5 * (1.0 + lmax)
    rising = 0.5 * ((L - lmin) / _den(a - lmin)) ** 2
    below_one = 1.0 - 0.5 * ((1.0 - L) / _den(1.0 - a)) ** 2
    above_one = 1.0 - 0.5 * ((L - 1.0) / _den(b - 1.0)) ** 2
    falling = 0.5 * ((lmax - L) / _den(lmax - b)) ** 2
    inside = jnp.where(L <= a, rising, jnp.where(L <= 1.0, below_one,
                                                 jnp.where(L <= b, above_one, falling)))
    return jnp.where((L < lmin) | (L > lmax), 0.0, inside)


def force_velocity(v_norm, fvmax=DEFAULT_FVMAX):
    """MuJoCo's force-velocity multiplier at V = v_norm (velocity / (L0 vmax))."""
    V = jnp.asarray(v_norm, dtype=float)
    y = fvmax - 1.0
    return jnp.where(V <= -1.0, 0.0, jnp.where(
        V <= 0.0, (V + 1.0) ** 2, jnp.where(V <= y, fvmax - (y - V) ** 2 / _den(y), fvmax)))


def passive_force_length(l_norm, lmax=DEFAULT_LMAX, fpmax=DEFAULT_FPMAX):
    """MuJoCo's passive force multiplier (mju_muscleBias / -F0) at L = l_norm."""
    L = jnp.asarray(l_norm, dtype=float)
    b = 0.5 * (1.0 + lmax)
    quad = fpmax * 0.5 * ((L - 1.0) / _den(b - 1.0)) ** 2
    lin = fpmax * (0.5 + (L - b) / _den(b - 1.0))
    return jnp.where(L <= 1.0, 0.0, jnp.where(L <= b, quad, lin))


def passive_force_length_integral(l_norm, lmax=DEFAULT_LMAX, fpmax=DEFAULT_FPMAX):
    """int_1^L f_PE(s) ds (0 for L <= 1): fpmax (L - 1)^3 / (6 (b - 1)^2) up to b, then
    fpmax ((b - 1)/6 + (L - b)/2 + (L - b)^2 / (2 (b - 1)))."""
    L = jnp.asarray(l_norm, dtype=float)
    b = 0.5 * (1.0 + lmax)
    w = _den(b - 1.0)
    cubic = fpmax * (L - 1.0) ** 3 / (6.0 * w * w)
    beyond = fpmax * (w / 6.0 + 0.5 * (L - b) + (L - b) ** 2 / (2.0 * w))
    return jnp.where(L <= 1.0, 0.0, jnp.where(L <= b, cubic, beyond))


@dataclasses.dataclass(frozen=True)
class MuJoCoCurves:
    """MuJoCo's muscle curve parameters (a pytree part of `Muscle`; the curve interface of
    the other families, rigid tendon only). Leaves (n_muscles,) or scalars, MuJoCo's names:
    lmin (in [0, 1)), lmax (> 1), fpmax (>= 0), fvmax (>= 1)."""

    lmin: jax.Array
    lmax: jax.Array
    fpmax: jax.Array
    fvmax: jax.Array

    def active_force_length(self, l_norm):
        return active_force_length(l_norm, self.lmin, self.lmax)

    def force_velocity(self, v_norm, activation=None):
        """f_V(V); `activation` is not used (it exists for Thelen 2003's curve)."""
        return force_velocity(v_norm, self.fvmax)

    def passive_force_length(self, l_norm):
        return passive_force_length(l_norm, self.lmax, self.fpmax)

    def passive_force_length_integral(self, l_norm):
        return passive_force_length_integral(l_norm, self.lmax, self.fpmax)


jax.tree_util.register_dataclass(
    MuJoCoCurves, data_fields=[f.name for f in dataclasses.fields(MuJoCoCurves)],
    meta_fields=[])
