"""Benchmark of the fiber-muscle upper limb (issue 5, acceptance 6): cost per Newton iteration
against the number of elements.

For each discretisation (elements per fiber; 5 fibers, 1 hinge) the upper limb of
`myotwin.repro.fiber_upper_limb` is stepped with backward Euler (dt = 0.01 s): `--warmup` steps
first (JIT compilation, initial transient), then `--steps` timed steps. Reported per
discretisation: wall time and process CPU time per step, Newton iterations per step, CPU time
per Newton iteration (everything of an iteration: closest-point search, the jitted residual and
tangent pieces, sparse assembly, SuperLU, safeguard, line search), the number of unknowns and
of active fiber-fiber points; then the least-squares slope of log(CPU per iteration) against
log(elements) (acceptance 6 aims at <= 1.2). CPU time is the yardstick because the machine is
shared (wall time includes waiting for a core); the load average is printed before and after.
Not a test; numbers go to benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/fiber.py [--elements 40 80 160 320] [--warmup 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import time

from myotwin import configure_jax

configure_jax()  # float64, embedded constants (src/myotwin/jax_setup.py)

import numpy as np  # noqa: E402

from myotwin.fiber import system as fsys  # noqa: E402
from myotwin.fiber import system_stepping as ss  # noqa: E402
from myotwin.repro import fiber_upper_limb as ul  # noqa: E402


def measure(n_elements: int, warmup: int, steps: int) -> dict:
    system, _ = ul.build(n_elements)
    loads = ul.loads_at(system)
    state = ss.SystemState(*fsys.initial_state(system))
    t = 0.0
    for _ in range(warmup):
        t += ul.DT_S
        state, _ = ss.step(system, state, t, ul.DT_S, loads(t))
    iters, contacts = 0, 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        t += ul.DT_S
        state, info = ss.step(system, state, t, ul.DT_S, loads(t))
        iters += info.n_iter
        contacts = max(contacts, info.n_fiber_contacts)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return dict(elements=n_elements, unknowns=system.n_v + system.layout.free_dofs.size,
                wall_per_step_s=wall / steps, cpu_per_step_s=cpu / steps,
                iterations_per_step=iters / steps, cpu_per_iteration_s=cpu / iters,
                max_fiber_contact_points=contacts, angle_deg=float(np.degrees(state.q[0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="+", default=[40, 80, 160, 320])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    rows = [measure(n, args.warmup, args.steps) for n in args.elements]
    print(f"load average after: {os.getloadavg()}")
    print("| elements/fiber | unknowns | wall/step (s) | CPU/step (s) | Newton it./step | "
          "CPU/iteration (ms) | fiber-fiber points |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['elements']} | {r['unknowns']} | {r['wall_per_step_s']:.3f} | "
              f"{r['cpu_per_step_s']:.3f} | {r['iterations_per_step']:.2f} | "
              f"{1e3 * r['cpu_per_iteration_s']:.1f} | {r['max_fiber_contact_points']} |")
    n = np.log([r["elements"] for r in rows])
    c = np.log([r["cpu_per_iteration_s"] for r in rows])
    slope = np.polyfit(n, c, 1)[0] if len(rows) > 1 else float("nan")
    print(f"log-log slope of CPU per iteration vs elements: {slope:.3f}")


if __name__ == "__main__":
    main()
