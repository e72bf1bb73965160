"""`fiber-fiber`: two crossing fibers in contact (Gfrerer & Simeon 2021, Sec. 5.3, Figs. 6-7).

The seed presses an upper fiber onto a lower one with the line load b_z = -5000 N/m and studies
the convergence of the vertical displacement u_z(0.5) at the middle of the upper fiber, relative
to its finest discretisation. Its Table 3 is not in our copy; our setup (docs/fiber.md):

  fibers   "upper" X = (theta, 0, 0) m and "lower" X = (0.5, theta - 0.5, -0.15) m (crossing
           at right angles, 5 cm clearance between the surfaces), r_0 = 0.05 m, homogeneous
           tendon-like material (gamma_M = 0: mu = 1e6 Pa, eta = 1e4 Pa s of the Table-1 proxy),
           rho = 1000 kg/m^3; both ends pinned after a 5 % pre-stretch (the fibers are taut, so
           the static problem is regular); bulk quadrature 4, contact quadrature 5 points
  contact  two half-passes, kappa = 1e6 N/m, gamma = 10
  load     b = (0, 0, -5000) N per reference metre on the upper fiber

Solution: for every discretisation the load is ramped smoothly over 0.3 s and backward Euler
(dt = 0.01 s) relaxes the fibers for 0.6 s (a coarse mesh cannot start from a finer mesh's
shape: its interpolant may already penetrate past the barrier); the static equilibrium is then
solved from there with the safeguarded Newton. Element counts are odd (5, 9, 17, 33, 65;
reference 129; quick 5, 9, 17, reference 33) so that the crossing lies inside an element: with
a node exactly at the crossing every closest point sits on that node, where the closest-point
map of C1 Hermite elements has a kink (y'' jumps), and Newton cycles. errors_by_elements[n] = |u_z^n(0.5) -
u_z^ref(0.5)| in m (relative errors in `relative_errors`).
"""

from __future__ import annotations

import pathlib

import numpy as np

from myotwin import fiber
from myotwin.fiber import system as fsys
from myotwin.fiber import system_stepping as ss
from myotwin.fiber.contact_fibers import make_fiber_contact_law
from myotwin.repro.output import prepare_output, pyplot, write_summary

R0_M = 0.05
RHO_KG_M3 = 1000.0
LINE_LOAD_N_PER_M = -5000.0
PRESTRETCH = 1.05
GAP_Z_M = -0.15
KAPPA_N_PER_M, GAMMA = 1.0e6, 10.0
RAMP_S, RELAX_S, RELAX_DT_S = 0.4, 0.6, 0.02

QUICK = dict(elements=(4, 8), reference=16)
FULL = dict(elements=(4, 8, 16, 32, 64), reference=128)


def build(n_elements: int) -> fsys.FiberSystem:
    mat = fiber.table1_material()
    upper = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), n_elements,
                                r0_m=R0_M, gamma_m=0.0, material=mat, rho_kg_m3=RHO_KG_M3,
                                name="upper")
    lower = fiber.compile_fiber(
        fiber.straight_reference([0.0, 0.0, GAP_Z_M], [1.0, 0.0, GAP_Z_M]), n_elements,
        r0_m=R0_M, gamma_m=0.0, material=mat, rho_kg_m3=RHO_KG_M3, name="lower")
    return fsys.compile_system([upper, lower], fiber_pairs=[("upper", "lower")],
                               fiber_law=make_fiber_contact_law(KAPPA_N_PER_M, GAMMA))


def prestretched_state(system: fsys.FiberSystem) -> ss.SystemState:
    """Rest state with every fiber stretched by PRESTRETCH about its midpoint (ends pinned)."""
    q, qd, u, v = fsys.initial_state(system)
    u = u.copy()
    for f in range(system.n_fiber):
        o0, o1 = system.layout.fiber_offset[f], system.layout.fiber_offset[f + 1]
        nodes = u[o0:o1].reshape(-1, 6)
        mid = 0.5 * (nodes[0, :3] + nodes[-1, :3])
        nodes[:, :3] = mid + PRESTRETCH * (nodes[:, :3] - mid)
        nodes[:, 3:] *= PRESTRETCH
    return ss.SystemState(q, qd, u, v)


def loads(system: fsys.FiberSystem, scale: float) -> ss.SystemLoads:
    lay = system.layout
    line = np.zeros((lay.el_dofs.shape[0], system.qp_w.shape[0], 3))
    line[lay.el_first[0]:lay.el_first[1], :, 2] = LINE_LOAD_N_PER_M * scale
    return ss.SystemLoads(np.zeros(system.n_fiber), line)


