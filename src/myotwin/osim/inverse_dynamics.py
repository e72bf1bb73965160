"""Inverse dynamics of an .osim model along measured motion, as OpenSim's InverseDynamicsTool.

`myotwin osim inverse-dynamics MODEL --coordinates IK.mot [--external-loads GRF.xml]
[--lowpass-hz F] --out DIR` (docs/osim.md "Inverse dynamics"):

1. the coordinates file is prepared exactly as the tool prepares it (`signals`: padding, the
   3rd-order Butterworth lowpass run both ways, degrees to radians, natural quintic splines)
   and q, qd, qdd are the splines' values and derivatives at the tool's output times;
   coordinates the file lacks stay at their default value (qd = qdd = 0), as in OpenSim;
2. each ExternalForce (`external_loads`) is evaluated at those times and applied to its body
   at its point: force and torque in their frame (ground or a body) turned into ground, the
   point mapped from its frame with the model's own kinematics at that time (what
   `ExternalForce::computeForce` does with the state);
3. the generalized forces are the engine's inverse dynamics -- M(q) qdd + c(q, qd) - g(q) -
   J^T f_ext -- on the engine dofs, tau_f, gathered per OpenSim coordinate, for every time at
   once (jit + vmap): each coordinate's mobility force, the sum of f_j' tau_f[j] over the
   joint axes j it moves (`engine.coupling.direct_forces`), as OpenSim's tool reports it (its
   InverseDynamicsSolver ignores constraints). The coordinate a CoordinateCouplerConstraint
   eliminates gets its own column so (its position comes from the constraint); with such a
   constraint the projection J^T tau_f onto the independent coordinates (the constraint
   workless: what an actuator on them must supply) is written to a second table.

The model is the skeleton only (`osim.load(..., forces=False)`): OpenSim's tool with every
muscle and actuator excluded, which is how inverse dynamics is used to get joint moments.
Locked coordinates are read as unlocked (`locks=False`): OpenSim's solver ignores locks, so a
locked coordinate takes its column's values and gets its column of forces like any other.
Columns are OpenSim's: `<coordinate>_moment` (N m) for rotational coordinates,
`<coordinate>_force` (N) otherwise, every coordinate of the model (`output_coordinates`).
"""

from __future__ import annotations

import math

import dataclasses
import functools
import json
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.coupling import direct_forces, full_motion, reduce_forces
from myotwin.engine.dynamics import inverse_dynamics
from myotwin.engine.kinematics import kinematics
from myotwin.engine.piecewise import evaluate_padded, pad_polynomials
from myotwin.musculoskeletal.body_loads import load_wrenches
from myotwin.osim.external_loads import (AppliedLoad, evaluate_external_loads,
                                         read_external_loads)
from myotwin.osim.loader import OsimModel, load
from myotwin.osim.signals import (COORDINATE_SPLINE_DEGREE, coordinate_trajectories,
                                  output_times)
from myotwin.osim.storage import Storage, StorageWriter, read_storage
from myotwin.scalars import as_real

GROUND = "ground"
#: Largest difference (rad or m) between a file's column for a coordinate a
#: CoordinateCouplerConstraint eliminates and the constraint's value of it.
DEPENDENT_TOLERANCE = 1e-6


@dataclasses.dataclass(frozen=True)
class OutputCoordinates:
    """The coordinates the generalized forces are reported for: OpenSim's, every coordinate of
    the model with those a CoordinateCouplerConstraint eliminates (`OsimModel.
    coupled_coordinates`) included, the joints in the engine's (depth-first) order and each
    joint's coordinates in the file's order (`loaded.coordinates` with each dependent one at
    its joint's place). motion: OpenSim's motion type of each ("rotational", "translational",
    "coupled"). direct (n_engine_dofs,): per engine dof, the index in `names` of the
    coordinate whose joint axis it is. reduced: the index in `names` of each of
    `loaded.coordinates`."""

    names: tuple[str, ...]
    motion: tuple[str, ...]
    direct: tuple[int, ...]
    reduced: tuple[int, ...]


