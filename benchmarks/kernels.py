"""Where the inertial benchmark's time goes: XLA kernels, not wall time (issue 4, acceptance 4).

Models: those of `benchmarks/inertial.py` (3-hinge chain; the skeleton alone, with four
tendon-driven massless paths, and with 4 x 20 mass points). Counted (not a test; numbers go to
benchmarks/RESULTS.md):
  1. kernels (XLA fusions, library calls) in one compiled forward-dynamics evaluation, from
     the optimised HLO;
  2. kernels launched per step of the jitted RK4 rollout and per step of the reverse-mode
     gradient of a semi-implicit rollout (jax.profiler trace, 200 steps), with the most
     frequent kinds and how many threads ran them (XLA runs a loop body in the calling thread
     only when its buffers are small; otherwise on its thread pool).
Kernel counts do not depend on the machine's load; the profiler's per-kernel durations do
(and are inflated by the profiler), so they are not reported.

    .venv/bin/python benchmarks/kernels.py
"""

from __future__ import annotations

import collections
import glob
import os
import re
import sys
import tempfile

import jax

from myotwin import configure_jax  # noqa: E402

configure_jax()  # float64, embedded constants (src/myotwin/jax_setup.py)

import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inertial  # noqa: E402

from myotwin import engine  # noqa: E402
from myotwin.engine.integrators import Integrator  # noqa: E402

N_STEPS = 200
SKIP = ("parameter", "constant", "get-tuple-element", "tuple", "bitcast")


def hlo_kernels(model) -> collections.Counter:
    """Kinds of the kernels in the entry computation of one compiled forward dynamics."""
    q0, qd0 = jnp.array([0.4, -0.3, 0.2]), jnp.array([0.5, 0.0, -0.5])
    ctrl = jnp.full(model.n_u, 5.0)
    text = jax.jit(lambda q, qd: engine.forward_dynamics(model, q, qd, ctrl)).lower(
        q0, qd0).compile().as_text()
    entry = text[text.index("ENTRY"):]
    kinds = collections.Counter()
    for line in entry.splitlines()[1:]:
        m = re.search(r"= \S+ ([a-z][\w-]*)\(", line)
        if m and m.group(1) not in SKIP:
            kinds[m.group(1)] += 1
    return kinds


def traced_kernels(fn, args) -> tuple[collections.Counter, int]:
    """(kernel kinds launched by one call of fn(*args), number of threads that ran them)."""
    jax.block_until_ready(fn(*args))  # compile outside the trace
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        jax.block_until_ready(fn(*args))
        jax.profiler.stop_trace()
        path = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)[0]
        data = jax.profiler.ProfileData.from_file(path)
    kinds, threads = collections.Counter(), set()
    for plane in data.planes:
        for line in plane.lines:
            if not line.name.startswith("tf_XLAEigen"):  # XLA's compute threads
                continue
            for ev in line.events:
                if ev.name.startswith(("end:", "ThunkExecutor", "Threadpool")):
                    continue
                kinds[re.sub(r"\.\d+$", "", ev.name)] += 1
                threads.add(line.name)
    return kinds, len(threads)


def main() -> None:
    bare = inertial.models(actuated=False)[0]
    massless, inert = inertial.models()
    q0, qd0 = jnp.array([0.4, -0.3, 0.2]), jnp.array([0.5, 0.0, -0.5])
    for label, model in (("skeleton alone", bare), ("massless", massless),
                         ("inertial", inert)):
        k = hlo_kernels(model)
        print(f"{label}: {sum(k.values())} kernels per forward-dynamics evaluation "
              f"({dict(k.most_common())})")
    for label, model in (("skeleton alone", bare), ("massless", massless),
                         ("inertial", inert)):
        ctrl = jnp.full(model.n_u, 5.0)

        def forward(q, qd, model=model, ctrl=ctrl):
            return engine.rollout(model, q, qd, ctrl, 1e-3, N_STEPS, Integrator.RK4)

        def loss(q, qd, model=model, ctrl=ctrl):
            q_t, qd_t = engine.rollout(model, q, qd, ctrl, 1e-3, N_STEPS,
                                       Integrator.SEMI_IMPLICIT_EULER)
            return jnp.sum(q_t[-1] ** 2) + jnp.sum(qd_t[-1] ** 2)

        for what, fn in (("RK4 rollout", jax.jit(forward)),
                         ("gradient of a semi-implicit rollout",
                          jax.jit(jax.grad(loss, argnums=(0, 1))))):
            kinds, threads = traced_kernels(fn, (q0, qd0))
            top = ", ".join(f"{n} {c / N_STEPS:.0f}" for n, c in kinds.most_common(4))
            print(f"{label}, {what}: {sum(kinds.values()) / N_STEPS:.0f} kernels per step on "
                  f"{threads} thread(s); most frequent: {top}")


if __name__ == "__main__":
    main()
