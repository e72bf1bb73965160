"""Static optimization of an .osim model along measured motion, as OpenSim's StaticOptimization
analysis (run by its AnalyzeTool with a coordinates file).

`myotwin osim static-optimization MODEL --coordinates IK.mot [--external-loads GRF.xml]
[--lowpass-hz F] --out DIR` (docs/osim.md "Static optimization"). At each time the actuator
controls x (muscle activations, CoordinateActuator controls) minimise

    sum_i |x_i|^p        subject to   sum_i r_i F_i x_i = tau(q, qd, qdd),   lo_i <= x_i <= hi_i

* q, qd, qdd: the coordinates file prepared as OpenSim's tools prepare it (padding, lowpass,
  splines: `inverse_dynamics.prepared_motion`), at its own times within the range;
* tau: the generalized forces the motion needs, the skeleton's inverse dynamics with the
  external loads, on the model's independent coordinates (J^T tau_f: a CoordinateCoupler-
  Constraint is workless; `inverse_dynamics.reduced_generalized_forces`). OpenSim's analysis
  asks for the coordinates' accelerations instead (udot(x) = udot target); for exact equality
  the two constraint sets are the same. A locked coordinate has no equation (the loader
  eliminates it; OpenSim skips constrained coordinates), and a file's column for it must
  hold its locked value (`inverse_dynamics.prepared_motion`);
* F_i, the force of actuator i per unit control, as OpenSim's StaticOptimizationTarget takes
  it: a muscle's force with a rigid tendon at activation 1 at the current musculotendon
  length and lengthening speed (`Muscle::calcInextensibleTendonActiveFiberForce(s, 1)`; the
  active force only, no passive force), and a CoordinateActuator's optimal_force. Checked
  against OpenSim 4.6 per muscle type (tests): Thelen2003Muscle gives the active fiber force
  times the cosine of pennation (along the tendon), DeGrooteFregly2016Muscle the active
  fiber force itself (along the fiber: its override of that function leaves the cosine out).
  Millard2012EquilibriumMuscle its own deprecated rigid-tendon estimate, whose pennation
  factor OpenSim computes from the normalised fiber length (`millard_capacity`; an undamped
  compliant Millard muscle is refused).
  `use_muscle_physiology=False` (OpenSim's option) takes a muscle's max isometric force.
  ignore_activation_dynamics and ignore_passive_fiber_force change none of this and are read
  past (checked against OpenSim);
* r_i: the moment arms through which OpenSim applies the force (its point-force coupling,
  `musculoskeletal` coupling "opensim"; 1 for a CoordinateActuator on its coordinate);
* p: `activation_exponent` (OpenSim's default 2); bounds: each actuator's min_control and
  max_control (OpenSim's defaults: Thelen and Millard 0.01 and 1, De Groote 0 and 1,
  CoordinateActuator unbounded).
Solver: SciPy's SLSQP per time, warm-started from the previous one, with the exact gradient
and the constraint's Jacobian (it is linear in x), to `accuracy`. OpenSim solves the same
problem with its own optimizer to its `optimizer_convergence_criterion`; a time where the
constraint cannot be met (the muscles too weak) is reported in the summary with its residual,
and the run goes on, as OpenSim's does.
Output, written as times are solved: `static_optimization_activation.sto` (controls, OpenSim's
`_StaticOptimization_activation.sto`), `static_optimization_force.sto` (x_i F_i, N or N m,
its `_force.sto`), `summary.json`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from myotwin import musculoskeletal as ms
from myotwin.muscle.musculotendon import muscle_outputs
from myotwin.osim import millard_capacity
from myotwin.osim.external_loads import evaluate_external_loads, read_external_loads
from myotwin.osim.inverse_dynamics import (check_accuracy, check_cutoff, load_plan,
                                           prepared_motion, reduced_generalized_forces,
                                           time_window)
from myotwin.osim.loader import OsimModel, load
from myotwin.osim.muscles import build_muscles
from myotwin.osim.row_blocks import map_row_blocks
from myotwin.osim.storage import StorageWriter, read_storage
from myotwin.scalars import as_real

#: Default convergence tolerance of SLSQP (its ftol).
DEFAULT_ACCURACY = 1e-12
MAX_ITERATIONS = 500
#: Muscle types and how OpenSim's rigid-tendon active force is taken (module docstring);
#: Millard2012EquilibriumMuscle's is `millard_capacity`'s.
ALONG_TENDON = {"Thelen2003Muscle": True, "DeGrooteFregly2016Muscle": False}
MILLARD = "Millard2012EquilibriumMuscle"
SUPPORTED = (*ALONG_TENDON, MILLARD)
#: A time whose constraint residual exceeds this (relative to 1 + |tau|) is reported.
CONSTRAINT_TOLERANCE = 1e-6
#: Muscle flags that change nothing static optimization uses (activation dynamics, the
#: passive fiber force): read past here, though `build_muscles` refuses them for simulation.
UNUSED_FLAGS = ("ignore_activation_dynamics", "ignore_passive_fiber_force")
#: Rows of (q, qd) per call of the compiled force terms (the last call padded).
ROWS_PER_CALL = 64


@dataclasses.dataclass(frozen=True)
class Actuators:
    """The optimised actuators: names (muscles and CoordinateActuators in ForceSet order,
    OpenSim's columns: `OsimModel.force_names`), lower and upper bounds of their controls."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray


def actuators(loaded: OsimModel) -> Actuators:
    """The muscles and CoordinateActuators of `loaded` with their control bounds; ValueError
    naming a muscle of a type static optimization does not support (module docstring)."""
    names, lower, upper = [], [], []
    for name in loaded.muscle_names:
        params = loaded.muscles[name]
        kind = params["type"]
        if kind not in SUPPORTED:
            raise ValueError(f"{loaded.source}: muscle {name!r} is a {kind}; static "
                             f"optimization supports {sorted(SUPPORTED)} (docs/osim.md "
                             "\"Static optimization\")")
        if (kind == MILLARD and not params.get("ignore_tendon_compliance", False)
                and params["fiber_damping"] < 1e-3):
            raise ValueError(f"{loaded.source}: muscle {name!r}: a {MILLARD} with a "
                             f"compliant tendon and fiber_damping {params['fiber_damping']!r} "
                             "< 1e-3 is OpenSim's undamped model, whose curves OpenSim "
                             "changes differently (not reproduced); set fiber_damping >= 1e-3 "
                             "or ignore_tendon_compliance")
        names.append(name)
        lower.append(params["min_control"])    # the file's, or OpenSim's default for the
        upper.append(params["max_control"])    # type (force_reading.TYPE_DEFAULTS)
    for name in loaded.actuator_names:
        coordinate = loaded.actuators[name]["coordinate"]
        if coordinate in loaded.coupled_coordinates:
            raise ValueError(f"{loaded.source}: CoordinateActuator {name!r} acts on "
                             f"{coordinate!r}, which "
                             f"{loaded.coupled_coordinates[coordinate].constraint!r} "
                             "eliminates; static optimization takes actuators on independent "
                             "or locked coordinates (move it to the independent one)")
        names.append(name)
        lo, hi = loaded.actuators[name]["control_range"]
        lower.append(lo)
        upper.append(hi)
    order = _force_set_order(loaded)
    return Actuators(tuple(names[k] for k in order), np.array(lower, float)[order],
                     np.array(upper, float)[order])


def _force_set_order(loaded: OsimModel) -> np.ndarray:
    """The indices into (muscles, then CoordinateActuators) in ForceSet order."""
    built = (*loaded.muscle_names, *loaded.actuator_names)
    return np.array([built.index(name) for name in loaded.force_names], dtype=np.int64)


def _terms(msm, along, f_max, motor, gears, use_muscle_physiology, q, qd, millard=False):
    """(B (n_coordinates, n_actuators), F (n_actuators,)) at one (q, qd): F_i the force per
    unit control and column i of B = r_i F_i (module docstring); millard: the muscles are
    Millard2012EquilibriumMuscles (`millard_capacity`)."""
    if msm is None:
        return motor, gears
    length, speed, arms = ms.path_state(msm, q, qd)
    if use_muscle_physiology and millard:
        force = millard_capacity.capacity(msm.muscles, length, speed)
    elif use_muscle_physiology:
        out = muscle_outputs(msm.muscles, jnp.ones_like(length), length, speed)
        force = out.active_fiber_force_N * jnp.where(along, out.cos_pennation, 1.0)
    else:
        force = f_max
    return (jnp.concatenate([arms * force[None, :], motor], axis=1),
            jnp.concatenate([force, gears]))


def _rows_of_terms(msm, along, f_max, motor, gears, use_muscle_physiology, q, qd,
                   millard=False):
    """`_terms` at each row of q, qd, one row after another (`lax.map`: the body compiles
    once; vmap's batched wrap code took 1.5x as long to compile on arm26, 42 vs 28 s in a
    scratch timing, and
    ran no faster)."""
    return jax.lax.map(lambda row: _terms(msm, along, f_max, motor, gears,
                                          use_muscle_physiology, *row, millard), (q, qd))


# one jitted function for every call: runs on models of one structure compile once
_batched_terms = jax.jit(_rows_of_terms, static_argnums=(5, 8))


def _without_unused_flags(loaded: OsimModel) -> OsimModel:
    """`loaded` with its muscles' UNUSED_FLAGS left out, so that `build_muscles` (which
    refuses them for simulation) builds the rigid-tendon active force they do not change."""
    muscles = {name: types.MappingProxyType({k: v for k, v in params.items()
                                             if k not in UNUSED_FLAGS})
               for name, params in loaded.muscles.items()}
    return dataclasses.replace(loaded, muscles=types.MappingProxyType(muscles))


def force_per_control(loaded: OsimModel, q, qd, use_muscle_physiology: bool = True):
    """(B (n_rows, n_coordinates, n_actuators), F (n_rows, n_actuators)) at rows of q, qd
    (n_rows, n_coordinates): F_i the force per unit control of actuator i (`actuators`
    order: ForceSet order), column i of B = r_i F_i (module docstring)."""
    n_q = len(loaded.coordinates)
    motor = np.zeros((n_q, len(loaded.actuator_names)))
    for k, name in enumerate(loaded.actuator_names):
        a = loaded.actuators[name]
        if a["coordinate"] in loaded.locked_coordinates:
            continue   # no equation for a locked coordinate: the actuator moves nothing
        motor[loaded.coordinates.index(a["coordinate"]), k] = a["gear"]
    msm = along = f_max = None
    millard = False
    if loaded.muscle_names:
        # one type per model (build_muscles refuses a mix)
        millard = loaded.muscles[loaded.muscle_names[0]]["type"] == MILLARD
        muscles = build_muscles(_without_unused_flags(loaded), tendon="rigid")
        msm = ms.musculoskeletal_model(loaded.model, muscles, coupling="opensim",
                                       coordinates=loaded.coupling)
        along = jnp.asarray([ALONG_TENDON.get(loaded.muscles[n]["type"], True)
                             for n in loaded.muscle_names])
        f_max = jnp.asarray([loaded.muscles[n]["max_isometric_force_N"]
                             for n in loaded.muscle_names])
    q, qd = np.atleast_2d(q), np.atleast_2d(qd)

    def block_terms(block):   # rows in calls of one shape: one compilation for any length
        return _batched_terms(msm, along, f_max, jnp.asarray(motor),
                              jnp.asarray(motor.sum(axis=0)), bool(use_muscle_physiology),
                              jnp.asarray(block[0]), jnp.asarray(block[1]), millard)

    b, unit = map_row_blocks(block_terms, (q, qd), ROWS_PER_CALL)
    order = _force_set_order(loaded)   # computed as muscles, then CoordinateActuators
    return b[:, :, order], unit[:, order]


def solve(b: np.ndarray, tau: np.ndarray, acts: Actuators, exponent: float, x0: np.ndarray,
          accuracy: float = DEFAULT_ACCURACY):
    """(controls, SciPy result) minimising sum |x|^exponent with b x = tau within the bounds,
    from x0."""
    p = float(exponent)

    def objective(x):
        return float(np.sum(np.abs(x) ** p))

    def gradient(x):
        return p * np.sign(x) * np.abs(x) ** (p - 1.0)

    bounds = [(None if not math.isfinite(lo) else lo, None if not math.isfinite(hi) else hi)
              for lo, hi in zip(acts.lower, acts.upper)]
    result = minimize(objective, np.clip(x0, acts.lower, acts.upper), jac=gradient,
                      method="SLSQP", bounds=bounds,
                      constraints=[{"type": "eq", "fun": lambda x: b @ x - tau,
                                    "jac": lambda x: b}],
                      options={"ftol": accuracy, "maxiter": MAX_ITERATIONS})
    return result.x, result


def run(model_path, coordinates_path, out_dir, *, external_loads_path=None,
        cutoff_hz: float | None = None, start_time_s: float = -np.inf,
        end_time_s: float = np.inf, activation_exponent: float = 2.0,
        use_muscle_physiology: bool = True, accuracy: float = DEFAULT_ACCURACY,
        force_set_files=(), replace_force_set: bool = False) -> dict:
    """`myotwin osim static-optimization`: writes DIR/static_optimization_activation.sto,
    DIR/static_optimization_force.sto and DIR/summary.json (module docstring); returns the
    summary. force_set_files: ForceSet files whose actuators join the model's (OpenSim's
    AnalyzeTool force_set_files, e.g. reserve actuators; `osim.load`); replace_force_set:
    they replace the model's forces (the AnalyzeTool's property of that name). Bad input raises
    ValueError naming the file, field and value."""
    check_cutoff(cutoff_hz)
    start_time_s, end_time_s = time_window(str(coordinates_path), start_time_s, end_time_s)
    exponent = as_real(activation_exponent)
    if exponent is None or not (math.isfinite(exponent) and exponent >= 1.0):
        raise ValueError(f"--activation-exponent must be a number >= 1, got "
                         f"{activation_exponent!r}")
    activation_exponent = exponent
    accuracy = check_accuracy(accuracy)
    if not isinstance(use_muscle_physiology, (bool, np.bool_)):
        raise ValueError(f"use_muscle_physiology must be True or False, got "
                         f"{use_muscle_physiology!r}")
    started = time.perf_counter()
    loaded = load(model_path, force_set_files=force_set_files,
                  replace_force_set=replace_force_set, controllers=False)  # (no controls)
    acts = actuators(loaded)
    if not acts.names:
        raise ValueError(f"{model_path}: the model has no muscles or CoordinateActuators to "
                         "optimise")
    table = read_storage(coordinates_path)
    start = max(start_time_s, float(table.time_s[0]))
    end = min(end_time_s, float(table.time_s[-1]))
    motion = prepared_motion(loaded, table, cutoff_hz=cutoff_hz, start_time_s=start,
                             end_time_s=end, source=str(coordinates_path))
    loads = read_external_loads(external_loads_path) if external_loads_path else None
    applied = evaluate_external_loads(loads, motion.times_s) if loads else ()
    tau = reduced_generalized_forces(loaded, motion, load_plan(loaded, applied,
                                                               motion.times_s.size))
    b, unit = force_per_control(loaded, motion.q, motion.qd, use_muscle_physiology)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = ("time", *acts.names)
    violated, not_converged = {}, []
    x = np.clip(np.full(len(acts.names), 0.1), acts.lower, acts.upper)
    with StorageWriter(out / "static_optimization_activation.sto", "Static Optimization",
                       labels, f"myotwin osim static-optimization: {model_path}") as controls, \
            StorageWriter(out / "static_optimization_force.sto", "Static Optimization",
                          labels, "x_i F_i (N or N m)") as forces:
        for k, t in enumerate(motion.times_s):
            x, result = solve(b[k], tau[k], acts, activation_exponent, x, accuracy)
            if not np.all(np.isfinite(x)):
                raise FloatingPointError(f"{coordinates_path}: the controls at t = {t!r} s are "
                                         "not finite; the times before it are written")
            residual = float(np.abs(b[k] @ x - tau[k]).max())
            if residual > CONSTRAINT_TOLERANCE * (1.0 + np.abs(tau[k]).max()):
                violated[repr(float(t))] = residual
            elif not result.success:
                not_converged.append(float(t))
            controls.write_rows(np.concatenate([[t], x])[None])
            forces.write_rows(np.concatenate([[t], x * unit[k]])[None])
    summary = {
        "model": str(model_path),
        "coordinates_file": str(coordinates_path),
        "external_loads_file": None if external_loads_path is None else str(external_loads_path),
        "force_set_files": [str(f) for f in loaded.force_set_files],
        "force_set_replaced": loaded.force_set_replaced,
        "lowpass_cutoff_hz": cutoff_hz,
        "activation_exponent": activation_exponent,
        "use_muscle_physiology": use_muscle_physiology,
        "actuators": {n: [float(lo), float(hi)] for n, lo, hi in
                      zip(acts.names, acts.lower, acts.upper)},
        "coordinates": list(loaded.coordinates),
        "coordinates_missing": list(motion.missing),
        "columns_not_coordinates": list(motion.unmatched_columns),
        "n_rows": int(motion.times_s.size),
        "first_time_s": float(motion.times_s[0]),
        "last_time_s": float(motion.times_s[-1]),
        "constraint_violated_at_s": violated,
        "not_converged_at_s": not_converged,
        "files": {"activation": str(out / "static_optimization_activation.sto"),
                  "force": str(out / "static_optimization_force.sto")},
        "wall_time_s": time.perf_counter() - started,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
