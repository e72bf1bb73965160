"""Where the mass points' step cost goes: RK4 steps of `benchmarks/inertial.py`'s chain with
stages of the inertial terms replaced by stand-ins (an ablation; not a test).

The step aim of issue 4 (4 x 20 mass points <= 1.5x the massless step) is measured by
`benchmarks/inertial.py`. This script asks how much of the extra cost each stage of
`inertia/polyline.py` carries *inside the compiled step*, where XLA's fusion makes the cost
of a stage depend on its neighbours, so a stage timed alone says little. It copies this
checkout's `src` to a temporary directory, applies `benchmarks/ablations/inertial_stages.patch`
there (the working tree is not touched), and runs each variant in its own process with
MYOTWIN_ABLATE set:

  full            the code as it is;
  sums            Eq. 7's sums (the Gram product and the bias forces) replaced by a stand-in
                  that reads every input, so the stages before them are still computed;
  sums,moments    also the pieces' mass moments (the point-to-piece comparisons);
  sums,moments,qvv  also the velocity and bias-acceleration channels of the piece motion
                  (what remains: the pieces' positions and tangents, and the anchors).

The stand-ins give wrong dynamics; only the timings mean something. Timings: RK4 step inside
the jitted `engine.rollout`, best of --repeats, massless and inertial in the same process.

    taskset -c 1 .venv/bin/python benchmarks/inertial_stages.py [--steps 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PATCH = ROOT / "benchmarks" / "ablations" / "inertial_stages.patch"
VARIANTS = ("", "sums", "sums,moments", "sums,moments,qvv")

_CHILD = """
import sys
sys.path.insert(0, {bench!r})
from myotwin import configure_jax
configure_jax()
import inertial
massless, model = inertial.models()
a = inertial.step_cost(massless, {steps}, {repeats})["wall_us"]
b = inertial.step_cost(model, {steps}, {repeats})["wall_us"]
print(f"{{a:.3f}} {{b:.3f}}")
"""


def _patched_src(tmp: pathlib.Path) -> pathlib.Path:
    dst = tmp / "src"
    shutil.copytree(ROOT / "src", dst)
    subprocess.run(["patch", "-s", "-p1", "-d", str(tmp), "-i", str(PATCH)], check=True)
    return dst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    child = _CHILD.format(bench=str(ROOT / "benchmarks"), steps=args.steps,
                          repeats=args.repeats)
    with tempfile.TemporaryDirectory(prefix="myotwin-ablation-") as tmp:
        src = _patched_src(pathlib.Path(tmp))
        print("| ablated stages | massless step (us) | inertial step (us) | ratio |")
        print("|---|---|---|---|")
        for variant in VARIANTS:
            env = dict(os.environ, PYTHONPATH=str(src), MYOTWIN_ABLATE=variant)
            out = subprocess.run([sys.executable, "-c", child], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            massless, inertial = float(out[-2]), float(out[-1])
            print(f"| {variant or 'none (full)'} | {massless:.2f} | {inertial:.2f} | "
                  f"{inertial / massless:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
