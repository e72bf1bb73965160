"""Coupling of fiber ends to the rigid skeleton (Gfrerer & Simeon 2021, Secs. 3.2 and 4.1-4.2).

Coupling condition (Eq. 49a): a tied end node sits at a body-fixed point,

  u_D = c(q) = p_b(q) + R_b(q) s_local,    C(q) = dc/dq  (3 per attachment, n_v),

with (p_b, R_b) the body frame from `engine.kinematics` (hinge/slide joints, so q and qd have
the same size). Eq. (49b) (action = reaction) is not imposed by multipliers: the constraint is
eliminated as in Eqs. (58)-(63). With the nullspace matrix N(q) of Eq. (58) mapping the
unknowns z = (q, u_I) to all coordinates w = (q, u_I, u_D), the coupled equations are N^T of
the unconstrained ones:

  r_I = [M_M a_h + f_int - f_contact - f_ext]_I = 0                                  (63b)
  r_q = M_RB(q) qdd + c(q, qd) - tau_passive - tau_act - tau_bones
        + C(q)^T [M_M a_h + f_int - f_contact - f_ext]_D = 0                          (63a, 62)

i.e. the fiber forces at the tied nodes (the eliminated multipliers of Eq. 62, inertia of the
end nodes included, the (H, M_D) term of Eq. 63a) act on the bodies through C^T.
Time discretisation (Eq. 64, backward Euler): q^{n+1} = q^n + dt qd^{n+1} and
u_h^{n+1} = u_h^n + dt v_h^{n+1} for *all* fiber dofs, with u_D^{n+1} = c(q^{n+1}) (63c).
**Choice:** the velocity constraint (63d), v_D = C(q) qd, is then satisfied to O(dt) only
(v_D^{n+1} is the backward difference of c); Eq. (64) lists both (63c) and (63d), which cannot
hold together exactly for a nonlinear c, and keeping every fiber dof on the same backward
difference makes the tangent exactly N^T K N + (dC^T/dq) r_D (no extra velocity terms).

`skeleton_residual` is the rigid part: M(q) (qd - qd^n)/dt + c(q, qd) - passive - actuators,
qd = (q - q^n)/dt (engine's `mass_matrix`, `bias_forces`, `passive_forces`,
`actuator_forces`); inv_dt = 0 gives the static balance c(q, 0) - passive - actuators.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.actuation import actuator_forces
from myotwin.engine.bias import bias_forces
from myotwin.engine.kinematics import kinematics
from myotwin.engine.mass import mass_matrix
from myotwin.engine.passive import passive_forces


def attachment_positions(system, q) -> jax.Array:
    """World positions c(q) (n_att, 3) of the attachment points (Eq. 49a)."""
    if system.skeleton is None:
        return system.att_point_local_m
    kin = kinematics(system.skeleton, q)
    body = jnp.asarray(system.layout.att_body, dtype=jnp.int32)
    rot = kin.body_rot_world[body]
    return kin.body_pos_world[body] + jnp.einsum("aij,aj->ai", rot, system.att_point_local_m)


def cylinder_poses(system, q) -> jax.Array:
    """World pose (y_0, t) of every bone cylinder, (n_cyl, 6)."""
    if not system.cylinders:
        return jnp.zeros((0, 6))
    out = []
    kin = None if system.skeleton is None else kinematics(system.skeleton, q)
    for cyl in system.cylinders:
        if kin is None or cyl.body == 0:
            out.append(jnp.concatenate([cyl.point_local_m, cyl.axis_local]))
            continue
        rot = kin.body_rot_world[cyl.body]
        out.append(jnp.concatenate([kin.body_pos_world[cyl.body] + rot @ cyl.point_local_m,
                                    rot @ cyl.axis_local]))
    return jnp.stack(out)


def skeleton_residual(system, q, q_prev, qd_prev, inv_dt, ctrl) -> jax.Array:
    """Rigid-body part of r_q (n_v,) for the backward-Euler step (static if inv_dt = 0)."""
    model = system.skeleton
    qd = (q - q_prev) * inv_dt
    qdd = (qd - qd_prev) * inv_dt
    return (mass_matrix(model, q) @ qdd + bias_forces(model, q, qd)
            - passive_forces(model, q, qd) - actuator_forces(model, q, qd, ctrl))


@jax.jit
def positions_and_jacobians(system, q):
    """c(q) (n_att, 3), C(q) (n_att, 3, n_v), poses (n_cyl, 6) and P = dposes/dq (n_cyl, 6, n_v).
    """
    c, c_jvp = jax.linearize(lambda x: attachment_positions(system, x), q)
    p, p_jvp = jax.linearize(lambda x: cylinder_poses(system, x), q)
    eye = jnp.eye(q.shape[0], dtype=jnp.float64)
    jac_c = jax.vmap(c_jvp, out_axes=-1)(eye) if q.shape[0] else jnp.zeros(c.shape + (0,))
    jac_p = jax.vmap(p_jvp, out_axes=-1)(eye) if q.shape[0] else jnp.zeros(p.shape + (0,))
    return c, jac_c, p, jac_p
