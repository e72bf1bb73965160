"""Thelen 2003 muscle curves as OpenSim 4.6 defines them (`Thelen2003Muscle`).

Thelen 2003, "Adjustment of muscle mechanics model parameters to simulate dynamic contractions
in older adults", J Biomech Eng 125:70-77, Eqs. 1-7, as implemented in opensim-core
`OpenSim/Actuators/Thelen2003Muscle.cpp` (calcfal, calcfpe, calcfse, calcdlceN and their
derivative and energy helpers), which is the spec where it departs from the paper (marked *).
Normalized: l~ = l_M/l_opt, l~_T = l_T/l_ts, v~ = v_M/(v_max l_opt), F = f_V (force-velocity
multiplier). The paper's Eqs. 3-5 give f_L, f_PE and f_T, Eqs. 6-7 the force-velocity
relation, Eqs. 1-2 the activation (`activation.ActivationLaw.THELEN2003`). All functions are
elementwise closed forms in jnp (derivatives by jax):

  active f_L             exp(-(l~ - 1)^2 / gamma),   gamma = KshapeActive.
  passive f_PE           (exp(k_PE (l~ - 1)/e0_M) - 1) / (exp(k_PE) - 1) for l~ > 1, else 0*
                         (k_PE = KshapePassive, e0_M = FmaxMuscleStrain; the paper's formula
                         goes slightly negative below l~ = 1, OpenSim returns 0 there).
  tendon f_T             with strain x = l~_T - 1 and e0 = FmaxTendonStrain:
                         0                                              x <= 0*
                         F_toe/(exp(k_toe) - 1) (exp(k_toe x/e_toe) - 1)  0 < x <= e_toe
                         k_lin (x - e_toe) + F_toe                       x > e_toe
                         k_toe = 3, F_toe = 0.33, e_toe = 99 e^3 e0/(166 e^3 - 67)
                         (= 0.6086 e0), k_lin = 0.67/(e0 - e_toe) (= 1.7117/e0)*: the exact
                         values for which f_T is C1 at e_toe and f_T(1 + e0) = 1 (the paper
                         rounds them to 0.609 e0 and 1.712/e0).
  force-velocity (Eqs. 6-7), written by OpenSim as the fiber velocity of the force:
                         v~ = (0.25 + 0.75 a) g(F), with a the (clamped) activation and
                         g(F) = (F - 1)/(1 + F/A_f)                             0 < F <= 1
                         g(F) = (F - 1)(F_len - 1)/((2 + 2/A_f)(F_len - F))     1 < F < th F_len
                         and, to make it invertible*, linear extrapolations with the slope
                         of the end point for F <= 0 and for F >= th F_len
                         (A_f = Af, F_len = Flen, th = fv_linear_extrap_threshold).
                         The a f_L of the paper's Eq. 6 cancels (F^M = a f_L F).
                         `force_velocity` is the exact closed-form inverse of this relation.

Departures from OpenSim, all deliberate (see docs/muscle.md):
* The derivative of f_T at the slack length (x = 0, a kink) is the toe's right derivative
  (OpenSim's calcDfseDtlN returns 0 there); the values are the same everywhere.
* OpenSim's numerical f_V (calcfvInv, used in its equilibrium initialization) clamps F at 0;
  `force_velocity` keeps the linear extrapolation below v~ = -(0.25 + 0.75 a), so that it
  inverts calcdlceN, which is what OpenSim's dynamics use, exactly.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

#: Tendon toe constants (OpenSim calcfse; Thelen 2003's tendon relation).
K_TOE = 3.0
F_TOE = 0.33
#: e_toe / e0 = 99 e^3 / (166 e^3 - 67): exact C1 junction (the paper's 0.609 rounded).
TOE_STRAIN_RATIO = 99.0 * math.exp(3.0) / (166.0 * math.exp(3.0) - 67.0)
#: OpenSim 4.6 defaults of Thelen2003Muscle::constructProperties.
DEFAULT_TENDON_STRAIN = 0.04            # FmaxTendonStrain (was 0.033 before OpenSim 4)
DEFAULT_PASSIVE_STRAIN = 0.6            # FmaxMuscleStrain
DEFAULT_ACTIVE_SHAPE = 0.45             # KshapeActive
DEFAULT_PASSIVE_SHAPE = 5.0             # KshapePassive
DEFAULT_FORCE_VELOCITY_SHAPE = 0.25     # Af
DEFAULT_MAX_LENGTHENING_FORCE = 1.4     # Flen (was 1.8 before OpenSim 4)
DEFAULT_EXTRAPOLATION_THRESHOLD = 0.95  # fv_linear_extrap_threshold


def _f(x):
    return jnp.asarray(x, dtype=float)


def active_force_length(l_norm, shape=DEFAULT_ACTIVE_SHAPE):
    """Active force-length multiplier f_L(l~) = exp(-(l~ - 1)^2/gamma) (calcfal)."""
    return jnp.exp(-(_f(l_norm) - 1.0) ** 2 / shape)


def _passive_parts(l_norm, strain, shape):
    l_norm = _f(l_norm)
    stretched = l_norm > 1.0
    safe = jnp.where(stretched, l_norm, 1.0)   # keeps exp finite in the unused branch
    return stretched, safe - 1.0, jnp.expm1(shape * (safe - 1.0) / strain), jnp.expm1(shape)


def passive_force_length(l_norm, strain=DEFAULT_PASSIVE_STRAIN, shape=DEFAULT_PASSIVE_SHAPE):
    """Passive multiplier f_PE(l~) (calcfpe): 0 for l~ <= 1; f_PE(1 + e0_M) = 1."""
    stretched, _, num, den = _passive_parts(l_norm, strain, shape)
    return jnp.where(stretched, num / den, 0.0)


def passive_force_length_integral(l_norm, strain=DEFAULT_PASSIVE_STRAIN,
                                  shape=DEFAULT_PASSIVE_SHAPE):
    """int_1^{l~} f_PE(s) ds (0 for l~ <= 1): the fiber's elastic energy / (F_iso l_opt), as
    OpenSim's calcfpefisoPE."""
    stretched, dl, num, den = _passive_parts(l_norm, strain, shape)
    return jnp.where(stretched, ((strain / shape) * num - dl) / den, 0.0)


