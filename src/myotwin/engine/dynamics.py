"""Forward and inverse dynamics (contact-free, limit-free) and mechanical energy.

Equations of motion (seed Wang et al. 2022 §3, Eq. 7; MuJoCo's mj_forward / mj_inverse
without constraints):
  M(q) qdd + c(q, qd) = tau_passive(q, qd) + tau_actuator(q, qd, ctrl)
forward:  qdd = M^-1 (tau_actuator + tau_passive - c)        (MuJoCo qacc), by Cholesky;
inverse:  tau = M qdd + c - tau_passive                       (MuJoCo qfrc_inverse), i.e. the
          generalized force the actuators must supply.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from myotwin.engine.actuation import actuator_forces
from myotwin.engine.bias import bias_forces_from_kinematics
from myotwin.engine.kinematics import kinematics
from myotwin.engine.mass import mass_matrix_from_kinematics
from myotwin.engine.model import Model, require_dynamics_support
from myotwin.engine.passive import passive_forces, spring_energy


def forward_dynamics(model: Model, q: jax.Array, qd: jax.Array, ctrl: jax.Array) -> jax.Array:
    """(n_v,) joint accelerations (MuJoCo qacc) for q (n_q,), qd (n_v,) and ctrl (n_u,)."""
    require_dynamics_support(model)
    kin = kinematics(model, q)
    mass = mass_matrix_from_kinematics(model, kin)
    force = (actuator_forces(model, q, qd, ctrl) + passive_forces(model, q, qd)
             - bias_forces_from_kinematics(model, kin, qd))
    return jsl.cho_solve(jsl.cho_factor(mass), force)


def inverse_dynamics(model: Model, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array:
    """(n_v,) generalized force producing qdd (n_v,) at (q, qd): M qdd + c - passive
    (MuJoCo qfrc_inverse without constraints)."""
    require_dynamics_support(model)
    kin = kinematics(model, q)
    mass = mass_matrix_from_kinematics(model, kin)
    return mass @ qdd + bias_forces_from_kinematics(model, kin, qd) - passive_forces(model, q, qd)


def kinetic_energy(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """Scalar 0.5 qd^T M(q) qd (armature included, as MuJoCo's energy[1])."""
    return 0.5 * qd @ mass_matrix_from_kinematics(model, kinematics(model, q)) @ qd


def potential_energy(model: Model, q: jax.Array) -> jax.Array:
    """Scalar gravitational (-sum m g . x_com) plus hinge/slide spring energy (MuJoCo energy[0])."""
    com = kinematics(model, q).body_com_world
    return -jnp.sum(model.body_mass * (com @ model.gravity)) + spring_energy(model, q)
