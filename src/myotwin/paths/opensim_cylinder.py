"""OpenSim's WrapCylinder: one path segment over a finite cylinder with an optional quadrant.

A myotwin extension (MJCF has no equivalent): OpenSim 4.6's `WrapCylinder::wrapLine` and
`_make_spiral_path` (opensim-core OpenSim/Simulation/Wrap/WrapCylinder.cpp, Peter Loan; the
algorithm of SIMM, Delp & Loan 1995, Comput Biol Med 25:21), re-implemented in JAX from the
description below so that arm26's triceps and brachialis reproduce OpenSim's lengths. It is
*not* MuJoCo's cylinder wrap (`cylinder.py`): OpenSim's tangent points are a construction, not
the geodesic, so the path is not locally shortest and -dL/dq differs from the moment arm of
the "tangent points fixed on the cylinder" (OpenSim's computeMomentArm) by up to millimetres.

Frame: the cylinder's own frame (axis = local z, centred at 0, length `length_m` along z).
Inputs p1, p2 (3,) are the segment end points in that frame. Quadrant: `wrap_axis` in
{0, 1, 2} and `wrap_sign` in {-1, 0, +1} (0 = "all", unconstrained); DSIGN(a) = +1 for a >= 0.

Steps (status codes are OpenSim's WrapAction: 0 noWrap, 1 insideRadius, 2 wrapped,
3 mandatoryWrap):
1. insideRadius if an end point is closer than the radius to the axis (infinite line).
2. near12, t12: closest points of the segment's line and the axis segment [-L/2, L/2] (lines,
   not segments); "hits" = |near12 - near00|^2 < r^2 and 0 < t12 < 1.
   Unconstrained: mandatoryWrap if hits, else noWrap.
   Constrained: if an end point is on the quadrant's side (DSIGN(p[axis]) = sign): hits ->
   mandatoryWrap; else wrapped if the end points are on opposite sides and near12 is not on
   the quadrant's side, else noWrap. If neither end point is on that side: wrapped.
3. Preliminary tangent points: in the plane through p_i perpendicular to the axis, the two
   tangents from p_i (r1a/r1b for p1, r2a/r2b for p2). Unconstrained: the pair (r1x, r2y) with
   the largest cosine between the radial directions (first maximum in the order aa, ab, ba, bb,
   strict comparisons). Constrained: chosen by which candidates lie on the quadrant's side,
   with "far side" from the angles alpha = angle(r1a, r2b), beta = angle(r1b, r2a); the wrap is
   "long" (more than half way round) when sum(r_i - axis point) . sum(r_i - p_i) < 0.
4. Axial slide: apex = the point on the cylinder at the axis point nearest to the point of the
   segment at t = d1/(d1 + d2) (d_i the distances of p_i from the axis), on the side of the
   segment (or away from it for a far-side wrap); each r_i moves along the cylinder's
   generator to the plane (p1, p2, apex) if the line of the generator (+-10 length units)
   meets it, and if the axial projection of the new point is closer to the other end's axial
   point than this end's axial point is (OpenSim's test, literally: the "line" through the
   axial point p11 has direction p22).
5. noWrap if both tangent points are beyond the cylinder's half-length.
6. Spiral: theta = signed angle about the axis from r1's radial direction to r2's (atan2;
   2 pi - theta for a long wrap), wrap length = sqrt((r theta)^2 + axial distance^2). Unless
   the path has a single wrap object, OpenSim then makes the end segments tangent to the spiral
   to within 0.1 degree: at most 100 times, while the spiral has >= 2 sample points (length
   >= 2 mm), compare the angle to the axis of p_i -> r_i and of r_i -> the spiral sample next to
   r_i (the spiral point at t = 1/n, resp. 1 - 1/n, n = floor(length / 2 mm); the point at t is
   r1 rotated about the axis by t theta and raised by t times the axial distance); if they
   differ by more than 0.1 degree, move r_i by 1.5 times the step to the point of the generator
   through r_i nearest to the line p_i -> sample, and recompute. r2's sample is taken from the
   already moved r1 (OpenSim 4.6 does so: probing OpenSim 4.6 on arm26's TRIlong, this rule
   gives its tangent points to 5e-16 m, the rule of an older published WrapCylinder.cpp -- the
   sample from the unmoved r1, rotation about uu x vv -- misses them by 2e-5 m and the length by
   3.5e-8 m). (With visualisation disabled OpenSim skips sampling for single-wrap paths; that
   changes nothing for a single wrap, which is never adjusted.)

Status, tangent points (cylinder frame) and wrap length are returned for every input; the
caller uses r1, r2 and the length only when the status is wrapped or mandatoryWrap. All
branches are evaluated and selected with `where`, so the function is jit/vmap/grad-able.
It is differentiable except where a branch, the candidate choice, the number of adjustment
steps or the sample count n changes -- discontinuities of OpenSim's own algorithm.

The tangency adjustment is an early-exit `while_loop`, run only for segments that wrap (the
other segments' tangent points are never used): on arm26 it ends after about 20 trips where
a fixed-trip loop ran all 100 (lengths 2.8 -> 0.6 ms, moment arms 15 -> 2 ms; docs/models.md).
JAX differentiates a `while_loop` in forward mode only, so its derivatives come from
`_derivative_tensor` (`loop_derivatives.LoopDerivatives`, shared with the ellipsoid): the
first (second, third) derivative tensor of the adjusted tangent points with respect to
(p1, p2, radius, length) is taken in forward mode through the loop and
contracted with the input tangent, a linear map that reverse mode can transpose; with respect
to (p1, p2) alone where the radius and length are not differentiated (their tangent a symbolic
zero, as for a model's cylinders under derivatives with respect to q). Derivatives
up to the third, in any combination of modes, are those of the trips composed -- what the
fixed-trip loop gave (on 200 arm26 poses, a scratch comparison: moment arms equal to 3e-16 m,
second derivatives to 1e-13 m; lengths identical). The third order is what a reverse-mode
gradient through a muscle mass point's Jdot qd needs (`myotwin.inertia`); a fourth
derivative works in forward mode only.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.paths.loop_derivatives import LoopDerivatives
from myotwin.paths.safe import safe_acos, safe_atan2, safe_div, safe_sqrt

NO_WRAP, INSIDE_RADIUS, WRAPPED, MANDATORY_WRAP = 0, 1, 2, 3
#: OpenSim WrapCylinder.cpp: MAX_ITERATIONS and TANGENCY_THRESHOLD (0.1 degree).
MAX_ADJUST_ITERATIONS = 100
TANGENCY_THRESHOLD_RAD = 0.1 * jnp.pi / 180.0
#: Spiral sample spacing (m) that sets the first sample used by the tangency test.
SPIRAL_SEGMENT_M = 0.002
#: OpenSim WrapMath LINE_EPSILON and SimmMacros ROUNDOFF_ERROR.
_LINE_EPS = 1e-5
_ROUNDOFF = 2e-13

_DN = jnp.array([0.0, 0.0, 1.0])
_P0 = jnp.array([0.0, 0.0, -1.0])


class CylinderWrap(NamedTuple):
    """Result of one segment over an OpenSim cylinder (cylinder frame, metres).

    status () int: 0 noWrap, 1 insideRadius, 2 wrapped, 3 mandatoryWrap.
    r1, r2 (3,): tangent points (valid for status >= 2). length (): spiral length.
    turn (): signed rotation (rad) about the cylinder's axis (+z, right-handed) that carries r1
      to r2 along the wrap: the spiral's point at fraction t is r1 rotated by t turn and raised
      by t (r2 - r1)_z (used to place muscle mass points on the wrap, `myotwin.inertia`).
    """

    status: jax.Array
    r1: jax.Array
    r2: jax.Array
    length: jax.Array
    turn: jax.Array


# ------------------------------------------------------------------ OpenSim's WrapMath, in JAX

def _norm(v):
    return safe_sqrt(jnp.sum(v * v))


def _unit(v):
    """v / |v| (0 for a zero vector: WrapMath::NormalizeOrZero)."""
    n = _norm(v)
    return safe_div(1.0, n) * v


def _dsign(x):
    return jnp.where(x >= 0.0, 1, -1)


def _closest_on_line(pt, line_pt, line):
    """WrapMath::GetClosestPointOnLineToPoint: closest point to pt on the line through line_pt
    with direction `line` (not necessarily unit)."""
    v1 = pt - line_pt
    v2 = _unit(line)
    return line_pt + jnp.dot(v1, v2) * v2


def _dist2(a, b):
    d = b - a
    return jnp.dot(d, d)


def _det3(a, b, c):
    """Determinant of the 3x3 matrix with rows a, b, c (the triple product a . (b x c))."""
    return jnp.dot(a, jnp.cross(b, c))


def _intersect_lines(p1, p2, p3, p4):
    """WrapMath::IntersectLines: closest points of line p1->p2 and line p3->p4.
    Returns (point on the first, s as a fraction of p1->p2, point on the second, ok)."""
    vec1, vec2 = p2 - p1, p4 - p3
    mag1 = _norm(vec1)
    vec1, vec2 = _unit(vec1), _unit(vec2)
    cross = jnp.cross(vec1, vec2)
    denom = jnp.dot(cross, cross)
    ok = jnp.abs(denom) > _ROUNDOFF
    den = jnp.where(ok, denom, 1.0)
    t = _det3(p3 - p1, vec1, cross) / den
    s = _det3(p3 - p1, vec2, cross) / den
    return p1 + s * vec1, safe_div(s, mag1), p3 + t * vec2, ok


def _intersect_seg_plane(a, b, normal, d):
    """WrapMath::IntersectLineSegPlane: (point, hit) of segment a-b with plane n.x + d = 0."""
    vec = b - a
    dot = jnp.dot(vec, normal)
    hit = jnp.abs(dot) >= _LINE_EPS
    t = (-d - jnp.dot(normal, a)) / jnp.where(hit, dot, 1.0)
    hit = hit & (t >= -_LINE_EPS) & (t <= 1.0 + _LINE_EPS)
    return a + t * vec, hit


def _angle(u, v):
    return safe_acos(safe_div(jnp.dot(u, v), _norm(u) * _norm(v)))


def _rotate(axis, angle, v):
    """Rotation of v by `angle` about the unit vector `axis` (Rodrigues)."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return v * c + jnp.cross(axis, v) * s + axis * jnp.dot(axis, v) * (1.0 - c)


