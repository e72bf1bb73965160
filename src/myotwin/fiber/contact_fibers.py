"""Fiber-fiber contact: curve-curve, two half-passes, rational penalty on current radii.

Gfrerer & Simeon 2021, Sec. 2.4 (Eqs. 39-44) with the quadrature of Sec. 4.3 (Eqs. 65-68).
Two-half-pass approach (Sauer & De Lorenzis, refs. [20, 21] of the seed): in the half-pass
A -> B every contact quadrature point x_k of fiber A looks for its closest point y on fiber B,

  g_k = |x_k - y| / (r_x + r_y) - 1                        dimensionless gap, current radii (40)
  r_x = r_0,A sqrt(|A_1| / |a_1|) at x_k,  r_y = r_0,B sqrt(|A_1| / |a_1|) at y          (21)
  F(g) = -kappa g / (1 + gamma g) for -1/gamma < g < 0, else 0                           (44)

and fiber A alone receives the line force F(g_k) (x_k - y)/|x_k - y| per unit current length of
A, integrated as in Eq. (65): sum_k F n_k . xi(x_k) |a_1(x_k)| w_k h. The half-pass B -> A
gives fiber B its own force; neither pass applies a reaction (that is the two-half-pass idea:
no master/slave bias, action = reaction only up to the discretisation error). The seed writes
n = (y - x)/d (Eq. 43) with a sign that, combined with its Eq. (56), pushes the fibers apart;
we write the force as repulsive directly.

Which partner element and parameter xi* belong to x_k is decided in NumPy (`find_contacts`,
quintic Eq. 67 with all real roots plus the element ends, AABB pruning: `closest_point`). The
force is then a smooth function of the 24 dofs of the two elements, with xi(q) defined
implicitly by (y(xi) - x_k) . y'(xi) = 0 when xi* is interior:

  xi = xi* - f(xi*, q) / [df/dxi](xi*)   (value xi* to round-off; derivative -f_q / f_xi,
                                          the implicit-function theorem)

and xi = xi* (constant) at an element end. `jax.jacfwd` of this gives the exact tangent
(12 x 24 per contact point). r_0 at the partner's xi comes from Lagrange interpolation through
the element's contact-point values (`qc_r0_m`; exact for polynomial r_0 up to degree n_qc - 1,
e.g. the seed's quartic Eq. 77 with 5 points), |A_1| from the reference Hermite element.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.fiber import closest_point, hermite
from myotwin.scalars import as_real

#: Box padding as a multiple of the largest current radius at an element's contact points
#: (the radius between quadrature points may exceed the sampled maximum slightly).
BOX_RADIUS_FACTOR = 1.25


@dataclasses.dataclass(frozen=True)
class FiberContactLaw:
    """Rational penalty of fiber-fiber contact (a JAX pytree): kappa_N_per_m (F'(0^-) = -kappa),
    gamma (gaps g <= -1/gamma are inadmissible)."""

    kappa_N_per_m: jax.Array
    gamma: jax.Array


jax.tree_util.register_dataclass(FiberContactLaw, data_fields=["kappa_N_per_m", "gamma"],
                                 meta_fields=[])


def make_fiber_contact_law(kappa_N_per_m: float, gamma: float) -> FiberContactLaw:
    """Validated `FiberContactLaw`; raises ValueError naming the field."""
    kappa, g = as_real(kappa_N_per_m), as_real(gamma)
    if kappa is None or not (math.isfinite(kappa) and kappa > 0):
        raise ValueError(f"fiber contact: kappa_N_per_m = {kappa_N_per_m!r} must be finite, > 0")
    if g is None or not (math.isfinite(g) and g > 0):
        raise ValueError(f"fiber contact: gamma = {gamma!r} must be finite and > 0 (the "
                         f"barrier that keeps fibers from crossing)")
    return FiberContactLaw(jnp.asarray(float(kappa_N_per_m), jnp.float64),
                           jnp.asarray(float(gamma), jnp.float64))


def lagrange_basis(nodes, xi):
    """Lagrange basis through `nodes` (n,) at xi (scalar or (m,)): (n,) or (m, n). NumPy/JAX."""
    xp = jnp if isinstance(xi, jax.Array) or isinstance(nodes, jax.Array) else np
    xi = xp.asarray(xi)[..., None]
    n = nodes.shape[0]
    cols = []
    for j in range(n):
        term = xp.ones_like(xi[..., 0])
        for m in range(n):
            if m != j:
                term = term * (xi[..., 0] - nodes[m]) / (nodes[j] - nodes[m])
        cols.append(term)
    return xp.stack(cols, axis=-1)


def _second_derivatives(xi):
    return jnp.stack([12.0 * xi - 6.0, 6.0 * xi - 4.0, 6.0 - 12.0 * xi, 6.0 * xi - 2.0])


def point_force(law: FiberContactLaw, xa_e, xb_e, h_a, h_b, phi_k, dphi_k, w_k, r0_a, refn_a,
                ref_b_e, r0_b_nodes, qc_xi, xi_star, interior):
    """Contact force of one half-pass point on the 12 dofs of A's element, and eps = 1 + gamma g.

    xa_e, xb_e (12,): dofs of A's and B's elements; h_a, h_b their lengths in theta; phi_k,
    dphi_k (4,), w_k: shape values and weight of A's contact point; r0_a, refn_a: r_0 and |A_1|
    there; ref_b_e (12,) reference dofs of B's element, r0_b_nodes (n_qc,) r_0 at its contact
    points qc_xi (n_qc,); xi_star the closest parameter (not differentiated), interior True when
    it is a root of the quintic. Returns (force (12,) in N, eps).
    """
    ca = hermite.element_coefficients(xa_e, h_a)
    cb = hermite.element_coefficients(xb_e, h_b)
    x = phi_k @ ca
    a1 = dphi_k @ ca / h_a
    xi0 = jax.lax.stop_gradient(xi_star)
    y0 = hermite.shape_functions(xi0) @ cb
    y1 = hermite.shape_derivatives(xi0) @ cb
    y2 = _second_derivatives(xi0) @ cb
    f = jnp.dot(y0 - x, y1)
    f_xi = jnp.dot(y1, y1) + jnp.dot(y0 - x, y2)
    f_used = jnp.where(interior, f, 0.0)
    f_xi_safe = jnp.where(interior & (f_xi > 0), f_xi, 1.0)
    xi = xi0 - f_used / jax.lax.stop_gradient(f_xi_safe)
    y = hermite.shape_functions(xi) @ cb
    yt = hermite.shape_derivatives(xi) @ cb
    cref = hermite.element_coefficients(ref_b_e, h_b)
    yt_ref = hermite.shape_derivatives(xi) @ cref
    r0_b = lagrange_basis(qc_xi, xi) @ r0_b_nodes
    norm = lambda v: jnp.sqrt(jnp.sum(v * v))  # noqa: E731
    a1_norm = norm(a1)
    r_x = r0_a * jnp.sqrt(refn_a / a1_norm)
    r_y = r0_b * jnp.sqrt(norm(yt_ref) / norm(yt))  # ratio of d/dxi = ratio of d/dtheta
    diff = x - y
    d = jnp.sqrt(jnp.maximum(jnp.sum(diff * diff), 1e-300))
    g = d / (r_x + r_y) - 1.0
    g_neg = jnp.minimum(g, 0.0)
    magnitude = -law.kappa_N_per_m * g_neg / (1.0 + law.gamma * g_neg)
    line = magnitude * a1_norm * diff / d  # per unit theta of A
    rows = phi_k[:, None] * line[None, :] * (w_k * h_a)
    scale = jnp.array([1.0, h_a, 1.0, h_a])
    return (rows * scale[:, None]).reshape(12), 1.0 + law.gamma * g


def point_force_and_jacobian(law, xa_e, xb_e, *args):
    """`point_force` and its Jacobian (12, 24) w.r.t. (xa_e, xb_e), by forward mode."""
    def f(z):
        return point_force(law, z[:12], z[12:], *args)

    z = jnp.concatenate([xa_e, xb_e])
    (force, eps), f_jvp = jax.linearize(f, z)
    jac = jax.vmap(lambda t: f_jvp(t)[0], out_axes=1)(jnp.eye(24, dtype=z.dtype))
    return force, eps, jac


class ContactPoints(NamedTuple):
    """Closest-point data of half-pass contact points (NumPy, one row per point).

    elem_a, point_k: global element of the point and its contact-point index; elem_b: partner
    element (global); xi: closest parameter on it; interior: xi is a quintic root in (0, 1);
    distance (m), r_x, r_y (m), gap g.
    """

    elem_a: np.ndarray
    point_k: np.ndarray
    elem_b: np.ndarray
    xi: np.ndarray
    interior: np.ndarray
    distance: np.ndarray
    r_x: np.ndarray
    r_y: np.ndarray
    gap: np.ndarray


class Geometry(NamedTuple):
    """Current geometry of every element (NumPy): Hermite rows (n_E, 4, 3), contact points
    x (n_E, n_qc, 3), |a_1| there (n_E, n_qc), current radius there (n_E, n_qc)."""

    rows: np.ndarray
    x: np.ndarray
    a1_norm: np.ndarray
    radius: np.ndarray


def geometry(u_el: np.ndarray, h: np.ndarray, qc_phi, qc_dphi, qc_ref_norm, qc_r0) -> Geometry:
    """Geometry from element dofs u_el (n_E, 12) and element lengths h (n_E,)."""
    rows = u_el.reshape(-1, 4, 3) * np.stack([np.ones_like(h), h, np.ones_like(h), h],
                                             axis=1)[:, :, None]
    x = np.einsum("kj,ejc->ekc", qc_phi, rows)
    a1 = np.einsum("kj,ejc->ekc", qc_dphi, rows) / h[:, None, None]
    a1n = np.linalg.norm(a1, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = qc_r0 * np.sqrt(qc_ref_norm / a1n)
    return Geometry(rows, x, a1n, r)


def partner_radius(xi, elem_b, h, ref_el, qc_r0, qc_xi, rows) -> np.ndarray:
    """Current radius r_y (N,) at parameters xi (N,) of elements elem_b (N,) (NumPy)."""
    href = h[elem_b]
    cref = ref_el[elem_b].reshape(-1, 4, 3) * np.stack(
        [np.ones_like(href), href, np.ones_like(href), href], axis=1)[:, :, None]
    dphi = hermite.shape_derivatives(xi)
    t_ref = np.einsum("nj,njc->nc", dphi, cref)
    t_cur = np.einsum("nj,njc->nc", dphi, rows[elem_b])
    r0 = np.sum(lagrange_basis(np.asarray(qc_xi), xi) * qc_r0[elem_b], axis=1)
    return r0 * np.sqrt(np.linalg.norm(t_ref, axis=1) / np.linalg.norm(t_cur, axis=1))


#: Partner elements examined per point: those within this many elements of the partner node
#: nearest to the point (the closest point of a C1 curve whose elements are short against its
#: curvature radius and the contact distance lies next to the nearest node).
NEIGHBOUR_ELEMENTS = 2


def closest_candidates(geom: Geometry, passes: list[tuple[np.ndarray, np.ndarray]],
                       pad: np.ndarray, h, ref_el, qc_r0, qc_xi) -> ContactPoints:
    """Half-passes A -> B: for every contact point of A within reach of B, its closest point on
    B; all passes at once.

    passes: (elements of A, elements of B) per half-pass, global indices, each fiber's elements
    in order. pad (n_E,): box padding per element (radius bound + motion allowance), m.
    Search, O(n log n) in the number of elements: (1) the partner node nearest to each point (a
    k-d tree over B's nodes); (2) candidate elements: the NEIGHBOUR_ELEMENTS elements on either
    side of that node; (3) bounding-box pruning: a candidate survives when its AABB (Bezier
    control points padded by `pad`) is within the point's own reach (its pad scaled to its
    radius), and when the lower bound of its distance (unpadded box) does not exceed the best
    upper bound (distance to the ends and midpoint) over the point's candidates; (4) the quintic
    (all real roots + element ends) on the survivors, the minimum per point.
    A minimum at an element end that is an inner node of fiber B is a stationary point of the
    C1 centreline (the neighbour shares it), so it is marked `interior` (its parameter follows
    the implicit-function rule); only the two ends of fiber B are true boundary minima.
    (Padding boxes by the radius makes them much longer than fine elements, so pairing element
    boxes directly grows as n^2; the nearest-node step keeps the candidates per point bounded.)
    """
    from scipy.spatial import cKDTree

    n_qc = geom.x.shape[1]
    boxes_lo, boxes_hi = closest_point.element_boxes(geom.rows, pad)
    parts = []
    for p, (elems_a, elems_b) in enumerate(passes):
        nodes_b = np.concatenate([geom.rows[elems_b, 0], geom.rows[elems_b[-1:], 2]])
        x = geom.x[elems_a].reshape(-1, 3)
        _, nearest = cKDTree(nodes_b).query(x)
        offsets = np.arange(-NEIGHBOUR_ELEMENTS, NEIGHBOUR_ELEMENTS)
        local = np.clip(nearest[:, None] + offsets[None, :], 0, elems_b.size - 1)
        ea = np.repeat(np.repeat(elems_a, n_qc), offsets.size)
        k = np.repeat(np.tile(np.arange(n_qc), elems_a.size), offsets.size)
        eb = elems_b[local.reshape(-1)]
        keep = np.ones(eb.size, bool)
        keep[1:] = ~((eb[1:] == eb[:-1]) & (ea[1:] == ea[:-1]) & (k[1:] == k[:-1]))  # clipped
        parts.append((ea[keep], k[keep], eb[keep], np.full(int(keep.sum()), p),
                      np.full(int(keep.sum()), elems_b[0]), np.full(int(keep.sum()),
                                                                    elems_b[-1])))
    if not parts:
        return empty_points()
    ea, k, eb, pid, fb, lb = (np.concatenate([q[i] for q in parts]) for i in range(6))
    # bounding boxes: the point's own reach (its padded radius) must touch B's padded box
    x = geom.x[ea, k]
    outside = np.maximum(np.maximum(boxes_lo[eb] - x, x - boxes_hi[eb]), 0.0)
    reach = pad[ea] * (geom.radius[ea, k] / np.maximum(np.max(geom.radius[ea], axis=1), 1e-300))
    near = np.sum(outside * outside, axis=1) <= reach * reach
    ea, eb, pid, fb, lb, k = ea[near], eb[near], pid[near], fb[near], lb[near], k[near]
    if ea.size == 0:
        return empty_points()
    # per point, drop partner elements that cannot hold its closest point: a lower bound of the
    # distance (to the element's unpadded control-point box) above the smallest upper bound
    # (distance to the element's ends and midpoint) over the point's candidates
    x = geom.x[ea, k]
    ctrl_lo, ctrl_hi = closest_point.element_boxes(geom.rows[eb], np.zeros(eb.size))
    gap_box = np.maximum(np.maximum(ctrl_lo - x, x - ctrl_hi), 0.0)
    lower = np.sqrt(np.sum(gap_box * gap_box, axis=1))
    rows = geom.rows[eb]
    mid = 0.5 * (rows[:, 0] + rows[:, 2]) + 0.125 * (rows[:, 1] - rows[:, 3])  # y(1/2), Eq. 53
    upper = np.min(np.stack([np.linalg.norm(rows[:, 0] - x, axis=1),
                             np.linalg.norm(rows[:, 2] - x, axis=1),
                             np.linalg.norm(mid - x, axis=1)]), axis=0)
    key = (pid * geom.x.shape[0] + ea) * n_qc + k
    _, inverse = np.unique(key, return_inverse=True)
    best_upper = np.full(inverse.max() + 1, np.inf)
    np.minimum.at(best_upper, inverse, upper)
    keep = lower <= best_upper[inverse] * (1 + 1e-12)
    ea, eb, pid, fb, lb, k = ea[keep], eb[keep], pid[keep], fb[keep], lb[keep], k[keep]
    v = closest_point.power_coefficients(geom.rows[eb])
    xi, dist, interior = closest_point.closest_on_elements(v, geom.x[ea, k])
    key = (pid * geom.x.shape[0] + ea) * n_qc + k
    order = np.lexsort((dist, key))
    first = np.ones(order.size, bool)
    first[1:] = key[order][1:] != key[order][:-1]
    sel = order[first]
    ea, k, eb, xi, dist, interior = ea[sel], k[sel], eb[sel], xi[sel], dist[sel], interior[sel]
    interior = interior | ((xi == 0.0) & (eb != fb[sel])) | ((xi == 1.0) & (eb != lb[sel]))
    r_x = geom.radius[ea, k]
    r_y = partner_radius(xi, eb, h, ref_el, qc_r0, qc_xi, geom.rows)
    gap = dist / (r_x + r_y) - 1.0
    return ContactPoints(ea, k, eb, xi, interior, dist, r_x, r_y, gap)


def empty_points() -> ContactPoints:
    """No contact points."""
    i, f = np.zeros(0, int), np.zeros(0)
    return ContactPoints(i, i, i, f, np.zeros(0, bool), f, f, f, f)


def select(points: ContactPoints, mask: np.ndarray) -> ContactPoints:
    """Rows of `points` where mask is True."""
    return ContactPoints(*(np.asarray(a)[mask] for a in points))


def concatenate(parts: list[ContactPoints]) -> ContactPoints:
    """Stack several half-passes' points."""
    if not parts:
        return empty_points()
    return ContactPoints(*(np.concatenate([np.asarray(getattr(p, f)) for p in parts])
                           for f in ContactPoints._fields))


def bucket_size(n: int, minimum: int = 16) -> int:
    """Padded length (a power of two >= minimum) so that jit compiles few shapes."""
    return max(minimum, 1 << max(0, int(math.ceil(math.log2(max(n, 1))))))
