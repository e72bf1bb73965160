"""Forward simulation of a loaded .osim model driven by its muscles (`myotwin osim forward`).

What OpenSim's forward simulation of a model with muscles does (the Manager with a
PrescribedController, as in `shared/reference/opensim/arm26_reference.json`'s notes), with
myotwin's engine and muscles:

* Initial state: the coordinates at their default values (or values given by name), speeds 0,
  every activation equal to its excitation at t = 0, every compliant tendon in equilibrium
  (`musculoskeletal.equilibrium_state`; OpenSim's `equilibrateMuscles`).
* Excitations: one constant for all muscles, constants by muscle name, or the columns of an
  OpenSim controls file (.sto; `storage.py`) named after the muscles, interpolated linearly in
  time and held at the end values outside the file's time range (OpenSim's ControlLinear
  without steps interpolates linearly too). CoordinateActuators take their column of the
  controls file (0 without one) and apply control x optimal_force, unclamped, as OpenSim does.
  *Choice:* the excitation and control of a step are their values at the step's midpoint, held
  over the step (a fixed-step integrator needs one value per step; the midpoint makes the
  piecewise-constant input second-order accurate in dt).
* Coupling: as the `MusculoskeletalModel` passed in says; the command's default is OpenSim's
  ("opensim": forces through the point-force moment arms, `musculoskeletal/model.py`), which
  reproduces OpenSim's simulations (arm26: 3e-6 rad at 0.1 s; docs/osim.md).
* Integration: fixed-step RK4 (or semi-implicit Euler) of `musculoskeletal.rollout` in chunks
  of `CHUNK_STEPS` steps, one compiled function for all chunks (OpenSim integrates with
  error-controlled Runge-Kutta-Merson; a fixed step of 0.1 ms resolves arm26's stiff tendons).
* Output, written as it is produced (a crash or a divergence loses no finished chunk):
  `states.sto` with OpenSim 4's state names (`/jointset/<joint>/<coordinate>/value` and
  `/speed`, `/forceset/<muscle>/activation` and `/fiber_length`; SI, inDegrees=no), which
  OpenSim reads back as a states table; `muscle_forces.sto`, the tendon force of each muscle
  (N; columns named after the muscles, as OpenSim's ForceReporter names them); and
  `summary.json` at the end. A state that stops being finite, or a written row whose fiber
  length or tendon force is not (a slack compliant tendon has no fiber state), ends the run
  with the rows before it written and `FloatingPointError` naming the step and time
  (`diverged` in the summary).
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

from myotwin.engine.integrators import Integrator
from myotwin.musculoskeletal.energy import muscle_outputs_at
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.musculoskeletal.simulate import first_nonfinite_step, rollout
from myotwin.musculoskeletal.state import MusculoskeletalState, equilibrium_state
from myotwin.osim.loader import OsimModel
from myotwin.osim.storage import Storage, StorageWriter

#: Steps per compiled chunk: the unit of writing (0.05 s of output at dt = 0.1 ms).
CHUNK_STEPS = 500
INTEGRATORS = ("rk4", "semi_implicit_euler")


def state_labels(loaded: OsimModel) -> tuple[str, ...]:
    """The column labels of `states.sto`: time, then OpenSim 4's state names."""
    labels = ["time"]
    for c in loaded.coordinates:
        joint = loaded.coordinate_joints[c]
        labels += [f"/jointset/{joint}/{c}/value", f"/jointset/{joint}/{c}/speed"]
    for m in loaded.muscle_names:
        labels += [f"/forceset/{m}/activation", f"/forceset/{m}/fiber_length"]
    return tuple(labels)