def tendon_toe_strain(strain=DEFAULT_TENDON_STRAIN):
    """e_toe = 99 e^3 e0/(166 e^3 - 67), the strain where the toe meets the linear region."""
    return TOE_STRAIN_RATIO * _f(strain)


def tendon_linear_stiffness(strain=DEFAULT_TENDON_STRAIN):
    """k_lin = 0.67/(e0 - e_toe), the slope of the linear region (per unit strain)."""
    return (1.0 - F_TOE) / (_f(strain) - tendon_toe_strain(strain))


def _toe_scale():
    return F_TOE / math.expm1(K_TOE)


def tendon_force_length(lt_norm, strain=DEFAULT_TENDON_STRAIN):
    """Tendon multiplier f_T(l~_T) (calcfse): 0 below slack, exponential toe,
    linear beyond e_toe; f_T(1 + e0) = 1."""
    x = _f(lt_norm) - 1.0
    e_toe, k_lin = tendon_toe_strain(strain), tendon_linear_stiffness(strain)
    toe = (x >= 0.0) & (x <= e_toe)
    x_toe = jnp.where(toe, x, 0.0)
    f_toe = _toe_scale() * jnp.expm1(K_TOE * x_toe / e_toe)
    f_lin = k_lin * (x - e_toe) + F_TOE
    return jnp.where(x > e_toe, f_lin, jnp.where(x >= 0.0, f_toe, 0.0))


