"""The muscle-state outputs of OpenSim's MuscleAnalysis: fiber and tendon lengths, velocities,
forces and powers of a loaded model's muscles at rows of (q, qd) and muscle states.

An analysis of coordinates alone (OpenSim's AnalyzeTool with a coordinates file and
`solve_for_equilibrium_for_auxiliary_states` false, its default) takes each muscle's states
from the model: its `default_activation` and its tendon state (`default_fiber_length` of
Thelen2003Muscle and Millard2012EquilibriumMuscle, `default_normalized_tendon_force` of
DeGrooteFregly2016Muscle), or the type's default where the file gives none (`STATE_DEFAULTS`,
OpenSim 4.6's default-constructed objects). Each muscle is evaluated in its own type's
model (`osim.build_muscles(..., tendon="opensim")`), so the fiber velocity is the one its
state equations give at those states (Thelen's force-velocity inverse, Millard's damped
equilibrium, De Groote's explicit tendon force).

`OUTPUTS` maps OpenSim's MuscleAnalysis file names to values of `muscle.MuscleOutputs`; its
"Moment_<coordinate>" files are the moment arm times the tendon force (`MomentArm` x
`TendonForce`), as OpenSim's `record` computes them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.muscle import Muscle, muscle_outputs
from myotwin.muscle.model import TendonModel
from myotwin.osim.muscles import OPENSIM_STATE, build_muscles

#: OpenSim 4.6's initial muscle states of a default-constructed muscle of each type (read
#: from OpenSim in tests/osim/test_osim_muscle_analysis.py): activation, and the tendon
#: state's property and value.
STATE_DEFAULTS = {
    "Thelen2003Muscle": (0.05, "default_fiber_length_m", 0.1),
    "Millard2012EquilibriumMuscle": (0.05, "default_fiber_length_m", 0.1),
    "DeGrooteFregly2016Muscle": (0.5, "default_normalized_tendon_force", 0.5),
}


def _passive(o):
    """OpenSim's passive fiber force: the conservative element and the damper (Millard's
    `passiveFiberForce` includes the damping force; Thelen has no damper, and a De Groote
    muscle with one is refused by `build_muscles`' explicit tendon-force model)."""
    return o.passive_fiber_force_N + o.damping_fiber_force_N


#: OpenSim MuscleAnalysis output (its file name's suffix) -> its value from `MuscleOutputs`
#: (each (n_muscles,)). OpenSim lumps the fiber damper into the passive fiber force and into
#: the active fiber power (-(F_M - F_PE) v_M), not into the passive power (-F_PE v_M).
OUTPUTS = {
    "PennationAngle": lambda o: o.pennation_rad,
    "FiberLength": lambda o: o.fiber_length_m,
    "NormalizedFiberLength": lambda o: o.norm_fiber_length,
    "TendonLength": lambda o: o.tendon_length_m,
    "FiberVelocity": lambda o: o.fiber_velocity_m_per_s,
    "NormFiberVelocity": lambda o: o.norm_fiber_velocity,
    "PennationAngularVelocity": lambda o: o.pennation_velocity_rad_per_s,
    "TendonForce": lambda o: o.tendon_force_N,
    "FiberForce": lambda o: o.fiber_force_N,
    "ActiveFiberForce": lambda o: o.active_fiber_force_N,
    "PassiveFiberForce": _passive,
    "ActiveFiberForceAlongTendon": lambda o: o.active_fiber_force_N * o.cos_pennation,
    "PassiveFiberForceAlongTendon": lambda o: _passive(o) * o.cos_pennation,
    "FiberActivePower": lambda o: o.fiber_active_power_W + o.fiber_damping_power_W,
    "FiberPassivePower": lambda o: o.fiber_passive_power_W,
    "TendonPower": lambda o: o.tendon_power_W,
    "MuscleActuatorPower": lambda o: o.musculotendon_power_W,
}
#: Units of each output, for the files' headers.
UNITS = {"PennationAngle": "rad", "FiberLength": "m", "NormalizedFiberLength": "l_opt",
         "TendonLength": "m", "FiberVelocity": "m/s", "NormFiberVelocity": "v_max l_opt",
         "PennationAngularVelocity": "rad/s", "TendonForce": "N", "FiberForce": "N",
         "ActiveFiberForce": "N", "PassiveFiberForce": "N", "ActiveFiberForceAlongTendon": "N",
         "PassiveFiberForceAlongTendon": "N", "FiberActivePower": "W",
         "FiberPassivePower": "W", "TendonPower": "W", "MuscleActuatorPower": "W"}


