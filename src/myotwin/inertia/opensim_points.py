"""Mass points on OpenSim-semantics paths (`paths.opensim_path`): x_alpha = F(anchors).

A myotwin extension of the seed's §3 to the paths of models built with `paths.builder` that
MJCF cannot express (OpenSim's WrapCylinder and WrapCylinderObst, conditional via points; e.g.
arm26's triceps and brachialis). The point at fraction alpha of the path length sits where the
arc length s = alpha L falls on OpenSim's current path (`opensim_path.current_paths`): its
pieces are the straight segments between consecutive points and, for each active wrap, the
spiral between its two tangent points. OpenSim's length counts the spiral as
sqrt((r theta)^2 + dz^2) (WrapCylinder) or r theta (WrapCylinderObst, which leaves out the
rise); the point at beta of a spiral piece is the first tangent point rotated about the axis
by beta times the wrap's turn and raised by beta dz, in the cylinder's frame (OpenSim's
CalcSpiralWrapPoint). Positions are therefore continuous along the path, and with the same
length L as OpenSim's.

The anchors are OpenSim's own: every path point and every cylinder frame, each fixed to a
body (`opensim_path.OpenSimAnchors`). As for MJCF wrapped paths (`dynamics.py`), J and
Jdot qd come from forward-mode derivatives of F along the anchors' motion; the motion comes
from the engine's rigid-body quantities (`anchors.point_rates`, `frame_rates`). Which
conditional points are active depends on q only piecewise-constantly, so q enters F without
a derivative.

Smoothness: F is as smooth as OpenSim's path. It is C^0 where a wrap switches on or off, a
conditional point (de)activates, or OpenSim's tangency adjustment changes its trip count (a
discontinuity of OpenSim's algorithm, `opensim_cylinder.py`); between such events a point's
velocity turns where it crosses a path point (the seed's Type II), as on MJCF paths.
Derivatives: Jdot qd is a second derivative of F, so a reverse-mode gradient of a simulation
is a third; OpenSim's tangency adjustment (paths with two or more wrap objects) supplies up to
the third in any mode (`opensim_cylinder._derivative_tensor`).

Not supported: a path that uses an OpenSim ellipsoid (WrapEllipsoid, `opensim_ellipsoid.py`).
Its wrap is a polyline of up to 499 surface points that OpenSim does not keep in its current
path (only the two tangent points), so the arc length along it, and its derivatives, would need
the polyline itself; `check_paths` refuses such paths when the mass points are declared
(`with_muscle_mass`) and when they are compiled (`composite.split`). Nor a path with a moving
point (OpenSim MovingPathPoint, `paths.builder.MovingPoint`): the anchors here are fixed to
bodies, and a moving point's motion relative to its body would be missing from J and Jdot qd;
`check_paths` refuses it too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import point_tangents
from myotwin.engine.kinematics import Kinematics
from myotwin.engine.twists import BodyMotion, body_motion_from_kinematics
from myotwin.inertia.anchors import AnchorMotion, frame_rates, frame_tangents, point_rates
from myotwin.paths.opensim_path import (WRAP_ELLIPSOID, WRAP_SPHERE, OpenSimAnchors,
                                        OpenSimPathSet,
                                        current_paths_from_anchors, opensim_anchors,
                                        path_tables)
from myotwin.paths.safe import norm, safe_div


def check_paths(ps: OpenSimPathSet, paths) -> None:
    """ValueError if one of the OpenSim paths `paths` (indices into `ps`) wraps an ellipsoid
    or a sphere or has a moving point (module docstring), naming the muscle and the wrap
    object or point."""
    for p in sorted({int(x) for x in np.asarray(paths).reshape(-1)}):
        adr, num = ps.path_point_adr[p], ps.path_point_num[p]
        moving = [i - adr + 1 for i in ps.move_point if adr <= i < adr + num]
        if moving:
            raise ValueError(f"muscle mass of path {ps.path_names[p]!r}: its point {moving[0]} "
                             "is a moving point (OpenSim MovingPathPoint), and mass points on a "
                             "path with moving points are not supported (docs/inertia.md)")
        adr, num = ps.path_wrap_adr[p], ps.path_wrap_num[p]
        for c in ps.wrap_cyl[adr:adr + num]:
            if ps.cyl_kind[c] in (WRAP_ELLIPSOID, WRAP_SPHERE) and ps.active_object(c):
                kind = "an ellipsoid" if ps.cyl_kind[c] == WRAP_ELLIPSOID else "a sphere"
                raise ValueError(f"muscle mass of path {ps.path_names[p]!r}: its path wraps the "
                                 f"OpenSim {kind[kind.index(' ') + 1:]} {ps.cyl_names[c]!r}, "
                                 f"and mass points on {kind} wrap are not supported "
                                 "(docs/inertia.md); put the mass on another muscle, or build "
                                 "the model without the wrap object (e.g. "
                                 "models.arm26.build(ellipsoids=False))")


def anchor_motion(model, ps: OpenSimPathSet, kin: Kinematics, anchors: OpenSimAnchors,
                  qd: jax.Array | None = None, bodies: BodyMotion | None = None) -> AnchorMotion:
    """Per-dof tangents of the OpenSim anchors and, if qd (n_v,) is given, their velocity and
    bias acceleration (`bodies`: the engine's velocity stage at qd, if the caller has it)."""
    pb, cb = np.asarray(ps.point_body, np.int64), np.asarray(ps.cyl_body, np.int64)
    tangents = OpenSimAnchors(point_tangents(model, kin, anchors.point_world, pb),
                              point_tangents(model, kin, anchors.cyl_center, cb),
                              frame_tangents(model, kin, anchors.cyl_rot, cb))
    if qd is None:
        return AnchorMotion(tangents, None, None)
    if bodies is None:
        bodies = body_motion_from_kinematics(model, kin, qd)
    p_v, p_a = point_rates(model, kin, bodies, anchors.point_world, pb)
    c_v, c_a = point_rates(model, kin, bodies, anchors.cyl_center, cb)
    r_v, r_a = frame_rates(bodies, anchors.cyl_rot, cb)
    return AnchorMotion(tangents, OpenSimAnchors(p_v, c_v, r_v), OpenSimAnchors(p_a, c_a, r_a))


def _pieces(ps: OpenSimPathSet, anchors: OpenSimAnchors, q: jax.Array, rows: np.ndarray):
    """Pieces of the current paths `rows` (static path indices into `ps`), each (n_rows,
    S - 1, ...): start and end points, whether it is a spiral, its wrap's turn and cylinder,
    its length; and the cumulative piece ends."""
    # only these paths: another path's wraps (TRIlong's tangency loop, differentiated twice
    # for Jdot qd) would cost every point (arm26: Jdot qd of TRIlat's points 8.3 -> 0.21 ms,
    # a scratch measurement; benchmarks/RESULTS.md "arm26", session 16)
    tab = path_tables(ps, rows)
    cur = current_paths_from_anchors(ps, anchors, q, rows)
    n_pt = tab.pt_index.shape[1]
    n_w = tab.wrap_cyl.shape[1]
    seq, count, pos = cur.seq, cur.count, cur.pos_world                # (n_rows, S[, 3])
    a, b = jnp.maximum(seq[:, :-1], 0), jnp.maximum(seq[:, 1:], 0)
    live = jnp.arange(seq.shape[1] - 1)[None, :] < (count[:, None] - 1)
    obj = jnp.asarray(tab.slot_obj)
    xa = jnp.take_along_axis(pos, a[..., None], axis=1)
    xb = jnp.take_along_axis(pos, b[..., None], axis=1)
    oa, ob = jnp.take_along_axis(obj, a, axis=1), jnp.take_along_axis(obj, b, axis=1)
    spiral = (oa >= 0) & (oa == ob)
    w = jnp.clip((a - n_pt) // 2, 0, max(n_w - 1, 0))                 # the wrap of a spiral
    if n_w:
        wrap_len = jnp.take_along_axis(cur.wrap_length, w, axis=1)
        turn = jnp.take_along_axis(cur.wrap_turn, w, axis=1)
        cyl = jnp.take_along_axis(jnp.asarray(tab.wrap_cyl), w, axis=1)
    else:
        wrap_len = turn = jnp.zeros(a.shape, pos.dtype)
        cyl = jnp.zeros(a.shape, jnp.int32)
    length = jnp.where(live, jnp.where(spiral, wrap_len, norm(xb - xa)), 0.0)
    return xa, xb, spiral, turn, cyl, length, jnp.cumsum(length, axis=1)


def _spiral_point(anchors: OpenSimAnchors, r1, r2, turn, cyl, beta):
    """World point at fraction beta of the spiral from r1 to r2 (world, (..., 3)) that turns
    by `turn` about the axis of cylinder `cyl` (OpenSim's CalcSpiralWrapPoint)."""
    if anchors.cyl_center.shape[0] == 0:
        return r1
    c, rot = anchors.cyl_center[cyl], anchors.cyl_rot[cyl]            # (..., 3), (..., 3, 3)
    l1 = jnp.einsum("...ji,...j->...i", rot, r1 - c)
    l2 = jnp.einsum("...ji,...j->...i", rot, r2 - c)
    ang = beta * turn
    cs, sn = jnp.cos(ang), jnp.sin(ang)
    local = jnp.stack([cs * l1[..., 0] - sn * l1[..., 1], sn * l1[..., 0] + cs * l1[..., 1],
                       l1[..., 2] + beta * (l2[..., 2] - l1[..., 2])], axis=-1)
    return c + jnp.einsum("...ij,...j->...i", rot, local)


def point_positions(ps: OpenSimPathSet, anchors: OpenSimAnchors, q: jax.Array,
                    point_path: np.ndarray, alpha: jax.Array) -> jax.Array:
    """(n, 3) world points at fractions alpha (n,) of the paths point_path (n,) (static indices
    into `ps`) on OpenSim's current paths at the anchors (module docstring)."""
    point_path = np.asarray(point_path, dtype=np.int64).reshape(-1)
    rows = np.unique(point_path)
    row = np.searchsorted(rows, point_path)                            # static
    xa, xb, spiral, turn, cyl, length, ends = (x[row] for x in _pieces(ps, anchors, q, rows))
    s = (alpha * ends[:, -1])[:, None]                                 # arc length (n, 1)
    prev = jnp.concatenate([jnp.full_like(ends[:, :1], -1.0), ends[:, :-1]], axis=1)
    pick = (ends >= s) & (prev < s)                                    # one-hot over pieces
    beta = safe_div(s - jnp.maximum(prev, 0.0), length)
    straight = xa + beta[..., None] * (xb - xa)
    on_spiral = _spiral_point(anchors, xa, xb, turn, cyl, beta)
    cand = jnp.where(spiral[..., None], on_spiral, straight)
    return jnp.sum(jnp.where(pick[..., None], cand, 0.0), axis=1)


def point_positions_from_kinematics(ps: OpenSimPathSet, kin: Kinematics, q: jax.Array,
                                    point_path: np.ndarray, alpha: jax.Array) -> jax.Array:
    """`point_positions` at the kinematics `kin` (at q)."""
    return point_positions(ps, opensim_anchors(ps, kin), q, point_path, alpha)
