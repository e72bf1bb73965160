"""Inverse kinematics of an .osim model from measured markers, as OpenSim's
InverseKinematicsTool.

`myotwin osim inverse-kinematics MODEL --markers TRIAL.trc [--tasks TASKS.xml] --out DIR`
(docs/osim.md "Inverse kinematics"). At each frame of the marker file (within the time range)
the coordinates q minimise OpenSim's weighted least squares

    sum_i w_i |x_i(q) - m_i|^2  +  sum_j w_j (q_j - v_j)^2

over the model's markers x_i (`markers.py`: the MarkerSet, fixed on bodies) and the measured
positions m_i (`trc.py`, in metres), and the coordinate tasks (q_j toward a value v_j).
* Weights: without a task file, every model marker the file has, weight 1, no coordinate
  task. With one (`ik_tasks.py`: an IKTaskSet, or an InverseKinematicsTool setup file holding
  one), the applied tasks with their weights; markers without a task are not used (OpenSim
  builds its MarkersReference from the task set).
* A marker missing at a frame (empty in the file) is left out of that frame's sum.
* Constraints: a CoordinateCouplerConstraint's dependent coordinate follows its independent
  one exactly (eliminated by the loader: OpenSim's default constraint_weight Infinity).
  A locked coordinate stays at its value (its default_value, as OpenSim's assembler holds
  it; a coordinate task on it is a constant and left out).
  Coordinates with `clamped` true stay inside their range (OpenSim's assembler restricts a
  clamped coordinate's q to its range); the others are free.
* Solver: SciPy's trust-region reflective least squares (`scipy.optimize.least_squares`,
  bounds for the clamped coordinates) on the residual vector sqrt(w) (x(q) - m), with its
  Jacobian from the engine's point Jacobians of the markers; the first frame starts from
  the model's default pose (clipped into the bounds), each later frame from the previous
  solution, as OpenSim's assemble-then-track. Converged to `accuracy` (relative change of
  the cost and of q, SciPy's ftol / xtol / gtol; default 1e-12, much finer than OpenSim's
  default 1e-5: the cost is flat near its minimum, so on gait10dof18musc a cost converged
  to 1e-10 still leaves q 1e-6 rad from the minimiser, 1e-12 1e-7 rad).
Output, written as frames are solved (a crash loses no solved frame):
`inverse_kinematics.mot` (time and every coordinate, the coupled ones included, in OpenSim's
order `OsimModel.all_coordinates`; SI: rad and m, inDegrees=no), `marker_errors.sto`
(OpenSim's columns, all unweighted: total_squared_error (m^2), the sum over the markers
present at that frame; marker_error_RMS (m), sqrt(total / every marker used, the missing ones
included), as OpenSim computes it; marker_error_max (m)), `summary.json`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import least_squares

from myotwin.engine.coupling import full_jacobian, full_positions
from myotwin.osim.forward import dependent_coordinates, eliminated_coordinates
from myotwin.osim.ik_tasks import IKTasks, read_ik_tasks
from myotwin.osim.inverse_dynamics import check_accuracy, time_window
from myotwin.osim.loader import OsimModel, load
from myotwin.osim.markers import (MarkerPlacement, placement, positions,
                                  positions_and_jacobian, read_markers)
from myotwin.osim.storage import StorageWriter
from myotwin.osim.trc import MarkerTrajectories, read_trc

#: Default convergence tolerance (SciPy's ftol and xtol, relative).
DEFAULT_ACCURACY = 1e-12
#: Largest number of residual evaluations per frame.
MAX_EVALUATIONS = 200
MARKER_ERROR_LABELS = ("time", "total_squared_error", "marker_error_RMS", "marker_error_max")


@dataclasses.dataclass(frozen=True)
class Problem:
    """What every frame's least squares is made of (module docstring).

    place: the markers used (model markers with a weight > 0 that the marker file has);
    marker_weight (n_used,); marker_column (n_used,): their index in the marker file;
    task_index / task_weight / task_value: coordinate tasks on q (reduced coordinates);
    lower, upper (n_q,): bounds (+-inf where not clamped)."""

    place: MarkerPlacement
    marker_weight: np.ndarray
    marker_column: np.ndarray
    task_index: np.ndarray
    task_weight: np.ndarray
    task_value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def problem(loaded: OsimModel, markers, trial: MarkerTrajectories,
            tasks: IKTasks | None = None, *, tasks_source: str = "") -> Problem:
    """The least-squares problem of `loaded` with the model's `markers` (`read_markers`)
    against `trial`, weighted by `tasks` (None: every model marker the trial has, weight 1);
    ValueError naming the file, task, marker or coordinate that does not fit."""
    by_name = {m.name: m for m in markers}
    weights: dict[str, float] = {}
    values: dict[str, tuple[float, float]] = {}
    if tasks is None:
        weights = {m.name: 1.0 for m in markers if m.name in trial.marker_names}
    else:
        for task in tasks.markers:
            if task.name not in by_name:
                raise ValueError(f"{tasks_source}: IKMarkerTask '{task.name}': the model "
                                 f"{loaded.source} has no such marker (markers: "
                                 f"{list(by_name)})")
            if task.apply and task.weight > 0.0:
                if task.name not in trial.marker_names:
                    raise ValueError(f"{tasks_source}: IKMarkerTask '{task.name}': the marker "
                                     f"file {trial.name} has no such marker (markers: "
                                     f"{list(trial.marker_names)})")
                weights[task.name] = task.weight
        for task in tasks.coordinates:
            values_of = _coordinate_task(loaded, task, tasks_source)
            if values_of is not None:
                values[task.name] = values_of
    if not weights:
        raise ValueError(f"{trial.name}: no marker of the model {loaded.source} is used "
                         f"(model markers {list(by_name)}, file markers "
                         f"{list(trial.marker_names)})")
    used = [m for m in markers if m.name in weights]
    lower = np.full(len(loaded.coordinates), -np.inf)
    upper = np.full(len(loaded.coordinates), np.inf)
    for k, name in enumerate(loaded.coordinates):
        if loaded.coordinate_clamped[name]:
            lower[k], upper[k] = loaded.coordinate_ranges[name]
    return Problem(
        place=placement(used, loaded.body_names, loaded.source),
        marker_weight=np.array([weights[m.name] for m in used]),
        marker_column=np.array([trial.marker_names.index(m.name) for m in used]),
        task_index=np.array([loaded.coordinates.index(n) for n in values], dtype=np.int64),
        task_weight=np.array([w for w, _ in values.values()]),
        task_value=np.array([v for _, v in values.values()]),
        lower=lower, upper=upper)


def _coordinate_task(loaded: OsimModel, task, source: str):
    """(weight, value in rad or m) of an applied IKCoordinateTask, or None if unused."""
    if task.name in loaded.coupled_coordinates:
        c = loaded.coupled_coordinates[task.name]
        raise ValueError(f"{source}: IKCoordinateTask '{task.name}': the coordinate follows "
                         f"{c.independent!r} through {c.constraint!r}; put the task on "
                         f"{c.independent!r}")
    if task.name in loaded.locked_coordinates:
        return None   # the coordinate cannot move: its task is a constant of the cost
    if task.name not in loaded.coordinates:
        raise ValueError(f"{source}: IKCoordinateTask '{task.name}': the model "
                         f"{loaded.source} has no such coordinate (coordinates: "
                         f"{list(loaded.coordinates)})")
    if not task.apply or task.weight == 0.0:
        return None
    if task.value_type == "default_value":
        return task.weight, float(loaded.coordinate_default_values[task.name])
    return task.weight, float(task.value)   # manual_value: rad or m, as written (ik_tasks)


def residual_function(loaded: OsimModel, prob: Problem):
    """Jitted (residual, jacobian) of q, targets (n_used, 3) m, present (n_used,) 0/1; the
    Jacobian from the engine's point Jacobians (`markers.positions_and_jacobian`) times the
    coupling's dq_f/dq."""
    model, coupling = loaded.model, loaded.coupling
    w_marker = jnp.sqrt(jnp.asarray(prob.marker_weight))
    w_task = jnp.sqrt(jnp.asarray(prob.task_weight))
    task_index, task_value = prob.task_index, jnp.asarray(prob.task_value)
    n_q = len(loaded.coordinates)
    task_rows = (jnp.eye(n_q)[task_index] if task_index.size else jnp.zeros((0, n_q)))

    def residual(q, targets, present):
        q_f = q if coupling is None else full_positions(coupling, q)
        gap = positions(model, prob.place, q_f) - targets
        markers = (w_marker * present)[:, None] * gap
        return jnp.concatenate([markers.reshape(-1), w_task * (q[task_index] - task_value)])

    def jacobian(q, targets, present):
        del targets
        q_f = q if coupling is None else full_positions(coupling, q)
        jac = positions_and_jacobian(model, prob.place, q_f)[1]
        if coupling is not None:
            jac = jac @ full_jacobian(coupling, q)
        markers = (w_marker * present)[:, None, None] * jac
        return jnp.concatenate([markers.reshape(-1, n_q), w_task[:, None] * task_rows])

    return jax.jit(residual), jax.jit(jacobian)


