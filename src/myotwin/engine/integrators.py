"""Fixed-step integrators on the configuration manifold, in MuJoCo's conventions.

State (q (n_q,), qd (n_v,)); qdd = f(q, qd, ctrl) is `forward_dynamics`. Positions are
advanced with `integrate_pos` (MuJoCo mj_integratePos): hinge/slide and free translation
q += dt v; ball and free rotation q <- normalise(q) * exp(dt w / 2) with w the body-frame
angular velocity (mju_quatIntegrate).

  explicit Euler:       q' = q (+) dt qd,          qd' = qd + dt f(q, qd)          order 1
  semi-implicit Euler:  qd' = qd + dt f(q, qd),    q' = q (+) dt qd'               order 1
                        (MuJoCo's "Euler" with `eulerdamp` disabled: MuJoCo by default
                        treats dof damping implicitly in that step, we do not)
  RK4:                  classic Butcher tableau with every stage position formed from the
                        step's start, q_i = q (+) h sum_j a_ij qd_j (MuJoCo mj_RungeKutta)
                                                                                  order 4
  BDF1, SDIRK2:         implicit, Newton on velocity unknowns (implicit.py)    order 1, 2
"""

from __future__ import annotations

import enum

import jax
import jax.numpy as jnp

from myotwin.engine.dynamics import forward_dynamics
from myotwin.engine.model import JointType, Model
from myotwin.engine.spatial import quat_integrate


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
    """One classic RK4 step on the manifold (MuJoCo mj_RungeKutta with N = 4)."""
    vels, accs = [qd], [forward_dynamics(model, q, qd, ctrl)]
    for row in _RK4_A:
        dq = sum(a * v for a, v in zip(row, vels))
        dv = sum(a * acc for a, acc in zip(row, accs))
        q_i, qd_i = integrate_pos(model, q, dq, dt), qd + dt * dv
        vels.append(qd_i)
        accs.append(forward_dynamics(model, q_i, qd_i, ctrl))
    dq = sum(b * v for b, v in zip(_RK4_B, vels))
    dv = sum(b * acc for b, acc in zip(_RK4_B, accs))
    return integrate_pos(model, q, dq, dt), qd + dt * dv


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
