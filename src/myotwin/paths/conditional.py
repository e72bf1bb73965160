"""Conditional via points (OpenSim ConditionalPathPoint): path points active only while one
joint coordinate is inside a range.

A myotwin extension (MJCF sites are always part of their tendon). OpenSim 4.6
(ConditionalPathPoint::isActive, opensim-core OpenSim/Simulation/Model/ConditionalPathPoint.cpp)
makes the point part of the path iff its coordinate value q satisfies

    lo - 1e-5 <= q <= hi + 1e-5

(inclusive, with OpenSim's 1e-5 slack in the coordinate's unit, rad or m). An inactive point
is *removed* from the polyline: its neighbours are joined by a straight segment
(GeometryPath::computePath). The path length therefore jumps where a point switches; we
reproduce OpenSim (no smoothing) and the length is differentiable everywhere else.

Here a coordinate is a hinge or slide joint of the skeleton, referenced by its qpos address;
fixed points have address -1 and are always active. Shapes: n_points = all points of all
paths of an `OpenSimPathSet` (opensim_path.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.scalars import as_real_pair

#: OpenSim ConditionalPathPoint::isActive slack on both range ends (coordinate units).
RANGE_SLACK = 1e-5


def point_active(point_range: jax.Array, point_qpos, q: jax.Array) -> jax.Array:
    """(...,) bool: which path points are part of their path at configuration q (n_q,).

    point_range (..., 2): (lo, hi) of each conditional point (ignored otherwise);
    point_qpos (...,) int (NumPy, static): qpos address of the point's coordinate, -1 for a
    fixed point (always active), -2 for padding (never active)."""
    adr = np.asarray(point_qpos, dtype=np.int64)
    value = q[np.maximum(adr, 0)]
    inside = ((value >= point_range[..., 0] - RANGE_SLACK)
              & (value <= point_range[..., 1] + RANGE_SLACK))
    return jnp.where(jnp.asarray(adr == -1), True, jnp.where(jnp.asarray(adr == -2), False,
                                                             inside))


def compact(active: jax.Array, size: int) -> tuple[jax.Array, jax.Array]:
    """Indices of the active entries in order, padded with -1 to `size`, and their count.

    active (n,) bool -> (seq (size,) int32, count () int32), size >= n."""
    n = active.shape[0]
    rank = jnp.cumsum(active.astype(jnp.int32)) - 1
    target = jnp.where(active, rank, size)  # inactive entries go to a dropped slot
    seq = jnp.full((size + 1,), -1, jnp.int32).at[target].set(jnp.arange(n, dtype=jnp.int32))
    return seq[:size], jnp.sum(active.astype(jnp.int32))


def validate_range(what: str, joint: str | None, value_range) -> tuple[float, float]:
    """Check a conditional point's coordinate and range at build time (ValueError naming the
    point): a joint must be named, and the range must be two finite numbers lo <= hi."""
    if joint is None or (isinstance(joint, str) and not joint):
        raise ValueError(f"{what}: a conditional via point needs a coordinate (the name of a "
                         f"hinge or slide joint) for its range {value_range!r}")
    bounds = as_real_pair(value_range)              # not bools or strings
    if bounds is None:
        raise ValueError(f"{what}: range must be (lo, hi), got {value_range!r}")
    lo, hi = bounds
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
        raise ValueError(f"{what}: range must be finite with lo <= hi, got {value_range!r}")
    return lo, hi
