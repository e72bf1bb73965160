"""Plausibility check, not a test: arm26 for 1 s from rest, next to OpenSim 4.6's forward
simulations in the reference file (Thelen2003 muscles with compliant tendons, ellipsoid wraps
included, integrator accuracy 1e-9). Two models of ours:
  * "Thelen": arm26.osim loaded by `myotwin.osim.load` (its two ellipsoids omitted) with its own
    Thelen 2003 muscles and compliant tendons (`osim.build_muscles(tendon="explicit_force")`),
    RK4 at 0.1 ms (the tendons are stiff): OpenSim's model but for the ellipsoid wraps;
  * "De Groote": `benchmarks/arm26.py`'s model, De Groote curves with rigid tendons and the
    .osim's forces, lengths and pennation, RK4 at 1 ms.
The ellipsoid wraps differ (BIClong's moves its shoulder moment arm by up to ~7 mm,
docs/models.md), so only the closeness of the motion is comparable. Prints q (rad) at 0.1, 0.4,
0.7 and 1 s.

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
from myotwin import osim  # noqa: E402
from myotwin.models import arm26  # noqa: E402


def thelen_arm26():
    """arm26.osim with its own Thelen 2003 muscles and compliant tendons (ellipsoids omitted)."""
    arm = osim.load(bench.REFERENCE.parent / "models" / "arm26.osim",
                    omit=("TRIlonghh", "BIClonghh"))
    assert arm.coordinates == arm26.COORDINATES
    return ms.musculoskeletal_model(arm.model, osim.build_muscles(arm, tendon="explicit_force"))


def main() -> None:
    ref = json.loads(bench.REFERENCE.read_text())
    models = {"Thelen": (thelen_arm26(), 1e-4), "De Groote": (bench.musculoskeletal_arm26(), 1e-3)}
    for key, run in ref["forward_1s"].items():
        if not isinstance(run, dict) or "accuracy_1e_9" not in run:
            continue
        u = run["excitation"]
        u = float(next(iter(u.values()))) if isinstance(u, dict) else float(u)
        q0 = jnp.array([run["initial_q"][c] for c in arm26.COORDINATES])
        qs = {}
        for name, (msm, dt) in models.items():
            states, _ = ms.simulate(msm, ms.equilibrium_state(msm, q0, jnp.zeros(2), u),
                                    jnp.full(6, u), 1.0, dt)
            qs[name] = (np.asarray(states.q), dt)
        print(f"{key}: q = (r_shoulder_elev, r_elbow_flex): ours Thelen (compliant) | ours De "
              "Groote (rigid) | OpenSim (Thelen, compliant)")
        for row in run["accuracy_1e_9"]["trajectory"][::3]:
            ours = [q[int(round(row["t"] / dt))].round(3) for q, dt in qs.values()]
            theirs = [round(row["q"][c], 3) for c in arm26.COORDINATES]
            print(f"  t = {row['t']:.1f} s: {ours[0]} | {ours[1]} | {theirs}")


if __name__ == "__main__":
    main()
