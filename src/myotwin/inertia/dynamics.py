"""Muscle mass points in the skeleton's equations of motion (Wang et al. 2022 §3, Eqs. 1-7).

With x_alpha(q) (n_points, 3) the mass-point positions (`path_fraction.py`), masses m_k and
gravity g, the seed's Eq. 7 adds to the skeleton's M(q) qdd = f:

  M_total = M + J_ar^T M_a J_ar          = M + sum_k m_k J_k^T J_k                    (7b)
  f_total = f + J_ar^T (f_a - M_a Jdot_ar qd)
                                         = f + sum_k m_k J_k^T (g - Jdot_k qd)         (7c)

J_k (3, n_v) = d x_k / d qd is the mass point's Jacobian in velocity coordinates (Eq. 1, 4:
J_ar = J_am J_mr) and Jdot_k qd (3,) its quadratic velocity term (Eq. 5), the acceleration of
the point when qdd = 0. The engine's sign convention is kept: `muscle_bias_forces` returns
c_mus = sum_k m_k J_k^T (Jdot_k qd - g), which is *subtracted* like `engine.bias_forces`.

How J_k and Jdot_k qd are computed (the seed's chain, Eqs. 2-5). The points depend on the
skeleton through the path anchors y (site positions, wrap frames; `anchors.py`):
x = F(y) (`path_fraction`), and y moves with the bodies (J_mr, Jdot_mr of the engine: dof
motion vectors, RNEA bias accelerations). Then, by forward-mode autodiff of F only:
  J_k[:, d]  = DF(y)[dy/dqd_d]                    (one jvp per dof, vmapped: J_am J_mr)
  Jdot_k qd  = d^2/dt^2 F(y + t ydot + t^2/2 yddot_0) at t = 0
             = DF(y)[yddot_0] + D^2F(y)[ydot, ydot] (nested jvp: J_am Jdot_mr + Jdot_am J_mr)
with ydot = J_y qd and yddot_0 the anchors' acceleration at qdd = 0. The kinematics are never
differentiated (their second-order graph made XLA compile times grow to minutes); F is small.
tests/inertia prove that this equals (i) autodiff through the whole kinematics with the
quaternion tangent map, `jacobians_by_autodiff` (retraction q (+) v = q + qpos_derivative(q, v),
which the kinematics normalise; 2 atan(|v|/2) = |v| + O(|v|^3), so second derivatives along
t -> q (+) t qd are those of constant qvel), (ii) central differences of x_alpha(q) with
mj_integratePos, and (iii) the seed's explicit Type I Eq. 10, Type II Eqs. 12-16 and Type III
Eqs. 20-27 built from the engine's point Jacobians. J_k is continuous along an active wrap and
between path points (C^1 geometry), so Jdot_k qd exists there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.integrators import qpos_derivative
from myotwin.engine.kinematics import kinematics
from myotwin.inertia.anchors import anchor_motion, path_anchors
from myotwin.inertia.path_fraction import (mass_point_layout, mass_point_positions_from_anchors,
                                           mass_point_positions_from_kinematics)


def _require(model):
    if getattr(model, "muscle_mass", None) is None:
        raise ValueError("the model has no muscle mass (see myotwin.inertia.with_muscle_mass or "
                         "the MJCF numeric 'muscle_mass:<tendon>')")
    return model.muscle_mass


def retract(model, q: jax.Array, v: jax.Array) -> jax.Array:
    """(n_q,) q (+) v = q + qpos_derivative(q, v) for v (n_v,): hinge/slide/free translation
    q + v, quaternions q (x) (1, v/2) (normalised by the kinematics)."""
    return q + qpos_derivative(model, q, v)


def _chain(model, q, qd=None):
    """(F, anchors, AnchorMotion) at q (and qd)."""
    layout = mass_point_layout(model)
    kin = kinematics(model, q)
    y = path_anchors(model.paths, kin, layout.wraps)
    motion = anchor_motion(model, model.paths, kin, y, layout.wraps, qd)
    return (lambda anchors: mass_point_positions_from_anchors(model, anchors)), y, motion


def _jacobians(f, y, tangents) -> jax.Array:
    """(n_points, 3, n_v): one jvp of F per dof column of the anchors' tangents."""
    cols = jax.vmap(lambda t: jax.jvp(f, (y,), (t,))[1])(tangents)   # (n_v, n_points, 3)
    return jnp.moveaxis(cols, 0, -1)


def _bias(f, y, motion) -> jax.Array:
    """(n_points, 3) d^2/dt^2 F(y + t ydot + t^2/2 yddot_0) at t = 0 (Jdot qd)."""
    ydot, yddot = motion.velocity, motion.bias_acceleration

    def curve(t):
        return f(y.scaled_add(ydot, t).scaled_add(yddot, 0.5 * t * t))

    def rate(t):
        return jax.jvp(curve, (t,), (jnp.ones_like(t),))[1]

    zero = jnp.zeros((), dtype=y.site_pos_world.dtype)
    return jax.jvp(rate, (zero,), (jnp.ones_like(zero),))[1]


