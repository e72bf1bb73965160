"""OpenSim's WrapEllipsoid: one path segment over an ellipsoid with an optional quadrant.

A myotwin extension (MJCF has no equivalent): OpenSim 4.6's `WrapEllipsoid::wrapLine` with the
PathWrap method "hybrid" (opensim-core OpenSim/Simulation/Wrap/WrapEllipsoid.cpp, Peter Loan;
SIMM's algorithm; the closest-point solver is Eberly's, Graphics Gems IV), re-implemented in
JAX from the description below so that arm26's BIClong and TRIlong reproduce OpenSim's
lengths. Like OpenSim's cylinder (`opensim_cylinder.py`) it is a construction, not the geodesic:
the path is not locally shortest, its tangent points are only as tangent as an iteration with
a loose stopping rule makes them, and its wrap length is a polyline over the surface.

Frame: the ellipsoid's own frame (semi-axes `radii` = (a, b, c) along x, y, z, centre 0,
metres). Quadrant: `wrap_axis` in {0, 1, 2} and `wrap_sign` in {-1, 0, +1} (0 = "all");
DSIGN(x) = +1 for x >= 0. Status codes are OpenSim's WrapAction: 0 noWrap, 1 insideRadius,
3 mandatoryWrap (the ellipsoid never returns 2, wrapped).

Steps (OpenSim's names in parentheses; all but the inputs and outputs in scaled coordinates):
1. Scale every coordinate by factor = 3 / (a + b + c) (`factor`; OpenSim scales so that the
   algorithm's constants fit an ellipsoid of size ~1). p_e = sum (p_i / a_i)^2 - 1.
   insideRadius if p1e or p2e < -1e-4. noWrap if the directions from the centre to p1 and p2
   are collinear (|u1 . u2 - 1| < 1e-4), if the line p1 p2 misses the ellipsoid (quadratic
   discriminant < 0), or if either intersection parameter is outside (0, 1) (the segment does
   not cross the surface twice). Otherwise mandatoryWrap, with r1, r2 the two intersections.
2. Wrapping plane through p1, p2 and a surface point c1 ("hybrid"):
   * Frans technique: mu_i = |(p1 - p2)_i| / |p1 - p2|; for each axis i, sv_i is the point of
     the line r1 r2 where coordinate i is 0 (line parameter t_i from r1), c1_i its closest
     surface point in the plane x_i = const (the 2-D ellipse problem). The best axis is the
     first largest mu_i. If mu_best > MU_BLEND_MIN it is faded towards MU_BLEND_MIN when
     t_best is outside [0, 1] (s = 0) or within SV_BOUNDARY_BLEND of an end (s = t / 0.3 or
     (1 - t) / 0.3): mu_best = MU_BLEND_MIN + s (mu_best - MU_BLEND_MIN). If then still
     mu_best > MU_BLEND_MIN: c1, sv = c1_best, sv_best.
   * Fan technique, if mu_best < MU_BLEND_MAX: the unit vectors from the points r1 + (k/300)
     (r2 - r1), k = 1..298 (NUM_FAN_SAMPLES = 300) to their closest surface points are summed
     and normalised, v; the fan's c1 is the closest point to the midpoint sv_f of r1 r2 plus
     v. mu_best <= MU_BLEND_MIN: c1 = that, sv = sv_f, fan weight 1. Otherwise with
     w = (mu_best - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN): c1 = the closest point to
     w c1_Frans + (1 - w) c1_fan, sv = w sv + (1 - w) sv_f, fan weight 1 - w.
   * r1 = r2 = c1 (the hybrid method starts the tangent points from c1 at every call, so the
     result does not depend on the previous call: OpenSim copies the previous call's r1, r2,
     c1, sv into the result first, but on the mandatoryWrap path overwrites every one of them
     before use -- except when the general closest-point iteration below fails, see there).
   * Quadrant: if wrap_sign != 0 and DSIGN(c1[axis]) != wrap_sign, c1 is mirrored
     (c1[axis] = -c1[axis]) and r1 = r2 = the mirrored c1; if a fan weight w_f was set
     (capped at 1) and is > 0, c1[axis] moves by w_f towards 0 (the bisection of the original
     and mirrored values) and c1 becomes its closest surface point. Without the fan the fan
     weight stays unset (-inf): OpenSim's test for that case, EQUAL_WITHIN_ERROR(fanWeight,
     -Infinity), is never true (-inf - -inf is NaN), so c1 stays the mirrored point.
   * Plane normal vs = unit((p1 - p2) x (p1 - c1)), offset vs4 = -vs . c1.
3. Tangent points (calcTangentPoint), r_i from r_i = c1 for each end p_i: unless |p_ie| < 1e-4
   (p_i on the surface: r_i = p_i), solve for (r, d) the residuals e0 = vs . r + vs4 (in the
   plane), e1 = sum (r_i / a_i)^2 - 1 (on the surface), e2 = n . r + d and e3 = n . p + d
   (n = 2 r / a^2: p in the tangent plane at r) by a damped Gauss-Newton iteration: at most
   50 outer trips while ssq = sum e^2 > ELLIPSOID_TINY (1e-8); each trip takes the step
   dd (J J^T + alpha diag)^-1 (-J e) / 16 (dd = 1 - pcos^100 when the cosine between p -> r and
   p -> centre exceeds 0.1, else 1; J = d e / d(r, d); the 4x4 inverse by Gauss-Jordan without
   pivoting, OpenSim's Mtx::Invert, whose zero-pivot row swap cannot occur for this positive
   definite matrix), repeated from the moved point with alpha x 4 while ssq does not
   decrease (at most 1000 times; alpha starts at 0.01 and is divided by 8 after), then keeps
   adding the step times 1, 2, 4, ... while ssq does not increase (at most 1000 times) and
   takes the last addition back.
4. Surface path (CalcDistanceOnEllipsoid): if |r1 - r2| < 1 mm (in metres) the wrap is the
   chord r1 r2. Otherwise N = min(floor(|r1 - r2| / 1 mm), 499) segments: a0 = the point of
   the plane on the coordinate axis of the largest |vs_i| (first largest); the unit vectors
   from a0 to r1 and r2 span the angle phi0; the N - 1 interior points are where the rays from
   a0 at angles k phi0 / N (k = 1..N-1) from a0 -> r1, towards r2, leave the ellipsoid; the
   wrap length is the polyline r1, interior points, r2 (a ray that misses the ellipsoid, as
   when a0 lies outside it, makes OpenSim's length NaN, sqrt of a negative number; so it does
   here: seen only for far-side wraps after a quadrant flip, on planes far from the centre,
   in 4 of 1200 random segments, never on arm26). Far-side retry (`goto
   calc_wrap_path`): if wrap_sign != 0 and N >= 2 and the first (last) polyline segment points
   back towards p1 (p2) (positive dot product of the unit vectors r1 -> p1 and r1 -> first
   interior point, or r2 -> p2 and r2 -> last interior point), the polyline is recomputed
   once with the angles k (phi0 - 2 pi) / N: the other way round.
5. r1, r2 and the length are divided by the factor.

Closest point (findClosestPoint): with an axis given (the Frans technique), or if a coordinate
of the point is within ROUNDOFF_ERROR (2e-13) of 0 (of those axes, the one whose other two
semi-axes have the smallest sum), the 2-D point-to-ellipse problem in that plane
(closestPointToEllipse: closed forms near the ellipse's axes, else Newton on the quartic, at
most 64 steps until |f| < 1e-9, the point from the last step's t even if not converged);
otherwise Newton on the sextic (same limits) which, if it does not converge, leaves OpenSim's
output untouched: here the fan sample then reuses the previous sample's point (as OpenSim),
the blend's and the quadrant's closest points keep their input (as OpenSim), and the fan-only
c1 (mu_best <= MU_BLEND_MIN) takes the last Newton iterate where OpenSim would keep the
previous call's c1 (the one history dependence, not reproduced; never met on arm26).

Arithmetic: OpenSim's order is kept where it is visible (dot products summed in index order,
Normalize's multiplication by 1 / |v|, the sums of the iterations' updates, Mtx::Invert's
elimination order), so values agree to roundoff (XLA may fuse a multiply-add where the C++
does not: ~1 ulp); a difference could only matter at a tie of one of the iterations' tests.

Checked: against OpenSim 4.6 on arm26 (`tests/paths/test_arm26.py`): BIClong (BIClonghh,
quadrant -y, blended Frans and fan planes) at 8 poses and TRIlong (TRIlonghh, quadrant z, with
two cylinders) at one, lengths to 2e-16 m, -dL/dq to the reference's differencing noise
(1.7e-10 m), current-path points exactly; closed forms on a sphere, statuses, quadrant,
far-side retry and derivatives in `tests/paths/test_opensim_ellipsoid.py`. A scratch check
against a literal NumPy transliteration of the C++ (2,200 random segments, three shapes, all
quadrants, every branch: Frans, fan, blend, flips, far side, plane special cases): tangent
points and lengths to 2e-15 m, and the same NaN lengths.

Status, tangent points (ellipsoid frame, m) and length (m) are returned for every input; the
caller uses them only for mandatoryWrap. All branches are evaluated and selected with `where`;
the loops are early-exit `while_loop`s, so the function is jit/vmap-able. For speed under vmap
(where a loop runs until its last lane is done): the construction runs in a one-trip loop
that makes no trip unless some lane wraps (an optimization barrier ties its inputs to the
loop, or XLA would hoist it out and run it for every lane), and the tangent iteration's inner
loops stop with their outer loop (finished lanes would otherwise spin them to their caps).
Derivatives in forward and reverse mode up to the third order, any mix
(`loop_derivatives.LoopDerivatives`: the tensors are taken in forward mode through the loops;
a fourth order in forward mode only; the first and second orders are tested), with respect
to the end points and the semi-axes. They are those of the computation as it runs (the trips
composed, not the fixed points the iterations approach), so they match finite differences of
OpenSim's own function; it is differentiable except where OpenSim's algorithm is not: where
the status, the best axis, the blend branch, the quadrant flip, the closest-point cases, an
iteration count, the segment count N or the far-side retry change (jumps of the length:
N -> N + 1 changes it by ~1e-7 m on arm26's ellipsoids, since the polyline is a chord sum).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.paths.loop_derivatives import LoopDerivatives
from myotwin.paths.opensim_cylinder import INSIDE_RADIUS, MANDATORY_WRAP, NO_WRAP
from myotwin.paths.safe import safe_acos, safe_div, safe_sqrt

#: WrapEllipsoid.cpp's literal 1e-4: p_e below -1e-4 is inside, |p_e| below 1e-4 on the
#: surface (calcTangentPoint), and |u1 . u2 - 1| below 1e-4 collinear.
SURFACE_TOLERANCE = 1e-4
#: WrapEllipsoid.cpp: MU_BLEND_MIN ("100% fan"), MU_BLEND_MAX ("100% Frans"),
#: SV_BOUNDARY_BLEND, NUM_FAN_SAMPLES, ELLIPSOID_TINY.
MU_BLEND_MIN = 0.7073
MU_BLEND_MAX = 0.9
SV_BOUNDARY_BLEND = 0.3
NUM_FAN_SAMPLES = 300
ELLIPSOID_TINY = 1e-8
#: calcTangentPoint: maxit, maxit2, the initial damping alpha and the step divisor.
TANGENT_MAX_ITERATIONS = 50
TANGENT_MAX_INNER_ITERATIONS = 1000
TANGENT_ALPHA = 0.01
TANGENT_STEP_DIVISOR = 16.0
#: findClosestPoint / closestPointToEllipse: Newton steps and |f| tolerance.
CLOSEST_MAX_ITERATIONS = 64
CLOSEST_TOLERANCE = 1e-9
#: SimmMacros ROUNDOFF_ERROR (EQUAL_WITHIN_ERROR) and rdMath::ZERO (Mtx::Invert's zero test).
ROUNDOFF_ERROR = 2e-13
RD_ZERO = 1e-14
#: CalcDistanceOnEllipsoid: desiredSegLength (m) and the cap on the number of segments.
SEGMENT_LENGTH_M = 0.001
MAX_SEGMENTS = 499

_EYE3 = np.eye(3)


class EllipsoidWrap(NamedTuple):
    """Result of one segment over an OpenSim ellipsoid (ellipsoid frame, metres).

    status () int: 0 noWrap, 1 insideRadius, 3 mandatoryWrap.
    r1, r2 (3,): tangent points (valid for status 3). length (): the surface polyline's length.
    n_segments () int: segments of that polyline (1 for the chord of a wrap shorter than 1 mm;
      0 if no wrap). far_side () bool: the far-side retry was taken.
    """

    status: jax.Array
    r1: jax.Array
    r2: jax.Array
    length: jax.Array
    n_segments: jax.Array
    far_side: jax.Array


# ------------------------------------------------------------------ vector helpers (OpenSim's
# Mtx: dot products summed in index order, Normalize multiplies by 1 / |v|, 0 for 0)

def _dot(u, v):
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]


def _unit(v):
    return safe_div(1.0, safe_sqrt(_dot(v, v)))[..., None] * v


def _dsign(x):
    return jnp.where(x >= 0.0, 1, -1)


# ------------------------------------------------------------------ closest surface point

def _closest_point(a, pair_sum, uvw, axis_in, skip):
    """findClosestPoint(a, uvw, axis_in) (scaled coordinates; axis_in -1: detect) ->
    (point (3,), found). pair_sum (3,): for each axis the sum of the other two *unscaled*
    semi-axes (OpenSim compares get_dimensions()). found is False where the 3-D iteration did
    not converge (OpenSim then leaves its output untouched; the point is the last iterate)."""
    near = jnp.abs(uvw) <= ROUNDOFF_ERROR
    detected = jnp.where(jnp.any(near), jnp.argmin(jnp.where(near, pair_sum, jnp.inf)), -1)
    axis = jnp.where(axis_in < 0, detected, axis_in)
    is3d = axis < 0
    k = jnp.maximum(axis, 0)
    i, j = (k + 1) % 3, (k + 2) % 3
    big_a, big_b = a[i], a[j]                      # the 2-D ellipse (a, b) and point (u, v)
    u, v = uvw[i], uvw[j]
    a2, b2 = big_a * big_a, big_b * big_b
    a2u2, b2v2 = a2 * (u * u), b2 * (v * v)
    s2 = a * a                                     # the 3-D sextic's a^2, b^2, c^2
    s2w2 = s2 * (uvw * uvw)
    near_u, near_v = jnp.abs(u) <= ROUNDOFF_ERROR, jnp.abs(v) <= ROUNDOFF_ERROR
    closed = ~is3d & (near_u | near_v)

    inside2 = (u / big_a) * (u / big_a) + (v / big_b) * (v / big_b) < 1.0
    t2 = jnp.where(inside2, 0.0, jnp.maximum(big_a, big_b) * safe_sqrt(u * u + v * v))
    q = uvw / a
    inside3 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] < 1.0
    t3 = jnp.where(inside3, 0.0, jnp.max(a) * safe_sqrt(_dot(uvw, uvw)))

    def body(carry):
        t, n, _, _ = carry
        pp, qq = t + a2, t + b2                              # 2-D
        f2 = pp * pp * (qq * qq) - a2u2 * (qq * qq) - b2v2 * (pp * pp)
        fp2 = 2.0 * (pp * qq * (pp + qq) - a2u2 * qq - b2v2 * pp)
        p3 = t + s2                                          # 3-D: P, Q, R
        sq = p3 * p3
        f3 = (sq[0] * sq[1] * sq[2] - s2w2[0] * sq[1] * sq[2] - s2w2[1] * sq[0] * sq[2]
              - s2w2[2] * sq[0] * sq[1])
        pq, pr, qr = p3[0] * p3[1], p3[0] * p3[2], p3[1] * p3[2]
        pqr = p3[0] * p3[1] * p3[2]
        fp3 = 2.0 * (pqr * (qr + pr + pq) - s2w2[0] * qr * (p3[1] + p3[2])
                     - s2w2[1] * pr * (p3[0] + p3[2]) - s2w2[2] * pq * (p3[0] + p3[1]))
        f = jnp.where(is3d, f3, f2)
        fp = jnp.where(is3d, fp3, fp2)
        done = jnp.abs(f) < CLOSEST_TOLERANCE
        last = jnp.where(is3d, p3, jnp.stack([pp, qq, qq]))
        return jnp.where(done, t, t - safe_div(f, fp)), n + 1, done, last

    def cond(carry):
        return ~carry[2] & (carry[1] < CLOSEST_MAX_ITERATIONS)

    t0 = jnp.where(is3d, t3, t2)
    _, _, converged, last = jax.lax.while_loop(
        cond, body, (t0, jnp.asarray(0, jnp.int32), skip | closed, jnp.ones(3, a.dtype)))

    # 2-D: Newton's point, or the closed forms near the ellipse's axes
    x_n, y_n = safe_div(a2 * u, last[0]), safe_div(b2 * v, last[1])
    both = near_u & near_v
    x_both = jnp.where(big_a < big_b, jnp.where(u < 0.0, -big_a, big_a), u)
    y_both = jnp.where(big_a < big_b, v, jnp.where(v < 0.0, -big_b, big_b))
    pole_u = (big_a >= big_b) | (jnp.abs(v) >= big_b - safe_div(a2, big_b))
    y_u = safe_div(b2 * v, b2 - a2)
    x_u = big_a * safe_sqrt(jnp.abs(1.0 - (y_u / big_b) * (y_u / big_b)))
    x_on_u = jnp.where(pole_u, u, x_u)
    y_on_u = jnp.where(pole_u, jnp.where(v >= 0.0, big_b, -big_b), y_u)
    pole_v = (big_b >= big_a) | (jnp.abs(u) >= big_a - safe_div(b2, big_a))
    x_v = safe_div(a2 * u, a2 - b2)
    y_v = big_b * safe_sqrt(jnp.abs(1.0 - (x_v / big_a) * (x_v / big_a)))
    x_on_v = jnp.where(pole_v, jnp.where(u >= 0.0, big_a, -big_a), x_v)
    y_on_v = jnp.where(pole_v, v, y_v)
    x2 = jnp.where(both, x_both, jnp.where(near_u, x_on_u, jnp.where(near_v, x_on_v, x_n)))
    y2 = jnp.where(both, y_both, jnp.where(near_u, y_on_u, jnp.where(near_v, y_on_v, y_n)))
    idx = jnp.arange(3)
    planar = jnp.where(idx == i, x2, jnp.where(idx == j, y2, uvw))
    spatial = safe_div(s2 * uvw, last)
    return jnp.where(is3d, spatial, planar), ~is3d | converged


def _closest_points(a, pair_sum, uvw, axis_in, skip):
    """`_closest_point` over a batch: uvw (n, 3), axis_in (n,), skip (n,)."""
    return jax.vmap(_closest_point, in_axes=(None, None, 0, 0, 0))(a, pair_sum, uvw, axis_in,
                                                                    skip)


# ------------------------------------------------------------------ tangent points

def _invert4(m):
    """Mtx::Invert of a 4x4 matrix: Gauss-Jordan without pivoting, rows reduced in order
    (each row below the pivot row by the pivot row; then back substitution), entries within
    rdMath::ZERO of 0 skipped as OpenSim does. The rows of one step are updated together:
    each depends only on the pivot row, so the arithmetic is OpenSim's."""
    inv = jnp.eye(4, dtype=m.dtype)
    rows = jnp.arange(4)
    for r in range(3):
        below = (rows > r) & (jnp.abs(m[:, r]) >= RD_ZERO)
        d = m[:, r] / m[r, r]
        m = jnp.where(below[:, None], (m - d[:, None] * m[r]).at[:, r].set(0.0), m)
        inv = jnp.where(below[:, None], inv - d[:, None] * inv[r], inv)
    inv = inv.at[3].set(inv[3] * (1.0 / m[3, 3]))
    for r in range(3, 0, -1):
        above = (rows < r) & (jnp.abs(m[:, r]) >= RD_ZERO)
        inv = jnp.where(above[:, None], inv - m[:, r][:, None] * inv[r], inv)
        inv = inv.at[r - 1].set(inv[r - 1] * (1.0 / m[r - 1, r - 1]))
    return inv


