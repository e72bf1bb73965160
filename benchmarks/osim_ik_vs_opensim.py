"""`myotwin osim inverse-kinematics` vs OpenSim 4.6's InverseKinematicsTool on the same files,
timed in one process.

Two cases of the tests (tests/osim/test_osim_inverse_kinematics.py):
  * gait10dof18musc_subject01.osim with subject01_walk.trc, every frame (151), every model
    marker the file has at weight 1 (both tools' default);
  * arm26.osim with the tutorial's arm26_elbow_flex.trc moved into the ground frame (121
    frames), every marker at weight 1.
Ours: `inverse_kinematics.run` as the command runs it (model and files read, the residual and
its Jacobian compiled, every frame solved and written), first call in the process; then the
frames alone (`solve_frames` with the functions compiled), median of --repeats. OpenSim: the
tool's `run()` (model read, initSystem, every frame solved and written), at its default
accuracy 1e-5 and at 1e-10, median of --repeats. Prints the times, the ratios and the largest
difference of the coordinates from OpenSim's at 1e-10.

    taskset -c 1 .venv/bin/python benchmarks/osim_ik_vs_opensim.py
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from shared_reference import SHARED  # noqa: E402

REF = SHARED / "reference/opensim"


def _cases(tmp: pathlib.Path) -> dict:
    from myotwin.osim.trc import read_trc, write_trc

    arm = read_trc(REF / "data/arm26/arm26_elbow_flex.trc")
    arm_file = tmp / "arm26_in_ground.trc"
    write_trc(arm_file, arm.time_s, arm.marker_names,
              arm.positions_m + np.array([0.0, 0.8, 0.0]))
    return {"gait10dof18musc_subject01": (REF / "models/gait10dof18musc_subject01.osim",
                                          REF / "data/gait10dof18musc/subject01_walk.trc"),
            "arm26": (REF / "models/arm26.osim", arm_file)}


def _ours(model, markers, tmp, repeats):
    from myotwin.osim import inverse_kinematics as ik
    from myotwin.osim.loader import load
    from myotwin.osim.markers import read_markers
    from myotwin.osim.storage import read_storage
    from myotwin.osim.trc import read_trc

    started = time.perf_counter()
    summary = ik.run(model, markers, tmp / "ours")
    first = time.perf_counter() - started
    loaded = load(model, forces=False)
    trial = read_trc(markers)
    prob = ik.problem(loaded, read_markers(model), trial)
    functions = ik.residual_function(loaded, prob)
    q0 = np.array([loaded.coordinate_default_values[n] for n in loaded.coordinates])
    frames = np.arange(trial.time_s.size)
    list(ik.solve_frames(loaded, prob, trial, frames[:1], q0, functions=functions))  # compile
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        list(ik.solve_frames(loaded, prob, trial, frames, q0, functions=functions))
        times.append(time.perf_counter() - started)
    table = read_storage(tmp / "ours" / "inverse_kinematics.mot")
    return first, statistics.median(times), summary, table


def _opensim(model, markers, tmp, accuracy, repeats):
    from opensim_live import run_inverse_kinematics_tool

    times, table = [], None
    for k in range(repeats):
        started = time.perf_counter()
        table, _ = run_inverse_kinematics_tool(tmp, model, markers, None, -np.inf, np.inf,
                                               accuracy, file_name=f"os_{accuracy:g}_{k}.mot")
        times.append(time.perf_counter() - started)
    return statistics.median(times), table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from myotwin.jax_setup import configure_jax

    configure_jax()   # before anything creates JAX's backend
    from myotwin.osim.inverse_dynamics import output_coordinates
    from myotwin.osim.loader import load

    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        for case, (model, markers) in _cases(tmp).items():
            first, solve, summary, ours = _ours(model, markers, tmp, args.repeats)
            default, _ = _opensim(model, markers, tmp, 1e-5, args.repeats)
            tight, theirs = _opensim(model, markers, tmp, 1e-10, args.repeats)
            out = output_coordinates(load(model, forces=False))
            rotational = [m == "rotational" for m in out.motion]
            q = theirs.data[:, 1:].copy()
            q[:, rotational] = np.radians(q[:, rotational])
            dq = np.abs(ours.data[:, 1:] - q).max()
            print(f"{case}: {summary['n_frames']} frames, {len(summary['markers'])} markers")
            print(f"  ours: run() first call {first:.2f} s (compile included); frames alone "
                  f"{solve * 1e3:.0f} ms ({solve / summary['n_frames'] * 1e3:.2f} ms/frame)")
            print(f"  OpenSim tool: accuracy 1e-5 {default * 1e3:.0f} ms, 1e-10 "
                  f"{tight * 1e3:.0f} ms")
            print(f"  ratio ours frames alone / OpenSim 1e-10: {solve / tight:.1f}x; ours "
                  f"first call / OpenSim 1e-10: {first / tight:.0f}x")
            print(f"  q: ours (accuracy {summary['accuracy']:g}) within {dq:.1e} of "
                  "OpenSim's at 1e-10")


if __name__ == "__main__":
    main()
