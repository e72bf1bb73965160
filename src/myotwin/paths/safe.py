"""Guarded elementary functions for path geometry: MuJoCo's values, finite gradients.

Every wrap computes both of its alternatives (wrapped / straight, inside / outside side site)
and selects one with `jnp.where`. Reverse-mode autodiff multiplies the derivative of the
branch that was *not* selected by a zero cotangent, and inf * 0 = NaN, so every function here
must have a finite derivative for every input, including the degenerate ones (zero vectors,
|x| = 1 in acos/asin). The "double where" pattern does that: the unsafe argument is replaced by
a harmless one before the unsafe function sees it.

A NaN argument gives NaN, as the unguarded function does: each guard tests for the unsafe
case (x <= 0, |x| >= 1), a test that NaN fails, so NaN goes through the computing branch.
Guards that test for the safe case instead (x > 0) sent NaN to the fallback value, and a
NaN configuration gave lengths of 0 m.

Values are MuJoCo's where MuJoCo defines them (engine_util_blas.c): mju_normalize{2,3} return
(1, 0[, 0]) for a vector shorter than mjMINVAL, and the caller's tests use mjMINVAL = 1e-15.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

#: MuJoCo's mjMINVAL (mjtype.h): the smallest value in any denominator.
MINVAL = 1e-15


def safe_sqrt(x: jax.Array) -> jax.Array:
    """sqrt(x) for x > 0, 0 for x <= 0, NaN for NaN; the derivative is 0 (not inf) at
    x <= 0."""
    nonpositive = x <= 0.0
    return jnp.where(nonpositive, 0.0, jnp.sqrt(jnp.where(nonpositive, 1.0, x)))


def norm(v: jax.Array) -> jax.Array:
    """Euclidean norm over the last axis (mju_norm / mju_norm3), finite gradient at 0."""
    return safe_sqrt(jnp.sum(v * v, axis=-1))


def safe_div(num: jax.Array, den: jax.Array) -> jax.Array:
    """num / den where den != 0, else 0 (the caller masks that case out)."""
    ok = den != 0.0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def normalize_mj(v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(v / |v|, |v|) over the last axis; (1, 0, ...) when |v| < mjMINVAL (mju_normalize)."""
    n = norm(v)
    small = n < MINVAL
    fallback = np.eye(v.shape[-1], dtype=np.float64)[0]  # (1, 0, ...), broadcast
    unit = v / jnp.where(small, 1.0, n)[..., None]
    return jnp.where(small[..., None], fallback, unit), n


def safe_acos(x: jax.Array) -> jax.Array:
    """acos(clip(x, -1, 1)); derivative 0 at |x| >= 1 (where acos' is infinite); NaN for
    NaN."""
    edge = jnp.abs(x) >= 1.0
    edge_value = jnp.where(x > 0.0, 0.0, jnp.pi)
    return jnp.where(edge, edge_value, jnp.arccos(jnp.where(edge, 0.0, x)))


def safe_asin(x: jax.Array) -> jax.Array:
    """asin(clip(x, -1, 1)); derivative 0 at |x| >= 1 (where asin' is infinite); NaN for
    NaN."""
    edge = jnp.abs(x) >= 1.0
    edge_value = jnp.where(x > 0.0, 0.5 * jnp.pi, -0.5 * jnp.pi)
    return jnp.where(edge, edge_value, jnp.arcsin(jnp.where(edge, 0.0, x)))


def cross2(a: jax.Array, b: jax.Array) -> jax.Array:
    """z component of the 2-D cross product a x b, over the last axis."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def safe_atan2(y: jax.Array, x: jax.Array) -> jax.Array:
    """atan2(y, x) with a finite derivative at (0, 0) (where it is undefined; value 0); NaN
    if y or x is NaN."""
    origin = x * x + y * y <= 1e-300
    return jnp.where(origin, 0.0,
                     jnp.arctan2(jnp.where(origin, 0.0, y), jnp.where(origin, 1.0, x)))
