"""Benchmark of inertial muscles (issue 4): cost of the mass points in a step and in a gradient.

Model: a 3-hinge chain (0.3 m links of 0.5 / 0.4 / 0.3 kg, hinges about y, y, x) with four
musculotendon paths (`CHAIN_MUSCLES`): one straight (Type I, world -> link 3), three through
via points (Type II, Eqs. 12-16), each pulled by a tendon motor (5 N), so both models evaluate
the paths every stage, as a muscle-driven simulation does. The inertial model gives each path
0.2 kg in 20 uniform points (80 points); the massless model is the same MJCF without them.
The skeleton alone (no actuators, no path evaluation) is timed too.

Measured (not a test; numbers go to benchmarks/RESULTS.md):
  1. step cost: one RK4 step inside the jitted `engine.rollout` (n steps, 1 ms), inertial vs
     massless; aim <= 1.5x; and the inertial model without the points' quadratic velocity term
     (include_qvv=False), which splits the extra cost into Jacobians and Jdot qd;
  2. gradient cost: `jax.grad` (reverse mode) of a loss of a 1 s rollout (semi-implicit Euler,
     1 ms, 1000 steps; loss = sum of the final state squared) w.r.t. q0, qd0 and the point
     masses, vs the forward rollout alone, both for the inertial model; aim <= 5x. The same
     ratio for the massless model and the skeleton alone (w.r.t. q0, qd0) tells how much of it
     is the mass points and how much the engine's reverse pass.
  3. with `--implicit`: the cost of 200 BDF1 steps (implicit Euler, Newton with a forward-mode
     Jacobian, `engine.simulate(..., "bdf1")`), massless and inertial: forward mode under
     `vmap` is where the reverse-mode rules of engine/rows.py and engine/spatial.py (dense
     tangents, table products) cost something, so it is timed next to the gradient.
  4. with `--hill`: the RK4 step with four De Groote 2016 Hill-type muscles on the paths
     instead of the tendon motors (`myotwin.musculoskeletal`, rigid and explicit-force
     tendons), massless vs inertial: the same step ratio with muscle models in both.
Wrapped paths (Type III) are left out of part 2: reverse mode through their mass points
(second derivatives of the wrap geometry, differentiated once more) compiles for minutes (the
reaching arm's six wrapped muscles: ~5.5 min and ~8 GB, `benchmarks/reaching_gradients.py`);
part 1 can include one with `--wrap` (a cylinder-wrapped fifth path).

Timings: best of `--repeats`, wall and process CPU time (the machine is shared; CPU time
leaves out waiting for a core), after one warm-up call (compilation reported separately).

    .venv/bin/python benchmarks/inertial.py [--steps 1000] [--repeats 5] [--wrap] [--implicit]
                                            [--hill]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import jax

from myotwin import configure_jax  # noqa: E402

configure_jax()  # float64, embedded constants (src/myotwin/jax_setup.py)

import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402

from myotwin import engine, inertia  # noqa: E402
from myotwin.engine.integrators import Integrator  # noqa: E402
from myotwin.models import chain  # noqa: E402

N_POINTS = 20
MUSCLE_MASS_KG = 0.2
CHAIN_MUSCLES = chain.MUSCLES


def chain_mjcf(wrap: bool = False, actuated: bool = True) -> str:
    """The chain (`myotwin.models.chain`): four paths (a fifth, cylinder-wrapped one if
    `wrap`), a tendon motor on each if `actuated`."""
    return chain.mjcf(wrap, actuated)


def models(wrap: bool = False, actuated: bool = True):
    """(massless, inertial) engine Models of the chain."""
    massless = engine.compile_model(mujoco.MjModel.from_xml_string(chain_mjcf(wrap, actuated)))
    inertial = massless
    for name in CHAIN_MUSCLES + (("wrapped",) if wrap else ()):
        inertial = inertia.with_muscle_mass(inertial, name, MUSCLE_MASS_KG, N_POINTS)
    return massless, inertial


def best_of(fn, repeats: int) -> tuple[float, float]:
    """(best wall s, best CPU s) of `repeats` calls of fn() (results blocked on)."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn())
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def timed_compile(fn) -> float:
    t = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - t


