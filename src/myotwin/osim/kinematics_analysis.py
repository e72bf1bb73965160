"""OpenSim's Kinematics, BodyKinematics and PointKinematics analyses along a motion (its
AnalyzeTool's, run by `myotwin osim run-tool SETUP.xml`, `osim.analyze_setup`; and its
ForwardTool's, on the rows a run wrote, `osim.forward_setup`), and its StatesReporter.

What OpenSim 4.6's AnalyzeTool writes for them, found by running it (arm26 along the
tutorial's IK result; tests/osim/test_osim_kinematics_analysis.py) and reproduced here:

* The rows: the motion's (a coordinates file prepared as OpenSim's tools prepare it, or a
  states file's rows), the muscles at their default states or, with the tool's
  solve_for_equilibrium_for_auxiliary_states, in equilibrium, or as a states file gives them:
  the states `muscle_analysis.run` analyses.
* Accelerations are OpenSim's forward dynamics at each row's state (its analyses realize the
  state to accelerations): the skeleton's qdd under gravity, the muscles' forces at those
  muscle states, the CoordinateActuators' controls (the model's PrescribedControllers'; 0
  without one) and the external loads. Along a coordinates file they are *not* the motion's
  second derivatives: on arm26 with its muscles at their default states the elbow's is
  ~ -84 500 deg/s^2 at rest (OpenSim's own file, seen). Along a states file of a forward
  simulation they are the simulation's accelerations.
* Kinematics: q, u and udot of the coordinates (`coordinates`: all, in the model's order, or
  the listed ones in the list's order), one file each (`<prefix>_q.sto`, `_u.sto`,
  `_dudt.sto`). A CoordinateCouplerConstraint's dependent coordinate follows its independent
  one (g, g' u, g'' u^2 + g' udot); a locked one its value, 0, 0.
* A coupler's dependent coordinate: OpenSim's tools take its speed from the file, not from
  the constraint: the spline derivative of a coordinates file's column (equal to g' u for a
  linear coupler; for a nonlinear one the spline's error, 6e-4 rad/s on a 100 Hz swing,
  seen), 0 without the column (against the constraint), a states file's speed column as
  written. Ours eliminates the coordinate, so its speed is always g' u: a coordinates file or
  states file without the dependent's column is refused; a states file's largest difference
  from g' u is reported (`dependent_speeds_off_constraint`).
* BodyKinematics: each listed body's (`bodies`: all, BodySet order, or the list's order)
  center of mass in ground and its orientation as body-fixed X-Y-Z angles (Simbody's
  convertRotationToBodyFixedXYZ) in `_pos_global.sto` (columns `<body>_X, _Y, _Z, _Ox, _Oy,
  _Oz`); the mass center's velocity and the body's angular velocity in `_vel_global.sto`, their
  time derivatives in `_acc_global.sto`, in ground; with express_results_in_body_local_frame
  the velocities and accelerations (linear and angular) re-expressed in the body's frame, in
  `_vel_bodyLocal.sto` and `_acc_bodyLocal.sto` (positions stay global). With bodies `all` the
  whole model's mass center follows (`center_of_mass_X, _Y, _Z`; in every file, in ground).
* PointKinematics: a point fixed on a body (`body_name`, ground allowed; `point` in its frame)
  in ground, or with `relative_to_body_name` (a body; none or ground: ground) its position
  from that body's origin in that body's frame, R_b^T (p - o_b), and its velocity and
  acceleration in ground re-expressed in that frame, R_b^T v and R_b^T a (OpenSim's, seen:
  not the derivatives of the relative position); `point_kinematics_<point_name>_pos.sto`,
  `_vel.sto`, `_acc.sto`, columns `<point_name>_X, _Y, _Z` (OpenSim 4.6 labels them
  state_0, state_1, state_2). OpenSim stops without a word on an unknown body_name and takes
  an unknown relative_to_body_name as ground (seen); both are refused here.
* StatesReporter: the rows' states, `states_reporter_states.sto`, OpenSim 4's state names in
  its order (each coordinate's value and speed, the model's coordinates in OpenSim's order,
  the dependent and locked ones at their joints' places; then each muscle's activation and
  fiber length, or a DeGrooteFregly2016Muscle's normalized tendon force), as `myotwin osim
  forward` names them: a states file for the ForwardTool (`states_file`) or our forward.
* Units: SI, radians (inDegrees=no), whatever `in_degrees` says (OpenSim writes degrees with
  it true; its readers convert by the header's flag): as every file of ours.

How: q(t) = q + t u + t^2/2 udot near each row, through the engine's kinematics (and the
coupling's full positions), differentiated twice forward-mode in t: velocities and
accelerations are exact derivatives, not differences. Angular velocity w = vee(R' R^T),
angular acceleration vee(R'' R^T) (the symmetric R' R'^T drops out).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.coupling import full_positions
from myotwin.engine.kinematics import kinematics
from myotwin.engine.piecewise import evaluate_padded, pad_polynomials
from myotwin.musculoskeletal.adaptive import InputTable, state_rate
from myotwin.musculoskeletal.state import MusculoskeletalState
from myotwin.osim.loader import OsimModel
from myotwin.osim.row_blocks import map_row_blocks

#: Rows per call of the compiled functions (the last call padded), as the muscle analysis.
ROWS_PER_CALL = 64
#: BodyKinematics' name of the whole model's mass center (bodies `all` include it).
CENTER_OF_MASS = "center_of_mass"


class BodySelection(NamedTuple):
    """The bodies a BodyKinematics reports: OpenSim names, engine body indices, mass centers
    (n, 3) m in the body frames; with_center_of_mass: the whole model's too."""

    names: tuple[str, ...]
    index: tuple[int, ...]
    mass_center_m: np.ndarray
    with_center_of_mass: bool