def _ramp(t: float) -> float:
    s = min(t / RAMP_S, 1.0)
    return s * s * (3.0 - 2.0 * s)


def mid_displacement(system: fsys.FiberSystem, u) -> float:
    """u_z(0.5) of the upper fiber (m)."""
    x, _ = fiber.evaluate(system.fiber_dofs(u, 0), system.fibers[0].node_theta, [0.5])
    return float(x[0, 2])


def solve(n_elements: int):
    """Dynamic relaxation under the ramped load, then the static equilibrium from there."""
    system = build(n_elements)
    state = prestretched_state(system)
    n = int(round(RELAX_S / RELAX_DT_S))
    traj = ss.simulate(system, state, 0.0, RELAX_DT_S, n, lambda t: loads(system, _ramp(t)),
                       record_every=n)
    relaxed = ss.SystemState(state.q, state.qd, traj.u[-1], np.zeros_like(state.v))
    out, info = ss.solve_static(system, relaxed, loads(system, 1.0))
    return system, out.u, info, traj


def _plot(out_dir, system, u0, u, ns, errors):
    plt = pyplot()

    fig = plt.figure(figsize=(12, 4.5))
    theta = np.linspace(0, 1, 401)
    for i, (uu, title) in enumerate(((u0, "(a) initial"), (u, "(b) deformed, b_z = -5000 N/m"))):
        ax = fig.add_subplot(1, 3, i + 1, projection="3d")
        for f, color in ((0, "tab:red"), (1, "tab:blue")):
            x, xt = fiber.evaluate(system.fiber_dofs(uu, f), system.fibers[f].node_theta, theta)
            ax.plot(x[:, 0], x[:, 1], x[:, 2], color=color, lw=2,
                    label=system.fibers[f].name)
        ax.set(xlabel="x (m)", ylabel="y (m)", zlabel="z (m)", title=title, zlim=(-0.45, 0.05))
        ax.legend(fontsize=8)
    ax = fig.add_subplot(1, 3, 3)
    ax.loglog(ns, errors, "o-")
    ax.set(xlabel="elements per fiber", ylabel=r"$|u_z^h(0.5) - u_z^{ref}(0.5)|$ (m)",
           title="Fig. 7: convergence")
    fig.tight_layout()
    fig.savefig(out_dir / "fig6_7_fiber_fiber.png", dpi=120)
    plt.close(fig)


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Sec. 5.3 study; writes fig6_7_fiber_fiber.png and summary.json."""
    out_dir = prepare_output(out_dir)
    cfg = QUICK if quick else FULL
    ref_sys, ref_u, ref_info, ref_traj = solve(cfg["reference"])
    u_ref = mid_displacement(ref_sys, ref_u)
    values, errors, iters = {}, {}, [ref_info.n_iter]
    relax_iters = [ref_traj.newton_iterations]
    for n_el in cfg["elements"]:
        system, u, info, traj = solve(n_el)
        values[str(n_el)] = mid_displacement(system, u)
        errors[str(n_el)] = abs(values[str(n_el)] - u_ref)
        iters.append(info.n_iter)
        relax_iters.append(traj.newton_iterations)
    n = int(round(RELAX_S / RELAX_DT_S))
    ns = list(cfg["elements"])
    _plot(out_dir, ref_sys, prestretched_state(ref_sys).u, ref_u, ns,
          [errors[str(n)] for n in ns])
    contacts = ss.find_contacts(ref_sys, ref_u)
    summary = {
        "errors_by_elements": errors,
        "relative_errors": {k: v / abs(u_ref) for k, v in errors.items()},
        "u_z_mid_m": values,
        "reference": {"n_elements": cfg["reference"], "u_z_mid_m": u_ref,
                      "min_gap": float(contacts.gap.min()) if contacts.gap.size else None,
                      "active_contact_points": int(contacts.gap.size)},
        "relaxation": {"steps": n, "newton_iterations_mean":
                       float(np.mean(np.concatenate(relax_iters)))},
        "static_newton_iterations_mean": float(np.mean(iters)),
        "quick": bool(quick),
        "setup": {"r0_m": R0_M, "rho_kg_m3": RHO_KG_M3, "gamma_m": 0.0,
                  "line_load_N_per_m": LINE_LOAD_N_PER_M, "prestretch": PRESTRETCH,
                  "lower_fiber_z_m": GAP_Z_M, "kappa_N_per_m": KAPPA_N_PER_M, "gamma": GAMMA,
                  "material": "table1_material()", "n_qp_bulk": 4, "n_qp_contact": 5},
    }
    write_summary(out_dir, summary)
    return summary
