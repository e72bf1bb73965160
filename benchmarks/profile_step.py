"""Where a step's time goes: the two profiles behind docs/engine.md "Performance", eleventh session.

Not a test; figures go to benchmarks/RESULTS.md, labelled with this command.

  evaluations   Per-evaluation cost of `engine.forward_dynamics` on the models of
                `benchmarks/inertial.py` (the chain alone, with four tendon-driven paths, and
                with 4 x 20 mass points): N evaluations in one jitted `fori_loop` (compiled
                whole, as in a rollout), best of --repeats; with --modes also its jvp, vjp
                and jacfwd (w.r.t. q and qd), each in its own loop. XLA flags set in the environment
                are kept (`myotwin.configure_jax` appends to XLA_FLAGS), so flags can be
                compared: `XLA_FLAGS=--xla_cpu_use_fusion_emitters=false ... evaluations`.
  trace         The frog's batched RK4 rollout (`benchmarks/engine.py`'s model and states,
                --batch x --steps, one host device) under `jax.profiler`: total kernel time
                and the --top kernels with their output shape and source line, read from the
                optimised HLO that XLA dumps (its stack-frame tables). The profiler inflates
                every kernel, and the totals move by about 15 % between runs; use the ranking.

  frog          A quick A/B figure for the frog: the single trajectory's RK4 step (one jitted
                rollout of --steps) and the one-device batch's throughput (vmapped rollout,
                --batch x 100 steps), best of --repeats, on one line.
  gradients     `benchmarks/inertial.py`'s gradient part alone (1 s semi-implicit rollout,
                reverse mode vs forward) for its inertial, massless and skeleton models.

Pin to one CPU (`taskset -c 1`) to compare with `benchmarks/engine.py`'s one-device figures:
unpinned, XLA splits large kernels over its thread pool.

A/B of two versions of the code (as in benchmarks/RESULTS.md, session 12): put a second
checkout's `src` first on the path and alternate, e.g.
    git worktree add /tmp/base HEAD~1
    for i in 1 2 3; do
      PYTHONPATH=/tmp/base/src taskset -c 1 .venv/bin/python benchmarks/profile_step.py frog
      taskset -c 1 .venv/bin/python benchmarks/profile_step.py frog
    done

    .venv/bin/python benchmarks/profile_step.py evaluations [--n 4000] [--repeats 5]
                                                            [--modes forward,jvp,vjp,jacfwd]
    .venv/bin/python benchmarks/profile_step.py trace [--batch 512] [--steps 50] [--top 20]
    .venv/bin/python benchmarks/profile_step.py frog [--steps 2000] [--batch 512] [--repeats 5]
    .venv/bin/python benchmarks/profile_step.py gradients [--repeats 5]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile
import time

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "trace":
    _DUMP = tempfile.mkdtemp(prefix="myotwin-hlo-")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={_DUMP}").strip()

import jax  # noqa: E402

from myotwin import configure_jax  # noqa: E402

configure_jax()  # float64, embedded constants (src/myotwin/jax_setup.py)

import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from myotwin import engine  # noqa: E402


def _derivative(mode: str, fd, q, qd, t):
    """One evaluation of forward dynamics `fd(q, qd)` (n_v,) in `mode`, reduced to an (n_v,)
    vector that depends on the whole result: the value; its jvp along (t, t); its vjp
    pulled back from t (both cotangents summed); its jacfwd w.r.t. (q, qd) times t."""
    if mode == "forward":
        return fd(q, qd)
    if mode == "jvp":
        return jax.jvp(fd, (q, qd), (t, t))[1]
    if mode == "vjp":
        ct_q, ct_qd = jax.vjp(fd, q, qd)[1](t)
        return ct_q + ct_qd
    jac_q, jac_qd = jax.jacfwd(fd, argnums=(0, 1))(q, qd)
    return jac_q @ t + jac_qd @ t


def evaluations(args) -> None:
    import inertial

    massless, with_mass = inertial.models()
    skeleton = inertial.models(actuated=False)[0]
    q0, qd0 = jnp.array([0.4, -0.3, 0.2]), jnp.array([0.5, 0.0, -0.5])
    modes = args.modes.split(",")
    print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}; load average {os.getloadavg()}")
    for name, model in (("skeleton", skeleton), ("massless", massless),
                        ("4 x 20 mass points", with_mass)):
        ctrl = jnp.full(model.n_u, 5.0)
        times = []
        for mode in modes:
            @jax.jit
            def run(q, qd, model=model, ctrl=ctrl, mode=mode):
                def fd(a, b):
                    return engine.forward_dynamics(model, a, b, ctrl)

                def body(_, carry):  # each evaluation feeds the next, so none is hoisted
                    q, t = carry
                    out = _derivative(mode, fd, q, qd, t)
                    return q + 1e-9 * out, t + 1e-9 * out
                return jax.lax.fori_loop(0, args.n, body, (q, jnp.ones_like(qd)))

            jax.block_until_ready(run(q0, qd0))
            best = float("inf")
            for _ in range(args.repeats):
                start = time.perf_counter()
                jax.block_until_ready(run(q0, qd0))
                best = min(best, time.perf_counter() - start)
            times.append(f"{mode} {1e6 * best / args.n:.2f}")
        print(f"forward_dynamics, {name}: " + " | ".join(times) + " us per evaluation")


def _hlo_sources(text: str) -> dict[str, str]:
    """instruction name -> 'file:function:line' of its innermost stack frame."""
    def table(header):
        block = text.split("\n" + header + "\n", 1)[1].split("\n\n", 1)[0]
        return block.splitlines()

    files = {int(line.split()[0]): line.split()[1].strip('"').rsplit("/", 1)[-1]
             for line in table("FileNames")}
    funcs = {int(line.split()[0]): line.split()[1].strip('"') for line in table("FunctionNames")}
    locs = {}
    for line in table("FileLocations"):
        d = dict(re.findall(r"(\w+)=(\d+)", line))
        locs[int(line.split()[0])] = (f"{files[int(d['file_name_id'])]}:"
                                      f"{funcs[int(d['function_name_id'])]}:{d['line']}")
    frames = {int(line.split()[0]): locs[int(dict(re.findall(r"(\w+)=(\d+)", line))
                                                  ["file_location_id"])]
              for line in table("StackFrames")}
    out = {}
    for m in re.finditer(r"\n\s+(?:ROOT )?%(\S+) = (\S+) .*?stack_frame_id=(\d+)", text):
        out[m.group(1)] = f"{m.group(2)} {frames.get(int(m.group(3)), '?')}"
    return out


def trace(args) -> None:
    import mujoco

    import engine as engine_bench
    from myotwin.engine import compile_model
    from myotwin.engine.integrators import Integrator
    from myotwin.engine.simulate import rollout

    m = mujoco.MjModel.from_xml_string(engine_bench.frog_mjcf())
    model = compile_model(m)
    q0, qd0, ctrl = engine_bench.initial_state(m)
    q0s, qd0s = engine_bench.batch_states(m, q0, qd0, args.batch)
    f = jax.jit(jax.vmap(lambda q, v: rollout(model, q, v, jnp.asarray(ctrl), float(
        m.opt.timestep), args.steps, Integrator.RK4)))
    a, b = jnp.asarray(q0s), jnp.asarray(qd0s)
    jax.block_until_ready(f(a, b))
    start = time.perf_counter()
    jax.block_until_ready(f(a, b))
    print(f"frog batch {args.batch} x {args.steps}: "
          f"{args.batch * args.steps / (time.perf_counter() - start):.3g} steps/s (untraced)")
    out_dir = tempfile.mkdtemp(prefix="myotwin-trace-")
    jax.profiler.start_trace(out_dir)
    jax.block_until_ready(f(a, b))
    jax.profiler.stop_trace()
    events = json.load(gzip.open(sorted(glob.glob(f"{out_dir}/**/*.trace.json.gz",
                                                  recursive=True))[-1]))["traceEvents"]
    total, calls = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and not e["name"].startswith(("ThunkExecutor", "$")):
            total[e["name"]] += e["dur"]
            calls[e["name"]] += 1
    hlo = max(glob.glob(f"{_DUMP}/*jit__lambda.cpu_after_optimizations.txt"),
              key=os.path.getsize)
    sources = _hlo_sources(open(hlo).read())
    kernels = {k: v for k, v in total.items() if not k.startswith("while")}
    print(f"kernel time {sum(kernels.values()) / 1e3:.1f} ms over {len(kernels)} kernels "
          f"(traced)")
    for name, us in collections.Counter(kernels).most_common(args.top):
        print(f"{us / 1e3:8.1f} ms {calls[name]:6d} calls  {name}  {sources.get(name, '?')}")


def frog(args) -> None:
    import mujoco

    import engine as engine_bench
    import inertial
    from myotwin.engine import compile_model
    from myotwin.engine.integrators import Integrator
    from myotwin.engine.simulate import rollout

    m = mujoco.MjModel.from_xml_string(engine_bench.frog_mjcf())
    model = compile_model(m)
    q0, qd0, ctrl = engine_bench.initial_state(m)
    ctrl, dt = jnp.asarray(ctrl), float(m.opt.timestep)

    def best(f, *a):  # best wall time after a compiling call
        jax.block_until_ready(f(*a))
        return inertial.best_of(lambda: f(*a), args.repeats)[0]

    one = jax.jit(lambda q, v: rollout(model, q, v, ctrl, dt, args.steps, Integrator.RK4))
    step_us = 1e6 * best(one, jnp.asarray(q0), jnp.asarray(qd0)) / args.steps
    q0s, qd0s = engine_bench.batch_states(m, q0, qd0, args.batch)
    batch = jax.jit(jax.vmap(lambda q, v: rollout(model, q, v, ctrl, dt, 100, Integrator.RK4)))
    rate = args.batch * 100 / best(batch, jnp.asarray(q0s), jnp.asarray(qd0s))
    print(f"frog: single RK4 step {step_us:.2f} us | batch {args.batch} x 100: {rate:.4g} "
          f"steps/s (one device)")


def gradients(args) -> None:
    import inertial

    massless, with_mass = inertial.models()
    skeleton = inertial.models(actuated=False)[0]
    parts = []
    for name, model in (("inertial", with_mass), ("massless", massless),
                        ("skeleton", skeleton)):
        g = inertial.gradient_cost(model, args.repeats)
        parts.append(f"{name}: forward {1e3 * g['forward_wall_s']:.2f} ms, gradient "
                     f"{1e3 * g['grad_wall_s']:.2f} ms, ratio {g['ratio_wall']:.2f}")
    print(" | ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    ev = sub.add_parser("evaluations")
    ev.add_argument("--n", type=int, default=4000)
    ev.add_argument("--repeats", type=int, default=5)
    ev.add_argument("--modes", default="forward",
                    help="comma-separated: forward, jvp, vjp, jacfwd (w.r.t. q and qd)")
    tr = sub.add_parser("trace")
    tr.add_argument("--batch", type=int, default=512)
    tr.add_argument("--steps", type=int, default=50)
    tr.add_argument("--top", type=int, default=20)
    fr = sub.add_parser("frog")
    fr.add_argument("--steps", type=int, default=2000)
    fr.add_argument("--batch", type=int, default=512)
    fr.add_argument("--repeats", type=int, default=5)
    gr = sub.add_parser("gradients")
    gr.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    {"evaluations": evaluations, "trace": trace, "frog": frog,
     "gradients": gradients}[args.what](args)


if __name__ == "__main__":
    main()
