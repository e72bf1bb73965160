"""Muscle-tendon lengths, moment arms and muscle-state outputs along measured motion: OpenSim's
MuscleAnalysis (run by its AnalyzeTool with a coordinates file).

`myotwin osim muscle-analysis MODEL --coordinates IK.mot [--lowpass-hz F] --out DIR`
(docs/osim.md "Muscle analysis"):
* q at the analysis' times: the coordinates file prepared as OpenSim's tools prepare it
  (`inverse_dynamics.prepared_motion`: padding, lowpass, splines; the times within the range);
* per time, each muscle's path length (OpenSim's GeometryPath::getLength) and its moment arm
  about every coordinate (`OsimModel.all_coordinates`) as OpenSim's computeMomentArm gives
  it, from the generalized force of a unit tension along the current path, the points held
  on their bodies (`paths.opensim_path.generalized_force_moment_arms`; -dL/dq for MJCF
  paths, which equals it there), f_j on the engine dofs:
  - a coordinate of `OsimModel.coordinates`: J^T f (the coupling's J: its constraint-
    consistent motion);
  - one a CoordinateCouplerConstraint eliminates: the independent coordinate's, divided by
    the coupler's slope g'(q_ind) (OpenSim drives the dependent coordinate at unit speed, so
    the independent one moves at 1 / g'; probed on a nonlinear coupler: equal to 1e-16);
  - a locked one: its mobility force with the lock ignored, sum of f_j' f_j over the joint
    axes it moves (`engine.coupling.direct_forces`; OpenSim's computeMomentArm ignores the
    lock: probed, the same values as the unlocked model);
* written as OpenSim's MuscleAnalysis names its files: `muscle_analysis_Length.sto` (m) and
  `muscle_analysis_MomentArm_<coordinate>.sto` (m, or m per m for a translational
  coordinate), columns the muscles in ForceSet order, SI, inDegrees=no; `summary.json`.
* the muscle-state outputs (fiber and tendon lengths, velocities, forces, powers, moments) at
  the muscles' default states, or at those of a states file (`--states`, which also gives q
  and qd as written), and the paths' lengthening speeds (`muscle_states`), written as
  OpenSim names them (`muscle_analysis_<output>.sto`); with `muscle_states="equilibrium"`
  each compliant tendon's state is first replaced by its type's equilibrium at that time
  (`muscle_equilibrium`; OpenSim's solve_for_equilibrium_for_auxiliary_states).
A coupler whose slope is 0 at a time gives a non-finite moment arm about its dependent
coordinate there (OpenSim divides by it too), which stops the command.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.coupling import direct_forces, full_jacobian, full_positions
from myotwin.engine.piecewise import evaluate_padded, pad_polynomials
from myotwin.musculoskeletal.paths import skeleton_path_state
from myotwin.osim.inverse_dynamics import (check_cutoff, output_coordinates, prepared_motion,
                                           time_window)
from myotwin.osim.loader import OsimModel, load
from myotwin.osim.muscle_equilibrium import equilibrium_states
from myotwin.osim.muscle_states import (UNITS, default_state_rows, muscle_groups,
                                        refuse_fibers_of_no_length, state_outputs,
                                        states_from_file)
from myotwin.osim.row_blocks import map_row_blocks
from myotwin.osim.storage import StorageWriter, read_storage

#: Rows of q per call of the compiled geometry (the last call padded), as static optimization.
ROWS_PER_CALL = 64


class _Plan(NamedTuple):
    """How each of `OsimModel.all_coordinates` gets its moment arms (static): its row in the
    reduced arms (-1: none), its row in the direct forces (locked: the lock ignored, else -1),
    and for a dependent coordinate the row of its independent one and its coupler's index in
    `functions` (-1 otherwise); functions: the couplers' padded tables (or None)."""

    reduced: tuple[int, ...]
    direct: tuple[int, ...]
    independent: tuple[int, ...]
    coupler: tuple[int, ...]


