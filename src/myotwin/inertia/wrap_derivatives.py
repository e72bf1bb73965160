"""The 2-D wrap with library values and closed-form derivatives (for mass points on wraps).

Mass points are differentiated twice (J and Jdot qd, `dynamics.py`). Differentiating MuJoCo's
2-D wrap (`paths.circle.wrap_2d`) as written -- both tangent solutions, their scores, the
segment-crossing tests, the inside-wrap Newton loop, all selected with `where` -- puts every
branch into the second-order graph, and the XLA compile time of one dynamics step grew to a
minute. The wrap is piecewise smooth: its discrete decisions (wrapped or not, inside or outside
regime, which tangent solution, the short or the long way round) are locally constant, and
within one branch the tangent points have closed forms. So:

  * the library wrap (`wrap_2d`, or `circle_wrap` when the obstacle has no side site) runs on
    values only (`lax.stop_gradient` inputs): its outputs are MuJoCo's values and decisions;
  * the branch it took is re-evaluated in closed form, differentiably:
      outside: t0 = (d0 r^2 + sgn r R d0 sqrt(|d0|^2 - r^2)) / |d0|^2,
               t1 = (d1 r^2 - sgn r R d1 sqrt(|d1|^2 - r^2)) / |d1|^2   (circle.py, same formula)
               with sgn the solution the library chose, and the arc rotation
               phi = atan2(t0 x t1, t0 . t1), minus 2 pi sign(phi) when the arc runs the long way;
      inside (a side site within the radius): the contact point p = r (cos psi, sin psi) makes
               |p - d0| + |p - d1| stationary, g(psi) = 0. MuJoCo's Newton solves the same
               condition in another variable only to |f| <= 1e-6, and the derivative of its
               iterate is not the derivative of the root; so here the point is the library's
               refined by two Newton steps on g to the exact root (it moves by <~ 1e-7 r; the
               path length, stationary in psi, by ~1e-14 r) and differentiated by the
               implicit-function theorem (`_contact_angle`, exact to all orders), so that J is
               the derivative of the positions used. Where the library fell back to the
               normalised midpoint r (d0 + d1) / |d0 + d1|: that formula (same value);
  * each output of the outside wrap is value + (smooth - stop_gradient(smooth))
    ("straight-through"): the value is the library's to the last bit, every derivative (of any
    order) is the closed form's, which equals the library's derivative wherever the decisions
    do not switch.

atan2 instead of the library's acos(n0 . n1) also keeps the derivative finite for tiny and
near-pi arcs. The equality of values and of derivatives with the library is tested
(tests/inertia: tangent points vs `obstacle_wrap`, Jacobians vs central differences).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.engine.spatial import dot_last
from myotwin.paths.circle import _inside_newton, _tangent_solutions, circle_wrap, wrap_2d
from myotwin.paths.safe import (MINVAL, cross2, norm, normalize_mj, safe_acos, safe_atan2,
                                safe_div)
from myotwin.paths.sphere import sphere_plane

_sg = jax.lax.stop_gradient


def straight_through(value: jax.Array, smooth: jax.Array) -> jax.Array:
    """`value` with the derivatives of `smooth` (value + smooth - stop_gradient(smooth))."""
    return _sg(value) + (smooth - _sg(smooth))


class Arc2D(NamedTuple):
    """A 2-D wrap with its arc: tangent points t0, t1 (2,), signed rotation `angle` (rad) that
    carries t0 onto t1 about the circle's centre, arc length (= radius |angle|), wrapped."""

    t0: jax.Array
    t1: jax.Array
    angle: jax.Array
    arc_length: jax.Array
    wrapped: jax.Array


def arc_2d(d0, d1, side, side_inside, has_side: bool, radius) -> Arc2D:
    """MuJoCo's 2-D wrap of d0-d1 (2,) around the circle of `radius` (module docstring).
    side (2,), side_inside (bool): the side site in the plane and whether it is within the
    radius in 3-D (used only if the static `has_side`)."""
    if has_side:
        lib = wrap_2d(_sg(d0), _sg(d1), _sg(side), side_inside, True, _sg(radius))
        inside = side_inside
    else:
        lib = circle_wrap(_sg(d0), _sg(d1), jnp.array([1.0, 0.0], d0.dtype), False,
                          _sg(radius))
        inside = jnp.asarray(False)
    (a0, a1), (b0, b1) = _tangent_solutions(d0, d1, radius)
    first = jnp.sum((_sg(a0) - lib.t0) ** 2) <= jnp.sum((_sg(b0) - lib.t0) ** 2)
    t0 = jnp.where(first, a0, b0)
    t1 = jnp.where(first, a1, b1)
    phi = safe_atan2(cross2(t0, t1), dot_last(t0, t1))
    long_way = lib.arc_length > math.pi * _sg(radius)
    angle = jnp.where(long_way, phi - 2.0 * math.pi * jnp.sign(phi), phi)
    lib_angle = jnp.where(angle >= 0.0, 1.0, -1.0) * lib.arc_length / jnp.where(
        _sg(radius) > 0.0, _sg(radius), 1.0)
    t0, t1 = straight_through(lib.t0, t0), straight_through(lib.t1, t1)
    angle = straight_through(_sg(lib_angle), angle)
    arc_length = straight_through(lib.arc_length, radius * jnp.abs(angle))
    if has_side:  # the inside regime: one contact point, no arc
        point = _inside_point(d0, d1, radius, lib.t0)
        t0 = jnp.where(inside, point, t0)
        t1 = jnp.where(inside, point, t1)
        angle = jnp.where(inside, 0.0, angle)
        arc_length = jnp.where(inside, 0.0, arc_length)
    return Arc2D(t0, t1, angle, arc_length, lib.wrapped)


