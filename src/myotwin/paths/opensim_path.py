"""Paths with OpenSim GeometryPath semantics: conditional via points and OpenSim wrap objects.

A myotwin extension for paths MJCF cannot express (built with `paths.builder`). The path of
each muscle is computed as OpenSim 4.6 computes it (GeometryPath::computePath,
applyWrapObjects and calcPathLength in opensim-core OpenSim/Simulation/Model/GeometryPath.cpp):

1. The current path is the list of active points (fixed points, moving points, and conditional
   points whose coordinate is in range; `conditional.py`). A moving point (OpenSim
   MovingPathPoint, `builder.MovingPoint`) is always active; its location in its body frame is
   (f_x(q_x), f_y(q_y), f_z(q_z)), each q clamped to its range first (MovingPathPoint::
   getLocation clamps the coordinate's value to [range min, range max]; checked against OpenSim
   4.6 beyond the knee's range), a function without a coordinate evaluated at 0
   (`point_locations`).
2. Wrap objects are applied in their declared order. For each wrap: its two tangent points are
   removed from the path; every segment between the first and last active point of its point
   range (1-based indices into all points, -1 = first/last) is wrapped
   (`opensim_cylinder.py`, `opensim_obstacle.py`, `opensim_ellipsoid.py`), except a segment
   joining two tangent points of one wrap object.
   The first segment whose status is mandatoryWrap wins (an ellipsoid's only wrapping
   status); otherwise the "wrapped" segment with the smallest length change
   |p1 r1| + wrap length + |r2 p2| - |p1 p2| (first on ties; p1, p2 as in step 5). The two
   tangent points are inserted after that segment's first point. The status recorded for the
   wrap is that of the mandatory segment, or else of the last segment evaluated.
3. With two or more wraps this is repeated up to 8 times, stopping when the path length changes
   by less than 0.5 mm between repetitions; after the first repetition, if the first wrap did
   not wrap (noWrap) and the second had an end point inside (insideRadius), their order is
   swapped and the first wrap's points removed.
4. Length = sum of straight distances between consecutive points, with the wrap length (a
   cylinder's spiral, an obstacle's arc, an ellipsoid's surface polyline) for the pair of
   tangent points of one wrap.
5. Which positions of the tangent points the lengths use (OpenSim 4.6, opensim-core 85aaf64,
   reproduced): a tangent point (PathWrapPoint) keeps its new location in the wrap object's
   frame each time its wrap is applied, and the wraps use that location; but its ground
   location (Point::getLocationInGround, a cache of the state at Stage::Position) is computed
   at its first query and not invalidated by PathWrapPoint::setLocation. Queries are: the
   path length at the end of each repetition (every point of the current path; the final
   length is the last one), and the length change of a "wrapped" candidate (its two end
   points; candidates up to the first mandatory one). So where a later repetition moves a
   tangent point, the path length measures the straight segments from where it was first
   queried, and adds the wrap lengths of the last repetition. This matters only with two or
   more wraps that interact: arm26's TRIlong at (1.5, 1.5) rad, where TRIlonghh moves in the
   second repetition and TRIlongglen wraps a segment ending on it, is 3.6 mm longer in
   OpenSim 4.6 than with the locations kept current, and reproduced to 2e-15 m
   (tests/paths/test_arm26.py). `CurrentPath.pos_world` holds the positions as OpenSim reports
   them, `pos_current` the tangent points as last computed.

Moment arms: r = -dL/dq in velocity coordinates (the issue's definition) by forward-mode
autodiff through the whole construction (`moment_arms`); it is what central differences of
OpenSim's length give (the reference's `moment_arm_fd`). `generalized_force_moment_arms` is
OpenSim's `computeMomentArm` instead: the generalized force of a unit tension along the current
path, all points (tangent points included) held fixed on their bodies (MomentArmSolver with
GeometryPath::addInEquivalentForces: each segment's direction between the reported points,
its force applied at the points as last computed, step 5); the two agree where no wrap is
active and differ by up to millimetres where OpenSim's (non-geodesic) cylinders and ellipsoids
wrap. A moving point adds OpenSim's mobility force for the work done through its motion relative
to its body (addInEquivalentForces: dP/dq in ground . force, on the point's coordinate, for each
segment between two bodies it ends): the derivative of its unclamped location, so inside the
range the two moment arms agree for paths without wraps (except across a segment whose other
end is on the same body, which OpenSim, and so `generalized_force_moment_arms`, skips).

Lengthening speed: OpenSim's GeometryPath::getLengtheningSpeed sums, over every segment of the
current path, the relative velocity of its two points (each fixed on its body, moving points
with their motion) along the segment's direction between the reported points. It is -qd . r
of `generalized_force_moment_arms` except where a reported tangent point is stale (step 5) and
a segment has both ends on one body (the speed sums it, the moment arm skips it: TRIlong at
(1.5, 1.5), 1.8e-3 m/s at qd = (1, 0)); `lengths_force_arms_and_speeds` gives it.

Shapes: n_paths; per path P points and W wraps, S = P + 2 W slots (points, then each wrap's two
tangent points). q (n_q,) in MuJoCo's qpos layout; the skeleton is an `engine.Model`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from myotwin.engine.integrators import integrate_pos
from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.loop_carry import tied
from myotwin.engine.piecewise import evaluate_padded
from myotwin.engine.spatial import quat_mul, quat_rotate, quat_to_mat
from myotwin.paths.conditional import compact, point_active
from myotwin.paths.opensim_cylinder import INSIDE_RADIUS, MANDATORY_WRAP, NO_WRAP, WRAPPED
from myotwin.paths.opensim_cylinder import CylinderWrap, opensim_cylinder_wrap
from myotwin.paths.opensim_ellipsoid import ellipsoid_status, opensim_ellipsoid_wrap
from myotwin.paths.opensim_sphere import opensim_sphere_wrap
from myotwin.paths.opensim_obstacle import opensim_obstacle_wrap
from myotwin.paths.safe import norm

_STATIC = {"static": True}
#: Kinds of OpenSim wrap objects (`OpenSimPathSet.cyl_kind`).
WRAP_CYLINDER, WRAP_OBSTACLE, WRAP_ELLIPSOID, WRAP_SPHERE = 0, 1, 2, 3
#: GeometryPath::applyWrapObjects: repetitions with >= 2 wraps, and the length tolerance (m).
MAX_WRAP_REPETITIONS = 8
WRAP_LENGTH_TOLERANCE_M = 0.0005


@dataclasses.dataclass(frozen=True)
class OpenSimPathSet:
    """Immutable set of OpenSim-semantics paths (a JAX pytree).

    The `cyl_` fields describe every wrap object (cylinders, obstacle cylinders, ellipsoids;
    "cyl" for the first kind supported).

    Leaves (float64): point_pos (n_points, 3): points in their body frames (m);
      point_range (n_points, 2): (lo, hi) of conditional points (rad or m; unused for fixed);
      cyl_pos (n_cyl, 3), cyl_quat (n_cyl, 4): wrap object frames in their body frames
      (w-first; a cylinder's axis is the frame's z); cyl_dims (n_cyl, 3) (m): a cylinder's
      (radius, length, 0), an obstacle's (radius, 1, 0) (the 1 unused), an ellipsoid's
      semi-axes (a, b, c) along the frame's x, y, z, a sphere's (radius, 0, 0).
    Static: n_paths, path_names; path_point_adr/num, path_wrap_adr/num (n_paths,);
      point_body (n_points,), point_qpos (n_points,): qpos address of a conditional point's
      coordinate, -1 for fixed and moving points (always active); wrap_cyl (n_wraps,): the
      cylinder of each path wrap;
      wrap_start, wrap_end (n_wraps,): 0-based point range (defaults resolved);
      cyl_body, cyl_axis (0..2), cyl_sign (-1, 0, +1; 0 = all quadrants) (n_cyl,);
      cyl_kind (n_cyl,): `WRAP_CYLINDER` (OpenSim WrapCylinder), `WRAP_OBSTACLE`
      (WrapCylinderObst, `opensim_obstacle.py`), `WRAP_ELLIPSOID` (WrapEllipsoid,
      `opensim_ellipsoid.py`) or `WRAP_SPHERE` (WrapSphere, `opensim_sphere.py`); cyl_hand:
      +1 right-handed, -1 left-handed (obstacles; 0 otherwise); cyl_names (n_cyl,);
      cyl_active (n_cyl,): False for an object OpenSim's <active>false</active> turns off
      (its PathWraps stay in their paths' wrap sets, which it leaves unwrapped: `_apply_wraps`);
      n_body, n_q: sizes of the skeleton it was compiled against.
    Moving points (n_move; their point_pos rows are unused): move_breaks (n_move, 3, k),
      move_origins (n_move, 3, k + 1), move_coefficients (n_move, 3, k + 1, d): each
      component's function (`engine.piecewise.pad_polynomials`), move_clamp (n_move, 3, 2):
      the (lo, hi) its q is clamped to (+-inf: none); static move_point (n_move,): the point
      index, move_qpos (n_move,) of (x, y, z): qpos address each component reads, -1 = none
      (evaluated at 0).
    """

    point_pos: jax.Array
    point_range: jax.Array
    cyl_pos: jax.Array
    cyl_quat: jax.Array
    cyl_dims: jax.Array
    n_paths: int = dataclasses.field(metadata=_STATIC)
    path_names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)
    path_point_adr: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    path_point_num: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    path_wrap_adr: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    path_wrap_num: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    point_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    point_qpos: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_cyl: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_start: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_end: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    cyl_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    cyl_axis: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    cyl_sign: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    cyl_kind: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    cyl_hand: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    cyl_names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)
    n_body: int = dataclasses.field(metadata=_STATIC)
    n_q: int = dataclasses.field(metadata=_STATIC)
    cyl_active: tuple[bool, ...] = dataclasses.field(metadata=_STATIC)
    move_breaks: jax.Array = dataclasses.field(default_factory=lambda: jnp.zeros((0, 3, 0)))
    move_origins: jax.Array = dataclasses.field(default_factory=lambda: jnp.zeros((0, 3, 1)))
    move_coefficients: jax.Array = dataclasses.field(
        default_factory=lambda: jnp.zeros((0, 3, 1, 1)))
    move_clamp: jax.Array = dataclasses.field(default_factory=lambda: jnp.zeros((0, 3, 2)))
    move_point: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    move_qpos: tuple[tuple[int, int, int], ...] = dataclasses.field(default=(),
                                                                   metadata=_STATIC)

    def active_object(self, c: int) -> bool:
        """Whether wrap object c wraps (`cyl_active`)."""
        return bool(self.cyl_active[c])


_DATA = [f.name for f in dataclasses.fields(OpenSimPathSet) if not f.metadata.get("static")]
_META = [f.name for f in dataclasses.fields(OpenSimPathSet) if f.metadata.get("static")]
jax.tree_util.register_dataclass(OpenSimPathSet, data_fields=_DATA, meta_fields=_META)


class CurrentPath(NamedTuple):
    """OpenSim's current path (GeometryPath "current_path"); `current_paths` returns every
    field with a leading n_paths axis.

    seq (S,) int: slot ids in path order, -1 after `count`; slots 0..P-1 are the points,
      P + 2 w and P + 2 w + 1 the tangent points of wrap w. count () int.
    pos_world (S, 3): world position of every slot as OpenSim reports it (its ground
      location, `Point::getLocationInGround`: for a tangent point the position it had when
      first queried, step 5 of the module docstring; valid only if in seq). The path length
      is measured between these.
    wrap_length (W,): wrap length of each wrap (valid only if its points are in seq).
    wrap_turn (W,): signed rotation (rad) about its cylinder's axis (local +z) carrying the
      wrap's first tangent point to its second along the wrap (`CylinderWrap.turn`; 0 for an
      ellipsoid, whose surface path is not a rotation about an axis).
    pos_current (S, 3): as pos_world, but the tangent points as last computed
      (`PathWrapPoint::getLocation`, where OpenSim applies the path's forces); equal to
      pos_world unless a later repetition moved a tangent point after its first query.
    """

    seq: jax.Array
    count: jax.Array
    pos_world: jax.Array
    wrap_length: jax.Array
    wrap_turn: jax.Array
    pos_current: jax.Array


class OpenSimAnchors(NamedTuple):
    """What the paths depend on, each fixed to a body (world frame, metres): point_world
    (n_points, 3) every path point of the set; cyl_center (n_cyl, 3), cyl_rot (n_cyl, 3, 3)
    the cylinder frames (columns = local axes; the axis is local z). Tangents and rates of
    the anchors (`myotwin.inertia`) use the same structure."""

    point_world: jax.Array
    cyl_center: jax.Array
    cyl_rot: jax.Array

    def scaled_add(self, other: "OpenSimAnchors", t) -> "OpenSimAnchors":
        """self + t * other, field by field."""
        return OpenSimAnchors(*(a + t * b for a, b in zip(self, other)))


def check_model(ps: OpenSimPathSet, model) -> None:
    """ValueError unless `model` has the body and qpos counts `ps` was compiled for."""
    if (ps.n_body, ps.n_q) != (model.n_body, model.n_q):
        raise ValueError(f"OpenSimPathSet was compiled for {ps.n_body} bodies and n_q = "
                         f"{ps.n_q}, the model has {model.n_body} bodies and n_q = {model.n_q}")


def point_locations(ps: OpenSimPathSet, q: jax.Array, *, clamp: bool = True) -> jax.Array:
    """(n_points, 3) every path point's location in its body frame at configuration q (n_q,):
    `point_pos`, with each moving point's functions evaluated at its joints' q (clamped to
    `move_clamp` unless clamp=False; 0 for a component without a joint)."""
    if not ps.move_point:
        return ps.point_pos
    adr = np.asarray(ps.move_qpos, np.int64)                            # (n_move, 3)
    x = jnp.where(jnp.asarray(adr >= 0), q[np.maximum(adr, 0)], 0.0)
    if clamp:
        lo, hi = ps.move_clamp[..., 0], ps.move_clamp[..., 1]
        x = jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))  # slope 1 at the range ends
    n = adr.size
    value = evaluate_padded(ps.move_breaks.reshape(n, -1), ps.move_origins.reshape(n, -1),
                            ps.move_coefficients.reshape((n,) + ps.move_coefficients.shape[2:]),
                            x.reshape(-1))[0]
    return ps.point_pos.at[np.asarray(ps.move_point)].set(value.reshape(-1, 3))


def opensim_anchors(ps: OpenSimPathSet, kin: Kinematics, q: jax.Array | None = None
                    ) -> OpenSimAnchors:
    """The path points and cylinder frames in the world at the kinematics `kin` (at q; q is
    needed only for moving points, ValueError without it)."""
    if ps.move_point and q is None:
        raise ValueError(f"paths {list(moving_paths(ps))} have moving points, whose locations "
                         "need q")
    local = ps.point_pos if q is None else point_locations(ps, q)
    pb = np.asarray(ps.point_body, np.int64)
    points = kin.body_pos_world[pb] + quat_rotate(kin.body_quat_world[pb], local)
    body = np.asarray(ps.cyl_body, dtype=np.int64)
    center = kin.body_pos_world[body] + quat_rotate(kin.body_quat_world[body], ps.cyl_pos)
    rot = quat_to_mat(quat_mul(kin.body_quat_world[body], ps.cyl_quat))
    return OpenSimAnchors(points, center, rot)


def _path_of(ps: OpenSimPathSet, point: int) -> int:
    """The path (index) of point `point`."""
    return next(p for p in range(ps.n_paths)
                if ps.path_point_adr[p] <= point < ps.path_point_adr[p] + ps.path_point_num[p])


def moving_paths(ps: OpenSimPathSet) -> tuple[str, ...]:
    """Names of the paths with moving points, in path order."""
    return tuple(ps.path_names[p] for p in sorted({_path_of(ps, i) for i in ps.move_point}))


class PathTables(NamedTuple):
    """Static per-path tables, every path padded to P points and W wraps (NumPy arrays with a
    leading n_paths axis): point index into `point_pos`, body and qpos address (-1 fixed,
    -2 padding); per wrap its cylinder, 0-based point range and whether it exists; per slot its
    wrap object (-1 for points) and body; the number of wraps of each path (inactive objects'
    included, as OpenSim counts its PathWrapSet; `wrap_on` is False for them and for padding)."""

    pt_index: np.ndarray
    pt_body: np.ndarray
    pt_qpos: np.ndarray
    wrap_cyl: np.ndarray
    wrap_start: np.ndarray
    wrap_end: np.ndarray
    wrap_on: np.ndarray
    slot_obj: np.ndarray
    slot_body: np.ndarray
    n_wraps: np.ndarray


def path_tables(ps: OpenSimPathSet, rows=None) -> PathTables:
    """The tables of the paths `rows` (static indices; default all), padded to the most points
    and wraps among them."""
    rows = list(range(ps.n_paths)) if rows is None else [int(r) for r in rows]
    n_p = len(rows)
    n_pt = max(ps.path_point_num[r] for r in rows)
    n_w = max(ps.path_wrap_num[r] for r in rows)
    n_slot = n_pt + 2 * n_w
    tab = PathTables(np.zeros((n_p, n_pt), np.int64), np.zeros((n_p, n_pt), np.int64),
                  np.full((n_p, n_pt), -2, np.int64), np.zeros((n_p, n_w), np.int64),
                  np.zeros((n_p, n_w), np.int64), np.zeros((n_p, n_w), np.int64),
                  np.zeros((n_p, n_w), bool), np.full((n_p, n_slot), -1, np.int64),
                  np.zeros((n_p, n_slot), np.int64), np.zeros(n_p, np.int64))
    for p, r in enumerate(rows):
        adr, num = ps.path_point_adr[r], ps.path_point_num[r]
        w_adr, w_num = ps.path_wrap_adr[r], ps.path_wrap_num[r]
        tab.pt_index[p, :num] = np.arange(adr, adr + num)
        tab.pt_body[p, :num] = ps.point_body[adr:adr + num]
        tab.pt_qpos[p, :num] = ps.point_qpos[adr:adr + num]
        tab.slot_body[p, :num] = ps.point_body[adr:adr + num]
        tab.n_wraps[p] = w_num
        for w in range(w_num):
            cyl = ps.wrap_cyl[w_adr + w]
            tab.wrap_cyl[p, w] = cyl
            tab.wrap_start[p, w] = ps.wrap_start[w_adr + w]
            tab.wrap_end[p, w] = ps.wrap_end[w_adr + w]
            tab.wrap_on[p, w] = ps.active_object(cyl)
            tab.slot_obj[p, n_pt + 2 * w:n_pt + 2 * w + 2] = cyl
            tab.slot_body[p, n_pt + 2 * w:n_pt + 2 * w + 2] = ps.cyl_body[cyl]
    return tab


def _length(seq, count, table, wrap_len, obj):
    """Path length of a current path (step 4 of the module docstring); the spiral length is
    counted on the pair (first, second) tangent point of one wrap object."""
    n_pt = seq.shape[0] - 2 * wrap_len.shape[0]
    slot_len = jnp.concatenate([jnp.zeros(n_pt, table.dtype),
                                jnp.stack([jnp.zeros_like(wrap_len), wrap_len], 1).ravel()])
    a, b = seq[:-1], seq[1:]
    live = jnp.arange(seq.shape[0] - 1) < count - 1
    a0, b0 = jnp.maximum(a, 0), jnp.maximum(b, 0)
    same = (obj[a0] >= 0) & (obj[a0] == obj[b0])
    dist = norm(table[b0] - table[a0])
    return jnp.sum(jnp.where(live, jnp.where(same, slot_len[b0], dist), 0.0))


def _remove(seq, count, slot):
    """Remove `slot` and the slot after it (a wrap's two tangent points) if present."""
    hit = seq == slot
    present = jnp.any(hit)
    j = jnp.argmax(hit)
    k = jnp.arange(seq.shape[0])
    shifted = jnp.where(k >= j, jnp.concatenate([seq[2:], jnp.array([-1, -1], seq.dtype)]), seq)
    return (jnp.where(present, shifted, seq).astype(seq.dtype),
            jnp.where(present, count - 2, count).astype(count.dtype))


def _insert(seq, count, at, slot):
    """Insert slots `slot`, `slot` + 1 at position `at`."""
    k = jnp.arange(seq.shape[0])
    before = jnp.concatenate([jnp.array([-1, -1], seq.dtype), seq[:-2]])
    out = jnp.where(k < at, seq, jnp.where(k == at, slot, jnp.where(k == at + 1, slot + 1,
                                                                      before)))
    return out.astype(seq.dtype), (count + 2).astype(count.dtype)


def _wrap_segment(pa, pb, dims, ints, static_single, kinds, construct=True) -> CylinderWrap:
    """One segment (wrap object frame) over wrap object c of the kinds present (`kinds`,
    static): dims (3,) its `cyl_dims`, ints = (axis, sign, kind, handedness, single, frozen)
    of that object (frozen: the path's repetitions have converged, the result is discarded;
    the loops do not run); `static_single` True when every path of the call has one wrap
    object (then the tangency loop is not compiled). With several kinds present every kind
    is evaluated and the object's own selected; a kind's loops do not run for the other
    kinds' objects.
    construct: False to have an ellipsoid's status alone (its tangent points are then the
    end points and its length 0; `_apply_wraps` constructs only the segment it chooses)."""
    axis, sign, kind, hand, single, frozen = ints
    several = len(kinds) > 1
    results = {}
    if WRAP_CYLINDER in kinds:
        skip_loop = True if static_single else (single | frozen | (kind != WRAP_CYLINDER)
                                                 if several else single | frozen)
        results[WRAP_CYLINDER] = opensim_cylinder_wrap(pa, pb, dims[0], dims[1], axis, sign,
                                                       skip_loop)
    if WRAP_OBSTACLE in kinds:
        results[WRAP_OBSTACLE] = opensim_obstacle_wrap(pa, pb, dims[0], hand)
    if WRAP_ELLIPSOID in kinds:
        mine = kind == WRAP_ELLIPSOID
        # other kinds' dims (a zero) are replaced: their lanes must stay finite, derivatives
        # included (a NaN would leak into reverse mode through the zero cotangent of `where`)
        radii = jnp.where(mine, dims, 1.0) if several else dims
        if construct:
            e = opensim_ellipsoid_wrap(pa, pb, radii, axis, sign,
                                       skip=(~mine if several else False) | frozen)
            results[WRAP_ELLIPSOID] = CylinderWrap(e.status, e.r1, e.r2, e.length,
                                                   jnp.zeros_like(e.length))
        else:
            status = ellipsoid_status(pa, pb, radii)
            results[WRAP_ELLIPSOID] = CylinderWrap(status, pa, pb, jnp.zeros_like(pa[0]),
                                                   jnp.zeros_like(pa[0]))
    if WRAP_SPHERE in kinds:
        # other kinds' lanes get a unit radius (finite values and derivatives, as above)
        radius = jnp.where(kind == WRAP_SPHERE, dims[0], 1.0) if several else dims[0]
        results[WRAP_SPHERE] = opensim_sphere_wrap(pa, pb, radius, axis, sign)
    out = None
    for k, res in results.items():
        out = res if out is None else jax.tree_util.tree_map(
            lambda new, old, k=k: jnp.where(kind == k, new, old), res, out)
    return out


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _chosen_wrap(kinds, static_single, values, pa, pb, dims, ints):
    """The chosen segment's (r1, r2, length, turn): `values`, already evaluated at (pa, pb,
    dims) without derivatives among the candidates, returned as they are; its JVP
    differentiates `_wrap_segment` at that segment. So the wrap is evaluated once more only
    where a derivative is taken."""
    return values


def _chosen_wrap_jvp(kinds, static_single, primals, tangents):
    values, pa, pb, dims, ints = primals
    args, tans = (pa, pb, dims), tangents[1:4]
    live = [i for i, t in enumerate(tans) if not isinstance(t, SymbolicZero)]
    if not live:
        return values, jax.tree_util.tree_map(jnp.zeros_like, values)

    def geometry(*xs):
        full = list(args)
        for i, x in zip(live, xs):
            full[i] = x
        w = _wrap_segment(*full, ints, static_single, kinds)
        return (w.r1, w.r2, w.length, w.turn)

    # The wrap evaluated again with its derivative (plain autodiff, so that derivatives one
    # order up share its work); symbolic zeros stay symbolic (the loops' tensors then skip
    # the object's dimensions).
    return jax.jvp(geometry, tuple(args[i] for i in live), tuple(tans[i] for i in live))


_chosen_wrap.defjvp(_chosen_wrap_jvp, symbolic_zeros=True)


def _apply_wraps(pts, active, tab, cyl, max_reps: int, single_wrap: bool = False):
    """Steps 2-3 for one path (vmapped over paths). pts (P, 3) world points, active (P,);
    tab: this path's rows of `PathTables` (as arrays); cyl: (center (n_cyl, 3), rot (n_cyl, 3, 3),
    dims (n_cyl, 3), axis, sign, kind, hand, the set of kinds) of all wrap objects. Returns
    (seq, count, wrap_pos (2W, 3) as OpenSim reports them, wrap_len (W,), wrap_turn (W,),
    wrap_pos (2W, 3) as last computed)."""
    n_pt, n_w = pts.shape[0], tab.wrap_cyl.shape[0]
    n_slot = n_pt + 2 * n_w
    center, rot, dims, axis, sign, kind, hand, kinds = cyl
    idx = jnp.arange(n_pt)
    seq, count = compact(active, n_slot)
    # static when no path of this call has two wraps (`single_wrap`, `current_paths`): then
    # the tangency loop is not even compiled
    single = True if (n_w == 1 or single_wrap) else tab.n_wraps == 1

    wrap_slots = n_pt + jnp.arange(2 * n_w)
    sg = jax.lax.stop_gradient

    def apply_wrap(i, carry, frozen):
        seq, count, wpos, wlen, wturn, order, result, aborted, cpos, cflag = carry
        w = order[i]
        c = tab.wrap_cyl[w]
        seq, count = _remove(seq, count, n_pt + 2 * w)
        in_range = active & (idx >= tab.wrap_start[w]) & (idx <= tab.wrap_end[w])
        has = jnp.any(in_range) | ~tab.wrap_on[w]
        smp = jnp.argmax(in_range)
        emp = n_pt - 1 - jnp.argmax(in_range[::-1])
        start, end = jnp.argmax(seq == smp), jnp.argmax(seq == emp)
        table = jnp.concatenate([pts, wpos])
        a, b = jnp.maximum(seq[:-1], 0), jnp.maximum(seq[1:], 0)
        j = jnp.arange(n_slot - 1)
        obj = tab.slot_obj
        cand = ((j >= start) & (j < end) & ~((obj[a] >= 0) & (obj[a] == obj[b]))
                & tab.wrap_on[w])
        xa, xb = table[a], table[b]
        to_local = lambda x: (x - center[c]) @ rot[c]  # noqa: E731
        la, lb = to_local(xa), to_local(xb)

        ints = (axis[c], sign[c], kind[c], hand[c], jnp.asarray(single), frozen)
        static_single = True if single is True else None

        def wrap(pa, pb, dims_c):
            return _wrap_segment(pa, pb, dims_c, ints, static_single, kinds, construct=False)

        # The segment is chosen on values alone (the choice is piecewise constant in q), and
        # its wrap is differentiated alone (`_chosen_wrap`): every derivative (moment arms,
        # gradients, the mass points' second derivatives) goes through one segment's wrap
        # instead of every candidate's, and a program without derivatives evaluates no wrap
        # twice. Same values. arm26 (benchmarks/arm26.py): moment arms 1.17 -> 0.90 ms, RK4
        # step 3.5 -> 2.5 ms; second derivatives of the lengths 6.7 -> 2.7 ms (a scratch
        # measurement, benchmarks/RESULTS.md "arm26", session 16).
        res = jax.vmap(wrap, in_axes=(0, 0, None))(sg(la), sg(lb), sg(dims[c]))
        if WRAP_ELLIPSOID in kinds:
            # an ellipsoid wraps only with mandatoryWrap, so only the first such candidate's
            # wrap is used: it alone is constructed (the candidates have their status only)
            mine = kind[c] == WRAP_ELLIPSOID
            mand_e = cand & (res.status == MANDATORY_WRAP)
            k = jnp.argmax(mand_e)
            e = opensim_ellipsoid_wrap(sg(la[k]), sg(lb[k]), jnp.where(mine, sg(dims[c]), 1.0),
                                       axis[c], sign[c],
                                       skip=~(mine & jnp.any(mand_e)) | frozen)
        r1w = center[c] + res.r1 @ sg(rot[c]).T
        r2w = center[c] + res.r2 @ sg(rot[c]).T
        # the length change uses OpenSim's ground locations of the end points (step 5)
        ground = sg(jnp.concatenate([pts, jnp.where(cflag[:, None], cpos, wpos)]))
        ga, gb = ground[a], ground[b]
        change = (norm(r1w - ga) + res.length
                  + norm(gb - r2w) - norm(gb - ga))
        mand = cand & (res.status == MANDATORY_WRAP)
        wrapped = cand & (res.status == WRAPPED)
        any_mand = jnp.any(mand)
        # ... and caches them: those of the "wrapped" candidates OpenSim evaluates (the ones
        # before the first mandatory segment)
        asked = wrapped & (j < jnp.where(any_mand, jnp.argmax(mand), n_slot)) & has
        hit = jnp.any(asked[None, :] & ((a[None, :] == wrap_slots[:, None])
                                        | (b[None, :] == wrap_slots[:, None])), axis=1)
        cpos_new = jnp.where((hit & ~cflag)[:, None], wpos, cpos)
        best = jnp.where(any_mand, jnp.argmax(mand),
                         jnp.argmin(jnp.where(wrapped, change, jnp.inf)))
        found = any_mand | jnp.any(wrapped)
        last = (n_slot - 2) - jnp.argmax(cand[::-1])
        status = jnp.where(any_mand, MANDATORY_WRAP,
                           jnp.where(jnp.any(cand), res.status[last], NO_WRAP))
        ins_seq, ins_count = _insert(seq, count, best + 1, n_pt + 2 * w)
        take = has & ~aborted & found
        values = (res.r1[best], res.r2[best], res.length[best], res.turn[best])
        if WRAP_ELLIPSOID in kinds:
            # (the ellipsoid's best is its first mandatory candidate, k; only the values use
            # its construction, so a program with derivatives, which recomputes the chosen
            # wrap, does not compile it)
            values = tuple(jnp.where(mine, ev, v) for ev, v in
                           zip((e.r1, e.r2, e.length, jnp.zeros_like(e.length)), values))
        r1_local, r2_local, chosen_len, chosen_turn = _chosen_wrap(
            kinds, static_single, values, la[best], lb[best], dims[c], ints)
        r1c = center[c] + rot[c] @ r1_local
        r2c = center[c] + rot[c] @ r2_local
        new = (jnp.where(take, ins_seq, seq), jnp.where(take, ins_count, count),
               jnp.where(take, wpos.at[2 * w].set(r1c).at[2 * w + 1].set(r2c), wpos),
               jnp.where(take, wlen.at[w].set(chosen_len), wlen),
               jnp.where(take, wturn.at[w].set(chosen_turn), wturn),
               order, result.at[i].set(jnp.where(has, status, result[i])), aborted | ~has,
               cpos_new, cflag | hit)
        old = (seq, count, wpos, wlen, wturn, order, result, aborted, cpos, cflag)
        return jax.tree_util.tree_map(lambda n, o: jnp.where(aborted, o, n), new, old)

    def repetition(kk, carry):
        seq, count, wpos, wlen, wturn, order, last_len, done, aborted, cpos, cflag = carry
        s, n, wp, wl, wt, od, res, ab, cp, cf = jax.lax.fori_loop(
            0, n_w, lambda i, c: apply_wrap(i, c, done),
            (seq, count, wpos, wlen, wturn, order, tied(jnp.zeros(n_w, jnp.int32), pts),
             aborted, cpos, cflag))
        # OpenSim's path length queries (and caches) the ground location of every point of
        # the current path
        in_path = jnp.any((s[None, :] == wrap_slots[:, None])
                          & (jnp.arange(n_slot) < n)[None, :], axis=1)
        cp = jnp.where((in_path & ~cf)[:, None], wp, cp)
        cf = cf | in_path
        path_len = _length(s, n, jnp.concatenate([pts, jnp.where(cf[:, None], cp, wp)]), wl,
                           tab.slot_obj)
        converged = (jnp.abs(path_len - last_len) < WRAP_LENGTH_TOLERANCE_M) | ab
        converged = converged | (tab.n_wraps < 2)  # a single wrap is applied once
        if n_w > 1:
            swap = ((kk == 0) & (tab.n_wraps > 1) & (res[0] == NO_WRAP)
                    & (res[1] == INSIDE_RADIUS) & ~converged)
            s2, n2 = _remove(s, n, n_pt)
            s, n = jnp.where(swap, s2, s), jnp.where(swap, n2, n)
            od = jnp.where(swap, od.at[0].set(1).at[1].set(0), od)
        new = (s, n, wp, wl, wt, od, path_len, converged, ab, cp, cf)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), carry, new)

    # (carries tied to the points: batched and differentiated from the start, `loop_carry`)
    zeros = tied(jnp.zeros((2 * n_w, 3), pts.dtype), pts)
    no = tied(False, pts)
    init = (seq, count, zeros, tied(jnp.zeros((n_w,), pts.dtype), pts),
            tied(jnp.zeros((n_w,), pts.dtype), pts),
            tied(jnp.arange(n_w, dtype=jnp.int32), pts),
            tied(jnp.asarray(jnp.inf, pts.dtype), pts), no, no, zeros,
            tied(jnp.zeros(2 * n_w, bool), pts))
    seq, count, wrap_pos, wrap_len, wrap_turn, *_, cpos, cflag = jax.lax.fori_loop(
        0, max_reps, repetition, init)
    return (seq, count, jnp.where(cflag[:, None], cpos, wrap_pos), wrap_len, wrap_turn,
            wrap_pos)


