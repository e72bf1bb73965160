"""Mass points on straight-piece paths (Types I and II) in closed form: J_k, Jdot_k qd, Eq. 7.

A path made of sites only (no wrap; seed §3.1-3.2, Type I one segment, Type II via points) is
a polyline through the site positions p_0 .. p_n. Piece j runs from a_j = p_j to b_j = p_(j+1),
d_j = b_j - a_j, l_j = |d_j|, u_j = d_j / l_j; E_j = l_0 + .. + l_j its cumulative end,
P_j = E_(j-1) (0 on the first piece) the length before it and L the path length. The point at
fraction alpha sits at s = alpha L on the first piece with E_j >= s (the same choice as
`path_fraction`), at beta = (s - P_j) / l_j:

  x = a + beta d = (a - P u) + alpha (L u) = g0 + alpha g1              (seed Eqs. 10, 12-16)

This is the seed's Eulerian-on-Lagrangian construction with equal strain (Eqs. 12-16, the
Eulerian coordinates s_i = P_i / L) written for the point itself, and Eq. 10 when n = 1. On a
given piece x is *affine in alpha*, with per-piece vectors g0 = a - P u, g1 = L u; so are its
derivatives along any motion of the sites (a prime is d/dqd_c for a dof c, dots are time
derivatives at qdd = 0 from the sites' velocities and bias accelerations, `anchors.py`):
  l'  = u . d',   u'  = (d' - u l') / l,          P', L' the sums of l' over the pieces,
  g0' = a' - P' u - P u',  g1' = L' u + L u'                        (J_k = g0' + alpha_k g1')
  l_dd = u . d_dd + (|d_dot|^2 - l_dot^2) / l,    u_dd = (d_dd - 2 u_dot l_dot - u l_dd) / l,
  g0_dd = a_dd - P_dd u - 2 P_dot u_dot - P u_dd,
  g1_dd = L_dd u + 2 L_dot u_dot + L u_dd                  (Jdot_k qd = g0_dd + alpha_k g1_dd)
(u_dd from d = l u differentiated twice.) Eq. 7's sums over the points on piece j therefore
only need the piece's mass moments M_i = sum_k m_k alpha_k^i (i = 0, 1, 2) over the points on
it. With w_0 = M_0 g0' + M_1 g1', w_1 = M_1 g0' + M_2 g1' (and r_0 = g0_dd - g, r_1 = g1_dd):
  sum_k m_k J_k^T J_k             = sum_pieces w_0^T g0' + w_1^T g1',
  sum_k m_k J_k^T (Jdot_k qd - g) = sum_pieces w_0^T r_0 + w_1^T r_1
(`polyline_mass_terms`): per point only a comparison per piece of its path (which piece it is
on) enters the moments, per piece small (n_v, 3) arrays; no (n_points, 3, n_v) Jacobian is
formed.

Why a closed form next to `dynamics`'s general chain (forward-mode derivatives of the path
geometry F along the anchors' motion, which the wrapped Type III paths keep): the same
derivatives (tests/inertia check both against central differences of MuJoCo-integrated
configurations, the seed's explicit chain, and each other through Eq. 7), with far fewer and
smaller XLA kernels, no nested jvp, and a first-order expression for reverse mode
(`benchmarks/inertial.py`, RESULTS.md). Pieces of zero length (coincident sites) get a unit
length in the divisions (u = 0 there); a point only sits on one when it is its path's first
piece and alpha L = 0, where x = a and J = a'.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.fusion import computed_once
from myotwin.engine.rows import take
from myotwin.engine.spatial import dot_last


class PolylineTables(NamedTuple):
    """Static (NumPy) tables of some mass points on site-only paths.

    piece_start, piece_end (n_pieces,): start and end site of each piece (a path unit);
    piece_prev (n_pieces,) int: the piece just before each piece on its path, -1 on a path's
      first piece (a path's pieces have increasing indices, so piece_prev[j] < j);
    piece_last (n_pieces,) int: the last piece of each piece's path;
    piece_first (n_pieces,) bool: the first piece of its path;
    point_piece (n, n_pieces) bool: the pieces of each point's path;
    piece_points (n_pieces, width) int: the points of each piece's path, padded with 0, and
      piece_points_valid (n_pieces, width) bool: False for the padding (the mass moments
      compare each piece with its own path's points only).
    """

    piece_start: np.ndarray
    piece_end: np.ndarray
    piece_prev: np.ndarray
    piece_last: np.ndarray
    piece_first: np.ndarray
    point_piece: np.ndarray
    piece_points: np.ndarray
    piece_points_valid: np.ndarray


@functools.lru_cache(maxsize=256)
def _tables(unit_path, unit_site0, unit_site1, point_path: tuple[int, ...]) -> PolylineTables:
    paths = sorted(set(point_path))
    units = [u for u in range(len(unit_path)) if unit_path[u] in paths]
    piece_of = {u: k for k, u in enumerate(units)}
    per_path = {p: [piece_of[u] for u in units if unit_path[u] == p] for p in paths}
    n_pieces = len(units)
    prev = np.full(n_pieces, -1, dtype=np.int64)
    last = np.zeros(n_pieces, dtype=np.int64)
    for pieces in per_path.values():
        last[pieces] = pieces[-1]
        prev[pieces[1:]] = pieces[:-1]
    first = prev < 0
    point_piece = np.zeros((len(point_path), n_pieces), dtype=bool)
    for i, p in enumerate(point_path):
        point_piece[i, per_path[p]] = True
    on_path = {p: [i for i, pp in enumerate(point_path) if pp == p] for p in paths}
    width = max([len(v) for v in on_path.values()] + [1])
    piece_points = np.zeros((n_pieces, width), dtype=np.int64)
    piece_valid = np.zeros((n_pieces, width), dtype=bool)
    for p, pieces in per_path.items():
        for j in pieces:
            piece_points[j, :len(on_path[p])] = on_path[p]
            piece_valid[j, :len(on_path[p])] = True
    start = np.asarray([unit_site0[u] for u in units], dtype=np.int64).reshape(-1)
    end = np.asarray([unit_site1[u] for u in units], dtype=np.int64).reshape(-1)
    return PolylineTables(start, end, prev, last, first, point_piece, piece_points, piece_valid)


def polyline_tables(paths, point_path: tuple[int, ...]) -> PolylineTables:
    """Tables of points on the site-only paths `point_path` (a path index per point), cached.
    ValueError if one of the paths has a wrap."""
    bad = {paths.unit_path[u] for u in range(paths.n_units)
           if paths.unit_path[u] in point_path and paths.unit_wrap[u] >= 0}
    if bad:
        raise ValueError(f"paths {sorted(bad)} wrap over obstacles: not polylines")
    return _tables(paths.unit_path, paths.unit_site0, paths.unit_site1,
                   tuple(int(p) for p in point_path))


def _path_sums(tables: PolylineTables, l: jax.Array):
    """(E, P, L) (..., n_pieces) each for piece lengths l (..., n_pieces): the cumulative end
    E_j, the length before P_j = E_(j-1) (0 on a path's first piece) and the path length L
    (E of the path's last piece), as running additions along each path: a few additions per
    piece, where a product with a (n_pieces, n_pieces) table costs n_pieces per piece."""
    ends, before = [], []
    # the columns by one split (its transpose is one concatenation; a slice per column would
    # transpose to a pad kernel each in reverse mode)
    cols = jax.lax.split(l, (1,) * tables.piece_start.size, axis=l.ndim - 1)
    for j, col in enumerate(cols):                      # piece_prev[j] < j: already summed
        k = int(tables.piece_prev[j])
        before.append(jnp.zeros_like(col) if k < 0 else ends[k])
        ends.append(col if k < 0 else ends[k] + col)
    return (jnp.concatenate(ends, axis=-1), jnp.concatenate(before, axis=-1),
            jnp.concatenate([ends[int(k)] for k in tables.piece_last], axis=-1))


class PieceMotion(NamedTuple):
    """Per piece (module docstring): g0 (n_pieces, 3) the point at alpha = 0 of the piece's
    line, g1 (n_pieces, 3) its rate per unit alpha; their tangents g0_t, g1_t (n_v, n_pieces, 3)
    (column c: d/dqd_c); their accelerations at qdd = 0 g0_dd, g1_dd (n_pieces, 3) or None;
    cumulative end E, length before P and path length L (n_pieces,)."""

    g0: jax.Array
    g1: jax.Array
    g0_t: jax.Array
    g1_t: jax.Array
    g0_dd: jax.Array | None
    g1_dd: jax.Array | None
    end: jax.Array
    before: jax.Array
    total: jax.Array


def piece_motion(tables: PolylineTables, site_pos: jax.Array, site_tangents: jax.Array,
                 site_vel: jax.Array | None = None,
                 site_bias_acc: jax.Array | None = None) -> PieceMotion:
    """g0, g1 of every piece and their derivatives from the world site positions (n_site, 3),
    their tangents (n_v, n_site, 3) (column c: d site / d qd_c) and, for Jdot qd, their
    velocities and bias accelerations at qdd = 0 (n_site, 3)."""
    with_bias = site_vel is not None
    # channels: position, the n_v tangents[, velocity, bias acceleration], gathered at once;
    # split back with lax.split, whose transpose is one concatenation (slices would each
    # transpose to a pad kernel)
    parts = [site_pos[None], site_tangents]
    if with_bias:
        parts += [site_vel[None], site_bias_acc[None]]
    sizes = tuple(p.shape[0] for p in parts)
    channels = jnp.concatenate(parts)
    # rows.take: gathers whose reverse-mode transposes are dense products, not scatter-adds
    # (a scatter keeps a gradient's loop off XLA's compiled small-loop path, jax_setup.py)
    a_ch = take(channels, tables.piece_start, axis=1)
    d_ch = take(channels, tables.piece_end, axis=1) - a_ch          # (n_ch, n_pieces, 3)
    a_pos, a_t, *a_rest = jax.lax.split(a_ch, sizes)
    d_pos, d_t, *d_rest = jax.lax.split(d_ch, sizes)
    d = d_pos[0]
    length = jnp.sqrt(dot_last(d, d))
    inv = 1.0 / jnp.where(length > 0.0, length, 1.0)
    u = d * inv[:, None]
    l_ch = dot_last(u, jax.lax.split(d_ch, (1, d_ch.shape[0] - 1))[1])   # u . d' per channel
    l_t, *l_rest = jax.lax.split(l_ch, sizes[1:])
    l_parts = [length[None], l_t]
    if with_bias:
        l_v, d_v = l_rest[0][0], d_rest[0][0]
        l_dd = l_rest[1][0] + (dot_last(d_v, d_v) - l_v * l_v) * inv
        l_parts += [l_v[None], l_dd[None]]
    # E, P = E_(j-1), L = E_last of every channel (P_j is E_(j-1) itself, bitwise)
    e, p_ch, t_ch = _path_sums(tables, jnp.concatenate(l_parts))     # (n_ch, n_pieces) each
    p_pos, p_t, *p_rest = jax.lax.split(p_ch, sizes)
    t_pos, t_t, *t_rest = jax.lax.split(t_ch, sizes)
    before, total = p_pos[0], t_pos[0]
    u_t = (d_t - u * l_t[:, :, None]) * inv[:, None]
    g0_t = a_t - p_t[:, :, None] * u - before[:, None] * u_t
    g1_t = t_t[:, :, None] * u + total[:, None] * u_t
    g0, g1 = a_pos[0] - before[:, None] * u, total[:, None] * u
    if not with_bias:
        return PieceMotion(g0, g1, g0_t, g1_t, None, None, e[0], before, total)
    (a_acc,), (d_acc,) = a_rest[1], d_rest[1]
    (p_v,), (p_acc,), (t_v,), (t_acc,) = p_rest[0], p_rest[1], t_rest[0], t_rest[1]
    u_v = (d_v - u * l_v[:, None]) * inv[:, None]
    u_dd = (d_acc - 2.0 * u_v * l_v[:, None] - u * l_dd[:, None]) * inv[:, None]
    g0_dd = (a_acc - p_acc[:, None] * u - 2.0 * p_v[:, None] * u_v - before[:, None] * u_dd)
    g1_dd = t_acc[:, None] * u + 2.0 * t_v[:, None] * u_v + total[:, None] * u_dd
    return PieceMotion(g0, g1, g0_t, g1_t, g0_dd, g1_dd, e[0], before, total)


def _holds(tables: PolylineTables, pm: PieceMotion, alpha: jax.Array, piece_axis: int):
    """Whether each piece holds the point at fraction alpha (a piece axis `piece_axis`, the
    points on the other): s = alpha L lies in (E_(j-1), E_j], or in [0, E_j] on a path's first
    piece -- the first piece with E_j >= s, as `path_fraction` chooses."""
    def per_piece(x):
        return jnp.expand_dims(jnp.asarray(x), 1 - piece_axis)
    s = alpha * per_piece(pm.total)
    return (per_piece(pm.end) >= s) & (per_piece(tables.piece_first) | (per_piece(pm.before) < s))


def point_on_piece(tables: PolylineTables, pm: PieceMotion, alpha: jax.Array) -> jax.Array:
    """(n, n_pieces) bool: the piece each point at fraction alpha (n,) is on (`_holds`)."""
    return jnp.asarray(tables.point_piece) & _holds(tables, pm, alpha[:, None], 1)


def polyline_point_motion(tables: PolylineTables, alpha: jax.Array, site_pos: jax.Array,
                          site_tangents: jax.Array, site_vel: jax.Array | None = None,
                          site_bias_acc: jax.Array | None = None):
    """(J (n, 3, n_v), Jdot qd (n, 3) or None) of the points at fractions alpha (n,) of their
    paths, from the site quantities of `piece_motion`."""
    pm = piece_motion(tables, site_pos, site_tangents, site_vel, site_bias_acc)
    on = point_on_piece(tables, pm, alpha).astype(site_pos.dtype)    # (n, n_pieces)
    jac = jnp.einsum("np,vpi->niv", on, pm.g0_t) + alpha[:, None, None] * jnp.einsum(
        "np,vpi->niv", on, pm.g1_t)
    if pm.g0_dd is None:
        return jac, None
    return jac, on @ pm.g0_dd + alpha[:, None] * (on @ pm.g1_dd)


def _piece_rows(x: jax.Array, tables: PolylineTables) -> jax.Array:
    """(n_pieces, width) x[piece_points] for per-point x (n,), zero in the padding. A path's
    points are consecutive (`muscle_mass` groups them by path), so each row is a static slice:
    its reverse-mode transpose is a pad, where a gather's is a scatter-add and `rows.take`'s a
    (n_pieces width, n) table reduction that XLA's CPU compiler makes a library (YNNPACK)
    fusion; either keeps a gradient's loop off the compiled small-loop path (jax_setup.py)."""
    width = tables.piece_points.shape[1]
    rows = []
    for index, valid in zip(tables.piece_points, tables.piece_points_valid):
        points = index[valid]
        first = int(points[0]) if points.size else 0
        if np.array_equal(points, np.arange(first, first + points.size)):
            row = x[first:first + points.size]
        else:  # not consecutive (a hand-made table): a gather
            row = take(x, points)
        rows.append(jnp.pad(row, (0, width - points.size)))
    return jnp.stack(rows)


def polyline_mass_terms(tables: PolylineTables, alpha: jax.Array, mass: jax.Array,
                        site_pos: jax.Array, site_tangents: jax.Array, gravity: jax.Array,
                        site_vel: jax.Array | None = None,
                        site_bias_acc: jax.Array | None = None):
    """(sum_k m_k J_k^T J_k (n_v, n_v), sum_k m_k J_k^T (Jdot_k qd - g) (n_v,)) of the points at
    fractions alpha (n,) with masses mass (n,), by the pieces' mass moments (module docstring).
    Without site_vel / site_bias_acc, Jdot qd is left out (the seed's §4.3 ablation)."""
    pm = piece_motion(tables, site_pos, site_tangents, site_vel, site_bias_acc)
    # which of its path's points each piece holds (the rule of `point_on_piece`, per piece)
    a = _piece_rows(alpha, tables)                                   # (n_pieces, width)
    on = jnp.asarray(tables.piece_points_valid) & _holds(tables, pm, a, 0)
    # the masses each piece holds, computed once (engine/fusion.py: otherwise each of the
    # three moments repeats the comparisons of _holds)
    ma = computed_once(jnp.where(on, _piece_rows(mass, tables), 0.0))
    moments = jnp.sum(ma * jnp.stack([jnp.ones_like(a), a, a * a]), axis=-1)[..., None]
    r0 = (-jnp.broadcast_to(gravity, pm.g0.shape) if pm.g0_dd is None
          else pm.g0_dd - gravity)                                   # (n_pieces, 3)
    r1 = jnp.zeros_like(pm.g1) if pm.g1_dd is None else pm.g1_dd
    g = jnp.stack([pm.g0_t, pm.g1_t])                                # (2, n_v, n_pieces, 3)
    # w_a = sum_b M_(a+b) g_b': a reduction, so XLA computes it once for the Gram product
    # below, which reads each entry n_v times (engine/fusion.py)
    w = jnp.sum(jnp.stack([moments[0:2], moments[1:3]])[:, :, None] * g[None], axis=1)
    m_mus = jnp.sum(w[:, :, None] * g[:, None], axis=(0, 3, 4))
    c_mus = jnp.sum(w * computed_once(jnp.stack([r0, r1]))[:, None], axis=(0, 2, 3))
    return m_mus, c_mus
