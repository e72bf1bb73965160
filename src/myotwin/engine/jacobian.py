"""Dof motion vectors and Jacobians: J_mr of the seed (Wang et al. 2022 §3, Eq. 2) and point
Jacobians (MuJoCo mj_comPos cdof, mj_jac, mj_jacSite).

Each dof d has a unit spatial motion vector S_d (6,) = (angular, linear), in world axes about
the reference point of its kinematic tree: the subtree COM of the tree's root body (MuJoCo's
com-based frame; one reference per tree keeps the lever arms short). With r_d the joint
anchor and a_d the axis in world axes:
  hinge: S = (a, a x (c - r));   slide: S = (0, a);
  ball, and free rotation: a = the columns of the body's world rotation, as hinges at r;
  free translation: S = (0, e_k) in world axes.
A body's spatial velocity is v_b = sum over its and its ancestors' dofs of S_d qd_d, i.e. the
rows of J_mr with world-axis (not body-local) twists.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.model import JOINT_NV, JointType, Model
from myotwin.engine.rows import take, take_pairs
from myotwin.engine.spatial import cross


def body_reference_point(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 3) reference point of each body's tree: subtree COM of its root body."""
    return take(kin.subtree_com_world, np.asarray(model.body_root, dtype=int))


class DofPlan(NamedTuple):
    """Static per-dof tables (NumPy, built once per topology).

    joint (n_v,), body (n_v,): joint and body of each dof; col (n_v,): k of a ball/free
    rotation axis (column of the body rotation) or free translation (e_k), else 0.
    kind (n_v,): _HINGE, _SLIDE, _BODY_AXIS (ball and free rotation), _WORLD_AXIS (free
    translation).
    """

    joint: np.ndarray
    body: np.ndarray
    col: np.ndarray
    kind: np.ndarray


_HINGE, _SLIDE, _BODY_AXIS, _WORLD_AXIS = 0, 1, 2, 3


def dof_plan(model: Model) -> DofPlan:
    """Static dof tables of `model` (cached per topology)."""
    return _dof_plan(model.joint_type, model.joint_dof_adr, model.joint_body)


@functools.lru_cache(maxsize=256)
def _dof_plan(joint_type, joint_dof_adr, joint_body) -> DofPlan:
    rows = []  # (joint, col, kind) per dof, in qvel order
    for j, jtype in enumerate(joint_type):
        assert joint_dof_adr[j] == len(rows), "dofs are expected in joint order (MuJoCo's)"
        if jtype == JointType.HINGE:
            rows.append((j, 0, _HINGE))
        elif jtype == JointType.SLIDE:
            rows.append((j, 0, _SLIDE))
        else:
            if jtype == JointType.FREE:
                rows += [(j, k, _WORLD_AXIS) for k in range(3)]
            rows += [(j, k, _BODY_AXIS) for k in range(3)]
    assert len(rows) == sum(JOINT_NV[JointType(t)] for t in joint_type)
    joint, col, kind = (list(c) for c in zip(*rows)) if rows else ([], [], [])
    body = np.array([joint_body[j] for j in joint], dtype=int)
    return DofPlan(np.array(joint, dtype=int), body, np.array(col, dtype=int),
                   np.array(kind, dtype=int))


def dof_motion(model: Model, kin: Kinematics) -> jax.Array:
    """(n_v, 6) unit motion vector S_d of each dof about its tree's reference point."""
    if model.n_v == 0:
        return jnp.zeros((0, 6), dtype=kin.body_pos_world.dtype)
    plan = dof_plan(model)
    ref = take(body_reference_point(model, kin), plan.body)
    anchor = take(kin.joint_anchor_world, plan.joint)
    world_axis = jnp.asarray(np.eye(3)[plan.col], dtype=ref.dtype)
    axis = jnp.where(
        (plan.kind == _BODY_AXIS)[:, None],
        take_pairs(kin.body_rot_world, plan.body, plan.col, second_axis=2),
        jnp.where((plan.kind == _WORLD_AXIS)[:, None], world_axis,
                  take(kin.joint_axis_world, plan.joint)))
    rotational = ((plan.kind == _HINGE) | (plan.kind == _BODY_AXIS))[:, None]
    ang = jnp.where(rotational, axis, 0.0)
    lin = jnp.where(rotational, cross(axis, ref - anchor), axis)
    return jnp.concatenate([ang, lin], axis=-1)


def body_motion_jacobians(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 6, n_v) spatial Jacobian of every body about its tree's reference point."""
    mask = jnp.asarray(model.dof_ancestor_mask(), dtype=kin.body_pos_world.dtype)
    return mask[:, None, :] * dof_motion(model, kin).T[None, :, :]


def point_jacobian(
    model: Model, kin: Kinematics, point_world: jax.Array, body: int
) -> tuple[jax.Array, jax.Array]:
    """Translational (3, n_v) and rotational (3, n_v) Jacobian of a world point fixed to `body`
    (mj_jac): column d is (lin_d + ang_d x (p - c), ang_d) for the dofs that move the body."""
    s = dof_motion(model, kin)
    mask = jnp.asarray(model.dof_ancestor_mask()[body], dtype=s.dtype)
    offset = point_world - take(body_reference_point(model, kin), body)
    jacp = (s[:, 3:] + cross(s[:, :3], offset)) * mask[:, None]
    jacr = s[:, :3] * mask[:, None]
    return jacp.T, jacr.T


def point_tangents(model: Model, kin: Kinematics, point_world: jax.Array,
                   body: np.ndarray) -> jax.Array:
    """(n_v, n, 3) translational Jacobian columns of world points (n, 3) fixed to bodies (n,)
    (static): [d, k] = S_d,lin + S_d,ang x (p_k - O) if dof d moves body_k, else 0 (mj_jac,
    dof axis first)."""
    s = dof_motion(model, kin)
    body = np.asarray(body, dtype=np.int64).reshape(-1)
    moves = np.asarray(model.dof_ancestor_mask())[body].T               # (n_v, n)
    r = point_world - take(body_reference_point(model, kin), body)
    lin = s[:, None, 3:] + cross(s[:, None, :3], r[None])
    return lin * jnp.asarray(moves[:, :, None], dtype=lin.dtype)


def site_tangents(model: Model, kin: Kinematics) -> jax.Array:
    """(n_v, n_site, 3) `point_tangents` of every site (mj_jacSite, dof axis first). One
    expression shared by the paths' length Jacobians, the muscle mass points' anchors and
    `site_jacobians`, so XLA computes it once per dynamics evaluation."""
    return point_tangents(model, kin, kin.site_pos_world, model.site_body)


def site_jacobians(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Translational and rotational Jacobians of every site, each (n_site, 3, n_v) (mj_jacSite)."""
    kin = kinematics(model, q)
    if model.n_site == 0:
        return jnp.zeros((0, 3, model.n_v)), jnp.zeros((0, 3, model.n_v))
    s = dof_motion(model, kin)
    site_body = np.asarray(model.site_body, dtype=np.int64).reshape(-1)
    mask = jnp.asarray(model.dof_ancestor_mask()[site_body], dtype=s.dtype)  # (n_site, n_v)
    jacr = s[None, :, :3] * mask[..., None]                                   # (n_site, n_v, 3)
    return jnp.moveaxis(site_tangents(model, kin), 0, -1), jnp.swapaxes(jacr, 1, 2)
