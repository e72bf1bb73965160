"""Where a forward run of a loaded .osim model starts (`myotwin osim forward`, `forward.py`).

* `initial_q`: the coordinates' default values, or a states file's, some replaced by name;
  `default_speeds`: their default speeds.
* `read_initial_states`: the row of an OpenSim states file a run starts from, as OpenSim's
  ForwardTool picks it from its `states_file` (the last row at or before the initial time,
  whose time the run then starts at); names as OpenSim 4 or OpenSim 3 write them
  (`muscle_states.states_from_file`), missing muscle states at the model's defaults.
* `start_state`: the `MusculoskeletalState` at the start: the file's row as written (no
  equilibrium, the ForwardTool's default), or its fibers in OpenSim's equilibrium of each
  muscle type (`solve_for_equilibrium_for_auxiliary_states`, `muscle_equilibrium`), or the
  default pose and speeds with the tendons in equilibrium (`musculoskeletal.equilibrium_state`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from myotwin.muscle.model import TendonModel
from myotwin.musculoskeletal.api import path_state
from myotwin.musculoskeletal.state import MusculoskeletalState, equilibrium_state
from myotwin.osim.loader import OsimModel
from myotwin.osim.muscles import OPENSIM_STATE
from myotwin.osim.muscle_equilibrium import equilibrium_states
from myotwin.osim.muscle_states import (default_state_rows, muscle_groups,
                                       refuse_fibers_of_no_length, states_from_file)
from myotwin.osim.storage import Storage
from myotwin.scalars import as_real


def initial_q(loaded: OsimModel, given: Mapping[str, float] | None = None,
              defaults: Mapping[str, float] | None = None) -> np.ndarray:
    """The coordinates' default values (or `defaults`, name -> value, e.g. a states file's
    row) in q order, with `given` (name -> rad or m) replacing some; ValueError naming an
    unknown coordinate, a coupled or locked one, or a non-finite value."""
    defaults = loaded.coordinate_default_values if defaults is None else defaults
    return _by_coordinate(loaded, given, defaults, "value")


def initial_qd(loaded: OsimModel, given: Mapping[str, float] | None = None,
               defaults: Mapping[str, float] | None = None) -> np.ndarray:
    """The coordinates' speeds in q order: `defaults` (name -> value, e.g. a states file's
    row; else `default_speeds`) with `given` (name -> rad/s or m/s) replacing some;
    ValueError as `initial_q`'s."""
    if defaults is None:
        defaults = dict(zip(loaded.coordinates, default_speeds(loaded).tolist()))
    return _by_coordinate(loaded, given, defaults, "speed")


def _by_coordinate(loaded: OsimModel, given, defaults: Mapping[str, float],
                   what: str) -> np.ndarray:
    """`defaults` in q order with `given` replacing some (`initial_q`)."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(loaded.coordinates))
    coupled = [n for n in unknown if n in loaded.coupled_coordinates]
    if coupled:
        c = loaded.coupled_coordinates[coupled[0]]
        raise ValueError(f"{loaded.source}: {coupled[0]!r} follows {c.independent!r} through "
                         f"{c.constraint!r} ({c.description}); give {c.independent!r} instead")
    locked = [n for n in unknown if n in loaded.locked_coordinates]
    if locked:
        raise ValueError(f"{loaded.source}: {locked[0]!r} is locked at "
                         f"{loaded.locked_coordinates[locked[0]].value!r} (its default_value); "
                         f"unlock it in the model (<locked>false</locked>) to give it a {what}")
    if unknown:
        raise ValueError(f"{loaded.source}: no coordinate named {unknown[0]!r}; the "
                         f"coordinates are {list(loaded.coordinates)}")
    q = []
    for name in loaded.coordinates:
        value = given.get(name, defaults[name])
        number = as_real(value)
        if number is None or not math.isfinite(number):
            raise ValueError(f"{loaded.source}: initial {what} of {name!r} must be a finite "
                             f"number, got {value!r}")
        q.append(number)
    return np.asarray(q, dtype=np.float64)


def default_speeds(loaded: OsimModel) -> np.ndarray:
    """The coordinates' default_speed_value (rad/s or m/s) in q order, the speeds of OpenSim's
    default state. A locked coordinate's is not used (OpenSim locks its speed at 0 too).
    ValueError naming the model, coordinate and constraint for a nonzero default speed on a
    coordinate of an enforced CoordinateCouplerConstraint (dependent or independent): OpenSim
    projects the default speeds onto the constraint (Simbody's least-squares projection as
    the integrator starts), which the exact elimination here does not reproduce."""
    speeds = loaded.coordinate_default_speeds
    for dependent, c in loaded.coupled_coordinates.items():
        for name in (dependent, c.independent):
            if speeds[name] != 0.0:
                raise ValueError(
                    f"{loaded.source}: coordinate {name!r} has default_speed_value "
                    f"{speeds[name]!r} and is coupled by CoordinateCouplerConstraint "
                    f"{c.constraint!r}: OpenSim projects such default speeds onto the "
                    "constraint, which is not reproduced; start from a states file")
    return np.array([speeds[n] for n in loaded.coordinates], dtype=np.float64)


class InitialStates(NamedTuple):
    """The state a run starts from, read from a states file (`read_initial_states`): the
    file's name `source`; the row's time_s; coordinates q and speeds qd (n_coordinates,) in
    `loaded.coordinates` order; activation and tendon_state (n_muscles,) in
    `loaded.muscle_names` order, tendon_models the `TendonModel` whose state tendon_state is
    (the one OpenSim integrates for the muscle's type); defaulted: the muscle states the file
    lacks, which take the model's default_activation and default fiber length (or tendon
    force), as OpenSim fills a states table's missing states."""

    source: str
    time_s: float
    q: np.ndarray
    qd: np.ndarray
    activation: np.ndarray
    tendon_state: np.ndarray
    tendon_models: tuple[TendonModel, ...]
    defaulted: tuple[str, ...]