def body_selection(loaded: OsimModel, bodies, names: tuple[str, ...] | None,
                   where: str) -> BodySelection:
    """The model's bodies (BodySet order) and its mass center for names None (`all`), else
    the listed bodies in order, and the mass center if `center_of_mass` is listed (its columns
    last wherever it is listed, as OpenSim writes them); ValueError naming `where` and the
    name for a body the model does not have (or a name given twice). bodies: the model
    file's bodies, name -> its `Body` (`xml_reading.read_document(...).bodies`, BodySet
    order)."""
    chosen = tuple(bodies) if names is None else tuple(names)
    for name in chosen:
        if name != CENTER_OF_MASS and (name not in bodies or name not in loaded.body_names):
            raise ValueError(f"{where}: no body named {name!r} in {loaded.source} (bodies: "
                             f"{list(bodies)}, or {CENTER_OF_MASS})")
        if chosen.count(name) > 1:
            raise ValueError(f"{where}: body {name!r} is listed twice")
    with_com = names is None or CENTER_OF_MASS in chosen
    chosen = tuple(n for n in chosen if n != CENTER_OF_MASS)
    return BodySelection(chosen, tuple(loaded.body_names.index(n) for n in chosen),
                         np.array([bodies[n].mass_center for n in chosen],
                                  dtype=np.float64).reshape(-1, 3), with_com)


def body_labels(selection: BodySelection, angular: bool = True) -> tuple[str, ...]:
    """Column labels after time: `<body>_X .. _Oz` per body, then the mass center's."""
    axes = ("X", "Y", "Z", "Ox", "Oy", "Oz") if angular else ("X", "Y", "Z")
    labels = [f"{b}_{a}" for b in selection.names for a in axes]
    if selection.with_center_of_mass:
        labels += [f"{CENTER_OF_MASS}_{a}" for a in ("X", "Y", "Z")]
    return tuple(labels)


def body_fixed_xyz(rotation: jax.Array) -> jax.Array:
    """(3,) body-fixed X-Y-Z angles (rad) of the rotation matrix R = Rx(a) Ry(b) Rz(c),
    b in [-pi/2, pi/2]: Simbody's convertRotationToBodyFixedXYZ away from b = +-pi/2."""
    r = rotation
    b = jnp.arctan2(r[0, 2], jnp.sqrt(r[0, 0] ** 2 + r[0, 1] ** 2))
    a = jnp.arctan2(-r[1, 2], r[2, 2])
    c = jnp.arctan2(-r[0, 1], r[0, 0])
    return jnp.stack([a, b, c])


