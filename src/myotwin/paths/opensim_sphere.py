"""OpenSim's WrapSphere for one segment: `WrapSphere::wrapLine` of OpenSim 4.6.

Re-implemented from this description of its algorithm (opensim-core
OpenSim/Simulation/Wrap/WrapSphere.cpp). In the sphere frame (centre O = 0, radius R), with end
points P1 = p1, P2 = p2:
* insideRadius if |P1| < R or |P2| < R;
* noWrap unless the straight line P1-P2 crosses the sphere with both crossings strictly between
  the points (the roots l of |P2 + l (P1 - P2)|^2 = R^2 both in (0, 1));
* the wrap lies in the plane through O, P1 and P2, normal n = unit(u x unit(P2)),
  u = unit(P1 - P2). From each end P (distance d, y = unit(O - P), z = n x y, a = asin(R / d))
  the two tangent points are P + sqrt(d^2 - R^2) (cos(a) y -+ sin(a) z) ("a" and "b");
* without a quadrant, r1, r2 are the pair whose unit vectors from O have the largest dot
  product (OpenSim's if-chain, its order breaking ties), status wrapped;
* with a quadrant (axis k, sign s; a coordinate's sign is +1 for >= 0, else -1):
  - if an end is on the quadrant's side: mandatoryWrap if the closest point M of the line to O
    lies inside the sphere and the distance t from P1 towards P2 to it satisfies 0 < t < 1
    (metres: OpenSim compares the distance with 1, a quirk kept); otherwise wrapped if the
    ends' signs differ and M's sign is not s, else noWrap;
  - if an end is off the quadrant's side: r1 (and r2) is the tangent point of its end whose
    unit vector is closer to unit((O - P1) + (O - P2)); if ((r1 - P1) + (r2 - P2)) . s e_k < 0
    the other two are taken; and the wrap is on the far side if (r1 + r2) . ((r1 - P1) +
    (r2 - P2)) < 0;
* length R angle, angle = acos(r1_hat . r2_hat), or -(2 pi - angle) on the far side: OpenSim's
  wrap length is then negative, and so is its contribution to the path length (reproduced).
OpenSim falls back to the previous evaluation's tangent points when the line passes within
1e-5 (relative) of the centre; with no previous evaluation here, any plane through the line
is taken (a measure-zero set of poses). `turn` is 0 (mass points on a sphere wrap are refused,
`myotwin.inertia.opensim_points`).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from myotwin.paths.opensim_cylinder import (INSIDE_RADIUS, MANDATORY_WRAP, NO_WRAP, WRAPPED,
                                            CylinderWrap)
from myotwin.paths.safe import norm, safe_acos, safe_asin, safe_div, safe_sqrt

#: |u x unit(P2)| below which OpenSim gives up constructing the plane (WrapSphere.cpp).
DEGENERATE = 1e-5


def _unit(v):
    return v * safe_div(1.0, norm(v))


def _sign(x):
    """OpenSim's DSIGN: +1 for x >= 0, else -1."""
    return jnp.where(x >= 0.0, 1, -1)


def _tangent_points(p, radius, n):
    """The two tangent points ("a", "b") from p in the plane with normal n."""
    d = norm(p)
    y = _unit(-p)
    z = jnp.cross(n, y)
    a = safe_asin(safe_div(radius, d))
    reach = safe_sqrt(d * d - radius * radius)
    return (p + reach * (jnp.cos(a) * y - jnp.sin(a) * z),
            p + reach * (jnp.cos(a) * y + jnp.sin(a) * z))


def _plane_normal(u, p2):
    """unit(u x unit(p2)), or a normal to u where that is degenerate (module docstring)."""
    h = jnp.cross(u, _unit(p2))
    fallback_axis = jnp.eye(3)[jnp.argmin(jnp.abs(u))]
    degenerate = norm(h) < DEGENERATE
    return _unit(jnp.where(degenerate, jnp.cross(u, fallback_axis), h))


