"""The 3-D steps shared by the sphere and cylinder wraps (MuJoCo 4.0 mju_wrap).

  1. End points x0, x1 and the side site into the geom frame: p = R^T (x - c). No wrap if an
     end point is within mjMINVAL of the geom origin.
  2. The wrap plane: through the centre and both end points for a sphere (`sphere.py`), the
     cross-section (local x, y) for a cylinder (`cylinder.py`); project p0, p1 and the side site.
  3. The 2-D wrap (`circle.py`): the inside wrap if there is a side site within the radius of
     the geom origin *measured in 3-D*, else the outside wrap with the side direction.
  4. Tangent points back to 3-D: axis0 t_x + axis1 t_y; for a cylinder, heights and length from
     the helix (`cylinder.helix`); then to the world frame.

`obstacle_wrap` takes the obstacle type as a (traceable) flag so that one vmapped evaluation
serves every wrap of a model: the 2-D wrap, by far the largest part, is traced once.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.engine.spatial import dot_last, mat_vec
from myotwin.paths.circle import CircleWrap, circle_wrap, wrap_2d
from myotwin.paths.cylinder import cylinder_plane, helix
from myotwin.paths.safe import MINVAL, norm, normalize_mj
from myotwin.paths.sphere import sphere_plane


class Wrap3D(NamedTuple):
    """A 3-D wrap result: tangent points (3,) in the world frame, length of the wrapped part
    (arc or helix), and whether the path touches the obstacle. When `wrapped` is False the
    path is the straight segment and the other fields are meaningless (but finite)."""

    t0_world: jax.Array
    t1_world: jax.Array
    length: jax.Array
    wrapped: jax.Array


def wrap_plane(p0, p1, is_cylinder):
    """(axis0, axis1) (3,) each: orthonormal in-plane axes of the wrap plane, obstacle frame
    (sphere: the plane through the centre and both end points; cylinder: the cross-section)."""
    sph0, sph1 = sphere_plane(p0, p1)
    cyl0, cyl1 = cylinder_plane()
    return jnp.where(is_cylinder, cyl0, sph0), jnp.where(is_cylinder, cyl1, sph1)


class PlaneWrap(NamedTuple):
    """The wrap in the obstacle frame: wrap-plane axes axis0, axis1 (3,), the 2-D end points
    d0, d1 (2,) in that plane, the 2-D result `circle` (tangent points, arc length, on/off),
    tangent points t0, t1 (3,) and wrapped length (arc or helix) as `obstacle_wrap` returns
    them (obstacle frame), `wrapped` including mju_wrap's end-point-at-centre test, and the
    obstacle type."""

    axis0: jax.Array
    axis1: jax.Array
    d0: jax.Array
    d1: jax.Array
    circle: CircleWrap
    t0: jax.Array
    t1: jax.Array
    length: jax.Array
    wrapped: jax.Array
    is_cylinder: jax.Array


def plane_wrap(p0, p1, s, radius, has_side, is_cylinder, side_outside: bool = False
               ) -> PlaneWrap:
    """The wrap of p0-p1 (obstacle frame, (3,)) with side site s (obstacle frame, used if
    has_side), computed exactly as `obstacle.obstacle_wrap` (MuJoCo 4.0 mju_wrap) but keeping
    the wrap plane and the 2-D arc. side_outside (static): the caller guarantees the side site
    is not within `radius` of the centre (or there is none), so MuJoCo's inside wrap (a Newton
    loop) cannot be chosen and is not traced; the result is the same."""
    away = (norm(p0) >= MINVAL) & (norm(p1) >= MINVAL)
    axis0, axis1 = wrap_plane(p0, p1, is_cylinder)

    def plane(p):
        return jnp.stack([dot_last(p, axis0), dot_last(p, axis1)])

    d0, d1 = plane(p0), plane(p1)
    if side_outside:
        w = circle_wrap(d0, d1, normalize_mj(plane(s))[0], has_side, radius)
    else:
        w = wrap_2d(d0, d1, plane(s), norm(s) < radius, has_side, radius)
    t0 = axis0 * w.t0[0] + axis1 * w.t0[1]
    t1 = axis0 * w.t1[0] + axis1 * w.t1[1]
    z0, z1, helix_length = helix(p0, p1, w.t0, w.t1, w.arc_length)
    # the height replaced by a concatenation, not an indexed update (a scatter: it keeps a
    # rollout's loop from being compiled whole, engine/cholesky.py)
    t0 = jnp.where(is_cylinder, jnp.concatenate([t0[:2], z0[None]]), t0)
    t1 = jnp.where(is_cylinder, jnp.concatenate([t1[:2], z1[None]]), t1)
    length = jnp.where(is_cylinder, helix_length, w.arc_length)
    return PlaneWrap(axis0, axis1, d0, d1, w, t0, t1, length, w.wrapped & away,
                     jnp.asarray(is_cylinder))


def obstacle_wrap(x0, x1, center, rot, radius, side, has_side, is_cylinder) -> Wrap3D:
    """Wrap of the segment x0-x1 (world, (3,)) around a sphere or (is_cylinder) a cylinder with
    frame (center (3,), rot (3, 3) geom-to-world) and radius; side (3,): world side-site
    position, used if has_side."""
    to_geom = jnp.swapaxes(rot, -1, -2)
    p0, p1, s = (mat_vec(to_geom, x - center) for x in (x0, x1, side))
    pw = plane_wrap(p0, p1, s, radius, has_side, is_cylinder)
    return Wrap3D(mat_vec(rot, pw.t0) + center, mat_vec(rot, pw.t1) + center, pw.length,
                  pw.wrapped)
