"""`massless-limit`: as the muscle mass goes to zero, the inertial model reproduces the massless
one (Wang et al. 2022 §1 and §5: "In the limit, as the muscle mass is reduced to zero, our
approach gracefully degrades to traditional simulators without support for muscle inertia").

Model: the double pendulum of `energy_qvv` with three muscles at once, one of each path type
(Type I straight shoulder -> bone 2, Type II via point, Type III elbow cylinder wrap), so the
limit is checked for every Jacobian construction; released from q0 = (0.8, 0.2) rad with
qd0 = (0, 1) rad/s, RK4 at 1 ms for 2 s (quick: 1 s). Each muscle carries mass m in 10 points;
the reference is the same model with `muscle_mass = None` (no mass points at all: the massless
code path of the engine).

Summary: max_rel_diff = max over steps of |x_m - x_0| / max |x_0| for the state x = (q, qd) at
m = 1e-30 kg (acceptance <= 1e-12), and the same difference for m from 1e-30 to 1e-1 kg (it
must fall linearly with m: the muscle terms are linear in the point masses), with the fitted
log-log slope. Figure massless_limit.png: difference vs mass.
"""

from __future__ import annotations

import pathlib

import numpy as np

from myotwin.repro.output import prepare_output, pyplot, write_summary

MASSES_KG = (1e-30, 1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 1e-1)
Q0, QD0 = (0.8, 0.2), (0.0, 1.0)
N_POINTS = 10


def _model(mass_kg):
    """The three-muscle pendulum with every muscle carrying `mass_kg` (None: no mass points)."""
    import mujoco

    from myotwin import engine, inertia
    from myotwin.repro.energy_qvv import double_pendulum_mjcf

    model = engine.compile_model(mujoco.MjModel.from_xml_string(
        double_pendulum_mjcf(("type1", "type2", "type3"))))
    if mass_kg is None:
        return model
    for name in ("type1", "type2", "type3"):
        model = inertia.with_muscle_mass(model, name, mass_kg, N_POINTS)
    return model


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Rollouts at decreasing muscle mass vs the massless model; summary.json and a figure."""
    import dataclasses

    out_dir = prepare_output(out_dir)
    import jax.numpy as jnp

    from myotwin import engine

    duration, dt = (1.0, 1e-3) if quick else (2.0, 1e-3)
    n = round(duration / dt)
    q0, qd0 = jnp.asarray(Q0), jnp.asarray(QD0)
    ctrl = jnp.zeros(0)
    massless = _model(None)
    q_ref, qd_ref = engine.rollout(massless, q0, qd0, ctrl, dt, n, engine.Integrator.RK4)
    x_ref = np.concatenate([np.asarray(q_ref), np.asarray(qd_ref)], axis=1)
    scale = np.max(np.abs(x_ref), axis=0)
    inertial = _model(MASSES_KG[0])
    base_mass = np.asarray(inertial.muscle_mass.point_mass) / MASSES_KG[0]  # per-kg weights
    diffs = []
    for m in MASSES_KG:  # one compiled rollout: the masses are leaves
        mm = dataclasses.replace(inertial.muscle_mass, point_mass=jnp.asarray(base_mass * m))
        q, qd = engine.rollout(dataclasses.replace(inertial, muscle_mass=mm), q0, qd0, ctrl, dt,
                               n, engine.Integrator.RK4)
        x = np.concatenate([np.asarray(q), np.asarray(qd)], axis=1)
        diffs.append(float(np.max(np.abs(x - x_ref) / scale)))
    big = [(m, d) for m, d in zip(MASSES_KG, diffs) if m >= 1e-9]
    slope = float(np.polyfit(np.log10([m for m, _ in big]), np.log10([d for _, d in big]), 1)[0])
    summary = {
        "max_rel_diff": diffs[0],
        "mass_kg_of_max_rel_diff": MASSES_KG[0],
        "acceptance": {"max_rel_diff_le_1e-12": bool(diffs[0] <= 1e-12)},
        "convergence": {"mass_kg": list(MASSES_KG), "max_rel_diff": diffs,
                        "loglog_slope_mass_ge_1e-9": slope},
        "run": {"integrator": "rk4", "dt_s": dt, "duration_s": duration, "q0_rad": Q0,
                "qd0_rad_per_s": QD0, "muscles": ["type1", "type2", "type3"],
                "points_per_muscle": N_POINTS,
                "max_rel_diff": "max over steps and state entries of |x_m - x_0| / max|x_0|"},
    }
    _plot(out_dir, diffs)
    write_summary(out_dir, summary)
    return summary


def _plot(out_dir: pathlib.Path, diffs) -> None:
    plt = pyplot()

    masses = np.asarray(MASSES_KG)
    shown = np.maximum(np.asarray(diffs), 1e-17)  # exact zeros drawn at the floor
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.loglog(masses, shown, "o-", label="inertial vs massless model")
    ref = diffs[-1] * masses / masses[-1]
    ax.loglog(masses, ref, "k--", lw=0.8, label="slope 1")
    ax.axhline(1e-12, color="C3", lw=0.8, ls=":", label="acceptance 1e-12")
    ax.set(xlabel="muscle mass per muscle (kg)", ylabel="max relative state difference",
           title="massless limit (3 muscles, RK4)", ylim=(1e-17, 1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "massless_limit.png", dpi=120)
    plt.close(fig)
