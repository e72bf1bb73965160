"""`finger-flick`: inertial flexors stabilise a flicked index finger (Wang et al. 2022 §4.4).

Seed §4.4: an index finger (MCP, PIP, DIP hinges) with FDP and FDS as Type II paths of 200 g
each; "With a fixed time step of 1 ms, we apply different amounts of force for the first two
time steps of the simulation, to model flicking the fingertip with the other hand. With the
traditional approach, the simulation becomes unstable when the force is increased to 5 N,
whereas with our approach, the simulation becomes unstable when the force is increased to
20 N." The model is `myotwin.models.finger` (docs/models.md); "traditional" = the same model
with massless muscles (`muscle_mass = None`: the muscle mass absorbed by the fixed forearm).

Flick (the seed leaves the details open; choices):
  * a force of magnitude F on the fingertip site, along the distal phalanx's dorsal axis (+z of
    the `distal` body: the outward normal of the pad is -z, so a blow on the pad pushes
    dorsally), held for the first two steps of 1 ms; applied as the generalized force
    J_tip(q_k)^T F n(q_k) (the engine's `qfrc_applied`), converted at the start of each step
    and held over it -- MuJoCo's own treatment of `xfrc_applied`, here at the fingertip site
    instead of the body's COM;
  * from the rest posture `finger.Q_REST` at rest, gravity off (the flick lasts 2 ms and the
    response tens of ms; the finger weighs 0.2 N; without gravity Q_REST, the springs'
    reference, is an exact equilibrium of both models, so F -> 0 moves nothing and the energy
    criterion below is scale-free);
  * integrator semi-implicit Euler at dt = 1 ms (MuJoCo's "Euler"; the seed lists forward
    Euler, BDF1 and SDIRK2 without saying which ran the finger; explicit Euler is unstable
    here at any force: the massless DIP spring mode has omega = sqrt(k / I) ~ 780 rad/s, and
    explicit Euler amplifies every undamped mode).
Unstable (our definition; the seed gives none): within T_OBS_S = 0.5 s after the flick the
state becomes non-finite, or the mechanical energy E(t) - E_rest (kinetic + spring, muscle
points included) exceeds K_ENERGY = 10 times the energy the flick injected. After the flick the
finger is passive (springs, dissipative soft limits), so its energy cannot rise: a tenfold gain
is the integrator's divergence (in the full run the stable forces below the threshold peak at
2.8 E_inj (massless) and 6.8 E_inj (inertial: semi-implicit Euler's energy error grows with the
speed), the first unstable ones overflow within 3-7 steps; summary `stable_max_energy_ratio`,
and the thresholds for K = 3, 100 and "non-finite only" from the same scan).
Threshold: the smallest unstable force on a geometric grid (ratio GRID_RATIO from 0.5 N),
refined by bisection between it and the grid point below to 0.5 % (the boundary is not
monotone for every configuration: above the threshold a few forces can be stable again; the
summary lists the grid pattern).

Summary: threshold_massless_N, threshold_inertial_N, ratio (acceptance >= 3; seed 5 N vs
20 N, ratio 4), the effective fingertip mass along the flick, injected energy per N^2, and
(full run) the sensitivity of the thresholds to the flick direction, the integrator, the limit
stiffness and the mass distribution. Figures: finger_flick_energy.png (peak energy ratio vs
force, both models), finger_flick_response.png (joint angles and speeds after a flick just
below the massless threshold, both models).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import NamedTuple

import numpy as np

from myotwin.repro.output import prepare_output, pyplot, write_summary

DT_S = 1e-3
FLICK_STEPS = 2
T_OBS_S = 0.5
K_ENERGY = 10.0
F_MIN_N, F_MAX_N = 0.5, 400.0
GRID_RATIO = 1.05
BISECTION_REL_TOL = 0.005
SEED_THRESHOLDS_N = {"massless": 5.0, "inertial": 20.0}


@dataclasses.dataclass(frozen=True)
class Setup:
    """One flick experiment: integrator name, flick direction (+1 dorsal, -1 palmar), joint
    limit time constant (s), muscle belly (fractions of the path carrying the mass)."""

    integrator: str = "semi_implicit_euler"
    direction: float = 1.0
    limit_timeconst_s: float = 0.002
    belly: tuple[float, float] = (0.0, 1.0)


PRIMARY = Setup()


class FlickRun(NamedTuple):
    """Outcome at one force: unstable (bool), first_bad_step (-1 if none), energy_ratio (peak
    (E - E_rest) / E_inj over the window, inf/nan when diverged), injected_energy_J."""

    unstable: bool
    first_bad_step: int
    energy_ratio: float
    injected_energy_J: float


def finger_model(inertial: bool, setup: Setup = PRIMARY):
    """Finger `Model` for the flick: gravity off, joint motors for the applied force, limit
    time constant and muscle belly of `setup`; inertial=False: massless muscles."""
    import jax.numpy as jnp

    from myotwin.models import finger

    model = finger.build(finger.MUSCLE_MASS_KG if inertial else None, belly=setup.belly,
                         gravity=(0.0, 0.0, 0.0))
    solref = jnp.tile(jnp.array([setup.limit_timeconst_s, finger.LIMIT_SOLREF[1]]),
                      (model.n_joint, 1))
    return dataclasses.replace(model, joint_solref=solref)


def flick_simulator(model, setup: Setup = PRIMARY, t_obs_s: float = T_OBS_S):
    """Jitted F -> (q (n+1+2, 3), qd, energy (n+1+2,) relative to rest, injected energy):
    two flick steps of force F (N) then a free rollout of t_obs_s, `setup.integrator`."""
    import jax
    import jax.numpy as jnp

    from myotwin import engine
    from myotwin.engine.integrators import STEPS, Integrator
    from myotwin.models import finger

    integrator = Integrator(setup.integrator)
    step = STEPS[integrator]
    tip = finger.site_id("fingertip")
    distal = finger.body_id("distal")
    n_free = round(t_obs_s / DT_S)
    q_rest = jnp.asarray(finger.Q_REST)

    def flick_torque(q, force):
        jac = engine.site_jacobians(model, q)[0][tip]                 # (3, n_v)
        normal = engine.forward_kinematics(model, q)[1][distal][:, 2]  # distal +z, world
        return jac.T @ (force * setup.direction * normal)

    def energy(q, qd):
        return engine.kinetic_energy(model, q, qd) + engine.potential_energy(model, q)

    @jax.jit
    def simulate(force):
        q, qd = q_rest, jnp.zeros(model.n_v)
        e_rest = energy(q, qd)
        qs, qds = [q], [qd]
        for _ in range(FLICK_STEPS):
            q, qd = step(model, q, qd, jnp.zeros(model.n_u), DT_S,
                         qfrc_applied=flick_torque(q, force))
            qs.append(q), qds.append(qd)
        q_free, qd_free = engine.rollout(model, q, qd, jnp.zeros(model.n_u), DT_S, n_free,
                                         integrator)
        q_all = jnp.concatenate([jnp.stack(qs[:-1]), q_free])
        qd_all = jnp.concatenate([jnp.stack(qds[:-1]), qd_free])
        e_all = jax.vmap(energy)(q_all, qd_all) - e_rest
        return q_all, qd_all, e_all, e_all[FLICK_STEPS]

    return simulate


def classify(simulate, force: float, k_energy: float = K_ENERGY) -> FlickRun:
    """Run one flick of `force` N and apply the instability definition (module docstring)."""
    _, _, e_all, e_inj = simulate(float(force))
    e_free = np.asarray(e_all)[FLICK_STEPS:]
    e_inj = float(e_inj)
    bad = ~np.isfinite(e_free) | (e_free > k_energy * e_inj)
    if not np.isfinite(e_inj) or e_inj <= 0.0:
        bad[:] = True
    first = int(np.argmax(bad)) if bad.any() else -1
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        ratio = float(np.max(e_free) / e_inj) if np.all(np.isfinite(e_free)) else float("inf")
    return FlickRun(bool(bad.any()), first, ratio, e_inj)


def force_grid(grid_ratio: float = GRID_RATIO) -> np.ndarray:
    """Geometric force grid F_MIN_N * grid_ratio^k up to F_MAX_N (N)."""
    n = int(np.floor(np.log(F_MAX_N / F_MIN_N) / np.log(grid_ratio))) + 1
    return F_MIN_N * grid_ratio ** np.arange(n)


def threshold(simulate, grid_ratio: float = GRID_RATIO, stop_after: int = 12) -> dict:
    """Smallest unstable force: a geometric grid scan (stopped after `stop_after` unstable
    forces in a row), then bisection between the first unstable grid force and the one below
    (module docstring). Also the first unstable grid force for other energy factors K (3,
    100) and for divergence alone (non-finite state), from the same scan."""
    grid = force_grid(grid_ratio)
    runs, streak = [], 0
    for f in grid:
        runs.append(classify(simulate, f))
        streak = streak + 1 if runs[-1].unstable else 0
        if streak >= stop_after:
            break
    unstable = [r.unstable for r in runs]
    if not any(unstable):
        raise RuntimeError(f"no unstable force up to {F_MAX_N} N")
    i = unstable.index(True)
    if i == 0:
        raise RuntimeError(f"already unstable at the smallest force {F_MIN_N} N")
    lo, hi = float(grid[i - 1]), float(grid[i])
    while hi / lo - 1.0 > BISECTION_REL_TOL:
        mid = float(np.sqrt(lo * hi))
        if classify(simulate, mid).unstable:
            hi = mid
        else:
            lo = mid
    ratios = np.array([r.energy_ratio for r in runs])
    scanned = grid[:len(runs)]

    def first(mask):
        return float(scanned[np.argmax(mask)]) if mask.any() else None

    return {"threshold_N": hi, "last_stable_N": lo,
            "first_bad_step_at_threshold": classify(simulate, hi).first_bad_step,
            "stable_max_energy_ratio": float(max(r.energy_ratio for r in runs[:i])),
            "first_unstable_grid_force_N": {"K=3": first(ratios > 3.0),
                                            f"K={K_ENERGY:g}": float(grid[i]),
                                            "K=100": first(ratios > 100.0),
                                            "non_finite_only": first(~np.isfinite(ratios))},
            "grid_pattern": "".join("x" if u else "." for u in unstable),
            "grid_forces_N": scanned.tolist(), "grid_energy_ratio": ratios.tolist()}


def effective_tip_mass(model, direction: float = 1.0) -> float:
    """Effective mass (kg) of the fingertip along the flick direction at Q_REST:
    1 / (n' J M_total^-1 J' n), M_total including the muscle points (Eq. 7b)."""
    import jax.numpy as jnp

    from myotwin import engine, inertia
    from myotwin.models import finger

    q = jnp.asarray(finger.Q_REST)
    mass = engine.mass_matrix(model, q)
    if model.muscle_mass is not None:
        mass = mass + inertia.muscle_mass_matrix(model, q)
    jac = engine.site_jacobians(model, q)[0][finger.site_id("fingertip")]
    normal = direction * engine.forward_kinematics(model, q)[1][finger.body_id("distal")][:, 2]
    row = normal @ jac
    return float(1.0 / (row @ jnp.linalg.solve(mass, row)))


def _experiment(setup: Setup, grid_ratio: float, t_obs_s: float) -> dict:
    out = {}
    for label, inertial in (("massless", False), ("inertial", True)):
        sim = flick_simulator(finger_model(inertial, setup), setup, t_obs_s)
        out[label] = threshold(sim, grid_ratio)
    out["ratio"] = out["inertial"]["threshold_N"] / out["massless"]["threshold_N"]
    return out


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Thresholds of both models (primary setup; full: plus sensitivity); summary + figures."""
    out_dir = prepare_output(out_dir)
    grid_ratio = 1.1 if quick else GRID_RATIO
    t_obs = T_OBS_S
    models = {label: finger_model(inertial) for label, inertial in (("massless", False),
                                                                    ("inertial", True))}
    sims = {label: flick_simulator(m, PRIMARY, t_obs) for label, m in models.items()}
    primary = {label: threshold(sims[label], grid_ratio) for label in sims}
    t_m, t_i = primary["massless"]["threshold_N"], primary["inertial"]["threshold_N"]
    summary = {
        "threshold_massless_N": t_m,
        "threshold_inertial_N": t_i,
        "ratio": t_i / t_m,
        "acceptance": {"ratio_ge_3": bool(t_i / t_m >= 3.0)},
        "seed": {"threshold_massless_N": SEED_THRESHOLDS_N["massless"],
                 "threshold_inertial_N": SEED_THRESHOLDS_N["inertial"], "ratio": 4.0},
        "effective_tip_mass_kg": {k: effective_tip_mass(m) for k, m in models.items()},
        "injected_energy_J_per_N2": {k: classify(sims[k], 1.0).injected_energy_J
                                     for k in sims},
        "details": primary,
        "definition": {
            "flick": f"force F on the fingertip along the distal phalanx's dorsal axis for "
                     f"{FLICK_STEPS} steps of {DT_S} s (J^T F at each step's start)",
            "unstable": f"non-finite state or E - E_rest > {K_ENERGY} E_injected within "
                        f"{t_obs} s after the flick",
            "threshold": f"smallest unstable force on a grid (ratio {grid_ratio} from "
                         f"{F_MIN_N} N), bisected to {BISECTION_REL_TOL:.1%}",
            "integrator": PRIMARY.integrator, "dt_s": DT_S, "gravity": "off",
            "start": "finger.Q_REST at rest"},
    }
    if not quick:
        variants = {
            "palmar_flick": dataclasses.replace(PRIMARY, direction=-1.0),
            "rk4": dataclasses.replace(PRIMARY, integrator="rk4"),
            "mujoco_default_limit_timeconst_0.02s": dataclasses.replace(
                PRIMARY, limit_timeconst_s=0.02),
            "mass_on_forearm_belly_only": dataclasses.replace(PRIMARY, belly=belly_only()),
        }
        summary["sensitivity"] = {}
        for name, setup in variants.items():
            res = _experiment(setup, GRID_RATIO, T_OBS_S)
            summary["sensitivity"][name] = {
                "threshold_massless_N": res["massless"]["threshold_N"],
                "threshold_inertial_N": res["inertial"]["threshold_N"],
                "ratio": res["ratio"], "setup": dataclasses.asdict(setup)}
    _plot(out_dir, sims, primary, t_obs)
    write_summary(out_dir, summary)
    return summary