def _vee(m: jax.Array) -> jax.Array:
    """The vector of the skew part of m (..., 3, 3)."""
    return 0.5 * jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                            m[..., 1, 0] - m[..., 0, 1]], axis=-1)


def _along(q, qd, qdd):
    """t -> q + t qd + t^2/2 qdd: the motion near a row, to second order."""
    return lambda t: q + t * qd + 0.5 * t * t * qdd


def _second_order(f, q, qd, qdd):
    """(f, df/dt, d2f/dt2) at t = 0 along `_along` (forward mode, twice)."""
    path = _along(q, qd, qdd)

    def first(t):
        return jax.jvp(lambda s: f(path(s)), (t,), (jnp.ones_like(t),))

    (value, rate), (_, accel) = jax.jvp(first, (jnp.zeros_like(q[0]),),
                                        (jnp.ones_like(q[0]),))
    return value, rate, accel


def _body_rows(model, coupling, index, mass_center, with_com: bool, local: bool,
               q, qd, qdd):
    """(pos (n, k), vel (n, k'), acc (n, k')) rows of a BodySelection (module docstring)."""
    index = np.asarray(index, dtype=np.int64)

    def pose(q_row):
        q_f = q_row if coupling is None else full_positions(coupling, q_row)
        kin = kinematics(model, q_f)
        rot = kin.body_rot_world[index]
        com = kin.body_pos_world[index] + jnp.einsum("bij,bj->bi", rot, mass_center)
        return com, rot, kin.subtree_com_world[0]

    def one(row):
        (com, rot, whole), (v, rot_d, whole_v), (a, rot_dd, whole_a) = _second_order(
            pose, *row)
        omega = _vee(rot_d @ jnp.swapaxes(rot, 1, 2))
        alpha = _vee(rot_dd @ jnp.swapaxes(rot, 1, 2))
        if local:   # re-expressed in each body's frame: R^T x
            v, omega, a, alpha = (jnp.einsum("bji,bj->bi", rot, x)
                                  for x in (v, omega, a, alpha))
        angles = jax.vmap(body_fixed_xyz)(rot)
        rows = []
        for lin, ang, extra in ((com, angles, whole), (v, omega, whole_v),
                                (a, alpha, whole_a)):
            row = jnp.concatenate([lin, ang], axis=1).reshape(-1)
            rows.append(jnp.concatenate([row, extra]) if with_com else row)
        return tuple(rows)

    return jax.lax.map(one, (q, qd, qdd))


_compiled_body_rows = jax.jit(_body_rows, static_argnames=("index", "with_com", "local"))


def body_rows(loaded: OsimModel, selection: BodySelection, q, qd, qdd, *,
              local: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions, velocities, accelerations) rows (n_rows, len(body_labels)) of the bodies
    of `selection` at rows of coordinates q, speeds qd and accelerations qdd (n_rows,
    n_coordinates), SI, rad (module docstring); local: velocities and accelerations in each
    body's frame."""
    mass_center = jnp.asarray(selection.mass_center_m)

    def block(rows):
        return _compiled_body_rows(loaded.model, loaded.coupling, selection.index,
                                   mass_center, selection.with_center_of_mass, local,
                                   *(jnp.asarray(r) for r in rows))

    return map_row_blocks(block, tuple(np.atleast_2d(np.asarray(x, dtype=np.float64))
                                       for x in (q, qd, qdd)), ROWS_PER_CALL)


class PointSelection(NamedTuple):
    """A PointKinematics' point: its name, the engine body it is on and its location (3,) m
    in that body's frame; relative_to: the engine body whose frame it is reported in (0:
    ground)."""

    name: str
    body: int
    point_m: tuple[float, float, float]
    relative_to: int


