"""Wrap arcs for mass points: a wrap's tangent points with the arc/helix between them.

Type III paths of Wang et al. 2022 §3.3 with MuJoCo 4.0's wrapping (mju_wrap): the steps of
`paths.obstacle.obstacle_wrap` (geom frame, wrap plane -- `sphere_plane` through the centre and
both end points, the cross-section for a cylinder --, the 2-D wrap, the helix heights), kept
with what `obstacle_wrap` does not return: the plane axes and the signed 2-D arc, so that the
point at fraction beta of the arc can be placed (`arc_point`):
  sphere:   x = c + R (axis0 u + axis1 v),  (u, v) = t0 rotated by beta * angle in the plane;
  cylinder: the same in the cross-section, height z0 + beta (z1 - z0) (the helix is a straight
            line on the unrolled cylinder, so its height is linear in arc length).
The 2-D wrap is `wrap_derivatives.arc_2d` (the library's values, closed-form derivatives); the
tangent points, lengths and activity equal `obstacle_wrap`'s (tests/inertia).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.spatial import dot_last, mat_vec
from myotwin.inertia.anchors import PathAnchors
from myotwin.inertia.wrap_derivatives import arc_2d, sphere_plane_axes
from myotwin.paths.cylinder import cylinder_plane, helix
from myotwin.paths.safe import MINVAL, norm
from myotwin.paths.sequence import WrapType


class WrapArc(NamedTuple):
    """Per wrap (leading axis n_wraps): the wrap as `obstacle_wrap` computes it, plus its arc.

    center_world (3,), rot_world (3, 3): geom frame. axis0, axis1 (3,): in-plane axes in the
    geom frame (cylinder: local x, y). t0_plane (2,): tangent point 0 in the plane.
    angle: signed rotation (rad) from t0 to t1 about the plane normal (axis0 x axis1).
    z0, z1: tangent heights along the cylinder axis (unused for a sphere). is_cylinder (bool).
    t0_world, t1_world (3,): tangent points; length: arc/helix length; active (bool).
    """

    center_world: jax.Array
    rot_world: jax.Array
    axis0: jax.Array
    axis1: jax.Array
    t0_plane: jax.Array
    angle: jax.Array
    z0: jax.Array
    z1: jax.Array
    is_cylinder: jax.Array
    t0_world: jax.Array
    t1_world: jax.Array
    length: jax.Array
    active: jax.Array


def _rotate2(v, angle):
    c, s = jnp.cos(angle), jnp.sin(angle)
    return jnp.stack([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def wrap_arc(x0, x1, center, rot, radius, side, has_side: bool, is_cylinder: bool) -> WrapArc:
    """One wrap of segment x0-x1 (world (3,)) with its arc: the steps of `obstacle_wrap` with
    the 2-D wrap of `wrap_derivatives.arc_2d` (library values, closed-form derivatives). The
    obstacle type and the presence of a side site are static (Python bools), so only branches
    that can occur are traced."""
    rot_t = jnp.swapaxes(rot, -1, -2)
    p0, p1, s = (mat_vec(rot_t, x - center) for x in (x0, x1, side))
    away = (norm(p0) >= MINVAL) & (norm(p1) >= MINVAL)
    axis0, axis1 = cylinder_plane() if is_cylinder else sphere_plane_axes(p0, p1)

    def plane(p):
        return jnp.stack([dot_last(p, axis0), dot_last(p, axis1)])

    w = arc_2d(plane(p0), plane(p1), plane(s), norm(s) < radius, has_side, radius)
    t0 = axis0 * w.t0[0] + axis1 * w.t0[1]
    t1 = axis0 * w.t1[0] + axis1 * w.t1[1]
    if is_cylinder:
        z0, z1, length = helix(p0, p1, w.t0, w.t1, w.arc_length)
        t0, t1 = t0.at[2].set(z0), t1.at[2].set(z1)
    else:
        z0 = z1 = jnp.zeros_like(radius)
        length = w.arc_length
    return WrapArc(center, rot, axis0, axis1, w.t0, w.angle, z0, z1, jnp.asarray(is_cylinder),
                   mat_vec(rot, t0) + center, mat_vec(rot, t1) + center, length, w.wrapped & away)


def wrap_arcs(paths, anchors: PathAnchors, wraps: tuple[int, ...]) -> WrapArc:
    """`WrapArc` of the wraps `wraps` (static ids of `paths`, the order of `anchors.wrap_*`),
    stacked in that order. Wraps of one kind (cylinder or sphere, side site or not) are
    evaluated in one vmapped call."""
    x0 = anchors.site_pos_world[np.asarray(paths.unit_site0, dtype=np.int64)]
    x1 = anchors.site_pos_world[np.asarray(paths.unit_site1, dtype=np.int64)]
    unit = np.asarray(paths.wrap_unit, dtype=np.int64)
    side_id = np.asarray(paths.wrap_side_site, dtype=np.int64)
    kinds: dict[tuple[bool, bool], list[int]] = {}
    for k, w in enumerate(wraps):
        kinds.setdefault((bool(side_id[w] >= 0), paths.wrap_type[w] == WrapType.CYLINDER),
                         []).append(k)
    parts, order = [], []
    for (has_side, is_cyl), ks in kinds.items():
        ks = np.asarray(ks, dtype=np.int64)
        ws = np.asarray(wraps, dtype=np.int64)[ks]
        one = functools.partial(wrap_arc, has_side=has_side, is_cylinder=is_cyl)
        side = anchors.site_pos_world[np.maximum(side_id[ws], 0)]
        parts.append(jax.vmap(one)(x0[unit[ws]], x1[unit[ws]], anchors.wrap_center[ks],
                                   anchors.wrap_rot[ks], paths.wrap_radius[ws], side))
        order += list(ks)
    stacked = jax.tree_util.tree_map(lambda *f: jnp.concatenate(f), *parts)
    back = np.argsort(np.asarray(order))  # rows back into the order of `wraps`
    return jax.tree_util.tree_map(lambda f: f[back], stacked)


def arc_point(arc: WrapArc, beta: jax.Array) -> jax.Array:
    """(3,) world point at fraction beta of one wrap's arc/helix (fields of one wrap)."""
    xy = _rotate2(arc.t0_plane, beta * arc.angle)
    local = arc.axis0 * xy[0] + arc.axis1 * xy[1]
    local = jnp.where(arc.is_cylinder, local.at[2].set(arc.z0 + beta * (arc.z1 - arc.z0)), local)
    return mat_vec(arc.rot_world, local) + arc.center_world