def output_coordinates(loaded: OsimModel) -> OutputCoordinates:
    """The reported coordinates of `loaded` (`OutputCoordinates`)."""
    names = loaded.all_coordinates
    motion = {**loaded.coordinate_motion,
              **{d: c.motion for d, c in loaded.coupled_coordinates.items()},
              **{n: c.motion for n, c in loaded.locked_coordinates.items()}}
    return OutputCoordinates(names, tuple(motion[n] for n in names),
                             tuple(names.index(c) for c in loaded.engine_joint_coordinates),
                             tuple(names.index(n) for n in loaded.coordinates))


@dataclasses.dataclass(frozen=True)
class Motion:
    """q, qd, qdd (n_times, n_coordinates) in SI at times_s (n_times,), coordinates in the
    model's order; `missing`: coordinates the file lacked (held at their default value);
    `unmatched_columns`: the file's columns that name no coordinate (ignored, as OpenSim
    ignores them; a misspelt coordinate shows here and in `missing`)."""

    times_s: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    missing: tuple[str, ...]
    dependent_in_file: tuple[str, ...] = ()
    unmatched_columns: tuple[str, ...] = ()


def _in_radians(values: np.ndarray, in_degrees: bool, motion: str) -> np.ndarray:
    """A file's column in SI: OpenSim converts only rotational coordinates from degrees."""
    return np.radians(values) if in_degrees and motion == "rotational" else values


def _check_dependent(loaded: OsimModel, table: Storage, where: str) -> tuple[str, ...]:
    """The coordinates eliminated by CoordinateCouplerConstraints that `table` has a column
    for, after checking each (in SI, as OpenSim reads it) against the constraint's value of
    the file's independent column at every row: ValueError naming the file, column, time and
    both values beyond DEPENDENT_TOLERANCE. Without the independent column nothing is
    checked."""
    out = output_coordinates(loaded)
    motion = dict(zip(out.names, out.motion))
    found = []
    for name, coupled in loaded.coupled_coordinates.items():
        path = f"/jointset/{coupled.joint}/{name}/value"
        label = next((lab for lab in (name, path) if lab in table.labels), None)
        if label is None:
            continue
        found.append(name)
        independent = _column_of(table, loaded, coupled.independent)
        if independent is None:
            continue
        x = _in_radians(table.data[:, independent], table.in_degrees,
                        motion[coupled.independent])
        given = _in_radians(table.column(label), table.in_degrees, motion[name])
        tables = [jnp.asarray(a) for a in pad_polynomials([coupled.function])]
        expected = np.asarray(evaluate_padded(*tables, jnp.asarray(x))[0])
        error = np.abs(given - expected)
        if not np.all(error <= DEPENDENT_TOLERANCE):
            row = int(np.argmax(~(error <= DEPENDENT_TOLERANCE)))   # the first one
            hint = ("" if motion[name] == "rotational" or not table.in_degrees else
                    f"; {name!r} is not rotational, so OpenSim reads it in rad or m even in a "
                    "file with inDegrees=yes")
            raise ValueError(f"{where}: column {label!r} at time {float(table.time_s[row])!r}"
                             f" s is {float(given[row])!r} but {coupled.constraint!r} gives "
                             f"{float(expected[row])!r} ({coupled.description}; tolerance "
                             f"{DEPENDENT_TOLERANCE:g}){hint}")
    return tuple(found)


def _check_locked(loaded: OsimModel, table: Storage, where: str) -> None:
    """Check a column of `table` for a locked coordinate (`OsimModel.locked_coordinates`) in
    SI against the locked value at every row: ValueError naming the file, column, time and
    both values beyond DEPENDENT_TOLERANCE. (OpenSim's analyses would take the file's values
    with the coordinate still locked, a state no motion of the locked model reaches.)"""
    for name, locked in loaded.locked_coordinates.items():
        path = f"/jointset/{locked.joint}/{name}/value"
        label = next((lab for lab in (name, path) if lab in table.labels), None)
        if label is None:
            continue
        given = _in_radians(table.column(label), table.in_degrees, locked.motion)
        bad = np.flatnonzero(~(np.abs(given - locked.value) <= DEPENDENT_TOLERANCE))
        if bad.size:
            row = int(bad[0])
            raise ValueError(
                f"{where}: column {label!r} at time {float(table.time_s[row])!r} s is "
                f"{float(given[row])!r} but {name!r} is locked at {locked.value!r} in "
                f"{loaded.source} (tolerance {DEPENDENT_TOLERANCE:g}); unlock it in the model "
                "or give its locked value")


