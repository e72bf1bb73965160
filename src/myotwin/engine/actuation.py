"""Actuator forces (n_v,): MuJoCo's qfrc_actuator (mj_transmission, mj_fwdActuation) for
actuators with a joint transmission on a hinge/slide, no activation dynamics, fixed gain and
none/affine bias -- MJCF `<motor>` (gain 1), `<position>` (gain kp, bias (0, -kp, -kv)),
`<velocity>` and equivalent `<general>`.

With gear g on the joint's dof d:
  length = g q_d (absolute, not relative to qpos0, as MuJoCo),  velocity = g qd_d,
  u = clamp(ctrl, ctrlrange)                         if ctrllimited,
  force = gain u + b0 + b1 length + b2 velocity,     clamped to forcerange if forcelimited,
  qfrc_actuator[d] += g force,  then clamped per joint to actuatorfrcrange if limited.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import dof_plan
from myotwin.engine.kinematics import masked_sum
from myotwin.engine.model import Model, require_dynamics_support


def _clamp(x: jax.Array, limited: tuple[bool, ...], lohi: jax.Array) -> jax.Array:
    if not any(limited):
        return x
    mask = jnp.asarray(np.array(limited, dtype=bool))
    return jnp.where(mask, jnp.clip(x, lohi[:, 0], lohi[:, 1]), x)


def actuator_force(model: Model, q: jax.Array, qd: jax.Array, ctrl: jax.Array) -> jax.Array:
    """(n_u,) scalar actuator forces (MuJoCo actuator_force) for controls ctrl (n_u,)."""
    require_dynamics_support(model)
    if model.n_u == 0:
        return jnp.zeros(0, dtype=q.dtype)
    dof = np.array(model.actuator_dof, dtype=int)
    qadr = np.asarray(model.joint_qpos_adr, dtype=int)[dof_plan(model).joint[dof]]
    gear = model.actuator_gear
    length, velocity = gear * q[qadr], gear * qd[dof]
    u = _clamp(ctrl, model.actuator_ctrl_limited, model.actuator_ctrl_range)
    b = model.actuator_bias
    force = model.actuator_gain * u + b[:, 0] + b[:, 1] * length + b[:, 2] * velocity
    return _clamp(force, model.actuator_force_limited, model.actuator_force_range)


def actuator_forces(model: Model, q: jax.Array, qd: jax.Array, ctrl: jax.Array) -> jax.Array:
    """(n_v,) generalized actuator forces (MuJoCo qfrc_actuator) for controls ctrl (n_u,)."""
    if model.n_u == 0:
        require_dynamics_support(model)
        return jnp.zeros(model.n_v, dtype=q.dtype)
    force = actuator_force(model, q, qd, ctrl)
    # sum over the actuators of each dof, as a masked sum with a static (n_v, n_u) table
    drives = np.arange(model.n_v)[:, None] == np.array(model.actuator_dof, dtype=int)[None, :]
    out = masked_sum(drives, model.actuator_gear * force)
    if any(model.joint_actfrc_limited):
        # Only hinge/slide dofs carry actuator force here (ball/free ones stay 0).
        joint = dof_plan(model).joint
        limited = np.asarray(model.joint_actfrc_limited, dtype=bool)[joint]
        lohi = model.joint_actfrc_range[joint]
        out = jnp.where(limited, jnp.clip(out, lohi[:, 0], lohi[:, 1]), out)
    return out