# ------------------------------------------------------------------ steps

def _tangent_candidates(p, radius):
    """The two tangent points from p in its cross-section, and p's axis point and distance."""
    axis_pt = _closest_on_line(p, _P0, _DN)
    vv = p - axis_pt
    dist_p = _norm(vv)
    vv = _unit(vv)
    offset = radius * safe_div(radius, dist_p)
    foot = axis_pt + offset * vv
    half = safe_sqrt(radius * radius - offset * offset)
    uu = jnp.cross(_DN, vv)
    return foot + half * uu, foot - half * uu, axis_pt, dist_p


def _constrained_choice(p1, p2, r1a, r1b, r2a, r2b, p11, p22, wrap_axis, wrap_sign):
    """Tangent points, far-side flag and long-wrap flag for a quadrant-constrained cylinder."""
    alpha = _angle(r1a - p11, r2b - p22)
    beta = _angle(r1b - p11, r2a - p22)
    on = lambda x: _dsign(x[wrap_axis]) == wrap_sign  # noqa: E731
    a_gt_b = alpha > beta
    # the four cases of OpenSim (r1a/r1b on the active side), each -> (use_a_first, far)
    both = on(r1a) & on(r1b)
    only_a = on(r1a) & ~on(r1b)
    only_b = ~on(r1a) & on(r1b)
    r2a_on, r2b_on = on(r2a), on(r2b)
    # case "r1b with r2a" (use_a_first False) vs "r1a with r2b" (True)
    use_a = jnp.where(both, ~r2a_on,
                      jnp.where(only_a, True,
                                jnp.where(only_b, False,
                                          jnp.where(r2a_on, False,
                                                    jnp.where(r2b_on, True, a_gt_b)))))
    far = jnp.where(use_a, a_gt_b, ~a_gt_b)
    neither = ~on(r1a) & ~on(r1b) & ~r2a_on & ~r2b_on
    far = jnp.where(neither, True, far)
    r1 = jnp.where(use_a, r1a, r1b)
    r2 = jnp.where(use_a, r2b, r2a)
    sum_musc = (r1 - p1) + (r2 - p2)
    sum_r = (r1 - p11) + (r2 - p22)
    return r1, r2, far, jnp.dot(sum_r, sum_musc) < 0.0


