"""De Groote et al. 2016 muscle curves with OpenSim's constants (`DeGrooteFregly2016Muscle`).

De Groote, Kinney, Rao, Fregly 2016, "Evaluation of direct collocation optimal control problem
formulations for solving the muscle redundancy problem", Ann Biomed Eng 44:2922-2936,
Supplementary Material, Eqs. S1-S4; constants as in opensim-core
`OpenSim/Actuators/DeGrooteFregly2016Muscle.h` (which corrects the paper where noted).
All functions are elementwise closed forms in jnp (derivatives by jax):

  active f_L  (S2)  sum_{i=1..3} b1i exp(-1/2 (x - b2i)^2 / (b3i + b4i x)^2),
                    x = (l~ - 1)/s + 1 with the active-force width scale s >= 1.
                    Erratum (OpenSim): the supplement forgets to square the denominator.
  f_V         (S4)  d1 asinh(d2 v~ + d3) + d4 (= d1 ln(w + sqrt(w^2 + 1)) + d4),
                    inverse v~ = (sinh((f - d4)/d1) - d3)/d2 (the supplement drops the -d3).
  passive f_PE (S3, OpenSim's offset form)
                    (exp(k_PE (l~ - 1)/e0) - exp(k_PE (l~_min - 1)/e0))
                    / (exp(k_PE) - exp(k_PE (l~_min - 1)/e0)),  so f_PE(l~_min) = 0,
                    f_PE(1 + e0) = 1; negative below l~_min.
  tendon f_T  (S1)  c1 exp(k_T (l~_T - c2)) - c3,  k_T = ln((1 + c3)/c1)/(1 + eps_T - c2),
                    so f_T(1 + eps_T) = 1; with OpenSim's c1 = c3 f_T(1) = 0 exactly.

OpenSim re-fitted b11 (so that f_L(1) = 1) and d1, d4 (so that f_V(-1) = 0, f_V(0) = 1), and
uses c1 = 0.2, c2 = 1, c3 = 0.2 instead of the paper's 0.2, 0.995, 0.25.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

#: Active force-length Gaussians (b1i, b2i, b3i, b4i), i = 1, 2, 3 (OpenSim values).
B_ACTIVE = (
    (0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465),
    (0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188),
    (0.1, 1.0, 0.353553390593274, 0.0),
)
#: Force-velocity constants d1..d4 (OpenSim re-solved d1 and d4).
D1, D2, D3, D4 = -0.3211346127989808, -8.149, -0.374, 0.8825327733249912
#: Passive exponential shape factor and the normalized fiber length where f_PE = 0.
K_PE = 4.0
MIN_NORM_FIBER_LENGTH = 0.2
#: Bounds OpenSim places on the normalized fiber length (fiber-length bounds for Moco).
MAX_NORM_FIBER_LENGTH = 1.8
#: Tendon constants (OpenSim; the paper has c2 = 0.995, c3 = 0.25).
C1, C2, C3 = 0.2, 1.0, 0.2
#: OpenSim defaults of the per-muscle curve parameters.
DEFAULT_PASSIVE_STRAIN = 0.6
DEFAULT_TENDON_STRAIN = 0.049
DEFAULT_WIDTH_SCALE = 1.0


def active_force_length(l_norm, width_scale=DEFAULT_WIDTH_SCALE):
    """Active force-length multiplier f_L(l~) (Eq. S2, three Gaussian-like terms)."""
    x = (jnp.asarray(l_norm, dtype=float) - 1.0) / width_scale + 1.0
    total = 0.0
    for b1, b2, b3, b4 in B_ACTIVE:
        total = total + b1 * jnp.exp(-0.5 * (x - b2) ** 2 / (b3 + b4 * x) ** 2)
    return total


def force_velocity(v_norm):
    """Force-velocity multiplier f_V(v~), v~ = fiber velocity/(v_max l_opt) (Eq. S4)."""
    return D1 * jnp.arcsinh(D2 * jnp.asarray(v_norm, dtype=float) + D3) + D4


def force_velocity_inverse(f):
    """Normalized fiber velocity v~ with f_V(v~) = f (closed-form inverse of Eq. S4)."""
    return (jnp.sinh((jnp.asarray(f, dtype=float) - D4) / D1) - D3) / D2


def _passive_offset(strain):
    return jnp.exp(K_PE * (MIN_NORM_FIBER_LENGTH - 1.0) / strain)


def passive_force_length(l_norm, strain=DEFAULT_PASSIVE_STRAIN):
    """Passive fiber force-length multiplier f_PE(l~), OpenSim's offset form of Eq. S3;
    `strain` is passive_fiber_strain_at_one_norm_force e0."""
    off = _passive_offset(strain)
    return ((jnp.exp(K_PE * (jnp.asarray(l_norm, dtype=float) - 1.0) / strain) - off)
            / (jnp.exp(K_PE) - off))


def passive_force_length_integral(l_norm, strain=DEFAULT_PASSIVE_STRAIN):
    """int_{l~_min}^{l~} f_PE(s) ds (closed form; the fiber's elastic energy / (F_iso l_opt))."""
    l_norm = jnp.asarray(l_norm, dtype=float)
    off = _passive_offset(strain)
    expo = (strain / K_PE) * (jnp.exp(K_PE * (l_norm - 1.0) / strain) - off)
    return (expo - off * (l_norm - MIN_NORM_FIBER_LENGTH)) / (jnp.exp(K_PE) - off)


def tendon_stiffness_parameter(strain=DEFAULT_TENDON_STRAIN):
    """k_T = ln((1 + c3)/c1) / (1 + eps_T - c2) (OpenSim; 36.5665 for eps_T = 0.049)."""
    return math.log((1.0 + C3) / C1) / (1.0 + jnp.asarray(strain, dtype=float) - C2)


def tendon_force_length(lt_norm, strain=DEFAULT_TENDON_STRAIN):
    """Tendon force-length multiplier f_T(l~_T) (Eq. S1 with OpenSim's c1, c2, c3)."""
    k = tendon_stiffness_parameter(strain)
    return C1 * jnp.exp(k * (jnp.asarray(lt_norm, dtype=float) - C2)) - C3


def tendon_force_length_inverse(f, strain=DEFAULT_TENDON_STRAIN):
    """Normalized tendon length l~_T with f_T(l~_T) = f (valid for f > -c3)."""
    k = tendon_stiffness_parameter(strain)
    return jnp.log((jnp.asarray(f, dtype=float) + C3) / C1) / k + C2


def tendon_zero_force_length(strain=DEFAULT_TENDON_STRAIN):
    """l~_T where f_T = 0 (= 1 with OpenSim's constants): the reference of the integral."""
    return tendon_force_length_inverse(0.0, strain)


def tendon_force_length_integral(lt_norm, strain=DEFAULT_TENDON_STRAIN):
    """int_{l~_T0}^{l~_T} f_T(s) ds with f_T(l~_T0) = 0 (the tendon's elastic energy /
    (F_iso l_ts)); positive on both sides of l~_T0 (f_T < 0 below it)."""
    lt_norm = jnp.asarray(lt_norm, dtype=float)
    k = tendon_stiffness_parameter(strain)
    l0 = tendon_zero_force_length(strain)
    return ((C1 / k) * (jnp.exp(k * (lt_norm - C2)) - jnp.exp(k * (l0 - C2)))
            - C3 * (lt_norm - l0))


@dataclasses.dataclass(frozen=True)
class DeGrooteCurves:
    """De Groote 2016 curve parameters of a muscle (a pytree part of `Muscle`); same curve
    interface as `millard2012.MillardCurves`. Leaves (n_muscles,) or scalars:
    active_force_width_scale (s >= 1), passive_strain_at_one_norm_force (e0 > 0),
    tendon_strain_at_one_norm_force (eps_T > 0)."""

    active_force_width_scale: jax.Array
    passive_strain_at_one_norm_force: jax.Array
    tendon_strain_at_one_norm_force: jax.Array

    def active_force_length(self, l_norm):
        return active_force_length(l_norm, self.active_force_width_scale)

    def force_velocity(self, v_norm, activation=None):
        """f_V(v~); `activation` is not used (the family's curve does not depend on it; the
        argument exists for Thelen 2003's, `thelen2003.ThelenCurves`)."""
        return force_velocity(v_norm)

    def force_velocity_inverse(self, f, activation=None):
        return force_velocity_inverse(f)

    def passive_force_length(self, l_norm):
        return passive_force_length(l_norm, self.passive_strain_at_one_norm_force)

    def passive_force_length_integral(self, l_norm):
        return passive_force_length_integral(l_norm, self.passive_strain_at_one_norm_force)

    def tendon_force_length(self, lt_norm):
        return tendon_force_length(lt_norm, self.tendon_strain_at_one_norm_force)

    def tendon_force_length_integral(self, lt_norm):
        return tendon_force_length_integral(lt_norm, self.tendon_strain_at_one_norm_force)

    def tendon_force_length_inverse(self, f):
        return tendon_force_length_inverse(f, self.tendon_strain_at_one_norm_force)

    def tendon_zero_force_length(self):
        return tendon_zero_force_length(self.tendon_strain_at_one_norm_force)


jax.tree_util.register_dataclass(
    DeGrooteCurves, data_fields=[f.name for f in dataclasses.fields(DeGrooteCurves)],
    meta_fields=[])