def solve_frames(loaded: OsimModel, prob: Problem, trial: MarkerTrajectories, frames,
                 q_start, accuracy: float = DEFAULT_ACCURACY, functions=None):
    """Yield (frame, q, result) for each frame index in `frames`, each started from the
    previous solution (the first from q_start); result is SciPy's OptimizeResult.
    functions: `residual_function(loaded, prob)`, compiled already (None: made here)."""
    fun, jac = residual_function(loaded, prob) if functions is None else functions
    q = np.clip(np.asarray(q_start, dtype=np.float64), prob.lower, prob.upper)
    for frame in frames:
        measured = trial.positions_m[frame][prob.marker_column]
        present = np.all(np.isfinite(measured), axis=1)
        targets = jnp.asarray(np.where(present[:, None], measured, 0.0))
        mask = jnp.asarray(present, dtype=jnp.float64)
        result = least_squares(lambda x: np.asarray(fun(jnp.asarray(x), targets, mask)), q,
                               jac=lambda x: np.asarray(jac(jnp.asarray(x), targets, mask)),
                               bounds=(prob.lower, prob.upper), method="trf",
                               ftol=accuracy, xtol=accuracy, gtol=accuracy,
                               max_nfev=MAX_EVALUATIONS)
        q = result.x
        yield frame, q, result


