"""Forward and inverse dynamics and mechanical energy.

Equations of motion (seed Wang et al. 2022 §3, Eq. 7; MuJoCo's mj_forward / mj_inverse):
  M(q) qdd + c(q, qd) = tau_passive(q, qd) + tau_actuator(q, qd, ctrl) + J^T f
forward:  a0 = M^-1 (tau_actuator + tau_passive - c) by Cholesky (MuJoCo qacc_smooth), then
          the joint-limit QP gives f and qdd = a0 + M^-1 J^T f (MuJoCo qacc; limits.py);
inverse:  tau = M qdd + c - tau_passive - J^T f(qdd)          (MuJoCo qfrc_inverse), i.e. the
          generalized force the actuators must supply, with f the soft limit force that
          MuJoCo's constraint model assigns to the given qdd.
Smooth contact (contact.py) is an ordinary generalized force tau_contact(q, qd): added to
tau_passive in forward, subtracted with it in inverse (not part of MuJoCo's qacc/qfrc_inverse,
whose contacts are constraints).
Applied forces (applied.py; MuJoCo qfrc_applied and xfrc_applied, optional keywords):
tau_applied = qfrc_applied + J^T xfrc_applied is added to the smooth force in forward, as in
MuJoCo's qfrc_smooth, and subtracted in inverse. MuJoCo's qfrc_inverse does not depend on them
(it is the total external force qfrc_actuator + qfrc_applied + J^T xfrc_applied); ours is what
remains for the actuators: qfrc_inverse(MuJoCo) = inverse_dynamics(...) + tau_applied.
The energies below do not include contact (the smoothed Hertz force has no closed-form
potential) nor the applied forces (external, not conservative in general).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine import cholesky
from myotwin.engine.actuation import actuator_forces
from myotwin.engine.applied import applied_forces_from_kinematics
from myotwin.engine.bias import bias_forces_from_kinematics
from myotwin.engine.contact import contact_forces_from_kinematics
from myotwin.engine.kinematics import kinematics
from myotwin.engine.limits import constrained_acceleration, inverse_limit_forces
from myotwin.engine.mass import mass_matrix_from_kinematics
from myotwin.engine.model import Model, require_dynamics_support
from myotwin.engine.passive import passive_forces, spring_energy
from myotwin.engine.stages import evaluation_stages
from myotwin.engine.twists import body_motion_from_kinematics


def forward_dynamics(model: Model, q: jax.Array, qd: jax.Array, ctrl: jax.Array, *,
                     qfrc_applied: jax.Array | None = None,
                     xfrc_applied: jax.Array | None = None,
                     damping_dt: float | jax.Array | None = None) -> jax.Array:
    """(n_v,) joint accelerations (MuJoCo qacc) for q (n_q,), qd (n_v,) and ctrl (n_u,).

    qfrc_applied (n_v,) and xfrc_applied (n_body, 6) (world force, then torque, at each body's
    COM) are MuJoCo's applied forces; None (default) applies nothing.
    damping_dt (s): if given, the acceleration of MuJoCo's Euler step of that size instead,
    `implicit_damping` of qacc with this evaluation's mass matrix (`integrators.euler_step`)."""
    return forward_dynamics_from_kinematics(model, kinematics(model, q), q, qd, ctrl,
                                            qfrc_applied=qfrc_applied,
                                            xfrc_applied=xfrc_applied, damping_dt=damping_dt)


def forward_dynamics_from_kinematics(model: Model, kin, q: jax.Array, qd: jax.Array,
                                     ctrl: jax.Array, *, qfrc_applied: jax.Array | None = None,
                                     xfrc_applied: jax.Array | None = None,
                                     damping_dt: float | jax.Array | None = None,
                                     path_rows=None) -> jax.Array:
    """`forward_dynamics` from the position stage kin = `kinematics(model, q)`, for a caller
    that computes it for other outputs too (the muscles' paths): one traced copy of the stage,
    so a gradient through both differentiates it once. path_rows: the MJCF paths' (lengths,
    ten_J) from kin if the caller has them too (`engine.stages`)."""
    require_dynamics_support(model)
    # the velocity stage, computed once here for the RNEA, the contacts and the muscle mass
    # points (left to XLA's common-subexpression elimination, it was computed up to three
    # times per evaluation of the inertial benchmark model)
    bodies = body_motion_from_kinematics(model, kin, qd)
    stages = evaluation_stages(model, kin, bodies, path_rows)  # shared below (stages.py)
    mass = mass_matrix_from_kinematics(model, kin)
    force = (actuator_forces(model, q, qd, ctrl, stages) + passive_forces(model, q, qd, stages)
             + contact_forces_from_kinematics(model, kin, qd, bodies).qfrc_contact
             - bias_forces_from_kinematics(model, kin, qd, bodies))
    applied = applied_forces_from_kinematics(model, kin, qfrc_applied, xfrc_applied)
    if applied is not None:
        force = force + applied
    if model.muscle_mass is not None:  # muscle mass points, seed Eq. 7 (myotwin.inertia)
        from myotwin.inertia.dynamics import muscle_mass_terms

        mass_mus, bias_mus = muscle_mass_terms(model, q, qd, kin, bodies)
        mass, force = mass + mass_mus, force - bias_mus
    factor = cholesky.factor(mass)
    qdd = constrained_acceleration(model, q, qd, cholesky.solve(factor, force), factor,
                                   stages)
    return qdd if damping_dt is None else implicit_damping(model, mass, qdd, damping_dt)


