"""Speed of an MJCF model with MuJoCo muscles (`musculoskeletal.load_mjcf`) against MuJoCo on
the same model (not a test; numbers go to benchmarks/RESULTS.md, "MuJoCo muscles").

Model: MyoSuite's myoelbow_2dof6muscles_nomesh.xml (shared/reference/mujoco/myosuite; 2
hinges, 6 muscles on spatial tendons with via sites and wrapping cylinders). Measured, best of
--repeats, --steps steps of 1 ms of --integrator (rk4, the default, or euler: MuJoCo's
default, which MyoSuite's files use, dof damping implicit) from q = (0.6, 0.6) with constant
controls 0.5:
  * ours: the jitted `musculoskeletal.rollout` of one trajectory, per step (compile excluded,
    reported separately);
  * MuJoCo: `mujoco.rollout` (C loop, one thread) of the same trajectory with opt.integrator
    RK4 or Euler, per step;
  * batch: --batch trajectories from random initial angles, ours `jax.jit(jax.vmap(rollout))`
    against `mujoco.rollout` on 2 threads, steps per second;
  * --muscle-mass KG: our step with every muscle carrying KG in --points mass points
    (`myotwin.inertia`, seed Eq. 7), which MuJoCo cannot simulate, against the massless step;
    the same batch as above with the mass points (steps per second, against our massless
    batch; with --heavy-batch N, N trajectories instead of --batch, as the heavy program
    compiles and runs for longer); and where an evaluation's time goes: per evaluation (2000
    in one jitted fori_loop) of the muscle lengths, the massless right-hand side
    (`musculoskeletal.rates`), the mass points' positions, their Jacobians, their bias forces
    (J and Jdot qd) and the massive `rates`.

    .venv/bin/python benchmarks/mjcf_muscles.py [--steps 1000] [--repeats 5] [--batch 256]
        [--muscle-mass 0.2 [--points 10] [--heavy-batch N]] [--integrator rk4|euler]
"""

from __future__ import annotations

import argparse
import pathlib
import time

from myotwin import configure_jax

configure_jax()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from mujoco import rollout as mj_rollout  # noqa: E402

from myotwin import musculoskeletal as ms  # noqa: E402
from timing import best_of  # noqa: E402

MODEL = (pathlib.Path(__file__).resolve().parents[2] / "shared" / "reference" / "mujoco"
         / "myosuite" / "myoelbow_2dof6muscles_nomesh.xml")
DT_S = 1e-3



def per_evaluation_us(fn, state0, repeats: int, n: int = 2000) -> float:
    """Cost (us) of one fn(state) -> (nv,) inside a jitted fori_loop of n evaluations (each
    at a q moved by the previous result, so none is hoisted)."""
    loop = jax.jit(lambda x: jax.lax.fori_loop(
        0, n, lambda i, a: a + 1e-9 * fn(state0._replace(q=state0.q + a)), x))
    x = jnp.zeros_like(state0.q)
    return best_of(lambda: loop(x), repeats, warm_up=True) / n * 1e6


