"""Forward simulation of an MJCF model with MuJoCo muscles (`myotwin mjcf forward`), with
or without mass on the muscles.

What a MuJoCo user runs with mj_step, on the model `load_mjcf` makes of the file:

* Initial state: MuJoCo's reset state (qpos0, qvel 0, act 0, time 0), or a keyframe's
  (`keyframe`, a name or an index, as mj_resetDataKeyframe sets it: the key's qpos, qvel, act,
  ctrl and time; the run starts at the key's time, and its ctrl is the input of every
  actuator given no other); hinge and slide joints' values and speeds set by name where given
  (`q0`, `qd0`), every muscle activation set to `activation0` where given.
* Inputs: the excitation of each muscle (MuJoCo's ctrl of its actuator; one value for all, or
  by actuator name; in [0, 1], then clamped to the actuator's ctrlrange as MuJoCo does), and
  the ctrl of the model's other actuators by name (clamped to their ctrlrange by the engine
  where ctrllimited): constants, or the columns of a controls file (`controls`, a CSV table
  named by actuator, `controls_csv.py`: linear in time, each step taking the values at its
  start, as a MuJoCo loop setting d.ctrl before each mj_step). A constant given by name
  overrides the file's column; an actuator in neither gets 0 (MuJoCo's reset ctrl).
* Muscle mass (`muscle_mass_kg`: one value for every muscle or by name; seed Eq. 7): that mass
  in `mass_points` points spread uniformly along the muscle's tendon path
  (`musculoskeletal.with_muscle_masses`), which MuJoCo cannot simulate. 0 (default) is
  MuJoCo's massless muscle; masses given in the file (numeric `muscle_mass:<tendon>`,
  docs/inertia.md) are kept unless replaced here.
* Integration at `dt_s` (default: the file's timestep) with the file's integrator unless
  `integrator` names another: MuJoCo's Euler ("euler": dof damping implicit, its `eulerdamp`
  default; "semi_implicit_euler" where the file disables eulerdamp) or RK4 ("rk4"); the states
  agree with mj_step to roundoff (tests/musculoskeletal/test_mjcf_forward.py). A file asking
  for MuJoCo's implicit, implicitfast or discrete integrator needs `integrator` given (they
  are not offered: ValueError). Run in chunks of `chunk_steps` steps of one compiled
  `musculoskeletal.rollout`.
* Output, written as it is produced (a crash or a divergence loses no finished chunk), every
  `record_every_s` (a whole number of steps; default every step): `states.csv` (time_s, then
  `q:<joint>` and `qd:<joint>` per joint dof in MuJoCo's qpos / qvel order, with `[k]` for the
  components of ball and free joints, then `activation:<muscle>`), `muscle_forces.csv` (time_s
  and each muscle's tendon force in N, > 0 when it pulls: MuJoCo's -actuator_force), and
  `summary.json` at the end. A state that stops being finite ends the run with the rows before
  it written and a FloatingPointError naming the time (`diverged` in the summary).

A model without MuJoCo muscles runs as its skeleton alone, moved by its other actuators (the
group of no muscles, `load_mjcf`): muscle_forces.csv then has its time column only, and a
muscle input given (excitation, initial activation, muscle mass) is refused by name.

Bad input is a ValueError naming the file, field and value, before anything is written; so is
a model with elements outside the engine's dynamics, each named (e.g. MyoSuite's finger: its
contacts of cylinders, an ellipsoid and capsule pairs). `disable_contact` runs the model as
MuJoCo does with `<flag contact="disable"/>` (mjDSBL_CONTACT set on a copy of the model; the
file, or a caller's MjModel, is left as it is): no contact at all, the rest of the model
unchanged, so the finger runs and matches mj_step with that flag
(tests/musculoskeletal/test_mjcf_forward.py).
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
from myotwin.engine.model import read_mjcf
from myotwin.engine.simulate import DIVERGED_ABOVE, positive_seconds, whole_steps
from myotwin.scalars import as_real, is_integer
from myotwin.musculoskeletal.controls_csv import (ControlsTable, check_unit_interval,
                                                  read_controls_csv)
from myotwin.musculoskeletal.energy import muscle_outputs_at
from myotwin.musculoskeletal.mjcf import load_mjcf, muscle_actuators
from myotwin.musculoskeletal.model import with_muscle_masses
from myotwin.musculoskeletal.simulate import first_diverged_step, rollout
from myotwin.musculoskeletal.state import MusculoskeletalState

#: Steps per compiled chunk: the unit of writing.
CHUNK_STEPS = 500
INTEGRATORS = ("euler", "rk4", "semi_implicit_euler")
_JOINT_WIDTH = {0: (7, 6), 1: (4, 3), 2: (1, 1), 3: (1, 1)}   # mjtJoint: (nq, nv)


def _number(value, what: str, where: str, name: str | None = None) -> float:
    """value as a float if it is one real number (`as_real`: True is not 1.0, "0.5" not 0.5),
    else ValueError naming the file, the input and the name it was given for."""
    number = as_real(value)
    if number is None:
        if name is None:
            raise ValueError(f"{where}: {what} must be one number or name -> number, got "
                             f"{value!r}")
        raise ValueError(f"{where}: {what} of {name!r} must be a number, got {value!r}")
    return number


def _by_name(value, names, what: str, where: str) -> np.ndarray:
    """One number for every name, or name -> number (the others 0): (len(names),)."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(names), key=str)
        if unknown:
            raise ValueError(f"{where}: {what}: no such name {unknown[0]!r}; the names are "
                             f"{list(names)}")
        return np.array([_number(value.get(n, 0.0), what, where, n) for n in names])
    return np.full(len(names), _number(value, what, where))


