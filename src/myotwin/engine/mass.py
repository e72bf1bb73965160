"""Joint-space mass matrix M(q) (n_v, n_v), MuJoCo's qM (mj_crb) including armature.

M = sum_b J_b^T I_b J_b + diag(armature): the seed's Eq. 7 (M_r = J_mr^T M_m J_mr) with
world-axis spatial Jacobians J_b (jacobian.body_motion_jacobians) and each body's spatial
inertia I_b about its tree's reference point. It is assembled by the composite-rigid-body
algorithm (Featherstone 2008 §6.2; MuJoCo's mj_crb), vectorised: with I^c_b = sum of I_c over
b's subtree (one masked sum over a static subtree table, all bodies at once),
  M[d, e] = S_d . (I^c_{body(d)} S_e)   when dof e moves body(d) and e <= d,
and M[e, d] = M[d, e]; other entries are 0. Since every spatial quantity is in world axes about
the tree's reference point, no frame transforms are needed between bodies.
Tendon armature adds sum_t a_t J_t^T J_t (MuJoCo qM; tendon_armature.py).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import body_reference_point, dof_motion, dof_plan
from myotwin.engine.kinematics import Kinematics, kinematics, subtree_sum
from myotwin.engine.model import Model
from myotwin.engine.rows import take
from myotwin.engine.spatial import cross, dot_last, mat_vec


def body_inertia_world(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 3, 3) rotational inertia about each body's COM, in world axes (R diag(I) R^T)."""
    r = kin.body_inertia_rot_world
    return dot_last(r[:, :, None, :] * model.body_inertia[:, None, None, :], r[:, None, :, :])


def body_com_offset(model: Model, kin: Kinematics) -> jax.Array:
    """(n_body, 3) each body's COM relative to its tree's reference point."""
    return kin.body_com_world - body_reference_point(model, kin)


def composite_inertia(model: Model, kin: Kinematics) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Spatial inertia of each body's subtree about its tree's reference point, world axes:
    (mass (n_body,), first moment sum m c (n_body, 3), rotational inertia about the reference
    point (n_body, 3, 3)) -- MuJoCo's crb, as its three distinct blocks."""
    mass = model.body_mass
    com = body_com_offset(model, kin)
    eye = jnp.eye(3, dtype=com.dtype)
    # parallel-axis theorem: I_ref = I_com + m (|c|^2 1 - c c^T)
    shift = dot_last(com, com)[:, None, None] * eye - com[:, :, None] * com[:, None, :]
    inertia = body_inertia_world(model, kin) + mass[:, None, None] * shift
    return (subtree_sum(model, mass), subtree_sum(model, mass[:, None] * com),
            subtree_sum(model, inertia))


@functools.lru_cache(maxsize=256)
def _lower_mask(body_parent, dof_body) -> np.ndarray:
    """(n_v, n_v) bool: [d, e] True when e <= d and dof e moves the body of dof d."""
    n_body, n_v = len(body_parent), len(dof_body)
    moves = np.zeros((n_body, n_v), dtype=bool)
    for b in range(1, n_body):
        moves[b] = moves[body_parent[b]]
        moves[b, [d for d in range(n_v) if dof_body[d] == b]] = True
    body = np.asarray(dof_body, dtype=int).reshape(-1)
    return np.tril(moves[body]) if n_v else np.zeros((0, 0), dtype=bool)


def mass_matrix_from_kinematics(model: Model, kin: Kinematics) -> jax.Array:
    """(n_v, n_v) mass matrix for an already computed position stage."""
    s = dof_motion(model, kin)  # (n_v, 6)
    mass, moment, inertia = composite_inertia(model, kin)
    body = dof_plan(model).body
    w, v = s[:, :3], s[:, 3:]
    mass, moment, inertia = take(mass, body), take(moment, body), take(inertia, body)
    lin = mass[:, None] * v + cross(w, moment)
    ang = mat_vec(inertia, w) + cross(moment, v)
    force = jnp.concatenate([ang, lin], axis=-1)  # I^c_{body(d)} S_d
    p = dot_last(force[:, None, :], s[None, :, :])  # [d, e] = S_e . I^c_{body(d)} S_d
    lower = _lower_mask(model.body_parent, model.dof_body)
    m = jnp.where(lower, p, jnp.where(lower.T, p.T, 0.0))
    m = m + jnp.eye(model.n_v, dtype=m.dtype) * model.dof_armature
    if model.tendon_armature is not None:  # a_t J_t^T J_t (tendon_armature.py)
        from myotwin.engine.tendon_armature import tendon_armature_mass

        m = m + tendon_armature_mass(model, kin)
    return m


def mass_matrix(model: Model, q: jax.Array) -> jax.Array:
    """(n_v, n_v) joint-space mass matrix at configuration q (n_q,), armature included."""
    return mass_matrix_from_kinematics(model, kinematics(model, q))