def initial_q(loaded: OsimModel, given: Mapping[str, float] | None = None) -> np.ndarray:
    """The coordinates' default values in q order, with `given` (name -> rad or m) replacing
    some; ValueError naming an unknown coordinate or a non-finite value."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(loaded.coordinates))
    if unknown:
        raise ValueError(f"{loaded.source}: no coordinate named {unknown[0]!r}; the "
                         f"coordinates are {list(loaded.coordinates)}")
    q = []
    for name in loaded.coordinates:
        value = float(given.get(name, loaded.coordinate_default_values[name]))
        if not math.isfinite(value):
            raise ValueError(f"{loaded.source}: initial value of {name!r} must be finite, got "
                             f"{value!r}")
        q.append(value)
    return np.asarray(q, dtype=np.float64)


class Inputs:
    """The excitations (n_muscles) and actuator controls (n_u) as functions of time (module
    docstring). excitation: None, a number for every muscle, or name -> number; controls: a
    read `Storage` or None. A muscle needs a value from one of them; ValueError naming the
    muscle, file, column or value otherwise."""

    def __init__(self, loaded: OsimModel, excitation=None, controls: Storage | None = None):
        self.muscles = loaded.muscle_names
        self.actuators = loaded.actuator_names
        constant = {}
        if isinstance(excitation, Mapping):
            unknown = sorted(set(excitation) - set(self.muscles))
            if unknown:
                raise ValueError(f"{loaded.source}: no muscle named {unknown[0]!r}; the "
                                 f"muscles are {list(self.muscles)}")
            constant = {k: float(v) for k, v in excitation.items()}
        elif excitation is not None:
            constant = {m: float(excitation) for m in self.muscles}
        self._time = None if controls is None else controls.time_s
        columns = [] if controls is None else controls.labels
        self._muscle_source = []
        for m in self.muscles:
            if m in constant:
                _check_excitation(f"excitation of {m}", constant[m])
                self._muscle_source.append(constant[m])
            elif m in columns:
                values = controls.column(m)
                bad = np.flatnonzero(~((values >= 0.0) & (values <= 1.0)))
                if bad.size:
                    raise ValueError(f"{controls.name}: column {m!r}, row {bad[0] + 1} (t = "
                                     f"{controls.time_s[bad[0]]!r} s): excitation "
                                     f"{values[bad[0]]!r} is outside [0, 1]")
                self._muscle_source.append(values)
            else:
                where = f" or a column of {controls.name}" if controls is not None else ""
                raise ValueError(f"{loaded.source}: muscle {m!r} has no excitation: give "
                                 f"--excitation (a value, or {m}=value){where}")
        self._actuator_source = [controls.column(a) if a in columns else 0.0
                                 for a in self.actuators]

    def _at(self, sources, t: np.ndarray) -> np.ndarray:
        out = np.zeros((t.size, len(sources)))
        for k, src in enumerate(sources):
            out[:, k] = (np.interp(t, self._time, src) if isinstance(src, np.ndarray)
                         else src)
        return out

    def excitation(self, t) -> np.ndarray:
        """(len(t), n_muscles) excitations at times t (s)."""
        return self._at(self._muscle_source, np.atleast_1d(np.asarray(t, dtype=np.float64)))

    def control(self, t) -> np.ndarray:
        """(len(t), n_u) CoordinateActuator controls at times t (s)."""
        return self._at(self._actuator_source, np.atleast_1d(np.asarray(t, dtype=np.float64)))


def _check_excitation(what: str, value: float) -> None:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{what} must be in [0, 1], got {value!r}")


def _positive(what: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
    return value


def forward(loaded: OsimModel, msm: MusculoskeletalModel, out_dir, *, inputs: Inputs,
            duration_s: float, dt_s: float = 1e-4, record_every_s: float | None = None,
            q0: Mapping[str, float] | None = None, integrator: str = "rk4",
            chunk_steps: int = CHUNK_STEPS) -> dict:
    """Simulate `msm` (built from `loaded`, e.g. `osim.build_muscles`) for `duration_s` and
    write states.sto, muscle_forces.sto and summary.json into `out_dir` (module docstring).
    record_every_s: interval of the written rows (default: every step), a whole number of
    steps. Returns the summary; raises FloatingPointError after writing if the state stops
    being finite."""
    if (loaded.coupling is None) != (msm.coordinates is None):
        raise ValueError(f"{loaded.source}: the musculoskeletal model's coordinates are not the "
                         "loaded model's: build it with musculoskeletal_model(loaded.model, "
                         "muscles, coordinates=loaded.coupling)")
    duration_s = _positive("duration_s", duration_s)
    dt_s = _positive("dt_s", dt_s)
    n = int(round(duration_s / dt_s))
    if n < 1 or abs(n * dt_s - duration_s) > 1e-9 * max(1.0, duration_s):
        raise ValueError(f"duration_s {duration_s!r} must be a whole number of steps of "
                         f"dt_s {dt_s!r}")
    stride = 1
    if record_every_s is not None:
        record_every_s = _positive("record_every_s", record_every_s)
        stride = int(round(record_every_s / dt_s))
        if stride < 1 or abs(stride * dt_s - record_every_s) > 1e-9 * record_every_s:
            raise ValueError(f"record_every_s {record_every_s!r} must be a whole number of "
                             f"steps of dt_s {dt_s!r}")
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {list(INTEGRATORS)}, got {integrator!r}")
    if tuple(msm.muscles.names) != tuple(loaded.muscle_names):
        raise ValueError("the musculoskeletal model's muscles are not the loaded model's, in "
                         "ForceSet order (build them with osim.build_muscles(loaded))")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    q = jnp.asarray(initial_q(loaded, q0))
    state = equilibrium_state(msm, q, jnp.zeros_like(q), jnp.asarray(inputs.excitation(0.0)[0]))
    chunk = min(int(chunk_steps), n)
    outputs = _outputs_fn(msm)
    summary = {"model": loaded.source, "omitted": list(loaded.omitted),
               "tendon": msm.muscles.tendon.value, "coupling": msm.coupling,
               "integrator": integrator, "dt_s": dt_s,
               "duration_s": duration_s, "n_steps": n, "record_every_s": stride * dt_s,
               "files": ["states.sto", "muscle_forces.sto", "summary.json"]}
    done, bad_step = 0, -1
    with StorageWriter(out / "states.sto", "states", state_labels(loaded),
                       f"myotwin osim forward: {loaded.source}") as states_file, \
            StorageWriter(out / "muscle_forces.sto", "muscle_forces",
                          ("time", *loaded.muscle_names),
                          "tendon force of each muscle (N)") as forces_file:
        first = _stack([state])
        _write(states_file, forces_file, first, [np.asarray(x) for x in outputs(msm, first)],
               np.array([0]), dt_s)
        while done < n and bad_step < 0:
            t_mid = (done + np.arange(chunk) + 0.5) * dt_s
            states = rollout(msm, state, jnp.asarray(inputs.excitation(t_mid)), dt_s, chunk,
                             Integrator(integrator), jnp.asarray(inputs.control(t_mid)))
            steps = done + np.arange(1, chunk + 1)
            keep = steps <= n
            bad_row = first_nonfinite_step(states)   # row 0 is the chunk's finite start
            if bad_row > 0 and steps[bad_row - 1] <= n:
                bad_step = int(steps[bad_row - 1])
                keep &= steps < bad_step
            rows = np.flatnonzero(keep & ((steps % stride == 0) | (steps == n)))
            if rows.size:
                picked = jax.tree_util.tree_map(lambda x: x[rows + 1], states)
                derived = [np.asarray(x) for x in outputs(msm, picked)]
                ok = np.all(np.isfinite(np.concatenate(derived, axis=1)), axis=1)
                if not np.all(ok):   # e.g. a slack tendon: no fiber length, no force
                    first = int(np.argmin(ok))
                    bad_step = int(steps[rows[first]])
                    keep &= steps < bad_step
                    rows, derived = rows[:first], [x[:first] for x in derived]
                    picked = jax.tree_util.tree_map(lambda x: x[:first], picked)
                _write(states_file, forces_file, picked, derived, steps[rows], dt_s)
            last = int(np.flatnonzero(keep)[-1]) + 1 if np.any(keep) else 0
            state = jax.tree_util.tree_map(lambda x: x[last], states)
            done = int(steps[last - 1]) if last else done
        rows_written = states_file.rows
    summary.update({
        "steps_done": done, "final_time_s": done * dt_s, "rows_written": rows_written,
        "diverged": bad_step >= 0,
        "message": (f"the state or a muscle's fiber length or force is not finite by step "
                    f"{bad_step} (t = {bad_step * dt_s:.6g} s); the rows before it are written"
                    if bad_step >= 0 else "completed"),
        "final_q": dict(zip(loaded.coordinates, np.asarray(state.q).tolist())),
        "final_qd": dict(zip(loaded.coordinates, np.asarray(state.qd).tolist())),
        "final_activation": dict(zip(loaded.muscle_names,
                                     np.asarray(state.activation).tolist())),
        "wall_time_s": time.perf_counter() - started,
    })
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if bad_step >= 0:
        raise FloatingPointError(f"simulation diverged: {summary['message']} in "
                                 f"{out / 'states.sto'}")
    return summary


def _outputs_fn(msm: MusculoskeletalModel):
    def one(m, s):
        o = muscle_outputs_at(m, s)
        return o.fiber_length_m, o.tendon_force_N

    return jax.jit(jax.vmap(one, in_axes=(None, 0)))


def _stack(states) -> MusculoskeletalState:
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


def _write(states_file, forces_file, states, derived, steps, dt_s) -> None:
    fiber, force = derived
    t = np.round(np.asarray(steps, dtype=np.float64) * dt_s, 12)
    q, qd, a = (np.asarray(x) for x in (states.q, states.qd, states.activation))
    n_rows, n_c = q.shape
    coords = np.stack([q, qd], axis=2).reshape(n_rows, 2 * n_c)
    muscles = np.stack([a, fiber], axis=2).reshape(n_rows, -1)
    states_file.write_rows(np.concatenate([t[:, None], coords, muscles], axis=1))
    forces_file.write_rows(np.concatenate([t[:, None], force], axis=1))