def _constants(value, names, what: str, where: str) -> dict[str, float]:
    """{name: number}: one number for every name, or the given names' (others are left out)."""
    if isinstance(value, Mapping):
        _by_name(value, names, what, where)       # unknown names and non-numbers are refused
        return {n: float(value[n]) for n in names if n in value}
    return {n: _number(value, what, where) for n in names}


def _check_columns(table: ControlsTable, muscles, others, where: str) -> None:
    """Every column of the controls file names an actuator; muscles' columns in [0, 1]."""
    for column in table.columns:
        if column not in muscles and column not in others:
            raise ValueError(f"{table.name}: column {column!r} is not an actuator of {where}; "
                             f"the actuators are {[*muscles, *others]}")
        if column in muscles:
            check_unit_interval(table, column)


def _per_step_inputs(names, constant: dict, table: ControlsTable | None,
                     starts: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """(len(starts), len(names)) inputs at the steps' start times: a constant where given,
    else the controls file's column, else `fallback` (MuJoCo's reset ctrl: 0, or the
    keyframe's)."""
    out = np.tile(np.asarray(fallback, dtype=np.float64), (starts.size, 1))
    for i, name in enumerate(names):
        if name in constant:
            out[:, i] = constant[name]
        elif table is not None and name in table.columns:
            out[:, i] = table.at(name, starts)
    return out


def _in_unit_interval(values, names, what: str, where: str) -> None:
    for n, v in zip(names, values.tolist()):
        if not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"{where}: {what} of {n!r} must be in [0, 1], got {v!r}")


def _no_muscle_inputs(where: str, **given) -> None:
    """A model without MuJoCo muscles takes no muscle input: one given is refused by name
    (a value that would change nothing is a mistake to report, not to ignore)."""
    for field, value in given.items():
        if value is not None and not (field == "muscle_mass_kg" and isinstance(value, (
                int, float)) and value == 0):
            raise ValueError(f"{where}: {field} = {value!r} given, but the model has no MuJoCo "
                             "muscle actuator (<muscle>); its actuators take --ctrl or "
                             "--controls")


def _joint_columns(m) -> tuple[list[str], list[str]]:
    """The states.csv labels of qpos and qvel (module docstring)."""
    import mujoco

    q, qd = [], []
    for j in range(m.njnt):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"
        nq, nv = _JOINT_WIDTH[int(m.jnt_type[j])]
        q += [f"q:{name}"] if nq == 1 else [f"q:{name}[{k}]" for k in range(nq)]
        qd += [f"qd:{name}"] if nv == 1 else [f"qd:{name}[{k}]" for k in range(nv)]
    return q, qd


