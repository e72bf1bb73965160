"""Error-controlled simulation of a skeleton driven by Hill-type muscles (Dormand-Prince 5(4)).

The fixed-step `rollout` (simulate.py) loses its order where the right-hand side is not
smooth: a muscle goes slack, a path point switches, an input has a kink. An error-controlled
step shrinks there and grows again after, as OpenSim's Runge-Kutta-Merson does.
`adaptive_rollout` integrates

  d/dt (q, qd, a, s) = (qdot(q, qd), qdd, da/dt, ds/dt)          (dynamics.py)

with `engine.adaptive.dormand_prince` (SciPy's RK45 controller) to given output times. The
inputs are functions of time, not values per step: excitations u(t) (n_muscles) and the
skeleton's own controls c(t) (n_u) interpolated linearly in a table (times (k,), values
(k, n)) and held at the end values outside it, OpenSim's ControlLinear without steps (a
single row is a constant), plus, optionally, smooth functions of time evaluated where the
right-hand side is (`InputTable.functions`, e.g. OpenSim's PrescribedControllers). The
table's times are the integrator's breakpoints: steps end on them, so a kink or a near-step
in the inputs (two rows 1e-12 s apart) costs a short step, not accuracy.

Positions: with coupled coordinates (`msm.coordinates`) and hinge/slide skeletons q moves in a
vector space (qdot = qd). Ball and free quaternions are integrated in their qpos coordinates
(qdot = 0.5 q (0, w), `engine.integrators.qpos_derivative`), normalised wherever the right-hand
side reads them and at every output; the error control keeps their norm drift to the
tolerance (unlike `rollout`, this is not the manifold Runge-Kutta-Munthe-Kaas of MuJoCo's RK4).

Activation bounds (`msm.activation_range`, MuJoCo's actrange): MuJoCo clamps act after each
fixed step; as the step goes to zero that clamped Euler tends to the projected dynamics
da/dt = 0 while act is at a bound and its rate points out, which is what this rollout
integrates (and an initial activation outside its range starts clamped, as MuJoCo's first step
ends). Within a step act may pass a bound by the local error; the output states are clamped.

Tolerances: Hairer's mixed norm on every state, |err_i| <= atol + rtol |y_i| in RMS, with
SI states (rad, m, rad/s, m/s, activation, m of fiber or normalized tendon force). Forward-mode
differentiable; not reverse mode (a while loop; use `rollout` for gradients).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.adaptive import AdaptiveResult, check_times, dormand_prince
from myotwin.engine.arguments import check_musculoskeletal_arguments
from myotwin.scalars import holds_real_numbers, is_integer, require_real_numbers
from myotwin.engine.integrators import normalize_quaternions, qpos_derivative
from myotwin.musculoskeletal.body_loads import (BodyLoads, load_values,
                                              musculoskeletal_wrenches)
from myotwin.musculoskeletal.dynamics import rates
from myotwin.musculoskeletal.model import MusculoskeletalModel, clamped_activation
from myotwin.musculoskeletal.state import MusculoskeletalState


class InputTable(NamedTuple):
    """Inputs as functions of time: times_s (k,) increasing; excitation (k, n_muscles) and
    ctrl (k, n_u) at those times, linear in between, held outside; loads: external loads on
    bodies (`body_loads.BodyLoads`, their own functions of time) or None; functions: None, or
    a pytree with a method at(t) -> (excitation (n_muscles,), ctrl (n_u,)) added to the
    table's (e.g. `osim.controllers.PrescribedInputs`; put its kinks in times_s)."""

    times_s: jax.Array
    excitation: jax.Array
    ctrl: jax.Array
    loads: BodyLoads | None = None
    functions: object = None