def current_paths(ps: OpenSimPathSet, kin: Kinematics, q: jax.Array) -> CurrentPath:
    """OpenSim's current path of every path (steps 1-3), fields with a leading n_paths axis
    (all paths padded to the longest)."""
    return current_paths_from_anchors(ps, opensim_anchors(ps, kin, q), q)


def current_paths_from_anchors(ps: OpenSimPathSet, anchors: OpenSimAnchors, q: jax.Array,
                               rows=None) -> CurrentPath:
    """`current_paths` from the anchors (q decides only which conditional points are active,
    a piecewise-constant dependence). With `rows` (static path indices) only those paths, laid
    out by `path_tables(ps, rows)` (slot ids count that layout's points and wraps).

    Compiled (`jax.jit`, inlined when called inside compiled code): called eagerly, the loops
    below would be traced and compiled again at every call, their bodies being new closures
    each time (arm26's lengths took 13 s per eager call; now the first call compiles and the
    next ones reuse it)."""
    rows = None if rows is None else tuple(int(r) for r in rows)
    return _current_paths_compiled(ps, anchors, q, rows)


@functools.partial(jax.jit, static_argnames=("rows",))
def _current_paths_compiled(ps: OpenSimPathSet, anchors: OpenSimAnchors, q: jax.Array,
                            rows) -> CurrentPath:
    tab = path_tables(ps, rows)
    pts = anchors.point_world[tab.pt_index]                            # (n_paths, P, 3)
    active = point_active(ps.point_range[tab.pt_index], tab.pt_qpos, q)  # (n_paths, P)
    n_w = tab.wrap_cyl.shape[1]
    if n_w == 0:
        seq, count = jax.vmap(lambda a: compact(a, a.shape[0]))(active)
        empty = jnp.zeros((pts.shape[0], 0), pts.dtype)
        return CurrentPath(seq, count, pts, empty, empty, pts)
    center, rot = anchors.cyl_center, anchors.cyl_rot
    reps = MAX_WRAP_REPETITIONS if n_w > 1 else 1
    tab_j = jax.tree_util.tree_map(jnp.asarray, tab)
    # Two static groups: paths with at most one wrap object, whose tangency adjustment OpenSim
    # skips (so neither the loop nor its derivative tensors are compiled for them), and the
    # others. In one vmapped call over all paths the single-wrap lanes would skip the loop but
    # still ride along in its batched trips while any multi-wrap lane adjusts (with the former
    # fixed-trip loop: arm26 lengths 8.3 -> 2.7 ms, docs/models.md). Same results either way.
    # A group evaluates only the kinds of wrap objects its paths use; where some path has two
    # wraps, the single-wrap paths with an ellipsoid join the second group, so that the
    # ellipsoid (the largest construction to compile) is compiled once.
    kind_of = np.asarray(ps.cyl_kind, np.int64)
    n_wraps = np.asarray(tab.n_wraps)
    # the kinds each path wraps (an inactive object's kind is not compiled for it)
    uses = [set(kind_of[tab.wrap_cyl[p, :n_wraps[p]][tab.wrap_on[p, :n_wraps[p]]]].tolist())
            for p in range(n_wraps.size)]
    listed = [set(kind_of[tab.wrap_cyl[p, :n_wraps[p]]].tolist()) for p in range(n_wraps.size)]
    second = n_wraps >= 2
    if second.any():
        second |= np.array([WRAP_ELLIPSOID in u for u in uses], bool)
    parts = []
    for rows, group in ((np.flatnonzero(~second), False), (np.flatnonzero(second), True)):
        if rows.size:
            sub = jax.tree_util.tree_map(lambda x, r=rows: x[r], tab_j)
            # (a group none of whose objects is active still compiles one wrap, never used)
            kinds = (frozenset().union(*(uses[r] for r in rows))
                     or frozenset().union(*(listed[r] for r in rows)) or frozenset(ps.cyl_kind))
            cyl = (center, rot, ps.cyl_dims, jnp.asarray(ps.cyl_axis),
                   jnp.asarray(ps.cyl_sign), jnp.asarray(ps.cyl_kind),
                   jnp.asarray(ps.cyl_hand), kinds)
            single = not (group and (n_wraps[rows] >= 2).any())
            # a single wrap is applied once (`repetition` marks it converged): one trip
            n_reps = 1 if single else reps
            parts.append((rows, jax.vmap(
                lambda p, a, t, one=single, k=n_reps, cy=cyl: _apply_wraps(p, a, t, cy, k,
                                                                          one))(
                    pts[rows], active[rows], sub)))
    if len(parts) == 1:
        seq, count, wrap_pos, wrap_len, wrap_turn, wrap_now = parts[0][1]
    else:
        back = np.argsort(np.concatenate([rows for rows, _ in parts]))
        seq, count, wrap_pos, wrap_len, wrap_turn, wrap_now = (
            jnp.concatenate([out[k] for _, out in parts])[back] for k in range(6))
    return CurrentPath(seq, count, jnp.concatenate([pts, wrap_pos], axis=1), wrap_len,
                       wrap_turn, jnp.concatenate([pts, wrap_now], axis=1))


