"""Actuator forces (n_v,): MuJoCo's qfrc_actuator (mj_transmission, mj_fwdActuation) for
actuators with a joint transmission on a hinge/slide or a tendon transmission on a spatial
or fixed tendon, no activation dynamics, fixed gain and none/affine bias -- MJCF `<motor>`
(gain 1), `<position>` (gain kp, bias (0, -kp, -kv)), `<velocity>` and equivalent
`<general>`.

Transmission (mj_transmission), gear g (gear[0]; the other five entries are not used by these
transmissions), actuator length l and moment row m (n_v,):
  joint on dof d:        l = g q_d (absolute, not relative to qpos0, as MuJoCo),  m = g e_d;
  spatial tendon t:      l = g L_t(q),  m = g J_L,t(q),  with L_t the path length (MuJoCo
                         ten_length) and J_L,t = dL_t/dqd (ten_J = -r^T, r the moment arms) of
                         the model's paths (myotwin.paths: path_geometry,
                         length_jacobian_from_geometry);
  fixed tendon t:        l = g sum_i c_i q_(j_i) (absolute qpos), m = g c on their dofs;
then velocity = m . qd and
  u = clamp(ctrl, ctrlrange)                         if ctrllimited,
  force = gain u + b0 + b1 l + b2 velocity,          clamped to forcerange if forcelimited,
  qfrc_actuator = sum_a m_a force_a,  then clamped per joint to actuatorfrcrange if limited
(MuJoCo's compiler clears actuatorfrcrange on ball/free joints). A tendon motor with gear -1
and ctrl = F >= 0 thus pulls the tendon with tension F: qfrc = -J_L^T F = r F.
Tendon-level actuatorfrcrange, site/body/slider-crank transmissions and MuJoCo muscles
(dyntype/gaintype/biastype muscle) are listed in `Model.dynamics_unsupported`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import dof_plan
from myotwin.engine.model import Model, require_dynamics_support
from myotwin.engine.rows import masked_sum, take
from myotwin.engine.tendons import spatial_tendon_rows


def _clamp(x: jax.Array, limited: tuple[bool, ...], lohi: jax.Array) -> jax.Array:
    if not any(limited):
        return x
    mask = jnp.asarray(np.array(limited, dtype=bool))
    return jnp.where(mask, jnp.clip(x, lohi[:, 0], lohi[:, 1]), x)


def _spatial_actuators(model: Model) -> np.ndarray:
    """(n_u,) bool: the actuators with a spatial-tendon transmission."""
    return np.asarray(model.actuator_tendon, dtype=int).reshape(-1) >= 0


def _fixed_actuators(model: Model) -> np.ndarray:
    """(n_u,) bool: the actuators with a fixed-tendon transmission."""
    return np.asarray(model.actuator_fixed_tendon, dtype=int).reshape(-1) >= 0


def _tendon_rows(model: Model, q: jax.Array, stages=None) -> tuple[jax.Array, jax.Array]:
    """(ten_length (n_u,), ten_J (n_u, n_v)) of each actuator's spatial tendon (rows of
    actuators without one are those of path 0 and must be masked by the caller)."""
    return spatial_tendon_rows(model, q, model.actuator_tendon, "tendon-transmission actuators",
                               stages)


def _transmission(model: Model, q: jax.Array, stages=None):
    """(length (n_u,), tendon moment rows (n_u, n_v) or None): actuator lengths l (module
    docstring) and, if the model has tendon actuators, g J_L of each (zero rows elsewhere)."""
    gear = model.actuator_gear
    dof = np.array(model.actuator_dof, dtype=int)
    qadr = np.asarray(model.joint_qpos_adr, dtype=int)[dof_plan(model).joint[dof]]
    length = jnp.where(dof >= 0, gear * take(q, qadr), 0.0)  # joint rows; others below
    spatial, fixed = _spatial_actuators(model), _fixed_actuators(model)
    moment = None
    if spatial.any():
        ten_length, ten_jac = _tendon_rows(model, q, stages)
        length = jnp.where(spatial, gear * ten_length, length)
        moment = jnp.where(spatial[:, None], gear[:, None] * ten_jac, 0.0)
    if fixed.any():  # L = c . q on the joints' qpos, J = c on their dofs (zero rows elsewhere)
        length = jnp.where(fixed, gear * jnp.sum(model.actuator_fixed_coef_q * q, axis=1),
                           length)
        rows = gear[:, None] * model.actuator_fixed_coef_v
        moment = rows if moment is None else moment + rows
    return length, moment


def actuator_length(model: Model, q: jax.Array) -> jax.Array:
    """(n_u,) actuator lengths (MuJoCo actuator_length) at configuration q (n_q,): g q_d for a
    joint transmission, g L_t(q) for a spatial or fixed tendon (m or rad times the gear)."""
    if model.n_u == 0:
        return jnp.zeros(0, dtype=q.dtype)
    return _transmission(model, q)[0]


def actuator_moment(model: Model, q: jax.Array) -> jax.Array:
    """(n_u, n_v) actuator moment arms, dense (MuJoCo actuator_moment): d length / d qd, i.e.
    g e_d for a joint transmission on dof d and g J_L,t(q) for a spatial or fixed tendon t."""
    if model.n_u == 0:
        return jnp.zeros((0, model.n_v), dtype=q.dtype)
    dof = np.array(model.actuator_dof, dtype=int)
    joint_rows = (dof[:, None] == np.arange(model.n_v)[None, :]) * model.actuator_gear[:, None]
    tendon_rows = _transmission(model, q)[1]
    return joint_rows if tendon_rows is None else joint_rows + tendon_rows


def actuator_force(model: Model, q: jax.Array, qd: jax.Array, ctrl: jax.Array) -> jax.Array:
    """(n_u,) scalar actuator forces (MuJoCo actuator_force) for controls ctrl (n_u,)."""
    require_dynamics_support(model)
    if model.n_u == 0:
        return jnp.zeros(0, dtype=q.dtype)
    return _actuator_force(model, q, qd, ctrl, *_transmission(model, q))


def _actuator_force(model: Model, q, qd, ctrl, length, tendon_moment) -> jax.Array:
    dof = np.array(model.actuator_dof, dtype=int)
    # rows of non-joint actuators (dof -1) read dof 0 and are replaced below
    velocity = model.actuator_gear * (take(qd, np.maximum(dof, 0)) if model.n_v else 0.0)
    if tendon_moment is not None:  # g J_L qd on tendon rows (zero rows elsewhere)
        velocity = jnp.where(_spatial_actuators(model) | _fixed_actuators(model),
                             jnp.sum(tendon_moment * qd, axis=1),
                             velocity)
    u = _clamp(ctrl, model.actuator_ctrl_limited, model.actuator_ctrl_range)
    b = model.actuator_bias
    force = model.actuator_gain * u + b[:, 0] + b[:, 1] * length + b[:, 2] * velocity
    return _clamp(force, model.actuator_force_limited, model.actuator_force_range)


def actuator_forces(model: Model, q: jax.Array, qd: jax.Array, ctrl: jax.Array,
                    stages=None) -> jax.Array:
    """(n_v,) generalized actuator forces (MuJoCo qfrc_actuator) for controls ctrl (n_u,)
    (stages: the evaluation's `engine.stages.Stages`, or None)."""
    require_dynamics_support(model)
    if model.n_u == 0:
        return jnp.zeros(model.n_v, dtype=q.dtype)
    length, tendon_moment = _transmission(model, q, stages)
    force = _actuator_force(model, q, qd, ctrl, length, tendon_moment)
    # sum over the joint actuators of each dof, as a masked sum with a static (n_v, n_u) table
    drives = np.arange(model.n_v)[:, None] == np.array(model.actuator_dof, dtype=int)[None, :]
    out = masked_sum(drives, model.actuator_gear * force)
    if tendon_moment is not None:  # + sum over tendon actuators of g J_L^T force
        out = out + jnp.sum(force[:, None] * tendon_moment, axis=0)
    if any(model.joint_actfrc_limited):
        # Only hinge/slide joints can be limited (MuJoCo's compiler clears actfrclimited on
        # ball/free joints), so each limited joint clamps its single dof.
        joint = dof_plan(model).joint
        limited = np.asarray(model.joint_actfrc_limited, dtype=bool)[joint]
        lohi = model.joint_actfrc_range[joint]
        out = jnp.where(limited, jnp.clip(out, lohi[:, 0], lohi[:, 1]), out)
    return out