def marker_errors(prob: Problem, trial: MarkerTrajectories, frame,
                  residual) -> tuple[float, float, float]:
    """(total squared error m^2, RMS error m, largest error m) at `frame` from the solved
    residual vector (its marker part is sqrt(w_i) (x_i - m_i)), unweighted, as OpenSim's
    marker_errors columns (module docstring)."""
    measured = trial.positions_m[frame][prob.marker_column]
    present = np.all(np.isfinite(measured), axis=1)
    n = prob.marker_weight.size
    gap = (np.linalg.norm(np.asarray(residual)[:3 * n].reshape(n, 3), axis=1)
           / np.sqrt(prob.marker_weight))[present]
    if gap.size == 0:
        return 0.0, float("nan"), float("nan")
    total = float(np.sum(gap**2))   # OpenSim's total_squared_error is unweighted
    # OpenSim's RMS divides by every marker used, those missing at this frame included
    return total, float(np.sqrt(total / n)), float(gap.max())


def _frames_in(trial: MarkerTrajectories, start_s: float, end_s: float) -> np.ndarray:
    frames = np.flatnonzero((trial.time_s >= start_s - 1e-12) & (trial.time_s <= end_s + 1e-12))
    if frames.size == 0:
        raise ValueError(f"{trial.name}: no frame between {start_s!r} s and {end_s!r} s (the "
                         f"file runs from {trial.time_s[0]!r} s to {trial.time_s[-1]!r} s)")
    return frames