def _unconstrained_choice(r1a, r1b, r2a, r2b, p11, p22):
    """Pair of tangent points whose radial directions are closest (OpenSim's dot1..dot4)."""
    u1a, u1b, u2a, u2b = (_unit(r1a - p11), _unit(r1b - p11), _unit(r2a - p22),
                          _unit(r2b - p22))
    d1, d2, d3, d4 = jnp.dot(u1a, u2a), jnp.dot(u1a, u2b), jnp.dot(u1b, u2a), jnp.dot(u1b, u2b)
    pick1 = (d1 > d2) & (d1 > d3) & (d1 > d4)
    pick2 = ~pick1 & (d2 > d3) & (d2 > d4)
    pick3 = ~pick1 & ~pick2 & (d3 > d4)
    r1 = jnp.where(pick1 | pick2, r1a, r1b)
    r2 = jnp.where(pick1 | pick3, r2a, r2b)
    return r1, r2


def _slide_to_plane(p1, p2, r1, r2, p11, p22, d1, d2, radius, far):
    """Step 4: move r1, r2 along the cylinder's generators to the plane (p1, p2, apex)."""
    mpt = p1 + (d1 / (d1 + d2)) * (p2 - p1)
    axispt = _closest_on_line(mpt, _P0, _DN)
    normal = _unit(jnp.cross(_unit(p1 - axispt), _unit(p2 - axispt)))
    apex1 = axispt + radius * _unit(jnp.cross(_DN, normal))
    apex2 = axispt + radius * _unit(jnp.cross(normal, _DN))
    first = _dist2(mpt, apex1) < _dist2(mpt, apex2)
    apex = jnp.where(first != far, apex1, apex2)
    plane = _unit(jnp.cross(_unit(p1 - apex), _unit(p2 - apex)))
    d = -jnp.dot(p1, plane)

    def slide(r, own_axis, other_axis):
        rp, hit = _intersect_seg_plane(r - 10.0 * _DN, r + 10.0 * _DN, plane, d)
        proj = _closest_on_line(rp, own_axis, p22)  # OpenSim: line through p11, direction p22
        closer = _dist2(proj, other_axis) < _dist2(own_axis, other_axis)
        return jnp.where(hit & closer, rp, r)

    r1_new = slide(r1, p11, p22)
    # r2: OpenSim projects on the same line (through p11, direction p22) and compares with p11
    rp2, hit2 = _intersect_seg_plane(r2 - 10.0 * _DN, r2 + 10.0 * _DN, plane, d)
    proj2 = _closest_on_line(rp2, p11, p22)
    r2_new = jnp.where(hit2 & (_dist2(proj2, p11) < _dist2(p22, p11)), rp2, r2)
    return r1_new, r2_new


