"""`fiber-upper-limb`: biceps and triceps fibers moving a forearm (Gfrerer & Simeon 2021,
Sec. 5.4, Figs. 8-13).

Three rigid bodies (engine `ModelBuilder`): the upper arm (fixed), the forearm on one revolute
joint (hinge about -y, so the angle is elbow flexion) and an elbow wrapping cylinder fixed to
the upper arm. Five fibers: biceps (2) and triceps (3), lying almost in parallel, each end tied
to a body point (Eq. 49, eliminated as Eqs. 58-64). Radius and muscle fraction (Eq. 77):
r_0(theta) = r_0 (1 + 16 (1-theta)^2 theta^2), gamma_M = 16 (1-theta)^2 theta^2. Activations
(Eq. 78): alpha_bi = 0.0704 tanh(pi t) + 0.0608 sin(pi t), alpha_tri = 0.008 (1 - cos pi t).
Contacts: biceps-biceps and triceps-triceps (two half-passes each), triceps on the wrapping
cylinder. Gravity acts on the forearm and on the fibers. Backward Euler, dt = 0.01 s.

Each discretisation's trajectory is written to DIR (run_<n>el_<T>s_dt<dt>.npz) as soon as it
ends, and a rerun with the same DIR loads the finished ones instead of recomputing them: the
full study takes hours, so it resumes where it stopped.

Table 4 is not in our copy; every value below is documented with its source in docs/fiber.md
(geometry and forearm inertia: OpenSim arm26, Holzbaur et al. 2005; material: the Table-1
proxies of gsElasticity; prestress, viscosity and penalty: our choices).
"""

from __future__ import annotations

import math
import pathlib
import time

import jax.numpy as jnp
import numpy as np

from myotwin import engine, fiber
from myotwin.fiber import system as fsys
from myotwin.fiber import system_stepping as ss
from myotwin.fiber.contact_bones import make_bone_cylinder
from myotwin.fiber.contact_fibers import make_fiber_contact_law
from myotwin.fiber.system_assembly import axial_forces
from myotwin.repro.output import prepare_output, pyplot, write_summary

# --- skeleton (OpenSim arm26: r_ulna_radius_hand mass, COM, inertia; TRI wrap cylinder) ---
ELBOW_M = (0.0, 0.0, -0.29)                 # elbow centre below the shoulder (arm26: 0.2904 m)
FOREARM_MASS_KG = 1.534315
FOREARM_COM_M = (0.0, 0.0, -0.181479)
FOREARM_INERTIA = (0.019281, 0.020062, 0.001571)  # about the COM; flexion axis is y here
WRAP_RADIUS_M = 0.016
# --- fibers ---
R0_M = 0.006                                # tendon radius; the belly has 2 r_0 (Eq. 77)
RHO_KG_M3 = 1060.0                          # skeletal muscle density (Mendez & Keys 1960)
SIGMA0_PA = 2.0e4                           # prestress (choice, see docs)
BICEPS = dict(origin=(0.03, 0.0, -0.02), insertion_local=(0.025, 0.0, -0.05), y=(-0.008, 0.008),
              bulge_x=0.010, bulge_y=0.005)
TRICEPS = dict(origin=(-0.03, 0.0, -0.05), insertion_local=(-0.022, 0.0, 0.01),
               y=(-0.013, 0.0, 0.013), bulge_x=-0.010, bulge_y=0.011)
KAPPA_N_PER_M, GAMMA = 2.0e4, 10.0
DT_S = 0.01

QUICK = dict(elements=(3, 6), duration_s=0.4)
FULL = dict(elements=(40, 80, 160, 320), duration_s=8.0)


def alpha_biceps(t):
    return 0.0704 * np.tanh(np.pi * t) + 0.0608 * np.sin(np.pi * t)


def alpha_triceps(t):
    return 0.008 * (1.0 - np.cos(np.pi * t))


def skeleton() -> tuple[engine.Model, dict]:
    b = engine.ModelBuilder("upper_limb", gravity=(0, 0, -9.81), contact=False)
    b.add_body("humerus", pos=(0, 0, 0), mass=1.864572, com=(0, 0, -0.180496),
               inertia=(0.01481, 0.013193, 0.004551))
    b.add_body("forearm", "humerus", pos=ELBOW_M, mass=FOREARM_MASS_KG, com=FOREARM_COM_M,
               inertia=FOREARM_INERTIA)
    b.add_joint("forearm", "hinge", name="elbow", axis=(0, -1, 0))
    b.add_body("wrap", "humerus", pos=ELBOW_M, mass=0.05, com=(0, 0, 0),
               inertia=(1e-5, 1e-5, 1e-5))
    ids = {name: int(b.mj_model().body(name).id) for name in ("humerus", "forearm", "wrap")}
    return b.build(), ids


def _bulge(theta):
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def _fiber_reference(origin, insertion, dy, bulge_x, bulge_y):
    p0 = jnp.asarray(origin, jnp.float64) + jnp.array([0.0, dy, 0.0])
    p1 = jnp.asarray(insertion, jnp.float64) + jnp.array([0.0, dy, 0.0])
    side = 0.0 if dy == 0 else math.copysign(1.0, dy)

    def x(theta):
        return p0 + theta * (p1 - p0) + _bulge(theta) * jnp.array([bulge_x, side * bulge_y, 0.0])

    return x


