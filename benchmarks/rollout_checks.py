"""Per-call cost of the argument checks in front of the musculoskeletal rollouts (not a test;
numbers go to benchmarks/RESULTS.md, "Rollout checks").

`musculoskeletal.rollout` and `adaptive_rollout` are Python functions that check their
arguments (types, numbers, shapes: engine/arguments.py) and then call the jitted cores
`_rollout` and `_adaptive_rollout`. The peer is the core called directly with the same
arguments, which is what a user would pay without the checks. Model: the 3-hinge chain of
issue 4's benchmark with four De Groote 2016 muscles (`benchmarks/inertial.py`, `hill_chain`,
compliant tendons), massless and with 0.2 kg in 20 mass points on every muscle. Measured, best
of --repeats (compile excluded):
  * rollout of 1 step and of --steps steps of 0.1 ms (RK4);
  * adaptive_rollout to one output time 1 ms after the start (rtol = atol = 1e-6);
each through the public function and through its core, and their difference per call (the
checks' cost, us) and ratio. Under an outer jax.jit the checks run once, at trace time.

    .venv/bin/python benchmarks/rollout_checks.py [--steps 100] [--repeats 200]
"""

from __future__ import annotations

import argparse

from myotwin import configure_jax

configure_jax()

import importlib  # noqa: E402

import jax.numpy as jnp  # noqa: E402

from myotwin import musculoskeletal as ms  # noqa: E402
from myotwin.musculoskeletal import adaptive  # noqa: E402
from inertial import hill_chain, models  # noqa: E402
from timing import best_of  # noqa: E402

# (the package exports a function `simulate`, which hides its module of that name)
simulate = importlib.import_module("myotwin.musculoskeletal.simulate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    print(f"{'model':<10} {'call':<26} {'public (us)':>12} {'core (us)':>10} "
          f"{'checks (us)':>12} {'ratio':>6}")
    for label, skeleton in zip(("massless", "inertial"), models()):
        msm, x0, u = hill_chain(skeleton, "explicit_force")
        for name, (public, core) in calls(msm, x0, u, args.steps).items():
            t_core = best_of(core, args.repeats, warm_up=True)
            t_public = best_of(public, args.repeats, warm_up=True)
            print(f"{label:<10} {name:<26} {1e6 * t_public:12.1f} {1e6 * t_core:10.1f} "
                  f"{1e6 * (t_public - t_core):12.1f} {t_public / t_core:6.2f}")


def calls(msm, x0, u, steps: int) -> dict:
    """call name -> (public function, its core), each a function of no arguments."""
    integrator = simulate._integrator("rk4")
    table = ms.input_table([0.0], u, jnp.zeros(msm.skeleton.n_u))
    t_out = jnp.array([1e-3])
    cases = {}
    for n in (1, steps):
        cases[f"rollout, {n} step(s)"] = (
            lambda n=n: ms.rollout(msm, x0, u, 1e-4, n, integrator),
            lambda n=n: simulate._rollout(msm, x0, u, 1e-4, n, integrator, None))
    cases["adaptive_rollout, 1 ms"] = (
        lambda: ms.adaptive_rollout(msm, x0, 0.0, t_out, table, rtol=1e-6, atol=1e-6),
        lambda: adaptive._adaptive_rollout(msm, x0, 0.0, t_out, table, rtol=1e-6, atol=1e-6,
                                           h0_s=None, max_steps=1_000_000, n_used=None))
    return cases

if __name__ == "__main__":
    main()