def point_selection(loaded: OsimModel, bodies, name: str, body: str, point_m,
                    relative_to: str, where: str) -> PointSelection:
    """The point of a PointKinematics (module docstring): body `ground` or a body of the
    model, relative_to `none`, `ground` or a body; ValueError naming `where` otherwise.
    bodies: the model file's body names (BodySet order)."""
    bodies = list(bodies)
    if not name or name.split() != [name] or "/" in name or "\\" in name:
        raise ValueError(f"{where}: <point_name> names its files and columns: one word "
                         f"without slashes is needed, got {name!r}")

    def index(value: str, field: str, extra: tuple[str, ...]) -> int:
        if value in extra:
            return 0
        if value not in bodies or value not in loaded.body_names:
            raise ValueError(f"{where}: <{field}> {value!r} is not a body of {loaded.source} "
                             f"(bodies: {bodies}, or {' or '.join(extra)})")
        return loaded.body_names.index(value)

    return PointSelection(name, index(body, "body_name", ("ground",)),
                          tuple(float(x) for x in point_m),
                          index(relative_to, "relative_to_body_name", ("none", "ground")))


def _point_rows(model, coupling, body: int, point, relative_to: int, q, qd, qdd):
    def where(q_row):
        q_f = q_row if coupling is None else full_positions(coupling, q_row)
        kin = kinematics(model, q_f)
        return (kin.body_pos_world[body] + kin.body_rot_world[body] @ point,
                kin.body_pos_world[relative_to], kin.body_rot_world[relative_to])

    def one(row):
        (p, origin, rot), (v, _, _), (a, _, _) = _second_order(where, *row)
        return rot.T @ (p - origin), rot.T @ v, rot.T @ a

    return jax.lax.map(one, (q, qd, qdd))


_compiled_point_rows = jax.jit(_point_rows, static_argnames=("body", "relative_to"))


def point_rows(loaded: OsimModel, selection: PointSelection, q, qd,
               qdd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions, velocities, accelerations) (n_rows, 3) of the point of `selection` at rows
    of q, qd, qdd (module docstring: in ground, or in the frame of its relative_to body)."""
    point = jnp.asarray(selection.point_m)

    def block(rows):
        return _compiled_point_rows(loaded.model, loaded.coupling, selection.body, point,
                                    selection.relative_to, *(jnp.asarray(r) for r in rows))

    return map_row_blocks(block, tuple(np.atleast_2d(np.asarray(x, dtype=np.float64))
                                       for x in (q, qd, qdd)), ROWS_PER_CALL)


def coordinate_rows(loaded: OsimModel, q, qd, qdd) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray]:
    """(values, speeds, accelerations) (n_rows, n_all_coordinates), `OsimModel.
    all_coordinates` order, at rows of the coordinates' q, qd, qdd (module docstring)."""
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (q, qd, qdd))
    names = loaded.all_coordinates
    out = [np.zeros((q.shape[0], len(names))) for _ in range(3)]
    for k, c in enumerate(loaded.coordinates):
        j = names.index(c)
        for o, x in zip(out, (q, qd, qdd)):
            o[:, j] = x[:, k]
    for c, locked in loaded.locked_coordinates.items():
        out[0][:, names.index(c)] = locked.value
    coupled = list(loaded.coupled_coordinates.items())
    if coupled:
        index = np.array([loaded.coordinates.index(c.independent) for _, c in coupled])
        tables = [jnp.asarray(t) for t in pad_polynomials([c.function for _, c in coupled])]
        g, slope, curvature = (np.asarray(x) for x in jax.vmap(
            lambda x: evaluate_padded(*tables, x))(jnp.asarray(q[:, index])))
        for k, (c, _) in enumerate(coupled):
            j, i = names.index(c), index[k]
            out[0][:, j] = g[:, k]
            out[1][:, j] = slope[:, k] * qd[:, i]
            out[2][:, j] = curvature[:, k] * qd[:, i] ** 2 + slope[:, k] * qdd[:, i]
    return out[0], out[1], out[2]


def _accelerations(msm, table: InputTable, t, q, qd, activation, tendon_state):
    def one(row):
        t_i, *state = row
        return state_rate(t_i, MusculoskeletalState(*state), (msm, table)).qd

    return jax.lax.map(one, (t, q, qd, activation, tendon_state))


_compiled_accelerations = jax.jit(_accelerations)


def accelerations(msm, table: InputTable, times_s, q, qd, activation,
                  tendon_state) -> np.ndarray:
    """(n_rows, n_coordinates) qdd of `msm` (an OpenSim model's `MusculoskeletalModel`) at
    each row's time and state: its forward dynamics under the inputs of `table`
    (`forward.Inputs.table`, external loads in its `loads`)."""
    rows = tuple(np.asarray(x, dtype=np.float64) for x in
                 (np.atleast_1d(times_s), q, qd, activation, tendon_state))

    def block(r):
        return (_compiled_accelerations(msm, table, *(jnp.asarray(x) for x in r)),)

    return map_row_blocks(block, rows, ROWS_PER_CALL)[0]


