"""Passive forces (n_v,): joint springs and viscous damping, MuJoCo's qfrc_passive
(mj_passive -> mj_springdamper) for the supported subset.

  hinge/slide spring: -k (q - q_spring);    damping on every dof: -b qd.

Ball/free springs, nonlinear (poly) springs and dampers, tendon springs, fluid forces and
gravity compensation are listed in `Model.dynamics_unsupported` and rejected by
`require_dynamics_support`. Also the spring's potential energy, for energy checks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import dof_plan
from myotwin.engine.model import JointType, Model


def _scalar_joints(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids, qpos addresses and dof addresses of the hinge and slide joints."""
    ids = [j for j, t in enumerate(model.joint_type) if t in (JointType.HINGE, JointType.SLIDE)]
    qadr = [model.joint_qpos_adr[j] for j in ids]
    dadr = [model.joint_dof_adr[j] for j in ids]
    return np.array(ids, dtype=int), np.array(qadr, dtype=int), np.array(dadr, dtype=int)


def spring_forces(model: Model, q: jax.Array) -> jax.Array:
    """(n_v,) spring forces -k (q - q_spring) on hinge/slide dofs (MuJoCo qfrc_spring)."""
    if model.n_v == 0:
        return jnp.zeros(0, dtype=q.dtype)
    joint = dof_plan(model).joint  # (n_v,)
    scalar = np.isin(np.asarray(model.joint_type)[joint], (JointType.HINGE, JointType.SLIDE))
    qadr = np.asarray(model.joint_qpos_adr)[joint]
    force = -model.joint_stiffness[joint] * (q[qadr] - model.qpos_spring[qadr])
    return jnp.where(scalar, force, 0.0)


def damper_forces(model: Model, qd: jax.Array) -> jax.Array:
    """(n_v,) viscous damping forces -b qd (MuJoCo qfrc_damper)."""
    return -model.dof_damping * qd


def passive_forces(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_v,) passive forces (MuJoCo qfrc_passive) at configuration q (n_q,), velocity qd (n_v,)."""
    return spring_forces(model, q) + damper_forces(model, qd)


def spring_energy(model: Model, q: jax.Array) -> jax.Array:
    """Scalar potential energy of the hinge/slide springs, sum 0.5 k (q - q_spring)^2."""
    ids, qadr, _ = _scalar_joints(model)
    if ids.size == 0:
        return jnp.zeros((), dtype=q.dtype)
    dif = q[qadr] - model.qpos_spring[qadr]
    return 0.5 * jnp.sum(model.joint_stiffness[ids] * dif * dif)