def belly_only() -> tuple[float, float]:
    """Fractions [0, b] of the path holding the muscle belly in the forearm: from the origin to
    5 cm proximal of the carpal-tunnel site, for the shorter (FDP) path at its longest in the
    joint ranges (choice), so that the points never leave the first (fixed) segment."""
    from myotwin.models import finger

    pts = finger.muscle_points()["FDP"]
    seg = float(np.linalg.norm(np.subtract(pts[1].pos, pts[0].pos)))
    lengths = finger.path_length_extremes()["FDP"]
    return (0.0, (seg - 0.05) / lengths[1])


def _plot(out_dir: pathlib.Path, sims: dict, primary: dict, t_obs: float) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for k, (label, color) in enumerate((("massless", "C3"), ("inertial", "C0"))):
        d = primary[label]
        f = np.asarray(d["grid_forces_N"])
        r = np.asarray(d["grid_energy_ratio"], dtype=float)
        shown = np.where(np.isfinite(r), r, 1e3)
        ax.loglog(f, shown, "o-", ms=3, color=color, label=f"{label} muscles")
        ax.axvline(d["threshold_N"], color=color, ls="--", lw=0.8)
    ax.axhline(K_ENERGY, color="k", lw=0.8, ls=":", label=f"instability: {K_ENERGY:g} x E_inj")
    ax.set(xlabel="flick force (N), 2 x 1 ms", ylabel="peak energy / injected energy",
           title="finger flick, semi-implicit Euler 1 ms (diverged drawn at 1e3)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "finger_flick_energy.png", dpi=120)
    plt.close(fig)

    force = 0.9 * primary["massless"]["threshold_N"]
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for label, ls in (("massless", "-"), ("inertial", "--")):
        q, qd, _, _ = sims[label](force)
        t = np.arange(q.shape[0]) * DT_S * 1e3
        n = min(q.shape[0], 101)
        for j, name in enumerate(("MCP", "PIP", "DIP")):
            axes[0].plot(t[:n], np.degrees(np.asarray(q)[:n, j]), ls, color=f"C{j}",
                         label=f"{name} {label}")
            axes[1].plot(t[:n], np.asarray(qd)[:n, j], ls, color=f"C{j}")
    axes[0].set(ylabel="joint angle (deg)",
                title=f"response to a {force:.2f} N flick (0.9 x massless threshold)")
    axes[1].set(xlabel="t (ms)", ylabel="joint speed (rad/s)")
    axes[0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out_dir / "finger_flick_response.png", dpi=120)
    plt.close(fig)
