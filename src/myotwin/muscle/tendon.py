"""Fiber and tendon kinematics of ONE musculotendon under each tendon model (scalars; the
public, vmapped API is in `musculotendon`).

Notation: l_MT, v_MT musculotendon length and lengthening speed; l_T tendon length; l_M fiber
length; phi pennation (fixed width w); a activation (as it scales force); normalized
l~ = l_M/l_opt, l~_T = l_T/l_ts, v~ = v_M/(v_max l_opt); f~ forces / F_iso. Equilibrium
(Millard et al. 2013, Eq. 2; De Groote et al. 2016, Eq. S5):

    f~_M cos(phi) = f~_T,   f~_M = a f_L(l~) f_V(v~) + f_PE(l~) + beta v~,   f~_T = f_T(l~_T),
    l_MT = l_M cos(phi) + l_T,   v_MT = v_M / cos(phi) + v_T.

* rigid: l_T = l_ts, v_T = 0, so l_M cos(phi) = l_MT - l_ts and v_M = v_MT cos(phi). With the
  Millard 2012 curves the fiber force is no less than 0 (OpenSim's rigid-tendon
  Millard2012EquilibriumMuscle saturates it: where a shortening fiber's damping would make it
  compressive, the damping force is -(active + passive), so the tendon does not push). A
  musculotendon too short for the fiber's minimum length (l_MT - l_ts below the minimum's
  length along the tendon) is slack: the fiber at its minimum and clamped (below), l_T =
  l_MT - l_M cos(phi) < l_ts, v_T = v_MT, no force; at that minimum a shortening fiber is
  clamped too. (OpenSim's rigid Millard muscle does the same while l_MT >= l_ts; below that
  it takes the fiber as sqrt((l_MT - l_ts)^2 + w^2), as if stretched, and lets it bear force,
  which is not reproduced.)
* explicit tendon force (state f~_T, De Groote 2016 Eq. S6): l~_T = f_T^-1(f~_T),
  f~_M = f~_T / cos(phi), v~ = f_V^-1((f~_M - f_PE)/(a f_L)) (needs beta = 0, a f_L > 0),
  d f~_T/dt = f_T'(l~_T) v_T / l_ts.
* fiber length (state l_M; OpenSim's ActivationFiberLengthMuscle, e.g. Thelen2003Muscle):
  f~_T = f_T((l_MT - l_M cos phi)/l_ts), v~ = f_V^-1((f~_T / cos(phi) - f_PE)/(a f_L)) (needs
  beta = 0, a f_L > 0), d l_M/dt = v~ v_max l_opt. The same velocity law as the explicit
  tendon force, but l_MT(q) enters directly: v_MT is not needed.
* damped fiber length (state l_M, Millard 2013 Sec. 2.3): f~_T = f_T((l_MT - l_M cos phi)/l_ts),
  v~ solves a f_L f_V(v~) + beta v~ = f~_T / cos(phi) - f_PE (strictly increasing in v~ with
  slope >= beta > 0, Newton in a bracket), d l_M/dt = v~ v_max l_opt.
* the fiber's lower bound (both fiber-length models, as OpenSim's Thelen2003Muscle and
  Millard2012EquilibriumMuscle, `isFiberStateClamped`): the fiber is taken no shorter than
  `min_fiber_length_m` (clampFiberLength), and at or below it a fiber the velocity law would
  shorten is held ("clamped"): v_M = 0, f_V = 1, v_T = v_MT, no fiber force (its active,
  damping and along-tendon parts 0; the passive part 0 as Millard's, except that the
  Thelen 2003 curves report f_PE F_iso as Thelen2003Muscle does); the tendon force stays
  f_T. Fiber and tendon are then out of equilibrium, as in OpenSim.
* equilibrium (OpenSim `computeInitialFiberEquilibrium` of DeGrooteFregly2016Muscle): the
  fiber length along the tendon x in [1e-3 l_opt, l_MT - l_ts l~_T0] with zero tendon
  velocity, v~ = v_MT cos(phi)/(v_max l_opt), and R(x) = f~_M cos(phi) - f_T(l~_T) = 0,
  solved by safeguarded Newton in the bracket (OpenSim bisects on f~_T in [0, 5] to 1e-10).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.muscle import pennation
from myotwin.muscle.activation import force_activation
from myotwin.muscle.millard2012 import MillardCurves
from myotwin.muscle.model import Muscle
from myotwin.muscle.solve import bracketed_root, increasing_root

#: Iteration caps of the safeguarded Newton solves (they stop at convergence, typically after
#: 4-8 iterations; pure bisection would need ~55 to reach roundoff from these brackets).
N_ITER_VELOCITY = 60
N_ITER_EQUILIBRIUM = 80
#: Smallest fiber length along the tendon tried by the equilibrium solve, in l_opt.
MIN_ALONG_LOPT = 1e-3


class Fiber(NamedTuple):
    """Fiber state of one muscle, scalars (see module docstring for the symbols)."""

    geometry: pennation.Pennation
    fiber_velocity_m_per_s: jax.Array
    tendon_length_m: jax.Array
    norm_tendon_force: jax.Array
    activation: jax.Array
    active_force_length_multiplier: jax.Array
    force_velocity_multiplier: jax.Array
    passive_force_multiplier: jax.Array
    norm_fiber_velocity: jax.Array
    clamped: jax.Array


def _width(m: Muscle):
    return pennation.fiber_width(m.optimal_fiber_length_m, m.pennation_at_optimal_rad)


def _velocity_unit(m: Muscle):
    return m.max_contraction_velocity_Lopt_per_s * m.optimal_fiber_length_m


def _multipliers(m: Muscle, geo: pennation.Pennation):
    l_norm = geo.fiber_length_m / m.optimal_fiber_length_m
    return m.curves.active_force_length(l_norm), m.curves.passive_force_length(l_norm)


def rigid(m: Muscle, activation, mt_length, mt_speed) -> Fiber:
    """Rigid tendon: the fiber follows the musculotendon, no shorter than its minimum (module
    docstring)."""
    a = force_activation(m.activation, activation)
    w = _width(m)
    raw = mt_length - m.tendon_slack_length_m              # the fiber's length along the tendon
    gap = m.min_fiber_length_m ** 2 - w ** 2          # (a safe root: 0 for unpennated muscles)
    shortest = jnp.where(gap > 0.0, jnp.sqrt(jnp.where(gap > 0.0, gap, 1.0)), 0.0)
    geo = pennation.from_fiber_length_along_tendon(jnp.maximum(raw, shortest), w)
    v_m = pennation.fiber_velocity_from_along(mt_speed, geo)
    clamped = (raw < shortest) | ((raw <= shortest) & (v_m <= 0.0))
    v_m = jnp.where(clamped, 0.0, v_m)
    v_norm = v_m / _velocity_unit(m)
    f_l, f_pe = _multipliers(m, geo)
    f_v = jnp.where(clamped, 1.0, m.curves.force_velocity(v_norm, a))
    f_m = a * f_l * f_v + f_pe + m.fiber_damping * v_norm
    if isinstance(m.curves, MillardCurves):
        f_m = jnp.maximum(f_m, 0.0)
    f_m = jnp.where(clamped, 0.0, f_m)
    return Fiber(geo, v_m, mt_length - geo.fiber_length_along_tendon_m, f_m * geo.cos_pennation,
                 a, f_l, f_v, f_pe, v_norm, clamped)


def explicit_force(m: Muscle, activation, mt_length, mt_speed, norm_tendon_force) -> Fiber:
    """Explicit tendon-force state (De Groote 2016); fiber_damping must be 0."""
    a = force_activation(m.activation, activation)
    lt_norm = m.curves.tendon_force_length_inverse(norm_tendon_force)
    l_t = m.tendon_slack_length_m * lt_norm
    geo = pennation.from_fiber_length_along_tendon(mt_length - l_t, _width(m))
    f_l, f_pe = _multipliers(m, geo)
    f_v = (norm_tendon_force / geo.cos_pennation - f_pe) / (a * f_l)
    v_norm = m.curves.force_velocity_inverse(f_v, a)
    v_m = v_norm * _velocity_unit(m)
    return Fiber(geo, v_m, l_t, norm_tendon_force, a, f_l, f_v, f_pe, v_norm,
                 jnp.zeros_like(v_norm, dtype=bool))


def _at_lower_bound(m: Muscle, state_m, v_norm, f_v):
    """(v~, f_V, clamped) with OpenSim's clamp of a shortening fiber at its lower bound."""
    clamped = (state_m <= m.min_fiber_length_m) & (v_norm <= 0.0)
    return (jnp.where(clamped, 0.0, v_norm), jnp.where(clamped, 1.0, f_v), clamped)