def breakdown(msm, heavy, state0, u, ctrl, repeats: int) -> None:
    from myotwin import muscle_lengths
    from myotwin.inertia import dynamics as point_dynamics
    from myotwin.inertia import path_fraction

    ones = jnp.ones_like(state0.q)
    parts = {
        "muscle lengths": lambda s: jnp.sum(muscle_lengths(msm.skeleton, s.q)) * ones,
        "rates, massless": lambda s: ms.rates(msm, s, u, ctrl=ctrl)[0],
        "mass-point positions": lambda s: jnp.sum(
            path_fraction.mass_point_positions(heavy.skeleton, s.q)) * ones,
        "mass-point Jacobians": lambda s: jnp.sum(
            point_dynamics.mass_point_jacobians(heavy.skeleton, s.q), axis=(0, 1)),
        "mass-point bias forces (J, Jdot qd)": lambda s: point_dynamics.muscle_bias_forces(
            heavy.skeleton, s.q, s.qd),
        "rates, with mass points": lambda s: ms.rates(heavy, s, u, ctrl=ctrl)[0],
    }
    for name, fn in parts.items():
        print(f"  per evaluation, {name}: {per_evaluation_us(fn, state0, repeats):.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--muscle-mass", type=float, default=0.0)
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--heavy-batch", type=int, default=None,
                        help="trajectories of the batch with mass points (default: --batch)")
    parser.add_argument("--integrator", choices=("rk4", "euler"), default="rk4")
    args = parser.parse_args()
    if not MODEL.exists():
        raise SystemExit(f"{MODEL} is absent")
    m = mujoco.MjModel.from_xml_path(str(MODEL))
    m.opt.integrator = {"rk4": mujoco.mjtIntegrator.mjINT_RK4,
                        "euler": mujoco.mjtIntegrator.mjINT_EULER}[args.integrator]
    m.opt.timestep = DT_S
    label = {"rk4": "RK4", "euler": "Euler"}[args.integrator]
    msm = ms.load_mjcf(m)
    n, u = args.steps, jnp.full(6, 0.5)
    state0 = ms.MusculoskeletalState(jnp.array([0.6, 0.6]), jnp.zeros(2), jnp.full(6, 0.05),
                                     jnp.zeros(6))

    def ours(model):
        run = jax.jit(lambda s: ms.rollout(model, s, u, DT_S, n, args.integrator,
                                           ctrl=jnp.full(m.nu, 0.5)).q)
        t = time.perf_counter()
        jax.block_until_ready(run(state0))
        return run, time.perf_counter() - t

    run, compile_s = ours(msm)
    ours_s = best_of(lambda: run(state0), args.repeats) / n
    d = mujoco.MjData(m)
    d.qpos[:], d.act[:] = 0.6, 0.05
    mujoco.mj_forward(m, d)
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    x0 = np.empty(mujoco.mj_stateSize(m, full))
    mujoco.mj_getState(m, d, x0, full)
    control = np.full((1, n, m.nu), 0.5)
    with mj_rollout.Rollout(nthread=0) as runner:
        mj_s = best_of(lambda: runner.rollout(m, [d], x0[None], control=control, nstep=n),
                       args.repeats) / n
    print(f"one trajectory, {n} {label} steps: ours {ours_s * 1e6:.1f} us/step, MuJoCo "
          f"{mj_s * 1e6:.1f} us/step, ratio {ours_s / mj_s:.2f}x (compile {compile_s:.1f} s)")

    rng = np.random.default_rng(0)
    q0s_all = jnp.asarray(rng.uniform(0.2, 1.5, (max(args.batch, args.heavy_batch or 0), 2)))
    q0s = q0s_all[:args.batch]

    def batch_rate(model, q0s):
        """(steps/s, compile s) of jax.vmap(rollout) over the initial angles q0s."""
        batch = jax.jit(jax.vmap(lambda q: ms.rollout(
            model, state0._replace(q=q), u, DT_S, n, args.integrator,
            ctrl=jnp.full(m.nu, 0.5)).q[-1]))
        t = time.perf_counter()
        jax.block_until_ready(batch(q0s))
        compile_s = time.perf_counter() - t
        return len(q0s) * n / best_of(lambda: batch(q0s), args.repeats), compile_s

    ours_rate, _ = batch_rate(msm, q0s)
    x0s = np.repeat(x0[None], args.batch, axis=0)
    x0s[:, 1:3] = np.asarray(q0s)               # full-physics state: time, qpos, ...
    datas = [mujoco.MjData(m) for _ in range(2)]
    controls = np.full((args.batch, n, m.nu), 0.5)
    with mj_rollout.Rollout(nthread=2) as runner:
        mj_rate = args.batch * n / best_of(
            lambda: runner.rollout(m, datas, x0s, control=controls, nstep=n), args.repeats)
    print(f"batch of {args.batch}: ours {ours_rate / 1e6:.3f} M steps/s, MuJoCo (2 threads) "
          f"{mj_rate / 1e6:.3f} M steps/s, ratio {mj_rate / ours_rate:.2f}x")

    if args.muscle_mass > 0.0:
        massive = ms.with_muscle_masses(msm, args.muscle_mass, args.points)
        heavy, heavy_compile_s = ours(massive)
        heavy_s = best_of(lambda: heavy(state0), args.repeats) / n
        print(f"with {args.muscle_mass} kg in {args.points} points per muscle: "
              f"{heavy_s * 1e6:.1f} us/step, {heavy_s / ours_s:.2f}x the massless step "
              f"(compile {heavy_compile_s:.1f} s)")
        k = args.heavy_batch or args.batch
        light_rate = ours_rate if k == args.batch else batch_rate(msm, q0s_all[:k])[0]
        heavy_rate, heavy_batch_compile_s = batch_rate(massive, q0s_all[:k])
        print(f"batch of {k} with the mass points: {heavy_rate / 1e6:.4f} M steps/s, "
              f"our massless batch {light_rate / 1e6:.4f} M steps/s, ratio "
              f"{light_rate / heavy_rate:.2f}x (compile {heavy_batch_compile_s:.1f} s)")
        breakdown(msm, massive, state0, u, jnp.full(m.nu, 0.5), args.repeats)


if __name__ == "__main__":
    main()