class MuscleGroup(NamedTuple):
    """Muscles evaluated together: their OpenSim type (e.g. "Thelen2003Muscle"), their columns
    in `loaded.muscle_names` order (static), the `Muscle` pytree and their default states
    (activation, tendon state), each (n,)."""

    opensim_type: str
    columns: tuple[int, ...]
    muscles: Muscle
    activation: np.ndarray
    tendon_state: np.ndarray


def _default_states(loaded, names, muscles: Muscle) -> tuple[np.ndarray, np.ndarray]:
    act, state = [], []
    for name in names:
        params = loaded.muscles[name]
        a0, key, s0 = STATE_DEFAULTS[params["type"]]
        act.append(float(params.get("default_activation", a0)))
        state.append(0.0 if muscles.tendon is TendonModel.RIGID else float(params.get(key, s0)))
    return np.asarray(act), np.asarray(state)


def muscle_groups(loaded) -> tuple[MuscleGroup, ...]:
    """The loaded model's muscles in groups of one type and tendon model (in ForceSet order
    within each), each built as OpenSim integrates it (`build_muscles(tendon="opensim")`).
    Muscles a group cannot hold together (e.g. Millard muscles with different curve objects)
    are built one by one; a muscle `build_muscles` refuses raises its ValueError."""
    by_kind: dict[tuple, list[str]] = {}
    for name in loaded.muscle_names:
        params = loaded.muscles[name]
        key = (params["type"], bool(params.get("ignore_tendon_compliance", False)))
        by_kind.setdefault(key, []).append(name)
    groups = []
    for names in by_kind.values():
        try:
            parts = [(names, build_muscles(loaded, tendon="opensim", names=names))]
        except ValueError:
            parts = [([n], build_muscles(loaded, tendon="opensim", names=[n])) for n in names]
        for part, muscles in parts:
            act, state = _default_states(loaded, part, muscles)
            columns = tuple(loaded.muscle_names.index(n) for n in part)
            groups.append(MuscleGroup(loaded.muscles[part[0]]["type"], columns, muscles, act,
                                      state))
    return tuple(groups)


@jax.jit
def _group_outputs(muscles: Muscle, activation, tendon_state, lengths, speeds):
    """MuscleOutputs with a leading rows axis, at rows of (a, s, l_MT, v_MT) (n_rows, n)."""
    return jax.vmap(lambda a, s, l, v: muscle_outputs(muscles, a, l, v, s))(
        activation, tendon_state, lengths, speeds)


def state_outputs(groups, lengths, speeds, activation, tendon_state) -> dict[str, np.ndarray]:
    """OpenSim's MuscleAnalysis muscle-state outputs (`OUTPUTS` name -> (n_rows, n_muscles)
    array, columns in `loaded.muscle_names` order) at rows of path lengths and lengthening
    speeds (n_rows, n_muscles), and of the muscles' activations and tendon states (n_rows,
    n_muscles; the groups' defaults: `default_state_rows`)."""
    lengths, speeds = np.asarray(lengths, float), np.asarray(speeds, float)
    result = {name: np.full(lengths.shape, np.nan) for name in OUTPUTS}
    for g in groups:
        cols = np.asarray(g.columns)
        out = _group_outputs(g.muscles, *(jnp.asarray(np.asarray(x, float)[:, cols]) for x in
                                          (activation, tendon_state, lengths, speeds)))
        for name, value in OUTPUTS.items():
            result[name][:, cols] = np.asarray(value(out))
    return result


def default_state_rows(groups, shape) -> tuple[np.ndarray, np.ndarray]:
    """(activation, tendon state) arrays of `shape` (n_rows, n_muscles), every row the
    groups' default states."""
    activation, tendon_state = np.zeros(shape), np.zeros(shape)
    for g in groups:
        activation[:, list(g.columns)] = g.activation
        tendon_state[:, list(g.columns)] = g.tendon_state
    return activation, tendon_state


def refuse_fibers_of_no_length(loaded, groups, source) -> None:
    """ValueError naming `source` (the model file) and the muscle if a compliant
    Thelen2003Muscle's default fiber length is not positive. OpenSim runs such a file: it
    evaluates the fiber at zero length (its tendon then pulls ~2e4 N in Tug_of_War.osim), a
    state in which the pennation speed is 0/0; Millard's fiber is clamped to its minimum
    length instead, by OpenSim and by ours, so it is not refused."""
    for g in groups:
        if g.opensim_type != "Thelen2003Muscle" or g.muscles.tendon is TendonModel.RIGID:
            continue
        for column, length in zip(g.columns, g.tendon_state):
            if not length > 0.0:
                raise ValueError(
                    f"{source}: Thelen2003Muscle '{loaded.muscle_names[column]}': "
                    f"default_fiber_length {float(length)} m is not positive; the default "
                    "muscle states need a fiber length (or put the fibers in equilibrium: "
                    "--muscle-states equilibrium, or a setup's "
                    "solve_for_equilibrium_for_auxiliary_states true)")