def _residuals(r, d1, p, a2, a, vs, vs4):
    """calcTangentPoint's ee (4,) and ssq at (r, d1)."""
    nr = 2.0 * r / a2
    e1 = -1.0 + (r[0] / a[0]) ** 2 + (r[1] / a[1]) ** 2 + (r[2] / a[2]) ** 2
    ee = jnp.stack([_dot(vs, r) + vs4, e1, _dot(nr, r) + d1, _dot(nr, p) + d1])
    return ee, ee[0] * ee[0] + ee[1] * ee[1] + ee[2] * ee[2] + ee[3] * ee[3]


def _tangent_point(pe, r, p, a, vs, vs4, skip):
    """calcTangentPoint (step 3 of the module docstring), scaled coordinates."""
    a2 = a * a
    d1 = -_dot(2.0 * r / a2, r)
    ee, ssq = _residuals(r, d1, p, a2, a, vs, vs4)
    on_surface = jnp.abs(pe) < SURFACE_TOLERANCE

    def running(carry):
        return ((carry[3] > ELLIPSOID_TINY) & (carry[6] < TANGENT_MAX_ITERATIONS)
                & ~skip & ~on_surface)

    def outer(carry):
        # under vmap this body also runs for lanes that are done (their results are
        # discarded): `live` keeps their inner loops from running (they could spin to the cap)
        live = running(carry)
        r, d1, ee, ssq, _, alpha, nit = carry
        dedth = jnp.concatenate([jnp.stack([vs, 2.0 * r / a2, 2.0 * (2.0 * r) / a2,
                                            2.0 * p / a2], axis=1),
                                 jnp.array([[0.0, 0.0, 1.0, 1.0]], r.dtype)])
        pcos = _dot(_unit(p - r), _unit(p))
        dd = jnp.where(pcos > 0.1, 1.0 - jnp.power(jnp.where(pcos > 0.1, pcos, 0.5), 100.0),
                       1.0)
        v = -(dedth[:, 0] * ee[0]) - dedth[:, 1] * ee[1] - dedth[:, 2] * ee[2] \
            - dedth[:, 3] * ee[3]
        cols = [dedth[:, k][:, None] * dedth[:, k][None, :] for k in range(4)]
        dedth2 = cols[0] + cols[1] + cols[2] + cols[3]
        diag = jnp.diagonal(dedth2)

        def damped(c):
            r, d1, ee, ssq, ssqo, alpha, vt, n2 = c
            inv = _invert4(dedth2.at[jnp.arange(4), jnp.arange(4)].set(diag * (1.0 + alpha)))
            vt = (dd * inv[:, 0] * v[0] / TANGENT_STEP_DIVISOR
                  + dd * inv[:, 1] * v[1] / TANGENT_STEP_DIVISOR
                  + dd * inv[:, 2] * v[2] / TANGENT_STEP_DIVISOR
                  + dd * inv[:, 3] * v[3] / TANGENT_STEP_DIVISOR)
            r, d1 = r + vt[:3], d1 + vt[3]
            ee, ssq_new = _residuals(r, d1, p, a2, a, vs, vs4)
            return r, d1, ee, ssq_new, ssq, alpha * 4.0, vt, n2 + 1

        r, d1, ee, ssq, ssqo, alpha, vt, _ = jax.lax.while_loop(
            lambda c: live & (c[3] >= c[4]) & (c[7] < TANGENT_MAX_INNER_ITERATIONS), damped,
            (r, d1, ee, ssq, ssq, alpha, jnp.zeros(4, r.dtype), jnp.asarray(0, jnp.int32)))
        alpha = alpha / 8.0

        def extend(c):
            r, d1, ee, ssq, ssqo, fakt, n2 = c
            fakt = fakt * 2.0
            r, d1 = r + vt[:3] * fakt, d1 + vt[3] * fakt
            ee, ssq_new = _residuals(r, d1, p, a2, a, vs, vs4)
            return r, d1, ee, ssq_new, ssq, fakt, n2 + 1

        r, d1, ee, ssq, ssqo, fakt, _ = jax.lax.while_loop(
            lambda c: live & (c[3] <= c[4]) & (c[6] < TANGENT_MAX_INNER_ITERATIONS), extend,
            (r, d1, ee, ssq, ssqo, jnp.asarray(0.5, r.dtype), jnp.asarray(0, jnp.int32)))
        r, d1 = r - vt[:3] * fakt, d1 - vt[3] * fakt
        ee, ssq = _residuals(r, d1, p, a2, a, vs, vs4)
        return r, d1, ee, ssq, ssq, alpha, nit + 1

    r, *_ = jax.lax.while_loop(running, outer, (r, d1, ee, ssq, ssq,
                                             jnp.asarray(TANGENT_ALPHA, r.dtype),
                                             jnp.asarray(0, jnp.int32)))
    return jnp.where(on_surface, p, r)