class AnalysisRows(NamedTuple):
    """The rows the analyses report (module docstring): times_s (n,), coordinates q, speeds
    qd and forward-dynamics accelerations qdd (n, n_coordinates; None when they were not
    asked for: `analysis_rows`' with_accelerations); the muscles' activations and tendon
    states there (n, n_muscles) and the CoordinateActuators' controls (n, n_u); summary: how
    the muscle states were found (for the summaries)."""

    times_s: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray | None
    activation: np.ndarray
    tendon_state: np.ndarray
    control: np.ndarray
    summary: dict
    muscle_groups: tuple


def _dependent_columns(loaded: OsimModel, table, source: str, motion,
                       states_file: bool) -> dict:
    """The coupled coordinates' columns where OpenSim's tools would hold a speed against the
    constraint: ValueError naming the file for a dependent coordinate without its column (a
    coordinates file's) or its value and speed columns (a states file's; OpenSim then leaves
    its speed 0, a state ours cannot represent). Returns, for a states file, {dependent: the
    largest |speed in the file - g' u|} (what OpenSim's state has beside the constraint's)."""
    from myotwin.osim.muscle_states import opensim3_label

    why = ("OpenSim's tools would hold its speed at 0, against the constraint, which ours "
           "(the coordinate eliminated) cannot represent")
    if not states_file:        # a coordinates file, prepared
        for d, c in loaded.coupled_coordinates.items():
            if d not in motion.dependent_in_file:
                raise ValueError(f"{source}: no column for {d!r}, which CoordinateCoupler"
                                 f"Constraint {c.constraint!r} makes a function of "
                                 f"{c.independent!r}: {why}; give its column (inverse "
                                 "kinematics writes it)")
        return {}
    rows = np.isin(table.time_s, motion.times_s)
    _, speeds, _ = coordinate_rows(loaded, motion.q, motion.qd, np.zeros_like(motion.q))
    off = {}
    for d, c in loaded.coupled_coordinates.items():
        label = f"/jointset/{c.joint}/{d}/speed"
        found = [n for n in (label, opensim3_label(label)) if n in table.labels]
        if not found:
            raise ValueError(f"{source}: no column {label!r} for {d!r}, which CoordinateCoupler"
                             f"Constraint {c.constraint!r} makes a function of "
                             f"{c.independent!r}: {why}")
        column = table.data[rows, table.labels.index(found[0])]
        off[d] = float(np.abs(column - speeds[:, loaded.all_coordinates.index(d)]).max())
    return off


