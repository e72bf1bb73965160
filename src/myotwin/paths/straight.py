"""Straight segment between two points (Type I path of Wang et al. 2022 §3.1).

Length l = |x1 - x0| and unit direction u = (x1 - x0) / l, the direction along which the
tension acts and with which a segment's length Jacobian is formed:
  dl/dt = u . (v1 - v0),   J_l = u^T (J_x1 - J_x0)   (seed Eq. 8-9 chained to J_mr).
The direction follows MuJoCo's mju_normalize3: (1, 0, 0) for a segment shorter than mjMINVAL
(MuJoCo mj_tendon uses it as is; the length Jacobian of a zero-length segment is undefined).
"""

from __future__ import annotations

import jax

from myotwin.paths.safe import norm, normalize_mj


def segment_length(x0: jax.Array, x1: jax.Array) -> jax.Array:
    """(...,) length of segments from x0 to x1, each (..., 3) (mju_dist3); finite gradient."""
    return norm(x1 - x0)


def segment_direction(x0: jax.Array, x1: jax.Array) -> jax.Array:
    """(..., 3) unit direction from x0 to x1 (MuJoCo's fallback (1, 0, 0) below mjMINVAL)."""
    unit, _ = normalize_mj(x1 - x0)
    return unit