def _lengths(ps: OpenSimPathSet, cur: CurrentPath) -> jax.Array:
    obj = jnp.asarray(path_tables(ps).slot_obj)
    return jax.vmap(_length)(cur.seq, cur.count, cur.pos_world, cur.wrap_length, obj)


def muscle_lengths_from_kinematics(ps: OpenSimPathSet, kin: Kinematics, q) -> jax.Array:
    """(n_paths,) path lengths (m) given the skeleton's kinematics at q."""
    return _lengths(ps, current_paths(ps, kin, q))


def muscle_lengths(ps: OpenSimPathSet, model, q: jax.Array) -> jax.Array:
    """(n_paths,) musculotendon path lengths (m) at configuration q (n_q,)."""
    check_model(ps, model)
    return muscle_lengths_from_kinematics(ps, kinematics(model, q), q)


def length_jacobian(ps: OpenSimPathSet, model, q: jax.Array) -> jax.Array:
    """(n_paths, n_v) J_L = dL/d(qd): forward-mode derivative of the length along
    q(v) = integrate_pos(q, v, 1) at v = 0 (velocity coordinates, as MuJoCo's ten_J)."""
    check_model(ps, model)
    v0 = jnp.zeros(model.n_v, q.dtype)
    return jax.jacfwd(lambda v: muscle_lengths(ps, model, integrate_pos(model, q, v, 1.0)))(v0)


