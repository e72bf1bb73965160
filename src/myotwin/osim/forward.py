"""Forward simulation of a loaded .osim model driven by its muscles (`myotwin osim forward`).

A model without muscles (double_pendulum.osim) runs too, as OpenSim's forward tool runs it:
its `MusculoskeletalModel` holds the group of no muscles (`osim.build_muscles`), so gravity
and the CoordinateActuators move the skeleton; the files keep their columns but the muscles'.

What OpenSim's forward simulation of a model with muscles does (the Manager with a
PrescribedController, as in `shared/reference/opensim/arm26_reference.json`'s notes), with
myotwin's engine and muscles:

* Initial state: the coordinates at their default values (or values given by name), speeds 0,
  every activation equal to its excitation at the start time (0 by default), every compliant
  tendon in equilibrium (`musculoskeletal.equilibrium_state`; OpenSim's
  `equilibrateMuscles`). Or, as OpenSim's ForwardTool with a states file, a row of a states
  file (`forward_start.read_initial_states`: the last row at or before the start time, the
  run starting at its time), its coordinates, speeds and muscle states taken as written.
* Excitations: one constant for all muscles, constants by muscle name, or the controls of
  an OpenSim controls file, read as OpenSim's ForwardTool reads it (`osim.controls`): a .sto
  whose columns are linear controls continued linearly past its rows, or a ControlSet .xml
  (CMC's: step functions for the muscles); plus the functions of time of the model's
  PrescribedControllers (and of a ForwardTool setup's), added to the file's controls as
  OpenSim adds every controller's (`osim.controllers`; a given constant replaces both for its
  muscle). A muscle's excitation must stay in [0, 1] over the run, continuation included.
  CoordinateActuators take their control from the file and the controllers (0 without
  either) and apply control x optimal_force, unclamped, as OpenSim does.
  *Choice (fixed steps):* the excitation and control of a step are their values at the step's
  midpoint, held over the step (a fixed-step integrator needs one value per step; the
  midpoint makes the piecewise-constant input second-order accurate in dt).
* Force set files (`osim.load(..., force_set_files=)`, OpenSim's ForwardTool
  `force_set_files`, e.g. CMC's reserve actuators): their actuators are the model's; the
  summary names the files.
* External loads (`external_loads`, an ExternalLoads file, OpenSim's ForwardTool
  `external_loads_file`): its forces act during the run (`forward_loads`, `musculoskeletal.
  body_loads`), read at every stage's time by rk45, at each step's midpoint by a fixed step.
* Coupling: as the `MusculoskeletalModel` passed in says; the command's default is OpenSim's
  ("opensim": forces through the point-force moment arms, `musculoskeletal/model.py`), which
  reproduces OpenSim's simulations (arm26: 3e-6 rad at 0.1 s; docs/osim.md).
* Integration: by default as OpenSim's Manager (error-controlled Runge-Kutta-Merson),
  error-controlled: integrator "rk45", Dormand-Prince 5(4) with SciPy's
  controller (`musculoskeletal.adaptive`, `engine.adaptive`) at rtol = atol = `accuracy`, its
  own steps, landing on every written row's time and every node of the controls, the inputs
  evaluated at each stage's time (`Inputs.table`, no midpoint rule); or fixed-step RK4 (or
  semi-implicit Euler) of `musculoskeletal.rollout` in chunks of `CHUNK_STEPS` steps, one
  compiled function for all chunks (0.1 ms resolves arm26's stiff tendons). A fixed step loses its
  order where the right-hand side is not smooth (a step in the controls, a path point
  switching); the controlled step does not. On gait10dof18musc RK4 at 0.1 ms is 1.2e-9 rad
  from OpenSim at 0.05 s, rk45 at accuracy 1e-8 3.9e-9 rad at 0.1 s (docs/osim.md).
  The integrator's failure (max_steps attempts in a chunk of rows, a step underflow) stops
  the run like a divergence.
* Output, written as it is produced (a crash or a divergence loses no finished chunk):
  `states.sto` with OpenSim 4's state names (`/jointset/<joint>/<coordinate>/value` and
  `/speed`, coordinates eliminated by a CoordinateCouplerConstraint included, computed from
  their independent ones, and locked coordinates at their value, speed 0;
  `/forceset/<muscle>/activation` and `/fiber_length`, or `/normalized_tendon_force` (tendon
  force / F_iso) for a DeGrooteFregly2016Muscle, whose state OpenSim names so; SI,
  inDegrees=no), which OpenSim reads back as a states table (and `osim muscle-analysis
  --states`); `muscle_forces.sto`, the tendon force of each muscle (N;
  columns named after the muscles, as OpenSim's ForceReporter names them); `controls.sto`,
  each actuator's control at the row's time (ForceSet order: a muscle's excitation, a
  CoordinateActuator's control; OpenSim's ForwardTool's `<tool>_controls.sto`; a fixed step
  holds its midpoint's value over the step, the file gives the inputs at the row); and
  `summary.json` at the end. An input file (controls, initial states, external loads) that one
  of these would overwrite is refused before anything is written. A state that stops being
  finite, or a written row whose fiber length or tendon force is not (a slack compliant tendon
  has no fiber state), ends the run with the rows before it written and `FloatingPointError`
  naming the time (`diverged` in the summary). rk45's summary adds `steps_rejected`, `accuracy`
  and `integrator_status`; its `steps_done` counts accepted steps.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.adaptive import AdaptiveStatus
from myotwin.engine.integrators import Integrator
from myotwin.engine.simulate import DIVERGED_ABOVE, positive_seconds, whole_steps
from myotwin.engine.piecewise import evaluate_padded, pad_polynomials
from myotwin.scalars import as_real, is_integer, require_flag
from myotwin.muscle.model import TendonModel
from myotwin.musculoskeletal.adaptive import InputTable, adaptive_rollout, input_table
from myotwin.musculoskeletal.energy import muscle_outputs_at
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.musculoskeletal.simulate import first_diverged_step, rollout
from myotwin.musculoskeletal.state import MusculoskeletalState
from myotwin.osim.forward_start import (InitialStates, check_tendon_states, initial_q,
                                        initial_qd, start_state, start_time)
from myotwin.osim.controllers import (PrescribedControl, function_knots,
                                      prescribed_inputs)
from myotwin.osim.controls import (Control, Controls, controls_from_storage,
                                   extrapolated_range)
from myotwin.osim.external_loads import ExternalLoads
from myotwin.osim.forward_loads import forward_loads
from myotwin.osim.inverse_dynamics import check_accuracy
from myotwin.osim.loader import OsimModel
from myotwin.osim.muscles import OPENSIM_STATE
from myotwin.osim.row_blocks import map_row_blocks
from myotwin.osim.storage import Storage, StorageWriter

#: Steps per compiled chunk: the unit of writing (0.05 s of output at dt = 0.1 ms).
CHUNK_STEPS = 500
INTEGRATORS = ("rk4", "semi_implicit_euler", "rk45")
#: Relative and absolute (SI) tolerance of "rk45" by default.
DEFAULT_ACCURACY = 1e-7


def eliminated_coordinates(loaded: OsimModel) -> tuple[str, ...]:
    """The coordinates that are not in q: those a CoordinateCouplerConstraint eliminated
    (`OsimModel.coupled_coordinates` order), then the locked ones (`locked_coordinates`)."""
    return (*loaded.coupled_coordinates, *loaded.locked_coordinates)


def state_labels(loaded: OsimModel, coordinates=None) -> tuple[str, ...]:
    """The column labels of `states.sto`: time, then OpenSim 4's state names (the
    `coordinates`' values and speeds, by default the coordinates then the eliminated ones,
    `eliminated_coordinates`; then each muscle's activation and state)."""
    labels = ["time"]
    joints = {**loaded.coordinate_joints,
              **{d: c.joint for d, c in loaded.coupled_coordinates.items()},
              **{n: c.joint for n, c in loaded.locked_coordinates.items()}}
    if coordinates is None:
        coordinates = (*loaded.coordinates, *eliminated_coordinates(loaded))
    for c in coordinates:
        labels += [f"/jointset/{joints[c]}/{c}/value", f"/jointset/{joints[c]}/{c}/speed"]
    for m in loaded.muscle_names:
        labels += [f"/forceset/{m}/activation",
                   f"/forceset/{m}/{OPENSIM_STATE[loaded.muscles[m]['type']]}"]
    return tuple(labels)


