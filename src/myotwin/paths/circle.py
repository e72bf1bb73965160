"""2-D wrap of a straight segment around a circle centred at the origin: the core of both the
sphere and the cylinder wrap (Type III paths of Wang et al. 2022 §3.3, with MuJoCo's rules).

Reproduces MuJoCo 4.0.0's `wrap_circle` and `wrap_inside` (engine_util_misc.c) rule by rule,
as pure single-instance functions of 2-vectors (vmapped over wraps by the callers). The
published source we read (an earlier MuJoCo 3.x) differs from the 4.0.0 binary in how an
outside side site acts; the 4.0.0 rules below were established by probing MuJoCo 4.0.0 (see
docs/paths.md, "Side sites") and are checked against it in tests/paths.

Outside wrap (`circle_wrap`: no side site, or a side site outside the obstacle). End points
d0, d1, radius r; side direction s = the side site projected on the wrap plane, normalised:
  * no wrap if an end point is inside the circle (|d_i|^2 < r^2), r < mjMINVAL, or the end
    points coincide (|d1 - d0|^2 < mjMINVAL);
  * "far side": a side site whose direction s lies strictly inside the wedge spanned by -d0
    and -d1 (behind the circle as seen from the segment);
  * no wrap if the segment misses the circle (its point nearest the centre has squared norm
    > r^2) unless the side site is on the far side, which forces the path around the back;
  * the two tangent-line solutions (MuJoCo's sign +1 and -1)
      t0 = (d0 r^2 +- r R d0 sqrt(|d0|^2 - r^2)) / |d0|^2,
      t1 = (d1 r^2 -+ r R d1 sqrt(|d1|^2 - r^2)) / |d1|^2,     R = rotation by -90 deg,
    are scored -|t0 - t1|^2 (the shorter way round), or +|t0 - t1|^2 (the longer way, around
    the far side) when the side site is on the far side; a solution whose straight pieces
    d0-t0 and d1-t1 cross scores -10000. The higher score wins (ties: the second solution);
    if the winner's straight pieces still cross, no wrap;
  * the arc length is r * angle(t0, t1), with the angle taken as 2 pi - angle when the arc runs
    the long way for the chosen solution (sign of t0 x t1 against the solution's sense).

Inside wrap (`inside_wrap`: a side site closer to the geom origin than the radius, measured in
3-D): the path touches the circle at one point p (t0 = t1 = p, arc length 0), the point where
|p - d0| + |p - d1| is stationary on the circle. No wrap if an end point is inside or on the
circle, or the segment cuts the circle, or d0 and d1 point in opposite directions. With
A = r/|d0|, B = r/|d1|, G = angle between d0 and d1, the contact satisfies
    f(phi) = asin(A sin phi) + asin(B sin phi) - 2 phi + G = 0      (z = sin phi),
solved by Newton from phi = pi/2, at most 20 iterations, stopping once |f| <= 1e-6; p is d0
(or d1, whichever comes first counter-clockwise) rotated by phi - asin(A sin phi) (or
phi - asin(B sin phi)). Fall-back (as MuJoCo): the normalised midpoint of d0, d1 scaled to r
when G ~ 0, when f(pi/2) > 0, or when Newton fails (non-negative slope, a step backwards, an
overshoot past the tolerance) or uses all 20 iterations. MuJoCo's published source iterates
in z from z = 1 - 1e-7; MuJoCo 4.0.0's contact points are reproduced to roundoff only by the
iteration in phi from pi/2 (found by probing; docs/paths.md), so that is what we do.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.paths.safe import (
    MINVAL,
    cross2,
    norm,
    normalize_mj,
    safe_acos,
    safe_asin,
    safe_div,
    safe_sqrt,
)

#: Inside-wrap Newton settings (iteration cap and tolerance as in MuJoCo's published source;
#: the start phi = pi/2, i.e. z = 1, reproduces MuJoCo 4.0.0 to roundoff).
INSIDE_MAX_ITER = 20
INSIDE_PHI_INIT = 0.5 * math.pi
INSIDE_TOLERANCE = 1e-6
#: Score MuJoCo gives a tangent solution whose straight pieces cross each other.
CROSSING_PENALTY = -10000.0


class CircleWrap(NamedTuple):
    """Result of a 2-D wrap: tangent points t0, t1 (2,), arc length (scalar), wrapped (bool).
    When `wrapped` is False the other fields are meaningless (but finite)."""

    t0: jax.Array
    t1: jax.Array
    arc_length: jax.Array
    wrapped: jax.Array


def segments_intersect(p1, p2, p3, p4) -> jax.Array:
    """Whether 2-D segments p1-p2 and p3-p4 intersect (MuJoCo is_intersect; parallel -> no)."""
    det = (p4[1] - p3[1]) * (p2[0] - p1[0]) - (p4[0] - p3[0]) * (p2[1] - p1[1])
    ok = jnp.abs(det) >= MINVAL
    a = safe_div((p4[0] - p3[0]) * (p1[1] - p3[1]) - (p4[1] - p3[1]) * (p1[0] - p3[0]), det)
    b = safe_div((p2[0] - p1[0]) * (p1[1] - p3[1]) - (p2[1] - p1[1]) * (p1[0] - p3[0]), det)
    return ok & (a >= 0) & (a <= 1) & (b >= 0) & (b <= 1)


def behind(d0, d1, side) -> jax.Array:
    """Whether the side direction lies strictly inside the wedge spanned by -d0 and -d1, i.e.
    behind the circle as seen from the segment d0-d1 (MuJoCo 4.0.0's far-side test)."""
    c = cross2(d0, d1)
    return (c * cross2(-d0, side) > 0) & (c * cross2(side, -d1) > 0)


def arc_length(t0, t1, second_solution, radius) -> jax.Array:
    """Length of the arc from t0 to t1 for the chosen tangent solution (MuJoCo length_circle)."""
    n0, _ = normalize_mj(t0)
    n1, _ = normalize_mj(t1)
    angle = safe_acos(jnp.dot(n0, n1))
    cross = t0[1] * t1[0] - t0[0] * t1[1]
    flip = ((cross > 0) & second_solution) | ((cross < 0) & ~second_solution)
    return radius * jnp.where(flip, 2.0 * jnp.pi - angle, angle)


def _tangent_solutions(d0, d1, radius):
    """The two candidate pairs (t0, t1), each (2, 2): index 0 is MuJoCo's sgn = +1."""
    r2 = radius * radius
    sq0, sq1 = jnp.dot(d0, d0), jnp.dot(d1, d1)
    root0, root1 = safe_sqrt(sq0 - r2), safe_sqrt(sq1 - r2)
    sols = []
    for sgn in (1.0, -1.0):
        t0 = jnp.stack([d0[0] * r2 + sgn * radius * d0[1] * root0,
                        d0[1] * r2 - sgn * radius * d0[0] * root0])
        t1 = jnp.stack([d1[0] * r2 - sgn * radius * d1[1] * root1,
                        d1[1] * r2 + sgn * radius * d1[0] * root1])
        sols.append((safe_div(t0, sq0), safe_div(t1, sq1)))
    return sols


def circle_wrap(d0, d1, side, has_side, radius) -> CircleWrap:
    """Outside wrap of segment d0-d1 (each (2,)) around the circle of `radius` at the origin.

    side (2,): unit side direction in the wrap plane (used when has_side is True).
    """
    r2 = radius * radius
    dif = d1 - d0
    dd = jnp.dot(dif, dif)
    ends_outside = (jnp.dot(d0, d0) >= r2) & (jnp.dot(d1, d1) >= r2) & (radius >= MINVAL)
    distinct = dd >= MINVAL
    a = jnp.clip(-safe_div(jnp.dot(dif, d0), dd), 0.0, 1.0)
    nearest = a * dif + d0
    far_side = has_side & behind(d0, d1, side)
    misses = (jnp.dot(nearest, nearest) > r2) & ~far_side

    scores, sols = [], _tangent_solutions(d0, d1, radius)
    for t0, t1 in sols:
        diff = t0 - t1
        score = jnp.where(far_side, 1.0, -1.0) * jnp.dot(diff, diff)
        scores.append(jnp.where(segments_intersect(d0, t0, d1, t1), CROSSING_PENALTY, score))
    first = scores[0] > scores[1]
    t0 = jnp.where(first, sols[0][0], sols[1][0])
    t1 = jnp.where(first, sols[0][1], sols[1][1])
    crossing = segments_intersect(d0, t0, d1, t1)
    length = arc_length(t0, t1, ~first, radius)
    wrapped = ends_outside & distinct & ~misses & ~crossing
    return CircleWrap(t0, t1, length, wrapped)


def _inside_residual(phi, A, B, G):
    """Stationarity residual of the inside contact in the angle phi = asin(z)."""
    z = jnp.sin(phi)
    return safe_asin(A * z) + safe_asin(B * z) - 2.0 * phi + G


def _inside_newton(A, B, G):
    """Newton for the inside-wrap contact as MuJoCo 4.0.0 does it (see module docstring);
    returns (phi, residual at the start, converged)."""

    def slope(phi):
        z, c = jnp.sin(phi), jnp.cos(phi)

        def term(k):
            return k * c / jnp.maximum(MINVAL, safe_sqrt(1.0 - k * k * z * z))

        return term(A) + term(B) - 2.0

    def body(_, carry):
        phi, f, n_iter, failed, stopped = carry
        run = ~failed & ~stopped & (jnp.abs(f) > INSIDE_TOLERANCE)
        df = slope(phi)
        bad_slope = df > -MINVAL
        phi1 = phi - safe_div(f, df)
        backwards = phi1 > phi
        f1 = _inside_residual(phi1, A, B, G)
        overshoot = ~bad_slope & ~backwards & (f1 > INSIDE_TOLERANCE)
        step = run & ~bad_slope & ~backwards
        return (
            jnp.where(step, phi1, phi),
            jnp.where(step, f1, f),
            n_iter + run.astype(jnp.int32),
            failed | (run & (bad_slope | backwards | overshoot)),
            stopped | ~run,
        )

    phi0 = jnp.asarray(INSIDE_PHI_INIT, dtype=A.dtype)
    f0 = _inside_residual(phi0, A, B, G)
    init = (phi0, f0, jnp.int32(0), jnp.asarray(False), jnp.asarray(False))
    phi, _, n_iter, failed, _ = jax.lax.fori_loop(0, INSIDE_MAX_ITER, body, init)
    return phi, f0, ~failed & (n_iter < INSIDE_MAX_ITER)


def inside_wrap(d0, d1, radius) -> CircleWrap:
    """Inside wrap (side site inside the circle) of segment d0-d1 (each (2,)): one contact
    point, t0 = t1, arc length 0."""
    len0, len1 = norm(d0), norm(d1)
    dif = d1 - d0
    dd = jnp.dot(dif, dif)
    ok = ~((len0 <= radius) | (len1 <= radius) | (radius < MINVAL)
           | (len0 < MINVAL) | (len1 < MINVAL))
    a = -safe_div(jnp.dot(dif, d0), dd)
    cut = (dd > MINVAL) & (a > 0) & (a < 1) & (norm(d0 + a * dif) <= radius)

    mid, _ = normalize_mj(0.5 * (d0 + d1))
    fallback = radius * mid
    A = jnp.where(ok, safe_div(radius, len0), 0.5)
    B = jnp.where(ok, safe_div(radius, len1), 0.5)
    cos_g = safe_div(len0 * len0 + len1 * len1 - dd, 2.0 * len0 * len1)
    opposite = cos_g < -1.0 + MINVAL
    aligned = cos_g > 1.0 - MINVAL
    G = safe_acos(jnp.where(ok & ~opposite & ~aligned, cos_g, 0.0))
    phi, f0, converged = _inside_newton(A, B, G)
    use_newton = ~aligned & ~(f0 > 0) & converged

    ccw = cross2(d0, d1) > 0
    vec, _ = normalize_mj(jnp.where(ccw, d0, d1))
    ang = phi - safe_asin(jnp.where(ccw, A, B) * jnp.sin(phi))
    c, s = jnp.cos(ang), jnp.sin(ang)
    point = radius * jnp.stack([c * vec[0] - s * vec[1], s * vec[0] + c * vec[1]])
    point = jnp.where(use_newton, point, fallback)
    wrapped = ok & ~cut & ~opposite
    return CircleWrap(point, point, jnp.zeros_like(radius), wrapped)


def wrap_2d(d0, d1, side, side_inside, has_side, radius) -> CircleWrap:
    """MuJoCo's choice between the inside wrap and the outside wrap for end points d0, d1 (2,)
    in the wrap plane. side (2,): the side site projected on the plane (used if has_side);
    side_inside: whether the side site is within `radius` of the geom origin *in 3-D* (MuJoCo's
    test, also for cylinders, whose axial offset therefore counts)."""
    direction, _ = normalize_mj(side)
    out = circle_wrap(d0, d1, direction, has_side, radius)
    ins = inside_wrap(d0, d1, radius)
    inside = has_side & side_inside
    return CircleWrap(*(jnp.where(inside, i, o) for i, o in zip(ins, out)))