def tendon_force_length_inverse(f, strain=DEFAULT_TENDON_STRAIN):
    """l~_T with f_T(l~_T) = f for f >= 0 (f = 0 gives the slack length 1, the end of the
    zero-force plateau); NaN for f < 0, which no tendon length produces."""
    f = _f(f)
    e_toe, k_lin = tendon_toe_strain(strain), tendon_linear_stiffness(strain)
    toe = (f >= 0.0) & (f <= F_TOE)
    f_toe = jnp.where(toe, f, 0.0)
    x_toe = (e_toe / K_TOE) * jnp.log1p(f_toe / _toe_scale())
    x_lin = e_toe + (f - F_TOE) / k_lin
    return 1.0 + jnp.where(f > F_TOE, x_lin, jnp.where(f >= 0.0, x_toe, jnp.nan))


def tendon_zero_force_length(strain=DEFAULT_TENDON_STRAIN):
    """l~_T0 = 1, the slack length (f_T = 0 at and below it): the reference of the integral."""
    return jnp.ones_like(_f(strain))


def tendon_force_length_integral(lt_norm, strain=DEFAULT_TENDON_STRAIN):
    """int_1^{l~_T} f_T(s) ds (0 below slack): the tendon's elastic energy / (F_iso l_ts), as
    OpenSim's calcfsefisoPE."""
    x = _f(lt_norm) - 1.0
    e_toe, k_lin = tendon_toe_strain(strain), tendon_linear_stiffness(strain)

    def toe_integral(s):
        return _toe_scale() * ((e_toe / K_TOE) * jnp.expm1(K_TOE * s / e_toe) - s)

    toe = (x >= 0.0) & (x <= e_toe)
    in_toe = toe_integral(jnp.where(toe, x, 0.0))
    dx = x - e_toe
    in_lin = toe_integral(e_toe) + 0.5 * k_lin * dx ** 2 + F_TOE * dx
    return jnp.where(x > e_toe, in_lin, jnp.where(x >= 0.0, in_toe, 0.0))


def velocity_scale(activation=1.0):
    """0.25 + 0.75 a: the activation dependence of the maximum shortening velocity (Eq. 6)."""
    return 0.25 + 0.75 * _f(activation)


def _eccentric(shape, max_force, threshold):
    """K = (F_len - 1)/(2 + 2/A_f), F_0 = th F_len, g(F_0) and g'(F_0) of the eccentric branch."""
    k = (max_force - 1.0) / (2.0 + 2.0 / shape)
    f0 = threshold * max_force
    return k, f0, k * (f0 - 1.0) / (max_force - f0), k * (max_force - 1.0) / (max_force - f0) ** 2


def force_velocity_inverse(f, shape=DEFAULT_FORCE_VELOCITY_SHAPE,
                           max_force=DEFAULT_MAX_LENGTHENING_FORCE,
                           threshold=DEFAULT_EXTRAPOLATION_THRESHOLD, activation=1.0):
    """Normalized fiber velocity v~ of the force-velocity multiplier F (Eqs. 6-7 with
    OpenSim's linear extrapolations, calcdlceN); `activation` is the clamped activation."""
    f = _f(f)
    k, f0, g0, slope0 = _eccentric(shape, max_force, threshold)
    concentric = (f > 0.0) & (f <= 1.0)
    fc = jnp.where(concentric, f, 1.0)
    eccentric = (f > 1.0) & (f < f0)
    fe = jnp.where(eccentric, f, 1.0)
    g = jnp.where(
        f <= 0.0, -1.0 + (1.0 + 1.0 / shape) * f,
        jnp.where(f <= 1.0, (fc - 1.0) / (1.0 + fc / shape),
                  jnp.where(f < f0, k * (fe - 1.0) / (max_force - fe),
                            g0 + slope0 * (f - f0))))
    return velocity_scale(activation) * g