def _inside_uses_newton(d0, d1, radius) -> jax.Array:
    """Whether MuJoCo's inside wrap took its Newton point (True) or the midpoint fall-back:
    the decision of `paths.circle.inside_wrap`, repeated on values."""
    len0, len1 = norm(d0), norm(d1)
    dd = jnp.sum((d1 - d0) ** 2)
    ok = ~((len0 <= radius) | (len1 <= radius) | (radius < MINVAL)
           | (len0 < MINVAL) | (len1 < MINVAL))
    a = jnp.where(ok, safe_div(radius, len0), 0.5)
    b = jnp.where(ok, safe_div(radius, len1), 0.5)
    cos_g = safe_div(len0 * len0 + len1 * len1 - dd, 2.0 * len0 * len1)
    opposite = cos_g < -1.0 + MINVAL
    aligned = cos_g > 1.0 - MINVAL
    g = safe_acos(jnp.where(ok & ~opposite & ~aligned, cos_g, 0.0))
    _, f0, converged = _inside_newton(a, b, g)
    return ~aligned & ~(f0 > 0) & converged


def _stationarity(psi, d0, d1, radius):
    """g(psi) = d/dpsi (|p - d0| + |p - d1|) for p = r (cos psi, sin psi): zero at the inside
    wrap's contact point."""
    c, s = jnp.cos(psi), jnp.sin(psi)
    p = radius * jnp.stack([c, s])
    dp = radius * jnp.stack([-s, c])
    return sum(dot_last(p - d, dp) / norm(p - d) for d in (d0, d1))


@jax.custom_jvp
def _contact_angle(psi, d0, d1, radius):
    """The root psi of g (given by the library, `psi`), differentiated by the implicit-function
    theorem: dpsi = -(dg/d(d0, d1, r) . tangent) / (dg/dpsi). The rule evaluates g at this
    function's own output, so JAX's derivative of the rule gives the exact higher orders."""
    return psi


@_contact_angle.defjvp
def _contact_angle_jvp(primals, tangents):
    psi, d0, d1, radius = primals
    _, t0, t1, tr = tangents
    root = _contact_angle(psi, d0, d1, radius)
    g_psi = jax.jvp(lambda a: _stationarity(a, d0, d1, radius), (root,),
                    (jnp.ones_like(root),))[1]
    g_dot = jax.jvp(lambda a, b, r: _stationarity(root, a, b, r), (d0, d1, radius),
                    (t0, t1, tr))[1]
    return root, -safe_div(g_dot, g_psi)


#: Newton steps on g refining the library's inside contact angle (MuJoCo stops at |f| <= 1e-6;
#: two steps bring g to roundoff, moving the point by <~ 1e-7 r, so that the positions are the
#: exact root whose derivatives the implicit-function theorem gives).
INSIDE_REFINE_STEPS = 2


def _refine(psi, d0, d1, radius):
    for _ in range(INSIDE_REFINE_STEPS):
        g, dg = jax.jvp(lambda a: _stationarity(a, d0, d1, radius), (psi,), (jnp.ones_like(psi),))
        psi = psi - safe_div(g, dg)
    return psi


def _inside_point(d0, d1, radius, lib_point):
    """Contact point of the inside wrap: the library's Newton point refined to the exact root
    of g and differentiated by the implicit-function theorem, or the normalised midpoint where
    the library fell back to it (same value as the library there)."""
    newton = _inside_uses_newton(_sg(d0), _sg(d1), _sg(radius))
    psi_lib = safe_atan2(lib_point[1], lib_point[0])
    psi = _contact_angle(_sg(_refine(psi_lib, _sg(d0), _sg(d1), _sg(radius))), d0, d1, radius)
    on_root = radius * jnp.stack([jnp.cos(psi), jnp.sin(psi)])
    mid, _ = normalize_mj(0.5 * (d0 + d1))
    return jnp.where(newton, on_root, radius * mid)


def sphere_plane_axes(p0: jax.Array, p1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`paths.sphere.sphere_plane` (the wrap plane's axes, geom frame) with the library's
    values and the derivatives of axis0 = p0 / |p0|, axis1 = normalise(n x axis0),
    n = normalise(p0 x p1) (MuJoCo's fall-back normal for parallel p0, p1 is locally constant
    in its own branch only at isolated configurations; there the derivative is undefined)."""
    lib0, lib1 = sphere_plane(_sg(p0), _sg(p1))
    axis0 = p0 / _nonzero(norm(p0))
    normal = jnp.cross(p0, p1)
    normal = normal / _nonzero(norm(normal))
    axis1 = jnp.cross(normal, axis0)
    axis1 = axis1 / _nonzero(norm(axis1))
    return straight_through(lib0, axis0), straight_through(lib1, axis1)


def _nonzero(x: jax.Array) -> jax.Array:
    return jnp.where(x > MINVAL, x, 1.0)
