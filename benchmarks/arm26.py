"""Speed of OpenSim's arm26 (`myotwin.models.arm26`): path lengths, moment arms, and an RK4 step
of the arm driven by its six muscles (not a test; numbers go to benchmarks/RESULTS.md).

Measured, jitted, best of --repeats, at q = (0, 1) rad:
  * `myotwin.muscle_lengths` and `myotwin.moment_arms` per call;
  * the RK4 step of `myotwin.musculoskeletal.rollout` (six De Groote 2016 muscles, rigid
    tendons, with the .osim's forces, fiber and tendon lengths and pennation; excitation 0.5;
    --steps steps of 0.1 ms from rest), per step;
  * with --gradient, the reverse-mode gradient of that rollout (sum of the final angles
    squared, with respect to the six excitations), per step;
  * with --muscle-mass KG, the same RK4 step with every muscle carrying KG in --points mass
    points (`myotwin.inertia`: on OpenSim's current path for TRI*/BRA, on the MJCF tendons for
    BIC*), against the massless step above.
The peer is OpenSim 4.6 itself: the reference file's `realizeAcceleration` time (measured when
the reference was made, on another run of this machine; OpenSim is not installed here), read
from shared/reference/opensim/arm26_reference.json when present.

    taskset -c 1 .venv/bin/python benchmarks/arm26.py [--steps 100] [--repeats 5] [--gradient]
        [--muscle-mass 0.1 [--points 20]]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

from myotwin import configure_jax

configure_jax()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import myotwin  # noqa: E402
from myotwin import inertia  # noqa: E402
from myotwin import muscle as mu  # noqa: E402
from myotwin import musculoskeletal as ms  # noqa: E402
from myotwin.models import arm26  # noqa: E402
from timing import best_of  # noqa: E402

REFERENCE = (pathlib.Path(__file__).resolve().parents[2] / "shared" / "reference" / "opensim"
             / "arm26_reference.json")



def musculoskeletal_arm26(mass_kg: float = 0.0, n_points: int = 20):
    params, names = arm26.MUSCLES, arm26.MUSCLE_NAMES
    skeleton = arm26.build()
    if mass_kg > 0.0:
        for name in names:
            skeleton = inertia.with_muscle_mass(skeleton, name, mass_kg, n_points)
    muscles = mu.build_muscles(
        names, curves="degroote2016", tendon="rigid",
        max_isometric_force_N=[params[n]["max_isometric_force_N"] for n in names],
        optimal_fiber_length_m=[params[n]["optimal_fiber_length_m"] for n in names],
        tendon_slack_length_m=[params[n]["tendon_slack_length_m"] for n in names],
        pennation_at_optimal_rad=[params[n]["pennation_angle_at_optimal_rad"] for n in names])
    return ms.musculoskeletal_model(skeleton, muscles)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gradient", action="store_true",
                        help="also time the reverse-mode gradient of the rollout's final angles "
                             "with respect to the excitations (compiles for minutes)")
    parser.add_argument("--muscle-mass", type=float, default=0.0, metavar="KG",
                        help="also time the RK4 step with KG of mass points on every muscle")
    parser.add_argument("--points", type=int, default=20, help="mass points per muscle")
    args = parser.parse_args()
    msm = musculoskeletal_arm26()

    def timed(fn):
        return best_of(fn, args.repeats, warm_up=True)

    q = jnp.array([0.0, 1.0])
    lengths = jax.jit(lambda x: myotwin.muscle_lengths(msm.skeleton, x))
    arms = jax.jit(lambda x: myotwin.moment_arms(msm.skeleton, x))
    print(f"muscle_lengths: {1e3 * timed(lambda: lengths(q)):.2f} ms per call")
    print(f"moment_arms: {1e3 * timed(lambda: arms(q)):.2f} ms per call")
    x0 = ms.equilibrium_state(msm, q, jnp.zeros(2), 0.5)
    u = jnp.full(6, 0.5)
    step = timed(lambda: ms.rollout(msm, x0, u, 1e-4, args.steps)) / args.steps
    print(f"RK4 step, six De Groote muscles: {1e3 * step:.1f} ms")
    if args.gradient:
        def final_angles(excitation):
            return jnp.sum(ms.rollout(msm, x0, excitation, 1e-4, args.steps).q[-1] ** 2)

        grad = jax.jit(jax.grad(final_angles))
        t = time.perf_counter()
        jax.block_until_ready(grad(u))
        print(f"gradient of the rollout: compiled and run once in {time.perf_counter() - t:.0f} s")
        g_step = timed(lambda: grad(u)) / args.steps
        print(f"gradient of the rollout (reverse mode), per step: {1e3 * g_step:.1f} ms "
              f"({g_step / step:.1f}x the forward step)")
    if args.muscle_mass > 0.0:
        heavy = musculoskeletal_arm26(args.muscle_mass, args.points)
        run = jax.jit(lambda x, e: ms.rollout(heavy, x, e, 1e-4, args.steps))
        t = time.perf_counter()
        jax.block_until_ready(run(x0, u))
        print(f"with muscle mass: compiled and run once in {time.perf_counter() - t:.0f} s")
        m_step = timed(lambda: run(x0, u)) / args.steps
        print(f"RK4 step, {args.muscle_mass} kg in {args.points} points on each muscle: "
              f"{1e3 * m_step:.1f} ms ({m_step / step:.2f}x massless)")
    if REFERENCE.exists():
        peer = json.loads(REFERENCE.read_text())["timing"]["realizeAcceleration_s"]
        print(f"OpenSim 4.6 realizeAcceleration (reference file): {1e6 * peer:.0f} us; one RK4 "
              f"step is 4 such evaluations: ours / OpenSim = {step / (4 * peer):.0f}x")


if __name__ == "__main__":
    main()
