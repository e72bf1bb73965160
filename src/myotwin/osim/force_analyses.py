"""OpenSim's Actuation and ForceReporter analyses along a motion (its AnalyzeTool's, run by
`myotwin osim run-tool SETUP.xml`, `osim.analyze_setup`, and its ForwardTool's,
`osim.forward_setup`), at the states and controls the kinematics analyses use
(`kinematics_analysis.analysis_rows`: the tool's motion, the muscles' default, equilibrium or
states-file states, or a forward run's states; the model's and the tool's controllers).

What OpenSim 4.6's AnalyzeTool writes for them, found by running it (arm26 with reserve
actuators and loads on its hand and humerus; tests/osim/test_osim_analyze_setup.py):

* Actuation: each actuator of the ForceSet (muscles and CoordinateActuators, `OsimModel.
  force_names` order) in `actuation_force.sto` (N or N m), `actuation_speed.sto` and
  `actuation_power.sto` (W). A muscle's force is its tendon force at the row's state, its
  speed the path's lengthening speed, its power -force x speed (a shortening muscle gives
  power); a CoordinateActuator's force is control x optimal_force (its control from the
  model's controllers, 0 without), its speed the coordinate's speed, its power force x speed.
* ForceReporter: `force_reporter_forces.sto`, the ForceSet's forces (the Actuation's forces),
  then each ExternalForce of the tool's external_loads_file that applies force:
  `<body>_<name>_Fx, _Fy, _Fz` if it has a force (in ground), `_px, _py, _pz` if it has a
  point (the point in the frame of the body it is applied to), `_Tx, _Ty, _Tz` if it has a
  torque (in ground); one whose appliesForce is false has none, as in OpenSim's file.
  include_constraint_forces true is refused (no constraint forces are computed).
* Units: SI, as every file of ours.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.coupling import full_positions
from myotwin.engine.kinematics import kinematics
from myotwin.osim.kinematics_analysis import AnalysisRows, coordinate_rows, write_table
from myotwin.osim.loader import OsimModel
from myotwin.osim.row_blocks import map_row_blocks

#: Rows per call of the compiled frames (the last call padded).
ROWS_PER_CALL = 64


def _frames(model, coupling, bodies, q):
    def one(row):
        kin = kinematics(model, row if coupling is None else full_positions(coupling, row))
        index = np.asarray(bodies, dtype=np.int64)
        return kin.body_pos_world[index], kin.body_rot_world[index]

    return jax.lax.map(one, q)


_compiled_frames = jax.jit(_frames, static_argnames=("bodies",))


def body_frames(loaded: OsimModel, q, bodies: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(origins (n_rows, k, 3), rotations (n_rows, k, 3, 3)) of the engine bodies `bodies` in
    ground at rows of coordinates q."""
    def block(rows):
        return _compiled_frames(loaded.model, loaded.coupling, tuple(bodies),
                                jnp.asarray(rows[0]))

    return map_row_blocks(block, (np.atleast_2d(np.asarray(q, dtype=np.float64)),),
                          ROWS_PER_CALL)


def actuation(loaded: OsimModel, rows: AnalysisRows) -> dict[str, np.ndarray]:
    """{"force", "speed", "power"}: (n_rows, len(force_names)) arrays (module docstring)."""
    from myotwin.osim.muscle_analysis import path_rows
    from myotwin.osim.muscle_states import state_outputs

    n = rows.times_s.size
    out = {k: np.zeros((n, len(loaded.force_names))) for k in ("force", "speed", "power")}
    if loaded.muscle_names:
        lengths, speeds, _ = path_rows(loaded, rows.q, rows.qd)
        force = state_outputs(rows.muscle_groups, lengths, speeds, rows.activation,
                              rows.tendon_state)["TendonForce"]
        columns = [loaded.force_names.index(m) for m in loaded.muscle_names]
        out["force"][:, columns] = force
        out["speed"][:, columns] = speeds
        out["power"][:, columns] = -force * speeds
    if loaded.actuator_names:
        _, u, _ = coordinate_rows(loaded, rows.q, rows.qd, np.zeros_like(rows.q))
        for k, a in enumerate(loaded.actuator_names):
            spec = loaded.actuators[a]
            j = loaded.force_names.index(a)
            out["force"][:, j] = rows.control[:, k] * spec["gear"]
            out["speed"][:, j] = u[:, loaded.all_coordinates.index(spec["coordinate"])]
            out["power"][:, j] = out["force"][:, j] * out["speed"][:, j]
    return out


