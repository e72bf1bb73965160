"""Cylinder wrap (Type III path of Wang et al. 2022 §3.3; MuJoCo 4.0 mju_wrap, cylinder
branch). The cylinder is infinite along its local z axis (MuJoCo ignores its half-length).

The path is a 2-D circle wrap (`circle.py`) in the cross-section plane (local x, y) and a
helix along the axis: unrolled onto the cylinder (arc length s, height z) the shortest path is
a straight line, so the heights of the tangent points interpolate linearly in s:

  L0 = |p0_xy - t0|, L1 = |p1_xy - t1|, a = arc length, L = L0 + a + L1,
  z(t0) = p0_z + (p1_z - p0_z) L0 / L,     z(t1) = p0_z + (p1_z - p0_z) (L0 + a) / L,
  helix length = sqrt(a^2 + (z(t1) - z(t0))^2).

The side site is projected on the cross-section plane too; note that MuJoCo's inside-wrap
test measures the side site's distance from the geom origin in 3-D (`obstacle.py`), so a side
site inside the cross-section but axially far from the origin counts as outside.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.paths.safe import norm, safe_div, safe_sqrt


def cylinder_plane() -> tuple[jax.Array, jax.Array]:
    """In-plane axes (local x, local y) of the cross-section plane."""
    return jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0])


def helix(p0, p1, t0_xy, t1_xy, arc):
    """Heights of the tangent points and helix length, for end points p0, p1 (3,) and 2-D
    tangent points t0_xy, t1_xy (2,) with arc length `arc` in the cross-section.
    Returns (z0, z1, helix length)."""
    len0 = norm(p0[:2] - t0_xy)
    len1 = norm(p1[:2] - t1_xy)
    total = len0 + arc + len1
    rise = p1[2] - p0[2]
    z0 = p0[2] + safe_div(rise * len0, total)
    z1 = p0[2] + safe_div(rise * (len0 + arc), total)
    height = jnp.abs(z1 - z0)
    return z0, z1, safe_sqrt(arc * arc + height * height)


def cylinder_wrap(x0, x1, center, rot, radius, side, has_side):
    """Wrap of the segment x0-x1 (world, (3,)) around the cylinder (center (3,), rot (3, 3),
    axis = rot[:, 2], radius); `side` (3,): world side-site position, used if has_side.
    Returns an `obstacle.Wrap3D`."""
    from myotwin.paths.obstacle import obstacle_wrap

    return obstacle_wrap(x0, x1, center, rot, radius, side, has_side, True)