class StateRows(NamedTuple):
    """The rows of a states file within a time range: times_s (n,), coordinates q and speeds
    qd (n, n_coordinates) in `loaded.coordinates` order, activation and tendon_state
    (n, n_muscles); defaulted: the muscle states the file lacks (their default taken)."""

    times_s: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    activation: np.ndarray
    tendon_state: np.ndarray
    defaulted: tuple[str, ...]


def opensim3_label(label: str) -> str:
    """OpenSim 3's name of the state OpenSim 4 calls `label`: `<coordinate>` for
    /jointset/<joint>/<coordinate>/value, `<coordinate>_u` for its /speed,
    `<muscle>.<state>` for /forceset/<muscle>/<state> (as CMC's states files have them)."""
    parts = label.split("/")
    if len(parts) == 5 and parts[1] == "jointset":
        return parts[3] if parts[4] == "value" else f"{parts[3]}_u"
    if len(parts) == 4 and parts[1] == "forceset":
        return f"{parts[2]}.{parts[3]}"
    return label


def states_from_file(loaded, table, source: str, groups, start_time_s: float = -np.inf,
                     end_time_s: float = np.inf) -> StateRows:
    """The states of a states file (`osim.storage.Storage` `table`, read from `source`) as
    OpenSim 4 names them (`/jointset/<joint>/<coordinate>/value` and `/speed`,
    `/forceset/<muscle>/activation` and its tendon state, `muscles.OPENSIM_STATE`), as
    `myotwin osim forward` and OpenSim's tools write them, or as OpenSim 3 named them
    (`<coordinate>` and `<coordinate>_u`, `<muscle>.activation`; e.g. CMC's states), SI
    (`opensim3_label`). Columns of eliminated
    (coupled, locked) coordinates and of other components are not read. Every coordinate's
    value and speed must be there; a muscle state that is not takes the muscle's default
    (`MuscleGroup`), as OpenSim fills a states table's missing states. ValueError naming the
    file, column and value otherwise."""
    if table.in_degrees:
        raise ValueError(f"{source}: inDegrees=yes; a states file holds SI values (radians, "
                         "metres), as OpenSim writes its states")
    times = table.time_s
    rows = (times >= start_time_s) & (times <= end_time_s)
    if not rows.any():
        raise ValueError(f"{source}: no row between --start-s {start_time_s!r} and --end-s "
                         f"{end_time_s!r} (the file spans {times[0]!r} to {times[-1]!r} s)")

    def column(label):   # (`read_storage` has refused non-finite values)
        for name in (label, opensim3_label(label)):
            if name in table.labels:
                return table.data[rows, table.labels.index(name)]
        return None

    qs, qds = [], []
    for c in loaded.coordinates:
        base = f"/jointset/{loaded.coordinate_joints[c]}/{c}"
        for label, out in ((f"{base}/value", qs), (f"{base}/speed", qds)):
            values = column(label)
            if values is None:
                raise ValueError(f"{source}: no column {label!r} (or "
                                 f"{opensim3_label(label)!r}): a states file names each "
                                 "coordinate's value and speed as OpenSim 4 does "
                                 "(/jointset/<joint>/<coordinate>/value and /speed) or as "
                                 "OpenSim 3 did (<coordinate> and <coordinate>_u)")
            out.append(values)
    n = int(rows.sum())
    activation, tendon_state = default_state_rows(groups, (n, len(loaded.muscle_names)))
    defaulted = []
    for g in groups:
        for k in g.columns:
            muscle = loaded.muscle_names[k]
            names = [("activation", activation)]
            if g.muscles.tendon is not TendonModel.RIGID:   # (built as OpenSim integrates)
                names.append((OPENSIM_STATE[loaded.muscles[muscle]["type"]], tendon_state))
            for name, target in names:
                label = f"/forceset/{muscle}/{name}"
                values = column(label)
                if values is None:
                    defaulted.append(label)
                else:
                    target[:, k] = values
    return StateRows(times[rows], np.stack(qs, axis=1), np.stack(qds, axis=1), activation,
                     tendon_state, tuple(defaulted))
