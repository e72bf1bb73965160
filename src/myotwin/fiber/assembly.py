"""The discrete system of one backward-Euler step (or a static solve): residual and tangent.

Backward Euler in (x, v) (Gfrerer & Simeon 2021, Eq. 64, single fiber, no rigid bodies):

  v^{n+1} = (q^{n+1} - q^n) / dt,    M (v^{n+1} - v^n) / dt + f_int(q^{n+1}, v^{n+1})
                                     - f_contact(q^{n+1}) - f_ext(t^{n+1}) = 0.

With q = q^{n+1} the only unknown and s = 1/dt, the residual is

  r(q) = M ((q - q^n) s - v^n) s + f_int(q, (q - q^n) s) - f_contact(q) - f_ext,

and s = 0 gives the static equilibrium r(q) = f_int(q, 0) - f_contact(q) - f_ext. Its exact
tangent dr/dq = M s^2 + df_int/dq + s df_int/dv - df_contact/dq is `jax.jacfwd` of each
element's residual (12 dofs) assembled into LAPACK band storage (half-bandwidth 11, see
`hermite`), so one evaluation costs O(n_el) and the banded LU solve O(n_el * 11^2): the cost per
Newton iteration grows linearly with the number of elements.

Fixed dofs (boundary conditions) are eliminated by replacing their rows and columns with the
identity and their residual with 0: their values are set before the solve (prescribed motion),
and their velocities follow the same backward difference (q - q^n) s as every other dof.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.arguments import jit_naming_refusals
from myotwin.fiber import hermite
from myotwin.fiber.cable import (
    FiberModel,
    assemble_banded,
    assemble_vector,
    check_shapes,
    dof_shapes,
    element_forces,
    element_h,
    per_element,
)
from myotwin.fiber.contact_cylinder import CylinderContact, element_contact_force


class StepSystem(NamedTuple):
    """Residual and tangent of one step at an iterate (JAX arrays).

    residual (n_dof,) in N (0 on fixed dofs); tangent_banded (23, n_dof) band storage of dr/dq
    (identity rows/columns on fixed dofs); force_scale: largest |entry| of the unassembled
    inertia, internal, contact and external element forces (N), the yardstick of convergence;
    element_residual (n_el,): max |residual| over each element's free dofs (inf for an element
    whose own forces or tangent are not finite, 0 for its finite neighbours); eps (n_el, n_qpc):
    1 + gamma g at the contact points (ones without contact).
    """

    residual: jax.Array
    tangent_banded: jax.Array
    force_scale: jax.Array
    element_residual: jax.Array
    eps: jax.Array


def _element_system(model, contact, q_e, q_prev_e, v_prev_e, inv_dt, h, ref_norm, r0, gamma,
                    alpha, line_force, qc_ref_norm, qc_r0):
    def parts(q):
        v = (q - q_prev_e) * inv_dt
        a = (v - v_prev_e) * inv_dt
        inertia, internal, external = element_forces(model, q, v, a, h, ref_norm, r0, gamma,
                                                     alpha, line_force)
        if contact is None:
            f_c, eps = jnp.zeros_like(internal), jnp.ones(model.n_qp_contact)
        else:
            f_c, eps = element_contact_force(model, contact, q, h, qc_ref_norm, qc_r0)
        scale = jnp.max(jnp.abs(jnp.stack([inertia, internal, external, f_c])))
        return inertia + internal - external - f_c, (scale, eps)

    (r_e, (scale, eps)), k_e = _value_and_jacfwd(parts, q_e)
    return r_e, k_e, scale, eps


def _value_and_jacfwd(f, x):
    """(f(x), aux) and df/dx by forward mode (one linearisation, n pushforwards)."""
    value, f_jvp, aux = jax.linearize(f, x, has_aux=True)
    jac = jax.vmap(f_jvp, out_axes=1)(jnp.eye(x.shape[0], dtype=x.dtype))
    return (value, aux), jac


@jit_naming_refusals(("q", "q_prev", "v_prev", "inv_dt", "activation", "line_force"))
def step_system(model: FiberModel, contact: CylinderContact | None, q, q_prev, v_prev, inv_dt,
                activation, line_force) -> StepSystem:
    """Residual and banded tangent of the backward-Euler step (static if inv_dt = 0).

    q, q_prev, v_prev (n_dof,): iterate, previous positions and velocities; inv_dt = 1/dt in
    1/s (0 for statics); activation alpha (scalar); line_force (n_el, n_qp, 3) N/m at the bulk
    quadrature points at the new time; contact: a `CylinderContact` or None. A q, q_prev,
    v_prev or line_force of another shape is a ValueError naming it (at trace time).
    """
    shapes = dof_shapes(model, q=q, q_prev=q_prev, v_prev=v_prev)
    shapes["line_force"] = (line_force, (model.n_el, model.n_qp, 3))
    check_shapes("step_system", f"fiber '{model.name}': n_dof = {model.n_dof}, n_el = "
                 f"{model.n_el}, n_qp = {model.n_qp}", shapes)
    els = jax.vmap(_element_system,
                   in_axes=(None, None, 0, 0, 0, None, 0, 0, 0, 0, None, 0, 0, 0))
    r_e, k_e, scale, eps = els(model, contact, per_element(model, q),
                               per_element(model, q_prev), per_element(model, v_prev), inv_dt,
                               element_h(model), model.qp_ref_norm, model.qp_r0_m,
                               model.qp_gamma_m, activation, line_force, model.qc_ref_norm,
                               model.qc_r0_m)
    free = jnp.asarray(model.free_mask())
    free_e = per_element(model, free)
    k_e = k_e * (free_e[:, :, None] & free_e[:, None, :])
    ab = assemble_banded(model, k_e)
    ab = ab.at[hermite.BANDWIDTH].add(jnp.where(free, 0.0, 1.0))
    r = jnp.where(free, assemble_vector(model, r_e), 0.0)
    elem_res = jnp.max(jnp.abs(per_element(model, r)), axis=1)
    # a non-finite element names itself (inf), not its neighbours through shared nodes (0)
    own_bad = ~(jnp.all(jnp.isfinite(r_e), axis=1) & jnp.all(jnp.isfinite(k_e), axis=(1, 2)))
    elem_res = jnp.where(own_bad, jnp.inf, jnp.where(jnp.isfinite(elem_res), elem_res, 0.0))
    return StepSystem(r, ab, jnp.max(scale), elem_res, eps)


def residual_only(model, contact, q, q_prev, v_prev, inv_dt, activation, line_force):
    """The residual vector (n_dof,) alone (for finite-difference checks of the tangent)."""
    return step_system(model, contact, q, q_prev, v_prev, inv_dt, activation, line_force).residual


def free_dofs(model: FiberModel) -> np.ndarray:
    """Indices of the free dofs (NumPy int array)."""
    return np.flatnonzero(model.free_mask())
