"""Closest points on cubic Hermite centrelines (quintic of Eq. 67) and bounding-box pruning.

Gfrerer & Simeon 2021, Sec. 4.3. On an element of a partner fiber the centreline is the cubic
y(xi) = v_1 + v_2 xi + v_3 xi^2 + v_4 xi^3, xi in [0, 1], with the power-basis coefficients of
Eq. (68) built from the Hermite coefficient rows y_1..y_4 = (x_a, h x'_a, x_b, h x'_b):

  v_1 = y_1,  v_2 = y_2,  v_3 = -3 y_1 - 2 y_2 + 3 y_3 - y_4,  v_4 = 2 y_1 + y_2 - 2 y_3 + y_4.

A point x_k has its closest point where (y(xi) - x_k) . y'(xi) = 0 (Eq. 66), the quintic (67)

  c_0 + c_1 xi + ... + c_5 xi^5 = 0,   c_0 = p.v_2, c_1 = 2 p.v_3 + v_2.v_2,
  c_2 = 3 (p.v_4 + v_2.v_3), c_3 = 4 v_2.v_4 + 2 v_3.v_3, c_4 = 5 v_3.v_4, c_5 = 3 v_4.v_4,

with p = v_1 - x_k. As the seed asks (it uses Matlab's `roots`), all its real roots in [0, 1]
and both element ends are candidates; the candidate with the smallest distance wins. Roots are
the eigenvalues of companion matrices, batched (`numpy.linalg.eigvals` on (N, d, d)), grouped
by the effective degree (a straight, uniformly parametrised element has v_4 = 0 and a lower
degree), then polished by two Newton steps on the quintic. Everything here is NumPy: it runs
outside the traced residual and only decides *which* element and parameter are the partner of
each contact point; the force and its exact tangent are then evaluated in JAX
(`contact_fibers`).

Candidate pairs of elements are pruned by axis-aligned bounding boxes. The box of a cubic
element is that of its Bezier control points x_a, x_a + h x'_a/3, x_b - h x'_b/3, x_b (convex
hull property), enlarged by a bound of the element's current radius. Overlapping pairs are
found with a uniform grid (cell size = largest box extent; each box touches at most 2 cells per
axis), so the search costs O(n log n) in the number of elements rather than O(n^2).
"""

from __future__ import annotations

import numpy as np

#: Relative size below which a leading coefficient is treated as zero (degree drop).
_DEGREE_TOL = 1e-13


def power_coefficients(coef_rows: np.ndarray) -> np.ndarray:
    """Hermite coefficient rows (..., 4, 3) = (x_a, h x'_a, x_b, h x'_b) -> v_1..v_4 (..., 4, 3)
    of Eq. (68)."""
    y1, y2, y3, y4 = (coef_rows[..., i, :] for i in range(4))
    return np.stack([y1, y2, -3 * y1 - 2 * y2 + 3 * y3 - y4, 2 * y1 + y2 - 2 * y3 + y4], axis=-2)


