"""Forward vs reverse mode for the gradient of the reaching reproduction's loss (issue 4).

`myotwin repro reaching` differentiates its loss (a 0.5 s rollout of the arm with six wrapped
Type III muscles carrying mass, `myotwin.repro.reaching`) in forward mode, 4 tangents for its 4
parameters. Reverse mode (`Task.loss_and_grad_reverse`) differentiates the mass points' second
derivatives of the wrap geometry once more; this script measures what that costs: compile
time, run time and peak memory of the loss alone, its forward-mode gradient and its
reverse-mode gradient, each in its own child process (so that each peak resident memory is its
own), and the two gradients' agreement.

Not a test; numbers go to benchmarks/RESULTS.md ("Inertial muscles", reaching).

    taskset -c 1 .venv/bin/python benchmarks/reaching_gradients.py [--quick] [--repeats 5]
        [--modes loss forward reverse]

--quick: mass on the three triceps heads only (the reproduction's CI size). --modes: which of
the three to run (reverse mode compiles for minutes and takes ~8 GB).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

MODES = ("loss", "forward", "reverse")


def child(mode: str, quick: bool, repeats: int) -> dict:
    """Compile and time one of MODES at p = 0.1 (all four parameters)."""
    import numpy as np

    import myotwin

    myotwin.configure_jax()
    from myotwin.repro import reaching

    task = reaching.Task(reaching.reaching_model(quick=quick))
    fn = {"loss": lambda p: (task.loss(p), np.zeros(4)), "forward": task.loss_and_grad,
          "reverse": task.loss_and_grad_reverse}[mode]
    p = np.full(4, 0.1)
    t = time.perf_counter()
    fn(p)
    compile_s = time.perf_counter() - t
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        value, grad = fn(p)
        runs.append(time.perf_counter() - t)
    return {"compile_s": compile_s, "run_s": min(runs), "value": value,
            "grad": np.asarray(grad).tolist(),
            "peak_rss_GB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.quick, args.repeats)))
        return
    out = {}
    for mode in args.modes:
        cmd = [sys.executable, __file__, "--child", mode, "--repeats", str(args.repeats)]
        run = subprocess.run(cmd + (["--quick"] if args.quick else []), capture_output=True,
                             text=True, check=True)
        out[mode] = json.loads(run.stdout.strip().splitlines()[-1])
        r = out[mode]
        print(f"{mode:8s}: compile and first run {r['compile_s']:7.1f} s, run {r['run_s']:.4f} s,"
              f" peak memory {r['peak_rss_GB']:.2f} GB", flush=True)
    if not {"loss", "forward", "reverse"} <= set(out):
        return
    f, b = out["forward"], out["reverse"]
    diff = sum((x - y) ** 2 for x, y in zip(f["grad"], b["grad"])) ** 0.5
    norm = sum(x * x for x in f["grad"]) ** 0.5
    loss_s = out["loss"]["run_s"]
    print(f"gradient run / loss run: forward {f['run_s'] / loss_s:.2f}, reverse "
          f"{b['run_s'] / loss_s:.2f}; reverse / forward {b['run_s'] / f['run_s']:.2f}")
    print(f"|g_reverse - g_forward| / |g_forward| = {diff / norm:.1e}")


if __name__ == "__main__":
    main()