def mass_point_jacobians(model, q: jax.Array) -> jax.Array:
    """(n_points, 3, n_v) Jacobians J_k = d x_k / d qd of the mass points at q (n_q,)."""
    _require(model)
    f, y, motion = _chain(model, q)
    return _jacobians(f, y, motion.tangents)


def jacobians_by_autodiff(model, q: jax.Array) -> jax.Array:
    """(n_points, 3, n_v) the same J_k by jax.jacfwd through the whole kinematics on the
    retraction q (+) v (a reference: slower to compile; tests/inertia prove the equality)."""
    _require(model)

    def positions(v):
        return mass_point_positions_from_kinematics(model, kinematics(model, retract(model, q, v)))

    return jax.jacfwd(positions)(jnp.zeros(model.n_v, dtype=q.dtype))


def mass_point_velocities(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_points, 3) world velocities J_k qd (m/s) (one jvp of F along the anchors' motion)."""
    _require(model)
    f, y, motion = _chain(model, q, qd)
    return jax.jvp(f, (y,), (motion.velocity,))[1]


def mass_point_bias_accelerations(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_points, 3) Jdot_k qd (m/s^2): the points' accelerations when qdd = 0 (Eq. 5)."""
    _require(model)
    f, y, motion = _chain(model, q, qd)
    return _bias(f, y, motion)


def jacobians_and_bias(model, q: jax.Array, qd: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(J (n_points, 3, n_v), Jdot qd - g (n_points, 3)): the acceleration each point's mass
    resists at qdd = 0, from one anchor evaluation. With `include_qvv=False` (the seed's §4.3
    ablation) Jdot qd is left out."""
    mm = _require(model)
    f, y, motion = _chain(model, q, qd)
    jac = _jacobians(f, y, motion.tangents)
    grav = jnp.broadcast_to(model.gravity, (mm.n_points, 3))
    if not mm.include_qvv:  # seed §4.3 ablation: the QVV of the muscle points dropped
        return jac, -grav
    return jac, _bias(f, y, motion) - grav


def muscle_mass_matrix(model, q: jax.Array) -> jax.Array:
    """(n_v, n_v) muscle contribution J_ar^T M_a J_ar = sum_k m_k J_k^T J_k (Eq. 7b)."""
    mm = _require(model)
    jac = mass_point_jacobians(model, q)
    return jnp.einsum("k,kia,kib->ab", mm.point_mass, jac, jac)


def muscle_bias_forces(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_v,) c_mus = sum_k m_k J_k^T (Jdot_k qd - g) (Eq. 7c with the engine's bias sign:
    subtracted from the applied forces, like `engine.bias_forces`)."""
    mm = _require(model)
    jac, acc = jacobians_and_bias(model, q, qd)
    return jnp.einsum("k,kia,ki->a", mm.point_mass, jac, acc)


def muscle_mass_terms(model, q: jax.Array, qd: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(M_mus (n_v, n_v), c_mus (n_v,)) of Eq. 7 from one Jacobian evaluation: forward dynamics
    solves (M + M_mus) qdd = f - c_mus."""
    mm = _require(model)
    jac, acc = jacobians_and_bias(model, q, qd)
    weighted = mm.point_mass[:, None, None] * jac
    m_mus = jnp.einsum("kia,kib->ab", weighted, jac)
    c_mus = jnp.einsum("kia,ki->a", weighted, acc)
    return m_mus, c_mus


def muscle_inverse_forces(model, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array:
    """(n_v,) M_mus qdd + c_mus = sum_k m_k J_k^T (J_k qdd + Jdot_k qd - g): the generalized
    force the mass points add to inverse dynamics."""
    mm = _require(model)
    jac, acc = jacobians_and_bias(model, q, qd)
    acc = jnp.einsum("kia,a->ki", jac, qdd) + acc
    return jnp.einsum("k,kia,ki->a", mm.point_mass, jac, acc)


def muscle_kinetic_energy(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """Scalar 0.5 sum_k m_k |J_k qd|^2 (J)."""
    mm = _require(model)
    v = mass_point_velocities(model, q, qd)
    return 0.5 * jnp.sum(mm.point_mass * jnp.sum(v * v, axis=-1))


def muscle_potential_energy(model, q: jax.Array) -> jax.Array:
    """Scalar gravitational energy -sum_k m_k g . x_k (J), same reference as the engine's."""
    mm = _require(model)
    x = mass_point_positions_from_kinematics(model, kinematics(model, q))
    return -jnp.sum(mm.point_mass * (x @ model.gravity))
