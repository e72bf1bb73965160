"""Position-level kinematics: body, COM-frame and site poses, subtree COMs.

Follows MuJoCo's mj_kinematics and mj_comPos stage by stage so that every number agrees to
float64 roundoff: a body frame is its parent frame composed with (body_pos, body_quat), then
its joints are applied in order about their anchors --
  hinge: rotation by (q - qpos0) about the joint axis, the anchor kept fixed;
  slide: translation by (q - qpos0) along the axis;
  ball:  rotation by the normalised quaternion q (qpos0 is the identity and is not used);
  free:  the body pose is (q[0:3], normalised q[3:7]) in the world frame, whatever the parent.
In the seed's notation (Wang et al. 2022 §3) these are the maximal coordinates of each body
as functions of the reduced coordinates q_r.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.engine.model import JointType, Model
from myotwin.engine.spatial import (
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


def _body_frames(model: Model, q: jax.Array):
    """Body frames and joint anchors/axes: (xpos, xquat, xanchor, xaxis), as in mj_kinematics."""
    dtype = q.dtype
    xpos = [jnp.zeros(3, dtype)]
    xquat = [jnp.array([1.0, 0.0, 0.0, 0.0], dtype)]
    anchors = [None] * model.n_joint
    axes = [None] * model.n_joint
    for b in range(1, model.n_body):
        p = model.body_parent[b]
        pos = xpos[p] + quat_rotate(xquat[p], model.body_pos[b])
        quat = quat_mul(xquat[p], model.body_quat[b])
        for j in range(model.body_joint_adr[b], model.body_joint_adr[b] + model.body_joint_num[b]):
            jtype, adr = model.joint_type[j], model.joint_qpos_adr[j]
            if jtype == JointType.FREE:
                pos = q[adr : adr + 3]
                quat = quat_normalize(q[adr + 3 : adr + 7])
                anchors[j], axes[j] = pos, model.joint_axis[j]
                continue
            axes[j] = quat_rotate(quat, model.joint_axis[j])
            anchors[j] = quat_rotate(quat, model.joint_pos[j]) + pos
            if jtype == JointType.SLIDE:
                pos = pos + axes[j] * (q[adr] - model.qpos0[adr])
                continue
            if jtype == JointType.BALL:
                qloc = quat_normalize(q[adr : adr + 4])
            else:
                qloc = quat_from_axis_angle(model.joint_axis[j], q[adr] - model.qpos0[adr])
            quat = quat_mul(quat, qloc)
            pos = anchors[j] - quat_rotate(quat, model.joint_pos[j])  # keep the anchor fixed
        xpos.append(pos)
        xquat.append(quat_normalize(quat))
    empty = jnp.zeros((0, 3), dtype)
    xanchor = jnp.stack(anchors) if anchors else empty
    xaxis = jnp.stack(axes) if axes else empty
    return jnp.stack(xpos), jnp.stack(xquat), xanchor, xaxis


def _subtree_com(model: Model, com: jax.Array) -> jax.Array:
    """(n_body, 3) mass-weighted COM of each subtree (mj_comPos), children before parents."""
    mass = [model.body_mass[b] for b in range(model.n_body)]
    moment = [model.body_mass[b] * com[b] for b in range(model.n_body)]
    for b in range(model.n_body - 1, 0, -1):
        p = model.body_parent[b]
        mass[p] = mass[p] + mass[b]
        moment[p] = moment[p] + moment[b]
    mass, moment = jnp.stack(mass), jnp.stack(moment)
    ok = mass > _MIN_MASS
    safe = jnp.where(ok, mass, 1.0)
    return jnp.where(ok[:, None], moment / safe[:, None], com)


def kinematics(model: Model, q: jax.Array) -> Kinematics:
    """Position stage for configuration q (n_q,) in MuJoCo's qpos layout."""
    xpos, xquat, xanchor, xaxis = _body_frames(model, q)
    xmat = quat_to_mat(xquat)
    com = xpos + quat_rotate(xquat, model.body_ipos)
    irot = quat_to_mat(quat_mul(xquat, model.body_iquat))
    site_body = jnp.asarray(model.site_body, dtype=jnp.int32)
    site_quat = quat_mul(xquat[site_body], model.site_quat)
    site_pos = xpos[site_body] + quat_rotate(xquat[site_body], model.site_pos)
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
