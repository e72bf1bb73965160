"""Compile and run time of a rollout's reverse-mode gradient by the two derivative routes of
engine/cholesky.py, on hinge chains of n links (session 36).

Below `cholesky.SMALL_N` the engine factors M (and the limit QP's matrix) with unrolled loops,
so that a rollout's loop has no LAPACK call and XLA compiles it whole (fast steps). Their
derivative can go through the same unrolled loops (the route for n <= GRAD_SMALL_N) or through
LAPACK's rules (the route above GRAD_SMALL_N). For each n this script times, in a child
process per route (each within `--timeout`):
  * the jitted RK4 rollout of `--steps` steps (2 ms) from qpos0 with a random velocity:
    compile time and per-step cost (best of `--repeats`);
  * its reverse-mode gradient, d loss / d qd0 of a quadratic loss of the final state: the
    same.
and prints each route's figures and the ratios LAPACK route / unrolled route. The forward
rollout is the same code in both (the route only changes derivatives), a control.
A child that does not finish within `--timeout` seconds (the unrolled route's gradient
compile can take many minutes from n = 10) is reported as such. The chain: n capsules on
hinges about y, x, z in turn, each with range +-0.3 rad (`--limited`, which adds the limit
QP) or free, contact disabled, dof damping 0.01. `--mjcf FILE` times that model instead
of the chains (its rollout without controls, timestep 2 ms as above).

    .venv/bin/python benchmarks/gradient_routes.py [--links 6 8 10 14] [--steps 100]
        [--repeats 5] [--timeout 900] [--limited] [--single-cpu 1] [--mjcf FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = "--child"


def chain_xml(n: int, limited: bool) -> str:
    """MJCF of the chain (module docstring)."""
    body, close = "", ""
    for i in range(n):
        axis = ("0 1 0", "1 0 0", "0 0 1")[i % 3]
        limit = 'range="-0.3 0.3"' if limited else ""
        body += (f'<body pos="0 0 -0.1"><joint type="hinge" axis="{axis}" {limit} '
                 'damping="0.01"/><geom type="capsule" fromto="0 0 0 0.02 0.01 -0.1" '
                 'size="0.01"/>')
        close += "</body>"
    return (f'<mujoco><option timestep="0.002"><flag contact="disable"/></option>'
            f"<worldbody>{body}{close}</worldbody></mujoco>")


def child(n: int, limited: bool, steps: int, repeats: int, grad_small_n: int,
          mjcf: str | None) -> dict:
    """One route's timings (module docstring), in this process."""
    from myotwin import configure_jax

    configure_jax()
    import jax
    import jax.numpy as jnp
    import mujoco
    import numpy as np

    from myotwin import engine
    from myotwin.engine import cholesky
    from timing import best_of

    cholesky.GRAD_SMALL_N = grad_small_n
    m = (mujoco.MjModel.from_xml_path(mjcf) if mjcf else
         mujoco.MjModel.from_xml_string(chain_xml(n, limited)))
    model = engine.compile_model(m)
    q0 = jnp.asarray(m.qpos0)

    def loss(qd0):
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros((steps, 0)), 2e-3, steps,
                               engine.Integrator.RK4)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    x = jnp.asarray(np.random.default_rng(6).normal(size=m.nv))
    out = {}
    for name, fn in (("forward", loss), ("gradient", jax.grad(loss))):
        start = time.perf_counter()
        compiled = jax.jit(fn).lower(x).compile()
        out[f"{name}_compile_s"] = time.perf_counter() - start
        out[f"{name}_step_us"] = best_of(lambda: compiled(x), repeats, warm_up=True) / steps * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[6, 8, 10, 14])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--limited", action="store_true")
    parser.add_argument("--single-cpu", type=int, default=None)
    parser.add_argument("--mjcf", default=None, help="time this MJCF model, not the chains")
    parser.add_argument(_CHILD, nargs=2, type=int, metavar=("N", "GRAD_SMALL_N"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single_cpu is not None:
        os.sched_setaffinity(0, {args.single_cpu})
    if args.child:
        print(json.dumps(child(args.child[0], args.limited, args.steps, args.repeats,
                               args.child[1], args.mjcf)))
        return
    from myotwin.engine import cholesky

    print(f"load average {os.getloadavg()[0]:.2f}; steps {args.steps}, repeats "
          f"{args.repeats}, {'limited' if args.limited else 'free'} chains; SMALL_N "
          f"{cholesky.SMALL_N}, GRAD_SMALL_N {cholesky.GRAD_SMALL_N}")
    routes = {"unrolled": cholesky.SMALL_N, "lapack": 0}
    keys = ("forward_compile_s", "forward_step_us", "gradient_compile_s", "gradient_step_us")
    for n in [0] if args.mjcf else args.links:
        if n > cholesky.SMALL_N:
            print(f"n={n}: above SMALL_N = {cholesky.SMALL_N}, LAPACK in both routes; skipped")
            continue
        results = {}
        for route, grad_small_n in routes.items():
            cmd = [sys.executable, __file__, _CHILD, str(n), str(grad_small_n), "--steps",
                   str(args.steps), "--repeats", str(args.repeats)]
            cmd += ["--limited"] if args.limited else []
            cmd += ["--mjcf", args.mjcf] if args.mjcf else []
            cmd += ["--single-cpu", str(args.single_cpu)] if args.single_cpu is not None else []
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                                      timeout=args.timeout)
                results[route] = json.loads(done.stdout.strip().splitlines()[-1])
            except subprocess.TimeoutExpired:
                results[route] = None
            row = results[route]
            text = (f"not done within {args.timeout:.0f} s" if row is None else
                    ", ".join(f"{k} {row[k]:.1f}" for k in keys))
            label = args.mjcf or f"n={n}"
            print(f"{label} {route}: {text}", flush=True)
        if all(results.values()):
            ratios = ", ".join(f"{k} {results['lapack'][k] / results['unrolled'][k]:.2f}x"
                               for k in keys)
            print(f"{args.mjcf or f'n={n}'} lapack / unrolled: {ratios}", flush=True)


if __name__ == "__main__":
    main()
