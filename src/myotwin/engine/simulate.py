"""Fixed-step rollouts with `jax.lax.scan`: `simulate(model, q0, qd0, ctrl, duration_s, dt_s)`.

The scan body is one integrator step (integrators.py); the whole rollout is differentiable
with `jax.grad` (reverse mode through the scan) w.r.t. q0, qd0, ctrl and model leaves.
Divergence: a state that is not finite or exceeds `DIVERGED_ABOVE` in magnitude (MuJoCo's
mjMAXVAL, above which mj_step warns that the simulation is unstable and resets it) raises
FloatingPointError naming the first bad step when the result is concrete (outside
`jit`/`grad` tracing); inside a trace use `rollout_status`.
Inputs held over each step: ctrl, and optionally MuJoCo's applied forces qfrc_applied and
xfrc_applied (applied.py), each either constant or one row per step.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.arguments import (jit_naming_refusals, model_of, real_array,
                                      rollout_arguments)
from myotwin.engine.integrators import STEPS, Integrator
from myotwin.engine.model import Model, require_dynamics_support
from myotwin.scalars import as_real


def positive_seconds(what: str, value) -> float:
    """`value` as a float, or ValueError naming `what` unless it is a finite number > 0 (not a
    bool, which float() would take as 1.0 s, nor a string or an array)."""
    number = as_real(value)
    if number is None or not (math.isfinite(number) and number > 0.0):
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
    return number


def whole_steps(what: str, span_s: float, dt_s: float) -> int:
    """How many steps of dt_s make span_s (at least one, to 1e-9 s per s), or ValueError
    naming `what` (e.g. "duration_s", "record_every_s") and both values."""
    n = int(round(span_s / dt_s))
    if n < 1 or abs(n * dt_s - span_s) > 1e-9 * max(1.0, span_s):
        raise ValueError(f"{what} {span_s!r} must be a whole number of steps of dt_s {dt_s!r}")
    return n


def n_steps_for(duration_s: float, dt_s: float) -> int:
    """Number of steps of size dt_s covering duration_s (`whole_steps` for "duration_s"), each
    a positive number of seconds (ValueError naming the one that is not)."""
    return whole_steps("duration_s", positive_seconds("duration_s", duration_s),
                       positive_seconds("dt_s", dt_s))


def simulation_inputs(function: str, q0, qd0, ctrl, qfrc_applied=None, xfrc_applied=None):
    """The initial state, ctrl and applied forces of a simulation as float arrays (None stays
    None), each finite when concrete (`arguments.real_array`: a NaN q0 would otherwise be
    reported as a simulation diverging at step 0)."""
    named = (("q0", q0), ("qd0", qd0), ("ctrl", ctrl), ("qfrc_applied", qfrc_applied),
             ("xfrc_applied", xfrc_applied))
    return tuple(None if v is None else real_array(function, k, v) for k, v in named)


def step_inputs(model: Model, n_steps: int, ctrl, qfrc_applied=None, xfrc_applied=None):
    """Split the inputs of a rollout into what is scanned and what is held.

    ctrl (n_u,) or (n_steps, n_u); qfrc_applied None, (n_v,) or (n_steps, n_v); xfrc_applied
    None, (n_body, 6) or (n_steps, n_body, 6). Returns (xs, held): xs = (ctrl (n_steps, n_u),
    per-step qfrc or None, per-step xfrc or None), the pytree to scan over, and
    held(x) -> (ctrl (n_u,), qfrc (n_v,) or None, xfrc (n_body, 6) or None) for one step's x
    (constant applied forces are closed over, not broadcast to every step)."""
    dtype = jnp.result_type(float)
    ctrl = jnp.asarray(ctrl, dtype=dtype)
    per_ctrl = ctrl if ctrl.ndim == 2 else jnp.broadcast_to(ctrl, (n_steps, model.n_u))
    qfrc = None if qfrc_applied is None else jnp.asarray(qfrc_applied, dtype=dtype)
    xfrc = None if xfrc_applied is None else jnp.asarray(xfrc_applied, dtype=dtype)
    qfrc_per_step = qfrc is not None and qfrc.ndim == 2
    xfrc_per_step = xfrc is not None and xfrc.ndim == 3

    def held(x):
        u, qfrc_k, xfrc_k = x
        return u, qfrc_k if qfrc_per_step else qfrc, xfrc_k if xfrc_per_step else xfrc

    xs = (per_ctrl, qfrc if qfrc_per_step else None, xfrc if xfrc_per_step else None)
    return xs, held


@jit_naming_refusals(("q0", "qd0", "ctrl", "dt_s", "qfrc_applied", "xfrc_applied"),
                     static_argnames=("n_steps", "integrator"))
def rollout(model: Model, q0, qd0, ctrl, dt_s, n_steps: int, integrator: Integrator | str,
            qfrc_applied=None, xfrc_applied=None):
    """(q (n_steps+1, n_q), qd (n_steps+1, n_v)) from (q0, qd0); ctrl (n_u,) or (n_steps, n_u);
    applied forces as in `step_inputs` (None: nothing applied); integrator an `Integrator` or
    its name (ValueError naming the choices otherwise)."""
    step = STEPS[as_integrator(integrator)]
    q0, qd0, ctrl, qfrc_applied, xfrc_applied = rollout_arguments(
        "rollout", model, n_steps, q0, qd0, ctrl, qfrc_applied, xfrc_applied, dt_s=dt_s)
    per_step, held = step_inputs(model, n_steps, ctrl, qfrc_applied, xfrc_applied)

    # Rematerialised step: reverse mode keeps only each step's (q, qd) and recomputes the step's
    # intermediates while going back, instead of stacking them all (forward unchanged). The
    # backward loop then touches few, small buffers (see _SEQUENTIAL_BUFFER_BYTES): measured
    # 1.1-3x faster gradients of 1000-step rollouts (docs/engine.md, "Performance").
    @functools.partial(jax.checkpoint, prevent_cse=False)
    def body(state, x):
        u, qfrc, xfrc = held(x)
        q, qd = step(model, *state, u, dt_s, qfrc, xfrc)
        return (q, qd), (q, qd)

    qs, qds = _chunked_scan(body, (q0, qd0), per_step, _chunk_length(model, n_steps))
    return jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds])


def as_integrator(integrator) -> Integrator:
    """An `Integrator` from itself or its name, or ValueError naming the choices."""
    try:
        return Integrator(integrator)
    except ValueError:
        raise ValueError(f"integrator {integrator!r}: expected one of "
                         f"{[i.value for i in Integrator]}") from None


#: XLA's CPU runtime runs a loop body's kernels one after another in the calling thread only
#: when every buffer they touch is at most this many bytes (ThunkExecutor's
#: execute_sequential_buffer_threshold); otherwise it hands ready kernels to its thread pool,
#: which for the tiny kernels of one step costs more than the kernels themselves.
_SEQUENTIAL_BUFFER_BYTES = 512


def _chunk_length(model: Model, n_steps: int) -> int:
    """Steps per inner scan: the largest divisor of n_steps whose stacked (q, qd) rows stay
    small buffers (a divisor, so that the step is compiled once; 1 = a plain scan)."""
    row_bytes = 8 * max(model.n_q, model.n_v, 1)
    most = max(1, min(n_steps, _SEQUENTIAL_BUFFER_BYTES // row_bytes))
    return next(k for k in range(most, 0, -1) if n_steps % k == 0)


def _chunked_scan(body, init, xs, chunk: int):
    """`lax.scan(body, init, xs)[1]` computed as an outer scan over chunks of `chunk` steps
    (`chunk` divides the length): the same steps in the same order, but the per-step outputs
    are written into (chunk, ...) buffers inside the hot loop and copied out once per chunk."""
    n = jax.tree_util.tree_leaves(xs)[0].shape[0]
    if chunk <= 1 or n % chunk:
        return jax.lax.scan(body, init, xs)[1]

    def outer(c, x):
        return jax.lax.scan(body, c, x)

    chunks = jax.tree_util.tree_map(lambda x: x.reshape((n // chunk, chunk) + x.shape[1:]), xs)
    _, ys = jax.lax.scan(outer, init, chunks)
    return jax.tree_util.tree_map(lambda y: y.reshape((-1,) + y.shape[2:]), ys)


#: A state entry above this magnitude counts as diverged: MuJoCo's mjMAXVAL (1e10), the bound of
#: mj_checkPos, mj_checkVel and mj_checkAcc (and NaN or inf, which fail any comparison).
DIVERGED_ABOVE = 1e10


def diverged_rows(x) -> jax.Array:
    """(n,) bool: the rows of x (n, ...) with an entry that is not finite or exceeds
    `DIVERGED_ABOVE` in magnitude (traceable; NumPy arrays in, NumPy out)."""
    xp = jnp if isinstance(x, jax.Array) else np
    x = xp.asarray(x).reshape(x.shape[0], -1)
    return ~xp.all(xp.abs(x) <= DIVERGED_ABOVE, axis=1)


def rollout_status(q: jax.Array, qd: jax.Array) -> jax.Array:
    """Index of the first row of (q, qd) that diverged (`diverged_rows`), or -1 (traceable)."""
    bad = diverged_rows(q) | diverged_rows(qd)
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1)


def simulate(model: Model, q0, qd0, ctrl, duration_s: float, dt_s: float,
             integrator: Integrator | str = Integrator.RK4, *, qfrc_applied=None,
             xfrc_applied=None):
    """Fixed-step rollout. Returns (q (n+1, n_q), qd (n+1, n_v), t (n+1,)), n = duration/dt.

    ctrl: constant (n_u,) or per step (n, n_u), the control held over each step.
    qfrc_applied: None, constant (n_v,) or per step (n, n_v); xfrc_applied: None, constant
    (n_body, 6) or per step (n, n_body, 6), world force then torque at each body's COM
    (MuJoCo's applied forces, held over each step as mj_step holds them).
    integrator: an `Integrator` or its name ("explicit_euler", "semi_implicit_euler", "euler"
    (MuJoCo's default Euler, dof damping implicit), "rk4", "bdf1", "sdirk2"; the implicit
    ones go through `simulate_implicit` with default Newton
    settings). Raises FloatingPointError naming the first step whose state diverged
    (`diverged_rows`), or
    NewtonConvergenceError naming the first step whose Newton solve failed (when not traced).
    """
    require_dynamics_support(model_of("simulate", model))
    integrator = as_integrator(integrator)
    if integrator in (Integrator.BDF1, Integrator.SDIRK2):
        from myotwin.engine.implicit import simulate_implicit

        return simulate_implicit(model, q0, qd0, ctrl, duration_s, dt_s, integrator,
                                 qfrc_applied=qfrc_applied, xfrc_applied=xfrc_applied)
    n = n_steps_for(duration_s, dt_s)
    dt_s = float(dt_s)
    q0, qd0, ctrl, qfrc_applied, xfrc_applied = simulation_inputs(
        "simulate", q0, qd0, ctrl, qfrc_applied, xfrc_applied)   # shapes: checked by `rollout`
    q, qd = rollout(model, q0, qd0, ctrl, dt_s, n, integrator, qfrc_applied, xfrc_applied)
    t = jnp.arange(n + 1) * dt_s
    if not isinstance(q, jax.core.Tracer) and not isinstance(qd, jax.core.Tracer):
        first = int(rollout_status(q, qd))
        if first >= 0:
            raise FloatingPointError(
                f"simulation diverged: the state is not finite or exceeds {DIVERGED_ABOVE:g} at "
                f"step {first} (t = {first * dt_s:g} s) "
                f"with integrator {integrator.value!r} and dt_s={dt_s:g}; reduce dt_s or use a "
                "more stable integrator")
    return q, qd, t
