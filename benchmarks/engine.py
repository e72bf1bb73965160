"""Benchmark of the JAX engine against MuJoCo on the same models (issue 3).

For each model: the per-step cost of our RK4 inside `lax.scan` (jitted `rollout`, one
trajectory) and of MuJoCo's `mj_step` (RK4, same step); the compile time of our rollout
(first call: tracing + XLA); and batch throughput: `jax.jit(jax.vmap(rollout))` over 1024
initial states (on one host device, and split over two host devices, i.e. two threads)
versus `mujoco.rollout` with 2 threads. Not a test; numbers go to
benchmarks/RESULTS.md.

The machine may be shared, so every timing is repeated `--repeats` times, ours and MuJoCo's
alternating, and the best of each is kept. Single-trajectory costs are reported as wall time
and as process CPU time (CPU time leaves out the time the process waited for a core on a
loaded machine); the batch throughput is wall time (MuJoCo uses 2 threads). The load average
is printed before and after.

The single-trajectory timings, the compile time and the one-device batch run in a child
process with ONE host device: `--xla_force_host_platform_device_count=2`, which only the split
batch needs, made the frog's single rollout up to 1.7x slower (its step runs on XLA's thread
pool, see docs/engine.md "Performance"), and under it the frog's one-device batch starved.
`--single-cpu N` pins that child to CPU N; the split batch and mujoco.rollout use both CPUs.

Models: a 4-link chain (3 hinges + a ball; no contact/limits), a free box (no gravity), and
the frog of `myotwin.invitro.frog` (free root + 4 limited hinges, 2 position servos, 9 smooth
contact spheres on the floor; its tendon actuator `plantaris` is dropped, so the row measures
skeleton, servos, limits and contact: the engine supports it now, but with it our step is
dominated by the sphere-wrapped path, and the one-device batch starved; model `frog_tendon`
times it, see docs/engine.md "Performance"). For the frog the two engines do
not do the same work: MuJoCo solves its contacts as constraints (Newton solver), ours are
smooth penalty forces, and MuJoCo also computes the spatial tendon (our engine evaluates a
path only for an actuator or a muscle on it).

    .venv/bin/python benchmarks/engine.py [--steps 1000] [--batch 1024] [--repeats 5]
        [--single-cpu 1] [--models chain free frog frog_tendon]

`frog_tendon` (not in the default set) is the frog as shipped, with the plantaris motor; run it
with `--batch 0` (single trajectories only: its batch starved, docs/engine.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

_CHILD_FLAG = "--single-trajectory-child"
_TWO_DEVICES = "--xla_force_host_platform_device_count=2"
if _CHILD_FLAG not in sys.argv:
    # Two host devices, so that the batch can be split over both CPUs like mujoco.rollout's
    # two threads (XLA reads this before JAX initialises its backend). The single-trajectory
    # child (module docstring) keeps one device.
    os.environ.setdefault("XLA_FLAGS", _TWO_DEVICES)
elif "--single-cpu" in sys.argv:  # pin the child (and the threads it starts) before jax loads
    os.sched_setaffinity(0, {int(sys.argv[sys.argv.index("--single-cpu") + 1])})

import jax  # noqa: E402

from myotwin import configure_jax  # noqa: E402

configure_jax()  # float64, embedded constants (src/myotwin/jax_setup.py)

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


def frog_mjcf() -> str:
    """The frog of myotwin.invitro.frog without its tendon actuator (module docstring)."""
    from myotwin.invitro.frog.mjcf import build_frog_mjcf

    xml, n = re.subn(r'\s*<motor name="plantaris"[^>]*/>', "", build_frog_mjcf())
    assert n == 1, "the frog MJCF no longer has the plantaris motor this benchmark drops"
    return xml


def frog_with_tendon_mjcf() -> str:
    """The frog of myotwin.invitro.frog as shipped, plantaris tendon motor included."""
    from myotwin.invitro.frog.mjcf import build_frog_mjcf

    return build_frog_mjcf()


def _clock():
    return time.perf_counter(), time.process_time()


def _since(start):
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def initial_state(m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(qpos, qvel, ctrl): the first keyframe (else qpos0), qvel 0.5, servos holding qpos."""
    q0 = np.array(m.key_qpos[0] if m.nkey else m.qpos0)
    qd0 = np.full(m.nv, 0.5)
    ctrl = np.zeros(m.nu)
    for a in range(m.nu):  # position servos (and motors, harmlessly) hold the start angle
        if m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT:
            ctrl[a] = q0[m.jnt_qposadr[m.actuator_trnid[a, 0]]] * m.actuator_gear[a, 0]
    return q0, qd0, ctrl