def analysis_rows(loaded: OsimModel, *, coordinates_path=None, states_path=None,
                  cutoff_hz: float | None = None, start_time_s: float = -np.inf,
                  end_time_s: float = np.inf, equilibrium: bool = False,
                  external_loads=None, inputs=None,
                  with_accelerations: bool = True) -> AnalysisRows:
    """The rows of a coordinates file (prepared as OpenSim's tools prepare it, the muscles at
    their default states) or of a states file (states as written), the compliant tendons'
    states in equilibrium with `equilibrium` (OpenSim's solve_for_equilibrium_for_auxiliary_
    states; `muscle_equilibrium`), and, with_accelerations, the accelerations of OpenSim's
    forward dynamics there (`accelerations`), with the forces of `external_loads` (an
    `external_loads.ExternalLoads`, or None) acting. inputs: the `osim.forward.Inputs`
    giving the actuators' controls (default: the model's PrescribedControllers', 0 without).
    ValueError naming the file, field and value for bad input; FloatingPointError naming the
    model and time where the accelerations are not finite."""
    from myotwin import musculoskeletal as ms
    from myotwin.osim.forward import Inputs
    from myotwin.osim.forward_loads import forward_loads
    from myotwin.osim.inverse_dynamics import prepared_motion
    from myotwin.osim.muscle_analysis import path_rows
    from myotwin.osim.muscle_equilibrium import equilibrium_states
    from myotwin.osim.muscle_states import (default_state_rows, muscle_groups,
                                            refuse_fibers_of_no_length, states_from_file)
    from myotwin.osim.muscles import build_muscles
    from myotwin.osim.storage import read_storage

    groups = muscle_groups(loaded) if loaded.muscle_names else ()
    shape_of = (lambda n: (n, len(loaded.muscle_names)))
    defaulted: tuple[str, ...] = ()
    source = str(coordinates_path if states_path is None else states_path)
    table = read_storage(source)
    if states_path is None:
        motion = prepared_motion(loaded, table, cutoff_hz=cutoff_hz,
                                 start_time_s=start_time_s, end_time_s=end_time_s,
                                 source=source)
        activation, tendon = default_state_rows(groups, shape_of(motion.times_s.size))
        if not equilibrium:
            refuse_fibers_of_no_length(loaded, groups, loaded.source)
    else:
        motion = states_from_file(loaded, table, source, groups, start_time_s, end_time_s)
        activation, tendon, defaulted = motion.activation, motion.tendon_state, motion.defaulted
    dependent_speeds_off = _dependent_columns(loaded, table, source, motion,
                                              states_path is not None)
    failed = np.zeros(shape_of(motion.times_s.size), dtype=bool)
    if equilibrium and groups:
        lengths, speeds, _ = path_rows(loaded, motion.q, motion.qd)
        tendon, failed, _ = equilibrium_states(groups, lengths, speeds, activation, tendon)
    given = Inputs(loaded, None, None, undriven=0.0) if inputs is None else inputs
    qdd = None
    if with_accelerations:
        msm = ms.musculoskeletal_model(loaded.model, build_muscles(loaded, tendon="opensim"),
                                       coupling="opensim", coordinates=loaded.coupling)
        input_table = given.table(float(motion.times_s[0]), float(motion.times_s[-1]))
        if external_loads is not None:
            input_table = input_table._replace(loads=forward_loads(loaded, external_loads))
        qdd = accelerations(msm, input_table, motion.times_s, motion.q, motion.qd, activation,
                            tendon)
        bad = np.flatnonzero(~np.isfinite(qdd).all(axis=1))
        if bad.size:
            raise FloatingPointError(f"{loaded.source}: the forward dynamics' accelerations "
                                     f"are not finite at t = "
                                     f"{float(motion.times_s[bad[0]])!r} s")
    names = loaded.muscle_names
    summary = {
        "muscle_states": ("states_file" if states_path is not None else "default")
        + (" + equilibrium" if equilibrium else ""),
        "muscle_states_defaulted": list(defaulted),
        "muscle_equilibrium_failed": {names[k]: int(failed[:, k].sum())
                                      for k in np.flatnonzero(failed.any(axis=0))},
        "controllers": list(given.controllers),
        "external_loads_file": None if external_loads is None else str(external_loads.path),
        "dependent_speeds_off_constraint": dependent_speeds_off,
    }
    return AnalysisRows(motion.times_s, motion.q, motion.qd, qdd, np.asarray(activation),
                        np.asarray(tendon), given.control(motion.times_s), summary, groups)


def write_table(path, name: str, labels, times_s, values, comment: str) -> str:
    """A storage file of rows (time, values) (`osim.storage.StorageWriter`); returns its path
    as a string."""
    from myotwin.osim.storage import StorageWriter

    with StorageWriter(path, name, ("time", *labels), comment) as writer:
        writer.write_rows(np.concatenate([times_s[:, None], values], axis=1))
    return str(path)


def coordinate_selection(loaded: OsimModel, names: tuple[str, ...] | None,
                         where: str) -> tuple[str, ...]:
    """The coordinates a Kinematics reports: `OsimModel.all_coordinates` for names None
    (`all`), else the listed ones in order; ValueError naming `where` and the name for one
    the model does not have (or a name given twice)."""
    every = loaded.all_coordinates
    chosen = every if names is None else tuple(names)
    for c in chosen:
        if c not in every:
            raise ValueError(f"{where}: no coordinate named {c!r} in {loaded.source} "
                             f"(coordinates: {list(every)})")
        if chosen.count(c) > 1:
            raise ValueError(f"{where}: coordinate {c!r} is listed twice")
    return chosen


