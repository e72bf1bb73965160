"""The point at fraction alpha of a path's length: mass-point positions x_alpha(q).

Wang et al. 2022 §3: a mass point sits at a fixed fraction alpha of the musculotendon's length
and moves with the path (the path is frictionless and always locally shortest). A single-strand
path (see `paths.length`) is a chain of *pieces*: straight segments between sites (and tangent
points), and for every active wrap the arc (sphere: great circle) or helix (cylinder) between
its tangent points. With piece lengths l_k, cumulative ends E_k and total L = sum l_k (= MuJoCo
ten_length), the point at fraction alpha is on the first piece with E_k >= s = alpha L, at
beta = (s - E_{k-1}) / l_k along it:
  Type I  (one straight segment): x = (1 - alpha) x_ori + alpha x_ins            (seed Eq. 10)
  Type II (via points): x = (1 - beta) x_i + beta x_{i+1}, the segment and beta from the
          cumulative lengths. This is the seed's Eulerian-on-Lagrangian construction with equal
          strain (Eqs. 12-16, after Sachdeva et al. 2015): the Eulerian coordinate of path point
          i is s_i = E_{i-1} / L, the point's material coordinate is alpha, and
          beta = (alpha - s_i) / (s_{i+1} - s_i).
  Type III (wraps, library positions): on an arc piece the point is the 2-D tangent point t0
          rotated by beta * theta about the obstacle centre in the wrap plane (theta = arc
          length / radius, the sense that carries t0 to t1); for a cylinder its height is
          z0 + beta (z1 - z0), linear in arc length, since the helix is a straight line on the
          unrolled cylinder. Straight and curved pieces meet tangentially, so x_alpha(q) is C^1
          along an active wrap; it is only C^0 where the wrap switches on or off (the seed's
          "Jacobian discontinuity", §3.3), which the network position model smooths.
The wrap geometry is `arcs.py` (MuJoCo 4.0's wrap re-evaluated with its plane and 2-D arc);
tangent points and lengths agree with `paths.path_geometry` and MuJoCo to roundoff (tested).
An inactive wrap unit is its straight segment.

Everything here is a function of the path *anchors* (`anchors.PathAnchors`: world site
positions and wrap frames), x_alpha = F(anchors); `dynamics.py` differentiates F along the
anchors' motion (the seed's J_am) and chains it with the skeleton's (J_mr).

Positions are differentiable in q except where the geometry switches (wrap on/off) and where a
point crosses a path point (piece change: x is continuous there, its velocity changes direction
as the material turns the corner of the polyline, as in the seed's Type II).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.inertia.anchors import PathAnchors, path_anchors
from myotwin.inertia.arcs import WrapArc, arc_point, wrap_arcs
from myotwin.paths.pathset import check_model
from myotwin.paths.safe import norm, safe_div


class PieceLayout(NamedTuple):
    """Static piece tables (NumPy) of a set of single-strand paths.

    wraps: global ids of the wraps on these paths (the arcs evaluated), in order.
    start, end (n_pieces + 1,): indices into the point table concat(unit start sites (n_units),
      unit end sites (n_units), effective tangent points 0 and 1 (len(wraps) each));
    wrap (n_pieces + 1,): index into `wraps` of an arc piece, -1 for a straight piece. The last
      piece is a zero-length dummy used for padding.
    rows (n_rows, max_pieces): piece ids of each path, padded with the dummy;
    n_real (n_rows,): number of real pieces of each row.
    """

    wraps: tuple[int, ...]
    start: np.ndarray
    end: np.ndarray
    wrap: np.ndarray
    rows: np.ndarray
    n_real: np.ndarray


@functools.lru_cache(maxsize=256)
def _layout(unit_path, unit_wrap, row_paths: tuple[int, ...]) -> PieceLayout:
    n_units = len(unit_path)
    units = [[u for u in range(n_units) if unit_path[u] == p] for p in row_paths]
    wraps = tuple(unit_wrap[u] for row in units for u in row if unit_wrap[u] >= 0)
    site0, site1 = 0, n_units                     # blocks of the point table
    tan0, tan1 = 2 * n_units, 2 * n_units + len(wraps)
    start, end, wrap, rows = [], [], [], []
    for row_units in units:
        row = []
        for u in row_units:
            if unit_wrap[u] < 0:
                pieces = [(site0 + u, site1 + u, -1)]
            else:  # x0 -> t0, arc, t1 -> x1 (inactive: t0 = t1 = x1, arc of length 0)
                w = wraps.index(unit_wrap[u])
                pieces = [(site0 + u, tan0 + w, -1), (tan0 + w, tan1 + w, w),
                          (tan1 + w, site1 + u, -1)]
            for a, b, wr in pieces:
                row.append(len(start))
                start.append(a), end.append(b), wrap.append(wr)
        rows.append(row)
    dummy = len(start)
    start.append(0), end.append(0), wrap.append(-1)
    width = max([len(r) for r in rows] + [1])
    table = np.full((len(rows), width), dummy, dtype=np.int64)
    for i, r in enumerate(rows):
        table[i, :len(r)] = r
    as_int = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    return PieceLayout(wraps, as_int(start), as_int(end), as_int(wrap), table,
                       as_int([len(r) for r in rows]))


def piece_layout(paths, path_ids: tuple[int, ...]) -> PieceLayout:
    """Static piece tables of the paths `path_ids` (indices into `paths`), cached."""
    return _layout(paths.unit_path, paths.unit_wrap, tuple(int(p) for p in path_ids))


class PathPieces(NamedTuple):
    """Position stage of the pieces of some paths (n_rows paths, world frame, metres).

    point_world (n_table, 3): the point table of `PieceLayout`; piece_length (n_pieces + 1,);
    row_end (n_rows, max_pieces): cumulative piece ends E_k; path_length (n_rows,);
    arcs: `WrapArc` of the layout's wraps (None if there are none).
    """

    point_world: jax.Array
    piece_length: jax.Array
    row_end: jax.Array
    path_length: jax.Array
    arcs: WrapArc | None


def path_pieces(paths, anchors: PathAnchors, layout: PieceLayout) -> PathPieces:
    """Pieces, their lengths and the path lengths for `layout` at the anchors (whose wraps are
    `layout.wraps`)."""
    x0 = anchors.site_pos_world[np.asarray(paths.unit_site0, dtype=np.int64)]
    x1 = anchors.site_pos_world[np.asarray(paths.unit_site1, dtype=np.int64)]
    if layout.wraps:
        arcs = wrap_arcs(paths, anchors, layout.wraps)
        end_site = x1[np.asarray(paths.wrap_unit, dtype=np.int64)[list(layout.wraps)]]
        t0 = jnp.where(arcs.active[:, None], arcs.t0_world, end_site)
        t1 = jnp.where(arcs.active[:, None], arcs.t1_world, end_site)
        arc_len = jnp.where(arcs.active, arcs.length, 0.0)
    else:
        arcs, t0 = None, jnp.zeros((0, 3), x0.dtype)
        t1, arc_len = t0, jnp.zeros((1,), x0.dtype)
    points = jnp.concatenate([x0, x1, t0, t1])
    straight = norm(points[layout.end] - points[layout.start])
    is_arc = layout.wrap >= 0
    length = jnp.where(is_arc, arc_len[np.maximum(layout.wrap, 0)], straight)
    ends = jnp.cumsum(length[layout.rows], axis=1)
    return PathPieces(points, length, ends, ends[:, -1], arcs)


def _positions(layout: PieceLayout, pieces: PathPieces, point_row: np.ndarray,
               alpha: jax.Array) -> jax.Array:
    """(n, 3) points at fractions alpha (n,) of the paths of rows point_row (n,) (static).

    Every piece of a point's path is evaluated at its own beta_k = (s - E_{k-1}) / l_k and the
    one with E_{k-1} < s <= E_k (or k = 0 when s = 0) is selected: all indices are static, so
    the graph that is differentiated twice has no data-dependent gathers."""
    ids = layout.rows[point_row]                                 # (n, width) static
    ends = pieces.row_end[point_row]                             # (n, width)
    s = (alpha * pieces.path_length[point_row])[:, None]
    prev = jnp.concatenate([jnp.full_like(ends[:, :1], -1.0), ends[:, :-1]], axis=1)
    pick = (ends >= s) & (prev < s)                              # one-hot over the pieces
    length = pieces.piece_length[ids]
    beta = safe_div(s - jnp.maximum(prev, 0.0), length)          # (n, width)
    a = pieces.point_world[layout.start[ids]]
    b = pieces.point_world[layout.end[ids]]
    cand = a + beta[..., None] * (b - a)                         # straight pieces
    wrap = layout.wrap[ids]
    slots = np.argwhere(wrap >= 0)                               # (point, piece) on arcs
    if slots.size:
        arcs = jax.tree_util.tree_map(lambda f: f[wrap[slots[:, 0], slots[:, 1]]], pieces.arcs)
        on_arc = jax.vmap(arc_point)(arcs, beta[slots[:, 0], slots[:, 1]])
        # placed by a static gather from [straight candidates; arc points], not a scatter:
        # a scatter keeps XLA from compiling a rollout's loop whole (jax_setup.py)
        n, width = wrap.shape
        source = np.arange(n * width)
        source[slots[:, 0] * width + slots[:, 1]] = n * width + np.arange(len(slots))
        both = jnp.concatenate([cand.reshape(n * width, 3), on_arc])
        cand = both[source.reshape(n, width)]
    chosen = jnp.where(pick[..., None], cand, 0.0)
    # the one-hot sum unrolled over the (short, static) piece axis: XLA's CPU compiler makes
    # a reduction here, under the derivatives' vmap, a library (YNNPACK) fusion, which keeps
    # a rollout's loop from being compiled whole (jax_setup.py)
    out = chosen[:, 0]
    for k in range(1, chosen.shape[1]):
        out = out + chosen[:, k]
    return out


def points_along_path(paths, model, q: jax.Array, path: int, alphas: jax.Array) -> jax.Array:
    """(n, 3) world points at fractions alphas (n,) of the length of path `path` (an index
    into `paths`, a single-strand path) at configuration q (n_q,), library geometry."""
    check_model(paths, model)
    layout = piece_layout(paths, (path,))
    anchors = path_anchors(paths, kinematics(model, q), layout.wraps)
    pieces = path_pieces(paths, anchors, layout)
    alphas = jnp.asarray(alphas, dtype=pieces.path_length.dtype).reshape(-1)
    return _positions(layout, pieces, np.zeros(alphas.shape[0], dtype=np.int64), alphas)


def _network_positions(paths, mm, anchors: PathAnchors, wraps: tuple[int, ...],
                       idx: np.ndarray) -> jax.Array:
    """(len(idx), 3) positions of the points idx by the wrap network (seed §3.3.2: end points
    into the surface frame S, network, back to the world)."""
    from myotwin.inertia.wrap_network import network_mass_point

    point_path = np.asarray(mm.point_path, dtype=np.int64)[idx]
    unit = np.array([paths.unit_path.index(p) for p in point_path], dtype=np.int64)
    k = np.array([wraps.index(paths.unit_wrap[u]) for u in unit], dtype=np.int64)
    c, r = anchors.wrap_center[k], anchors.wrap_rot[k]
    ori = anchors.site_pos_world[np.asarray(paths.unit_site0, dtype=np.int64)[unit]]
    ins = anchors.site_pos_world[np.asarray(paths.unit_site1, dtype=np.int64)[unit]]
    to_s = lambda x: jnp.einsum("nji,nj->ni", r, x - c)  # noqa: E731  R^T (x - c)
    radius = paths.wrap_radius[np.array([paths.unit_wrap[u] for u in unit], dtype=np.int64)]
    xs = jax.vmap(network_mass_point, in_axes=(None, 0, 0, 0, 0))(
        mm.network_params, to_s(ori), to_s(ins), mm.point_alpha[idx], radius)
    return jnp.einsum("nij,nj->ni", r, xs) + c


def mass_point_layout(model) -> PieceLayout:
    """Piece layout of the model's inertial paths (static; its `wraps` are the anchors')."""
    paths, mm = model.paths, model.muscle_mass
    if paths is None or mm is None:
        raise ValueError("the model has no muscle mass (see myotwin.inertia.with_muscle_mass)")
    if not hasattr(paths, "unit_path"):
        raise ValueError("piece layouts describe MuJoCo spatial tendons; this model also has "
                         "OpenSim-semantics paths (use mass_point_positions, which handles both; "
                         "inertia/composite.py)")
    if paths.n_paths != mm.n_paths:
        raise ValueError(f"the MuscleMass was made for {mm.n_paths} paths, the model has "
                         f"{paths.n_paths}")
    check_model(paths, model)
    return piece_layout(paths, mm.inertial_paths())


def mass_point_positions_from_anchors(model, anchors: PathAnchors,
                                      points: np.ndarray | None = None) -> jax.Array:
    """(n_points, 3) world positions of the model's mass points from the path anchors (whose
    wraps are `mass_point_layout(model).wraps`): the seed's x_alpha = F(anchors). With
    `points` (static indices) only those points, (len(points), 3); their paths must include
    every wrapped inertial path, so that the anchors' wraps are theirs too."""
    paths, mm = model.paths, model.muscle_mass
    full = mass_point_layout(model)
    idx = np.arange(mm.n_points) if points is None else np.asarray(points, dtype=np.int64)
    point_path = np.asarray(mm.point_path, dtype=np.int64)[idx]
    rows = tuple(sorted(set(point_path.tolist())))
    layout = full if points is None else piece_layout(paths, rows)
    if layout.wraps != full.wraps:
        raise ValueError("mass point subset: its paths leave out wrapped inertial paths")
    point_row = np.array([rows.index(p) for p in point_path], dtype=np.int64)
    x = _positions(layout, path_pieces(paths, anchors, layout), point_row, mm.point_alpha[idx])
    network = np.flatnonzero([mm.path_position_model[p] == 1 for p in point_path])
    if network.size:
        x = x.at[network].set(_network_positions(paths, mm, anchors, layout.wraps, idx[network]))
    return x


def mass_point_positions_from_kinematics(model, kin: Kinematics,
                                         q: jax.Array | None = None) -> jax.Array:
    """(n_points, 3) world positions of the model's muscle mass points (`Model.muscle_mass`)
    at the kinematics `kin`. A model with OpenSim-semantics paths (`inertia.composite`) also
    needs the configuration q that `kin` was computed at (its conditional points)."""
    from myotwin.inertia import composite  # it builds on this module

    if model.paths is not None and composite.is_composite(model):
        if model.muscle_mass is None:
            raise ValueError("the model has no muscle mass (see "
                             "myotwin.inertia.with_muscle_mass)")
        if q is None:
            raise ValueError("mass points on OpenSim-semantics paths need q as well as the "
                             "kinematics (conditional path points depend on it)")
        return composite.positions(model, kin, q)
    layout = mass_point_layout(model)
    return mass_point_positions_from_anchors(model, path_anchors(model.paths, kin, layout.wraps))


def mass_point_positions(model, q: jax.Array) -> jax.Array:
    """(n_points, 3) world positions x_alpha(q) of the muscle mass points at q (n_q,)."""
    return mass_point_positions_from_kinematics(model, kinematics(model, q), q)