def step_cost(model, n_steps: int, repeats: int) -> dict:
    """Per-step RK4 cost inside the jitted rollout."""
    q0 = jnp.array([0.4, -0.3, 0.2])
    qd0 = jnp.array([0.5, 0.0, -0.5])

    ctrl = jnp.full(model.n_u, 5.0)     # 5 N tension in every path (if actuated)

    def call():
        return engine.rollout(model, q0, qd0, ctrl, 1e-3, n_steps, Integrator.RK4)

    compile_s = timed_compile(call)
    wall, cpu = best_of(call, repeats)
    return {"compile_s": compile_s, "wall_us": 1e6 * wall / n_steps,
            "cpu_us": 1e6 * cpu / n_steps}


def hill_chain(skeleton, tendon: str):
    """(MusculoskeletalModel, initial state, excitation (4,)): the chain driven by four De
    Groote 2016 muscles on its paths (`myotwin.musculoskeletal`; 2 kN, l_opt 0.55 and l_ts 0.5
    of each path's length at q0, pennation 0.1 rad, excitations 0.2-0.4), from tendon
    equilibrium at activation 0.2."""
    from myotwin import muscle as mu
    from myotwin import musculoskeletal as ms
    from myotwin.paths.on_model import muscle_lengths

    q0 = jnp.array([0.4, -0.3, 0.2])
    qd0 = jnp.array([0.5, 0.0, -0.5])
    length = muscle_lengths(skeleton, q0)
    muscles = mu.build_muscles(CHAIN_MUSCLES, curves="degroote2016", tendon=tendon,
                               max_isometric_force_N=2000.0,
                               optimal_fiber_length_m=[float(x) for x in 0.55 * length],
                               tendon_slack_length_m=[float(x) for x in 0.5 * length],
                               pennation_at_optimal_rad=0.1)
    msm = ms.musculoskeletal_model(skeleton, muscles)
    return msm, ms.equilibrium_state(msm, q0, qd0, 0.2), jnp.array([0.3, 0.2, 0.4, 0.25])


def hill_step_cost(skeleton, tendon: str, n_steps: int, repeats: int) -> dict:
    """Per-step RK4 cost of the chain driven by four De Groote 2016 muscles (`hill_chain`)."""
    from myotwin import musculoskeletal as ms

    msm, x0, u = hill_chain(skeleton, tendon)

    def call():
        return ms.rollout(msm, x0, u, 1e-4, n_steps)   # 0.1 ms steps: no slack tendon

    compile_s = timed_compile(call)
    wall, cpu = best_of(call, repeats)
    return {"compile_s": compile_s, "wall_us": 1e6 * wall / n_steps,
            "cpu_us": 1e6 * cpu / n_steps}


def gradient_cost(model, repeats: int) -> dict:
    """Reverse-mode gradient of a 1 s semi-implicit rollout vs the rollout alone: w.r.t. q0,
    qd0 and, if the model has muscle mass, the point masses."""
    n = 1000
    q0 = jnp.array([0.4, -0.3, 0.2])
    qd0 = jnp.array([0.5, 0.0, -0.5])
    inertial = model.muscle_mass is not None

    def loss(q0, qd0, masses):
        m = model
        if inertial:
            m = dataclasses.replace(model, muscle_mass=dataclasses.replace(model.muscle_mass,
                                                                          point_mass=masses))
        q, qd = engine.rollout(m, q0, qd0, jnp.full(m.n_u, 5.0), 1e-3, n,
                               Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + jnp.sum(qd[-1] ** 2)

    masses = model.muscle_mass.point_mass if inertial else jnp.zeros(0)
    forward = jax.jit(loss)
    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2) if inertial else (0, 1)))
    out = {"forward_compile_s": timed_compile(lambda: forward(q0, qd0, masses)),
           "grad_compile_s": timed_compile(lambda: grad(q0, qd0, masses))}
    fw, fc = best_of(lambda: forward(q0, qd0, masses), repeats)
    gw, gc = best_of(lambda: grad(q0, qd0, masses), repeats)
    out.update({"forward_wall_s": fw, "forward_cpu_s": fc, "grad_wall_s": gw, "grad_cpu_s": gc,
                "ratio_wall": gw / fw, "ratio_cpu": gc / fc})
    return out