def build(n_elements: int):
    """Compile the upper limb with `n_elements` per fiber: (system, body ids)."""
    model, ids = skeleton()
    elbow = np.asarray(ELBOW_M)
    mat = fiber.table1_material(sigma0_Pa=SIGMA0_PA)
    fibers, attachments = [], []
    for muscle, spec in (("biceps", BICEPS), ("triceps", TRICEPS)):
        insertion = elbow + np.asarray(spec["insertion_local"])
        for i, dy in enumerate(spec["y"]):
            name = f"{muscle}{i + 1}"
            ref = _fiber_reference(spec["origin"], insertion, dy, spec["bulge_x"],
                                   spec["bulge_y"])
            fibers.append(fiber.compile_fiber(
                ref, n_elements, r0_m=lambda t: R0_M * (1.0 + _bulge(t)), gamma_m=_bulge,
                material=mat, rho_kg_m3=RHO_KG_M3, name=name))
            attachments += [fsys.Attachment(name, 0, ids["humerus"]),
                            fsys.Attachment(name, 1, ids["forearm"])]
    wrap = make_bone_cylinder((0, 0, 0), (0, 1, 0), WRAP_RADIUS_M, KAPPA_N_PER_M, GAMMA,
                              body=ids["wrap"], name="elbow-wrap")
    system = fsys.compile_system(
        fibers, skeleton=model, attachments=attachments,
        cylinders=[(wrap, ["triceps1", "triceps2", "triceps3"])],
        fiber_pairs=[("biceps1", "biceps2"), ("triceps1", "triceps2"),
                     ("triceps2", "triceps3"), ("triceps1", "triceps3")],
        fiber_law=make_fiber_contact_law(KAPPA_N_PER_M, GAMMA))
    return system, ids


def loads_at(system: fsys.FiberSystem):
    """t -> SystemLoads: Eq. (78) activations (biceps1-2, triceps1-3) and the fibers' weight."""
    weight = RHO_KG_M3 * math.pi * np.asarray(system.el_qp_r0_m) ** 2
    line = weight[..., None] * np.array([0.0, 0.0, -9.81])

    def at(t: float) -> ss.SystemLoads:
        act = np.array([alpha_biceps(t)] * 2 + [alpha_triceps(t)] * 3)
        return ss.SystemLoads(act, line)

    return at


def simulate(n_elements: int, duration_s: float, record_every: int = 50):
    system, ids = build(n_elements)
    state = ss.SystemState(*fsys.initial_state(system))
    n = int(round(duration_s / DT_S))
    t0 = time.perf_counter()
    traj = ss.simulate(system, state, 0.0, DT_S, n, loads_at(system),
                       record_every=record_every)
    return system, traj, time.perf_counter() - t0


def _checkpoint_path(out_dir: pathlib.Path, n_elements: int, duration_s: float) -> pathlib.Path:
    return out_dir / f"run_{n_elements}el_{duration_s:g}s_dt{DT_S:g}.npz"


def _checkpointed(out_dir: pathlib.Path, n_elements: int, duration_s: float):
    """`simulate(n_elements, duration_s)`, its trajectory written to out_dir as soon as it
    ends; a run whose file already exists (same elements, end time and step) is loaded instead
    of recomputed, so a long study (the full size takes hours) resumes where it stopped."""
    path = _checkpoint_path(out_dir, n_elements, duration_s)
    if path.exists():
        with np.load(path) as data:
            traj = ss.SystemTrajectory(**{f: data[f] for f in ss.SystemTrajectory._fields})
            wall = float(data["wall_time_s"])
        return build(n_elements)[0], traj, wall
    system, traj, wall = simulate(n_elements, duration_s)
    tmp = path.with_suffix(".partial.npz")
    np.savez(tmp, wall_time_s=wall, **{f: np.asarray(getattr(traj, f))
                                       for f in ss.SystemTrajectory._fields})
    tmp.replace(path)  # complete files only: an interrupted write leaves no checkpoint
    return system, traj, wall


def _axial(system, traj, i, t):
    act = np.array([alpha_biceps(t)] * 2 + [alpha_triceps(t)] * 3)
    return np.asarray(axial_forces(system, jnp.asarray(traj.u[i]), jnp.asarray(traj.v[i]),
                                   jnp.asarray(act)))


