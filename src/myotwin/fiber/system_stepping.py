"""Backward Euler and safeguarded Newton for a `FiberSystem` (fibers, contacts, skeleton).

Gfrerer & Simeon 2021, Sec. 4.2 (Eq. 64) and Sec. 4.4 (Eqs. 69-73), extended from the single
fiber of `time_stepping` to several fibers with fiber-fiber contact and a skeleton. Each step
solves R(z) = 0 (`system_assembly`) for z = (q, u_I) by Newton:

  dz = -J^{-1} R   (SuperLU on the sparse tangent, COLAMD ordering)
  z <- z + delta dz,  delta = min(delta_stretch, delta_bones, delta_fibers) / 2^k        (69)

* delta_fibers (Eqs. 70-73) keeps eps = 1 + gamma g of every fiber-fiber half-pass point from
  falling below delta_bar eps(0): per candidate point x_k of fiber A and candidate element E_B of
  fiber B (AABBs enlarged by the motion of the step), the lower bound
    e(delta) = 1 + gamma [ (d - delta (|dx_k| + max_{E_B} |du|)) / (chi_A + chi_B) - 1 ],
    chi_A = r_0 sqrt(|A_1| / (|a_1| - delta |d a_1|)) at x_k,
    chi_B = r_y sqrt(min_{E_B} |a_1| / (min_{E_B} |a_1| - delta max_{E_B} |d a_1|)),
  with d the current distance to E_B and r_y the current partner radius at the closest point.
  **Choices:** like part 1, the min/max of Eq. (72) are per contact point on the slave side
  (exact at delta = 0, so the ratio test of Eq. 71 is well defined); on the partner side they
  are over the partner element (Eq. 73 takes them over the whole other fiber), with max |du|
  bounded by the largest change of the element's Bezier control points (a valid bound, by the
  convex hull property) and chi_B scaled from the current r_y (the variation of r_0 and |A_1|
  along the partner element within one step is neglected).
* delta_bones: the same bound for bone cylinders (part 1's `eps_lower_bound`), the axis
  motion of a moving body bounded to first order by |P dq| (|dy_0| + |s| |dt|).
* delta_stretch (our addition, as part 1): |a_1| - delta |d a_1| >= delta_bar |a_1|.
* k halvings: backtracking on ||R||_2 (Armijo 1e-4), as part 1.
The iterate's fiber-fiber partners are searched again at every evaluation (line search
included). Convergence: fiber rows ||R_I||_inf <= rtol x (largest element force) and skeleton
rows ||R_q||_inf <= rtol x (largest skeleton term), or a full step below xtol (1 + ||z||_inf).
Failures name time, fiber and element (`FiberNewtonError`, `FiberDivergenceError`,
`InadmissibleContactError` of part 1); no NaN escapes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg as spla

from myotwin.engine.arguments import check_step_count
from myotwin.fiber import contact_bones, contact_fibers
from myotwin.fiber.cable import check_shapes
from myotwin.fiber.contact_cylinder import admissible_fractions, eps_lower_bound
from myotwin.fiber.coupling import positions_and_jacobians
from myotwin.fiber.system import FiberSystem
from myotwin.fiber.system_assembly import (
    assemble,
    evaluate,
    fiber_contact_terms,
    pad_contacts,
)
from myotwin.fiber.time_stepping import (
    FiberDivergenceError,
    FiberNewtonError,
    InadmissibleContactError,
    NewtonOptions,
    check_finite,
    check_seconds,
    check_unit_activation,
    inadmissible_hint,
)
from myotwin.scalars import is_integer


class SystemState(NamedTuple):
    """q, qd (n_v,) skeleton coordinates and velocities; u, v (n_h,) all fiber dofs and rates."""

    q: np.ndarray
    qd: np.ndarray
    u: np.ndarray
    v: np.ndarray


class SystemLoads(NamedTuple):
    """Inputs at the new time: activation (n_fiber,) in [0, 1]; line_force (n_E, n_qp, 3) N/m
    at the bulk quadrature points or None; ctrl (n_u,) skeleton controls or None (zeros)."""

    activation: np.ndarray
    line_force: np.ndarray | None = None
    ctrl: np.ndarray | None = None


class SystemInfo(NamedTuple):
    """Outcome of one solve: Newton iterations, final fiber residual (N) and skeleton residual,
    smallest step fraction, number of active fiber-fiber points, and the forces the tied fiber
    ends exert on their bodies (n_att, 3) in N (minus the eliminated multipliers, Eq. 62)."""

    n_iter: int
    residual_fiber_N: float
    residual_skeleton: float
    min_delta: float
    n_fiber_contacts: int
    end_forces_N: np.ndarray


@dataclasses.dataclass
class _Iterate:
    q: np.ndarray
    u: np.ndarray
    att_c: np.ndarray
    poses: np.ndarray
    pose_jac: np.ndarray
    contacts: contact_fibers.ContactPoints


def _when(time_s) -> str:
    return "in the static solve" if time_s is None else f"at t = {time_s:.6g} s"


def _name(system: FiberSystem, e: int) -> tuple[str, int, str]:
    lay = system.layout
    f = int(lay.el_fiber[e])
    local = e - int(lay.el_first[f])
    th = np.asarray(system.fibers[f].node_theta)
    return lay.fiber_names[f], local, f"theta in [{th[local]:.4g}, {th[local + 1]:.4g}]"


def element_geometry(system: FiberSystem, u: np.ndarray) -> contact_fibers.Geometry:
    """Current geometry of every element at the contact points (NumPy)."""
    return contact_fibers.geometry(
        u[system.layout.el_dofs], np.asarray(system.el_h), np.asarray(system.qc_phi),
        np.asarray(system.qc_dphi), np.asarray(system.el_qc_ref_norm),
        np.asarray(system.el_qc_r0_m))


def find_contacts(system: FiberSystem, u: np.ndarray, geom=None,
                  extra_pad: np.ndarray | None = None, active_only: bool = True):
    """Fiber-fiber half-pass points (all pairs) at u: active ones (g < 0) or all candidates.
    u (n_h,) (ValueError naming it otherwise)."""
    check_shapes("find_contacts", f"fiber system: n_h = {system.n_h}",
                 {"u": (u, (system.n_h,))})
    lay = system.layout
    if not lay.pairs:
        return contact_fibers.empty_points()
    geom = element_geometry(system, u) if geom is None else geom
    pad = contact_fibers.BOX_RADIUS_FACTOR * np.max(geom.radius, axis=1)
    if extra_pad is not None:
        pad = pad + extra_pad
    passes = [(np.arange(lay.el_first[a], lay.el_first[a + 1]),
               np.arange(lay.el_first[b], lay.el_first[b + 1])) for a, b in lay.pairs]
    pts = contact_fibers.closest_candidates(
        geom, passes, pad, np.asarray(system.el_h), np.asarray(system.el_ref_q),
        np.asarray(system.el_qc_r0_m), np.asarray(system.qc_xi))
    return contact_fibers.select(pts, pts.gap < 0) if active_only else pts


def _fill(system: FiberSystem, z: np.ndarray, u_held: np.ndarray) -> _Iterate:
    lay = system.layout
    n_v = lay.n_v
    q = z[:n_v]
    u = u_held.copy()
    u[lay.free_dofs] = z[n_v:]
    c, att_c, poses, pose_jac = (np.asarray(a) for a in positions_and_jacobians(
        system, jnp.asarray(q)))
    if n_v:
        tied = lay.dep_att >= 0
        u[lay.dep_dofs[tied]] = c[lay.dep_att[tied], lay.dep_comp[tied]]
    return _Iterate(q, u, att_c, poses, pose_jac, find_contacts(system, u))


def _check_admissible(system: FiberSystem, it: _Iterate, ev, time_s, safeguard: bool) -> None:
    hint = inadmissible_hint(safeguard, step=False)
    pts = it.contacts
    if pts.gap.size and system.fiber_law is not None:
        limit = -1.0 / float(system.fiber_law.gamma)
        bad = np.flatnonzero(pts.gap <= limit)
        if bad.size:
            i = bad[np.argmin(pts.gap[bad])]
            fa, ea, tha = _name(system, int(pts.elem_a[i]))
            fb, eb, _ = _name(system, int(pts.elem_b[i]))
            raise InadmissibleContactError(
                f"fiber '{fa}' {_when(time_s)}: contact with fiber '{fb}' (element {eb}) at "
                f"element {ea} ({tha}) has gap g = {pts.gap[i]:.6g} <= -1/gamma = {limit:.6g}: "
                f"the rational penalty is undefined there ({hint})")
    eps = np.asarray(ev.eps_cyl)
    if eps.size and np.any(eps <= 0):
        e, c, k = np.unravel_index(np.argmin(eps), eps.shape)
        cyl = system.cylinders[c]
        f, local, th = _name(system, int(e))
        g = (eps[e, c, k] - 1.0) / float(cyl.gamma)
        raise InadmissibleContactError(
            f"fiber '{f}' {_when(time_s)}: contact with '{cyl.name}' at element {local} "
            f"({th}, point {k}) has gap g = {g:.6g} <= -1/gamma: the rational penalty is "
            f"undefined there ({hint})")


class _Context(NamedTuple):
    q_prev: np.ndarray
    qd_prev: np.ndarray
    u_prev: np.ndarray
    v_prev: np.ndarray
    inv_dt: float
    activation: np.ndarray
    line_force: np.ndarray
    ctrl: np.ndarray
    time_s: float | None


def _evaluate(system, it: _Iterate, ctx: _Context, with_tangent: bool, n_iter: int):
    active = pad_contacts(it.contacts, system.layout.el_first)
    u = jnp.asarray(it.u)
    if system.layout.pairs:
        rho_ff, k_ff, _, ff_scale = fiber_contact_terms(system, u, active)
    else:
        rho_ff, k_ff, ff_scale = jnp.zeros(system.n_h), None, 0.0
    ev = evaluate(system, jnp.asarray(it.q), u, jnp.asarray(ctx.q_prev),
                  jnp.asarray(ctx.qd_prev), jnp.asarray(ctx.u_prev), jnp.asarray(ctx.v_prev),
                  ctx.inv_dt, jnp.asarray(ctx.activation), jnp.asarray(ctx.line_force),
                  jnp.asarray(ctx.ctrl), rho_ff, ff_scale, jnp.asarray(it.poses),
                  jnp.asarray(it.pose_jac), jnp.asarray(it.att_c), with_tangent=with_tangent)
    asm = assemble(system, ev, active, k_ff, with_tangent)
    if not np.all(np.isfinite(asm.residual)):
        bad = np.flatnonzero(np.asarray(ev.element_bad))
        where = "the skeleton" if bad.size == 0 else "fiber '{}' element {} ({})".format(
            *_name(system, int(bad[0])))
        raise FiberDivergenceError(f"fiber system {_when(ctx.time_s)}: non-finite residual at "
                                   f"{where} after {n_iter} Newton iterations")
    return ev, asm


def _worst(system, residual):
    lay = system.layout
    r_h = np.zeros(lay.n_h)
    r_h[lay.free_dofs] = residual[lay.n_v:]
    elem = np.max(np.abs(r_h[lay.el_dofs]), axis=1)
    e = int(np.argmax(elem))
    return e, float(elem[e])


def _converged(system, asm, ev, options) -> tuple[bool, float, float]:
    n_v = system.n_v
    r_s = float(np.max(np.abs(asm.residual[:n_v]), initial=0.0))
    r_f = float(np.max(np.abs(asm.residual[n_v:]), initial=0.0))
    ok_f = r_f <= options.rtol * max(float(ev.fiber_scale), 1e-300)
    ok_s = r_s <= options.rtol * max(float(ev.skeleton_scale), 1e-300) or n_v == 0
    return ok_f and ok_s, r_f, r_s


def _full_update(system, it: _Iterate, dz):
    lay = system.layout
    du = np.zeros(lay.n_h)
    du[lay.free_dofs] = dz[lay.n_v:]
    if lay.n_v:
        tied = lay.dep_att >= 0
        du[lay.dep_dofs[tied]] = np.einsum(
            "nv,v->n", it.att_c[lay.dep_att[tied], lay.dep_comp[tied]], dz[:lay.n_v])
    return du


def _fraction(ok: Callable[[float], np.ndarray], shape, n_bisect: int = 50) -> float:
    """Largest delta in [0, 1] with ok(delta) everywhere (vectorised bisection per entry)."""
    if np.all(ok(1.0)):
        return 1.0
    return float(np.min(admissible_fractions(ok, shape, n_bisect)))


def _tangents(system, u, du, phi, dphi):
    lay = system.layout
    h = np.asarray(system.el_h)
    scale = np.stack([np.ones_like(h), h, np.ones_like(h), h], axis=1)[:, :, None]
    rows = u[lay.el_dofs].reshape(-1, 4, 3) * scale
    drows = du[lay.el_dofs].reshape(-1, 4, 3) * scale
    a1 = np.einsum("kj,ejc->ekc", dphi, rows) / h[:, None, None]
    da1 = np.einsum("kj,ejc->ekc", dphi, drows) / h[:, None, None]
    x = np.einsum("kj,ejc->ekc", phi, rows)
    dx = np.einsum("kj,ejc->ekc", phi, drows)
    return x, dx, a1, da1, rows, drows


def safeguard_fraction(system: FiberSystem, it: _Iterate, dz: np.ndarray,
                       delta_bar: float) -> float:
    """Step fraction delta of Eqs. (69)-(73) for the update dz (see the module docstring)."""
    du = _full_update(system, it, dz)
    qp_phi, qp_dphi = np.asarray(system.qp_phi), np.asarray(system.qp_dphi)
    qc_phi, qc_dphi = np.asarray(system.qc_phi), np.asarray(system.qc_dphi)
    _, _, a1b, da1b, _, _ = _tangents(system, it.u, du, qp_phi, qp_dphi)
    x, dx, a1c, da1c, rows, drows = _tangents(system, it.u, du, qc_phi, qc_dphi)
    a1n, da1n = np.linalg.norm(a1c, axis=-1), np.linalg.norm(da1c, axis=-1)
    norms = np.concatenate([np.linalg.norm(a1b, axis=-1).ravel(), a1n.ravel()])
    dnorms = np.concatenate([np.linalg.norm(da1b, axis=-1).ravel(), da1n.ravel()])
    with np.errstate(divide="ignore"):
        delta = min(1.0, float(np.min(np.where(dnorms > 0, (1 - delta_bar) * norms / dnorms,
                                                 np.inf))))
    r0, refn = np.asarray(system.el_qc_r0_m), np.asarray(system.el_qc_ref_norm)
    # bone cylinders
    lay = system.layout
    if system.cylinders:
        poses = it.poses
        dpose = (np.einsum("cjv,v->cj", it.pose_jac, dz[:lay.n_v]) if lay.n_v
                 else np.zeros((len(system.cylinders), 6)))
        for c, cyl in enumerate(system.cylinders):
            m = lay.cyl_fiber_mask[c]
            d, dxn, a1, da1, s = contact_bones.bound_inputs(poses[c], x[m], dx[m], a1c[m],
                                                            da1c[m])
            dxn = dxn + np.linalg.norm(dpose[c, :3]) + np.abs(s) * np.linalg.norm(dpose[c, 3:])
            args = (d, dxn, a1, da1, r0[m], refn[m], float(cyl.radius_m), float(cyl.gamma))
            target = delta_bar * eps_lower_bound(0.0, *args)
            delta = min(delta, _fraction(lambda t: eps_lower_bound(t, *args) >= target,
                                         d.shape))
    # fiber-fiber
    if lay.pairs:
        geom = element_geometry(system, it.u)
        move = np.max(np.linalg.norm(_bezier(drows), axis=-1), axis=1)
        # radius bound within the step: delta <= delta_stretch, so |a_1| stays above
        # max(|a_1| - delta |d a_1|, delta_bar |a_1|) at every contact point
        with np.errstate(divide="ignore", invalid="ignore"):
            a_low = np.maximum(a1n - delta * da1n, delta_bar * a1n)
            r_step = np.max(r0 * np.sqrt(refn / a_low), axis=1)
        extra = contact_fibers.BOX_RADIUS_FACTOR * np.maximum(
            r_step - np.max(geom.radius, axis=1), 0.0) + move
        pts = find_contacts(system, it.u, geom, extra_pad=extra, active_only=False)
        if pts.elem_a.size:
            ea, k, eb = pts.elem_a, pts.point_k, pts.elem_b
            gamma = float(system.fiber_law.gamma)
            # relative motion bound: |dx_k - dy(xi')| <= max_i |dx_k - dP_i| over the Bezier
            # control-point changes dP_i of the partner element (convex hull property)
            dctrl = _bezier(drows)[eb]  # (p, 4, 3)
            dxk = np.max(np.linalg.norm(dx[ea, k][:, None, :] - dctrl, axis=-1), axis=1)
            amin_b = np.min(a1n[eb], axis=1)
            dmax_b = np.max(da1n[eb], axis=1)
            a_k, da_k, r0_k, rn_k = a1n[ea, k], da1n[ea, k], r0[ea, k], refn[ea, k]

            def bound(t):
                with np.errstate(divide="ignore", invalid="ignore"):
                    chi_a = r0_k * np.sqrt(rn_k / (a_k - t * da_k))
                    chi_b = pts.r_y * np.sqrt(amin_b / (amin_b - t * dmax_b))
                    e = 1.0 + gamma * ((pts.distance - t * dxk) / (chi_a + chi_b) - 1.0)
                valid = (a_k - t * da_k > 0) & (amin_b - t * dmax_b > 0) & np.isfinite(e)
                return np.where(valid, e, -np.inf)

            target = delta_bar * bound(0.0)
            delta = min(delta, _fraction(lambda t: bound(t) >= target, ea.shape))
    return delta


def _bezier(rows):
    y1, y2, y3, y4 = (rows[:, i, :] for i in range(4))
    return np.stack([y1, y1 + y2 / 3.0, y3 - y4 / 3.0, y3], axis=1)


def _newton(system: FiberSystem, z0: np.ndarray, u_held: np.ndarray, ctx: _Context,
            options: NewtonOptions, predictor: np.ndarray | None = None):
    z = np.array(z0, dtype=np.float64)
    min_delta = 1.0
    it = _fill(system, z, u_held)
    if predictor is not None and np.any(predictor):
        frac = safeguard_fraction(system, it, predictor, options.delta_bar) \
            if options.safeguard else 1.0
        z = z + frac * predictor
        it = _fill(system, z, u_held)
    ev, asm = _evaluate(system, it, ctx, True, 0)
    _check_admissible(system, it, ev, ctx.time_s, options.safeguard)
    r_f = r_s = np.inf
    for n_iter in range(options.max_iter + 1):
        done, r_f, r_s = _converged(system, asm, ev, options)
        if done:
            return z, it, ev, SystemInfo(n_iter, r_f, r_s, min_delta, len(it.contacts.gap),
                                         _end_forces(system, ev))
        if n_iter == options.max_iter:
            break
        try:
            dz = spla.splu(asm.tangent).solve(-asm.residual)
        except RuntimeError as exc:
            e, res_e = _worst(system, asm.residual)
            f, local, th = _name(system, e)
            raise FiberNewtonError(
                f"fiber '{f}' {_when(ctx.time_s)}: singular Newton tangent ({exc}); largest "
                f"residual {res_e:.3e} N at element {local} ({th})", ctx.time_s, f, local,
                res_e) from None
        if not np.all(np.isfinite(dz)):
            e, _ = _worst(system, asm.residual)
            f, local, th = _name(system, e)
            raise FiberDivergenceError(f"fiber '{f}' {_when(ctx.time_s)}: non-finite Newton "
                                       f"update near element {local} ({th}) at iteration "
                                       f"{n_iter + 1}")
        delta = safeguard_fraction(system, it, dz, options.delta_bar) \
            if options.safeguard else 1.0
        if delta == 1.0 and np.max(np.abs(dz)) <= options.xtol * (1 + np.max(np.abs(z))):
            z = z + dz
            it = _fill(system, z, u_held)
            ev, asm = _evaluate(system, it, ctx, True, n_iter + 1)
            return z, it, ev, SystemInfo(n_iter + 1, r_f, r_s, min_delta,
                                         len(it.contacts.gap), _end_forces(system, ev))
        merit = float(np.linalg.norm(asm.residual))
        for k in range(options.max_backtrack + 1):
            z_try = z + delta * dz
            it_try = _fill(system, z_try, u_held)
            # the first trial is usually accepted: evaluate its tangent at once
            ev_try, asm_try = _evaluate(system, it_try, ctx, k == 0, n_iter + 1)
            if not options.safeguard:
                _check_admissible(system, it_try, ev_try, ctx.time_s, options.safeguard)
            if (np.linalg.norm(asm_try.residual) <= (1.0 - 1e-4 * delta) * merit
                    or not options.line_search or k == options.max_backtrack):
                break
            delta *= 0.5
        min_delta = min(min_delta, delta)
        z, it = z_try, it_try
        ev, asm = (ev_try, asm_try) if k == 0 else _evaluate(system, it, ctx, True, n_iter + 1)
        _check_admissible(system, it, ev, ctx.time_s, options.safeguard)
    e, res_e = _worst(system, asm.residual)
    f, local, th = _name(system, e)
    raise FiberNewtonError(
        f"fiber '{f}' {_when(ctx.time_s)}: Newton did not converge in {options.max_iter} "
        f"iterations; largest residual {res_e:.3e} N at element {local} ({th}); tolerance "
        f"{options.rtol * float(ev.fiber_scale):.3e} N; skeleton residual {r_s:.3e} "
        f"(smallest step fraction {min_delta:.3g})", ctx.time_s, f, local, res_e)


def _end_forces(system, ev) -> np.ndarray:
    lay = system.layout
    out = np.zeros((lay.att_body.size, 3))
    tied = lay.dep_att >= 0
    rho = np.asarray(ev.rho_h)
    out[lay.dep_att[tied], lay.dep_comp[tied]] = -rho[lay.dep_dofs[tied]]
    return out


def _check_state(system, state) -> None:
    """ValueError naming the field unless q, qd (n_v,) and u, v (n_h,) fit and are finite."""
    for name, value, shape in (("state.q", state.q, (system.n_v,)),
                               ("state.qd", state.qd, (system.n_v,)),
                               ("state.u", state.u, (system.n_h,)),
                               ("state.v", state.v, (system.n_h,))):
        if np.shape(value) != shape:
            raise ValueError(f"fiber system: {name} has shape {np.shape(value)}, expected "
                             f"{shape}")
        check_finite("fiber system", name, value)


def _context(system, state, loads, inv_dt, time_s):
    lay = system.layout
    act = np.asarray(loads.activation, dtype=np.float64).reshape(-1)
    if act.shape != (system.n_fiber,):
        raise ValueError(f"fiber system: activation must have shape ({system.n_fiber},), got "
                         f"{act.shape}")
    check_unit_activation("fiber system", act)
    _check_state(system, state)
    n_u = 0 if system.skeleton is None else system.skeleton.n_u
    if loads.ctrl is not None and np.shape(loads.ctrl) != (n_u,):
        raise ValueError(f"fiber system: ctrl has shape {np.shape(loads.ctrl)}, expected "
                         f"{(n_u,)}")
    n_e, n_qp = lay.el_dofs.shape[0], system.qp_w.shape[0]
    line = np.zeros((n_e, n_qp, 3)) if loads.line_force is None else np.asarray(
        loads.line_force, dtype=np.float64)
    if line.shape != (n_e, n_qp, 3):
        raise ValueError(f"fiber system: line_force must have shape ({n_e}, {n_qp}, 3), got "
                         f"{line.shape}")
    check_finite("fiber system", "line_force", line)
    ctrl = np.zeros(n_u) if loads.ctrl is None else np.asarray(loads.ctrl, np.float64)
    check_finite("fiber system", "ctrl", ctrl)
    return _Context(np.asarray(state.q, float), np.asarray(state.qd, float),
                    np.asarray(state.u, float), np.asarray(state.v, float), float(inv_dt), act,
                    line, ctrl, time_s)


def _z(system, q, u):
    return np.concatenate([np.asarray(q, float), np.asarray(u, float)[system.layout.free_dofs]])


def step(system: FiberSystem, state: SystemState, time_s: float, dt_s: float,
         loads: SystemLoads, options: NewtonOptions = NewtonOptions()
         ) -> tuple[SystemState, SystemInfo]:
    """One backward-Euler step (Eq. 64) from `state` to t = time_s (loads at time_s).

    Refused with a ValueError naming the field: a time_s that is not a finite number, a dt_s
    that is not a finite number > 0, a state or loads of the wrong shape or not finite."""
    check_seconds("fiber system", "time_s", time_s)
    dt_s = check_seconds("fiber system", "dt_s", dt_s, positive=True)
    ctx = _context(system, state, loads, 1.0 / dt_s, time_s)
    z0 = _z(system, state.q, state.u)
    pred = dt_s * _z(system, state.qd, state.v)
    z, it, _, info = _newton(system, z0, ctx.u_prev, ctx, options, predictor=pred)
    qd = (it.q - ctx.q_prev) / dt_s
    v = (it.u - ctx.u_prev) / dt_s
    return SystemState(it.q, qd, it.u, v), info


def solve_static(system: FiberSystem, state: SystemState, loads: SystemLoads,
                 options: NewtonOptions = NewtonOptions()) -> tuple[SystemState, SystemInfo]:
    """Static equilibrium from `state` (needs a regular tangent there, e.g. taut fibers)."""
    ctx = _context(system, state, loads, 0.0, None)
    ctx = ctx._replace(qd_prev=np.zeros_like(ctx.qd_prev), v_prev=np.zeros_like(ctx.v_prev))
    z, it, _, info = _newton(system, _z(system, state.q, state.u), ctx.u_prev, ctx, options)
    return SystemState(it.q, np.zeros_like(it.q), it.u, np.zeros_like(it.u)), info


class SystemTrajectory(NamedTuple):
    """t (n+1,), q and qd (n+1, n_v); u, v (m, n_h) recorded at the steps u_steps (m,); Newton
    iterations per step (n,) (summed over substeps); end forces (n+1, n_att, 3) (zeros at t0);
    active fiber-fiber points (n,); substeps (n,) (1 unless a step was split)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    u_steps: np.ndarray
    u: np.ndarray
    v: np.ndarray
    newton_iterations: np.ndarray
    end_forces_N: np.ndarray
    n_fiber_contacts: np.ndarray
    substeps: np.ndarray