def write_kinematics(loaded: OsimModel, rows: AnalysisRows, out_dir,
                     coordinates: tuple[str, ...]) -> dict:
    """OpenSim's Kinematics into out_dir: kinematics_q.sto, kinematics_u.sto,
    kinematics_dudt.sto, the values, speeds and accelerations of `coordinates`
    (`coordinate_selection`). Returns {"coordinates", "files"}."""
    columns = [loaded.all_coordinates.index(c) for c in coordinates]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for key, title, values in zip(("q", "u", "dudt"),
                                  ("Coordinates", "Speeds", "Accelerations"),
                                  coordinate_rows(loaded, rows.q, rows.qd, rows.qdd)):
        files[key] = write_table(out / f"kinematics_{key}.sto", title, coordinates,
                                 rows.times_s, values[:, columns],
                                 f"OpenSim's Kinematics: {loaded.source} (SI: rad, m)")
    return {"coordinates": list(coordinates), "files": files}


def write_body_kinematics(loaded: OsimModel, rows: AnalysisRows, out_dir,
                          selection: BodySelection, local: bool) -> dict:
    """OpenSim's BodyKinematics into out_dir: body_kinematics_pos_global.sto and the
    velocities and accelerations, _global or _bodyLocal (module docstring). Returns
    {"bodies", "center_of_mass", "files"}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame = "bodyLocal" if local else "global"
    labels = body_labels(selection)
    files = {}
    for key, title, values in zip(("pos_global", f"vel_{frame}", f"acc_{frame}"),
                                  ("Positions", "Velocities", "Accelerations"),
                                  body_rows(loaded, selection, rows.q, rows.qd, rows.qdd,
                                            local=local)):
        files[key] = write_table(out / f"body_kinematics_{key}.sto", title, labels,
                                 rows.times_s, values,
                                 f"OpenSim's BodyKinematics: {loaded.source} (mass centers, "
                                 "body-fixed X-Y-Z angles; SI: m, rad)")
    return {"bodies": list(selection.names), "center_of_mass": selection.with_center_of_mass,
            "files": files}


def write_point_kinematics(loaded: OsimModel, rows: AnalysisRows, out_dir,
                           selection: PointSelection) -> dict:
    """OpenSim's PointKinematics into out_dir: point_kinematics_<name>_pos.sto, _vel.sto,
    _acc.sto (module docstring). Returns {"point", "files"}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = tuple(f"{selection.name}_{a}" for a in ("X", "Y", "Z"))
    files = {}
    for key, title, values in zip(("pos", "vel", "acc"),
                                  ("PointPosition", "PointVelocity", "PointAcceleration"),
                                  point_rows(loaded, selection, rows.q, rows.qd, rows.qdd)):
        files[key] = write_table(out / f"point_kinematics_{selection.name}_{key}.sto", title,
                                 labels, rows.times_s, values,
                                 f"OpenSim's PointKinematics: {loaded.source} (SI: m)")

    def body(index: int) -> str:
        return "ground" if index == 0 else loaded.body_names[index]

    return {"point": selection.name, "body": body(selection.body),
            "point_m": list(selection.point_m), "relative_to": body(selection.relative_to),
            "files": files}


def write_states(loaded: OsimModel, rows: AnalysisRows, out_dir) -> dict:
    """OpenSim's StatesReporter into out_dir: states_reporter_states.sto (module docstring).
    Returns {"states", "files"}."""
    from myotwin.osim.forward import state_labels

    q, u, _ = coordinate_rows(loaded, rows.q, rows.qd, np.zeros_like(rows.q))
    n = rows.times_s.size
    columns = np.stack([q, u], axis=2).reshape(n, -1)          # value, speed per coordinate
    muscles = np.stack([rows.activation, rows.tendon_state], axis=2).reshape(n, -1)
    labels = state_labels(loaded, loaded.all_coordinates)[1:]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = write_table(out / "states_reporter_states.sto", "ModelStates", labels, rows.times_s,
                       np.concatenate([columns, muscles], axis=1),
                       f"OpenSim's StatesReporter: {loaded.source} (SI)")
    return {"states": list(labels), "files": {"states": path}}