def _column_of(table: Storage, loaded: OsimModel, name: str) -> int | None:
    """The column of coordinate `name`: its own name, or OpenSim 4's state path."""
    path = f"/jointset/{loaded.coordinate_joints[name]}/{name}/value"
    for label in (name, path):
        if label in table.labels:
            return table.labels.index(label)
    return None


def check_cutoff(cutoff_hz: float | None) -> None:
    """ValueError unless the tools' --lowpass-hz is None (no filtering) or positive (OpenSim
    reads any value <= 0 as no filtering; the commands take only the explicit form)."""
    number = as_real(cutoff_hz)
    if cutoff_hz is not None and (number is None or not number > 0):
        raise ValueError(f"--lowpass-hz must be positive (omit it for no filtering), got "
                         f"{cutoff_hz!r}")


def prepared_motion(loaded: OsimModel, table: Storage, *, cutoff_hz: float | None = None,
                    start_time_s: float = -np.inf, end_time_s: float = np.inf,
                    source: str | None = None) -> Motion:
    """The coordinates of `table` (an IK .mot) prepared as OpenSim's ID tool prepares them
    (module docstring, step 1). cutoff_hz None: no filtering (OpenSim's default -1).
    source: the file's name for messages (default: the table's name). A column for a
    coordinate a CoordinateCouplerConstraint eliminates is checked against the constraint
    (`_check_dependent`), one for a locked coordinate against its locked value
    (`_check_locked`); both are otherwise unused."""
    where = source or table.name
    check_cutoff(cutoff_hz)
    names = loaded.coordinates
    columns = {n: _column_of(table, loaded, n) for n in names}
    present = [n for n in names if columns[n] is not None]
    missing = tuple(n for n in names if columns[n] is None)
    if not present:
        raise ValueError(f"{where}: no column names a coordinate of the model "
                         f"{list(names)}; columns are {list(table.labels)}")
    times = table.time_s
    if times.size < 2 or np.any(np.diff(times) <= 0):
        raise ValueError(f"{where}: the time column must increase strictly over at "
                         "least two rows")
    if times.size < COORDINATE_SPLINE_DEGREE + 1:
        raise ValueError(f"{where}: {times.size} time rows; OpenSim's tools fit each "
                         "coordinate with a quintic spline (GCVSplineSet of degree 5), which "
                         f"needs at least {COORDINATE_SPLINE_DEGREE + 1}")
    start_time_s, end_time_s = _check_time_range(where, times, start_time_s, end_time_s)
    if cutoff_hz is not None and cutoff_hz >= 0.5 / float(np.min(np.diff(times))):
        rate = 1.0 / float(np.min(np.diff(times)))
        raise ValueError(f"{where}: the lowpass cutoff {float(cutoff_hz)!r} Hz is not below "
                         f"half the sampling rate ({0.5 * rate:.6g} Hz at the smallest step, "
                         f"{1.0 / rate:.6g} s); OpenSim lowers such a cutoff to "
                         f"{0.49 * rate:.6g} Hz with a warning (give that value to reproduce "
                         "it)")
    values = table.data[:, [columns[n] for n in present]]
    if not np.all(np.isfinite(values)):
        row, col = np.argwhere(~np.isfinite(values))[0]
        raise ValueError(f"{where}: column {present[col]!r} is not finite at time "
                         f"{times[row]!r} s ({values[row, col]!r})")
    rotational = np.array([loaded.coordinate_motion[n] == "rotational" for n in present])
    t_out = output_times(times, start_time_s, end_time_s, cutoff_hz)
    q_p, qd_p, qdd_p = coordinate_trajectories(times, values, cutoff_hz, table.in_degrees,
                                               rotational, t_out)
    shape = (t_out.size, len(names))
    q = np.tile([loaded.coordinate_default_values[n] for n in names], (t_out.size, 1))
    qd, qdd = np.zeros(shape), np.zeros(shape)
    index = [names.index(n) for n in present]
    q[:, index], qd[:, index], qdd[:, index] = q_p, qd_p, qdd_p
    dependent = _check_dependent(loaded, table, where) if loaded.coupled_coordinates else ()
    _check_locked(loaded, table, where)
    return Motion(t_out, q, qd, qdd, missing, dependent, _unmatched(loaded, table))


