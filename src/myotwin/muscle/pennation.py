"""Fixed-width (constant-thickness) pennation model.

The muscle keeps a constant width w = l_opt sin(phi_opt) perpendicular to the tendon while the
fiber (length l_M) rotates (Millard et al. 2013, J Biomech Eng 135:021005, Sec. 2.1 / Fig. 2;
OpenSim `MuscleFixedWidthPennationModel`):

    l_M sin(phi) = w,      l_M cos(phi) = l_along (fiber length along the tendon),
    l_M^2 = l_along^2 + w^2.

Differentiating w = const in time: v_M sin(phi) + l_M cos(phi) phi_dot = 0, so

    phi_dot = -v_M tan(phi) / l_M,         v_along = d(l_M cos phi)/dt = v_M / cos(phi).

The geometry is not clamped at OpenSim's maximum pennation (acos 0.1): callers keep
l_along > 0 (the fiber-length tendon models hold the fiber at that bound, `tendon`).
All functions are elementwise (shapes (n_muscles,) or anything broadcastable).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Pennation(NamedTuple):
    """Fiber geometry, each entry elementwise: fiber_length_m, fiber_length_along_tendon_m,
    sin_pennation, cos_pennation, pennation_rad."""

    fiber_length_m: jax.Array
    fiber_length_along_tendon_m: jax.Array
    sin_pennation: jax.Array
    cos_pennation: jax.Array
    pennation_rad: jax.Array


def fiber_width(optimal_fiber_length_m, pennation_at_optimal_rad) -> jax.Array:
    """Constant fiber width w = l_opt sin(phi_opt) (m)."""
    return optimal_fiber_length_m * jnp.sin(pennation_at_optimal_rad)


def from_fiber_length(fiber_length_m, width_m) -> Pennation:
    """Geometry from the fiber length l_M (must exceed the width; l_M = 0 is taken as an
    unpennated fiber of zero length, phi = 0, as OpenSim's pennation model takes it)."""
    along = jnp.sqrt(fiber_length_m ** 2 - width_m ** 2)
    some = fiber_length_m > 0.0
    length = jnp.where(some, fiber_length_m, 1.0)
    return Pennation(fiber_length_m, along, jnp.where(some, width_m / length, 0.0),
                     jnp.where(some, along / length, 1.0), jnp.arctan2(width_m, along))


def from_fiber_length_along_tendon(along_m, width_m) -> Pennation:
    """Geometry from the fiber length along the tendon l_along (> 0 for phi < 90 deg; an
    unpennated fiber of zero length, l_along = w = 0, is taken as phi = 0, as
    `from_fiber_length` takes it, with finite derivatives)."""
    squared = along_m ** 2 + width_m ** 2
    some = squared > 0.0
    length = jnp.where(some, jnp.sqrt(jnp.where(some, squared, 1.0)), 0.0)
    safe = jnp.where(some, length, 1.0)
    return Pennation(length, along_m, jnp.where(some, width_m / safe, 0.0),
                     jnp.where(some, along_m / safe, 1.0),
                     jnp.where(some, jnp.arctan2(jnp.where(some, width_m, 0.0),
                                                 jnp.where(some, along_m, 1.0)), 0.0))


def fiber_velocity_along_tendon(fiber_velocity, geometry: Pennation) -> jax.Array:
    """v_along = v_M / cos(phi) (m/s)."""
    return fiber_velocity / geometry.cos_pennation


def fiber_velocity_from_along(velocity_along, geometry: Pennation) -> jax.Array:
    """v_M = v_along cos(phi) (m/s)."""
    return velocity_along * geometry.cos_pennation


def pennation_angular_velocity(fiber_velocity, geometry: Pennation) -> jax.Array:
    """phi_dot = -v_M tan(phi) / l_M (rad/s)."""
    return (-fiber_velocity * geometry.sin_pennation
            / (geometry.cos_pennation * geometry.fiber_length_m))