def _spiral(r1, r2, radius, long_wrap):
    """Signed angle about the axis from r1 to r2 (2 pi - angle for a long wrap), signed axial
    distance and length of the spiral (OpenSim 4.6 _make_spiral_path)."""
    r1a = _closest_on_line(r1, _P0, _DN)
    r2a = _closest_on_line(r2, _P0, _DN)
    axial = jnp.dot(r2a - r1a, _DN)
    uu, vv = r1 - r1a, r2 - r2a
    theta = safe_atan2(jnp.dot(jnp.cross(uu, vv), _DN), jnp.dot(uu, vv))
    theta = jnp.where(long_wrap, 2.0 * jnp.pi - theta, theta)
    length = safe_sqrt((radius * theta) ** 2 + axial * axial)
    return theta, axial, length


def _spiral_point(r1, theta, axial, sense, t):
    """The spiral's point at fraction t: r1 rotated about the axis by sense t theta, raised by
    t axial (OpenSim 4.6 CalcSpiralWrapPoint)."""
    return _rotate(_DN, sense * t * theta, r1) + _DN * (t * axial)


def _adjust(p, r, w):
    """OpenSim _adjust_tangent_point: (new r, adjusted?) for end point p, tangent point r and
    spiral sample w."""
    alpha = safe_acos(jnp.dot(_unit(r - p), _DN))
    omega = safe_acos(jnp.dot(_unit(w - r), _DN))
    adjust = jnp.abs(alpha - omega) > TANGENCY_THRESHOLD_RAD
    pa = _closest_on_line(p, r, _DN)
    wa = _closest_on_line(w, r, _DN)
    _, _, on_generator, _ = _intersect_lines(p, w, pa, wa)
    return jnp.where(adjust, r + 1.5 * (on_generator - r), r), adjust


