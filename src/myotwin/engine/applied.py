"""Applied forces: MuJoCo's `qfrc_applied` and `xfrc_applied` as generalized forces (n_v,).

External inputs set by the user (perturbations, support forces, forces from another simulator),
not functions of the state:
  qfrc_applied (n_v,): a generalized force, added as is;
  xfrc_applied (n_body, 6): per body a world-frame force F (first 3, N) and torque T (last 3,
    N m) acting at the body's COM (MuJoCo xipos). Its generalized force is MuJoCo's
    mj_xfrcAccumulate (mj_applyFT for every body but the world):
      tau = sum_b J_p(b, xipos_b)^T F_b + J_r(b)^T T_b.
Computed without forming J: the wrench about the tree's reference point c (the frame of the dof
motion vectors S_d, jacobian.py) is w_b = (T_b + (xipos_b - c) x F_b, F_b), and
tau_d = S_d . (sum of w_b over the subtree of d's body) -- J^T f as in the RNEA of bias.py
(Featherstone 2008 §5.3). The world's row of xfrc_applied is ignored, as in MuJoCo.

In the equations of motion (dynamics.py) tau_applied is added to the smooth force before the
joint-limit QP, exactly where MuJoCo adds it to qfrc_smooth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.arguments import check_applied_shapes
from myotwin.engine.jacobian import body_reference_point, dof_motion, dof_plan
from myotwin.engine.kinematics import Kinematics, kinematics, subtree_sum
from myotwin.engine.model import Model
from myotwin.engine.spatial import cross, dot_last


def xfrc_generalized_forces(model: Model, kin: Kinematics, xfrc_applied: jax.Array) -> jax.Array:
    """(n_v,) generalized force of body wrenches xfrc_applied (n_body, 6) = (force, torque) in
    world axes at each body's COM (MuJoCo mj_xfrcAccumulate), for the position stage `kin`."""
    force, torque = xfrc_applied[:, :3], xfrc_applied[:, 3:]
    arm = kin.body_com_world - body_reference_point(model, kin)  # (n_body, 3)
    wrench = jnp.concatenate([torque + cross(arm, force), force], axis=-1)  # angular first
    return wrench_generalized_forces(model, kin, wrench)


def wrench_generalized_forces(model: Model, kin: Kinematics, wrench: jax.Array) -> jax.Array:
    """(n_v,) J^T of body wrenches (n_body, 6) = (torque, force) in world axes about each
    body's tree reference point (`jacobian.body_reference_point`): tau_d = S_d . (sum of the
    wrenches over the subtree of d's body). Used for xfrc_applied and the contact forces."""
    if model.n_v == 0:
        return jnp.zeros(0, dtype=kin.body_pos_world.dtype)
    subtree_wrench = subtree_sum(model, wrench)[dof_plan(model).body]  # (n_v, 6)
    return dot_last(dof_motion(model, kin), subtree_wrench)


def applied_forces_from_kinematics(model: Model, kin: Kinematics, qfrc_applied=None,
                                   xfrc_applied=None) -> jax.Array | None:
    """(n_v,) qfrc_applied + J^T xfrc_applied, or None when both are None (nothing applied)."""
    check_applied_shapes(model, qfrc_applied, xfrc_applied)
    out = None
    if qfrc_applied is not None:
        out = jnp.asarray(qfrc_applied, dtype=kin.body_pos_world.dtype)
    if xfrc_applied is not None:
        xfrc = xfrc_generalized_forces(
            model, kin, jnp.asarray(xfrc_applied, dtype=kin.body_pos_world.dtype))
        out = xfrc if out is None else out + xfrc
    return out


def applied_forces(model: Model, q: jax.Array, qfrc_applied=None, xfrc_applied=None) -> jax.Array:
    """(n_v,) generalized applied force qfrc_applied (n_v,) + J^T xfrc_applied (n_body, 6) at
    configuration q (n_q,); zeros when both are None. MuJoCo: qfrc_applied plus the
    mj_xfrcAccumulate term of qfrc_smooth."""
    out = applied_forces_from_kinematics(model, kinematics(model, q), qfrc_applied, xfrc_applied)
    return jnp.zeros(model.n_v, dtype=jnp.result_type(float)) if out is None else out