def output_row(loaded: OsimModel, q) -> np.ndarray:
    """The coordinates of one solved frame in `OsimModel.all_coordinates` order."""
    value = dict(zip(loaded.coordinates, np.asarray(q)))
    dependent = dependent_coordinates(loaded, np.asarray(q)[None], np.zeros((1, len(q))))[0]
    value.update(zip(eliminated_coordinates(loaded), dependent[0]))
    return np.array([value[name] for name in loaded.all_coordinates])


def run(model_path, markers_path, out_dir, *, tasks_path=None, start_time_s: float = -np.inf,
        end_time_s: float = np.inf, accuracy: float = DEFAULT_ACCURACY,
        setup=None) -> dict:
    """`myotwin osim inverse-kinematics`: writes DIR/inverse_kinematics.mot,
    DIR/marker_errors.sto and DIR/summary.json (module docstring); returns the summary.
    setup: the `ik_setup.IKSetup` the arguments came from (recorded in the summary). Bad
    input raises ValueError (OsimError, TrcError, IKTaskError) naming the file, field and
    value."""
    accuracy = check_accuracy(accuracy)
    start_time_s, end_time_s = time_window(str(markers_path), start_time_s, end_time_s)
    started = time.perf_counter()
    loaded = load(model_path, forces=False)
    markers = read_markers(model_path)
    trial = read_trc(markers_path)
    tasks = read_ik_tasks(tasks_path) if tasks_path else None
    prob = problem(loaded, markers, trial, tasks, tasks_source=str(tasks_path))
    frames = _frames_in(trial, start_time_s, end_time_s)
    q0 = np.array([loaded.coordinate_default_values[n] for n in loaded.coordinates])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    worst_rms = worst_max = 0.0
    failed, evaluations, at_bound = [], 0, set()
    with StorageWriter(out / "inverse_kinematics.mot", "Coordinates",
                       ("time", *loaded.all_coordinates),
                       f"myotwin osim inverse-kinematics: {model_path} with {markers_path} "
                       "(SI units)") as motion, \
            StorageWriter(out / "marker_errors.sto", "Model Marker Errors from IK",
                          MARKER_ERROR_LABELS) as errors:
        for frame, q, result in solve_frames(loaded, prob, trial, frames, q0, accuracy):
            t = float(trial.time_s[frame])
            if not np.all(np.isfinite(q)):
                raise FloatingPointError(f"{markers_path}: the solution at t = {t!r} s is not "
                                         "finite; the frames before it are written")
            motion.write_rows(np.concatenate([[t], output_row(loaded, q)])[None])
            total, rms, largest = marker_errors(prob, trial, frame, result.fun)
            errors.write_rows(np.array([[t, total, rms, largest]]))
            evaluations += int(result.nfev)
            if result.status <= 0:
                failed.append(t)
            at_bound.update(loaded.coordinates[k] for k in np.flatnonzero(result.active_mask))
            worst_rms, worst_max = np.nanmax([worst_rms, rms]), np.nanmax([worst_max, largest])
    summary = {
        "model": str(model_path),
        "markers_file": str(markers_path),
        "tasks_file": None if tasks_path is None else str(tasks_path),
        "setup_accuracy_not_used": None if setup is None else setup.accuracy,
        "markers": dict(zip(prob.place.names, prob.marker_weight.tolist())),
        "coordinate_tasks": {loaded.coordinates[int(k)]: {"weight": float(w), "value": float(v)}
                             for k, w, v in zip(prob.task_index, prob.task_weight,
                                                prob.task_value)},
        "coordinates": list(loaded.all_coordinates),
        "clamped_coordinates_at_bound": sorted(at_bound),
        "accuracy": accuracy,
        "n_frames": int(frames.size),
        "first_time_s": float(trial.time_s[frames[0]]),
        "last_time_s": float(trial.time_s[frames[-1]]),
        "residual_evaluations": evaluations,
        "frames_not_converged_s": failed,
        "marker_error_rms_max_m": float(worst_rms),
        "marker_error_max_m": float(worst_max),
        "files": {"coordinates": str(out / "inverse_kinematics.mot"),
                  "marker_errors": str(out / "marker_errors.sto")},
        "wall_time_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
