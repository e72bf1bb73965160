"""Plausibility check, not a test: arm26 driven by six De Groote muscles (`benchmarks/arm26.py`'s
model) for 1 s from rest, next to OpenSim 4.6's forward simulations in the reference file
(Thelen2003 muscles with compliant tendons, ellipsoid wraps included, integrator accuracy 1e-9).
The muscle models and the ellipsoid wraps differ (docs/models.md), so only the shape of the
motion is comparable. RK4 at 1 ms; prints q (rad) at 0.1, 0.4, 0.7 and 1 s.

    taskset -c 1 .venv/bin/python benchmarks/arm26_vs_opensim.py
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import arm26 as bench  # noqa: E402  (benchmarks/arm26.py: configures JAX, builds the model)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from myotwin import musculoskeletal as ms  # noqa: E402
from myotwin.models import arm26  # noqa: E402


def main() -> None:
    ref = json.loads(bench.REFERENCE.read_text())
    msm = bench.musculoskeletal_arm26()
    for key, run in ref["forward_1s"].items():
        if not isinstance(run, dict) or "accuracy_1e_9" not in run:
            continue
        u = run["excitation"]
        u = float(next(iter(u.values()))) if isinstance(u, dict) else float(u)
        q0 = jnp.array([run["initial_q"][c] for c in arm26.COORDINATES])
        states, _ = ms.simulate(msm, ms.equilibrium_state(msm, q0, jnp.zeros(2), u),
                                jnp.full(6, u), 1.0, 1e-3)
        print(f"{key}: q = (r_shoulder_elev, r_elbow_flex), ours (De Groote, rigid) | OpenSim "
              "(Thelen, compliant)")
        for row in run["accuracy_1e_9"]["trajectory"][::3]:
            k = int(round(row["t"] / 1e-3))
            theirs = [round(row["q"][c], 3) for c in arm26.COORDINATES]
            print(f"  t = {row['t']:.1f} s: {np.asarray(states.q[k]).round(3)} | {theirs}")


if __name__ == "__main__":
    main()
