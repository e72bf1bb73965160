"""Path anchors and their motion: the skeleton side of the seed's chain J_ar = J_am J_mr.

The mass points of a path depend on the skeleton only through its *anchors*: the world
positions of the sites (origin, via points, insertion, side sites) and the world frames
(centre c, rotation R) of the wrap geoms -- each fixed to a body. `path_fraction` places the
points from the anchors (x_alpha = F(anchors), the seed's J_am by differentiation); this module
gives the anchors' motion from the engine's rigid-body quantities, without differentiating the
kinematics (Wang et al. 2022 Eqs. 2-5, 8, 11; MuJoCo mj_comVel / mj_rne):

  S_d (6,) the dof motion vectors (engine.dof_motion, MuJoCo cdof: angular, linear, in world
  axes about the reference point O of the dof's tree, a point fixed in space at this instant);
  per body, v_b = sum_{d moves b} S_d qd_d = (w, v_O)  (J_mr qd) and the bias acceleration at
  qdd = 0, a_b = sum_{d moves b} (v_before(d) x S_d) qd_d = (alpha, a_O)  (Jdot_mr qd), both
  from the engine's velocity stage `engine.twists.body_motion_from_kinematics` (the one its
  RNEA uses, so XLA computes it once per dynamics evaluation).
  A point p on body b, r = p - O:      column d of J_p = S_d,lin + S_d,ang x r (if d moves b),
                                       pdot = v_O + w x r,   pddot = a_O + alpha x r + w x pdot
                                       (Featherstone 2008 §2.11: classical acceleration);
  a frame R on body b:                 column d: [S_d,ang]x R;  Rdot = [w]x R,
                                       Rddot = [alpha]x R + [w]x Rdot.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import (body_reference_point, dof_motion, point_tangents,
                                     site_tangents)
from myotwin.engine.kinematics import Kinematics
from myotwin.engine.rows import take
from myotwin.engine.spatial import cross
from myotwin.engine.twists import BodyMotion, body_motion_from_kinematics
from myotwin.paths.length import wrap_frames


class PathAnchors(NamedTuple):
    """World anchors of the paths (metres): site_pos_world (n_site, 3) every site of the model;
    wrap_center (n_w, 3), wrap_rot (n_w, 3, 3) the geom frames of the wraps listed in a static
    tuple `wraps` (in that order). Tangents of anchors use the same structure with a leading
    axis."""

    site_pos_world: jax.Array
    wrap_center: jax.Array
    wrap_rot: jax.Array

    def scaled_add(self, other: "PathAnchors", t) -> "PathAnchors":
        """self + t * other, field by field."""
        return PathAnchors(*(a + t * b for a, b in zip(self, other)))


def path_anchors(paths, kin: Kinematics, wraps: tuple[int, ...]) -> PathAnchors:
    """Anchors at the kinematics `kin` for the wraps `wraps` (static wrap ids)."""
    ws = np.asarray(wraps, dtype=np.int64)
    if ws.size:
        center, rot = wrap_frames(paths, kin)
        center, rot = center[ws], rot[ws]
    else:
        dtype = kin.site_pos_world.dtype
        center, rot = jnp.zeros((0, 3), dtype), jnp.zeros((0, 3, 3), dtype)
    return PathAnchors(kin.site_pos_world, center, rot)


def _cross_columns(w: jax.Array, rot: jax.Array) -> jax.Array:
    """[w]x R for w (..., 3) and R (..., 3, 3): w crossed with every column of R."""
    return jnp.swapaxes(cross(w[..., None, :], jnp.swapaxes(rot, -1, -2)), -1, -2)


class AnchorMotion(NamedTuple):
    """tangents: anchors (`PathAnchors`, or another anchor tuple with `scaled_add`) with a
    leading n_v axis, column d = d anchors / d qd_d (J_mr chained to the anchors); velocity:
    the anchors' time derivatives at qd; bias_acceleration: their second derivatives at qd and
    qdd = 0 (both None without qd)."""

    tangents: Any
    velocity: Any
    bias_acceleration: Any


def frame_tangents(model, kin: Kinematics, rot: jax.Array, body: np.ndarray) -> jax.Array:
    """(n_v, n, 3, 3) d R / d qd_d = [S_d,ang]x R of frames R (n, 3, 3) fixed to bodies (n,)
    (static), 0 where dof d does not move the body."""
    s = dof_motion(model, kin)                                   # (n_v, 6)
    moves = np.asarray(model.dof_ancestor_mask())                # (n_body, n_v)
    b = np.asarray(body, dtype=np.int64).reshape(-1)
    w = s[:, None, :3] * jnp.asarray(moves[b].T[:, :, None], rot.dtype)
    return _cross_columns(w, rot[None])


def point_rates(model, kin: Kinematics, bodies: BodyMotion, points: jax.Array,
                body: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """(pdot, pddot at qdd = 0), each (n, 3), of world points (n, 3) fixed to bodies (n,)
    (static), from the engine's velocity stage `bodies` (module docstring)."""
    motion = jnp.concatenate([bodies.velocity, bodies.bias_acceleration], axis=1)  # (n_body, 12)
    b = np.asarray(body, dtype=np.int64).reshape(-1)
    r = points - take(body_reference_point(model, kin), b)
    m = take(motion, b)        # rows.take: no scatter in reverse mode (polyline.py)
    w, v_o, alpha, a_o = m[:, 0:3], m[:, 3:6], m[:, 6:9], m[:, 9:12]
    pdot = v_o + cross(w, r)
    return pdot, a_o + cross(alpha, r) + cross(w, pdot)


