"""Position-level kinematics: body, COM-frame and site poses, subtree COMs.

Follows MuJoCo's mj_kinematics and mj_comPos so that every number agrees to float64 roundoff:
a body frame is its parent frame composed with (body_pos, body_quat), then its joints are
applied in order about their anchors --
  hinge: rotation by (q - qpos0) about the joint axis, the anchor kept fixed;
  slide: translation by (q - qpos0) along the axis;
  ball:  rotation by the normalised quaternion q (qpos0 is the identity and is not used);
  free:  the body pose is (q[0:3], normalised q[3:7]) in the world frame, whatever the parent.
In the seed's notation (Wang et al. 2022 §3) these are the maximal coordinates of each body
as functions of the reduced coordinates q_r.

Vectorised form (engine.md "Performance"). A frame is (p, r): x_parent = p + R(r) x_local.
Each joint's transform relative to the frame before it depends on q only -- hinge/ball
(a - R a, r) with anchor a, slide (axis s, 1), free (q[0:3], q[3:7]/|q[3:7]|) -- so all joints
are evaluated in one vectorised op, then composed per body over its joint slots (C_b =
(body_pos, body_quat) o J_1 o ... o J_k, one op per slot over all bodies). The tree is then
walked level by level (all bodies of one depth in one op): W_b = W_parent o C_b with the
quaternion normalised (mju_normalize4). Joint anchors/axes come from the frame before each
joint, W_parent o C_b(before it). The index tables are NumPy, built once per topology.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.model import JointType, Model
from myotwin.engine.rows import masked_sum, take, take_pairs
from myotwin.engine.spatial import (
    mat_vec,
    quat_from_axis_angle,
    quat_mul,
    quat_normalize,
    quat_rotate,
    quat_to_mat,
)

#: MuJoCo's mjMINVAL: below this subtree mass the subtree COM is the body COM.
_MIN_MASS = 1e-15


class Kinematics(NamedTuple):
    """Output of the position stage (world frame throughout).

    body_pos_world (n_body, 3), body_quat_world (n_body, 4), body_rot_world (n_body, 3, 3):
      body frames (MuJoCo xpos, xquat, xmat).
    body_com_world (n_body, 3), body_inertia_rot_world (n_body, 3, 3): COM frames (xipos, ximat).
    joint_anchor_world (n_joint, 3), joint_axis_world (n_joint, 3): xanchor, xaxis.
    site_pos_world (n_site, 3), site_rot_world (n_site, 3, 3): site_xpos, site_xmat.
    subtree_com_world (n_body, 3): COM of each body's subtree; row 0 is the whole model's.
    """

    body_pos_world: jax.Array
    body_quat_world: jax.Array
    body_rot_world: jax.Array
    body_com_world: jax.Array
    body_inertia_rot_world: jax.Array
    joint_anchor_world: jax.Array
    joint_axis_world: jax.Array
    site_pos_world: jax.Array
    site_rot_world: jax.Array
    subtree_com_world: jax.Array


class TreePlan(NamedTuple):
    """Static index tables of a kinematic tree (NumPy, built once per topology).

    frame_parent (n_body,): body whose frame a body's pose is composed onto (its parent; the
      world for a body with a free joint, whose pose is absolute).
    levels: body ids of each depth of that tree, depth 1 (children of the world) first.
    level_parent: for each level after the first, the position of every body's frame parent
      in the previous level.
    body_slot (n_body,): position of each body in concat([world], *levels).
    slot_joint (n_body, n_slot): the k-th joint of each body, n_joint where it has fewer.
    joint_slot (n_joint,): k of each joint within its body.
    free_body (n_body,) bool: the body has a free joint.
    subtree (n_body, n_body) float64: [b, c] = 1 when c is b or one of its descendants.
    """

    frame_parent: np.ndarray
    levels: tuple[np.ndarray, ...]
    level_parent: tuple[np.ndarray, ...]
    body_slot: np.ndarray
    slot_joint: np.ndarray
    joint_slot: np.ndarray
    free_body: np.ndarray
    subtree: np.ndarray


def tree_plan(model: Model) -> TreePlan:
    """Static tables of `model`'s tree (cached per topology)."""
    return _tree_plan(model.body_parent, model.body_joint_adr, model.body_joint_num,
                      model.joint_type)


