"""Position stage of the paths: end points, wrap tangent points, unit and path lengths.

Path length (MuJoCo 4.0 mj_tendon; Wang et al. 2022 §3.1-3.3 for the path types):
  L = sum over units of l_unit / divisor,
  l_unit = |x1 - x0|                                  straight unit or inactive wrap,
  l_unit = |t0 - x0| + l_wrap + |x1 - t1|             active wrap (arc or helix length l_wrap),
with x0, x1 the unit's site positions and t0, t1 the tangent points (`sphere.py`,
`cylinder.py`, `obstacle.py`). Every wrap is evaluated (one vmapped evaluation over all
wraps) and the active/inactive result chosen with `where`, so lengths are differentiable
everywhere except where the geometry switches (wrap on/off, side-site switch).

Inputs are the skeleton `engine.Model` and its configuration q (n_q,) in MuJoCo's qpos layout;
`path_geometry` takes an `engine.Kinematics` so that one position stage feeds several outputs.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.rows import masked_sum, take
from myotwin.engine.spatial import quat_mul, quat_rotate, quat_to_mat
from myotwin.paths.obstacle import obstacle_wrap
from myotwin.paths.pathset import PathSet, check_model
from myotwin.paths.sequence import WrapType
from myotwin.paths.straight import segment_length


class PathGeometry(NamedTuple):
    """Output of the path position stage (world frame, metres).

    unit_start_world, unit_end_world (n_units, 3): site positions x0, x1 of each unit.
    wrap_tangent0_world, wrap_tangent1_world (n_wraps, 3): tangent points (meaningful where
      wrap_active; equal for an inside wrap).
    wrap_length (n_wraps,): arc (sphere) or helix (cylinder) length of the wrapped part.
    wrap_active (n_wraps,) bool: whether the path touches the obstacle.
    unit_length (n_units,): length of each unit before its pulley divisor.
    path_length (n_paths,): musculotendon path lengths (MuJoCo ten_length).
    """

    unit_start_world: jax.Array
    unit_end_world: jax.Array
    wrap_tangent0_world: jax.Array
    wrap_tangent1_world: jax.Array
    wrap_length: jax.Array
    wrap_active: jax.Array
    unit_length: jax.Array
    path_length: jax.Array


class PathPoints(NamedTuple):
    """World points of every path in MuJoCo's wrap_xpos order, without pulley markers: for
    each branch, each unit's start site, its two tangent points if it has a wrap, and the
    branch's last site.

    pos_world (n_paths, n_points_max, 3); valid (n_paths, n_points_max) bool: False for padding
    and for the tangent points of inactive wraps; branch (n_paths, n_points_max) int: pulley
    branch of each point (-1 for padding), so that a polyline is drawn per branch (a constant
    of the PathSet; a NumPy array, or a jax.Array when returned from a jitted function).
    """

    pos_world: jax.Array
    valid: jax.Array
    branch: np.ndarray | jax.Array


def wrap_frames(paths: PathSet, kin: Kinematics) -> tuple[jax.Array, jax.Array]:
    """World position (n_wraps, 3) and rotation (n_wraps, 3, 3) of every wrap geom
    (MuJoCo geom_xpos, geom_xmat)."""
    body = jnp.asarray(paths.wrap_body, dtype=jnp.int32)
    pos = kin.body_pos_world[body] + quat_rotate(kin.body_quat_world[body], paths.wrap_pos)
    rot = quat_to_mat(quat_mul(kin.body_quat_world[body], paths.wrap_quat))
    return pos, rot


def _wraps(paths: PathSet, kin: Kinematics, x0: jax.Array, x1: jax.Array):
    """Tangent points, wrap lengths and activity of every wrap (one vmapped evaluation)."""
    center, rot = wrap_frames(paths, kin)
    unit = np.asarray(paths.wrap_unit, dtype=np.int64)
    side_id = np.asarray(paths.wrap_side_site, dtype=np.int64)
    side = take(kin.site_pos_world, np.maximum(side_id, 0))
    has_side = jnp.asarray(side_id >= 0)
    is_cylinder = jnp.asarray(np.asarray(paths.wrap_type) == WrapType.CYLINDER)
    return jax.vmap(obstacle_wrap)(take(x0, unit), take(x1, unit), center, rot,
                                   paths.wrap_radius, side, has_side, is_cylinder)


def path_geometry(paths: PathSet, model, kin: Kinematics) -> PathGeometry:
    """Position stage of all paths from the skeleton's kinematics (see module docstring)."""
    check_model(paths, model)
    x0 = take(kin.site_pos_world, paths.unit_site0)
    x1 = take(kin.site_pos_world, paths.unit_site1)
    unit_len = segment_length(x0, x1)
    if paths.n_wraps:
        t0, t1, wlen, active = _wraps(paths, kin, x0, x1)
        u = np.asarray(paths.wrap_unit, dtype=np.int64).reshape(-1)
        wrapped = segment_length(take(x0, u), t0) + wlen + segment_length(t1, take(x1, u))
        # each wrapped unit's length picked by a static gather, not an indexed update (a
        # scatter keeps a rollout's loop from being compiled whole, engine/cholesky.py)
        source = np.arange(paths.n_units)
        source[u] = paths.n_units + np.arange(u.size)
        unit_len = take(jnp.concatenate([unit_len, jnp.where(active, wrapped, take(unit_len, u))]),
                        source)
    else:
        t0 = t1 = jnp.zeros((0, 3), x0.dtype)
        wlen, active = jnp.zeros((0,), x0.dtype), jnp.zeros((0,), bool)
    on_path = np.arange(paths.n_paths)[:, None] == np.asarray(paths.unit_path)[None, :]
    total = masked_sum(on_path, unit_len / paths.unit_divisor)
    return PathGeometry(x0, x1, t0, t1, wlen, active, unit_len, total)