def frame_rates(bodies: BodyMotion, rot: jax.Array,
                body: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """(Rdot, Rddot at qdd = 0), each (n, 3, 3), of frames R (n, 3, 3) fixed to bodies (n,)."""
    b = np.asarray(body, dtype=np.int64).reshape(-1)
    w, alpha = bodies.velocity[b, :3], bodies.bias_acceleration[b, :3]
    rdot = _cross_columns(w, rot)
    return rdot, _cross_columns(alpha, rot) + _cross_columns(w, rdot)


def anchor_motion(model, paths, kin: Kinematics, anchors: PathAnchors, wraps: tuple[int, ...],
                  qd: jax.Array | None = None, bodies: BodyMotion | None = None) -> AnchorMotion:
    """Per-dof tangents of the anchors and, if qd (n_v,) is given, their velocity and bias
    acceleration (module docstring; `bodies`: the engine's velocity stage at qd, if the caller
    has it)."""
    site_body = np.asarray(model.site_body, dtype=np.int64).reshape(-1)
    wrap_body = np.asarray([paths.wrap_body[w] for w in wraps], dtype=np.int64).reshape(-1)
    # the sites' tangents as the paths' length Jacobians compute them (anchors.site_pos_world
    # is kin.site_pos_world, `path_anchors`), so XLA evaluates them once
    tangents = PathAnchors(site_tangents(model, kin),
                           point_tangents(model, kin, anchors.wrap_center, wrap_body),
                           frame_tangents(model, kin, anchors.wrap_rot, wrap_body))
    if qd is None:
        return AnchorMotion(tangents, None, None)
    if bodies is None:
        bodies = body_motion_from_kinematics(model, kin, qd)  # the engine's velocity stage
    site_v, site_a = point_rates(model, kin, bodies, anchors.site_pos_world, site_body)
    c_v, c_a = point_rates(model, kin, bodies, anchors.wrap_center, wrap_body)
    r_v, r_a = frame_rates(bodies, anchors.wrap_rot, wrap_body)
    return AnchorMotion(tangents, PathAnchors(site_v, c_v, r_v), PathAnchors(site_a, c_a, r_a))
