"""Maximal velocities (twists) of the bodies and their bias accelerations: the velocity stage.

Seed: Wang et al. 2022 §3, Eqs. 2-5. The maximal velocity of every body is linear in the
reduced velocity, phi = J_mr qd (Eq. 2), and its time derivative is
phidot = Jdot_mr qd + J_mr qdd (Eq. 5 with the muscle points replaced by the bodies); the
*bias acceleration* is the part Jdot_mr qd that remains at qdd = 0.

Convention (MuJoCo's, not the seed's). The seed writes phi = (omega, v) in body-local
coordinates (Eq. 3). We use MuJoCo's com-based spatial vectors (`mjData.cvel`, `cacc`;
Featherstone 2008 §2): (angular, linear), both in **world axes**, the linear part being the
velocity of the material point (rigidly attached to the body) that is momentarily at the
**subtree COM of the body's tree root** (`subtree_com[body_rootid]`), one reference point per
kinematic tree. With S_d the dof motion vectors (jacobian.dof_motion, MuJoCo cdof):

  v_b = sum_{d moves b} S_d qd_d                                (Eq. 2; MuJoCo cvel)
  Sdot_d = v_(frame before d) x S_d                             (MuJoCo cdof_dot, mj_comVel)
  a_b = sum_{d moves b} Sdot_d qd_d                             (Eq. 5 at qdd = 0)

The full spatial acceleration of body b is a_b + sum_{d moves b} S_d qdd_d; MuJoCo's `cacc`
(mj_rnePostConstraint) is that plus the fictitious (0, -g) of the world, so a_b equals `cacc`
computed with qacc = 0 and zero gravity. "The frame before d" moves with the ancestors' dofs
and the earlier dofs of d's body, except that the three axes of a ball (or free-joint
rotation) all use the velocity before that rotation (mj_comVel; including only some of them
would break the w x w = 0 cancellation).

A point p fixed to body b, r = p - c with c the tree's reference point, moves with the
classical velocity v_lin + w x r and acceleration a_lin + alpha x r + w x (v_lin + w x r)
(Featherstone 2008 §2.11). The RNEA of bias.py is built on this stage (one implementation).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from myotwin.engine.jacobian import dof_motion
from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.model import JointType, Model
from myotwin.engine.rows import masked_sum, static_product
from myotwin.engine.spatial import cross_motion


def earlier_dof_mask(model: Model) -> np.ndarray:
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


class BodyMotion(NamedTuple):
    """Velocity stage (world axes about each tree's reference point, angular first).

    dof_motion (n_v, 6): S_d (MuJoCo cdof).
    velocity (n_body, 6): v_b = J_mr qd (MuJoCo cvel); row 0 (world) is zero.
    bias_acceleration (n_body, 6): a_b = Jdot_mr qd, the spatial acceleration at qdd = 0
      without gravity (MuJoCo cacc with qacc = 0 and gravity 0).
    """

    dof_motion: jax.Array
    velocity: jax.Array
    bias_acceleration: jax.Array


def body_motion_from_kinematics(model: Model, kin: Kinematics, qd: jax.Array) -> BodyMotion:
    """Velocity stage for an already computed position stage and velocity qd (n_v,)."""
    s = dof_motion(model, kin)  # (n_v, 6)
    s_qd = s * qd[:, None]
    # J_mr qd and Jdot_mr qd as products with the static (n_body, n_v) ancestor mask: fused
    # in a single trajectory, one GEMM over the batch under vmap (rows.static_product).
    moves = model.dof_ancestor_mask()  # (n_body, n_v)
    v_body = static_product(moves, s_qd)  # (n_body, 6)
    v_before = masked_sum(earlier_dof_mask(model), s_qd)  # (n_v, 6)
    sdot_qd = cross_motion(v_before, s) * qd[:, None]
    return BodyMotion(s, v_body, static_product(moves, sdot_qd))


def body_velocities(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_body, 6) spatial velocities (angular, linear) of the bodies at configuration q (n_q,)
    and velocity qd (n_v,): J_mr qd (seed Eq. 2) in MuJoCo's cvel convention (module
    docstring); row 0 is the world (zero)."""
    return body_motion_from_kinematics(model, kinematics(model, q), qd).velocity


def body_bias_accelerations(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_body, 6) spatial accelerations (angular, linear) of the bodies at qdd = 0, gravity
    excluded: Jdot_mr qd (seed Eq. 5), MuJoCo's cacc at qacc = 0 with zero gravity (module
    docstring). Add sum_{d moves b} S_d qdd_d for the acceleration at a given qdd."""
    return body_motion_from_kinematics(model, kinematics(model, q), qd).bias_acceleration