def input_table(times_s, excitation, ctrl, loads: BodyLoads | None = None) -> InputTable:
    """An `InputTable` from arrays: times_s (k,), excitation (k, n_muscles), ctrl (k, n_u);
    a single time (k = 1) makes the inputs constant and then also takes 1-D rows; loads (a
    `BodyLoads` or None) as given. ValueError for times that are not a strictly increasing
    1-D array, rows that do not match them, an excitation that is not finite and in [0, 1],
    a ctrl that is not finite, or loads that are not a BodyLoads."""
    if loads is not None and not isinstance(loads, BodyLoads):
        raise ValueError(f"input table: loads must be a BodyLoads or None, got "
                         f"{type(loads).__name__}")
    for name, values in (("times", times_s), ("excitation", excitation), ("ctrl", ctrl)):
        require_real_numbers("input table", name, values)   # np.asarray(float): True 1.0
    times_s = np.atleast_1d(np.asarray(times_s, dtype=np.float64))
    if times_s.ndim != 1 or not (np.all(np.isfinite(times_s))
                                 and np.all(np.diff(times_s) > 0)):
        raise ValueError(f"input times must be a finite, strictly increasing 1-D array, got "
                         f"{times_s}")
    k = times_s.shape[0]
    rows = []
    for name, values in (("excitation", excitation), ("ctrl", ctrl)):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1 and k == 1:
            values = values[None]
        if values.ndim != 2 or values.shape[0] != k:
            raise ValueError(f"input table: {name} has shape {values.shape}, expected one row "
                             f"per time ({k}, n)")
        bad = ~np.isfinite(values)
        if name == "excitation":
            bad |= (values < 0.0) | (values > 1.0)
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            allowed = "finite and in [0, 1]" if name == "excitation" else "finite"
            value = float(values[row, column])
            raise ValueError(f"input table: {name} must be {allowed}; row {row} (t = "
                             f"{times_s[row]:g} s), column {column} is {value!r}")
        rows.append(jnp.asarray(values))
    return InputTable(jnp.asarray(times_s), *rows, loads)


def _at(times_s, values, t):
    if values.shape[1] == 0:
        return values[0]
    return jax.vmap(lambda column: jnp.interp(t, times_s, column), in_axes=1)(values)


def inputs_at(table: InputTable, t) -> tuple[jax.Array, jax.Array]:
    """(excitation (n_muscles,), ctrl (n_u,)) at time t (s), the functions' added."""
    if not holds_real_numbers(t) or np.ndim(t) != 0:     # "0.1" failed inside JAX
        raise ValueError(f"inputs_at: t must be one number (s), got {t!r}")
    u, c = _at(table.times_s, table.excitation, t), _at(table.times_s, table.ctrl, t)
    if table.functions is None:
        return u, c
    du, dc = table.functions.at(t)
    return u + du, c + dc


def _normalized(msm: MusculoskeletalModel, q):
    return q if msm.coordinates is not None else normalize_quaternions(msm.skeleton, q)


def state_rate(t, state: MusculoskeletalState, args) -> MusculoskeletalState:
    """d state / dt at time t, with `state.q`'s rate in qpos coordinates (module docstring);
    args = (msm, table)."""
    msm, table = args
    q = _normalized(msm, state.q)
    u, c = inputs_at(table, t)
    xfrc = None if table.loads is None else musculoskeletal_wrenches(
        msm, table.loads, load_values(table.loads, t), q)
    qdd, da, ds = rates(msm, MusculoskeletalState(q, state.qd, state.activation,
                                                  state.tendon_state), u, c,
                        xfrc_applied=xfrc)
    q_rate = state.qd if msm.coordinates is not None else qpos_derivative(msm.skeleton, q,
                                                                          state.qd)
    return MusculoskeletalState(q_rate, qdd, _activation_rate_in_range(msm, state.activation,
                                                                       da), ds)


def _activation_rate_in_range(msm: MusculoskeletalModel, a, da):
    """da, zero where act is at or past a bound of `msm.activation_range` and da points out
    (module docstring)."""
    if msm.activation_range is None:
        return da
    lo, hi = msm.activation_range[:, 0], msm.activation_range[:, 1]
    return jnp.where(((a >= hi) & (da > 0)) | ((a <= lo) & (da < 0)), 0.0, da)