def _unconstrained(r1a, r1b, r2a, r2b):
    """(r1, r2, other r1, other r2) by OpenSim's largest-dot-product chain."""
    ua, ub, va, vb = (_unit(v) for v in (r1a, r1b, r2a, r2b))
    j1, j2, j3, j4 = ua @ va, ua @ vb, ub @ va, ub @ vb
    first = (j1 > j2) & (j1 > j3) & (j1 > j4)
    second = ~first & (j2 > j3) & (j2 > j4)
    third = ~first & ~second & (j3 > j4)
    r1 = jnp.where(first | second, r1a, r1b)
    r2 = jnp.where(first | third, r2a, r2b)
    return r1, r2, jnp.where(first | second, r1b, r1a), jnp.where(first | third, r2b, r2a)


def opensim_sphere_wrap(p1, p2, radius, axis, sign) -> CylinderWrap:
    """WrapSphere::wrapLine for the segment p1-p2 (sphere frame, (3,) each, m): radius (m),
    quadrant axis (0, 1, 2) and sign (+1, -1, or 0 for "all"; both may be traced)."""
    d1, d2 = norm(p1), norm(p2)
    inside = (d1 < radius) | (d2 < radius)
    ri = p1 - p2
    a = ri @ ri
    b = 2.0 * (p2 @ ri)
    c = p2 @ p2 - radius * radius
    disc = b * b - 4.0 * a * c
    root = safe_sqrt(disc)
    l1, l2 = safe_div(-b + root, 2.0 * a), safe_div(-b - root, 2.0 * a)
    crosses = (disc >= 0.0) & (0.0 < l1) & (l1 < 1.0) & (0.0 < l2) & (l2 < 1.0) & (l1 >= l2)

    u = _unit(ri)
    n = _plane_normal(u, p2)
    r1a, r1b = _tangent_points(p1, radius, n)
    r2a, r2b = _tangent_points(p2, radius, n)
    r1, r2, _, _ = _unconstrained(r1a, r1b, r2a, r2b)

    # the quadrant (OpenSim's two blocks, each where it applies)
    s1, s2 = _sign(p1[axis]), _sign(p2[axis])
    closest = p1 - (p1 @ u) * u
    t = p1 @ u                        # metres from P1 towards P2 (p1p2 points P2 -> P1)
    mandatory = (closest @ closest < radius * radius) & (t > 0.0) & (t < 1.0)
    on_side = (s1 == sign) | (s2 == sign)
    first_status = jnp.where(mandatory, MANDATORY_WRAP,
                             jnp.where((s1 != s2) & (_sign(closest[axis]) != sign),
                                       WRAPPED, NO_WRAP))
    off_side = (s1 != sign) | (s2 != sign)
    toward = _unit(-p1 - p2)
    pick1 = _unit(r1a) @ toward > _unit(r1b) @ toward
    pick2 = _unit(r2a) @ toward > _unit(r2b) @ toward
    c1, o1 = jnp.where(pick1, r1a, r1b), jnp.where(pick1, r1b, r1a)
    c2, o2 = jnp.where(pick2, r2a, r2b), jnp.where(pick2, r2b, r2a)
    wrap_axis = sign * jnp.eye(3)[axis]
    flip = _unit((c1 - p1) + (c2 - p2)) @ wrap_axis < 0.0
    c1, c2 = jnp.where(flip, o1, c1), jnp.where(flip, o2, c2)
    far = (c1 + c2) @ ((c1 - p1) + (c2 - p2)) < 0.0
    constrained = sign != 0
    second = constrained & off_side
    r1, r2 = jnp.where(second, c1, r1), jnp.where(second, c2, r2)
    far = second & far

    angle = safe_acos(jnp.clip(_unit(r1) @ _unit(r2), -1.0, 1.0))
    angle = jnp.where(far, -(2.0 * math.pi - angle), angle)
    status = jnp.where(constrained & on_side, first_status, WRAPPED)
    status = jnp.where(inside, INSIDE_RADIUS, jnp.where(crosses, status, NO_WRAP))
    # turn: 0, as an array that depends on the inputs (a constant's tangent would be a
    # symbolic zero, whose shape the caller's custom JVP does not restore)
    return CylinderWrap(status.astype(jnp.int32), r1, r2, radius * angle, 0.0 * angle)