# ------------------------------------------------------------------ surface polyline

def _surface_frame(r1, r2, vs, vs4):
    """CalcDistanceOnEllipsoid's frame in the plane (vs, vs4): a0 (the plane's point on the
    coordinate axis of the first largest |vs_i|), the unit vector a0 -> r1, the in-plane unit
    vector perpendicular to it towards r2, and the angle phi0 between a0 -> r1 and a0 -> r2."""
    imax = jnp.argmax(jnp.abs(vs))
    a0 = safe_div(-vs4, vs[imax]) * jnp.asarray(_EYE3)[imax]
    ar1, ar2 = _unit(r1 - a0), _unit(r2 - a0)
    vsz = _unit(jnp.cross(ar1, ar2))
    return a0, ar1, jnp.cross(vsz, ar1), safe_acos(_dot(ar1, ar2))


def _surface_points(a0, ar1, vsy, a, phi):
    """Points where the rays from a0 at angles phi (n,) from ar1 towards vsy leave the
    ellipsoid (CalcDistanceOnEllipsoid's interior points)."""
    ray = ar1 * jnp.cos(phi)[:, None] + vsy * jnp.sin(phi)[:, None]
    f1, f2 = ray / a, a0 / a
    aa, bb, cc = _dot(f1, f1), 2.0 * _dot(f1, f2), _dot(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    # a ray that misses the ellipsoid gives OpenSim sqrt(< 0) = NaN: reproduced
    root = jnp.where(disc >= 0.0, safe_sqrt(disc), jnp.nan)
    mu3 = safe_div(-bb + root, 2.0 * aa)
    return a0 + mu3[:, None] * ray


def _polyline_length(r1, r2, inner, n):
    """Length of the polyline r1, inner[0 .. n-2], r2 (inner (498, 3), n segments)."""
    slot = jnp.arange(MAX_SEGMENTS + 1)
    pts = jnp.concatenate([r1[None], inner, r2[None]])
    pts = jnp.where((slot == n)[:, None], r2, pts)
    seg = pts[1:] - pts[:-1]
    seg2 = _dot(seg, seg)
    seg_len = jnp.where(jnp.isnan(seg2), jnp.nan, safe_sqrt(seg2))   # keeps OpenSim's NaN
    return jnp.sum(jnp.where(slot[:-1] < n, seg_len, 0.0))


def _surface_length(p1, p2, r1, r2, a, vs, vs4, factor, wrap_sign):
    """Step 4: (polyline length, number of segments, far side), scaled coordinates. Both
    polylines (this side, far side) are evaluated, as one batch of rays."""
    chord = safe_sqrt(_dot(r1 - r2, r1 - r2)) / factor          # m, as OpenSim's `len`
    short = chord < SEGMENT_LENGTH_M
    n = jnp.where(short, 1.0, jnp.minimum(jnp.floor(chord / SEGMENT_LENGTH_M), MAX_SEGMENTS))
    n_int = n.astype(jnp.int32)
    a0, ar1, vsy, phi0 = _surface_frame(r1, r2, vs, vs4)
    k = jnp.arange(1, MAX_SEGMENTS, dtype=r1.dtype)                 # interior points 1..498
    both = _surface_points(a0, ar1, vsy, a, jnp.concatenate([k * (phi0 / n),
                                                             k * (-(2.0 * jnp.pi - phi0) / n)]))
    near, far_pts = both[:MAX_SEGMENTS - 1], both[MAX_SEGMENTS - 1:]
    first, last = near[0], near[jnp.maximum(n_int - 2, 0)]
    back = ((_dot(_unit(p1 - r1), _unit(first - r1)) > 0.0)
            | (_dot(_unit(p2 - r2), _unit(last - r2)) > 0.0))
    far = (wrap_sign != 0) & ~short & (n >= 2.0) & back
    total = _polyline_length(r1, r2, jnp.where(far, far_pts, near), n_int)
    return jnp.where(short, chord * factor, total), n, far


# ------------------------------------------------------------------ the wrap

def _status(p1, p2, a):
    """Step 1: (status, p1e, p2e, r1, r2 the intersections), scaled coordinates."""
    q1, q2 = p1 / a, p2 / a
    p1e = -1.0 + q1[0] * q1[0] + q1[1] * q1[1] + q1[2] * q1[2]
    p2e = -1.0 + q2[0] * q2[0] + q2[1] * q2[1] + q2[2] * q2[2]
    inside = (p1e < -SURFACE_TOLERANCE) | (p2e < -SURFACE_TOLERANCE)
    p1p2 = p1 - p2
    collinear = jnp.abs(_dot(_unit(p1), _unit(p2)) - 1.0) < SURFACE_TOLERANCE
    f1, f2 = p1p2 / a, p2 / a
    aa, bb, cc = _dot(f1, f1), 2.0 * _dot(f1, f2), _dot(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    root = safe_sqrt(disc)
    l1 = safe_div(-bb + root, 2.0 * aa)
    l2 = safe_div(-bb - root, 2.0 * aa)
    crosses = (disc >= 0.0) & (0.0 < l1) & (l1 < 1.0) & (0.0 < l2) & (l2 < 1.0)
    status = jnp.where(inside, INSIDE_RADIUS,
                       jnp.where(~collinear & crosses, MANDATORY_WRAP, NO_WRAP))
    return status, p1e, p2e, p2 + l1 * p1p2, p2 + l2 * p1p2


def _wrap_plane_point(p1, p2, r1, r2, a, pair_sum, wrap_axis, wrap_sign, skip):
    """Step 2: (c1, r_start (3,) the tangent points' starting point), scaled coordinates."""
    r1r2 = r2 - r1
    mu = jnp.abs(_unit(p1 - p2))
    t = safe_div(-r1, r1r2)                                         # (3,): coordinate i = 0
    t_sv = r1 + t[:, None] * r1r2                                   # (3, 3)
    best = jnp.argmax(mu)
    t_best = t[best]
    s = jnp.where((t_best < 0.0) | (t_best > 1.0), 0.0,
                  jnp.where(t_best < SV_BOUNDARY_BLEND, t_best / SV_BOUNDARY_BLEND,
                            jnp.where(t_best > 1.0 - SV_BOUNDARY_BLEND,
                                      (1.0 - t_best) / SV_BOUNDARY_BLEND, 1.0)))
    mu_best = mu[best]
    mu_best = jnp.where((mu_best > MU_BLEND_MIN) & (s < 1.0),
                        MU_BLEND_MIN + s * (mu_best - MU_BLEND_MIN), mu_best)
    fan = mu_best < MU_BLEND_MAX

    # the Frans points (one per axis, that axis given) and the fan's samples, one batch
    tt = jnp.arange(1, NUM_FAN_SAMPLES - 1, dtype=r1.dtype) / NUM_FAN_SAMPLES
    samples = r1 + tt[:, None] * r1r2                               # (298, 3)
    n_fan = NUM_FAN_SAMPLES - 2
    found_pts, found = _closest_points(
        a, pair_sum, jnp.concatenate([t_sv, samples]),
        jnp.concatenate([jnp.arange(3), jnp.full(n_fan, -1)]),
        jnp.concatenate([jnp.full(3, skip), jnp.full(n_fan, skip | ~fan)]))
    t_c1 = found_pts[:3]
    # a fan sample whose iteration failed reuses the previous sample's point (the first one:
    # the Frans point of axis 0, OpenSim's t_c1[0])
    last_ok = jax.lax.cummax(jnp.where(found[3:], jnp.arange(n_fan), -1))
    blade_pts = jnp.where((last_ok >= 0)[:, None], found_pts[3 + jnp.maximum(last_ok, 0)],
                          t_c1[0])
    v_sum = jnp.sum(_unit(blade_pts - samples), axis=0)
    sv_fan = r1 + 0.5 * r1r2
    c1_frans = t_c1[best]
    w = (mu_best - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
    blend = fan & (mu_best > MU_BLEND_MIN)
    fan_weight = jnp.where(~fan, -jnp.inf, jnp.where(blend, 1.0 - w, 1.0))
    fw = jnp.minimum(fan_weight, 1.0)
    on_axis = jnp.arange(3) == wrap_axis

    def stages(found, ok):
        """The three closest points found one after the other (the fan's c1, the blend's c1,
        the quadrant's c1), each from the previous ones: (their inputs, skips, c1 before the
        quadrant test, whether it flips, the mirrored c1)."""
        fan_in = sv_fan + _unit(v_sum)
        blended_in = w * c1_frans + (1.0 - w) * jnp.where(ok[0], found[0], t_c1[1])
        c1 = jnp.where(~fan, c1_frans,
                       jnp.where(blend, jnp.where(ok[1], found[1], c1_frans), found[0]))
        # quadrant: mirror c1 onto the active side, then move it by the fan weight towards
        # the bisection (0) and back onto the surface
        flip = (wrap_sign != 0) & (_dsign(c1[wrap_axis]) != wrap_sign)
        mirrored = jnp.where(on_axis, -c1, c1)
        moved_axis = mirrored + jnp.where(fw > 0.0, fw, 0.0) * (0.0 - mirrored)
        moved = jnp.where(on_axis, moved_axis, mirrored)
        inputs = jnp.stack([fan_in, blended_in, moved])
        skips = jnp.stack([skip | ~fan, skip | ~blend, skip | ~(flip & (fw > 0.0))])
        return inputs, skips, c1, flip, mirrored

    def stage(i, carry):
        found, ok = carry
        inputs, skips, *_ = stages(found, ok)
        point, point_ok = _closest_point(a, pair_sum, inputs[i], -1, skips[i])
        return found.at[i].set(point), ok.at[i].set(point_ok)

    # one closest-point solve traced, run three times (less to compile than three solves)
    found, ok = jax.lax.fori_loop(0, 3, stage, (jnp.zeros((3, 3), r1.dtype),
                                                jnp.zeros(3, bool)))
    inputs, skips, c1, flip, mirrored = stages(found, ok)
    c1_flip = jnp.where(~skips[2], jnp.where(ok[2], found[2], inputs[2]), mirrored)
    return jnp.where(flip, c1_flip, c1), jnp.where(flip, mirrored, c1)


def _wrap_flat(points, radii, wrap_axis, wrap_sign, skip):
    """(9,): r1, r2 (m), length (m), n_segments, far_side (0/1) of the segment points =
    (p1, p2) (6,) over the ellipsoid radii (3,); r1 = p1, r2 = p2, length 0 unless
    mandatoryWrap. The function `LoopDerivatives` differentiates."""
    factor = 3.0 / (radii[0] + radii[1] + radii[2])
    p1, p2, a = points[:3] * factor, points[3:] * factor, radii * factor
    status, p1e, p2e, x1, x2 = _status(p1, p2, a)
    skip = skip | (status != MANDATORY_WRAP)
    pair_sum = jnp.stack([radii[1] + radii[2], radii[0] + radii[2], radii[0] + radii[1]])

    inputs = (p1, p2, a, x1, x2, p1e, p2e)

    def construct(flag):
        # the barrier ties the inputs to the loop's flag: otherwise XLA hoists the whole
        # construction out of the loop (it depends on nothing the loop changes) and runs it
        # for every segment
        _, (p1, p2, a, x1, x2, p1e, p2e) = jax.lax.optimization_barrier((flag, inputs))
        c1, start = _wrap_plane_point(p1, p2, x1, x2, a, pair_sum, wrap_axis, wrap_sign, skip)
        vs = _unit(jnp.cross(p1 - p2, p1 - c1))
        vs4 = -_dot(vs, c1)
        tangent = jax.vmap(_tangent_point, in_axes=(0, None, 0, None, None, None, None))
        r = tangent(jnp.stack([p1e, p2e]), start, jnp.stack([p1, p2]), a, vs, vs4, skip)
        length, n, far = _surface_length(p1, p2, r[0], r[1], a, vs, vs4, factor, wrap_sign)
        return jnp.concatenate([r[0] / factor, r[1] / factor,
                                jnp.stack([length / factor, n, jnp.where(far, 1.0, 0.0)])])

    # the construction runs in a loop of one trip, none for a segment that does not wrap:
    # under vmap it then costs nothing unless some lane wraps (cylinder lanes of a path set
    # with both kinds, segments outside the wrap's point range)
    fallback = jnp.concatenate([points, jnp.zeros(3, points.dtype)])
    _, out = jax.lax.while_loop(lambda c: c[0],
                                lambda c: (jnp.asarray(False), construct(c[0])),
                                (~skip, fallback))
    return jnp.where(skip, fallback, out)


#: (jitted: traced once however often the paths call it, which shortens their tracing)
_WRAP = LoopDerivatives(jax.jit(_wrap_flat))


def ellipsoid_status(p1, p2, radii) -> jax.Array:
    """Step 1 alone: the status (int) of the segment p1-p2 over the ellipsoid `radii` (m)."""
    factor = 3.0 / (radii[0] + radii[1] + radii[2])
    return _status(p1 * factor, p2 * factor, radii * factor)[0].astype(jnp.int32)


def opensim_ellipsoid_wrap(p1, p2, radii, wrap_axis, wrap_sign, skip=False) -> EllipsoidWrap:
    """OpenSim WrapEllipsoid::wrapLine (method "hybrid") for the segment p1-p2 (ellipsoid
    frame, (3,) each, m).

    radii (3,): the semi-axes along x, y, z (m, > 0). wrap_axis (int 0..2), wrap_sign (int -1,
    0, +1): the quadrant (sign 0 = "all"); both may be traced. skip: a (traced) bool for lanes
    that are not this ellipsoid's (no loop runs for them; they return noWrap). See the module
    docstring for the steps and the derivatives.
    """
    dtype = jnp.result_type(p1, p2, radii, float)
    points = jnp.concatenate([jnp.asarray(p1, dtype), jnp.asarray(p2, dtype)])
    radii = jnp.asarray(radii, dtype)
    skip = jnp.asarray(skip, bool)
    status = jnp.where(skip, NO_WRAP, ellipsoid_status(points[:3], points[3:], radii))
    out = _WRAP(points, radii, wrap_axis, wrap_sign, skip)
    return EllipsoidWrap(status.astype(jnp.int32), out[0:3], out[3:6], out[6],
                         jax.lax.stop_gradient(out[7]).astype(jnp.int32),
                         jax.lax.stop_gradient(out[8]) > 0.5)