def implicit_cost(model, repeats: int) -> float:
    """Best wall time (s) of 200 BDF1 steps of 1 ms (Newton, default settings)."""
    q0 = jnp.array([0.4, -0.3, 0.2])
    qd0 = jnp.array([0.5, 0.0, -0.5])

    def call():
        return engine.simulate(model, q0, qd0, jnp.full(model.n_u, 5.0), 0.2, 1e-3, "bdf1")

    timed_compile(call)
    return best_of(call, repeats)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--wrap", action="store_true",
                        help="step cost with a fifth, cylinder-wrapped inertial path")
    parser.add_argument("--implicit", action="store_true",
                        help="also time 200 BDF1 steps (forward-mode Newton Jacobians)")
    parser.add_argument("--hill", action="store_true",
                        help="also time the RK4 step with four De Groote muscles driving the "
                             "chain (myotwin.musculoskeletal), massless vs inertial")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    bare = step_cost(models(actuated=False)[0], args.steps, args.repeats)
    print(f"RK4 step, skeleton alone (no tendon actuators): {bare['wall_us']:.1f} us wall, "
          f"{bare['cpu_us']:.1f} us CPU")
    massless, inertial = models()
    a = step_cost(massless, args.steps, args.repeats)
    b = step_cost(inertial, args.steps, args.repeats)
    print(f"RK4 step, massless, 4 tendon-driven muscles: {a['wall_us']:.1f} us wall, "
          f"{a['cpu_us']:.1f} us CPU (compile {a['compile_s']:.1f} s)")
    print(f"RK4 step, 4 muscles x {N_POINTS} points: {b['wall_us']:.1f} us wall, "
          f"{b['cpu_us']:.1f} us CPU (compile {b['compile_s']:.1f} s)")
    no_qvv = dataclasses.replace(inertial, muscle_mass=dataclasses.replace(
        inertial.muscle_mass, include_qvv=False))
    c = step_cost(no_qvv, args.steps, args.repeats)
    print(f"RK4 step, the same without the points' Jdot qd (include_qvv=False: Jacobians only): "
          f"{c['wall_us']:.1f} us wall, {c['cpu_us']:.1f} us CPU")
    print(f"step cost ratio inertial / massless: {b['wall_us'] / a['wall_us']:.2f} wall, "
          f"{b['cpu_us'] / a['cpu_us']:.2f} CPU (aim <= 1.5); inertial / skeleton alone: "
          f"{b['cpu_us'] / bare['cpu_us']:.2f} CPU")
    if args.wrap:
        m0, m1 = models(wrap=True)
        c, d = step_cost(m0, args.steps, args.repeats), step_cost(m1, args.steps, args.repeats)
        print(f"with a cylinder-wrapped fifth path (5 x {N_POINTS} points): "
              f"{d['cpu_us']:.1f} vs {c['cpu_us']:.1f} us CPU, ratio "
              f"{d['cpu_us'] / c['cpu_us']:.2f} (compile {d['compile_s']:.1f} s)")
    g = gradient_cost(inertial, args.repeats)
    print(f"1 s rollout (1000 semi-implicit steps), inertial: forward {g['forward_wall_s']:.3f} s "
          f"wall / {g['forward_cpu_s']:.3f} s CPU, reverse-mode gradient "
          f"{g['grad_wall_s']:.3f} s / {g['grad_cpu_s']:.3f} s (compile {g['grad_compile_s']:.1f}"
          f" s)")
    print(f"gradient / forward: {g['ratio_wall']:.2f} wall, {g['ratio_cpu']:.2f} CPU (aim <= 5)")
    for label, other in (("massless", massless), ("skeleton alone", models(actuated=False)[0])):
        h = gradient_cost(other, args.repeats)
        print(f"  the same for the {label} model (w.r.t. q0, qd0): forward "
              f"{h['forward_wall_s']:.4f} s, gradient {h['grad_wall_s']:.4f} s wall, ratio "
              f"{h['ratio_wall']:.2f} wall, {h['ratio_cpu']:.2f} CPU")
    if args.hill:
        for tendon in ("rigid", "explicit_force"):
            h0, h1 = (hill_step_cost(m, tendon, args.steps, args.repeats)
                      for m in models(actuated=False))
            print(f"RK4 step with 4 De Groote muscles ({tendon} tendon): massless "
                  f"{h0['wall_us']:.1f} us, 4 x {N_POINTS} points {h1['wall_us']:.1f} us wall, "
                  f"ratio {h1['wall_us'] / h0['wall_us']:.2f} (CPU "
                  f"{h1['cpu_us'] / h0['cpu_us']:.2f})")
    if args.implicit:
        t0, t1 = implicit_cost(massless, args.repeats), implicit_cost(inertial, args.repeats)
        print(f"200 BDF1 steps (Newton, forward-mode Jacobian): massless {t0:.4f} s, inertial "
              f"{t1:.4f} s wall")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