def mujoco_step_time(m, q0, qd0, ctrl, n_steps: int) -> tuple[float, float]:
    """(wall, cpu) seconds per mj_step."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    start = _clock()
    for _ in range(n_steps):
        mujoco.mj_step(m, d)
    wall, cpu = _since(start)
    return wall / n_steps, cpu / n_steps


def ours_step_time(model, q0, qd0, ctrl, n_steps: int, dt: float) -> tuple[float, float]:
    """(wall, cpu) seconds per RK4 step of our jitted rollout (already compiled)."""
    start = _clock()
    jax.block_until_ready(rollout(model, q0, qd0, ctrl, dt, n_steps, Integrator.RK4))
    wall, cpu = _since(start)
    return wall / n_steps, cpu / n_steps


def batch_ours(f, q0s, qd0s, n_steps: int) -> float:
    """Steps per second of the jitted, vmapped rollout f (already compiled)."""
    t0 = time.perf_counter()
    jax.block_until_ready(f(q0s, qd0s))
    return q0s.shape[0] * n_steps / (time.perf_counter() - t0)


def batch_mujoco(m, runner, datas, state0, ctrl, n_steps: int) -> float:
    """Steps per second of mujoco.rollout over the initial states state0 (n, nstate)."""
    control = np.tile(ctrl, (state0.shape[0], n_steps, 1)) if m.nu else None
    t0 = time.perf_counter()
    runner.rollout(m, datas, state0, control=control, nstep=n_steps)
    return state0.shape[0] * n_steps / (time.perf_counter() - t0)


def single_trajectory(key: str, args) -> dict:
    """Per-step cost of our jitted RK4 rollout and of mj_step on model `key`, and our compile
    time (best of args.repeats, alternating; seconds)."""
    m = mujoco.MjModel.from_xml_string(MODELS[key][1]())
    model = compile_model(m)
    dt = float(m.opt.timestep)
    q0, qd0, ctrl = initial_state(m)
    jq0, jqd0, jctrl = jnp.asarray(q0), jnp.asarray(qd0), jnp.asarray(ctrl)
    start = _clock()
    q, qd = jax.block_until_ready(rollout(model, jq0, jqd0, jctrl, dt, args.steps, Integrator.RK4))
    compile_s, compile_cpu_s = _since(start)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise FloatingPointError(f"{key}: our rollout diverged; the timing would be meaningless")
    best = {k: np.inf for k in ("ours_wall", "ours_cpu", "mj_wall", "mj_cpu")}
    for _ in range(args.repeats):
        for name, (w, c) in (("ours", ours_step_time(model, jq0, jqd0, jctrl, args.steps, dt)),
                             ("mj", mujoco_step_time(m, q0, qd0, ctrl, args.steps))):
            best[f"{name}_wall"] = min(best[f"{name}_wall"], w)
            best[f"{name}_cpu"] = min(best[f"{name}_cpu"], c)
    if args.batch == 0:  # single trajectory only
        return dict(compile_s=compile_s, compile_cpu_s=compile_cpu_s, **best,
                    batch_compile_s=0.0, tp_ours=0.0)
    # the batch on this process's one device
    q0s, qd0s = batch_states(m, q0, qd0, args.batch)
    f = jax.jit(jax.vmap(lambda q, v: rollout(model, q, v, jctrl, dt, args.batch_steps,
                                              Integrator.RK4)))
    start = _clock()
    jax.block_until_ready(f(jnp.asarray(q0s), jnp.asarray(qd0s)))  # compile
    batch_compile_s, _ = _since(start)
    tp = max(batch_ours(f, jnp.asarray(q0s), jnp.asarray(qd0s), args.batch_steps)
             for _ in range(args.repeats))
    return dict(compile_s=compile_s, compile_cpu_s=compile_cpu_s, **best,
                batch_compile_s=batch_compile_s, tp_ours=tp)


def batch_states(m, q0, qd0, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(q0s, qd0s) (n, nq), (n, nv): q0 repeated, qd0 plus seeded normal noise (0.1)."""
    rng = np.random.default_rng(0)
    return np.tile(q0, (n, 1)), qd0 + rng.normal(0.0, 0.1, (n, m.nv))


