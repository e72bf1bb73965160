"""What a call of the engine's public state functions costs from plain Python: the first call
and the later ones, compiled (`myotwin.engine.forward_dynamics`, `jax.jit`; engine/api.py) and
op by op (the same function uncompiled, `myotwin.engine.dynamics.forward_dynamics`), with
MuJoCo's mj_forward on the same MJCF as the peer (docs/engine.md, "Public functions are
compiled"). Not a test; numbers go to benchmarks/RESULTS.md.

Each (model, route) is a new Python process: the first call includes tracing and compiling
(compiled) or compiling every primitive alone (op by op). Models: the pai2010 two-bone arm with
its muscle's mass in 2 points (`repro/pai2010.py`), and the three-hinge chain of
`benchmarks/inertial.py` with four tendon motors (massless).

Then, in one more process, what a compiled function costs inside a caller's `jax.jit`: the
chain's two forward-dynamics evaluations in one jitted function, written with the plain and
with the compiled function: XLA's compile time, the number of HLO instructions and of `call`s
left in the compiled program (0: inlined), and the run time per call.

    .venv/bin/python benchmarks/first_call.py [--calls 20]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, sys, time
import myotwin
myotwin.configure_jax()
import jax, jax.numpy as jnp, mujoco
from myotwin import engine
from myotwin.engine import dynamics
from myotwin.models import chain
from myotwin.repro import pai2010

which, route, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "pai":
    params = pai2010.PaiParams(length_m=0.7, ratio_l=1.3, ratio_r=0.15, mass1_kg=1.1,
                               mass2_kg=0.9, muscle_kg=0.4)
    xml, model = pai2010.pai_mjcf(params), pai2010.engine_model(params)
else:
    xml = chain.mjcf()
    model = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
fd = engine.forward_dynamics if route == "compiled" else dynamics.forward_dynamics
q, qd = jnp.full(model.n_q, 0.3), jnp.full(model.n_v, 0.2)
u = jnp.full(model.n_u, 0.5)
t = time.perf_counter()
jax.block_until_ready(fd(model, q, qd, u))
first = time.perf_counter() - t
later = []
for _ in range(calls):
    t = time.perf_counter()
    jax.block_until_ready(fd(model, q, qd, u))
    later.append(time.perf_counter() - t)
m = mujoco.MjModel.from_xml_string(xml)
d = mujoco.MjData(m)
d.qpos[:], d.qvel[:], d.ctrl[:] = 0.3, 0.2, 0.5
peer = []
for _ in range(calls):
    t = time.perf_counter()
    mujoco.mj_forward(m, d)
    peer.append(time.perf_counter() - t)
print(json.dumps({"first_s": first, "later_s": min(later), "mj_forward_s": min(peer)}))
"""

NESTED = """
import re, sys, time
import myotwin
myotwin.configure_jax()
import jax, jax.numpy as jnp, mujoco
from myotwin import engine
from myotwin.engine import dynamics
from myotwin.models import chain

calls = int(sys.argv[1])
model = engine.compile_model(mujoco.MjModel.from_xml_string(chain.mjcf()))
q, qd, u = jnp.full(3, 0.3), jnp.full(3, 0.2), jnp.full(model.n_u, 0.5)
for name, fd in (("plain", dynamics.forward_dynamics), ("compiled", engine.forward_dynamics)):
    f = jax.jit(lambda m, a, b, c, fd=fd: fd(m, a, b, c) + fd(m, a, 2.0 * b, c))
    t = time.perf_counter()
    program = f.lower(model, q, qd, u).compile()
    compile_s = time.perf_counter() - t
    text = program.as_text()
    n_calls = len(re.findall(r"\\bcall\\(", text))
    n_ins = sum(1 for line in text.splitlines() if " = " in line)
    jax.block_until_ready(program(model, q, qd, u))
    best = float("inf")
    for _ in range(calls):
        t = time.perf_counter()
        jax.block_until_ready(program(model, q, qd, u))
        best = min(best, time.perf_counter() - t)
    print(f"inside a caller's jit, {name:8s}: compile {compile_s:.2f} s, {n_ins} HLO "
          f"instructions, {n_calls} calls, run {best * 1e6:.1f} us", flush=True)
"""


def measure(which: str, route: str, calls: int) -> dict:
    run = subprocess.run([sys.executable, "-c", CHILD, which, route, str(calls)],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"{which} {route} failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="later calls timed (best of)")
    args = parser.parse_args()
    for which in ("pai", "chain"):
        for route in ("compiled", "op-by-op"):
            r = measure(which, route, args.calls)
            print(f"{which:5s} {route:9s}: first call {r['first_s']:7.2f} s, later calls "
                  f"{r['later_s'] * 1e6:9.1f} us (mj_forward {r['mj_forward_s'] * 1e6:.1f} us, "
                  f"ratio {r['later_s'] / r['mj_forward_s']:.0f}x)", flush=True)
    run = subprocess.run([sys.executable, "-c", NESTED, str(args.calls)], capture_output=True,
                         text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"nested failed:\n{run.stderr[-2000:]}")
    print(run.stdout.strip())


if __name__ == "__main__":
    main()