def _adjust_step(p1, p2, r1, r2, radius, long_wrap):
    """One trip of OpenSim's tangency adjustment: (r1, r2 adjusted, whether to go on)."""
    sense = jnp.where(long_wrap, -1.0, 1.0)
    theta, axial, length = _spiral(r1, r2, radius, long_wrap)
    n = jnp.maximum(jnp.floor(length / SPIRAL_SEGMENT_M), 1.0)
    t = 1.0 / n
    r1n, adj1 = _adjust(p1, r1, _spiral_point(r1, theta, axial, sense, t))
    # OpenSim 4.6 samples r2's point from the already adjusted r1 (same theta, axial)
    r2n, adj2 = _adjust(p2, r2, _spiral_point(r1n, theta, axial, sense, 1.0 - t))
    step = (n >= 2.0) & (adj1 | adj2)
    return jnp.where(step, r1n, r1), jnp.where(step, r2n, r2), step


def _adjust_loop(p1, p2, r1, r2, radius, long_wrap, skip):
    """OpenSim's adjustment loop: at most MAX_ADJUST_ITERATIONS trips, ending at the first trip
    that moves nothing (none at all if `skip`). An early-exit `while_loop`: under vmap it runs
    until the last lane is done (arm26: about 20 trips instead of the cap's 100)."""
    def cond(carry):
        return ~carry[2] & (carry[3] < MAX_ADJUST_ITERATIONS)

    def body(carry):
        r1, r2, _, k = carry
        r1n, r2n, step = _adjust_step(p1, p2, r1, r2, radius, long_wrap)
        return r1n, r2n, ~step, k + 1

    r1, r2, _, _ = jax.lax.while_loop(cond, body, (r1, r2, jnp.asarray(skip, bool),
                                                   jnp.asarray(0, jnp.int32)))
    return r1, r2


def _construct(p1, p2, radius, length_m, wrap_axis, wrap_sign):
    """Steps 1-5: (status, r1, r2 before the tangency adjustment, long_wrap)."""
    r_sq = radius * radius
    inside = (jnp.sum(p1[:2] ** 2) < r_sq) | (jnp.sum(p2[:2] ** 2) < r_sq)
    half = 0.5 * length_m
    near12, t12, near00, ok = _intersect_lines(p1, p2, jnp.array([0.0, 0.0, -1.0]) * half,
                                               jnp.array([0.0, 0.0, 1.0]) * half)
    hits = ok & (_dist2(near12, near00) < r_sq) & (t12 > 0.0) & (t12 < 1.0)
    constrained = wrap_sign != 0
    s1, s2 = _dsign(p1[wrap_axis]), _dsign(p2[wrap_axis])
    some_on_side = (s1 == wrap_sign) | (s2 == wrap_sign)
    potential = (s1 != s2) & (_dsign(near12[wrap_axis]) != wrap_sign)
    status = jnp.where(
        constrained,
        jnp.where(some_on_side, jnp.where(hits, MANDATORY_WRAP,
                                          jnp.where(ok & potential, WRAPPED, NO_WRAP)),
                  WRAPPED),
        jnp.where(hits, MANDATORY_WRAP, NO_WRAP))

    r1a, r1b, p11, d1 = _tangent_candidates(p1, radius)
    r2a, r2b, p22, d2 = _tangent_candidates(p2, radius)
    c1, c2, far, long_wrap = _constrained_choice(p1, p2, r1a, r1b, r2a, r2b, p11, p22,
                                                 wrap_axis, wrap_sign)
    u1, u2 = _unconstrained_choice(r1a, r1b, r2a, r2b, p11, p22)
    r1 = jnp.where(constrained, c1, u1)
    r2 = jnp.where(constrained, c2, u2)
    far = constrained & far
    long_wrap = constrained & long_wrap

    r1, r2 = _slide_to_plane(p1, p2, r1, r2, p11, p22, d1, d2, radius, far)
    beyond = lambda r: (r[2] < -half) | (r[2] > half)  # noqa: E731
    status = jnp.where((status >= WRAPPED) & beyond(r1) & beyond(r2), NO_WRAP, status)
    status = jnp.where(inside, INSIDE_RADIUS, status)
    return status, r1, r2, long_wrap


