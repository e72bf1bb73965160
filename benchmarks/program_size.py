"""Size and compile time of the programs XLA builds for two rollouts and their gradients: how
much code a model's step traces, which is what the slowest tests spend their time compiling
(docs/engine.md "Performance", "One position stage per evaluation").

Cases (each its forward rollout and the reverse-mode gradient of a scalar of its last state):
  * `--muscles FILE`: an MJCF with MuJoCo muscles loaded by `musculoskeletal.load_mjcf`
    (tests/musculoskeletal/test_mjcf_muscles.py's myoelbow, 1 dof, 6 wrapping muscles), RK4,
    `--steps` steps of 1 ms from q = 1 rad at rest, activations 0.05, constant excitations;
    d q_final / d excitation.
  * `--mjcf FILE`: a skeleton alone (`engine.compile_model`; e.g. tests/engine/test_equality.py's
    model, written out as in benchmarks/RESULTS.md), semi-implicit Euler, `--steps` steps of
    2 ms from qpos0 with a random velocity; d (|q|^2 + 0.1 |qd|^2) / d qd0.
  * `--arm26-mass-points`: arm26 built in Python with its (inactive) ellipsoids and mass points
    on its six OpenSim paths (tests/inertia/test_opensim_mass_points.py's model), the points'
    bias accelerations Jdot qd at one state (`inertia.mass_point_bias_accelerations`: forward
    mode through OpenSim's wrap loops, twice); no gradient.
  * `--arm26-moment-arms`: OpenSim's arm26 built in Python with its (active) ellipsoids, its
    lengths and moment arms at one pose (`lengths_and_moment_arms` of its path set: forward mode
    through the tangency repetitions and every wrap kind; tests/paths/test_arm26.py compiles
    it); no gradient.
For each program: the StableHLO text's length (characters) and operation count (lines with
`stablehlo.` ops), the time to trace and lower it and XLA's compile time (s). Program size is
a property of our code alone, with no peer to time against; the comparison is between
versions of the code: run it once per version, e.g. with PYTHONPATH=<other checkout>/src
ahead of the editable install.

    .venv/bin/python benchmarks/program_size.py --muscles FILE [--steps 100]
    .venv/bin/python benchmarks/program_size.py --mjcf FILE [--steps 30]
    .venv/bin/python benchmarks/program_size.py --arm26-mass-points
    .venv/bin/python benchmarks/program_size.py --arm26-moment-arms
"""

from __future__ import annotations

import argparse
import time


def measure(name: str, fn, *args) -> None:
    import jax

    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    lowered_s = time.perf_counter() - start
    text = lowered.as_text()
    start = time.perf_counter()
    lowered.compile()
    compile_s = time.perf_counter() - start
    ops = sum(1 for line in text.splitlines() if "stablehlo." in line)
    print(f"{name:9s} StableHLO {len(text) / 1e6:6.2f} MB, {ops:6d} ops; "
          f"trace+lower {lowered_s:6.1f} s, compile {compile_s:6.1f} s", flush=True)


def muscles_case(path: str, steps: int) -> None:
    import jax
    import jax.numpy as jnp
    import mujoco

    from myotwin.musculoskeletal import MusculoskeletalState, rollout
    from myotwin.musculoskeletal.mjcf import load_mjcf

    m = mujoco.MjModel.from_xml_path(path)
    msm = load_mjcf(m)
    n_mus = msm.muscles.n_muscles
    state0 = MusculoskeletalState(jnp.ones(m.nq), jnp.zeros(m.nv), jnp.full(n_mus, 0.05),
                                  jnp.zeros(n_mus))
    u0 = jnp.linspace(0.1, 0.6, n_mus)

    def final_angle(u):
        return rollout(msm, state0, u, 1e-3, steps).q[-1, 0]

    measure("forward", final_angle, u0)
    measure("gradient", jax.grad(final_angle), u0)


def mjcf_case(path: str, steps: int) -> None:
    import jax
    import jax.numpy as jnp
    import mujoco
    import numpy as np

    from myotwin import engine

    m = mujoco.MjModel.from_xml_path(path)
    model = engine.compile_model(m)
    q0 = jnp.array(m.qpos0)

    def loss(qd0):
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros((steps, model.n_u)), 2e-3, steps,
                               engine.Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    x = jnp.array(np.random.default_rng(6).normal(size=m.nv))
    measure("forward", loss, x)
    measure("gradient", jax.grad(loss), x)


def arm26_mass_points_case() -> None:
    import jax.numpy as jnp

    from myotwin import inertia
    from myotwin.models import arm26

    model = arm26.build(ellipsoids=True, ellipsoids_active=False)
    for name, (mass, n) in {"TRIlong": (0.2, 6), "TRIlat": (0.15, 5), "TRImed": (0.15, 5),
                            "BIClong": (0.2, 6), "BICshort": (0.15, 5), "BRA": (0.1, 5)}.items():
        model = inertia.with_muscle_mass(model, name, mass, n)
    q, qd = jnp.array([0.3, 1.2]), jnp.array([0.7, -1.3])
    measure("Jdot qd", lambda a, b: inertia.mass_point_bias_accelerations(model, a, b), q, qd)


def arm26_moment_arms_case() -> None:
    import jax.numpy as jnp

    from myotwin.models import arm26

    model = arm26.build(ellipsoids=True)
    measure("L, r", lambda q: model.paths.lengths_and_moment_arms(model, q),
            jnp.array([0.5, 1.2]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--muscles", help="MJCF with MuJoCo muscles")
    group.add_argument("--mjcf", help="MJCF of a skeleton")
    group.add_argument("--arm26-mass-points", action="store_true",
                       help="arm26's OpenSim paths with mass points: their Jdot qd")
    group.add_argument("--arm26-moment-arms", action="store_true",
                       help="arm26's OpenSim paths with ellipsoids: lengths and moment arms")
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args()

    from myotwin import configure_jax

    configure_jax()
    import myotwin

    print(f"myotwin from {myotwin.__file__}")
    if args.arm26_mass_points:
        arm26_mass_points_case()
    elif args.arm26_moment_arms:
        arm26_moment_arms_case()
    elif args.muscles:
        muscles_case(args.muscles, args.steps or 100)
    else:
        mjcf_case(args.mjcf, args.steps or 30)


if __name__ == "__main__":
    main()