def read_initial_states(loaded: OsimModel, table: Storage, source: str,
                        start_s: float | None = None) -> InitialStates:
    """The row of the states file `table` (read from `source`) that a run starting at
    `start_s` begins from, as OpenSim's ForwardTool picks its initial states: the last row at
    or before start_s (default: the first row); the run starts at that row's time. Names as
    OpenSim 4 or OpenSim 3 write them (`muscle_states.states_from_file`). ValueError naming
    the file when start_s precedes its first row, a coordinate's value or speed is missing,
    an activation is outside [0, 1] or a fiber length is not positive."""
    if not isinstance(table, Storage):
        raise TypeError(f"read_initial_states: table must be a Storage (osim.storage."
                        f"read_storage of a .sto file), got {type(table).__name__}")
    times = table.time_s
    start = times[0] if start_s is None else start_time(start_s)
    before = np.flatnonzero(times <= start)
    if not before.size:
        raise ValueError(f"{source}: --start-s {start!r} precedes the file's first row "
                         f"({float(times[0])!r} s)")
    t = float(times[before[-1]])
    groups = muscle_groups(loaded) if loaded.muscle_names else ()
    rows = states_from_file(loaded, table, source, groups, t, t)
    models = _tendon_models(loaded, groups)
    activation, tendon_state = rows.activation[-1], rows.tendon_state[-1]
    for k, name in enumerate(loaded.muscle_names):
        if not 0.0 <= activation[k] <= 1.0:
            raise ValueError(f"{source}: activation of {name!r} at t = {t!r} s is "
                             f"{float(activation[k])!r}, outside [0, 1]")
        if models[k] in _FIBER_STATES and not tendon_state[k] > 0.0:
            raise ValueError(f"{source}: fiber length of {name!r} at t = {t!r} s is "
                             f"{float(tendon_state[k])!r} m, not positive")
    return InitialStates(source, t, rows.q[-1], rows.qd[-1], activation, tendon_state,
                         tuple(models), rows.defaulted)


def _tendon_models(loaded: OsimModel, groups) -> tuple[TendonModel, ...]:
    """The tendon model whose state each muscle carries (its group's; rigid otherwise)."""
    models = [TendonModel.RIGID] * len(loaded.muscle_names)
    for g in groups:
        for k in g.columns:
            models[k] = g.muscles.tendon
    return tuple(models)


def default_initial_states(loaded: OsimModel, time_s: float,
                           equilibrium: bool = False) -> InitialStates:
    """The model's default state at time_s, where OpenSim's ForwardTool without a states file
    starts (no equilibrium unless asked): every coordinate at its default_value and
    default_speed_value (`default_speeds`), each muscle at its default_activation and default
    fiber length (or De Groote's default normalized tendon force), as
    `muscle_states.MuscleGroup` gives them. ValueError naming the model for a compliant
    Thelen muscle whose default fiber length is not positive (`refuse_fibers_of_no_length`)
    unless the run puts the fibers in `equilibrium` (OpenSim's equilibrium of a Thelen muscle
    does not start from the fiber's length: the ForwardTool runs such a file then), and as
    `default_speeds`."""
    groups = muscle_groups(loaded) if loaded.muscle_names else ()
    if not equilibrium:
        refuse_fibers_of_no_length(loaded, groups, loaded.source)
    activation, tendon_state = default_state_rows(groups, (1, len(loaded.muscle_names)))
    models = _tendon_models(loaded, groups)
    states = []                           # every muscle state, labelled as a states file's
    for k, m in enumerate(loaded.muscle_names):
        states.append(f"/forceset/{m}/activation")
        if models[k] is not TendonModel.RIGID:
            states.append(f"/forceset/{m}/{OPENSIM_STATE[loaded.muscles[m]['type']]}")
    return InitialStates("the model's default state", float(time_s), initial_q(loaded),
                         default_speeds(loaded), activation[0], tendon_state[0], models,
                         tuple(states))