def quintic_coefficients(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Coefficients c_0..c_5 (N, 6) of Eq. (67) for elements v (N, 4, 3) and points x (N, 3)."""
    dot = lambda a, b: np.sum(a * b, axis=-1)  # noqa: E731
    v1, v2, v3, v4 = (v[:, i, :] for i in range(4))
    p = v1 - x
    return np.stack([dot(p, v2), 2 * dot(p, v3) + dot(v2, v2), 3 * (dot(p, v4) + dot(v2, v3)),
                     4 * dot(v2, v4) + 2 * dot(v3, v3), 5 * dot(v3, v4), 3 * dot(v4, v4)],
                    axis=-1)


def real_roots(c: np.ndarray) -> np.ndarray:
    """Real roots of the polynomials sum_k c[n, k] xi^k, padded with NaN: (N, degree).

    Batched companion-matrix eigenvalues, grouped by effective degree; a root is real when its
    imaginary part is below 1e-8 (1 + |real part|).
    """
    c = np.asarray(c, dtype=np.float64)
    n, m = c.shape
    out = np.full((n, m - 1), np.nan)
    scale = np.max(np.abs(c), axis=1)
    scale = np.where(scale > 0, scale, 1.0)
    cn = c / scale[:, None]
    significant = np.abs(cn) > _DEGREE_TOL
    degree = np.where(significant.any(axis=1), m - 1 - np.argmax(significant[:, ::-1], axis=1), 0)
    for d in range(1, m):
        rows = np.flatnonzero(degree == d)
        if rows.size == 0:
            continue
        lead = cn[rows, d]
        comp = np.zeros((rows.size, d, d))
        comp[:, 0, :] = -cn[rows, d - 1::-1][:, :d] / lead[:, None]
        if d > 1:
            comp[:, np.arange(1, d), np.arange(d - 1)] = 1.0
        roots = np.linalg.eigvals(comp)
        real = np.abs(roots.imag) <= 1e-8 * (1.0 + np.abs(roots.real))
        out[rows, :d] = np.where(real, roots.real, np.nan)
    return out


def _poly(c, xi):
    """Horner evaluation of sum_k c[:, k] xi^k at xi (N, m)."""
    out = np.broadcast_to(c[:, -1, None], xi.shape).copy()
    for k in range(c.shape[1] - 2, -1, -1):
        out = out * xi + c[:, k, None]
    return out


def _dpoly(c, xi):
    deriv = c[:, 1:] * np.arange(1, c.shape[1])
    return _poly(deriv, xi)


def closest_on_elements(v: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """Closest point of each x (N, 3) on its cubic element v (N, 4, 3) over xi in [0, 1].

    Returns (xi (N,), distance (N,), interior (N,) bool): interior is True when the minimum is
    a root of the quintic strictly inside (0, 1), False when it is an element end.
    """
    c = quintic_coefficients(v, x)
    roots = real_roots(c)
    # two Newton steps on the quintic polish the eigenvalue roots
    for _ in range(2):
        f, df = _poly(c, roots), _dpoly(c, roots)
        ok = np.isfinite(roots) & (np.abs(df) > 0)
        roots = np.where(ok, roots - np.where(ok, f, 0.0) / np.where(ok, df, 1.0), roots)
    inside = np.isfinite(roots) & (roots > 0.0) & (roots < 1.0)
    cand = np.concatenate([np.where(inside, roots, 0.0), np.zeros((len(x), 1)),
                           np.ones((len(x), 1))], axis=1)
    xi3 = cand[..., None]
    pts = ((v[:, 3, None, :] * xi3 + v[:, 2, None, :]) * xi3 + v[:, 1, None, :]) * xi3 \
        + v[:, 0, None, :]
    dist = np.linalg.norm(pts - x[:, None, :], axis=-1)
    dist[:, :roots.shape[1]] = np.where(inside, dist[:, :roots.shape[1]], np.inf)
    best = np.argmin(dist, axis=1)
    rows = np.arange(len(x))
    return cand[rows, best], dist[rows, best], best < roots.shape[1]


def element_boxes(coef_rows: np.ndarray, pad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AABBs (lo, hi), each (n_el, 3), of cubic elements from their Bezier control points.

    coef_rows (n_el, 4, 3) Hermite rows (x_a, h x'_a, x_b, h x'_b); pad (n_el,) added on every
    side (a radius bound plus any motion allowance).
    """
    y1, y2, y3, y4 = (coef_rows[:, i, :] for i in range(4))
    ctrl = np.stack([y1, y1 + y2 / 3.0, y3 - y4 / 3.0, y3], axis=1)
    return ctrl.min(axis=1) - pad[:, None], ctrl.max(axis=1) + pad[:, None]


def overlapping_pairs(lo_a, hi_a, lo_b, hi_b) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) with box i of A overlapping box j of B (inclusive), as two int arrays.

    Uniform-grid broad phase: cell size = the largest box extent of both sets, so each box
    covers at most 2 cells per axis; boxes are joined on shared cells (sort + searchsorted),
    then the candidates are tested exactly. Cost O((n_a + n_b) log n_b + pairs).
    """
    if len(lo_a) == 0 or len(lo_b) == 0:
        return np.zeros(0, int), np.zeros(0, int)
    cell = max(float(np.max(hi_a - lo_a)), float(np.max(hi_b - lo_b)), 1e-12)
    origin = np.minimum(lo_a.min(axis=0), lo_b.min(axis=0))

    def cells(lo, hi):
        c0 = np.floor((lo - origin) / cell).astype(np.int64)
        c1 = np.floor((hi - origin) / cell).astype(np.int64)
        ids, keys = [], []
        for dx in (0, 1):
            for dy in (0, 1):
                for dz in (0, 1):
                    c = c0 + np.array([dx, dy, dz])
                    ok = np.all(c <= c1, axis=1)
                    idx = np.flatnonzero(ok)
                    cc = c[idx]
                    keys.append((cc[:, 0] * 2_000_003 + cc[:, 1]) * 2_000_003 + cc[:, 2])
                    ids.append(idx)
        return np.concatenate(keys), np.concatenate(ids)

    key_a, id_a = cells(lo_a, hi_a)
    key_b, id_b = cells(lo_b, hi_b)
    order = np.argsort(key_b, kind="stable")
    key_b, id_b = key_b[order], id_b[order]
    start = np.searchsorted(key_b, key_a, side="left")
    stop = np.searchsorted(key_b, key_a, side="right")
    count = stop - start
    ia = np.repeat(id_a, count)
    offs = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    ib = id_b[np.repeat(start, count) + offs]
    pairs = np.unique(np.stack([ia, ib], axis=1), axis=0) if ia.size else np.zeros((0, 2), int)
    ia, ib = pairs[:, 0], pairs[:, 1]
    ok = np.all((lo_a[ia] <= hi_b[ib]) & (lo_b[ib] <= hi_a[ia]), axis=1)
    return ia[ok], ib[ok]
