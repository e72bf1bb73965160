"""Inverse dynamics of OpenSim's walking example: ours vs OpenSim 4.6's InverseDynamicsTool,
timed in the same process.

gait10dof18musc_subject01.osim, subject01_walk_IK.mot (151 frames), subject01_walk_grf.xml,
6 Hz lowpass, 0-2.5 s, muscles excluded. OpenSim: `InverseDynamicsTool.run()` (reads the
files, filters, splines, solves, writes). Ours: the same steps in process
(`osim.inverse_dynamics`: read the IK table and the loads, prepare, solve; the model loaded
once, as a batch of trials would), first call (JAX compilation included) and warm calls.
Prints the medians, their ratio and the largest difference of the results.

    .venv/bin/python benchmarks/inverse_dynamics_vs_opensim.py [--repeats 7]
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
MODEL = REF / "models/gait10dof18musc_subject01.osim"
DATA = REF / "data/gait10dof18musc"
IK, GRF_XML = DATA / "subject01_walk_IK.mot", DATA / "subject01_walk_grf.xml"


def ours_once(loaded):
    from myotwin.osim import inverse_dynamics as ID
    from myotwin.osim.external_loads import evaluate_external_loads, read_external_loads
    from myotwin.osim.storage import read_storage

    motion = ID.prepared_motion(loaded, read_storage(IK), cutoff_hz=6.0, start_time_s=0.0,
                                end_time_s=2.5)
    loads = evaluate_external_loads(read_external_loads(GRF_XML), motion.times_s)
    return ID.generalized_forces(loaded, motion, ID.load_plan(loaded, loads,
                                                              motion.times_s.size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import myotwin
    myotwin.configure_jax()
    from myotwin import osim
    from myotwin.osim import inverse_dynamics as ID
    from opensim_live import opensim_package, run_inverse_dynamics_tool

    opensim_package().Logger.setLevelString("error")
    with tempfile.TemporaryDirectory() as tmp:
        theirs_s, theirs = [], None
        for k in range(args.repeats):
            t0 = time.perf_counter()
            theirs = run_inverse_dynamics_tool(pathlib.Path(tmp), MODEL, IK, GRF_XML, 6.0, 0.0,
                                               2.5, f"id{k}.sto")
            theirs_s.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    loaded = osim.load(MODEL, forces=False)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tau = ours_once(loaded)
    first_s = time.perf_counter() - t0
    ours_s = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        tau = ours_once(loaded)
        ours_s.append(time.perf_counter() - t0)
    labels = ID.column_labels(loaded)[1:]
    diff = max(float(np.abs(tau[:, i] - theirs.column(label)).max())
               for i, label in enumerate(labels))
    t_theirs, t_ours = statistics.median(theirs_s), statistics.median(ours_s)
    print(f"frames: {tau.shape[0]}, coordinates: {tau.shape[1]}")
    print(f"OpenSim InverseDynamicsTool.run(): median {t_theirs * 1e3:.1f} ms "
          f"(of {args.repeats})")
    print(f"ours, warm (read + prepare + solve): median {t_ours * 1e3:.1f} ms; "
          f"first call {first_s:.2f} s (compilation); osim.load {load_s:.2f} s")
    print(f"ratio OpenSim / ours (warm): {t_theirs / t_ours:.1f}x; "
          f"ours first call / OpenSim: {first_s / t_theirs:.0f}x")
    print(f"largest difference of the generalized forces: {diff:.2e} N m or N")


if __name__ == "__main__":
    main()
