"""Dynamics of a model whose engine dofs follow fewer coordinates (`coupling`): forward
dynamics, inverse dynamics and the mass matrix of the coordinates.

With q_f = f(q), qd_f = J qd and qdd_f = J qdd + Jdot qd (coupling.py), the engine's inverse
dynamics is affine in qdd_f: tau_f(a) = M_f a + c_f - passive - contact - applied (no joint
limits: their soft-constraint force depends on qdd_f too). Projecting by J^T (coupling.py)
and solving for qdd:

    (J^T M_f J) qdd = qfrc - J^T tau_f(q_f, qd_f, Jdot qd; actuators and applied forces in),

where qfrc (n_reduced,) is a generalized force given on the coordinates themselves (the
muscles' r F, with r the moment arms w.r.t. the coordinates). J^T M_f J is symmetric
positive definite when J has full column rank (every coordinate moves some dof), and is
factored by the engine's Cholesky. Inverse dynamics is the same projection at a given qdd:
tau = J^T tau_f(q_f, qd_f, J qdd + Jdot qd) (`coupled_inverse_dynamics`, used by `myotwin osim
inverse-dynamics`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine import cholesky
from myotwin.engine.actuation import actuator_forces
from myotwin.engine.coupling import (CoordinateCoupling, full_jacobian, full_motion,
                                     full_positions, reduce_forces)
from myotwin.engine.dynamics import inverse_dynamics
from myotwin.engine.mass import mass_matrix
from myotwin.engine.model import Model


def check_coupled_forward(model: Model) -> None:
    """Raise ValueError for what `coupled_forward_dynamics` cannot include."""
    limited = [j for j, flag in enumerate(model.joint_limited) if flag]
    if limited:
        raise ValueError(f"coupled forward dynamics needs unlimited joints (a soft limit's "
                         f"force depends on the acceleration); joints {limited} are limited")
    if getattr(model, "muscle_mass", None) is not None:
        raise ValueError("coupled forward dynamics does not include muscle mass points")
    tendons = getattr(model, "tendons", None)
    # constraint rows whose force depends on the acceleration (as the limits' above)
    for present, what in ((getattr(model, "friction", None) is not None,
                           "dry friction (frictionloss)"),
                          (getattr(model, "equality", None) is not None, "equality constraints"),
                          (tendons is not None and any(tendons.limited), "tendon limits")):
        if present:
            raise ValueError(f"coupled forward dynamics does not include {what} (a soft "
                             "constraint's force depends on the acceleration); the model has "
                             "some")


def coupled_forward_dynamics(model: Model, c: CoordinateCoupling, q: jax.Array,
                             qd: jax.Array, ctrl: jax.Array, *,
                             qfrc: jax.Array | None = None,
                             xfrc_applied: jax.Array | None = None) -> jax.Array:
    """(n_reduced,) qdd of the coordinates at (q, qd) (n_reduced,): the skeleton's actuators
    driven by ctrl (n_u,), gravity, passive and contact forces, the body wrenches
    xfrc_applied (n_body, 6) and the generalized force qfrc (n_reduced,) on the coordinates
    (module docstring)."""
    check_coupled_forward(model)
    motion = full_motion(c, q, qd, jnp.zeros_like(qd))   # qdd_f = Jdot qd at qdd = 0
    tau0 = inverse_dynamics(model, motion.q, motion.qd, motion.qdd,
                            qfrc_applied=actuator_forces(model, motion.q, motion.qd, ctrl),
                            xfrc_applied=xfrc_applied)
    jac = full_jacobian(c, q)
    mass = jac.T @ mass_matrix(model, motion.q) @ jac
    rhs = -reduce_forces(c, q, tau0)
    if qfrc is not None:
        rhs = rhs + qfrc
    return cholesky.solve(cholesky.factor(mass), rhs)


def coupled_inverse_dynamics(model: Model, c: CoordinateCoupling, q: jax.Array, qd: jax.Array,
                             qdd: jax.Array, *, qfrc_applied: jax.Array | None = None,
                             xfrc_applied: jax.Array | None = None) -> jax.Array:
    """(n_reduced,) generalized force producing qdd at (q, qd) (n_reduced,): J^T times the
    engine's `inverse_dynamics` of the full motion; qfrc_applied (n_full,) on the engine dofs
    and xfrc_applied (n_body, 6) as there."""
    motion = full_motion(c, q, qd, qdd)
    tau_full = inverse_dynamics(model, motion.q, motion.qd, motion.qdd,
                                qfrc_applied=qfrc_applied, xfrc_applied=xfrc_applied)
    return reduce_forces(c, q, tau_full)


def coupled_mass_matrix(model: Model, c: CoordinateCoupling, q: jax.Array) -> jax.Array:
    """(n_reduced, n_reduced) J^T M_f(q_f) J."""
    jac = full_jacobian(c, q)
    return jac.T @ mass_matrix(model, full_positions(c, q)) @ jac