def _plan(loaded: OsimModel) -> tuple[_Plan, tuple | None]:
    names, coupled = loaded.all_coordinates, list(loaded.coupled_coordinates)
    reduced = tuple(loaded.coordinates.index(n) if n in loaded.coordinates else -1
                    for n in names)
    direct = tuple(names.index(n) if n in loaded.locked_coordinates else -1 for n in names)
    independent = tuple(loaded.coordinates.index(loaded.coupled_coordinates[n].independent)
                        if n in coupled else -1 for n in names)
    coupler = tuple(coupled.index(n) if n in coupled else -1 for n in names)
    tables = (tuple(jnp.asarray(t) for t in pad_polynomials(
        [c.function for c in loaded.coupled_coordinates.values()])) if coupled else None)
    return _Plan(reduced, direct, independent, coupler), tables


def _rows(skeleton, coupling, tables, q, qd, plan: _Plan, direct_map):
    """(lengths (n, n_paths), lengthening speeds (n, n_paths), moment arms
    (n, n_all_coordinates, n_paths)) at rows of q, qd, one row after another (`lax.map`: the
    body compiles once)."""
    def one(rows):
        row, speed = rows
        q_f = row if coupling is None else full_positions(coupling, row)
        qd_f = speed if coupling is None else full_jacobian(coupling, row) @ speed
        lengths, speeds, f = skeleton_path_state(skeleton, None, q_f, qd_f, True)
        reduced = f if coupling is None else full_jacobian(coupling, row).T @ f
        zero = jnp.zeros_like(f[0])
        arms = [reduced[k] if k >= 0 else zero for k in plan.reduced]
        if any(k >= 0 for k in plan.direct):   # locked coordinates: the lock ignored
            direct = jax.vmap(lambda t: direct_forces(coupling, row, t, direct_map,
                                                      len(plan.reduced)),
                              in_axes=1, out_axes=1)(f)
            arms = [direct[d] if d >= 0 else a for d, a in zip(plan.direct, arms)]
        if tables is not None:                  # dependent: r_ind / g'(q_ind)
            per_coupler = {k: i for i, k in zip(plan.independent, plan.coupler) if k >= 0}
            x = jnp.stack([row[per_coupler[k]] for k in range(len(per_coupler))])
            slope = evaluate_padded(*tables, x)[1]
            arms = [reduced[i] / slope[k] if k >= 0 else a
                    for i, k, a in zip(plan.independent, plan.coupler, arms)]
        return lengths, speeds, jnp.stack(arms)

    return jax.lax.map(one, (q, qd))


_compiled_rows = jax.jit(_rows, static_argnames=("plan", "direct_map"))


