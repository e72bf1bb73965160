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
v_b and Jdot_mr qd are the velocity stage of twists.py (`body_motion_from_kinematics`, public
as `body_velocities` / `body_bias_accelerations`), which also defines "the frame before d".
Tendon armature adds sum_t a_t J_t^T Jdot_t qd (MuJoCo qfrc_bias; tendon_armature.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.jacobian import dof_plan
from myotwin.engine.kinematics import Kinematics, kinematics, subtree_sum
from myotwin.engine.mass import body_com_offset, body_inertia_world
from myotwin.engine.model import Model
from myotwin.engine.rows import take
from myotwin.engine.spatial import apply_inertia, cross_force, dot_last
from myotwin.engine.twists import BodyMotion, body_motion_from_kinematics


def bias_forces_from_kinematics(model: Model, kin: Kinematics, qd: jax.Array,
                                bodies: BodyMotion | None = None) -> jax.Array:
    """(n_v,) bias forces for an already computed position stage and velocity qd (n_v,)
    (`bodies`: its velocity stage, if the caller has it)."""
    dtype = kin.body_pos_world.dtype
    if bodies is None:
        bodies = body_motion_from_kinematics(model, kin, qd)
    s, v_body, a_bias = bodies  # S_d, J_mr qd, Jdot_mr qd
    a0 = jnp.concatenate([jnp.zeros(3, dtype), -model.gravity])
    a_body = a0[None, :] + a_bias
    inertia = body_inertia_world(model, kin)
    com = body_com_offset(model, kin)
    force = apply_inertia(model.body_mass, com, inertia, a_body) + cross_force(
        v_body, apply_inertia(model.body_mass, com, inertia, v_body)
    )
    # c_d = S_d . (sum of f_b over the subtree of d's body): J^T f without forming J
    subtree_force = take(subtree_sum(model, force), dof_plan(model).body)
    bias = dot_last(s, subtree_force)
    if model.tendon_armature is not None:  # a_t J_t^T Jdot_t qd (tendon_armature.py)
        from myotwin.engine.tendon_armature import tendon_armature_bias

        bias = bias + tendon_armature_bias(model, kin, bodies)
    return bias


def bias_forces(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_v,) bias forces (MuJoCo qfrc_bias) at configuration q (n_q,) and velocity qd (n_v,)."""
    return bias_forces_from_kinematics(model, kinematics(model, q), qd)