def start_time(value) -> float:
    """value as a float, or ValueError unless it is one finite number of seconds."""
    number = as_real(value)
    if number is None or not math.isfinite(number):
        raise ValueError(f"start_s must be a finite number of seconds, got {value!r}")
    return number


_FIBER_STATES = (TendonModel.FIBER_LENGTH, TendonModel.DAMPED_FIBER_LENGTH)


def start_state(loaded, msm, excitation, q0, initial, equilibrium,
                qd0=None) -> tuple[MusculoskeletalState, list[str]]:
    """The state a run of `msm` starts from (`forward.forward`'s docstring): `initial`'s
    (`read_initial_states`; `q0` and `qd0`, name -> value, replacing some coordinates and
    speeds), with its tendon states or, with `equilibrium`, OpenSim's equilibrium there; or
    without `initial` the default pose and speeds (`default_speeds`; q0, qd0 replacing some),
    activations = `excitation` (n_muscles,), tendons in equilibrium. Also returns the muscles
    whose equilibrium OpenSim's method did not find (their tendon state left as the file's)."""
    if initial is None:
        q = jnp.asarray(initial_q(loaded, q0))
        qd = jnp.asarray(initial_qd(loaded, qd0))
        return equilibrium_state(msm, q, qd, jnp.asarray(excitation)), []
    q = jnp.asarray(initial_q(loaded, q0, dict(zip(loaded.coordinates, initial.q.tolist()))))
    qd = jnp.asarray(initial_qd(loaded, qd0, dict(zip(loaded.coordinates,
                                                       initial.qd.tolist()))))
    state = equilibrium_state(msm, q, qd, jnp.asarray(initial.activation))
    if msm.muscles.tendon is TendonModel.RIGID:
        return state, []
    as_opensim = not _other_tendon_states(loaded, msm, initial)
    if not equilibrium:
        return state._replace(tendon_state=jnp.asarray(initial.tendon_state)), []
    if not as_opensim:   # another tendon model than OpenSim's: ours (zero tendon velocity)
        return state, []
    # OpenSim's equilibrateMuscles: each type's own equilibrium at the path's length and
    # lengthening speed (Thelen shares the speed between fiber and tendon by stiffness)
    length, speed, _ = path_state(msm, state.q, state.qd)
    solved, failed, _ = equilibrium_states(
        muscle_groups(loaded), np.asarray(length)[None], np.asarray(speed)[None],
        np.asarray(initial.activation)[None], np.asarray(initial.tendon_state)[None])
    names = [m for m, bad in zip(loaded.muscle_names, failed[0].tolist()) if bad]
    for k, m in enumerate(loaded.muscle_names):
        if m in names and initial.tendon_models[k] in _FIBER_STATES and not solved[0][k] > 0:
            raise ValueError(f"{initial.source}: OpenSim's equilibrium of {m!r} was not found "
                             f"and its fiber length {float(solved[0][k])!r} m is not "
                             "positive: there is no state to start from")
    return state._replace(tendon_state=jnp.asarray(solved[0])), names


def check_tendon_states(loaded, msm, initial: InitialStates) -> None:
    """ValueError unless msm integrates the tendon states `initial` holds (or has rigid
    tendons, which have none)."""
    if msm.muscles.tendon is TendonModel.RIGID:
        return
    other = _other_tendon_states(loaded, msm, initial)
    if other:
        raise ValueError(f"{initial.source}: the states file gives each muscle the state OpenSim "
                         f"integrates for its type, {dict(other)}, not the state of the tendon "
                         f"model '{msm.muscles.tendon.value}'; start it with --tendon opensim "
                         "(or rigid), or with --solve-for-equilibrium")


def _other_tendon_states(loaded, msm, initial: InitialStates) -> list[tuple[str, str]]:
    """(muscle, the state the file holds) of the muscles whose file state is not the one msm
    integrates."""
    return [(m, k.value) for m, k in zip(loaded.muscle_names, initial.tendon_models)
            if k is not msm.muscles.tendon]