def single_trajectory_in_child(key: str, args) -> dict:
    """`single_trajectory` run in a child process with one host device (module docstring)."""
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "").replace(_TWO_DEVICES, "").strip()
    if flags:
        env["XLA_FLAGS"] = flags
    else:
        env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, os.path.abspath(__file__), _CHILD_FLAG, "--models", key,
           "--steps", str(args.steps), "--repeats", str(args.repeats),
           "--batch", str(args.batch), "--batch-steps", str(args.batch_steps)]
    if args.single_cpu is not None:
        cmd += ["--single-cpu", str(args.single_cpu)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_model(key: str, args) -> dict:
    name, xml = MODELS[key]
    single = single_trajectory_in_child(key, args)  # also the one-device batch
    if args.batch == 0:
        print(f"{name}: per RK4 step ours {single['ours_wall'] * 1e6:.2f} us wall / "
              f"{single['ours_cpu'] * 1e6:.2f} us cpu, mj_step {single['mj_wall'] * 1e6:.2f} / "
              f"{single['mj_cpu'] * 1e6:.2f} us (ratio "
              f"{single['ours_wall'] / single['mj_wall']:.2f} wall, "
              f"{single['ours_cpu'] / single['mj_cpu']:.2f} cpu); compile "
              f"{single['compile_s']:.2f} s; no batch (--batch 0)", flush=True)
        return dict(name=name, **single)
    m = mujoco.MjModel.from_xml_string(xml())
    model = compile_model(m)
    dt = float(m.opt.timestep)
    q0, qd0, ctrl = initial_state(m)
    jctrl = jnp.asarray(ctrl)
    q0s, qd0s = batch_states(m, q0, qd0, args.batch)
    batched = jax.vmap(lambda q, v: rollout(model, q, v, jctrl, dt, args.batch_steps,
                                            Integrator.RK4))
    # the same vmapped rollout with the batch split over the host devices (one thread each)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("batch",))
    split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    f2 = jax.jit(batched, in_shardings=(split, split), out_shardings=(split, split))
    q0s_2, qd0s_2 = jax.device_put(q0s, split), jax.device_put(qd0s, split)
    split_run = key not in args.no_split
    if split_run:
        jax.block_until_ready(f2(q0s_2, qd0s_2))  # compile
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.zeros((args.batch, mujoco.mj_stateSize(m, spec)))
    d = mujoco.MjData(m)
    for i in range(args.batch):
        d.qpos[:], d.qvel[:] = q0s[i], qd0s[i]
        mujoco.mj_getState(m, d, state0[i], spec)
    datas = [mujoco.MjData(m) for _ in range(2)]

    tp = {"ours": single.pop("tp_ours"), "ours2": 0.0, "mj": 0.0}
    with mj_rollout.Rollout(nthread=2) as runner:
        batch_mujoco(m, runner, datas, state0, ctrl, args.batch_steps)  # warm-up
        for _ in range(args.repeats):
            if split_run:
                tp["ours2"] = max(tp["ours2"], batch_ours(f2, q0s_2, qd0s_2, args.batch_steps))
            tp["mj"] = max(tp["mj"], batch_mujoco(m, runner, datas, state0, ctrl,
                                                  args.batch_steps))
    batch_compile_s = single["batch_compile_s"]
    out = dict(name=name, **single,
               tp_ours=tp["ours"], tp_ours2=tp["ours2"], tp_mj=tp["mj"])
    print(f"{name}: per RK4 step ours {out['ours_wall'] * 1e6:.2f} us wall / "
          f"{out['ours_cpu'] * 1e6:.2f} us cpu, mj_step {out['mj_wall'] * 1e6:.2f} / "
          f"{out['mj_cpu'] * 1e6:.2f} us (ratio {out['ours_wall'] / out['mj_wall']:.2f} wall, "
          f"{out['ours_cpu'] / out['mj_cpu']:.2f} cpu); compile {out['compile_s']:.2f} s wall / "
          f"{out['compile_cpu_s']:.2f} s cpu (batched: {batch_compile_s:.1f} s); "
          f"batch {args.batch} x {args.batch_steps}: ours {tp['ours']:.3g} steps/s (1 device), "
          f"{tp['ours2']:.3g} (2 devices), mujoco.rollout 2 threads {tp['mj']:.3g} steps/s "
          f"(ratios {tp['ours'] / tp['mj']:.2f}, {tp['ours2'] / tp['mj']:.2f})",
          flush=True)
    return out


MODELS = {"chain": ("4-link chain (hinge x3 + ball)", lambda: PENDULUM_CHAIN),
          "free": ("free body", lambda: FREE_BODY),
          "frog": ("frog (free + 4 limited hinges, 9 contacts, 2 servos)", frog_mjcf),
          "frog_tendon": ("frog with its plantaris tendon motor (sphere-wrapped path)",
                          frog_with_tendon_mjcf)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=1024,
                    help="batch size (0: single trajectories only)")
    ap.add_argument("--batch-steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=["chain", "free", "frog"],
                    choices=list(MODELS))
    ap.add_argument("--single-cpu", type=int, default=None,
                    help="pin the single-trajectory child process to this CPU")
    ap.add_argument("--no-split", nargs="*", default=["frog_tendon"],
                    choices=list(MODELS),
                    help="models whose batch is not also run split over two host devices "
                         "(default: frog_tendon; the frog's split run starved for minutes on "
                         "XLA's CPU thread pool until session 10, docs/engine.md "
                         "'Performance')")
    ap.add_argument(_CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.single_trajectory_child:  # one model, one JSON line on stdout
        print(json.dumps(single_trajectory(args.models[0], args)))
        return 0
    print(f"jax {jax.__version__} mujoco {mujoco.__version__}, CPU, float64; "
          f"load average before {os.getloadavg()}", flush=True)
    for key in args.models:
        bench_model(key, args)
    print(f"load average after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
