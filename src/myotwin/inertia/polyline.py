"""Mass points on straight-piece paths (Types I and II) in closed form: J_k, Jdot_k qd, Eq. 7.

A path made of sites only (no wrap; seed §3.1-3.2, Type I one segment, Type II via points) is
a polyline through the site positions p_0 .. p_n. Piece j runs from a_j = p_j to b_j = p_(j+1),
d_j = b_j - a_j, l_j = |d_j|, u_j = d_j / l_j; P_j = l_0 + .. + l_(j-1) is the length before
it and L the path length. The point at fraction alpha sits at s = alpha L on the first piece
with P_j + l_j >= s (the same choice as `path_fraction`), at beta = (s - P_j) / l_j:

  x = a + beta d                                                    (seed Eqs. 10, 12-16)

Differentiating along any motion of the sites (a prime is d/dqd_c for a dof c; dots are time
derivatives at qdd = 0, from the sites' velocities and bias accelerations, `anchors.py`):
  l'     = u . d'                          L', P' the sums of l' over the pieces
  beta'  = (alpha L' - P' - beta l') / l
  x'     = a' + beta d' + beta' d                                   (column c of J_k)
  l_dd   = u . d_dd + (|d_dot|^2 - (u . d_dot)^2) / l
  beta_dd = (alpha L_dd - P_dd - 2 beta_dot l_dot - beta l_dd) / l
  x_dd   = a_dd + beta d_dd + 2 beta_dot d_dot + beta_dd d            (Jdot_k qd)
This is the seed's Eulerian-on-Lagrangian construction with equal strain (Eqs. 12-16, the
Eulerian coordinates s_i = P_i / L) written for the point itself, and Eq. 10 when n = 1.

Per piece these are *affine in (beta, alpha)*: beta' and beta_dot are, hence beta_dd, so
  J_k = X0 + beta_k X1 + alpha_k X2,     Jdot_k qd - g = Y0 + beta_k Y1 + alpha_k Y2
with (3, n_v) matrices X and 3-vectors Y of the piece the point is on:
  X0 = a' - d P'/l,  X1 = d' - d l'/l,  X2 = d L'/l;  with beta_dot = b0 + b1 beta + b2 alpha
  (b0 = -P_dot/l, b1 = -l_dot/l, b2 = L_dot/l) and beta_dd = c0 + c1 beta + c2 alpha
  (c_i = (-P_dd, -l_dd, L_dd)_i / l - 2 b_i l_dot / l):
  Y0 = a_dd + 2 b0 d_dot + c0 d - g,  Y1 = d_dd + 2 b1 d_dot + c1 d,  Y2 = 2 b2 d_dot + c2 d.
So Eq. 7's sums over the points on a piece only need the piece's mass moments
mu_ab = sum_k m_k z_a z_b of z = (1, beta_k, alpha_k):
  sum_k m_k J_k^T J_k = sum_pieces sum_ab mu_ab X_a^T X_b,
  sum_k m_k J_k^T (Jdot_k qd - g) = sum_pieces sum_ab mu_ab X_a^T Y_b
(`polyline_mass_terms`): per point only scalars are computed (its piece, beta, the moments),
per piece the small X and Y; no (n_points, 3, n_v) Jacobian is formed.

Why a closed form next to `dynamics`'s general chain (forward-mode derivatives of the path
geometry F along the anchors' motion, which the wrapped Type III paths keep): the same
derivatives (tests/inertia check both against central differences of MuJoCo-integrated
configurations, the seed's explicit chain, and each other through Eq. 7), with far fewer and
smaller XLA kernels, no nested jvp, and a first-order expression for reverse mode
(`benchmarks/inertial.py`, RESULTS.md). Pieces of zero length (coincident sites) get a unit
length in the divisions; a point only sits on one when it is its path's first piece and
alpha L = 0, where beta = 0 and x = a.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class PolylineTables(NamedTuple):
    """Static (NumPy) tables of some mass points on site-only paths.

    piece_start, piece_end (n_pieces,): start and end site of each piece (a path unit);
    piece_before (n_pieces, n_pieces): [j, i] 1.0 if piece i comes before piece j on the same
      path (P = piece_before @ l); piece_same_path: [j, i] 1.0 if on the same path (L);
    slot_piece (n, width): the pieces of each point's path in order, padded with 0;
    slot_valid (n, width): True for real slots.
    """

    piece_start: np.ndarray
    piece_end: np.ndarray
    piece_before: np.ndarray
    piece_same_path: np.ndarray
    slot_piece: np.ndarray
    slot_valid: np.ndarray


@functools.lru_cache(maxsize=256)
def _tables(unit_path, unit_site0, unit_site1, point_path: tuple[int, ...]) -> PolylineTables:
    paths = sorted(set(point_path))
    units = [u for u in range(len(unit_path)) if unit_path[u] in paths]
    piece_of = {u: k for k, u in enumerate(units)}
    per_path = {p: [piece_of[u] for u in units if unit_path[u] == p] for p in paths}
    n_pieces = len(units)
    before = np.zeros((n_pieces, n_pieces))
    same = np.zeros((n_pieces, n_pieces))
    for pieces in per_path.values():
        for k, j in enumerate(pieces):
            before[j, pieces[:k]] = 1.0
            same[j, pieces] = 1.0
    width = max([len(v) for v in per_path.values()] + [1])
    slot = np.zeros((len(point_path), width), dtype=np.int64)
    valid = np.zeros((len(point_path), width), dtype=bool)
    for i, p in enumerate(point_path):
        slot[i, :len(per_path[p])] = per_path[p]
        valid[i, :len(per_path[p])] = True
    start = np.asarray([unit_site0[u] for u in units], dtype=np.int64).reshape(-1)
    end = np.asarray([unit_site1[u] for u in units], dtype=np.int64).reshape(-1)
    return PolylineTables(start, end, before, same, slot, valid)


def polyline_tables(paths, point_path: tuple[int, ...]) -> PolylineTables:
    """Tables of points on the site-only paths `point_path` (a path index per point), cached.
    ValueError if one of the paths has a wrap."""
    bad = {paths.unit_path[u] for u in range(paths.n_units)
           if paths.unit_path[u] in point_path and paths.unit_wrap[u] >= 0}
    if bad:
        raise ValueError(f"paths {sorted(bad)} wrap over obstacles: not polylines")
    return _tables(paths.unit_path, paths.unit_site0, paths.unit_site1,
                   tuple(int(p) for p in point_path))


def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dot product over the last axis (3), written out so XLA fuses it with its neighbours."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


class PieceCoefficients(NamedTuple):
    """Per piece (module docstring): x (3, n_pieces, n_v, 3) the matrices X0, X1, X2 (axis 2:
    dof, axis 3: world xyz); y (3, n_pieces, 3) Y0 + g, Y1, Y2 or None (no bias requested);
    length l, before P, total L (n_pieces,)."""

    x: jax.Array
    y: jax.Array | None
    length: jax.Array
    before: jax.Array
    total: jax.Array


def piece_coefficients(tables: PolylineTables, site_pos: jax.Array, site_tangents: jax.Array,
                       site_vel: jax.Array | None = None,
                       site_bias_acc: jax.Array | None = None) -> PieceCoefficients:
    """The affine coefficients of every piece from the world site positions (n_site, 3), their
    tangents (n_v, n_site, 3) (column c: d site / d qd_c) and, for Jdot qd, their velocities
    and bias accelerations at qdd = 0 (n_site, 3)."""
    n_v = site_tangents.shape[0]
    with_bias = site_vel is not None
    channels = site_tangents
    if with_bias:
        channels = jnp.concatenate([site_tangents, site_vel[None], site_bias_acc[None]])
    start, end = tables.piece_start, tables.piece_end
    d = site_pos[end] - site_pos[start]                              # (n_pieces, 3)
    d_ch = channels[:, end] - channels[:, start]                     # (n_ch, n_pieces, 3)
    length = jnp.sqrt(_dot(d, d))
    inv = 1.0 / jnp.where(length > 0.0, length, 1.0)
    l_ch = _dot(d[None], d_ch) * inv                                 # u . d' per channel
    if with_bias:  # second derivative of the length: + (|d_dot|^2 - (u . d_dot)^2) / l
        l_dot = l_ch[n_v]
        l_ch = l_ch.at[n_v + 1].add((_dot(d_ch[n_v], d_ch[n_v]) - l_dot * l_dot) * inv)
    before_m = jnp.asarray(tables.piece_before, d.dtype)
    same_m = jnp.asarray(tables.piece_same_path, d.dtype)
    before, total = before_m @ length, same_m @ length                # P, L (n_pieces,)
    p_ch, t_ch = l_ch @ before_m.T, l_ch @ same_m.T                   # P', L' per channel

    a_t = channels[:n_v, start]                                      # (n_v, n_pieces, 3)
    d_over_l = d * inv[:, None]
    x0 = a_t - p_ch[:n_v, :, None] * d_over_l
    x1 = d_ch[:n_v] - l_ch[:n_v, :, None] * d_over_l
    x2 = t_ch[:n_v, :, None] * d_over_l
    x = jnp.swapaxes(jnp.stack([x0, x1, x2]), 1, 2)                  # (3, n_pieces, n_v, 3)
    if not with_bias:
        return PieceCoefficients(x, None, length, before, total)
    v, acc = n_v, n_v + 1
    b = jnp.stack([-p_ch[v], -l_ch[v], t_ch[v]]) * inv               # beta_dot coefficients
    c = (jnp.stack([-p_ch[acc], -l_ch[acc], t_ch[acc]]) - 2.0 * b * l_ch[v]) * inv
    dv, da = d_ch[v], d_ch[acc]
    y = 2.0 * b[:, :, None] * dv + c[:, :, None] * d
    y = y.at[0].add(channels[acc, start]).at[1].add(da)
    return PieceCoefficients(x, y, length, before, total)


def point_pieces(tables: PolylineTables, coef: PieceCoefficients, alpha: jax.Array):
    """(piece (n,) int, beta (n,)) of the points at fractions alpha (n,): the first real slot
    with P_j + l_j >= alpha L, and the fraction along it."""
    slot, valid = tables.slot_piece, tables.slot_valid
    s = alpha * coef.total[slot[:, 0]]
    piece = jnp.zeros(s.shape, dtype=np.int64)
    prev, length = jnp.zeros_like(s), jnp.ones_like(s)
    found = jnp.zeros(s.shape, dtype=bool)
    for j in range(slot.shape[1]):
        pj = slot[:, j]
        take = ~found & valid[:, j] & (coef.before[pj] + coef.length[pj] >= s)
        piece = jnp.where(take, pj, piece)
        prev = jnp.where(take, coef.before[pj], prev)
        length = jnp.where(take, coef.length[pj], length)
        found = found | take
    return piece, (s - prev) / jnp.where(length > 0.0, length, 1.0)


def polyline_point_motion(tables: PolylineTables, alpha: jax.Array, site_pos: jax.Array,
                          site_tangents: jax.Array, site_vel: jax.Array | None = None,
                          site_bias_acc: jax.Array | None = None):
    """(J (n, 3, n_v), Jdot qd (n, 3) or None) of the points at fractions alpha (n,) of their
    paths, from the site quantities of `piece_coefficients`."""
    coef = piece_coefficients(tables, site_pos, site_tangents, site_vel, site_bias_acc)
    piece, beta = point_pieces(tables, coef, alpha)
    z = jnp.stack([jnp.ones_like(beta), beta, alpha])                # (3, n)
    jac = jnp.einsum("an,anvi->niv", z, coef.x[:, piece])
    if coef.y is None:
        return jac, None
    return jac, jnp.einsum("an,ani->ni", z, coef.y[:, piece])


def polyline_mass_terms(tables: PolylineTables, alpha: jax.Array, mass: jax.Array,
                        site_pos: jax.Array, site_tangents: jax.Array, gravity: jax.Array,
                        site_vel: jax.Array | None = None,
                        site_bias_acc: jax.Array | None = None):
    """(sum_k m_k J_k^T J_k (n_v, n_v), sum_k m_k J_k^T (Jdot_k qd - g) (n_v,)) of the points at
    fractions alpha (n,) with masses mass (n,), by the pieces' mass moments (module docstring).
    Without site_vel / site_bias_acc, Jdot qd is left out (the seed's §4.3 ablation)."""
    coef = piece_coefficients(tables, site_pos, site_tangents, site_vel, site_bias_acc)
    piece, beta = point_pieces(tables, coef, alpha)
    z = jnp.stack([jnp.ones_like(beta), beta, alpha])                # (3, n)
    on_piece = (piece[:, None] == np.arange(tables.piece_start.size)[None, :]).astype(mass.dtype)
    weighted = (z[:, None, :] * z[None, :, :] * mass) @ on_piece     # (3, 3, n_pieces): mu
    w = jnp.einsum("abp,apvi->bpvi", weighted, coef.x)               # sum_a mu_ab X_a
    m_mus = jnp.einsum("bpui,bpvi->uv", w, coef.x)
    y = jnp.zeros((3,) + coef.x.shape[1:2] + (3,), coef.x.dtype) if coef.y is None else coef.y
    y = y.at[0].add(-gravity)
    c_mus = jnp.einsum("bpui,bpi->u", w, y)
    return m_mus, c_mus
