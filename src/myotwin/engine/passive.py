"""Passive forces (n_v,): joint springs and viscous damping, MuJoCo's qfrc_passive
(mj_passive -> mj_springdamper; qfrc_spring + qfrc_damper) for the supported subset.

Per joint with stiffness k and spring configuration q_s (MuJoCo qpos_spring: `springref` for
hinge/slide, the body's initial pose for ball/free) the spring displacement dq is
  hinge/slide:       dq = q - q_s                                 (1 dof)
  ball:              dq = log(conj(q_s) * q)                       (3 dofs)
  free:              dq = (p - p_s, log(conj(quat_s) * quat))      (6 dofs)
with log the rotation vector theta u of a quaternion (MuJoCo mju_subQuat -> mju_quat2Vel:
u = v/|v|, theta = 2 atan2(|v|, w) wrapped into (-pi, pi]), so that q = q_s * exp(dq) and dq
is in the frame of q_s, the frame of the ball's body-frame velocity dofs at the rest pose. Force
-k dq, energy 0.5 k |dq|^2 (MuJoCo energy[0]; mj_energyPos). The rotational force is the
negative gradient of that energy along the body-frame angular velocity (the right Jacobian of
SO(3) keeps dq as an eigenvector with eigenvalue 1), so the spring is conservative.
Damping on every dof: -b qd.

Tendon springs and dampers (with a dead band) are `tendons.py`'s, added here.
Nonlinear (poly) springs and dampers, elasto-plastic springs (`springyield`), fluid forces
and gravity compensation are listed in `Model.dynamics_unsupported` and rejected by
`require_dynamics_support`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import _BODY_AXIS, dof_plan
from myotwin.engine.model import JointType, Model
from myotwin.engine.rows import take, take_pairs
from myotwin.engine.spatial import dot_last, quat_mul
from myotwin.engine.tendons import tendon_passive_forces, tendon_spring_energy


def quat_log(quat: jax.Array) -> jax.Array:
    """(..., 3) rotation vector theta u of (..., 4) quaternions, w-first, theta wrapped into
    (-pi, pi] (MuJoCo mju_quat2Vel with dt = 1; invariant to the quaternion's scale).

    Written as v * f(|v|, w) with f = sign(w) 2 atan2(|v|, |w|) / |v| (sign(0) = +1, as MuJoCo's
    wrap gives theta = pi at w = 0), which is 2 atan2(|v|, w) / |v| minus the 2 pi wrap, and
    with the series 2 / w (1 - x^2/3), x = |v|/w, near the identity so that values and
    gradients stay finite there."""
    w, v = quat[..., 0], quat[..., 1:]
    s2 = dot_last(v, v)
    aw = jnp.abs(w)
    # near |v| = 0 (|v| < 1e-4 |w|): atan(x)/x = 1 - x^2/3 + O(x^4), relative error < 1e-16
    small = s2 < 1e-8 * w * w
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    aw_safe = jnp.where(small, jnp.where(aw > 0, aw, 1.0), aw)
    series = 2.0 / aw_safe * (1.0 - s2 / (3.0 * aw_safe * aw_safe))
    factor = jnp.where(small, series, 2.0 * jnp.arctan2(s, aw) / s)
    return jnp.where(w < 0, -factor, factor)[..., None] * v


def spring_displacements(model: Model, q: jax.Array) -> jax.Array:
    """(n_v,) spring displacement dq of every dof (module docstring): q - q_spring on hinge,
    slide and free-translation dofs, log(conj(q_spring) q) on ball and free-rotation dofs."""
    plan = dof_plan(model)
    qadr = np.asarray(model.joint_qpos_adr, dtype=int).reshape(-1)[plan.joint]  # (n_v,)
    rot = plan.kind == _BODY_AXIS
    free = np.asarray(model.joint_type, dtype=int).reshape(-1)[plan.joint] == JointType.FREE
    # scalar coordinate of each dof: hinge/slide qpos, free translation qpos + k
    lin_adr = np.where(rot, 0, qadr + np.where(free, plan.col, 0))
    dif = take(q, lin_adr) - model.qpos_spring[lin_adr]
    if not rot.any():
        return dif
    # one log per ball / free joint (not per dof: each of a joint's three rotational dofs
    # would evaluate it again), then each rotational dof's component of its joint's log
    rot_joints = np.unique(plan.joint[rot])
    quat_adr = (np.asarray(model.joint_qpos_adr, dtype=int).reshape(-1)[rot_joints]
                + np.where(np.asarray(model.joint_type, dtype=int).reshape(-1)[rot_joints]
                           == JointType.FREE, 3, 0))[:, None] + np.arange(4)
    conj_rest = model.qpos_spring[quat_adr] * jnp.array([1, -1, -1, -1], dtype=q.dtype)
    log = quat_log(quat_mul(conj_rest, take(q, quat_adr)))  # (n_rot_joints, 3)
    row = np.searchsorted(rot_joints, plan.joint)  # each dof's rotational joint (if any)
    rot_dif = take_pairs(log, np.where(rot, row, 0), np.where(rot, plan.col, 0))
    return jnp.where(rot, rot_dif, dif)


def spring_forces(model: Model, q: jax.Array) -> jax.Array:
    """(n_v,) joint spring forces -k dq (MuJoCo qfrc_spring) at configuration q (n_q,)."""
    if model.n_v == 0:
        return jnp.zeros(0, dtype=q.dtype)
    return -model.joint_stiffness[dof_plan(model).joint] * spring_displacements(model, q)


def damper_forces(model: Model, qd: jax.Array) -> jax.Array:
    """(n_v,) viscous damping forces -b qd (MuJoCo qfrc_damper)."""
    return -model.dof_damping * qd


def passive_forces(model: Model, q: jax.Array, qd: jax.Array, stages=None) -> jax.Array:
    """(n_v,) passive forces (MuJoCo qfrc_passive) at configuration q (n_q,), velocity qd
    (n_v,): joint springs and dampers, and tendon springs and dampers (`tendons.py`; stages:
    the evaluation's `engine.stages.Stages`, or None)."""
    out = spring_forces(model, q) + damper_forces(model, qd)
    return out if model.tendons is None else out + tendon_passive_forces(model, q, qd, stages)


def spring_energy(model: Model, q: jax.Array) -> jax.Array:
    """Scalar potential energy of the springs (MuJoCo's spring part of energy[0]): sum over
    joints of 0.5 k |dq|^2, plus the tendon springs' (`tendons.tendon_spring_energy`)."""
    if model.n_v == 0:
        return jnp.zeros((), dtype=q.dtype)
    dif = spring_displacements(model, q)
    out = 0.5 * jnp.sum(model.joint_stiffness[dof_plan(model).joint] * dif * dif)
    return out if model.tendons is None else out + tendon_spring_energy(model, q)
