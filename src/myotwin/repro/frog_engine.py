"""`frog-engine`: the muscle-absent frog jump (control 1) on the JAX engine vs the MuJoCo frog.

Issue 3, acceptance 4: "A frog jump with smooth contact and the recorded hip/knee servo
targets takes off and lands plausibly". Both engines run our frog (frog/mjcf.py; the engine
without the tendon-driven plantaris motor, with smooth contact tuned for a 15 g frog) from the
crouch with the same servo-target table and forelimb support (frog/targets.py), open loop, no
muscle: the seed's control 1. docs/invitro/frog.md §15.

Runs (RK4 in both):
  engine   dt = 0.25 ms (`engine_jump.DEFAULT_DT_S`)
  mujoco   dt = 0.25 ms: the like-for-like reference ("mujoco" in summary.json)
  mujoco   dt = 1 ms: the in vitro-VR loop's step ("mujoco_loop_step")
full (not quick) adds a step study: engine at 0.125 / 0.5 / 1 ms, MuJoCo at 0.5 ms.

Writes summary.json ({"engine", "mujoco", "takeoff_time_diff_s", "jump_height_ratio", ...})
and frog_engine.png (COM path, hinge angles, vertical floor force vs time).
"""

from __future__ import annotations

import pathlib

from myotwin.repro.output import prepare_output, pyplot, write_summary

QUICK = dict(duration_s=0.3, engine_steps_s=(), mujoco_steps_s=())
FULL = dict(duration_s=0.4, engine_steps_s=(0.125e-3, 0.5e-3, 1e-3), mujoco_steps_s=(0.5e-3,))
LOOP_STEP_S = 1e-3


def _plot(out_dir: pathlib.Path, runs: dict) -> None:
    plt = pyplot()

    styles = {"engine": dict(color="C0", ls="-"), "mujoco": dict(color="C3", ls="--"),
              "mujoco_loop_step": dict(color="0.5", ls=":")}
    labels = {"engine": "engine (Hertz + Hunt-Crossley, 0.25 ms)",
              "mujoco": "MuJoCo (soft constraints, 0.25 ms)",
              "mujoco_loop_step": "MuJoCo at the loop step (1 ms)"}
    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5))
    for key, roll in runs.items():
        st, t_ms = styles[key], roll.time_s * 1e3
        ax[0, 0].plot(roll.com_world_m[:, 0] * 1e3, roll.com_world_m[:, 2] * 1e3, label=labels[key],
                      **st)
        for j, c in enumerate(("C0", "C1", "C2", "C3")):
            ax[0, 1].plot(t_ms, roll.hinge_angles_rad[:, j], color=c, ls=st["ls"],
                          lw=1.4 if key == "engine" else 1.0)
        ax[1, 0].plot(t_ms, roll.floor_force_N[:, 2], label=labels[key], **st)
        ax[1, 1].plot(t_ms, roll.penetration_m * 1e3, label=labels[key], **st)
    ax[0, 0].set(xlabel="COM x (mm)", ylabel="COM z (mm)", title="whole-body COM path")
    ax[0, 0].legend(fontsize=8)
    ax[0, 1].set(xlabel="t (ms)", ylabel="hinge angle from straight (rad)",
                 title="tmt (C0), ankle (C1), knee (C2), hip (C3); solid engine, dashed MuJoCo")
    ax[0, 1].title.set_fontsize(9)
    ax[1, 0].set(xlabel="t (ms)", ylabel="vertical floor force (N)", yscale="symlog",
                 title="floor force on the frog (sampled per step)")
    ax[1, 1].set(xlabel="t (ms)", ylabel="deepest penetration (mm)", title="penetration")
    for a in ax.flat:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / "frog_engine.png", dpi=120)
    plt.close(fig)


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Control 1 on both engines; writes summary.json and frog_engine.png into out_dir."""
    out_dir = prepare_output(out_dir)
    from myotwin.invitro.frog import FrogSpec
    from myotwin.invitro.frog.engine_jump import (DEFAULT_DT_S, FROG_CONTACT, compare_with_mujoco,
                                                  jump_summary, load_engine_frog,
                                                  run_engine_jump, run_mujoco_control1)

    cfg = QUICK if quick else FULL
    spec = FrogSpec()
    frog = load_engine_frog(spec)
    comparison = compare_with_mujoco(spec, cfg["duration_s"], DEFAULT_DT_S, frog=frog)
    loop = run_mujoco_control1(spec, cfg["duration_s"], LOOP_STEP_S)
    summary = comparison.summary()
    summary["mujoco_loop_step"] = jump_summary(loop, LOOP_STEP_S)
    summary["engine"]["rollout_wall_s_incl_compile"] = comparison.engine.wall_s
    steps = []
    for dt in cfg["engine_steps_s"]:
        try:
            steps.append({"engine": "engine", **jump_summary(
                run_engine_jump(spec, cfg["duration_s"], dt, frog=frog), dt)})
        except FloatingPointError as exc:
            steps.append({"engine": "engine", "dt_s": dt, "diverged": str(exc)})
    for dt in cfg["mujoco_steps_s"]:
        steps.append({"engine": "mujoco", **jump_summary(
            run_mujoco_control1(spec, cfg["duration_s"], dt), dt)})
    summary["step_study"] = steps
    summary["setup"] = {"duration_s": cfg["duration_s"], "integrator": "rk4",
                        "contact": dict(FROG_CONTACT), "friction": spec.friction,
                        "condition": "control1 (plantaris absent), open loop",
                        "takeoff": "start of the first >= 10 ms run with no frog geom within "
                                   "0.1 mm of the floor"}
    summary["quick"] = bool(quick)
    _plot(out_dir, {"engine": comparison.engine, "mujoco": comparison.mujoco,
                    "mujoco_loop_step": loop})
    write_summary(out_dir, summary)
    return summary
