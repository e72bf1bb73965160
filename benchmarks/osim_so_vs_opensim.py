"""`myotwin osim static-optimization` vs OpenSim 4.6's StaticOptimization analysis (its
AnalyzeTool with a coordinates file), timed in one process.

--case arm26 (default): arm26.osim (six Thelen2003Muscles over two WrapCylinders and two
WrapEllipsoids) along arm26_InverseKinematics.mot with a 6 Hz lowpass, 121 times, activation
exponent 2, as in tests/osim/test_osim_static_optimization.py. --case gait:
gait10dof18musc.osim (18 Millard2012EquilibriumMuscles) with reserve actuators on every
coordinate along subject01's walk with its ground reactions, 0.5-1.5 s (61 times), as in that
file's walking test. Ours: `static_optimization.run` (load, prepare
the motion, inverse dynamics, the batched path state and muscle forces, SLSQP per time,
write), first call in the process (compilation included), then --repeats more calls (the
compiled functions reused: the same model structure); OpenSim: AnalyzeTool.run() on a
setup file (model read, states from the coordinates, the analysis, write), --repeats runs,
at its convergence criterion 1e-10 and at its default 1e-4. Prints the times, the ratios and
the largest activation difference.

    taskset -c 1 .venv/bin/python benchmarks/osim_so_vs_opensim.py [--case gait]
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
GAIT_DATA = REF / "data/gait10dof18musc"


def _case(name: str, tmp: pathlib.Path):
    """(model, coordinates file, external loads or None, start s, end s, label)."""
    if name == "arm26":
        return (REF / "models/arm26.osim", REF / "data/arm26/arm26_InverseKinematics.mot",
                None, 0.0, 1.0, "arm26, 6 Thelen muscles")
    sys.path.insert(0, str(ROOT / "tests" / "osim"))
    from osim_synthetic import GAIT_RESERVES, with_coordinate_actuators

    model = tmp / "gait10dof18musc_reserves.osim"
    model.write_text(with_coordinate_actuators(
        (REF / "models/gait10dof18musc.osim").read_text(), GAIT_RESERVES))
    return (model, GAIT_DATA / "subject01_walk_IK.mot", GAIT_DATA / "subject01_walk_grf.xml",
            0.5, 1.5, "gait10dof18musc, 18 Millard muscles + 10 reserves")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", choices=("arm26", "gait"), default="arm26")
    args = parser.parse_args()
    from myotwin.jax_setup import configure_jax

    configure_jax()   # before anything creates JAX's backend
    from myotwin.osim.static_optimization import run
    from myotwin.osim.storage import read_storage
    from opensim_live import run_static_optimization

    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        model, motion, loads, start_s, end_s, label = _case(args.case, tmp)
        options = dict(cutoff_hz=6.0, external_loads_path=loads, start_time_s=start_s,
                       end_time_s=end_s)
        started = time.perf_counter()
        run(model, motion, tmp / "ours", **options)
        first = time.perf_counter() - started
        warm = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            run(model, motion, tmp / "ours", **options)
            warm.append(time.perf_counter() - started)
        ours = read_storage(tmp / "ours" / "static_optimization_activation.sto")
        theirs = {}
        for criterion in (1e-10, 1e-4):
            times = []
            for k in range(args.repeats):
                out = tmp / f"os_{criterion:g}_{k}"
                out.mkdir()
                started = time.perf_counter()
                activation, _ = run_static_optimization(out, model, motion, 6.0, start_s,
                                                        end_s, convergence=criterion,
                                                        external_loads=loads)
                times.append(time.perf_counter() - started)
            theirs[criterion] = (statistics.median(times), activation)
    warm_s = statistics.median(warm)
    print(f"{label}, {ours.time_s.size} times")
    print(f"  ours: first call {first:.1f} s (compile included), warm {warm_s * 1e3:.0f} ms")
    for criterion, (seconds, activation) in theirs.items():
        diff = np.abs(ours.data[:, 1:] - activation.data[:, 1:]).max()
        print(f"  OpenSim (criterion {criterion:g}): {seconds * 1e3:.0f} ms; ours warm / "
              f"OpenSim {warm_s / seconds:.2f}x, first call / OpenSim {first / seconds:.0f}x; "
              f"activations within {diff:.1e}")


if __name__ == "__main__":
    main()