@functools.lru_cache(maxsize=256)
def _tree_plan(body_parent, body_joint_adr, body_joint_num, joint_type) -> TreePlan:
    n_body, n_joint = len(body_parent), len(joint_type)
    free_body = np.zeros(n_body, dtype=bool)
    for b in range(1, n_body):
        adr, num = body_joint_adr[b], body_joint_num[b]
        free_body[b] = any(joint_type[j] == JointType.FREE for j in range(adr, adr + num))
    frame_parent = np.array([0 if free_body[b] else body_parent[b] for b in range(n_body)])
    depth = np.zeros(n_body, dtype=int)
    for b in range(1, n_body):  # MuJoCo orders parents before children
        depth[b] = depth[frame_parent[b]] + 1
    levels = tuple(np.flatnonzero(depth == d) for d in range(1, int(depth.max(initial=0)) + 1))
    level_parent = tuple(
        np.searchsorted(levels[i - 1], frame_parent[levels[i]]) for i in range(1, len(levels)))
    order = np.concatenate([[0], *levels]).astype(int)
    body_slot = np.empty(n_body, dtype=int)
    body_slot[order] = np.arange(n_body)
    n_slot = max(body_joint_num, default=0)
    slot_joint = np.full((n_body, n_slot), n_joint, dtype=int)
    joint_slot = np.zeros(n_joint, dtype=int)
    for b in range(n_body):
        for k in range(body_joint_num[b]):
            slot_joint[b, k] = body_joint_adr[b] + k
            joint_slot[body_joint_adr[b] + k] = k
    subtree = np.eye(n_body)
    for b in range(n_body - 1, 0, -1):
        subtree[body_parent[b]] += subtree[b]
    return TreePlan(frame_parent, levels, level_parent, body_slot, slot_joint, joint_slot,
                    free_body, subtree)


def _compose(pa, ra, pb, rb):
    """Frame composition (pa, ra) o (pb, rb) = (pa + R(ra) pb, ra * rb)."""
    return pa + quat_rotate(ra, pb), quat_mul(ra, rb)


def _joint_transforms(model: Model, q: jax.Array):
    """(p (n_joint + 1, 3), r (n_joint + 1, 4)): each joint's transform relative to the frame
    before it (module docstring), plus an identity row n_joint for padded slots."""
    dtype = q.dtype
    jtype = np.asarray(model.joint_type, dtype=int).reshape(-1)
    qadr = np.asarray(model.joint_qpos_adr, dtype=int).reshape(-1)
    hinge, slide = jtype == JointType.HINGE, jtype == JointType.SLIDE
    ball, free = jtype == JointType.BALL, jtype == JointType.FREE
    last = max(model.n_q - 1, 0)
    scalar = np.where(hinge | slide, qadr, 0).clip(0, last)
    angle = take(q, scalar) - model.qpos0[scalar]
    quat_adr = np.where(free, qadr + 3, np.where(ball, qadr, 0))
    ident = jnp.array([1.0, 0.0, 0.0, 0.0], dtype)
    # Rows that are not quaternions read the identity (finite values and gradients there).
    quat_rows = (quat_adr[:, None] + np.arange(4)).clip(0, last)
    qquat = jnp.where((ball | free)[:, None], take(q, quat_rows), ident)
    rot = jnp.where(hinge[:, None], quat_from_axis_angle(model.joint_axis, angle),
                    quat_normalize(qquat))
    anchor = model.joint_pos
    pos = jnp.where(slide[:, None], model.joint_axis * angle[:, None],
                    anchor - quat_rotate(rot, anchor))
    pos = jnp.where(free[:, None], take(q, (qadr[:, None] + np.arange(3)).clip(0, last)), pos)
    return (jnp.concatenate([pos, jnp.zeros((1, 3), dtype)]),
            jnp.concatenate([rot, ident[None]]))