def _adjusted_flat(z, wrap_axis, wrap_sign, single_wrap):
    """(6,) the adjusted tangent points (r1, r2) from z (8,) = (p1, p2, radius, length_m),
    adjusting only segments that wrap (the others' tangent points are not used), and none if
    `single_wrap` (a traced bool)."""
    p1, p2, radius, length_m = z[0:3], z[3:6], z[6], z[7]
    status, r1, r2, long_wrap = _construct(p1, p2, radius, length_m, wrap_axis, wrap_sign)
    r1, r2 = _adjust_loop(p1, p2, r1, r2, radius, long_wrap, single_wrap | (status < WRAPPED))
    return jnp.concatenate([r1, r2])


def _adjusted_points(points, rest, wrap_axis, wrap_sign, single_wrap):
    """`_adjusted_flat` as `LoopDerivatives` takes it: points = (p1, p2) (6,), rest =
    (radius, length_m) (2,)."""
    return _adjusted_flat(jnp.concatenate([points, rest]), wrap_axis, wrap_sign, single_wrap)


#: The adjusted tangent points (6,) of (points, rest, wrap_axis, wrap_sign, single_wrap),
#: differentiable in both modes up to the third order (`loop_derivatives.py`): the tensors
#: are taken in forward mode through the loop. The cylinder's radius and length are model
#: constants unless a caller differentiates with respect to them; when their tangent is a
#: symbolic zero the next tensor is taken with respect to the end points alone (6 directions
#: instead of 8 per order: the second derivative, which a mass point's Jdot qd needs, in 36
#: forward-mode directions instead of 64).
_ADJUSTED = LoopDerivatives(_adjusted_points)
_derivative_tensor = _ADJUSTED.tensor


def opensim_cylinder_wrap(p1, p2, radius, length_m, wrap_axis, wrap_sign,
                          single_wrap) -> CylinderWrap:
    """OpenSim WrapCylinder::wrapLine for the segment p1-p2 (cylinder frame, (3,) each).

    radius, length_m: cylinder radius and length (m). wrap_axis (int 0..2), wrap_sign (int -1,
    0, +1): the quadrant (sign 0 = "all"); both may be traced. single_wrap: the path has
    exactly one wrap object (OpenSim then skips the tangency adjustment); static True, or a
    traced bool. See the module docstring for the steps.
    """
    status, r1, r2, long_wrap = _construct(p1, p2, radius, length_m, wrap_axis, wrap_sign)
    if single_wrap is not True:
        dtype = jnp.result_type(p1, p2, radius, length_m)
        points = jnp.concatenate([p1, p2]).astype(dtype)
        rest = jnp.stack([radius, length_m]).astype(dtype)
        adjusted = _ADJUSTED(points, rest, wrap_axis, wrap_sign, jnp.asarray(single_wrap, bool))
        r1, r2 = adjusted[:3], adjusted[3:]
    theta, _, wrap_len = _spiral(r1, r2, radius, long_wrap)
    turn = jnp.where(long_wrap, -1.0, 1.0) * theta   # the sense of `_spiral_point`
    return CylinderWrap(status.astype(jnp.int32), r1, r2, wrap_len, turn)
