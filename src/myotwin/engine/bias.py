"""Bias forces c(q, qd) (n_v,): Coriolis, centrifugal and gravity, MuJoCo's qfrc_bias (mj_rne
with zero joint acceleration), so that M(q) qdd + c(q, qd) = applied generalized forces.

The recursive Newton-Euler algorithm (Featherstone 2008 Table 5.1) written with the seed's
Jacobians (Wang et al. 2022 §3, Eqs. 2-7): with S_d the dof motion vectors
(jacobian.dof_motion) and everything about each tree's reference point in world axes,
  v_b = sum_{d moves b} S_d qd_d                                (body velocity, J_mr qd)
  Sdot_d = v_(frame before d) x S_d                             (MuJoCo cdof_dot)
  a_b = (0, -g) + sum_{d moves b} Sdot_d qd_d                    (J̇_mr qd, gravity as a
                                                                 fictitious acceleration)
  f_b = I_b a_b + v_b x* I_b v_b,      c = sum_b J_b^T f_b,
the last sum taken as c_d = S_d . (sum of f_b over the subtree of dof d's body).
Every sum over dofs or bodies is a masked sum with static (NumPy) masks.
"The frame before d" moves with the ancestors' dofs and the earlier dofs of d's body, except
that the three axes of a ball (or free-joint rotation) all use the velocity before that
rotation (MuJoCo's mj_comVel; including only some of them would break the w x w = 0
cancellation).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import dof_motion, dof_plan
from myotwin.engine.kinematics import Kinematics, kinematics, masked_sum, subtree_sum
from myotwin.engine.mass import body_com_offset, body_inertia_world
from myotwin.engine.model import JointType, Model
from myotwin.engine.spatial import apply_inertia, cross_force, cross_motion, dot_last


def _earlier_dof_mask(model: Model) -> np.ndarray:
    """(n_v, n_v) bool: [d, e] True when dof e moves the frame in which dof d acts.

    That is e < d among the dofs moving d's body (ancestors' dofs and earlier dofs of the
    body), except the three rotational dofs of a ball or free joint, which all act in the frame
    before that rotation, as in MuJoCo's mj_comVel.
    """
    ancestors = model.dof_ancestor_mask()
    mask = np.zeros((model.n_v, model.n_v), dtype=bool)
    for d in range(model.n_v):
        mask[d, :d] = ancestors[model.dof_body[d], :d]
    for j, jtype in enumerate(model.joint_type):
        if jtype in (JointType.BALL, JointType.FREE):
            rot = model.joint_dof_adr[j] + (3 if jtype == JointType.FREE else 0)
            mask[rot : rot + 3, rot : rot + 3] = False
    return mask


def bias_forces_from_kinematics(model: Model, kin: Kinematics, qd: jax.Array) -> jax.Array:
    """(n_v,) bias forces for an already computed position stage and velocity qd (n_v,)."""
    dtype = kin.body_pos_world.dtype
    s = dof_motion(model, kin)  # (n_v, 6)
    s_qd = s * qd[:, None]
    # J_mr qd and Jdot_mr qd as products with the static (n_body, n_v) ancestor mask: one small
    # dot in a single trajectory, one GEMM over the whole batch under vmap (faster there than
    # the gather-sums of masked_sum; engine.md "Performance").
    moves = jnp.asarray(model.dof_ancestor_mask(), dtype=dtype)  # (n_body, n_v)
    v_body = moves @ s_qd  # (n_body, 6)
    v_before = masked_sum(_earlier_dof_mask(model), s_qd)  # (n_v, 6)
    sdot_qd = cross_motion(v_before, s) * qd[:, None]
    a0 = jnp.concatenate([jnp.zeros(3, dtype), -model.gravity])
    a_body = a0[None, :] + moves @ sdot_qd
    inertia = body_inertia_world(model, kin)
    com = body_com_offset(model, kin)
    force = apply_inertia(model.body_mass, com, inertia, a_body) + cross_force(
        v_body, apply_inertia(model.body_mass, com, inertia, v_body)
    )
    # c_d = S_d . (sum of f_b over the subtree of d's body): J^T f without forming J
    subtree_force = subtree_sum(model, force)[dof_plan(model).body]
    return dot_last(s, subtree_force)


def bias_forces(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_v,) bias forces (MuJoCo qfrc_bias) at configuration q (n_q,) and velocity qd (n_v,)."""
    return bias_forces_from_kinematics(model, kinematics(model, q), qd)
