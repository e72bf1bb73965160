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

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.model import JOINT_NV, JointType, Model


def body_reference_point(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 3) reference point of each body's tree: subtree COM of its root body."""
    return kin.subtree_com_world[jnp.asarray(model.body_root, dtype=jnp.int32)]


def dof_motion(model: Model, kin: Kinematics) -> jax.Array:
    """(n_v, 6) unit motion vector S_d of each dof about its tree's reference point."""
    ref = body_reference_point(model, kin)
    rows = []
    for j in range(model.n_joint):
        jtype, b = model.joint_type[j], model.joint_body[j]
        lever = ref[b] - kin.joint_anchor_world[j]
        if jtype == JointType.SLIDE:
            rows.append(jnp.concatenate([jnp.zeros(3), kin.joint_axis_world[j]]))
        elif jtype == JointType.HINGE:
            a = kin.joint_axis_world[j]
            rows.append(jnp.concatenate([a, jnp.cross(a, lever)]))
        else:
            if jtype == JointType.FREE:
                rows.extend(jnp.concatenate([jnp.zeros(3), e]) for e in jnp.eye(3))
            for k in range(3):
                a = kin.body_rot_world[b][:, k]
                rows.append(jnp.concatenate([a, jnp.cross(a, lever)]))
    assert len(rows) == sum(JOINT_NV[JointType(t)] for t in model.joint_type)
    if not rows:
        return jnp.zeros((0, 6))
    return jnp.stack(rows)


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
    offset = point_world - body_reference_point(model, kin)[body]
    jacp = (s[:, 3:] + jnp.cross(s[:, :3], offset)) * mask[:, None]
    jacr = s[:, :3] * mask[:, None]
    return jacp.T, jacr.T


def site_jacobians(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Translational and rotational Jacobians of every site, each (n_site, 3, n_v) (mj_jacSite)."""
    kin = kinematics(model, q)
    if model.n_site == 0:
        return jnp.zeros((0, 3, model.n_v)), jnp.zeros((0, 3, model.n_v))
    s = dof_motion(model, kin)
    site_body = np.asarray(model.site_body)
    mask = jnp.asarray(model.dof_ancestor_mask()[site_body], dtype=s.dtype)  # (n_site, n_v)
    offset = kin.site_pos_world - body_reference_point(model, kin)[site_body]  # (n_site, 3)
    jacp = s[None, :, 3:] + jnp.cross(s[None, :, :3], offset[:, None, :])  # (n_site, n_v, 3)
    jacr = jnp.broadcast_to(s[None, :, :3], jacp.shape)
    return (
        jnp.swapaxes(jacp * mask[..., None], 1, 2),
        jnp.swapaxes(jacr * mask[..., None], 1, 2),
    )