def muscle_lengths(paths: PathSet, model, q: jax.Array) -> jax.Array:
    """(n_paths,) musculotendon path lengths (m) at configuration q (n_q,) (MuJoCo ten_length)."""
    return path_geometry(paths, model, kinematics(model, q)).path_length


def _point_layout(paths: PathSet):
    """Static gather table for `path_points`: per path, (source, index, branch) triples, where
    source 0/1 = unit start/end site and 2/3 = wrap tangent 0/1."""
    rows = [[] for _ in range(paths.n_paths)]
    for u in range(paths.n_units):
        p, b, w = paths.unit_path[u], paths.unit_branch[u], paths.unit_wrap[u]
        rows[p].append((0, u, b))
        if w >= 0:
            rows[p] += [(2, w, b), (3, w, b)]
        nxt = (paths.unit_path[u + 1], paths.unit_branch[u + 1]) if u + 1 < paths.n_units else None
        if nxt != (p, b):  # last unit of its branch: add the branch's end site
            rows[p].append((1, u, b))
    return rows


def path_points_from_geometry(paths: PathSet, geo: PathGeometry) -> PathPoints:
    """`PathPoints` from a computed `PathGeometry`."""
    rows = _point_layout(paths)
    n_max = max([len(r) for r in rows] + [1])
    offsets = np.cumsum([0, paths.n_units, paths.n_units, paths.n_wraps])
    table = jnp.concatenate([geo.unit_start_world, geo.unit_end_world,
                             geo.wrap_tangent0_world, geo.wrap_tangent1_world])
    valid_src = jnp.concatenate([jnp.ones(2 * paths.n_units, bool), geo.wrap_active,
                                 geo.wrap_active])
    index = np.zeros((paths.n_paths, n_max), dtype=np.int64)
    padded = np.zeros((paths.n_paths, n_max), dtype=bool)
    branch = np.full((paths.n_paths, n_max), -1, dtype=np.int64)
    for p, row in enumerate(rows):
        for k, (src, i, b) in enumerate(row):
            index[p, k], padded[p, k], branch[p, k] = offsets[src] + i, True, b
    if table.shape[0] == 0:
        return PathPoints(jnp.zeros((paths.n_paths, n_max, 3)), jnp.asarray(padded), branch)
    return PathPoints(table[index], valid_src[index] & padded, branch)


def path_points(paths: PathSet, model, q: jax.Array) -> PathPoints:
    """World points of every path, tangent points included, with a validity mask."""
    return path_points_from_geometry(paths, path_geometry(paths, model, kinematics(model, q)))