def dependent_coordinates(loaded: OsimModel, q, qd) -> tuple[np.ndarray, np.ndarray]:
    """(values, speeds) (n_rows, n_eliminated) of the coordinates not in q
    (`eliminated_coordinates` order) at the rows of coordinates q and speeds qd (n_rows,
    n_coordinates): for a coupler's dependent coordinate g(q_i) and g'(q_i) qd_i, for a
    locked one its value and 0."""
    q, qd = np.atleast_2d(q), np.atleast_2d(qd)
    coupled = list(loaded.coupled_coordinates.values())
    locked = np.array([c.value for c in loaded.locked_coordinates.values()], dtype=np.float64)
    value = np.broadcast_to(locked, (q.shape[0], locked.size))
    speed = np.zeros_like(value)
    if not coupled:
        return value, speed
    index = np.array([loaded.coordinates.index(c.independent) for c in coupled])
    tables = [jnp.asarray(t) for t in pad_polynomials([c.function for c in coupled])]
    g, slope, _ = jax.vmap(lambda x: evaluate_padded(*tables, x))(jnp.asarray(q[:, index]))
    return (np.concatenate([np.asarray(g), value], axis=1),
            np.concatenate([np.asarray(slope) * qd[:, index], speed], axis=1))


class Inputs:
    """The excitations (n_muscles) and actuator controls (n_u) as functions of time (module
    docstring). excitation: None, a number for every muscle, or name -> number; controls: the
    controls file as `osim.controls.read_controls` reads it (a .sto or a ControlSet .xml), a
    read `Storage` (its columns become OpenSim's linear controls), or None; `source` names a
    Storage's file in messages (default: the table's name); controllers: PrescribedControls
    of other controllers (a ForwardTool setup's, `osim.controllers.read_controller`), run
    with the model's own (`loaded.prescribed_controls`). A muscle's or actuator's input is the
    sum of its control in the file and its controllers' functions, as OpenSim adds every
    controller's controls; a given excitation replaces both for that muscle (listed in
    `overridden`). A muscle needs a value from one of them, or takes `undriven` (OpenSim's
    tools give a muscle no controller drives control 0); ValueError naming the muscle, file,
    control or value otherwise. Controls that drive no muscle or CoordinateActuator of
    the model are ignored and listed in `ignored_columns` (OpenSim 4.6's ControlSetController
    refuses them). CMC's controls hold its reserve actuators', which come from a ForceSet
    file: load the model with it (`osim.load(..., force_set_files=)`, the ForwardTool's
    force_set_files) to drive them."""

    def __init__(self, loaded: OsimModel, excitation=None,
                 controls: Controls | Storage | None = None, source: str | None = None,
                 controllers: tuple[PrescribedControl, ...] = (),
                 undriven: float | None = None):
        if isinstance(controls, Storage):
            controls = controls_from_storage(controls, source)
        elif controls is not None and not isinstance(controls, Controls):
            raise TypeError(f"{loaded.source}: controls must be read by osim.controls."
                            f"read_controls (or be a Storage) or None, got "
                            f"{type(controls).__name__}")
        if not all(isinstance(c, PrescribedControl) for c in controllers):
            raise TypeError(f"{loaded.source}: controllers must be PrescribedControls (osim."
                            "controllers.read_controller)")
        self.muscles = loaded.muscle_names
        self.actuators = loaded.actuator_names
        names = () if controls is None else controls.names
        self.ignored_columns = [c.written for c in (
            () if controls is None else controls.controls)
            if c.name not in self.muscles and c.name not in self.actuators]
        self.controls_file = None if controls is None else controls.source
        self.controls_path = None if controls is None else controls.path
        constant = {}
        if isinstance(excitation, Mapping):
            unknown = sorted(set(excitation) - set(self.muscles))
            if unknown:
                raise ValueError(f"{loaded.source}: no muscle named {unknown[0]!r}; the "
                                 f"muscles are {list(self.muscles)}")
            constant = dict(excitation)
        elif excitation is not None:
            if not self.muscles:
                replaced = " (force set files replaced its forces)" * loaded.force_set_replaced
                raise ValueError(f"{loaded.source}: an excitation is given, but the model has "
                                 f"no muscles{replaced}")
            constant = {m: excitation for m in self.muscles}
        prescribed = (*loaded.prescribed_controls, *controllers)
        self.overridden = sorted({c.actuator for c in prescribed if c.actuator in constant})
        self.prescribed = tuple(c for c in prescribed if c.actuator not in constant)
        self.controllers = list(dict.fromkeys(c.controller for c in self.prescribed))
        driven = {c.actuator for c in self.prescribed}
        self._muscle_source = []
        for m in self.muscles:
            if m in constant:
                self._muscle_source.append(_check_excitation(f"excitation of {m}", constant[m]))
            elif m in names:
                control = controls[m]
                bad = np.flatnonzero(~((control.values >= 0.0) & (control.values <= 1.0)))
                if bad.size:
                    raise ValueError(f"{controls.source}: {control.label}, {control.point} "
                                     f"{bad[0] + 1} (t = {float(control.times_s[bad[0]])!r} "
                                     f"s): excitation {float(control.values[bad[0]])!r} is "
                                     "outside [0, 1]")
                self._muscle_source.append(control)
            elif m in driven:
                self._muscle_source.append(0.0)
            elif undriven is not None:
                self._muscle_source.append(_check_excitation(f"excitation of {m}", undriven))
            else:
                where = f" or a control in {controls.source}" if controls is not None else ""
                raise ValueError(f"{loaded.source}: muscle {m!r} has no excitation: give "
                                 f"--excitation (a value, or {m}=value){where}")
        self._actuator_source = [controls[a] if a in names else 0.0 for a in self.actuators]
        self.functions = prescribed_inputs(self.prescribed, self.muscles, self.actuators)

    def check_span(self, first_s: float, last_s: float) -> None:
        """ValueError if a muscle's excitation leaves [0, 1] within the run [first_s, last_s]:
        OpenSim would run on with that excitation (its Thelen activations pass 1, seen), a
        muscle we do not simulate. A control of the file is checked exactly, continued past
        its nodes as OpenSim continues it (a linear control extrapolates); a sum with
        controllers' functions at their knots and 10 001 times spread over the run (the file's
        control alone must stay in [0, 1] too)."""
        driven = {c.actuator for c in self.prescribed}
        for m, src in zip(self.muscles, self._muscle_source):
            if not isinstance(src, Control):
                continue
            low, high = extrapolated_range(src, first_s, last_s)
            if low < 0.0 or high > 1.0:
                value = low if low < 0.0 else high
                t = src.knots(first_s, last_s)
                at = float(t[np.argmin(np.abs(src.at(t) - value))])
                raise ValueError(
                    f"{self.controls_file}: {src.label}, extrapolated linearly past its "
                    f"{src.point}s (t = {float(src.times_s[0])!r} .. "
                    f"{float(src.times_s[-1])!r} s) as OpenSim's ControlSetController does, "
                    f"is {value!r} at t = {at!r} s of the run, outside [0, 1]: end the run "
                    "sooner or add a node there")
        if not driven & set(self.muscles):
            return
        t = np.unique(np.concatenate([np.linspace(first_s, last_s, 10_001),
                                      self._knots(first_s, last_s)]))
        values = self.excitation(t)
        for k, m in enumerate(self.muscles):
            bad = np.flatnonzero(~((values[:, k] >= 0.0) & (values[:, k] <= 1.0)))
            if m in driven and bad.size:
                parts = [c.description for c in self.prescribed if c.actuator == m]
                if isinstance(self._muscle_source[k], Control):
                    parts.append(f"{self._muscle_source[k].label} of {self.controls_file}")
                raise ValueError(f"the excitation of muscle {m!r} ({' + '.join(parts)}) is "
                                 f"{float(values[bad[0], k])!r} at t = {float(t[bad[0]])!r} s "
                                 "of the run, outside [0, 1]")

    def _knots(self, first_s: float, last_s: float) -> np.ndarray:
        """Every input's knots in [first_s, last_s] (the ends included)."""
        knots = [src.knots(first_s, last_s) for src in (*self._muscle_source,
                                                        *self._actuator_source)
                 if isinstance(src, Control)]
        knots += [function_knots(c.function) for c in self.prescribed]
        t = np.concatenate([[first_s], *knots]) if knots else np.array([first_s])
        return t[(t >= first_s) & (t <= last_s)]

    @staticmethod
    def _base(sources, t: np.ndarray) -> np.ndarray:
        """(len(t), len(sources)): the controls file's controls and the constants."""
        out = np.zeros((t.size, len(sources)))
        for k, src in enumerate(sources):
            out[:, k] = src.at(t) if isinstance(src, Control) else src
        return out

    def _with_functions(self, base: np.ndarray, t: np.ndarray, names) -> np.ndarray:
        """`base` plus the controllers' functions of the actuators `names` (its columns)."""
        for c in self.prescribed:
            if c.actuator in names:
                base[:, names.index(c.actuator)] += c.at(t)
        return base

    def table(self, first_s: float, last_s: float) -> InputTable:
        """The inputs on [first_s, last_s] as a table for `musculoskeletal.adaptive`: the
        controls at their knots (`Control.knots`; one row when every input is constant), where
        the table's linear interpolation is the controls themselves, and the controllers'
        functions (`InputTable.functions`), their knots among the table's times."""
        times = np.unique(self._knots(first_s, last_s))
        return input_table(times, self._base(self._muscle_source, times),
                           self._base(self._actuator_source, times)
                           )._replace(functions=self.functions)

    def excitation(self, t) -> np.ndarray:
        """(len(t), n_muscles) excitations at times t (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        return self._with_functions(self._base(self._muscle_source, t), t, self.muscles)

    def control(self, t) -> np.ndarray:
        """(len(t), n_u) CoordinateActuator controls at times t (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        return self._with_functions(self._base(self._actuator_source, t), t, self.actuators)


def _check_excitation(what: str, value) -> float:
    """value as a float, or ValueError naming `what` unless it is one number in [0, 1] (not a
    bool, a string or a list: `as_real`)."""
    number = as_real(value)
    if number is None or not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ValueError(f"{what} must be in [0, 1], got {value!r}")
    return number


def forward(loaded: OsimModel, msm: MusculoskeletalModel, out_dir, *, inputs: Inputs,
            duration_s: float, dt_s: float = 1e-4, record_every_s: float | None = None,
            q0: Mapping[str, float] | None = None, integrator: str = "rk45",
            chunk_steps: int = CHUNK_STEPS, accuracy: float = DEFAULT_ACCURACY,
            max_steps: int = 1_000_000, initial: InitialStates | None = None,
            start_s: float | None = None, solve_for_equilibrium: bool = False,
            external_loads: ExternalLoads | None = None,
            qd0: Mapping[str, float] | None = None) -> dict:
    """Simulate `msm` (built from `loaded`, e.g. `osim.build_muscles`) for `duration_s` and
    write states.sto, muscle_forces.sto and summary.json into `out_dir` (module docstring).
    record_every_s: interval of the written rows (default: every dt_s), a whole number of
    steps of dt_s. integrator "rk45": error-controlled at `accuracy` (its own steps; dt_s
    then only sets the default row interval), at most `max_steps` attempted steps for each
    chunk of `chunk_steps` rows. initial: the state to start from (`read_initial_states`; q0
    and qd0, name -> rad or m and rad/s or m/s, then replace some of its coordinates and
    speeds), at its time; otherwise the default pose and speeds (`forward_start.
    default_speeds`; q0 and qd0 replacing some) at start_s (default 0), with activations equal
    to the excitations there. Compliant tendons start in equilibrium unless `initial` gives
    their state, which must then be the one msm integrates (or msm's tendons rigid);
    solve_for_equilibrium True (OpenSim's ForwardTool property of that name) puts them in
    equilibrium at `initial`'s coordinates, speeds and activations instead: OpenSim's
    equilibrium of each muscle type (`muscle_equilibrium.equilibrium_states`, at the path's
    lengthening speed) when msm integrates the states OpenSim does, else
    `equilibrium_state`'s (zero tendon velocity).
    external_loads: an ExternalLoads file (`osim.external_loads.read_external_loads`) whose
    forces act during the run (`forward_loads`), or None. Returns the summary; raises
    FloatingPointError after writing if the state stops being finite."""
    if (loaded.coupling is None) != (msm.coordinates is None):
        raise ValueError(f"{loaded.source}: the musculoskeletal model's coordinates are not the "
                         "loaded model's: build it with musculoskeletal_model(loaded.model, "
                         "muscles, coordinates=loaded.coupling)")
    duration_s = positive_seconds("duration_s", duration_s)
    dt_s = positive_seconds("dt_s", dt_s)
    n = whole_steps("duration_s", duration_s, dt_s)
    stride = 1 if record_every_s is None else whole_steps(
        "record_every_s", positive_seconds("record_every_s", record_every_s), dt_s)
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {list(INTEGRATORS)}, got {integrator!r}")
    accuracy = check_accuracy(accuracy, "accuracy")
    if not is_integer(max_steps) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    if not is_integer(chunk_steps) or chunk_steps < 1:
        raise ValueError(f"chunk_steps must be a positive integer, got {chunk_steps!r}")
    if tuple(msm.muscles.names) != tuple(loaded.muscle_names):
        raise ValueError("the musculoskeletal model's muscles are not the loaded model's, in "
                         "ForceSet order (build them with osim.build_muscles(loaded))")
    if initial is not None and not isinstance(initial, InitialStates):
        raise TypeError(f"initial must be an InitialStates (read_initial_states) or None, got "
                        f"{type(initial).__name__}")
    if initial is not None and start_s is not None:
        raise ValueError(f"start_s {start_s!r} with initial states: the run starts at their "
                         f"time, {initial.time_s!r} s (read_initial_states picks the row)")
    t0 = initial.time_s if initial is not None else start_time(0.0 if start_s is None
                                                                else start_s)
    require_flag("forward", "solve_for_equilibrium", solve_for_equilibrium)
    if solve_for_equilibrium and initial is None:
        raise ValueError("solve_for_equilibrium applies to initial states from a file (a run "
                         "from the default pose starts in equilibrium)")
    if initial is not None and not solve_for_equilibrium:
        check_tendon_states(loaded, msm, initial)
    if not isinstance(inputs, Inputs):
        raise TypeError(f"inputs must be an osim.forward.Inputs, got {type(inputs).__name__}")
    t_end = t0 + float(_times([n], dt_s)[0])
    inputs.check_span(t0, t_end)
    if external_loads is not None and not isinstance(external_loads, ExternalLoads):
        raise TypeError(f"external_loads must be read by osim.external_loads."
                        f"read_external_loads, got {type(external_loads).__name__}")
    loads = None if external_loads is None else forward_loads(loaded, external_loads)
    zeros = dict.fromkeys(loaded.coordinates, 0.0)   # bad names or values: before any file
    initial_q(loaded, q0, zeros), initial_qd(loaded, qd0, zeros)
    out = Path(out_dir)
    _refuse_writing_over_inputs(out, (inputs.controls_path,
                                      initial and Path(initial.source).is_file()
                                      and initial.source,
                                      external_loads and external_loads.path,
                                      external_loads and external_loads.datafile))
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    state, unsolved = start_state(loaded, msm, inputs.excitation(t0)[0], q0, initial,
                                  solve_for_equilibrium, qd0)
    summary = {"model": loaded.source, "omitted": list(loaded.omitted),
               "force_set_files": [Path(f).name for f in loaded.force_set_files],
               "force_set_replaced": loaded.force_set_replaced,
               "tendon": msm.muscles.tendon.value, "coupling": msm.coupling,
               "muscles_starting_at_min_fiber_length": _at_minimum(msm, state),
               "integrator": integrator, "dt_s": dt_s, "start_s": t0,
               "duration_s": duration_s, "n_steps": n, "record_every_s": stride * dt_s,
               "controls_file": inputs.controls_file,
               "controllers": inputs.controllers,
               "controls_overridden": inputs.overridden,
               "external_loads": None if external_loads is None else {
                   "file": external_loads.path.name,
                   "forces": [f.name for f in external_loads.forces if f.applies_force]},
               "controls_ignored_columns": list(inputs.ignored_columns),
               "files": list(OUTPUT_FILES)}
    if initial is not None:
        summary["initial_states"] = {"file": initial.source, "time_s": initial.time_s,
                                     "defaulted": list(initial.defaulted),
                                     "solve_for_equilibrium": solve_for_equilibrium,
                                     "equilibrium_not_found": unsolved}
    with StorageWriter(out / "states.sto", "states", state_labels(loaded),
                       f"myotwin osim forward: {loaded.source}") as states_file, \
            StorageWriter(out / "muscle_forces.sto", "muscle_forces",
                          ("time", *loaded.muscle_names),
                          "tendon force of each muscle (N)") as forces_file, \
            StorageWriter(out / "controls.sto", "controls", ("time", *loaded.force_names),
                          "each actuator's control: a muscle's excitation, a "
                          "CoordinateActuator's control (its force / optimal_force)"
                          ) as controls_file:
        def write(picked, times_s):
            """Write the rows of `picked` (states with a leading axis) at times_s; returns
            how many leading rows were written (those whose derived outputs are finite)."""
            # blocks of one shape: the writes have 1 row (the start), a chunk's rows, then
            # the last chunk's, and each size compiled `_outputs` again (arm26: 15 and 10 s)
            derived = map_row_blocks(lambda block: _outputs(msm, block), picked, _BLOCK_ROWS)
            ok = np.all(np.isfinite(np.concatenate(derived, axis=1)), axis=1)
            good = int(np.argmin(ok)) if not np.all(ok) else ok.size
            picked = jax.tree_util.tree_map(lambda x: x[:good], picked)
            _write(states_file, forces_file, picked, [x[:good] for x in derived],
                   times_s[:good], loaded)
            controls_file.write_rows(_controls(loaded, inputs, times_s[:good]))
            return good

        write(_stack([state]), np.array([t0]))
        run = _run_adaptive if integrator == "rk45" else _run_fixed
        progress = run(msm, state, inputs, write, t0=t0, n=n, dt_s=dt_s, stride=stride,
                       chunk=min(int(chunk_steps), n), integrator=integrator,
                       accuracy=accuracy, max_steps=int(max_steps), loads=loads)
        rows_written = states_file.rows
    state = progress.pop("state")
    failure = progress.pop("failure")
    q, qd = np.asarray(state.q), np.asarray(state.qd)
    value, speed = dependent_coordinates(loaded, q, qd)   # eliminated ones, named last
    names = (*loaded.coordinates, *eliminated_coordinates(loaded))
    summary.update(progress)
    summary.update({
        "rows_written": rows_written,
        "diverged": failure is not None,
        "message": failure or "completed",
        "final_q": dict(zip(names, np.append(q, value[0]).tolist())),
        "final_qd": dict(zip(names, np.append(qd, speed[0]).tolist())),
        "final_activation": dict(zip(loaded.muscle_names,
                                     np.asarray(state.activation).tolist())),
        "wall_time_s": time.perf_counter() - started,
    })
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if failure is not None:
        raise FloatingPointError(f"simulation diverged: {summary['message']} in "
                                 f"{out / 'states.sto'}")
    return summary


def _run_fixed(msm, state, inputs, write, *, t0, n, dt_s, stride, chunk, integrator,
               accuracy, max_steps, loads) -> dict:
    """The fixed-step loop from t0: chunks of `chunk` steps, each step's inputs (and the
    external loads' values) at its midpoint."""
    del accuracy, max_steps
    done, bad_step = 0, -1
    while done < n and bad_step < 0:
        t_mid = t0 + (done + np.arange(chunk) + 0.5) * dt_s
        states = rollout(msm, state, jnp.asarray(inputs.excitation(t_mid)), dt_s, chunk,
                         Integrator(integrator), jnp.asarray(inputs.control(t_mid)),
                         loads=loads, t0_s=t0 + done * dt_s)
        steps = done + np.arange(1, chunk + 1)
        keep = steps <= n
        bad_row = first_diverged_step(states)   # row 0 is the chunk's finite start
        if bad_row > 0 and steps[bad_row - 1] <= n:
            bad_step = int(steps[bad_row - 1])
            keep &= steps < bad_step
        rows = np.flatnonzero(keep & ((steps % stride == 0) | (steps == n)))
        if rows.size:
            picked = jax.tree_util.tree_map(lambda x: x[rows + 1], states)
            good = write(picked, _times(steps[rows], dt_s, t0))
            if good < rows.size:   # e.g. a slack tendon: no fiber length, no force
                bad_step = int(steps[rows[good]])
                keep &= steps < bad_step
        last = int(np.flatnonzero(keep)[-1]) + 1 if np.any(keep) else 0
        state = jax.tree_util.tree_map(lambda x: x[last], states)
        done = int(steps[last - 1]) if last else done
    return {"state": state, "steps_done": done, "final_time_s": float(_times(done, dt_s, t0)),
            "failure": _not_finite(float(_times(bad_step, dt_s, t0))) if bad_step >= 0
            else None}


def _not_finite(t_s: float) -> str:
    return (f"the state or a muscle's fiber length or force is not finite (or a state exceeds "
            f"{DIVERGED_ABOVE:g}) by t = {t_s:.6g} s; the rows before it are written")


def _run_adaptive(msm, state, inputs, write, *, t0, n, dt_s, stride, chunk, integrator,
                  accuracy, max_steps, loads) -> dict:
    """The error-controlled loop from t0: chunks of `chunk` output rows (every stride steps of
    dt_s), the controller's step carried from chunk to chunk; at most max_steps attempts a
    chunk."""
    del integrator
    table = inputs.table(t0, t0 + float(_times([n], dt_s)[0]))._replace(loads=loads)
    row_steps = np.unique(np.append(np.arange(stride, n + 1, stride), n))
    chunk = min(chunk, row_steps.size)
    h0, accepted, rejected = jnp.nan, 0, 0   # NaN: the integrator selects the first step
    t_now, failure, status = t0, None, AdaptiveStatus.OK
    for start in range(0, row_steps.size, chunk):
        t_out = _times(row_steps[start:start + chunk], dt_s, t0)
        used = t_out.size   # a short last chunk: padded (one compiled shape), not integrated
        padded = np.append(t_out, t_out[-1] + dt_s * np.arange(1, chunk - used + 1))
        result = adaptive_rollout(msm, state, t_now, jnp.asarray(padded), table,
                                  rtol=accuracy, atol=accuracy, h0_s=h0, n_used=used,
                                  max_steps=max_steps)
        accepted += int(result.n_accepted)
        rejected += int(result.n_rejected)
        done = int(result.n_done)
        good = write(jax.tree_util.tree_map(lambda x: x[:done], result.ys),
                     t_out[:done]) if done else 0
        if good < done:   # a written row's fiber length or force is not finite
            failure = _not_finite(float(t_out[good]))
            state = jax.tree_util.tree_map(lambda x: x[good - 1], result.ys) if good else state
            t_now = float(t_out[good - 1]) if good else t_now
            break
        state, t_now = result.y_last, float(result.t_s)
        status = AdaptiveStatus(int(result.status))
        if status is not AdaptiveStatus.OK:
            failure = (f"the error-controlled integrator stopped at t = {t_now:.6g} s: "
                       f"{_STATUS_TEXT[status]}; the rows before it are written")
            break
        h0 = result.h_next_s
    return {"state": state, "steps_done": accepted, "steps_rejected": rejected,
            "accuracy": accuracy, "integrator_status": status.name.lower(),
            "final_time_s": t_now, "failure": failure}


_STATUS_TEXT = {
    AdaptiveStatus.MAX_STEPS: "max_steps attempts in one chunk of rows (stiff, or an "
                              "accuracy too fine for the model)",
    AdaptiveStatus.STEP_UNDERFLOW: "the step fell below the smallest step at this time (a "
                                   "singularity, or a state blowing up)",
    AdaptiveStatus.NONFINITE: "the state is not finite",
}


def _fiber_length_and_force(m: MusculoskeletalModel, s: MusculoskeletalState):
    o = muscle_outputs_at(m, s)
    return o.fiber_length_m, o.tendon_force_N


# one jitted function for every call (a new jit per call recompiled the rows' outputs each time)
_outputs = jax.jit(jax.vmap(_fiber_length_and_force, in_axes=(None, 0)))
#: rows per call of `_outputs` (`row_blocks.map_row_blocks`: one compilation)
_BLOCK_ROWS = 32


def _at_minimum(m: MusculoskeletalModel, s: MusculoskeletalState) -> list[str]:
    """The muscles whose fiber (a fiber-length state) is at its minimum length in `s`."""
    if m.muscles.tendon not in (TendonModel.FIBER_LENGTH, TendonModel.DAMPED_FIBER_LENGTH):
        return []
    low = np.asarray(s.tendon_state) <= np.asarray(m.muscles.min_fiber_length_m)
    return [name for name, at in zip(m.muscles.names, low.tolist()) if at]


def _stack(states) -> MusculoskeletalState:
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


def _times(steps, dt_s, t0=0.0) -> np.ndarray:
    """The times (s) of whole steps of dt_s after t0, rounded to 1e-12 s (the rows' time
    column)."""
    return np.round(t0 + np.asarray(steps, dtype=np.float64) * dt_s, 12)


#: The files `forward` writes into its folder.
OUTPUT_FILES = ("states.sto", "muscle_forces.sto", "controls.sto", "summary.json")


def _refuse_writing_over_inputs(out: Path, inputs) -> None:
    """ValueError if one of the files `forward` writes into `out` is one of the run's input
    files `inputs` (paths or None): it would be overwritten while, or before, it is read."""
    for path in (p for p in inputs if p):
        for name in OUTPUT_FILES:
            if Path(path).resolve() == (out / name).resolve():
                raise ValueError(f"{path}: the run reads it and would write {name} over it "
                                 "in the same folder: write into another folder (--out)")


def _controls(loaded: OsimModel, inputs: Inputs, t) -> np.ndarray:
    """Rows (time, each of `loaded.force_names`' control) of controls.sto at times t."""
    controls = np.zeros((t.size, len(loaded.force_names)))
    for names, values in ((loaded.muscle_names, inputs.excitation(t)),
                          (loaded.actuator_names, inputs.control(t))):
        for k, name in enumerate(names):
            controls[:, loaded.force_names.index(name)] = values[:, k]
    return np.concatenate([t[:, None], controls], axis=1)


def _write(states_file, forces_file, states, derived, t, loaded) -> None:
    fiber, force = derived
    q, qd, a = (np.asarray(x) for x in (states.q, states.qd, states.activation))
    value, speed = dependent_coordinates(loaded, q, qd)
    q, qd = np.concatenate([q, value], axis=1), np.concatenate([qd, speed], axis=1)
    n_rows, n_c = q.shape
    coords = np.stack([q, qd], axis=2).reshape(n_rows, 2 * n_c)
    explicit = [k for k, m in enumerate(loaded.muscle_names)
                if OPENSIM_STATE[loaded.muscles[m]["type"]] == "normalized_tendon_force"]
    second = fiber.copy()
    if explicit:   # De Groote's state: the tendon force over F_iso
        f_iso = np.array([loaded.muscles[loaded.muscle_names[k]]["max_isometric_force_N"]
                          for k in explicit])
        second[:, explicit] = force[:, explicit] / f_iso
    muscles = np.stack([a, second], axis=2).reshape(n_rows, -1)
    states_file.write_rows(np.concatenate([t[:, None], coords, muscles], axis=1))
    forces_file.write_rows(np.concatenate([t[:, None], force], axis=1))