def lengths_and_moment_arms(ps: OpenSimPathSet, model, q: jax.Array):
    """((n_paths,) lengths, (n_v, n_paths) moment arms -dL/dq) from one forward-mode pass."""
    check_model(ps, model)
    v0 = jnp.zeros(model.n_v, q.dtype)

    def f(v):
        lengths = muscle_lengths(ps, model, integrate_pos(model, q, v, 1.0))
        return lengths, lengths

    jac, lengths = jax.jacfwd(f, has_aux=True)(v0)
    return lengths, -jac.T


def moment_arms(ps: OpenSimPathSet, model, q: jax.Array) -> jax.Array:
    """(n_v, n_paths) moment arms r = -dL/dq in velocity coordinates (m per rad for hinges)."""
    return -length_jacobian(ps, model, q).T


def lengths_and_speeds(ps: OpenSimPathSet, model, q: jax.Array,
                       qd: jax.Array) -> tuple[jax.Array, jax.Array]:
    """((n_paths,) lengths (m), (n_paths,) dL/dt = J_L qd (m/s)) at q (n_q,) and qd (n_v,):
    one forward-mode pass along the motion q(t) = q (+) t qd, no moment arms."""
    check_model(ps, model)
    return jax.jvp(lambda t: muscle_lengths(ps, model, integrate_pos(model, q, qd, t)),
                   (jnp.zeros((), q.dtype),), (jnp.ones((), q.dtype),))