def _by_joint(m, base, given: Mapping[str, float] | None, address, what: str,
              where: str) -> np.ndarray:
    """`base` (qpos or qvel) with the hinge and slide joints named in `given` set (joint name
    -> value, at `address`[joint]: jnt_qposadr or jnt_dofadr)."""
    import mujoco

    out = np.array(base, dtype=np.float64)
    if given is not None and not isinstance(given, Mapping):
        raise ValueError(f"{where}: {what} must be joint name -> value, got {given!r}")
    for name, value in (given or {}).items():
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            raise ValueError(f"{where}: {what}: no joint named {name!r}")
        if int(m.jnt_type[j]) not in (2, 3):
            raise ValueError(f"{where}: {what}: joint {name!r} is a ball or free joint; only "
                             "hinge and slide joints take one value")
        if not math.isfinite(_number(value, what, where, name)):
            raise ValueError(f"{where}: {what} of {name!r} must be finite, got {value!r}")
        out[address[j]] = float(value)
    return out


def _keyframe(m, keyframe, where: str) -> int | None:
    """The index of the keyframe `keyframe` (its name, or an index) of `m`; None for None."""
    import mujoco

    if keyframe is None:
        return None
    if isinstance(keyframe, str):
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, keyframe)
        if k < 0 and keyframe.isdigit():
            k = int(keyframe)
        if not 0 <= k < m.nkey:
            names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, i) or f"#{i}"
                     for i in range(m.nkey)]
            raise ValueError(f"{where}: no keyframe {keyframe!r}; the keyframes are {names}")
        return k
    if is_integer(keyframe) and 0 <= keyframe < m.nkey:
        return int(keyframe)
    raise ValueError(f"{where}: keyframe must be a keyframe's name or an index in [0, "
                     f"{m.nkey}), got {keyframe!r}")


def file_integrator(m, where: str) -> str:
    """Our name for the integrator the compiled MJCF `m` asks for (module docstring)."""
    import mujoco

    kind = mujoco.mjtIntegrator(int(m.opt.integrator))
    if kind == mujoco.mjtIntegrator.mjINT_RK4:
        return "rk4"
    if kind == mujoco.mjtIntegrator.mjINT_EULER:
        no_damping_term = m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP
        return "semi_implicit_euler" if no_damping_term else "euler"
    name = kind.name.removeprefix("mjINT_").lower()
    raise ValueError(f"{where}: <option integrator=\"{name}\"> is not offered; choose the "
                     f"integrator (one of {list(INTEGRATORS)})")


class _Csv:
    """A CSV table written and flushed chunk by chunk (full double precision)."""

    def __init__(self, path: Path, labels) -> None:
        self.rows = 0
        self._file = path.open("w")
        self._file.write(",".join(labels) + "\n")
        self._file.flush()

    def write(self, rows: np.ndarray) -> None:
        np.savetxt(self._file, rows, delimiter=",", fmt="%.17g")
        self._file.flush()
        self.rows += rows.shape[0]

    def close(self) -> None:
        self._file.close()


def without_contact(m):
    """A copy of the compiled MJCF `m` with MuJoCo's contact disabled (mjDSBL_CONTACT, what
    `<flag contact="disable"/>` sets); `m` itself is not changed."""
    import copy

    import mujoco

    m = copy.copy(m)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    return m


def _tendon_forces(msm, state):
    return muscle_outputs_at(msm, state).tendon_force_N