def external_force_columns(loaded: OsimModel, rows: AnalysisRows,
                           loads) -> tuple[tuple[str, ...], np.ndarray]:
    """(labels, values (n_rows, len(labels))) of the ExternalForces of `loads`
    (`external_loads.ExternalLoads`) that apply force, as OpenSim's ForceReporter records
    them (module docstring)."""
    from myotwin.osim.external_loads import evaluate_external_loads
    from myotwin.osim.inverse_dynamics import frame_index

    applied = evaluate_external_loads(loads, rows.times_s)
    forces = [f for f in loads.forces if f.applies_force]
    where = f"{loads.path.name}: ExternalForce"
    index = {}
    for f in forces:
        for frame in (f.applied_to_body, f.force_expressed_in_body, f.point_expressed_in_body):
            if frame not in index:
                index[frame] = frame_index(loaded, frame, f"{where} {f.name!r}")
    bodies = tuple(dict.fromkeys(index.values()))
    origin, rotation = body_frames(loaded, rows.q, bodies)
    slot = {name: bodies.index(i) for name, i in index.items()}
    labels, columns = [], []
    for f, load in zip(forces, applied):
        stem = f"{f.applied_to_body}_{f.name}"
        rot_f = rotation[:, slot[load.force_frame]]
        if f.force_curve is not None:
            labels += [f"{stem}_F{a}" for a in "xyz"]
            columns.append(np.einsum("nij,nj->ni", rot_f, load.force_N))
        if f.point_curve is not None:
            b, p = slot[f.applied_to_body], slot[load.point_frame]
            in_ground = origin[:, p] + np.einsum("nij,nj->ni", rotation[:, p], load.point_m)
            labels += [f"{stem}_p{a}" for a in "xyz"]
            columns.append(np.einsum("nji,nj->ni", rotation[:, b], in_ground - origin[:, b]))
        if f.torque_curve is not None:
            labels += [f"{stem}_T{a}" for a in "xyz"]
            columns.append(np.einsum("nij,nj->ni", rot_f, load.torque_Nm))
    values = np.concatenate(columns, axis=1) if columns else np.zeros((rows.times_s.size, 0))
    return tuple(labels), values


def write_actuation(loaded: OsimModel, rows: AnalysisRows, out_dir, forces=None) -> dict:
    """OpenSim's Actuation into out_dir: actuation_force.sto, actuation_speed.sto,
    actuation_power.sto; forces: `actuation(loaded, rows)` if already computed. Returns
    {"actuators", "files"}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for key, values in (actuation(loaded, rows) if forces is None else forces).items():
        files[key] = write_table(out / f"actuation_{key}.sto", key.capitalize(),
                                 loaded.force_names, rows.times_s, values,
                                 f"OpenSim's Actuation: {loaded.source} (SI: N, N m, m/s, "
                                 "rad/s, W)")
    return {"actuators": list(loaded.force_names), "files": files}


def write_force_reporter(loaded: OsimModel, rows: AnalysisRows, out_dir, loads,
                         forces=None) -> dict:
    """OpenSim's ForceReporter into out_dir: force_reporter_forces.sto, the ForceSet's forces
    then the external forces of `loads` (an `ExternalLoads` or None); forces:
    `actuation(loaded, rows)` if already computed. Returns {"forces", "external_forces",
    "files"}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = tuple(loaded.force_names)
    values = (actuation(loaded, rows) if forces is None else forces)["force"]
    external: tuple[str, ...] = ()
    if loads is not None:
        external, more = external_force_columns(loaded, rows, loads)
        labels, values = labels + external, np.concatenate([values, more], axis=1)
    path = write_table(out / "force_reporter_forces.sto", "ModelForces", labels,
                       rows.times_s, values, f"OpenSim's ForceReporter: {loaded.source} (SI)")
    return {"forces": list(loaded.force_names), "external_forces": list(external),
            "files": {"forces": path}}