def _bounded_geometry(m: Muscle, state_m):
    return pennation.from_fiber_length(jnp.maximum(state_m, m.min_fiber_length_m), _width(m))


def fiber_length(m: Muscle, activation, mt_length, mt_speed, fiber_length_m) -> Fiber:
    """Undamped fiber-length state (OpenSim's Thelen2003Muscle); fiber_damping must be 0.
    mt_speed is not used: the tendon follows l_MT - l_M cos(phi). The fiber's lower bound as
    in the module docstring."""
    a = force_activation(m.activation, activation)
    geo = _bounded_geometry(m, fiber_length_m)
    l_t = mt_length - geo.fiber_length_along_tendon_m
    f_t = m.curves.tendon_force_length(l_t / m.tendon_slack_length_m)
    f_l, f_pe = _multipliers(m, geo)
    f_v = (f_t / geo.cos_pennation - f_pe) / (a * f_l)
    v_norm, f_v, clamped = _at_lower_bound(m, fiber_length_m,
                                           m.curves.force_velocity_inverse(f_v, a), f_v)
    return Fiber(geo, v_norm * _velocity_unit(m), l_t, f_t, a, f_l, f_v, f_pe, v_norm, clamped)


def damped_fiber_length(m: Muscle, activation, mt_length, mt_speed, fiber_length) -> Fiber:
    """Damped equilibrium model with the fiber length as state (Millard 2013); beta > 0. The
    fiber's lower bound as in the module docstring."""
    a = force_activation(m.activation, activation)
    geo = _bounded_geometry(m, fiber_length)
    l_t = mt_length - geo.fiber_length_along_tendon_m
    f_t = m.curves.tendon_force_length(l_t / m.tendon_slack_length_m)
    f_l, f_pe = _multipliers(m, geo)
    target = f_t / geo.cos_pennation - f_pe

    def residual(v):
        return a * f_l * m.curves.force_velocity(v, a) + m.fiber_damping * v - target

    v_norm, _ = increasing_root(residual, jnp.zeros_like(target), m.fiber_damping,
                                N_ITER_VELOCITY)
    v_norm, f_v, clamped = _at_lower_bound(m, fiber_length, v_norm,
                                           m.curves.force_velocity(v_norm, a))
    return Fiber(geo, v_norm * _velocity_unit(m), l_t, f_t, a, f_l, f_v, f_pe, v_norm, clamped)


def equilibrium_along(m: Muscle, activation, mt_length, mt_speed):
    """(fiber length along the tendon (m), residual f~_M cos(phi) - f~_T) at equilibrium with
    zero tendon velocity (see module docstring). Differentiable by the implicit-function
    theorem."""
    a = force_activation(m.activation, activation)
    w = _width(m)
    l_t0 = m.tendon_slack_length_m * m.curves.tendon_zero_force_length()

    def residual(x):
        geo = pennation.from_fiber_length_along_tendon(x, w)
        v_norm = pennation.fiber_velocity_from_along(mt_speed, geo) / _velocity_unit(m)
        f_l, f_pe = _multipliers(m, geo)
        f_m = a * f_l * m.curves.force_velocity(v_norm, a) + f_pe + m.fiber_damping * v_norm
        f_t = m.curves.tendon_force_length((mt_length - x) / m.tendon_slack_length_m)
        return f_m * geo.cos_pennation - f_t

    lo = MIN_ALONG_LOPT * m.optimal_fiber_length_m
    hi = jnp.maximum(mt_length - l_t0, lo)
    return bracketed_root(residual, lo, hi, 0.5 * (lo + hi), N_ITER_EQUILIBRIUM)
