"""Joint-space mass matrix M(q) (n_v, n_v), MuJoCo's qM (mj_crb) including armature.

M = sum_b J_b^T I_b J_b + diag(armature): the seed's Eq. 7 (M_r = J_mr^T M_m J_mr) with
world-axis spatial Jacobians J_b (jacobian.body_motion_jacobians) and each body's spatial
inertia I_b about its tree's reference point. Deviation from MuJoCo: it assembles the same
sum by the composite-rigid-body recursion; the two agree to float64 roundoff.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.jacobian import body_motion_jacobians, body_reference_point
from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.model import Model
from myotwin.engine.spatial import apply_inertia


def body_inertia_world(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 3, 3) rotational inertia about each body's COM, in world axes."""
    r = kin.body_inertia_rot_world
    return jnp.einsum("bij,bj,bkj->bik", r, model.body_inertia, r)


def body_com_offset(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 3) each body's COM relative to its tree's reference point."""
    return kin.body_com_world - body_reference_point(model, kin)


def mass_matrix_from_kinematics(model: Model, kin: Kinematics) -> jax.Array:
    """(n_v, n_v) mass matrix for an already computed position stage."""
    jac = body_motion_jacobians(model, kin)  # (n_body, 6, n_v)
    inertia = body_inertia_world(model, kin)
    com = body_com_offset(model, kin)
    cols = jac.swapaxes(1, 2)  # (n_body, n_v, 6): motion of body b per unit velocity of dof d
    momentum = apply_inertia(model.body_mass[:, None], com[:, None, :], inertia[:, None], cols)
    m = jnp.einsum("bdk,bek->de", cols, momentum)  # sum_b J_b^T I_b J_b
    return m + jnp.diag(model.dof_armature)


def mass_matrix(model: Model, q: jax.Array) -> jax.Array:
    """(n_v, n_v) joint-space mass matrix at configuration q (n_q,), armature included."""
    return mass_matrix_from_kinematics(model, kinematics(model, q))
