"""Fixed-step integrators on the configuration manifold, in MuJoCo's conventions.

State (q (n_q,), qd (n_v,)); qdd = f(q, qd, ctrl) is `forward_dynamics`. Positions are
advanced with `integrate_pos` (MuJoCo mj_integratePos): hinge/slide and free translation
q += dt v; ball and free rotation q <- normalise(q) * exp(dt w / 2) with w the body-frame
angular velocity (mju_quatIntegrate).

  explicit Euler:       q' = q (+) dt qd,          qd' = qd + dt f(q, qd)          order 1
  semi-implicit Euler:  qd' = qd + dt f(q, qd),    q' = q (+) dt qd'               order 1
                        (MuJoCo's "Euler" with `eulerdamp` disabled: MuJoCo by default
                        treats dof damping implicitly in that step, we do not)
  RK4:                  classic Butcher tableau on the state (q, qd) with the qpos
                        derivative qdot(q, qd) (quaternions: 0.5 q * (0, w)), stages
                        q_i = q + h sum_j a_ij qdot_j with unit quaternions, final
                        q' = q + h sum_j b_j qdot_j, quaternions normalised. This is what
                        MuJoCo 4.0.0's RK4 computes (see `rk4_step`).           order 4
  BDF1, SDIRK2:         implicit, Newton on velocity unknowns (implicit.py)    order 1, 2
"""

from __future__ import annotations

import enum

import jax
import jax.numpy as jnp

from myotwin.engine.dynamics import forward_dynamics
from myotwin.engine.model import JointType, Model
from myotwin.engine.spatial import quat_integrate, quat_mul


class Integrator(enum.Enum):
    """Fixed-step integrators; values are the names accepted by `simulate`."""

    EXPLICIT_EULER = "explicit_euler"
    SEMI_IMPLICIT_EULER = "semi_implicit_euler"
    RK4 = "rk4"
    BDF1 = "bdf1"
    SDIRK2 = "sdirk2"


def integrate_pos(model: Model, q: jax.Array, v: jax.Array, dt) -> jax.Array:
    """(n_q,) configuration q (n_q,) moved by velocity v (n_v,) for time dt (mj_integratePos)."""
    parts = []
    for j, jtype in enumerate(model.joint_type):
        qa, va = model.joint_qpos_adr[j], model.joint_dof_adr[j]
        if jtype == JointType.FREE:
            parts.append(q[qa : qa + 3] + dt * v[va : va + 3])
            parts.append(quat_integrate(q[qa + 3 : qa + 7], v[va + 3 : va + 6], dt))
        elif jtype == JointType.BALL:
            parts.append(quat_integrate(q[qa : qa + 4], v[va : va + 3], dt))
        else:
            parts.append(q[qa : qa + 1] + dt * v[va : va + 1])
    if not parts:
        return q
    return jnp.concatenate(parts)


def qpos_derivative(model: Model, q: jax.Array, v: jax.Array) -> jax.Array:
    """(n_q,) time derivative of q (n_q,) at velocity v (n_v,): v for hinge/slide and free
    translation, 0.5 q * (0, w) for ball/free quaternions (w body-frame)."""
    parts = []
    for j, jtype in enumerate(model.joint_type):
        qa, va = model.joint_qpos_adr[j], model.joint_dof_adr[j]
        if jtype in (JointType.FREE, JointType.BALL):
            if jtype == JointType.FREE:
                parts.append(v[va : va + 3])
                qa, va = qa + 3, va + 3
            w = jnp.concatenate([jnp.zeros(1, dtype=v.dtype), v[va : va + 3]])
            parts.append(0.5 * quat_mul(q[qa : qa + 4], w))
        else:
            parts.append(v[va : va + 1])
    if not parts:
        return jnp.zeros_like(q)
    return jnp.concatenate(parts)


def normalize_quaternions(model: Model, q: jax.Array) -> jax.Array:
    """(n_q,) q with every ball/free quaternion scaled to unit norm."""
    for j, jtype in enumerate(model.joint_type):
        if jtype in (JointType.FREE, JointType.BALL):
            qa = model.joint_qpos_adr[j] + (3 if jtype == JointType.FREE else 0)
            quat = q[qa : qa + 4]
            q = q.at[qa : qa + 4].set(quat / jnp.linalg.norm(quat))
    return q


def explicit_euler_step(model: Model, q, qd, ctrl, dt):
    """One forward-Euler step; returns (q', qd')."""
    qdd = forward_dynamics(model, q, qd, ctrl)
    return integrate_pos(model, q, qd, dt), qd + dt * qdd


def semi_implicit_euler_step(model: Model, q, qd, ctrl, dt):
    """One symplectic-Euler step (velocity first, then position with the new velocity)."""
    qd_new = qd + dt * forward_dynamics(model, q, qd, ctrl)
    return integrate_pos(model, q, qd_new, dt), qd_new


_RK4_A = ((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0))
_RK4_B = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


def rk4_step(model: Model, q, qd, ctrl, dt):
    """One classic RK4 step, as MuJoCo 4.0.0's `integrator="RK4"` computes it.

    The tableau acts on (q, qd) in qpos coordinates, with `qpos_derivative` for q (the
    quaternion rate 0.5 q * (0, w)); the start, stage and final quaternions are normalised
    (MuJoCo normalises qpos quaternions in place). Hinge/slide-only models are identical to
    the manifold form q (+) h sum b_j qd_j of mj_RungeKutta's source; for ball/free joints
    MuJoCo 4.0.0 agrees with this form to ~1e-15 per step, not with the manifold form (1e-9
    per step at |w| = 6 rad/s; measured by stepping both against `mj_step`, docs/engine.md).
    """
    q = normalize_quaternions(model, q)
    qdots, accs = [qpos_derivative(model, q, qd)], [forward_dynamics(model, q, qd, ctrl)]
    for row in _RK4_A:
        dq = sum(a * k for a, k in zip(row, qdots))
        dv = sum(a * acc for a, acc in zip(row, accs))
        q_i, qd_i = normalize_quaternions(model, q + dt * dq), qd + dt * dv
        qdots.append(qpos_derivative(model, q_i, qd_i))
        accs.append(forward_dynamics(model, q_i, qd_i, ctrl))
    dq = sum(b * k for b, k in zip(_RK4_B, qdots))
    dv = sum(b * acc for b, acc in zip(_RK4_B, accs))
    return normalize_quaternions(model, q + dt * dq), qd + dt * dv


# implicit.py needs integrate_pos (defined above); the package __init__ imports this module
# before implicit.py, so this late import is never circular.
from myotwin.engine.implicit import bdf1_step, sdirk2_step  # noqa: E402

STEPS = {
    Integrator.EXPLICIT_EULER: explicit_euler_step,
    Integrator.SEMI_IMPLICIT_EULER: semi_implicit_euler_step,
    Integrator.RK4: rk4_step,
    Integrator.BDF1: bdf1_step,
    Integrator.SDIRK2: sdirk2_step,
}

#: Global order of accuracy of each integrator (tested by regression on log error vs log dt).
ORDER = {Integrator.EXPLICIT_EULER: 1, Integrator.SEMI_IMPLICIT_EULER: 1, Integrator.RK4: 4,
         Integrator.BDF1: 1, Integrator.SDIRK2: 2}
