"""Residual and exact sparse tangent of one backward-Euler step of a `FiberSystem` (Eq. 64).

Unconstrained pieces first (all fiber dofs u_h and the skeleton coordinates q, `evaluate`, one
jitted call):
  * every element of every fiber: inertia + internal - line load - bone-cylinder contact
    (12 dofs; the cylinder pose of a moving body is an extra input), one vmapped kernel;
  * fiber-fiber half-pass points (`contact_fibers.point_force`, 12 x 24 each), on the padded
    list of active points found in NumPy;
  * the skeleton: `coupling.skeleton_residual` and the bone reactions P^T G.
Tangents of every piece come from forward-mode linearisation of the same functions (exact).

Then the elimination of Eqs. (58)-(63) (NumPy/SciPy, `assemble`): with the nullspace matrix
N (rows q: identity; rows u_I: identity; rows of tied u_D: C(q); held dofs: 0),

  R(z) = N^T rho(w(z)),   J = N^T K_aug N + d/dq [ C(q)^T rho_D + P(q)^T G ]|_{rho_D, G fixed}

with K_aug the tangent of the unconstrained residual rho w.r.t. w = (q, u_h). K_aug's fiber
block is block-banded (each fiber half-bandwidth 11) plus the 12 x 24 coupling blocks of the
fiber-fiber contacts; the skeleton block is dense and n_v x n_v; its couplings to the fibers
touch the tied end elements and the elements touching a moving cylinder. Everything is
assembled as a scipy.sparse matrix whose number of nonzeros grows linearly with the number of
elements, and `system_stepping` factorises it with SuperLU (COLAMD ordering).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from myotwin.fiber import contact_bones, contact_fibers, hermite
from myotwin.fiber.cable import check_shapes
from myotwin.fiber.coupling import attachment_positions, cylinder_poses, skeleton_residual
from myotwin.fiber.material import stress_s11


class ActiveContacts(NamedTuple):
    """Padded fiber-fiber contact points for the jitted evaluation (length P each).

    elem_a, point_k, elem_b (int), xi (float), interior (bool), weight (float), mask (bool)."""

    elem_a: np.ndarray
    point_k: np.ndarray
    elem_b: np.ndarray
    xi: np.ndarray
    interior: np.ndarray
    weight: np.ndarray
    mask: np.ndarray


#: Distance in xi from an element end below which a closest point counts as on the node.
NODE_TOL = 1e-8


def pad_contacts(points: contact_fibers.ContactPoints, el_first: np.ndarray) -> ActiveContacts:
    """Active points padded to a power-of-two length (few jit shapes); padding is masked.

    A point whose closest point is an inner node of the partner (xi = 0 or 1, `interior`) is
    entered twice with weight 1/2, once on each element sharing the node: the force is the same
    (C1 centreline), and its tangent is the mean of the two one-sided tangents (the closest-
    point map has a kink there, since y'' of cubic Hermite elements jumps at nodes). Without
    this, Newton stalls when a crossing sits exactly on a node (e.g. the symmetric
    `fiber-fiber` case with an even number of elements).
    """
    ea, k, eb, xi, inter = (np.asarray(a) for a in (points.elem_a, points.point_k,
                                                    points.elem_b, points.xi, points.interior))
    weight = np.ones(ea.size)
    starts, ends = np.asarray(el_first[:-1]), np.asarray(el_first[1:]) - 1
    at_end = (xi >= 1.0 - NODE_TOL) & ~np.isin(eb, ends)
    at_start = (xi <= NODE_TOL) & ~np.isin(eb, starts)
    node = inter & (at_end | at_start)
    if np.any(node):
        weight[node] = 0.5
        xi = np.where(at_end & node, 1.0, np.where(at_start & node, 0.0, xi))
        twin_b = np.where(at_end[node], eb[node] + 1, eb[node] - 1)
        ea, k = np.concatenate([ea, ea[node]]), np.concatenate([k, k[node]])
        eb, xi = np.concatenate([eb, twin_b]), np.concatenate([xi, 1.0 - xi[node]])
        inter = np.concatenate([inter, inter[node]])
        weight = np.concatenate([weight, np.full(int(node.sum()), 0.5)])
    n = ea.size
    size = contact_fibers.bucket_size(n)

    def pad(a, fill, dtype):
        out = np.full(size, fill, dtype=dtype)
        out[:n] = a
        return out

    return ActiveContacts(pad(ea, 0, int), pad(k, 0, int), pad(eb, 0, int), pad(xi, 0.5, float),
                          pad(inter, False, bool), pad(weight, 0.0, float), np.arange(size) < n)


class Evaluation(NamedTuple):
    """Unconstrained residual pieces and their tangents at one iterate (JAX arrays).

    rho_h (n_h,) fiber residual on all fiber dofs (N); rho_s (n_v,) skeleton residual with the
    bone reactions, without C^T rho_D (N m or N); k_el (n_E, 12, 12) d rho_e / d x_e;
    k_hs (n_E, 12, n_v) d rho_e / d q (moving cylinders); k_sh (n_E, n_v, 12) d rho_s / d x_e;
    k_ff (P, 12, 24) fiber-fiber blocks (rows A, columns A then B); k_ss (n_v, n_v) d rho_s/dq
    plus the second-derivative term of C^T rho_D + P^T G; att_c (n_att, 3, n_v) C(q);
    fiber_scale (N), skeleton_scale: yardsticks of convergence; element_bad (n_E,) bool: an
    element whose own forces or tangent are not finite; eps_cyl (n_E, n_cyl, n_qc) and eps_ff
    (P,): 1 + gamma g at the contact points (1 where inactive).
    """

    rho_h: jax.Array
    rho_s: jax.Array
    k_el: jax.Array
    k_hs: jax.Array
    k_sh: jax.Array
    k_ff: jax.Array
    k_ss: jax.Array
    att_c: jax.Array
    fiber_scale: jax.Array
    skeleton_scale: jax.Array
    element_bad: jax.Array
    eps_cyl: jax.Array
    eps_ff: jax.Array


def _bulk_forces(system, mat, rho, x, v, a, h, ref_norm, r0, gamma, alpha, line_force):
    """Inertia, internal and external forces (12,) of one element (Eqs. 38, 55-57)."""
    phi, dphi, w = system.qp_phi, system.qp_dphi, system.qp_w
    area0 = math.pi * r0**2
    _, a1 = hermite.interpolate(x, h, phi, dphi)
    _, a1_dot = hermite.interpolate(v, h, phi, dphi)
    acc, _ = hermite.interpolate(a, h, phi, dphi)
    s11 = stress_s11(mat, gamma, alpha, a1, a1_dot, ref_norm)
    zero = jnp.zeros_like(a1)
    ds = ref_norm[:, None]
    internal = hermite.gather_virtual_work(zero, (area0 * s11)[:, None] * a1 * ds, h, phi, dphi,
                                           w)
    inertia = hermite.gather_virtual_work((rho * area0)[:, None] * acc * ds, zero, h, phi, dphi,
                                          w)
    external = hermite.gather_virtual_work(line_force * ds, zero, h, phi, dphi, w)
    return inertia, internal, external


def _element(system, x_e, xp_e, vp_e, inv_dt, h, qp_rn, qp_r0, qp_g, qc_rn, qc_r0, rho, mat,
             alpha, line_force, cyl_mask, poses):
    moving = np.flatnonzero(system.layout.cyl_moving)
    n_m = moving.size

    def f(z):
        x, pose_m = z[:12], z[12:].reshape(n_m, 6)
        v = (x - xp_e) * inv_dt
        a = (v - vp_e) * inv_dt
        inertia, internal, external = _bulk_forces(system, mat, rho, x, v, a, h, qp_rn, qp_r0,
                                                   qp_g, alpha, line_force)
        contact = jnp.zeros(12)
        reactions, eps = [], []
        for c, cyl in enumerate(system.cylinders):
            pose = pose_m[int(np.flatnonzero(moving == c)[0])] if c in moving else poses[c]
            force, react, e = contact_bones.element_force(
                cyl, pose, x, h, system.qc_phi, system.qc_dphi, system.qc_w, qc_rn, qc_r0)
            contact = contact + jnp.where(cyl_mask[c], force, 0.0)
            eps.append(jnp.where(cyl_mask[c], e, 1.0))
            if c in moving:
                reactions.append(jnp.where(cyl_mask[c], react, 0.0))
        residual = inertia + internal - external - contact
        out = jnp.concatenate([residual] + reactions)
        scale = jnp.max(jnp.abs(jnp.stack([inertia, internal, external, contact])))
        eps = jnp.stack(eps) if eps else jnp.ones((0, system.qc_w.shape[0]))
        return out, (scale, eps)

    z = jnp.concatenate([x_e, poses[moving].reshape(-1)])
    out, f_jvp, (scale, eps) = jax.linearize(f, z, has_aux=True)
    jac = jax.vmap(f_jvp, out_axes=1)(jnp.eye(z.shape[0], dtype=z.dtype))
    return out, jac, scale, eps


def evaluate(system, q, u_h, q_prev, qd_prev, u_prev, v_prev, inv_dt, activation, line_force,
             ctrl, rho_ff, ff_scale, poses, pose_jac, att_c,
             with_tangent: bool = True) -> Evaluation:
    """Unconstrained residual pieces and tangents at (q, u_h) (see `Evaluation`).

    q, q_prev, qd_prev (n_v,); u_h, u_prev, v_prev (n_h,) with the tied dofs already at c(q);
    inv_dt = 1/dt (0: statics); activation (n_fiber,); line_force (n_E, n_qp, 3) N/m; ctrl
    (n_u,) skeleton controls; rho_ff (n_h,) and ff_scale: the fiber-fiber residual and force
    scale of `fiber_contact_terms`; poses (n_cyl, 6), pose_jac (n_cyl, 6, n_v), att_c
    (n_att, 3, n_v) from `coupling.positions_and_jacobians` at q. Three jitted pieces: the
    fibers (`fiber_terms`), the fiber-fiber points (separate: their padded size changes) and the
    skeleton (`skeleton_terms`: compiled once per system, tangent always included since it is
    n_v x n_v). k_ff and eps_ff of the result are empty (see `fiber_contact_terms`).
    """
    lay = system.layout
    n_v, n_e = lay.n_v, lay.el_dofs.shape[0]
    fib = fiber_terms(system, u_h, u_prev, v_prev, inv_dt, activation, line_force, rho_ff,
                      ff_scale, poses, pose_jac, with_tangent=with_tangent)
    rho_h, k_el, k_hs, k_sh, g_total, dg_dpose, fiber_scale, element_bad, eps_cyl = fib
    zero = jnp.zeros
    if n_v == 0:
        return Evaluation(rho_h, zero(0), k_el, zero((n_e, 12, 0)), zero((n_e, 0, 12)),
                          zero((0, 12, 24)), zero((0, 0)), zero((lay.att_body.size, 3, 0)),
                          fiber_scale, jnp.asarray(0.0), element_bad, eps_cyl, zero(0))
    rho_s, k_ss, skeleton_scale = skeleton_terms(system, q, q_prev, qd_prev, inv_dt, ctrl,
                                                 rho_h, g_total, dg_dpose, att_c)
    return Evaluation(rho_h, rho_s, k_el, k_hs, k_sh, zero((0, 12, 24)), k_ss, att_c,
                      fiber_scale, skeleton_scale, element_bad, eps_cyl, zero(0))


@functools.partial(jax.jit, static_argnames=("with_tangent",))
def fiber_terms(system, u_h, u_prev, v_prev, inv_dt, activation, line_force, rho_ff, ff_scale,
                poses, pose_jac, with_tangent: bool = True):
    """Fiber part: rho_h (n_h,), k_el (n_E, 12, 12), k_hs (n_E, 12, n_v), k_sh (n_E, n_v, 12),
    bone reactions G (n_m, 6) and dG/dpose (6 n_m, 6 n_m) of the moving cylinders, force scale,
    element_bad (n_E,), eps_cyl (n_E, n_cyl, n_qc)."""
    lay = system.layout
    n_v, n_e = lay.n_v, lay.el_dofs.shape[0]
    moving = np.flatnonzero(lay.cyl_moving)
    n_m = moving.size
    el_dofs = jnp.asarray(lay.el_dofs)
    alpha_e = jnp.asarray(activation, jnp.float64)[jnp.asarray(lay.el_fiber)]
    cyl_mask = jnp.asarray(lay.cyl_fiber_mask.T) if lay.cyl_fiber_mask.size else jnp.zeros(
        (n_e, 0), bool)
    outs, jacs, scales, eps_cyl = jax.vmap(
        _element, in_axes=(None, 0, 0, 0, None, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, None))(
        system, u_h[el_dofs], u_prev[el_dofs], v_prev[el_dofs], inv_dt, system.el_h,
        system.el_qp_ref_norm, system.el_qp_r0_m, system.el_qp_gamma_m, system.el_qc_ref_norm,
        system.el_qc_r0_m, system.el_rho_kg_m3, system.el_material, alpha_e, line_force,
        cyl_mask, poses)
    rho_h = jnp.zeros(lay.n_h).at[el_dofs].add(outs[:, :12]) + rho_ff
    element_bad = ~(jnp.all(jnp.isfinite(outs), axis=1) & jnp.all(jnp.isfinite(jacs),
                                                                  axis=(1, 2)))
    fiber_scale = jnp.maximum(jnp.max(scales), ff_scale)
    k_el = jacs[:, :12, :12]
    g_total = jnp.sum(outs[:, 12:].reshape(n_e, n_m, 6), axis=0)
    if not with_tangent or n_m == 0:
        return (rho_h, k_el, jnp.zeros((n_e, 12, n_v)), jnp.zeros((n_e, n_v, 12)), g_total,
                jnp.zeros((6 * n_m, 6 * n_m)), fiber_scale, element_bad, eps_cyl)
    p_m = jnp.asarray(pose_jac)[moving]  # (n_m, 6, n_v)
    k_hs = jnp.einsum("eij,jv->eiv", jacs[:, :12, 12:], p_m.reshape(6 * n_m, n_v))
    d_react = jacs[:, 12:, :]  # (n_e, 6 n_m, 12 + 6 n_m)
    # rho_s = skeleton - P^T G, so d rho_s / d x_e = -P^T dG/dx_e
    k_sh = -jnp.einsum("mkv,emkj->evj", p_m, d_react[:, :, :12].reshape(n_e, n_m, 6, 12))
    dg_dpose = jnp.sum(d_react[:, :, 12:], axis=0)
    return rho_h, k_el, k_hs, k_sh, g_total, dg_dpose, fiber_scale, element_bad, eps_cyl


@jax.jit
def skeleton_terms(system, q, q_prev, qd_prev, inv_dt, ctrl, rho_h, g_total, dg_dpose, att_c):
    """Skeleton rows: rho_s = skeleton residual - P^T G (n_v,), their tangent k_ss (n_v, n_v)
    including the second-derivative terms of C^T rho_D + P^T G (rho_D, G held), and the scale.
    """
    lay = system.layout
    n_v = lay.n_v
    moving = np.flatnonzero(lay.cyl_moving)
    n_m = moving.size
    dep_tied = lay.dep_att >= 0
    w_att = jnp.zeros((lay.att_body.size, 3)).at[
        lay.dep_att[dep_tied], lay.dep_comp[dep_tied]].add(rho_h[lay.dep_dofs[dep_tied]])

    def moving_poses(x):
        return cylinder_poses(system, x)[moving] if n_m else jnp.zeros((0, 6))

    pm, pm_jvp = jax.linearize(moving_poses, q)
    p_m = jax.vmap(pm_jvp, out_axes=-1)(jnp.eye(n_v))  # (n_m, 6, n_v)
    tau = jnp.einsum("mkv,mk->v", p_m, g_total)

    def skel(x):
        return skeleton_residual(system, x, q_prev, qd_prev, inv_dt, ctrl)

    skel_r, skel_jac = jax.linearize(skel, q)
    k_skel = jax.vmap(skel_jac, out_axes=-1)(jnp.eye(n_v))
    rho_s = skel_r - tau
    # yardstick of the q rows: the largest single term (skeleton forces, bone reactions, and
    # the fiber end forces times the largest lever |C|; these cancel in equilibrium)
    skeleton_scale = jnp.maximum(jnp.max(jnp.abs(skel_r)), jnp.maximum(
        jnp.max(jnp.abs(tau), initial=0.0), jnp.max(jnp.abs(att_c), initial=0.0)
        * jnp.max(jnp.abs(w_att), initial=0.0)))
    pm_flat = p_m.reshape(6 * n_m, n_v)

    def potential(x):
        return (jnp.sum(attachment_positions(system, x) * w_att)
                - jnp.sum(moving_poses(x) * g_total))

    k_ss = k_skel - pm_flat.T @ dg_dpose @ pm_flat + jax.hessian(potential)(q)
    return rho_s, k_ss, skeleton_scale


@jax.jit
def fiber_contact_terms(system, u_h, contacts: ActiveContacts):
    """Fiber-fiber half-pass points: residual rho_ff (n_h,) (minus the contact forces), blocks
    k_ff (P, 12, 24) of d rho / d(x_A, x_B), eps (P,) and the largest point force (N)."""
    lay = system.layout
    el_dofs = jnp.asarray(lay.el_dofs)
    ea, eb = jnp.asarray(contacts.elem_a), jnp.asarray(contacts.elem_b)
    k = jnp.asarray(contacts.point_k)
    args = (system.el_h[ea], system.el_h[eb], system.qc_phi[k], system.qc_dphi[k],
            system.qc_w[k], system.el_qc_r0_m[ea, k], system.el_qc_ref_norm[ea, k],
            system.el_ref_q[eb], system.el_qc_r0_m[eb], system.qc_xi,
            jnp.asarray(contacts.xi), jnp.asarray(contacts.interior))
    f_ff, eps_ff, k_ff = jax.vmap(
        contact_fibers.point_force_and_jacobian,
        in_axes=(None, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, None, 0, 0))(
        system.fiber_law, u_h[el_dofs[ea]], u_h[el_dofs[eb]], *args)
    mask = jnp.asarray(contacts.mask)
    weight = jnp.asarray(contacts.weight)
    f_ff = jnp.where(mask[:, None], f_ff * weight[:, None], 0.0)
    k_ff = jnp.where(mask[:, None, None], -k_ff * weight[:, None, None], 0.0)  # r = ... - f
    eps_ff = jnp.where(mask, eps_ff, 1.0)
    rho_ff = jnp.zeros(lay.n_h).at[el_dofs[ea]].add(-f_ff)
    return rho_ff, k_ff, eps_ff, jnp.max(jnp.abs(f_ff), initial=0.0)


class Assembled(NamedTuple):
    """Reduced residual R (n_v + n_I,) = (r_q, r_I) and tangent J (CSC), or None."""

    residual: np.ndarray
    tangent: sp.csc_matrix | None


def nullspace(system, att_c: np.ndarray) -> sp.csr_matrix:
    """N of Eq. (58): (n_v + n_h, n_v + n_I) sparse; rows (q, u_h), columns z = (q, u_I)."""
    lay = system.layout
    n_v, n_h, n_i = lay.n_v, lay.n_h, lay.free_dofs.size
    rows = [np.arange(n_v), n_v + lay.free_dofs]
    cols = [np.arange(n_v), n_v + np.arange(n_i)]
    vals = [np.ones(n_v), np.ones(n_i)]
    tied = np.flatnonzero(lay.dep_att >= 0)
    if n_v and tied.size:
        block = np.asarray(att_c)[lay.dep_att[tied], lay.dep_comp[tied]]  # (n_tied, n_v)
        r, c = np.nonzero(np.ones_like(block, dtype=bool))
        rows.append(n_v + lay.dep_dofs[tied][r])
        cols.append(c)
        vals.append(block[r, c])
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n_v + n_h, n_v + n_i))


def assemble(system, ev: Evaluation, contacts: ActiveContacts, k_ff, with_tangent: bool
             ) -> Assembled:
    """Eliminate the tied/held dofs (Eqs. 58-63): R = N^T rho, J = N^T K_aug N + G_qq."""
    lay = system.layout
    n_v, n_h = lay.n_v, lay.n_h
    rho = np.concatenate([np.asarray(ev.rho_s), np.asarray(ev.rho_h)])
    n_mat = nullspace(system, ev.att_c)
    residual = n_mat.T @ rho
    if not with_tangent:
        return Assembled(residual, None)
    el = lay.el_dofs
    rows = [n_v + np.repeat(el, 12, axis=1).reshape(-1)]
    cols = [n_v + np.tile(el, (1, 12)).reshape(-1)]
    vals = [np.asarray(ev.k_el).reshape(-1)]
    if lay.pairs:
        m = contacts.mask
        ea, eb = contacts.elem_a[m], contacts.elem_b[m]
        both = np.concatenate([el[ea], el[eb]], axis=1)  # (p, 24)
        rows.append(n_v + np.repeat(el[ea], 24, axis=1).reshape(-1))
        cols.append(n_v + np.repeat(both[:, None, :], 12, axis=1).reshape(-1))
        vals.append(np.asarray(k_ff)[m].reshape(-1))
    if n_v:
        if lay.cyl_moving.any():
            k_hs, k_sh = np.asarray(ev.k_hs), np.asarray(ev.k_sh)
            touched = np.flatnonzero(np.any(k_hs != 0, axis=(1, 2)) | np.any(k_sh != 0,
                                                                              axis=(1, 2)))
            for e in touched:
                r, c = np.meshgrid(el[e], np.arange(n_v), indexing="ij")
                rows += [n_v + r.reshape(-1), c.T.reshape(-1)]
                cols += [c.reshape(-1), n_v + r.T.reshape(-1)]
                vals += [k_hs[e].reshape(-1), k_sh[e].reshape(-1)]
    k_aug = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(n_v + n_h, n_v + n_h))
    tangent = n_mat.T @ k_aug @ n_mat
    if n_v:  # k_ss (with the second-derivative term G_qq) acts on q directly
        rr, cc = np.meshgrid(np.arange(n_v), np.arange(n_v), indexing="ij")
        tangent = tangent + sp.csr_matrix(
            (np.asarray(ev.k_ss).reshape(-1), (rr.reshape(-1), cc.reshape(-1))),
            shape=tangent.shape)
    return Assembled(residual, sp.csc_matrix(tangent))


@jax.jit
def axial_forces(system, u_h, v_h, activation) -> jax.Array:
    """Axial force N (n_E, n_qp) in N (tension > 0) at the bulk quadrature points of every
    element (Cauchy stress x current area, `material.axial_force`). u_h, v_h (n_h,) and
    activation (n_fiber,) (ValueError naming the argument otherwise, at trace time)."""
    from myotwin.fiber.material import axial_force

    check_shapes("axial_forces", f"fiber system: n_h = {system.n_h}, n_fiber = "
                 f"{system.n_fiber}", {"u_h": (u_h, (system.n_h,)), "v_h": (v_h, (system.n_h,)),
                                       "activation": (activation, (system.n_fiber,))})
    lay = system.layout
    el_dofs = jnp.asarray(lay.el_dofs)
    alpha_e = jnp.asarray(activation, jnp.float64)[jnp.asarray(lay.el_fiber)]

    def one(x, v, h, rn, r0, gamma, mat, alpha):
        _, a1 = hermite.interpolate(x, h, system.qp_phi, system.qp_dphi)
        _, a1_dot = hermite.interpolate(v, h, system.qp_phi, system.qp_dphi)
        return axial_force(stress_s11(mat, gamma, alpha, a1, a1_dot, rn), r0, a1, rn)

    return jax.vmap(one)(u_h[el_dofs], v_h[el_dofs], system.el_h, system.el_qp_ref_norm,
                         system.el_qp_r0_m, system.el_qp_gamma_m, system.el_material, alpha_e)