def implicit_damping(model: Model, mass: jax.Array, qdd: jax.Array, dt) -> jax.Array:
    """(n_v,) MuJoCo Euler's acceleration (M + dt D)^-1 M qdd (mj_Euler with eulerdamp on,
    its default) for the acceleration qdd of `forward_dynamics`: M qdd is the total force
    MuJoCo solves with (qfrc_smooth + qfrc_constraint), M (n_v, n_v) the mass matrix with
    armature and any muscle mass points, D = diag(dof_damping) (zero when the file disables
    dampers; MuJoCo then skips the term, and this returns qdd up to rounding). Makes the dof
    damping force -D qd' (implicit in the step's new velocity) rather than -D qd."""
    damped = mass + jnp.diag(dt * model.dof_damping)
    return cholesky.solve(cholesky.factor(damped), mass @ qdd)


def inverse_dynamics(model: Model, q: jax.Array, qd: jax.Array, qdd: jax.Array, *,
                     qfrc_applied: jax.Array | None = None,
                     xfrc_applied: jax.Array | None = None) -> jax.Array:
    """(n_v,) generalized force producing qdd (n_v,) at (q, qd): M qdd + c - passive - the
    joint-limit force the soft constraints assign to qdd (MuJoCo qfrc_inverse) - the smooth
    contact force (contact.py; a function of (q, qd) only, like the passive force) - the
    applied forces qfrc_applied (n_v,) + J^T xfrc_applied (n_body, 6) when given (module
    docstring: MuJoCo's qfrc_inverse is this plus the applied forces)."""
    require_dynamics_support(model)
    kin = kinematics(model, q)
    bodies = body_motion_from_kinematics(model, kin, qd)  # once, as in forward_dynamics
    stages = evaluation_stages(model, kin, bodies)
    mass = mass_matrix_from_kinematics(model, kin)
    tau = (mass @ qdd + bias_forces_from_kinematics(model, kin, qd, bodies)
           - passive_forces(model, q, qd, stages)
           - contact_forces_from_kinematics(model, kin, qd, bodies).qfrc_contact
           - inverse_limit_forces(model, q, qd, qdd, stages))
    applied = applied_forces_from_kinematics(model, kin, qfrc_applied, xfrc_applied)
    if applied is not None:
        tau = tau - applied
    if model.muscle_mass is not None:  # muscle mass points, seed Eq. 7 (myotwin.inertia)
        from myotwin.inertia.dynamics import muscle_inverse_forces

        tau = tau + muscle_inverse_forces(model, q, qd, qdd, kin, bodies)
    return tau


def kinetic_energy(model: Model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """Scalar 0.5 qd^T M(q) qd (armature included, as MuJoCo's energy[1]), plus the muscle
    mass points' 0.5 sum m |J qd|^2 when the model has muscle mass (myotwin.inertia)."""
    energy = 0.5 * qd @ mass_matrix_from_kinematics(model, kinematics(model, q)) @ qd
    if model.muscle_mass is not None:
        from myotwin.inertia.dynamics import muscle_kinetic_energy

        energy = energy + muscle_kinetic_energy(model, q, qd)
    return energy


def potential_energy(model: Model, q: jax.Array) -> jax.Array:
    """Scalar gravitational (-sum m g . x_com) plus joint spring energy (MuJoCo energy[0]):
    0.5 k |dq|^2 per joint with dq as in passive.spring_displacements (hinge, slide, ball,
    free)."""
    com = kinematics(model, q).body_com_world
    energy = -jnp.sum(model.body_mass * (com @ model.gravity)) + spring_energy(model, q)
    if model.muscle_mass is not None:  # the mass points' -sum m g . x (myotwin.inertia)
        from myotwin.inertia.dynamics import muscle_potential_energy

        energy = energy + muscle_potential_energy(model, q)
    return energy