def _advance(system, state, time_s, dt_s, loads_at, options, halvings):
    """One step of size dt_s ending at time_s; on a Newton failure, two half steps (recursively,
    at most `halvings` times). Returns (state, info, number of substeps)."""
    try:
        new, info = step(system, state, time_s, dt_s, loads_at(time_s), options)
        return new, info, 1
    except (FiberNewtonError, FiberDivergenceError):
        if halvings <= 0:
            raise
    half = 0.5 * dt_s
    mid, info1, n1 = _advance(system, state, time_s - half, half, loads_at, options,
                              halvings - 1)
    new, info2, n2 = _advance(system, mid, time_s, half, loads_at, options, halvings - 1)
    info = info2._replace(n_iter=info1.n_iter + info2.n_iter,
                          min_delta=min(info1.min_delta, info2.min_delta))
    return new, info, n1 + n2


def simulate(system: FiberSystem, state0: SystemState, t0_s: float, dt_s: float, n_steps: int,
             loads_at: Callable[[float], SystemLoads], options: NewtonOptions = NewtonOptions(),
             record_every: int = 1, max_halvings: int = 4) -> SystemTrajectory:
    """n_steps backward-Euler steps; fiber dofs recorded every `record_every` steps (and last).

    A step whose Newton iteration fails is retried as two half steps, recursively up to
    `max_halvings` times (our addition; the seed uses a fixed step); the last failure is raised.
    t0_s must be a finite number, dt_s a finite number > 0, record_every an integer >= 1,
    max_halvings an integer >= 0 and state0 fit the system (ValueError naming the field).
    """
    check_step_count("fiber simulate_system", n_steps)
    t0_s = check_seconds("fiber system", "t0_s", t0_s)
    dt_s = check_seconds("fiber system", "dt_s", dt_s, positive=True)
    for name, value, low in (("record_every", record_every, 1),
                             ("max_halvings", max_halvings, 0)):
        if not is_integer(value) or value < low:
            raise ValueError(f"fiber simulate_system: {name} must be an integer >= {low}, got "
                             f"{value!r}")
    _check_state(system, state0)
    t = t0_s + dt_s * np.arange(n_steps + 1)
    n_v = system.n_v
    q, qd = np.empty((n_steps + 1, n_v)), np.empty((n_steps + 1, n_v))
    forces = np.zeros((n_steps + 1, system.layout.att_body.size, 3))
    iters = np.zeros(n_steps, int)
    contacts = np.zeros(n_steps, int)
    substeps = np.ones(n_steps, int)
    rec = sorted(set(range(0, n_steps + 1, record_every)) | {n_steps})
    us, vs = [], []
    state = SystemState(*(np.asarray(a, float) for a in state0))
    q[0], qd[0] = state.q, state.qd
    if 0 in rec:
        us.append(state.u)
        vs.append(state.v)
    for n in range(n_steps):
        state, info, substeps[n] = _advance(system, state, float(t[n + 1]), dt_s, loads_at,
                                            options, max_halvings)
        q[n + 1], qd[n + 1] = state.q, state.qd
        iters[n], contacts[n] = info.n_iter, info.n_fiber_contacts
        forces[n + 1] = info.end_forces_N
        if n + 1 in rec:
            us.append(state.u)
            vs.append(state.v)
    return SystemTrajectory(t, q, qd, np.asarray(rec), np.asarray(us), np.asarray(vs), iters,
                            forces, contacts, substeps)
