"""Muscle-tendon lengths and moment arms along measured motion: the geometric outputs of
OpenSim's MuscleAnalysis (run by its AnalyzeTool with a coordinates file).

`myotwin osim muscle-analysis MODEL --coordinates IK.mot [--lowpass-hz F] --out DIR`
(docs/osim.md "Muscle analysis"):
* q at the analysis' times: the coordinates file prepared as OpenSim's tools prepare it
  (`inverse_dynamics.prepared_motion`: padding, lowpass, splines; the times within the range);
* per time, each muscle's path length (OpenSim's GeometryPath::getLength) and its moment arm
  about each of the model's coordinates (`OsimModel.coordinates`) as OpenSim's
  computeMomentArm gives it: the generalized force of a unit tension along the current path,
  the points held on their bodies (`paths.opensim_path.generalized_force_moment_arms`;
  -dL/dq for MJCF paths, which equals it there), reduced by the coupling's J^T;
* written as OpenSim's MuscleAnalysis names its files: `muscle_analysis_Length.sto` (m) and
  `muscle_analysis_MomentArm_<coordinate>.sto` (m, or m per m for a translational
  coordinate), columns the muscles in ForceSet order, SI, inDegrees=no; `summary.json`.
Not here: coordinates a CoordinateCouplerConstraint eliminates and locked ones (OpenSim
writes files for them too), and the muscle-state outputs (fiber length, forces, powers:
they depend on the muscle states, which an analysis of coordinates alone takes from the
model's defaults or an equilibrium).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.musculoskeletal.paths import skeleton_path_state
from myotwin.osim.inverse_dynamics import prepared_motion
from myotwin.osim.loader import OsimModel, load
from myotwin.osim.storage import StorageWriter, read_storage

#: Rows of q per call of the compiled geometry (the last call padded), as static optimization.
ROWS_PER_CALL = 64


def _rows(skeleton, coordinates, q):
    """(lengths (n, n_paths), moment arms (n, n_coordinates, n_paths)) at rows of q, one row
    after another (`lax.map`: the body compiles once)."""
    def one(row):
        lengths, _, arms = skeleton_path_state(skeleton, coordinates, row,
                                               jnp.zeros_like(row), True)
        return lengths, arms

    return jax.lax.map(one, q)


_compiled_rows = jax.jit(_rows)


def lengths_and_moment_arms(loaded: OsimModel, q) -> tuple[np.ndarray, np.ndarray]:
    """(lengths (n_rows, n_muscles) m, moment arms (n_rows, n_coordinates, n_muscles)) at rows
    of coordinates q (n_rows, n_coordinates) (module docstring)."""
    q = np.atleast_2d(np.asarray(q, dtype=np.float64))
    n = q.shape[0]
    padded = np.concatenate([q, np.repeat(q[-1:], -n % ROWS_PER_CALL, axis=0)])
    lengths, arms = [], []
    for start in range(0, padded.shape[0], ROWS_PER_CALL):
        out = _compiled_rows(loaded.model, loaded.coupling,
                             jnp.asarray(padded[start:start + ROWS_PER_CALL]))
        lengths.append(np.asarray(out[0]))
        arms.append(np.asarray(out[1]))
    return np.concatenate(lengths)[:n], np.concatenate(arms)[:n]


def run(model_path, coordinates_path, out_dir, *, cutoff_hz: float | None = None,
        start_time_s: float = -np.inf, end_time_s: float = np.inf) -> dict:
    """`myotwin osim muscle-analysis`: writes DIR/muscle_analysis_Length.sto, one
    DIR/muscle_analysis_MomentArm_<coordinate>.sto per coordinate and DIR/summary.json;
    returns the summary. Bad input raises ValueError naming the file, field and value;
    lengths or moment arms that are not finite raise FloatingPointError after the rows before
    them are written."""
    if cutoff_hz is not None and not cutoff_hz > 0:
        raise ValueError(f"--lowpass-hz must be positive (omit it for no filtering), got "
                         f"{cutoff_hz!r}")
    started = time.perf_counter()
    loaded = load(model_path)
    if not loaded.muscle_names:
        raise ValueError(f"{model_path}: the model has no muscles to analyse")
    motion = prepared_motion(loaded, read_storage(coordinates_path), cutoff_hz=cutoff_hz,
                             start_time_s=start_time_s, end_time_s=end_time_s,
                             source=str(coordinates_path))
    lengths, arms = lengths_and_moment_arms(loaded, motion.q)
    finite = np.isfinite(lengths).all(axis=1) & np.isfinite(arms).all(axis=(1, 2))
    good = int(np.argmin(finite)) if not finite.all() else finite.size   # rows written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = ("time", *loaded.muscle_names)
    times, lengths, arms = motion.times_s[:good, None], lengths[:good], arms[:good]
    files = {"Length": out / "muscle_analysis_Length.sto"}
    with StorageWriter(files["Length"], "Length", labels,
                       f"myotwin osim muscle-analysis: {model_path}") as writer:
        writer.write_rows(np.concatenate([times, lengths], axis=1))
    for k, coordinate in enumerate(loaded.coordinates):
        path = out / f"muscle_analysis_MomentArm_{coordinate}.sto"
        files[f"MomentArm_{coordinate}"] = path
        with StorageWriter(path, f"MomentArm_{coordinate}", labels,
                           f"moment arms about {coordinate} (computeMomentArm)") as writer:
            writer.write_rows(np.concatenate([times, arms[:, k, :]], axis=1))
    summary = {
        "model": str(model_path),
        "coordinates_file": str(coordinates_path),
        "lowpass_cutoff_hz": cutoff_hz,
        "muscles": list(loaded.muscle_names),
        "coordinates": list(loaded.coordinates),
        "coordinates_missing": list(motion.missing),
        "n_rows": good,
        "first_time_s": float(motion.times_s[0]),
        "last_time_s": float(motion.times_s[-1]),
        "files": {name: str(path) for name, path in files.items()},
        "wall_time_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if good < finite.size:
        raise FloatingPointError(f"{model_path}: the muscles' lengths or moment arms are not "
                                 f"finite at t = {float(motion.times_s[good])!r} s; the rows "
                                 f"before it are written in {out}")
    return summary