def lengths_force_arms_and_speeds(ps: OpenSimPathSet, model, q: jax.Array, qd: jax.Array
                                  ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """((n_paths,) lengths (m), `generalized_force_moment_arms` (n_v, n_paths), (n_paths,)
    OpenSim's lengthening speeds (m/s)) at q (n_q,) and qd (n_v,), the current paths (the
    wrap solves) computed once for all three and not differentiated. What a forward
    simulation with OpenSim's coupling evaluates. The speed is GeometryPath::
    getLengtheningSpeed: the speeds of the current path's points, each as if fixed on its
    body, along the segments. It equals -qd . r of these arms except where OpenSim's reported
    tangent points are stale (`current_paths`, step 5: a segment with both ends on one body
    then adds to the speed but not to the arm), and it is not dL/dt where wraps are active
    (the wraps are a construction, not the geodesic)."""
    check_model(ps, model)
    kin = kinematics(model, q)
    cur = current_paths(ps, kin, q)
    # one forward-mode pass of both virtual lengths (arms: segments between two bodies; speed:
    # every segment) gives the arms and, along qd, the speeds: one traced copy of the points'
    # motion instead of one per output (docs/paths.md)
    virtual = _fixed_point_lengths(ps, model, q, cur, kin)
    jac_arm, jac_speed = jax.jacfwd(virtual)(jnp.zeros(model.n_v, q.dtype))
    return _lengths(ps, cur), -jac_arm.T, jac_speed @ jnp.asarray(qd, q.dtype)


def lengthening_speeds(ps: OpenSimPathSet, model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_paths,) dL/dt = J_L qd (m/s) at configuration q (n_q,) and velocity qd (n_v,)."""
    return lengths_and_speeds(ps, model, q, qd)[1]


def _force_offset(seq, count, reported, current, direction, body, obj, every_segment: bool):
    """The part of a unit tension's virtual work that comes from OpenSim applying each
    segment's force at the tangent points as last computed (`current`) rather than at the
    reported ones its direction is taken from (GeometryPath::addInEquivalentForces): the sum
    over segments between different bodies of direction . (offset_b - offset_a), offset =
    current - reported. Zero (with a zero derivative) where the two coincide. every_segment:
    sum over every segment instead, as GeometryPath::computeLengtheningSpeed does (a segment
    with both ends on one body then adds where `direction` is taken from stale points)."""
    a, b = jnp.maximum(seq[:-1], 0), jnp.maximum(seq[1:], 0)
    live = jnp.arange(seq.shape[0] - 1) < count - 1
    offset = current - reported
    work = jnp.sum(direction * (offset[b] - offset[a]), axis=-1)
    if not every_segment:
        live = live & (body[a] != body[b]) & ~((obj[a] >= 0) & (obj[a] == obj[b]))
    return jnp.sum(jnp.where(live, work, 0.0))


def generalized_force_moment_arms(ps: OpenSimPathSet, model, q: jax.Array) -> jax.Array:
    """(n_v, n_paths) OpenSim's computeMomentArm: the generalized force of a unit tension along
    the current path with every point, tangent points included, fixed on its body (so the
    derivative ignores how the tangent points and the spiral move with q). As in OpenSim, each
    segment's direction is that between the reported points (`CurrentPath.pos_world`) and
    its force acts at the points as last computed (`CurrentPath.pos_current`). A moving point
    adds the work of the segment's force through the point's motion relative to its body,
    direction . R dP/dq per segment between two bodies (OpenSim's mobility force on the
    point's coordinate, with dP/dq of the unclamped location, MovingPathPoint::getdPointdQ)."""
    check_model(ps, model)
    return _force_moment_arms(ps, model, q, current_paths(ps, kinematics(model, q), q))


def _force_moment_arms(ps: OpenSimPathSet, model, q: jax.Array, cur: CurrentPath) -> jax.Array:
    """`generalized_force_moment_arms` given the current paths at q (held fixed: their
    derivatives are not taken)."""
    virtual = _fixed_point_lengths(ps, model, q, cur)
    return -jax.jacfwd(lambda v: virtual(v)[0])(jnp.zeros(model.n_v, q.dtype)).T


def _opensim_speeds(ps: OpenSimPathSet, model, q: jax.Array, qd: jax.Array,
                    cur: CurrentPath) -> jax.Array:
    """(n_paths,) OpenSim's lengthening speed given the current paths at q (held fixed)."""
    virtual = _fixed_point_lengths(ps, model, q, cur)
    zero = jnp.zeros(model.n_v, q.dtype)
    return jax.jvp(lambda v: virtual(v)[1], (zero,), (jnp.asarray(qd, q.dtype),))[1]


def _fixed_point_lengths(ps: OpenSimPathSet, model, q: jax.Array, cur: CurrentPath,
                         kin=None):
    """v (n_v,) -> ((n_paths,), (n_paths,)): the current path's length with every point,
    tangent points included, carried by its body from q to integrate_pos(q, v), segment
    directions those of the reported points at q, forces applied at the points as last
    computed; moving points add their motion relative to their bodies. Two variants, whose
    derivatives at v = 0 are OpenSim's point-force moment arm (the first: -d/dv, segments
    between two bodies, addInEquivalentForces) and, along qd, its lengthening speed (the
    second: every segment, computeLengtheningSpeed, the speeds of the same points along the
    same directions). kin: `kinematics(model, q)` if the caller has it."""
    cur = jax.lax.stop_gradient(cur)
    tab = path_tables(ps)
    body = tab.slot_body                                                    # (n_paths, S)
    kin = kinematics(model, q) if kin is None else kin
    to_local = lambda x: jnp.einsum("psji,psj->psi", kin.body_rot_world[body],  # noqa: E731
                                    x - kin.body_pos_world[body])
    local, local_now = to_local(cur.pos_world), to_local(cur.pos_current)
    ends = jnp.take_along_axis(cur.pos_world, jnp.maximum(cur.seq, 0)[..., None], axis=1)
    direction = jax.vmap(lambda e: e[1:] - e[:-1])(ends)
    direction = direction / jnp.maximum(norm(direction), 1e-300)[..., None]

    def offset_work(reported, current):
        """(between two bodies, every segment) `_force_offset` of every path."""
        args = (cur.seq, cur.count, reported, current, direction, jnp.asarray(body),
                jnp.asarray(tab.slot_obj))
        return tuple(jax.vmap(functools.partial(_force_offset, every_segment=every))(*args)
                     for every in (False, True))

    def lengths(v):
        kv = kinematics(model, integrate_pos(model, q, v, 1.0))
        moved = lambda x: kv.body_pos_world[body] + jnp.einsum(  # noqa: E731
            "psij,psj->psi", kv.body_rot_world[body], x)
        world, world_now = moved(local), moved(local_now)
        length = _lengths(ps, cur._replace(pos_world=world))
        offsets = offset_work(world, world_now)
        moving = moving_work(integrate_pos(model, q, v, 1.0))
        return tuple(length + o + m for o, m in zip(offsets, moving))

    def moving_work(q_v):
        """Per variant, the sum over segments (between two bodies, or every segment) of
        direction . (R dP_end - R dP_start), dP the moving points' displacement in their body
        frames from q to q_v (0 for other slots), R their bodies' rotations at q."""
        if not ps.move_point:
            return (jnp.zeros(ps.n_paths, q.dtype),) * 2
        n_pt = tab.pt_index.shape[1]
        slot_point = np.zeros(tab.slot_obj.shape, np.int64)
        slot_point[:, :n_pt] = tab.pt_index
        moving = np.zeros(tab.slot_obj.shape, bool)
        moving[:, :n_pt] = np.isin(tab.pt_index, ps.move_point) & (tab.pt_qpos != -2)
        delta = (point_locations(ps, q_v, clamp=False)
                 - point_locations(ps, q, clamp=False))[slot_point]
        delta = jnp.where(jnp.asarray(moving)[..., None], delta, 0.0)
        shift = jnp.einsum("psij,psj->psi", kin.body_rot_world[body], delta)
        return offset_work(jnp.zeros_like(shift), shift)

    return lengths


def path_points(ps: OpenSimPathSet, model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """World points of every current path in path order, (n_paths, S, 3), and a validity mask
    (n_paths, S) (False after each path's last point)."""
    check_model(ps, model)
    cur = current_paths(ps, kinematics(model, q), q)
    valid = jnp.arange(cur.seq.shape[1])[None, :] < cur.count[:, None]
    pts = jnp.take_along_axis(cur.pos_world, jnp.maximum(cur.seq, 0)[..., None], axis=1)
    return pts, valid