def _unmatched(loaded: OsimModel, table: Storage) -> tuple[str, ...]:
    """The columns of `table` (time aside) that name no coordinate of the file, independent,
    coupled or locked, by name or OpenSim 4 state path."""
    joints = dict(loaded.coordinate_joints)
    joints.update({n: c.joint for n, c in loaded.coupled_coordinates.items()})
    joints.update({n: c.joint for n, c in loaded.locked_coordinates.items()})
    known = set(joints) | {f"/jointset/{j}/{n}/value" for n, j in joints.items()}
    return tuple(label for label in table.labels[1:] if label not in known)


def check_accuracy(value, name: str = "--accuracy") -> float:
    """A tool's accuracy (a tolerance) as a float, or ValueError naming `name` unless it is
    one number in (0, 1) (not a bool or a string: `as_real`)."""
    number = as_real(value)
    if number is None or not (math.isfinite(number) and 0.0 < number < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return number


def time_window(where: str, start_s, end_s) -> tuple[float, float]:
    """(start_s, end_s) as floats; ValueError naming `where` unless each is a number (not a
    bool or a string: `as_real`; an infinite one is no bound) and start_s <= end_s."""
    window = []
    for name, value in (("start", start_s), ("end", end_s)):
        number = as_real(value)
        if number is None or np.isnan(number):
            raise ValueError(f"{where}: the {name} time must be a number, got {value!r}")
        window.append(number)
    if window[0] > window[1]:
        raise ValueError(f"{where}: the time range [{window[0]!r}, {window[1]!r}] s ends "
                         "before it starts")
    return window[0], window[1]


def _check_time_range(where: str, times: np.ndarray, start_s, end_s) -> tuple[float, float]:
    """A time range that is not two numbers in order (`time_window`), or lies wholly outside
    the file's times, is refused (OpenSim's tool would report a single row, the first or the
    last); returns it as floats."""
    start_s, end_s = time_window(where, start_s, end_s)
    first, last = float(times[0]), float(times[-1])
    if start_s > last or end_s < first:
        raise ValueError(f"{where}: the time range [{float(start_s)!r}, {float(end_s)!r}] s "
                         f"lies outside the file's times ({first!r} to {last!r} s)")
    return start_s, end_s


_SUFFIX = {"rotational": "moment", "translational": "force", "coupled": "force"}


def column_labels(loaded: OsimModel) -> tuple[str, ...]:
    """OpenSim's ID column names, "time" first: every coordinate (`output_coordinates`)."""
    out = output_coordinates(loaded)
    return ("time",) + tuple(f"{n}_{_SUFFIX[m]}" for n, m in zip(out.names, out.motion))


def reduced_column_labels(loaded: OsimModel) -> tuple[str, ...]:
    """The column names of the projection onto `loaded.coordinates`, "time" first."""
    out = output_coordinates(loaded)
    return ("time",) + tuple(column_labels(loaded)[1 + k] for k in out.reduced)


def frame_index(loaded: OsimModel, frame: str, what: str) -> int:
    """Engine body index of an OpenSim frame name (ground -> 0)."""
    if frame == GROUND:
        return 0
    if frame not in loaded.body_names:
        raise ValueError(f"{what}: {frame!r} is not a body of the model "
                         f"({', '.join(loaded.body_names[1:])}) or ground")
    return loaded.body_names.index(frame)


@dataclasses.dataclass(frozen=True)
class LoadPlan:
    """The external loads as arrays: per load (n_loads,) the applied body and the frames of
    force/torque and point (engine body indices, 0 = ground), and per time (n_times,
    n_loads, 3) force_N, point_m, torque_Nm in those frames."""

    body: np.ndarray
    force_frame: np.ndarray
    point_frame: np.ndarray
    force_N: np.ndarray
    point_m: np.ndarray
    torque_Nm: np.ndarray


def load_plan(loaded: OsimModel, loads: Sequence[AppliedLoad], n_times: int) -> LoadPlan:
    """Arrays of `external_loads.evaluate_external_loads` output for `loaded`'s bodies."""
    if not loads:
        zeros = np.zeros((n_times, 0, 3))
        empty = np.zeros(0, dtype=np.int32)
        return LoadPlan(empty, empty, empty, zeros, zeros, zeros)
    for load in loads:
        if load.torque_frame != load.force_frame:
            raise ValueError(f"ExternalForce {load.name!r}: torque frame "
                             f"{load.torque_frame!r} differs from force frame "
                             f"{load.force_frame!r}")

    def index(attr: str) -> np.ndarray:
        return np.array([frame_index(loaded, getattr(load, attr),
                                      f"ExternalForce {load.name!r} {attr}")
                         for load in loads], dtype=np.int32)

    body = index("applied_to_body")
    if np.any(body == 0):
        raise ValueError(f"ExternalForce {loads[int(np.argmin(body))].name!r}: a force "
                         "applied to ground moves nothing")
    return LoadPlan(body, index("force_frame"), index("point_frame"),
                    np.stack([load.force_N for load in loads], axis=1),
                    np.stack([load.point_m for load in loads], axis=1),
                    np.stack([load.torque_Nm for load in loads], axis=1))


def _xfrc(model, kin, frames, force, point, torque) -> jax.Array:
    """(n_body, 6) world force and torque at each body's COM (the engine's xfrc_applied) of
    the loads (n_loads, 3) whose applied body, force/torque frame and point frame are
    `frames` (three tuples of engine body indices): `musculoskeletal.body_loads`."""
    body, force_frame, point_frame = (np.asarray(f, dtype=np.int32) for f in frames)
    return load_wrenches(model.n_body, kin, body, force_frame, point_frame, force, point,
                         torque)


#: XLA options of the batched inverse dynamics: LLVM's optimisation off. The function runs
#: once per trial over a few hundred rows, so compilation is most of its cost: subject01
#: (151 rows) compiles in 3.1 s instead of 5.8 s and then runs in 19 ms instead of 6 ms
#: (scratch timing, session 23); the values agree to 2e-12 N m on forces of 5e3.
ONE_SHOT_COMPILER_OPTIONS = {"xla_backend_optimization_level": "0"}


@functools.partial(jax.jit, static_argnames=("frames", "direct", "n_direct"),
                   compiler_options=ONE_SHOT_COMPILER_OPTIONS)
def _batched_forces(model, coupling, frames, direct, n_direct, q, qd, qdd, force, point,
                    torque):
    """((n_times, n_direct), (n_times, n_coordinates)): per row, the mobility forces of the
    reported coordinates and J^T tau_f (compiled once per model structure and load frames, so
    repeated calls do not recompile)."""
    def one(q, qd, qdd, force, point, torque):
        if coupling is None:
            xfrc = _xfrc(model, kinematics(model, q), frames, force, point, torque)
            tau = inverse_dynamics(model, q, qd, qdd, xfrc_applied=xfrc)
            return tau, tau
        full = full_motion(coupling, q, qd, qdd)
        xfrc = _xfrc(model, kinematics(model, full.q), frames, force, point, torque)
        tau_f = inverse_dynamics(model, full.q, full.qd, full.qdd, xfrc_applied=xfrc)
        return (direct_forces(coupling, q, tau_f, direct, n_direct),
                reduce_forces(coupling, q, tau_f))

    return jax.vmap(one)(q, qd, qdd, force, point, torque)


def _forces(loaded: OsimModel, motion: Motion, plan: LoadPlan):
    """(mobility forces (n_times, n_reported), J^T tau_f (n_times, n_coordinates))."""
    frames = tuple(tuple(int(i) for i in f)
                   for f in (plan.body, plan.force_frame, plan.point_frame))
    out = output_coordinates(loaded)
    mobility, reduced = (np.asarray(a) for a in _batched_forces(
        loaded.model, loaded.coupling, frames, out.direct, len(out.names),
        *(jnp.asarray(a) for a in (motion.q, motion.qd, motion.qdd, plan.force_N,
                                   plan.point_m, plan.torque_Nm))))
    for tau in (mobility, reduced):
        if not np.all(np.isfinite(tau)):
            row = int(np.argwhere(~np.all(np.isfinite(tau), axis=1))[0, 0])
            raise ValueError(f"the generalized forces are not finite at time "
                             f"{float(motion.times_s[row])!r} s (check the coordinates and "
                             "loads there)")
    return mobility, reduced


def generalized_forces(loaded: OsimModel, motion: Motion, plan: LoadPlan) -> np.ndarray:
    """(n_times, n_reported) generalized forces (N m or N) along `motion` with the external
    loads of `plan`, OpenSim's columns (`column_labels`): each coordinate's mobility force,
    constraints ignored (module docstring, step 3)."""
    return _forces(loaded, motion, plan)[0]


def reduced_generalized_forces(loaded: OsimModel, motion: Motion,
                               plan: LoadPlan) -> np.ndarray:
    """(n_times, n_coordinates) J^T tau_f on `loaded.coordinates` (`reduced_column_labels`):
    the generalized forces with every CoordinateCouplerConstraint workless, what actuators on
    the independent coordinates alone must supply (= `generalized_forces` at those
    coordinates when the model has no such constraint)."""
    return _forces(loaded, motion, plan)[1]


def run(model_path, coordinates_path, out_dir, *, external_loads_path=None,
        cutoff_hz: float | None = None, start_time_s: float = -np.inf,
        end_time_s: float = np.inf) -> dict:
    """`myotwin osim inverse-dynamics`: writes DIR/inverse_dynamics.sto (OpenSim's table
    "Inverse Dynamics Generalized Forces", columns `column_labels`), for a model with a
    CoordinateCouplerConstraint DIR/inverse_dynamics_reduced.sto (`reduced_column_labels`,
    `reduced_generalized_forces`), and DIR/summary.json; returns the summary. Bad input
    raises ValueError (OsimError, StorageError) naming the file, field and value."""
    check_cutoff(cutoff_hz)
    started = time.perf_counter()
    loaded = load(model_path, forces=False, locks=False)
    table = read_storage(coordinates_path)
    loads = read_external_loads(external_loads_path) if external_loads_path else None
    motion = prepared_motion(loaded, table, cutoff_hz=cutoff_hz, start_time_s=start_time_s,
                             end_time_s=end_time_s, source=str(coordinates_path))
    applied = evaluate_external_loads(loads, motion.times_s) if loads else ()
    tau, tau_reduced = _forces(loaded, motion,
                               load_plan(loaded, applied, motion.times_s.size))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table_path = out / "inverse_dynamics.sto"
    with StorageWriter(table_path, "Inverse Dynamics Generalized Forces",
                       column_labels(loaded)) as writer:
        writer.write_rows(np.column_stack([motion.times_s, tau]))
    files = {"generalized_forces": str(table_path)}
    if loaded.coupled_coordinates:
        reduced_path = out / "inverse_dynamics_reduced.sto"
        with StorageWriter(reduced_path, "Inverse Dynamics Generalized Forces, coordinate "
                           "coupler constraints workless", reduced_column_labels(loaded),
                           comment="J^T tau_f on the independent coordinates (docs/osim.md "
                           "Inverse dynamics)") as writer:
            writer.write_rows(np.column_stack([motion.times_s, tau_reduced]))
        files["reduced_generalized_forces"] = str(reduced_path)
    summary = {
        "model": str(model_path),
        "coordinates_file": str(coordinates_path),
        "external_loads_file": None if external_loads_path is None else str(external_loads_path),
        "external_forces": [load.name for load in applied],
        "lowpass_cutoff_hz": cutoff_hz,
        "coordinates": list(output_coordinates(loaded).names),
        "coordinates_missing": list(motion.missing),
        "columns_not_coordinates": list(motion.unmatched_columns),
        "dependent_coordinates": {
            name: {"independent": c.independent, "constraint": c.constraint,
                   "column_in_file": name in motion.dependent_in_file}
            for name, c in loaded.coupled_coordinates.items()},
        "n_rows": int(motion.times_s.size),
        "first_time_s": float(motion.times_s[0]),
        "last_time_s": float(motion.times_s[-1]),
        "files": files,
        "wall_time_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
