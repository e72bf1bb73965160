"""Sphere wrap (Type III path of Wang et al. 2022 §3.3; MuJoCo 4.0 mju_wrap, sphere branch).

The shortest path from x0 to x1 around a sphere lies in the plane through the centre and both
end points, so the 3-D problem becomes the 2-D circle wrap of `circle.py` in that plane. With
p0, p1 the end points in the geom frame:

  axis0 = p0 / |p0|;  normal = (p0 x p1) / |p0 x p1|; if p0, p1 are parallel
  (|p0 x p1| < mjMINVAL) MuJoCo uses normal = normalise(axis0 x e), where e is (1, 1, 1) with
  a 0 at the largest |component| of axis0 (ties: the earlier component);
  axis1 = normalise(normal x axis0).

End points and side site are projected on (axis0, axis1); tangent points come back as
axis0 t_x + axis1 t_y; the wrap length is the arc length. The shared 3-D steps (geom frame,
side-site test, world frame) are in `obstacle.py`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.paths.safe import MINVAL, normalize_mj


def _fallback_normal(axis0: jax.Array) -> jax.Array:
    """MuJoCo's plane normal when p0 and p1 are parallel."""
    a = jnp.abs(axis0)
    pick1 = (a[1] > a[0]) & (a[1] > a[2])
    pick2 = (a[2] > a[0]) & (a[2] > a[1])
    e = jnp.where(pick2, jnp.array([1.0, 1.0, 0.0]),
                  jnp.where(pick1, jnp.array([1.0, 0.0, 1.0]), jnp.array([0.0, 1.0, 1.0])))
    n, _ = normalize_mj(jnp.cross(axis0, e))
    return n


def sphere_plane(p0: jax.Array, p1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """In-plane axes (axis0, axis1), each (3,) in the geom frame, of the wrap plane through the
    sphere's centre and the end points p0, p1 (geom frame)."""
    axis0, _ = normalize_mj(p0)
    normal_raw, n_len = normalize_mj(jnp.cross(p0, p1))
    normal = jnp.where(n_len < MINVAL, _fallback_normal(axis0), normal_raw)
    axis1, _ = normalize_mj(jnp.cross(normal, axis0))
    return axis0, axis1


def sphere_wrap(x0, x1, center, rot, radius, side, has_side):
    """Wrap of the segment x0-x1 (world, (3,)) around the sphere (center (3,), rot (3, 3)
    geom-to-world, radius); `side` (3,): world side-site position, used if has_side.
    Returns an `obstacle.Wrap3D`."""
    from myotwin.paths.obstacle import obstacle_wrap

    return obstacle_wrap(x0, x1, center, rot, radius, side, has_side, False)