def _frames(model: Model, q: jax.Array):
    """Body frames and joint anchors/axes: (xpos, xquat, xanchor, xaxis), as in mj_kinematics."""
    plan = tree_plan(model)
    dtype = q.dtype
    jp, jr = _joint_transforms(model, q)
    free = plan.free_body[:, None]
    cp = jnp.where(free, 0.0, model.body_pos)
    cr = jnp.where(free, jnp.array([1.0, 0.0, 0.0, 0.0], dtype), model.body_quat)
    before_p, before_r = [], []
    for k in range(plan.slot_joint.shape[1]):  # the k-th joint of every body at once
        before_p.append(cp)
        before_r.append(cr)
        slot = plan.slot_joint[:, k]
        cp, cr = _compose(cp, cr, take(jp, slot), take(jr, slot))
    wp = [jnp.zeros((1, 3), dtype)]
    wr = [jnp.array([[1.0, 0.0, 0.0, 0.0]], dtype)]
    prev_p = prev_r = None
    for i, bodies in enumerate(plan.levels):  # all bodies of one depth at once
        if i == 0:  # onto the world frame: exactly (C_p, C_r)
            lp, lr = take(cp, bodies), quat_normalize(take(cr, bodies))
        else:
            par = plan.level_parent[i - 1]
            lp, lr = _compose(take(prev_p, par), take(prev_r, par), take(cp, bodies),
                              take(cr, bodies))
            lr = quat_normalize(lr)
        wp.append(lp)
        wr.append(lr)
        prev_p, prev_r = lp, lr
    xpos, xquat = jnp.concatenate(wp), jnp.concatenate(wr)
    if not np.array_equal(plan.body_slot, np.arange(model.n_body)):  # back to body order
        xpos, xquat = take(xpos, plan.body_slot), take(xquat, plan.body_slot)
    if model.n_joint == 0:
        empty = jnp.zeros((0, 3), dtype)
        return xpos, xquat, empty, empty
    jbody = np.asarray(model.joint_body, dtype=int).reshape(-1)
    jpar = plan.frame_parent[jbody]
    bp = take_pairs(jnp.stack(before_p), plan.joint_slot, jbody)
    br = take_pairs(jnp.stack(before_r), plan.joint_slot, jbody)
    fp, fr = _compose(take(xpos, jpar), take(xquat, jpar), bp, br)
    rot = quat_to_mat(fr)
    xaxis = mat_vec(rot, model.joint_axis)
    xanchor = fp + mat_vec(rot, model.joint_pos)
    free_joint = (np.asarray(model.joint_type).reshape(-1) == JointType.FREE)[:, None]
    if free_joint.any():  # MuJoCo: xanchor = body position, xaxis = the model's jnt_axis
        xanchor = jnp.where(free_joint, take(xpos, jbody), xanchor)
        xaxis = jnp.where(free_joint, model.joint_axis, xaxis)
    return xpos, xquat, xanchor, xaxis


def subtree_sum(model: Model, x: jax.Array) -> jax.Array:
    """(n_body, ...) sum of x (n_body, ...) over each body's subtree (itself included)."""
    return masked_sum(tree_plan(model).subtree, x)


def _subtree_com(model: Model, com: jax.Array) -> jax.Array:
    """(n_body, 3) mass-weighted COM of each subtree (mj_comPos)."""
    mass = subtree_sum(model, model.body_mass)
    moment = subtree_sum(model, model.body_mass[:, None] * com)
    ok = mass > _MIN_MASS
    safe = jnp.where(ok, mass, 1.0)
    return jnp.where(ok[:, None], moment / safe[:, None], com)


def kinematics(model: Model, q: jax.Array) -> Kinematics:
    """Position stage for configuration q (n_q,) in MuJoCo's qpos layout."""
    xpos, xquat, xanchor, xaxis = _frames(model, q)
    xmat = quat_to_mat(xquat)
    com = xpos + mat_vec(xmat, model.body_ipos)
    irot = quat_to_mat(quat_mul(xquat, model.body_iquat))
    site_body = np.asarray(model.site_body, dtype=int).reshape(-1)
    site_quat = quat_mul(take(xquat, site_body), model.site_quat)
    site_pos = take(xpos, site_body) + mat_vec(take(xmat, site_body), model.site_pos)
    return Kinematics(
        body_pos_world=xpos,
        body_quat_world=xquat,
        body_rot_world=xmat,
        body_com_world=com,
        body_inertia_rot_world=irot,
        joint_anchor_world=xanchor,
        joint_axis_world=xaxis,
        site_pos_world=site_pos,
        site_rot_world=quat_to_mat(site_quat),
        subtree_com_world=_subtree_com(model, com),
    )


def forward_kinematics(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Body positions (n_body, 3) and rotation matrices (n_body, 3, 3) (MuJoCo xpos, xmat)."""
    kin = kinematics(model, q)
    return kin.body_pos_world, kin.body_rot_world


def site_poses(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Site positions (n_site, 3) and rotation matrices (n_site, 3, 3) (site_xpos, site_xmat)."""
    kin = kinematics(model, q)
    return kin.site_pos_world, kin.site_rot_world


def center_of_mass(model: Model, q: jax.Array) -> jax.Array:
    """(3,) COM of the whole model in the world frame (MuJoCo subtree_com[0])."""
    return kinematics(model, q).subtree_com_world[0]
