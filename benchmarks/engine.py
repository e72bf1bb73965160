"""Benchmark of the JAX engine against MuJoCo on the same contact-free models.

For each model: the per-step cost of our RK4 inside `lax.scan` (jitted, one trajectory),
MuJoCo's `mj_step` (RK4, same step), the compile time of our rollout, and batch throughput:
`jax.vmap` of our rollout over 1024 initial states versus `mujoco.rollout` with 2 threads.
Prints the ratios. Not a test; numbers go to benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/engine.py [--steps 1000] [--batch 1024]
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from mujoco import rollout as mj_rollout  # noqa: E402

from myotwin.engine import compile_model  # noqa: E402
from myotwin.engine.integrators import Integrator  # noqa: E402
from myotwin.engine.simulate import rollout  # noqa: E402

PENDULUM_CHAIN = """
<mujoco><option timestep="0.001" integrator="RK4"><flag contact="disable"/></option>
<worldbody>
  <body pos="0 0 1"><joint type="hinge" axis="0 1 0" damping="0.01"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.5"/>
    <body pos="0 0 -0.3"><joint type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.4"/>
      <body pos="0 0 -0.3"><joint type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.3"/>
        <body pos="0 0 -0.3"><joint type="ball"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02" mass="0.2"/>
        </body></body></body></body>
</worldbody>
</mujoco>
"""

FREE_BODY = """
<mujoco><option timestep="0.001" integrator="RK4"><flag gravity="disable"/></option>
<worldbody><body><freejoint/><geom type="box" size="0.1 0.2 0.3" mass="1"/></body></worldbody>
</mujoco>
"""


def time_mujoco_step(m, n_steps: int) -> float:
    d = mujoco.MjData(m)
    d.qvel[:] = 0.5
    t0 = time.perf_counter()
    for _ in range(n_steps):
        mujoco.mj_step(m, d)
    return (time.perf_counter() - t0) / n_steps


def time_ours(model, q0, qd0, n_steps: int, dt: float) -> tuple[float, float]:
    ctrl = jnp.zeros((model.n_u,))
    t0 = time.perf_counter()
    jax.block_until_ready(rollout(model, q0, qd0, ctrl, dt, n_steps, Integrator.RK4))
    compile_s = time.perf_counter() - t0
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(rollout(model, q0, qd0, ctrl, dt, n_steps, Integrator.RK4))
        best = min(best, time.perf_counter() - t0)
    return best / n_steps, compile_s


def batch_ours(model, q0s, qd0s, n_steps: int, dt: float) -> float:
    ctrl = jnp.zeros((model.n_u,))
    f = jax.jit(jax.vmap(lambda q, v: rollout(model, q, v, ctrl, dt, n_steps, Integrator.RK4)))
    jax.block_until_ready(f(q0s, qd0s))
    t0 = time.perf_counter()
    jax.block_until_ready(f(q0s, qd0s))
    return q0s.shape[0] * n_steps / (time.perf_counter() - t0)


def batch_mujoco(m, q0s, qd0s, n_steps: int) -> float:
    nstate = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state0 = np.zeros((q0s.shape[0], nstate))
    d = mujoco.MjData(m)
    for i in range(q0s.shape[0]):
        d.qpos[:], d.qvel[:] = q0s[i], qd0s[i]
        mujoco.mj_getState(m, d, state0[i], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    datas = [mujoco.MjData(m) for _ in range(2)]
    with mj_rollout.Rollout(nthread=2) as r:
        r.rollout(m, datas, state0, nstep=n_steps)            # warm-up
        t0 = time.perf_counter()
        r.rollout(m, datas, state0, nstep=n_steps)
    return q0s.shape[0] * n_steps / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--batch-steps", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__} mujoco {mujoco.__version__}, CPU, float64")
    for name, xml in (("4-link chain (hinge x3 + ball)", PENDULUM_CHAIN),
                      ("free body", FREE_BODY)):
        m = mujoco.MjModel.from_xml_string(xml)
        model = compile_model(m)
        dt = m.opt.timestep
        q0 = jnp.asarray(m.qpos0)
        qd0 = jnp.full((m.nv,), 0.5)
        ours_s, compile_s = time_ours(model, q0, qd0, args.steps, dt)
        mj_s = time_mujoco_step(m, args.steps)
        q0s = np.tile(m.qpos0, (args.batch, 1))
        qd0s = rng.normal(0.0, 0.5, (args.batch, m.nv))
        ours_tp = batch_ours(model, jnp.asarray(q0s), jnp.asarray(qd0s), args.batch_steps, dt)
        mj_tp = batch_mujoco(m, q0s, qd0s, args.batch_steps)
        print(f"{name}: per step ours {ours_s * 1e6:.2f} us, mj_step {mj_s * 1e6:.2f} us "
              f"(ratio {ours_s / mj_s:.2f}); compile {compile_s:.2f} s; batch {args.batch} x "
              f"{args.batch_steps} steps: ours {ours_tp:.3g} steps/s, mujoco.rollout 2 threads "
              f"{mj_tp:.3g} steps/s (ratio {ours_tp / mj_tp:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
