"""`myotwin osim forward` vs OpenSim 4.6's forward simulation of the same model, timed in one
process.

Two models of `shared/reference/opensim/models`, driven as the forward tests drive them:
  * arm26.osim (its two WrapEllipsoids and four WrapCylinders included; six Thelen2003
    muscles, compliant tendons with fiber length as the state, as OpenSim's: `--tendon
    opensim`, the command's default),
    every muscle excited at 0.5 from q = (0, 1) rad (tests/osim/test_osim_forward_arm26.py);
  * gait10dof18musc.osim (spline-coupled knees, 18 Millard2012 muscles with fiber length as
    the state, `--tendon damped_fiber_length`), every muscle excited at 0.3 from the default
    pose (tests/osim/test_osim_forward_gait.py; no ground: the model falls);
  * leg6dof9musc.osim (a CoordinateCouplerConstraint eliminated, a welded body merged; nine
    Thelen2003 muscles with their fiber-length state, `--tendon opensim`; no wrap objects),
    every muscle at 0.3 from the default pose (tests/osim/test_osim_forward_leg6dof9musc.py).
Activations start at the excitation, muscles in equilibrium, speeds 0, OpenSim's force
coupling (`coupling="opensim"`).

Ours, on a model loaded once: `myotwin.osim.forward.forward` as `--integrator rk4` runs it
(fixed-step RK4 at --dt-s, rows written every ms), its first call (JAX compilation included)
and a second call; and the integration alone, `musculoskeletal.rollout` in `forward`'s chunks
of CHUNK_STEPS steps, warm, median of --repeats: the counterpart of `Manager.integrate`.
With --rk45-accuracy also `forward` with the error-controlled integrator (the command's
default, at accuracy 1e-7). OpenSim: the
Manager with a PrescribedController of Constant excitations, `equilibrateMuscles`,
Runge-Kutta-Merson at each --opensim-accuracy ("default": the Manager's own setting, none
given), --repeats runs each; its setup (Model from the file, initSystem, equilibrium) timed
apart from `Manager.integrate`. Prints the times, the ratios, and the largest difference of
the final coordinates from OpenSim's (the same model; what remains is the integrators' error).

    taskset -c 1 .venv/bin/python benchmarks/osim_forward_vs_opensim.py \\
        --arm26-duration-s 0.1 --gait-duration-s 0.05 --leg-duration-s 0.05
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from shared_reference import SHARED  # noqa: E402

MODELS = SHARED / "reference/opensim/models"
CASES = {
    "arm26": {"file": MODELS / "arm26.osim", "excitation": 0.5, "tendon": "opensim",
              "q0": {"r_shoulder_elev": 0.0, "r_elbow_flex": 1.0}},
    "gait10dof18musc": {"file": MODELS / "gait10dof18musc.osim", "excitation": 0.3,
                        "tendon": "damped_fiber_length", "q0": {}},
    "leg6dof9musc": {"file": MODELS / "leg6dof9musc.osim", "excitation": 0.3,
                     "tendon": "opensim", "q0": {}},
}


def _forward_runs(loaded, msm, inputs, case, duration_s, dt_s, **kw) -> tuple[list, dict]:
    """Wall times (s) of two calls of `forward` (the first compiles) and the last summary."""
    from myotwin.osim.forward import forward

    record = dt_s * max(1, round(1e-3 / dt_s))
    times, summary = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            t0 = time.perf_counter()
            summary = forward(loaded, msm, tmp, inputs=inputs, duration_s=duration_s,
                              dt_s=dt_s, record_every_s=record, q0=case["q0"], **kw)
            times.append(time.perf_counter() - t0)
    return times, summary


def ours(case: dict, duration_s: float, dt_s: float, repeats: int, rk45_accuracy) -> dict:
    """Wall times of our forward simulation (s) and its final coordinates."""
    import jax
    import jax.numpy as jnp

    from myotwin import musculoskeletal as ms
    from myotwin import osim
    from myotwin.osim.forward import CHUNK_STEPS, Inputs
    from myotwin.osim.forward_start import initial_q

    t0 = time.perf_counter()
    loaded = osim.load(case["file"])
    msm = ms.musculoskeletal_model(loaded.model,
                                   osim.build_muscles(loaded, tendon=case["tendon"]),
                                   coupling="opensim", coordinates=loaded.coupling)
    inputs = Inputs(loaded, case["excitation"])
    out = {"load_s": time.perf_counter() - t0}
    out["forward_s"], summary = _forward_runs(loaded, msm, inputs, case, duration_s, dt_s,
                                              integrator="rk4")
    out["n_steps"], out["final_q"] = summary["n_steps"], summary["final_q"]
    # the integration alone, as forward chunks it (Manager.integrate's counterpart)
    q = jnp.asarray(initial_q(loaded, case["q0"]))
    state = ms.equilibrium_state(msm, q, jnp.zeros_like(q), case["excitation"])
    u = jnp.full(msm.n_muscles, case["excitation"])
    chunk = min(CHUNK_STEPS, out["n_steps"])
    n_chunks = -(-out["n_steps"] // chunk)

    def integrate():
        s = state
        for _ in range(n_chunks):
            s = jax.tree_util.tree_map(lambda x: x[-1], ms.rollout(msm, s, u, dt_s, chunk))
        return jax.block_until_ready(s)

    integrate()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        integrate()
        times.append(time.perf_counter() - t0)
    out["rollout_s"] = statistics.median(times)
    out["rollout_steps"] = n_chunks * chunk
    if rk45_accuracy is not None:
        out["rk45_s"], summary = _forward_runs(loaded, msm, inputs, case, duration_s, dt_s,
                                               integrator="rk45", accuracy=rk45_accuracy)
        out["rk45_final_q"] = summary["final_q"]
    return out


def theirs(opensim, case: dict, duration_s: float, accuracy, repeats: int) -> dict:
    """Wall times of OpenSim's forward simulation (s): setup and Manager.integrate."""
    setup, integrate, final_q = [], [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = opensim.Model(str(case["file"]))
        controller = opensim.PrescribedController()
        muscles = model.getMuscles()
        for i in range(muscles.getSize()):
            controller.addActuator(muscles.get(i))
            controller.prescribeControlForActuator(muscles.get(i).getName(),
                                                   opensim.Constant(case["excitation"]))
        model.addController(controller)
        state = model.initSystem()
        for name, value in case["q0"].items():
            model.getCoordinateSet().get(name).setValue(state, value)
        for i in range(muscles.getSize()):
            muscles.get(i).setActivation(state, case["excitation"])
        model.equilibrateMuscles(state)
        manager = opensim.Manager(model)
        if accuracy != "default":
            manager.setIntegratorAccuracy(float(accuracy))
        state.setTime(0.0)
        manager.initialize(state)
        t1 = time.perf_counter()
        state = manager.integrate(duration_s)
        integrate.append(time.perf_counter() - t1)
        setup.append(t1 - t0)
        final_q = {c.getName(): c.getValue(state) for c in model.getCoordinateSet()}
    return {"setup_s": statistics.median(setup), "integrate_s": statistics.median(integrate),
            "final_q": final_q}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm26-duration-s", type=float, default=0.1,
                        help="simulated time of arm26 (s; 0 to skip it)")
    parser.add_argument("--gait-duration-s", type=float, default=0.05,
                        help="simulated time of gait10dof18musc (s; 0 to skip it)")
    parser.add_argument("--leg-duration-s", type=float, default=0.05,
                        help="simulated time of leg6dof9musc (s; 0 to skip it)")
    parser.add_argument("--dt-s", type=float, default=1e-4, help="our RK4 step (s)")
    parser.add_argument("--opensim-accuracy", nargs="+", default=["default", "1e-5", "1e-9"],
                        help="OpenSim integrator accuracies to time ('default': none set)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="warm rollouts of ours and runs of OpenSim per accuracy")
    parser.add_argument("--rk45-accuracy", type=float, default=None,
                        help="also time our forward() with integrator rk45 at this accuracy")
    args = parser.parse_args()

    import myotwin
    myotwin.configure_jax()
    from opensim_live import opensim_package

    opensim = opensim_package()
    opensim.Logger.setLevelString("error")
    durations = {"arm26": args.arm26_duration_s, "gait10dof18musc": args.gait_duration_s,
                 "leg6dof9musc": args.leg_duration_s}
    for name, case in CASES.items():
        duration_s = durations[name]
        if duration_s <= 0.0:
            continue
        if not case["file"].exists():
            print(f"{name}: {case['file']} is absent, skipped")
            continue
        mine = ours(case, duration_s, args.dt_s, args.repeats, args.rk45_accuracy)
        first, second = mine["forward_s"]
        per_step = mine["rollout_s"] / mine["rollout_steps"]
        print(f"{name}, {duration_s:g} s simulated ({case['tendon']}, coupling opensim):")
        print(f"  ours, forward() with RK4 at {args.dt_s:g} s ({mine['n_steps']} steps): first "
              f"call {first:.1f} s (compilation), second call {second:.1f} s; osim.load + "
              f"muscles {mine['load_s']:.2f} s")
        print(f"  ours, the integration alone (rollout, warm, median of {args.repeats}): "
              f"{mine['rollout_s']:.3f} s, {per_step * 1e3:.3f} ms per RK4 step")
        if args.rk45_accuracy is not None:
            print(f"  ours, forward() with rk45 at accuracy {args.rk45_accuracy:g}: first call "
                  f"{mine['rk45_s'][0]:.1f} s, second call {mine['rk45_s'][1]:.1f} s")
        for accuracy in args.opensim_accuracy:
            ref = theirs(opensim, case, duration_s, accuracy, args.repeats)
            dq = max(abs(mine["final_q"][c] - v) for c, v in ref["final_q"].items())
            ratio = mine["rollout_s"] / ref["integrate_s"]
            print(f"  OpenSim, accuracy {accuracy}: integrate {ref['integrate_s']:.3f} s, setup "
                  f"{ref['setup_s']:.3f} s (medians of {args.repeats}); ours (rollout) / "
                  f"OpenSim (integrate) {ratio:.1f}x; ours forward() first call / OpenSim "
                  f"setup + integrate {first / (ref['setup_s'] + ref['integrate_s']):.0f}x; "
                  f"final q (RK4) within {dq:.1e} of OpenSim's")
            if args.rk45_accuracy is not None:
                dq = max(abs(mine["rk45_final_q"][c] - v) for c, v in ref["final_q"].items())
                print(f"    final q (rk45) within {dq:.1e} of OpenSim's")

if __name__ == "__main__":
    main()