def adaptive_rollout(msm: MusculoskeletalModel, state0: MusculoskeletalState, t0_s, t_out_s,
                     table: InputTable, *, rtol, atol, h0_s=None,
                     max_steps: int = 1_000_000, n_used=None) -> AdaptiveResult:
    """The states at the output times t_out_s (n_out,) after t0_s from state0, inputs from
    `table` (module docstring); an `engine.adaptive.AdaptiveResult` whose ys and y_last are
    `MusculoskeletalState`s (ys with a leading n_out axis, NaN rows from the first output not
    reached; see its status, n_done, h_next_s to continue); n_used: integrate to the first
    n_used output times only (`engine.adaptive.dormand_prince`). ValueError if the table is
    not an `InputTable` or its widths are not (n_muscles, n_u), max_steps is not an integer
    >= 1, and, where they are concrete (not traced), for rtol or atol not numbers >= 0 (not
    both 0) and output times that are not finite and strictly increasing after t0_s; all
    before compiling."""
    if not isinstance(table, InputTable):
        raise ValueError(f"adaptive_rollout: table must be an InputTable (input_table), got "
                         f"{type(table).__name__}")
    check_musculoskeletal_arguments("adaptive_rollout", msm, {"state": state0})
    widths = (table.excitation.shape[1], table.ctrl.shape[1])
    if widths != (msm.n_muscles, msm.skeleton.n_u):
        raise ValueError(f"input table: {widths[0]} excitation and {widths[1]} ctrl columns "
                         f"for {msm.n_muscles} muscles and {msm.skeleton.n_u} actuators")
    if not is_integer(max_steps) or max_steps < 1:
        raise ValueError(f"adaptive_rollout: max_steps must be an integer >= 1, got "
                         f"{max_steps!r}")
    tolerances = [t for t in (rtol, atol) if not isinstance(t, jax.core.Tracer)]
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, jax.core.Tracer):
            continue
        values = np.asarray(tol, dtype=np.float64) if holds_real_numbers(tol) else None
        if values is None or not np.all(np.isfinite(values) & (values >= 0.0)):
            raise ValueError(f"adaptive_rollout: {name} must be finite numbers >= 0, got "
                             f"{tol!r}")
    if len(tolerances) == 2 and not any(np.any(np.asarray(t) != 0.0) for t in tolerances):
        raise ValueError("adaptive_rollout: rtol and atol are both 0 (no step passes)")
    for name, value in (("t0_s", t0_s), ("t_out_s", t_out_s), ("h0_s", h0_s)):
        if not (value is None and name == "h0_s"):  # jit would refuse a string in JAX
            require_real_numbers("adaptive_rollout", name, value)
    if isinstance(t_out_s, (list, tuple)):          # (jit would pass a list of scalars)
        t_out_s = jnp.asarray(t_out_s, dtype=float)
    check_times(t0_s, t_out_s)
    return _adaptive_rollout(msm, state0, t0_s, t_out_s, table, rtol=rtol, atol=atol,
                             h0_s=h0_s, max_steps=max_steps, n_used=n_used)


@functools.partial(jax.jit, static_argnames=("max_steps",))
def _adaptive_rollout(msm: MusculoskeletalModel, state0: MusculoskeletalState, t0_s, t_out_s,
                      table: InputTable, *, rtol, atol, h0_s, max_steps: int,
                      n_used) -> AdaptiveResult:
    """`adaptive_rollout` after its checks, compiled."""
    state0 = state0._replace(activation=clamped_activation(msm, state0.activation))
    result = dormand_prince(state_rate, state0, t0_s, t_out_s, rtol=rtol, atol=atol,
                            args=(msm, table), h0_s=h0_s, max_steps=max_steps,
                            n_used=n_used, breakpoints_s=table.times_s)
    ys = result.ys._replace(q=jax.vmap(functools.partial(_normalized, msm))(result.ys.q),
                            activation=clamped_activation(msm, result.ys.activation))
    last = result.y_last._replace(q=_normalized(msm, result.y_last.q),
                                  activation=clamped_activation(msm, result.y_last.activation))
    return result._replace(ys=ys, y_last=last)