def path_rows(loaded: OsimModel, q, qd=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lengths (n_rows, n_muscles) m, lengthening speeds (n_rows, n_muscles) m/s (OpenSim's
    getLengtheningSpeed), moment arms (n_rows, n_all_coordinates, n_muscles),
    `OsimModel.all_coordinates` order) at rows of coordinates q and speeds qd (n_rows,
    n_coordinates; qd default 0) (module docstring)."""
    q = np.atleast_2d(np.asarray(q, dtype=np.float64))
    qd = np.zeros_like(q) if qd is None else np.atleast_2d(np.asarray(qd, dtype=np.float64))
    plan, tables = _plan(loaded)
    direct_map = output_coordinates(loaded).direct

    def block_rows(block):
        return _compiled_rows(loaded.model, loaded.coupling, tables, jnp.asarray(block[0]),
                              jnp.asarray(block[1]), plan=plan, direct_map=direct_map)

    return map_row_blocks(block_rows, (q, qd), ROWS_PER_CALL)


#: Values of `run`'s `muscle_states`.
MUSCLE_STATES = ("default", "equilibrium", "none")


def _rows_by_muscle(mask: np.ndarray, times_s: np.ndarray, names) -> dict:
    """{muscle: {"rows": how many, "first_time_s": the first}} of a (n_rows, n_muscles) mask."""
    return {names[k]: {"rows": int(mask[:, k].sum()),
                       "first_time_s": float(times_s[np.flatnonzero(mask[:, k])[0]])}
            for k in np.flatnonzero(mask.any(axis=0))}


def _first_bad_row(arrays: dict[str, np.ndarray], names) -> tuple[int, str]:
    """(index of the first row where some output is not finite (n_rows if none), what: the
    output and muscle, or "")."""
    n = next(iter(arrays.values())).shape[0]
    first, what = n, ""
    for output, arr in arrays.items():
        bad = ~np.isfinite(arr.reshape(n, -1, arr.shape[-1]))
        rows = np.flatnonzero(bad.any(axis=(1, 2)))
        if rows.size and rows[0] < first:
            first = int(rows[0])
            what = f"{output} of {names[int(np.flatnonzero(bad[first].any(axis=0))[0])]}"
    return first, what


def run(model_path, coordinates_path, out_dir, *, cutoff_hz: float | None = None,
        start_time_s: float = -np.inf, end_time_s: float = np.inf,
        muscle_states: str = "default", states_path=None,
        geometry_hint: str | None = "--muscle-states none writes lengths and moment arms "
                                    "only") -> dict:
    """`myotwin osim muscle-analysis`: writes into DIR muscle_analysis_Length.sto, one
    muscle_analysis_MomentArm_<coordinate>.sto per coordinate, with `muscle_states` "default"
    also the muscle-state outputs (one muscle_analysis_<output>.sto per
    `muscle_states.OUTPUTS` and muscle_analysis_Moment_<coordinate>.sto; "equilibrium": the
    same with the tendon states in equilibrium, `muscle_equilibrium.equilibrium_states`, the
    muscles without one at a time listed in the summary's `muscle_equilibrium_failed`, those
    held at their minimum fiber length in `muscle_equilibrium_at_min_fiber_length`; "none":
    geometry only), and summary.json; returns the summary. The motion is either a coordinates file
    (`coordinates_path`, prepared as OpenSim's tools prepare it; the muscles at their default
    states) or a states file (`states_path`, coordinates_path None: coordinates, speeds and
    muscle states as written, `muscle_states.states_from_file`). Bad input raises ValueError
    naming the file, field and value; outputs that are not finite raise FloatingPointError
    after the rows before them are written. geometry_hint: what the refusal of a muscle
    without a state model suggests (the command's option; None for none, e.g. a setup's)."""
    if (coordinates_path is None) == (states_path is None):
        raise ValueError("give the motion as either --coordinates FILE or --states FILE "
                         f"(got coordinates {coordinates_path!r}, states {states_path!r})")
    check_cutoff(cutoff_hz)
    start_time_s, end_time_s = time_window(str(states_path or coordinates_path), start_time_s,
                                           end_time_s)
    if cutoff_hz is not None and states_path is not None:
        raise ValueError(f"--lowpass-hz {cutoff_hz!r} with --states {states_path}: a states "
                         "file is used as written (OpenSim filters coordinates files only)")
    if muscle_states not in MUSCLE_STATES:
        raise ValueError(f"--muscle-states must be one of {list(MUSCLE_STATES)}, got "
                         f"{muscle_states!r}")
    started = time.perf_counter()
    loaded = load(model_path, controllers=False)   # geometry and states: no controls
    if not loaded.muscle_names:
        raise ValueError(f"{model_path}: the model has no muscles to analyse")
    groups = ()
    if muscle_states != "none":
        try:
            groups = muscle_groups(loaded)
        except ValueError as err:
            hint = f"; {geometry_hint}" if geometry_hint else ""
            raise ValueError(f"{err} (the muscle-state outputs need the muscles' "
                             f"models{hint})") from None
        if muscle_states == "default" and states_path is None:
            refuse_fibers_of_no_length(loaded, groups, model_path)
    if states_path is None:
        motion = prepared_motion(loaded, read_storage(coordinates_path), cutoff_hz=cutoff_hz,
                                 start_time_s=start_time_s, end_time_s=end_time_s,
                                 source=str(coordinates_path))
        missing, defaulted, muscle_rows = list(motion.missing), [], None
        unmatched = list(motion.unmatched_columns)
    else:
        motion = states_from_file(loaded, read_storage(states_path), str(states_path), groups,
                                  start_time_s, end_time_s)
        missing, defaulted, unmatched = [], list(motion.defaulted), []
        muscle_rows = (motion.activation, motion.tendon_state)
    lengths, speeds, arms = path_rows(loaded, motion.q, motion.qd)
    tables = {"Length": lengths, **{f"MomentArm_{c}": arms[:, k, :]
                                    for k, c in enumerate(loaded.all_coordinates)}}
    units = {"Length": "m", **{f"MomentArm_{c}": f"moment arms about {c}, computeMomentArm: "
                               "m, or m/m for a translational coordinate"
                               for c in loaded.all_coordinates}}
    failed = at_bound = np.zeros(lengths.shape, dtype=bool)
    if groups:
        if muscle_rows is None:
            muscle_rows = default_state_rows(groups, lengths.shape)
        if muscle_states == "equilibrium":
            tendon_state, failed, at_bound = equilibrium_states(groups, lengths, speeds,
                                                                *muscle_rows)
            muscle_rows = (muscle_rows[0], tendon_state)
        states = state_outputs(groups, lengths, speeds, *muscle_rows)
        tables.update(states)
        units.update(UNITS)
        force = states["TendonForce"]
        tables.update({f"Moment_{c}": arms[:, k, :] * force
                       for k, c in enumerate(loaded.all_coordinates)})
        units.update({f"Moment_{c}": f"moments about {c}, MomentArm x TendonForce: N m, or N "
                      "for a translational coordinate" for c in loaded.all_coordinates})
    good, what = _first_bad_row(tables, loaded.muscle_names)   # rows written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = ("time", *loaded.muscle_names)
    times = motion.times_s[:good, None]
    files = {}
    for name, table in tables.items():
        files[name] = out / f"muscle_analysis_{name}.sto"
        with StorageWriter(files[name], name, labels,
                           f"myotwin osim muscle-analysis: {model_path} ({units[name]})"
                           ) as writer:
            writer.write_rows(np.concatenate([times, table[:good]], axis=1))
    summary = {
        "model": str(model_path),
        "coordinates_file": None if coordinates_path is None else str(coordinates_path),
        "states_file": None if states_path is None else str(states_path),
        "lowpass_cutoff_hz": cutoff_hz,
        "muscles": list(loaded.muscle_names),
        "coordinates": list(loaded.all_coordinates),
        "coordinates_missing": missing,
        "columns_not_coordinates": unmatched,
        "muscle_states": muscle_states,
        "muscle_states_defaulted": defaulted,
        "muscle_equilibrium_failed": _rows_by_muscle(failed[:good], motion.times_s,
                                                     loaded.muscle_names),
        "muscle_equilibrium_at_min_fiber_length": _rows_by_muscle(
            at_bound[:good], motion.times_s, loaded.muscle_names),
        "muscle_default_states": {
            loaded.muscle_names[c]: {"activation": float(g.activation[k]),
                                     "tendon_state": float(g.tendon_state[k]),
                                     "tendon_model": g.muscles.tendon.value}
            for g in groups for k, c in enumerate(g.columns)},
        "n_rows": good,
        "first_time_s": float(motion.times_s[0]),
        "last_time_s": float(motion.times_s[-1]),
        "files": {name: str(path) for name, path in files.items()},
        "wall_time_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if good < motion.times_s.size:
        raise FloatingPointError(f"{model_path}: {what} is not finite at "
                                 f"t = {float(motion.times_s[good])!r} s; the rows before it "
                                 f"are written in {out}")
    return summary