def force_velocity(v_norm, shape=DEFAULT_FORCE_VELOCITY_SHAPE,
                   max_force=DEFAULT_MAX_LENGTHENING_FORCE,
                   threshold=DEFAULT_EXTRAPOLATION_THRESHOLD, activation=1.0):
    """Force-velocity multiplier F = f_V(v~): the exact closed-form inverse of
    `force_velocity_inverse` (OpenSim solves it by Newton in calcfvInv)."""
    x = _f(v_norm) / velocity_scale(activation)
    k, f0, g0, slope0 = _eccentric(shape, max_force, threshold)
    concentric = (x > -1.0) & (x <= 0.0)
    xc = jnp.where(concentric, x, 0.0)
    eccentric = (x > 0.0) & (x < g0)
    xe = jnp.where(eccentric, x, 0.0)
    return jnp.where(
        x <= -1.0, (x + 1.0) / (1.0 + 1.0 / shape),
        jnp.where(x <= 0.0, shape * (1.0 + xc) / (shape - xc),
                  jnp.where(x < g0, (max_force * xe + k) / (xe + k),
                            f0 + (x - g0) / slope0)))


@dataclasses.dataclass(frozen=True)
class ThelenCurves:
    """Thelen 2003 curve parameters of a muscle (a pytree part of `Muscle`); the curve
    interface of `degroote2016.DeGrooteCurves`, whose force-velocity pair here requires the
    (clamped) activation, which the tendon models (`tendon.py`) pass. Leaves (n_muscles,) or
    scalars, OpenSim names in brackets: active_force_length_shape gamma [KshapeActive],
    passive_force_length_shape k_PE [KshapePassive], passive_strain_at_one_norm_force e0_M
    [FmaxMuscleStrain], tendon_strain_at_one_norm_force e0 [FmaxTendonStrain],
    force_velocity_shape A_f [Af], max_lengthening_force_multiplier F_len [Flen],
    force_velocity_extrapolation_threshold th [fv_linear_extrap_threshold]."""

    active_force_length_shape: jax.Array
    passive_force_length_shape: jax.Array
    passive_strain_at_one_norm_force: jax.Array
    tendon_strain_at_one_norm_force: jax.Array
    force_velocity_shape: jax.Array
    max_lengthening_force_multiplier: jax.Array
    force_velocity_extrapolation_threshold: jax.Array

    def _fv(self):
        return (self.force_velocity_shape, self.max_lengthening_force_multiplier,
                self.force_velocity_extrapolation_threshold)

    def active_force_length(self, l_norm):
        return active_force_length(l_norm, self.active_force_length_shape)

    def force_velocity(self, v_norm, activation):
        """f_V(v~) at the (clamped) `activation`: Thelen's velocity scale 0.25 + 0.75 a."""
        return force_velocity(v_norm, *self._fv(), activation)

    def force_velocity_inverse(self, f, activation):
        return force_velocity_inverse(f, *self._fv(), activation)

    def passive_force_length(self, l_norm):
        return passive_force_length(l_norm, self.passive_strain_at_one_norm_force,
                                    self.passive_force_length_shape)

    def passive_force_length_integral(self, l_norm):
        return passive_force_length_integral(l_norm, self.passive_strain_at_one_norm_force,
                                             self.passive_force_length_shape)

    def tendon_force_length(self, lt_norm):
        return tendon_force_length(lt_norm, self.tendon_strain_at_one_norm_force)

    def tendon_force_length_integral(self, lt_norm):
        return tendon_force_length_integral(lt_norm, self.tendon_strain_at_one_norm_force)

    def tendon_force_length_inverse(self, f):
        return tendon_force_length_inverse(f, self.tendon_strain_at_one_norm_force)

    def tendon_zero_force_length(self):
        return tendon_zero_force_length(self.tendon_strain_at_one_norm_force)


jax.tree_util.register_dataclass(
    ThelenCurves, data_fields=[f.name for f in dataclasses.fields(ThelenCurves)],
    meta_fields=[])