def _plot(out_dir, runs, finest):
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 4))
    tt = np.linspace(0, max(r[1].t[-1] for r in runs.values()), 400)
    ax.plot(tt, alpha_biceps(tt), label="biceps")
    ax.plot(tt, alpha_triceps(tt), label="triceps")
    ax.set(xlabel="t (s)", ylabel="activation", title="Fig. 9: activations (Eq. 78)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "fig9_activation.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for n, (system, traj, _) in runs.items():
        ax.plot(traj.t, np.degrees(traj.q[:, 0]), label=f"{n} el./fiber")
    ax.set(xlabel="t (s)", ylabel="elbow flexion (deg)", title="Fig. 10: forearm angle")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "fig10_forearm_angle.png", dpi=120)
    plt.close(fig)

    system, traj, _ = runs[finest]
    lay = system.layout
    fig, ax = plt.subplots(figsize=(7, 4))
    for f_idx, label in ((0, "biceps1"), (2, "triceps1")):
        a = int(np.flatnonzero((lay.att_fiber == f_idx) & (lay.att_end == 0))[0])
        ax.plot(traj.t, np.linalg.norm(traj.end_forces_N[:, a], axis=1), label=label)
    ax.set(xlabel="t (s)", ylabel="force at the upper-arm attachment (N)",
           title="Fig. 11: fiber end forces")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "fig11_end_forces.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [len(traj.u_steps) // 2, len(traj.u_steps) - 1]
    for i in steps:
        t = float(traj.t[traj.u_steps[i]])
        n_ax = _axial(system, traj, i, t)
        for f_idx, style in ((0, "-"), (2, "--")):
            sl = slice(lay.el_first[f_idx], lay.el_first[f_idx + 1])
            theta = np.asarray(system.fibers[f_idx].qp_theta).reshape(-1)
            ax.plot(theta, n_ax[sl].reshape(-1), style,
                    label=f"{lay.fiber_names[f_idx]}, t = {t:.2f} s")
    ax.set(xlabel="theta", ylabel="axial force N (N)", title="Fig. 12: forces along the fibers")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "fig12_forces_along.png", dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(1, 4, figsize=(14, 4.5), sharey=True)
    picks = np.linspace(0, len(traj.u_steps) - 1, 4).astype(int)
    theta = np.linspace(0, 1, 101)
    for ax, i in zip(axes, picks):
        k = int(traj.u_steps[i])
        for f_idx in range(system.n_fiber):
            x, _ = fiber.evaluate(system.fiber_dofs(traj.u[i], f_idx),
                                  system.fibers[f_idx].node_theta, theta)
            ax.plot(x[:, 0], x[:, 2], color="tab:red" if f_idx < 2 else "tab:blue", lw=1.5)
        phi = traj.q[k, 0]
        elbow = np.asarray(ELBOW_M)
        hand = elbow + 0.25 * np.array([math.sin(phi), 0, -math.cos(phi)])
        ax.plot([0, elbow[0]], [0, elbow[2]], "k-", lw=4, alpha=0.3)
        ax.plot([elbow[0], hand[0]], [elbow[2], hand[2]], "k-", lw=4, alpha=0.3)
        c = np.linspace(0, 2 * np.pi, 60)
        ax.plot(elbow[0] + WRAP_RADIUS_M * np.cos(c), elbow[2] + WRAP_RADIUS_M * np.sin(c),
                "k-", lw=0.8)
        ax.set(aspect="equal", xlabel="x (m)", title=f"t = {traj.t[k]:.2f} s",
               xlim=(-0.15, 0.25))
    axes[0].set_ylabel("z (m)")
    fig.suptitle("Fig. 13: snapshots (biceps red, triceps blue; side view)")
    fig.tight_layout()
    fig.savefig(out_dir / "fig13_snapshots.png", dpi=120)
    plt.close(fig)


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Sec. 5.4; writes figures 9-13 and summary.json."""
    cfg = QUICK if quick else FULL
    return study(out_dir, cfg["elements"], cfg["duration_s"], quick=quick)


def study(out_dir: pathlib.Path, elements, duration_s: float, quick: bool = False) -> dict:
    """The Sec. 5.4 study for the given elements per fiber and end time (`run` uses FULL/QUICK).
    """
    out_dir = prepare_output(out_dir)
    cfg = dict(elements=tuple(elements), duration_s=float(duration_s))
    runs = {}
    for n in cfg["elements"]:
        runs[n] = _checkpointed(out_dir, n, cfg["duration_s"])
    finest = max(runs)
    angles = {n: np.degrees(r[1].q[:, 0]) for n, r in runs.items()}
    diff = max(float(np.max(np.abs(angles[n] - angles[finest]))) for n in runs)
    iters = np.concatenate([r[1].newton_iterations for r in runs.values()])
    _plot(out_dir, runs, finest)
    summary = {
        "max_angle_diff_deg": diff,
        "wall_time_s": {str(n): r[2] for n, r in runs.items()},
        "newton_iterations_mean": float(iters.mean()),
        "newton_iterations_mean_by_elements": {
            str(n): float(r[1].newton_iterations.mean()) for n, r in runs.items()},
        "dofs": {str(n): int(r[0].n_v + r[0].layout.free_dofs.size) for n, r in runs.items()},
        "angle_range_deg": {str(n): [float(a.min()), float(a.max())] for n, a in
                            angles.items()},
        "max_fiber_contact_points": {str(n): int(r[1].n_fiber_contacts.max())
                                     for n, r in runs.items()},
        "split_steps": {str(n): int(np.sum(r[1].substeps > 1)) for n, r in runs.items()},
        "dt_s": DT_S, "duration_s": cfg["duration_s"], "quick": bool(quick),
    }
    write_summary(out_dir, summary)
    return summary
