"""The point at a fraction of the path length along a single-obstacle path (Type III paths of
Wang et al. 2022 §3.3): the "wrapping library" position x_alpha that the seed's neural network
is trained on (seed Eq. 19) and that the library variant of the mass-point model uses.

A path from the origin x0 to the insertion x1 wrapping one sphere or cylinder (MuJoCo 4.0
semantics: `obstacle.py`, `circle.py`) runs

    x0 --straight--> t0 --arc or helix--> t1 --straight--> x1          (wrapped)
    x0 --straight--> x1                                                 (not wrapped)

with lengths L0 = |t0 - x0|, l (the wrapped part), L1 = |x1 - t1|, total L = L0 + l + L1.
The point at fraction alpha in [0, 1] is the point at arc-length s = alpha L from x0:

    s <= L0:           x0 + (s / L0) (t0 - x0)
    L - s <= L1:       x1 + ((L - s) / L1) (t1 - x1)     (L - s = (1 - alpha) L, from the end)
    otherwise:         the wrapped part at f = (s - L0) / l

The wrapped part, in the wrap plane (axes axis0, axis1 through the obstacle centre), is the
circular arc from t0 rotated by the angle sense * f * a / r (a = 2-D arc length, r = radius):
  * sphere: the arc of the great circle in the plane through the centre and both end points;
  * cylinder: the cross-section arc, with the height rising linearly in f from z(t0) to z(t1):
    a helix, the geodesic of the cylinder (unrolled, the whole path is a straight line).
The sense of rotation is the one that continues the incoming straight piece without a kink:
counter-clockwise iff cross(d0, t0) > 0 (d0, t0 the 2-D origin and tangent point; the tangent
line d0 -> t0 is orthogonal to t0), and equivalently cross(t1, d1) > 0 at the exit; the sum of
both is used so that an end point lying on the circle (one of them 0) still decides.

Consequences used as closed-form checks (tests/paths/test_arc.py): for the cylinder the
height is linear in the xy-path length, so the 3-D fraction equals the xy fraction and
z(x_alpha) = z0 + alpha (z1 - z0) exactly; l / L = a / L_xy; the point is continuous in alpha
and, at wrap on/off (where l -> 0 and t0 = t1 lies on the segment), continuous in the end
points. Its derivative w.r.t. the end points jumps at wrap on/off: the seed's "Jacobian
discontinuity" (§3.3, Fig. 4) that the network of `myotwin.inertia.wrap_network` smooths.

The wrap itself (tangent points, arc, on/off) is computed by the same functions as
`obstacle.obstacle_wrap` and agrees with it to roundoff (tested, 1e-13); this module only adds
the wrap plane's axes and the 2-D arc needed to place points on the wrapped part.
All functions are single-path pure JAX (`path_points_local` takes several alphas; vmap over
paths); float64 expected.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.paths.obstacle import PlaneWrap, plane_wrap  # noqa: F401 (part of this API)
from myotwin.paths.safe import cross2, norm, safe_div


class PathPoint(NamedTuple):
    """The point at fraction alpha of a single-obstacle path.

    x_alpha (3,): position, in the frame of the inputs (world for `path_point`, the obstacle
      frame for `path_point_local`), m.
    wrap_length: l, length of the wrapped part (arc or helix; 0 when not wrapped), m.
    total_length: L, length of the whole path x0 -> x1, m.
    wrapped: whether the path touches the obstacle (MuJoCo's wrap on/off; an inside wrap
      touches at one point, l = 0).
    """

    x_alpha: jax.Array
    wrap_length: jax.Array
    total_length: jax.Array
    wrapped: jax.Array


def arc_sense(d0, t0, t1, d1) -> jax.Array:
    """+1 if the wrapped arc runs counter-clockwise from t0 to t1 in the wrap plane, else -1:
    the sense that continues the straight piece d0 -> t0 (and precedes t1 -> d1) smoothly."""
    return jnp.where(cross2(d0, t0) + cross2(t1, d1) >= 0.0, 1.0, -1.0)


def wrapped_point(pw: PlaneWrap, radius, fraction) -> jax.Array:
    """(3,) obstacle-frame point at `fraction` in [0, 1] of the wrapped part (arc or helix)
    of the wrap `pw`: t0 rotated in the wrap plane by sense * fraction * a / r (a the 2-D arc
    length); for the cylinder the height goes linearly from z(t0) to z(t1)."""
    w = pw.circle
    angle = arc_sense(pw.d0, w.t0, w.t1, pw.d1) * fraction * safe_div(w.arc_length, radius)
    c, s = jnp.cos(angle), jnp.sin(angle)
    u = jnp.stack([c * w.t0[0] - s * w.t0[1], s * w.t0[0] + c * w.t0[1]])
    point = pw.axis0 * u[0] + pw.axis1 * u[1]
    height = pw.t0[2] + fraction * (pw.t1[2] - pw.t0[2])
    return jnp.where(pw.is_cylinder, point.at[2].set(height), point)


def _lengths(p0, p1, pw: PlaneWrap) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """(L0, L1, l, L): straight pieces of the wrapped path, and the wrapped and total lengths
    of the actual path (l = 0 and L = |p1 - p0| when not wrapped)."""
    len0 = norm(pw.t0 - p0)
    len1 = norm(p1 - pw.t1)
    wrap_length = jnp.where(pw.wrapped, pw.length, 0.0)
    total = jnp.where(pw.wrapped, len0 + pw.length + len1, norm(p1 - p0))
    return len0, len1, wrap_length, total


def _unit(f: jax.Array) -> jax.Array:
    """f clipped to [0, 1] with derivative 1 on the closed interval (jnp.clip's is 1/2 at the
    ends), so that the selected piece is differentiated exactly at alpha = 0, 1 and at the
    piece ends; the clip only keeps the pieces not selected finite."""
    return jnp.where(f < 0.0, 0.0, jnp.where(f > 1.0, 1.0, f))


def _point(p0, p1, pw: PlaneWrap, radius, alpha, len0, len1) -> jax.Array:
    """(3,) obstacle-frame point at fraction alpha; see the module docstring."""
    total = len0 + pw.length + len1
    s, rest = alpha * total, (1.0 - alpha) * total        # from the origin, to the insertion
    in0 = p0 + _unit(safe_div(s, len0)) * (pw.t0 - p0)
    on_arc = wrapped_point(pw, radius, _unit(safe_div(s - len0, pw.length)))
    in1 = p1 + _unit(safe_div(rest, len1)) * (pw.t1 - p1)
    x_wrapped = jnp.where(s <= len0, in0, jnp.where(rest <= len1, in1, on_arc))
    return jnp.where(pw.wrapped, x_wrapped, p0 + alpha * (p1 - p0))


def path_point_local(p0, p1, radius, side, has_side, is_cylinder, alpha,
                     side_outside: bool = False) -> PathPoint:
    """Point at fraction alpha of the path p0 -> obstacle -> p1, all in the obstacle frame
    (centre at the origin, cylinder axis = local z).

    p0, p1 (3,): origin and insertion (m); radius (m); side (3,): side-site position (used if
    has_side); is_cylinder: cylinder (True) or sphere; alpha: fraction of the path length in
    [0, 1] (not checked: this runs under jit; values outside extrapolate along the end pieces);
    side_outside: see `plane_wrap`.
    """
    pw = plane_wrap(p0, p1, side, radius, has_side, is_cylinder, side_outside)
    len0, len1, wrap_length, total = _lengths(p0, p1, pw)
    x = _point(p0, p1, pw, radius, alpha, len0, len1)
    return PathPoint(x, wrap_length, total, pw.wrapped)


def path_points_local(p0, p1, radius, side, has_side, is_cylinder, alphas,
                      side_outside: bool = False) -> PathPoint:
    """`path_point_local` at several fractions alphas (m,) of one path: the wrap is computed
    once; x_alpha is (m, 3), the other fields are scalars."""
    pw = plane_wrap(p0, p1, side, radius, has_side, is_cylinder, side_outside)
    len0, len1, wrap_length, total = _lengths(p0, p1, pw)
    x = jax.vmap(lambda a: _point(p0, p1, pw, radius, a, len0, len1))(alphas)
    return PathPoint(x, wrap_length, total, pw.wrapped)


def path_point(x0, x1, center, rot, radius, side, has_side, is_cylinder, alpha) -> PathPoint:
    """Point at fraction alpha of the path x0 -> obstacle -> x1 in the world frame: the
    arguments of `obstacle.obstacle_wrap` (x0, x1, center, side (3,) world; rot (3, 3)
    obstacle-to-world, cylinder axis = rot[:, 2]) plus alpha. x_alpha is returned in world."""
    p0, p1, s = (rot.T @ (x - center) for x in (x0, x1, side))
    local = path_point_local(p0, p1, radius, s, has_side, is_cylinder, alpha)
    return local._replace(x_alpha=rot @ local.x_alpha + center)