def forward(source, out_dir, *, excitation=None, ctrl: Mapping[str, float] | None = None,
            duration_s: float = 1.0, dt_s: float | None = None,
            record_every_s: float | None = None, q0: Mapping[str, float] | None = None,
            activation0=None, integrator: str | None = None, muscle_mass_kg=0.0,
            mass_points: int = 10, disable_contact: bool = False, controls=None,
            chunk_steps: int = CHUNK_STEPS, qd0: Mapping[str, float] | None = None,
            keyframe: str | int | None = None) -> dict:
    """Simulate the MJCF model `source` (a path or a compiled `mujoco.MjModel`) and write
    states.csv, muscle_forces.csv and summary.json into `out_dir` (module docstring).
    excitation: a number for every muscle, name -> number, or None (then `controls`, a CSV
    file path, or a `keyframe` must give them). Returns the summary; raises
    FloatingPointError after writing if the state stops being finite."""
    import mujoco

    if not is_integer(chunk_steps) or chunk_steps < 1:   # 0 looped without a step
        raise ValueError(f"chunk_steps must be a positive integer, got {chunk_steps!r}")
    if not isinstance(disable_contact, (bool, np.bool_)):  # "no" would disable contact
        raise ValueError(f"disable_contact must be True or False, got {disable_contact!r}")
    m, where = read_mjcf(source)
    if disable_contact:
        m = without_contact(m)
    msm = load_mjcf(m, name=where)
    unsupported = msm.skeleton.dynamics_unsupported
    if unsupported:      # before any file is written
        hint = ("; or run without any contact: --disable-contact (disable_contact=True)"
                if any(p.startswith("contact pair") for p in unsupported) else "")
        raise ValueError(f"{where}: outside the engine's dynamics: " + "; ".join(unsupported)
                         + hint)
    names = msm.muscles.names
    if not names:
        _no_muscle_inputs(where, excitation=excitation, activation0=activation0,
                          muscle_mass_kg=muscle_mass_kg)
    key = _keyframe(m, keyframe, where)
    table = None if controls is None else read_controls_csv(controls)
    if excitation is None and table is None and key is None and names:
        raise ValueError(f"{where}: no excitation: give one (--excitation), a controls file "
                         "(--controls) or a keyframe (--keyframe)")
    constant_u = {} if excitation is None else _constants(excitation, names, "excitation",
                                                          where)
    _in_unit_interval(np.array(list(constant_u.values())), list(constant_u), "excitation",
                      where)
    muscle_ids = list(muscle_actuators(m))
    key_ctrl = np.zeros(m.nu) if key is None else np.array(m.key_ctrl[key], dtype=np.float64)
    key_act = np.zeros(len(names)) if key is None else np.array(
        [m.key_act[key][m.actuator_actadr[a]] if m.actuator_actadr[a] >= 0 else 0.0
         for a in muscle_ids], dtype=np.float64)
    if key is not None:      # the muscles that take the key's ctrl as their excitation
        taking = [k for k, x in enumerate(names) if x not in constant_u
                  and (table is None or x not in table.columns)]
        _in_unit_interval(key_ctrl[[muscle_ids[k] for k in taking]],
                          [names[k] for k in taking], f"keyframe {keyframe!r} ctrl "
                          "(excitation)", where)
    if activation0 is None:
        a0 = key_act
    elif isinstance(activation0, Mapping):
        a0 = key_act.copy()
        for k, value in enumerate(_by_name(activation0, names, "initial activation", where)):
            a0[k] = value if names[k] in activation0 else a0[k]
    else:
        a0 = _by_name(activation0, names, "initial activation", where)
    _in_unit_interval(a0, names, "initial activation", where)
    masses = _by_name(muscle_mass_kg, names, "muscle mass", where)
    if not is_integer(mass_points) or mass_points < 1:
        raise ValueError(f"mass_points must be a positive integer, got {mass_points!r}")
    if np.any(masses != 0.0):   # checked here, before any file is written
        msm = with_muscle_masses(msm, masses, int(mass_points), where=where)
    others = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"#{a}"
              for a in range(m.nu) if a not in muscle_ids]
    constant_c = _constants(ctrl or {}, others, "ctrl", where)
    if not all(math.isfinite(v) for v in constant_c.values()):
        raise ValueError(f"{where}: ctrl must be finite, got {ctrl!r}")
    if table is not None:
        _check_columns(table, names, others, where)
    if integrator is None:
        integrator = file_integrator(m, where)
    elif integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {list(INTEGRATORS)}, got {integrator!r}")
    dt_s = positive_seconds("dt_s", float(m.opt.timestep) if dt_s is None else dt_s)
    duration_s = positive_seconds("duration_s", duration_s)
    n = whole_steps("duration_s", duration_s, dt_s)
    stride = 1 if record_every_s is None else whole_steps(
        "record_every_s", positive_seconds("record_every_s", record_every_s), dt_s)
    q = _by_joint(m, m.qpos0 if key is None else m.key_qpos[key], q0, m.jnt_qposadr,
                  "initial q", where)
    qd = _by_joint(m, np.zeros(m.nv) if key is None else m.key_qvel[key], qd0, m.jnt_dofadr,
                   "initial qd", where)
    t0 = 0.0 if key is None else float(m.key_time[key])

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    state = MusculoskeletalState(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(a0),
                                 jnp.zeros(len(names)))
    q_labels, qd_labels = _joint_columns(m)
    states_file = _Csv(out / "states.csv", ["time_s", *q_labels, *qd_labels,
                                            *(f"activation:{x}" for x in names)])
    forces_file = _Csv(out / "muscle_forces.csv", ["time_s", *names])
    chunk = min(int(chunk_steps), n)
    other_ids = [a for a in range(m.nu) if a not in muscle_ids]

    def inputs(first_step):
        """(excitations (chunk, n_muscles), ctrl (chunk, nu)) of the chunk's steps, each at
        its start time (made chunk by chunk: a long run does not hold them all)."""
        starts = t0 + (first_step + np.arange(chunk)) * dt_s
        c = np.zeros((chunk, m.nu))
        c[:, other_ids] = _per_step_inputs(others, constant_c, table, starts,
                                           key_ctrl[other_ids])
        return _per_step_inputs(names, constant_u, table, starts, key_ctrl[muscle_ids]), c

    @jax.jit
    def run(s, u_chunk, c_chunk):
        """The chunk's states (chunk + 1 rows, its start first) and their tendon forces: one
        compiled function for the whole run."""
        states = rollout(msm, s, u_chunk, dt_s, chunk, Integrator(integrator), c_chunk)
        return states, jax.vmap(_tendon_forces, in_axes=(None, 0))(msm, states)

    def write(states, forces, rows, steps):
        t = np.round(t0 + steps * dt_s, 12)[:, None]
        states_file.write(np.concatenate([t, *(np.asarray(x)[rows] for x in (
            states.q, states.qd, states.activation))], axis=1))
        forces_file.write(np.concatenate([t, np.asarray(forces)[rows]], axis=1))

    try:
        done, bad_step = 0, -1
        while done < n and bad_step < 0:
            states, forces = run(state, *(jnp.asarray(x) for x in inputs(done)))
            if done == 0:
                write(states, forces, np.array([0]), np.array([0]))
            steps = done + np.arange(1, chunk + 1)
            keep = steps <= n
            bad_row = first_diverged_step(states)
            if bad_row > 0 and steps[bad_row - 1] <= n:
                bad_step = int(steps[bad_row - 1])
                keep &= steps < bad_step
            rows = np.flatnonzero(keep & ((steps % stride == 0) | (steps == n)))
            if rows.size:
                write(states, forces, rows + 1, steps[rows])
            last = int(np.flatnonzero(keep)[-1]) + 1 if np.any(keep) else 0
            state = jax.tree_util.tree_map(lambda x: x[last], states)
            done = int(steps[last - 1]) if last else done
    finally:
        states_file.close()
        forces_file.close()
    failure = None if bad_step < 0 else (
        f"the state is not finite or exceeds {DIVERGED_ABOVE:g} (MuJoCo's bound of an unstable "
        f"simulation) at t = {t0 + bad_step * dt_s:.6g} s; the rows before it are written")
    summary = {
        "model": where, "muscles": list(names), "integrator": integrator, "dt_s": dt_s,
        "duration_s": duration_s, "n_steps": n, "record_every_s": stride * dt_s,
        "excitation": {x: constant_u.get(x, float(key_ctrl[a]))
                       for x, a in zip(names, muscle_ids)
                       if x in constant_u or table is None or x not in table.columns},
        "controls_file": None if table is None else table.name,
        "controls_columns": [] if table is None else [
            x for x in (*names, *others) if x in table.columns
            and x not in constant_u and x not in constant_c],
        "muscle_mass_kg": dict(zip(names, masses.tolist())), "mass_points": int(mass_points),
        "contact": "disabled" if disable_contact else "as in the file",
        "keyframe": None if key is None else (
            mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, key) or key),
        "start_time_s": t0, "steps_done": done, "final_time_s": t0 + done * dt_s,
        "rows_written": states_file.rows, "diverged": failure is not None,
        "message": failure or "completed",
        "final_q": dict(zip(q_labels, np.asarray(state.q).tolist())),
        "final_activation": dict(zip(names, np.asarray(state.activation).tolist())),
        "files": ["states.csv", "muscle_forces.csv", "summary.json"],
        "wall_time_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if failure is not None:
        raise FloatingPointError(f"simulation diverged: {failure} in {out / 'states.csv'}")
    return summary
