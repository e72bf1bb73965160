"""Fixed-step rollouts with `jax.lax.scan`: `simulate(model, q0, qd0, ctrl, duration_s, dt_s)`.

The scan body is one integrator step (integrators.py); the whole rollout is differentiable
with `jax.grad` (reverse mode through the scan) w.r.t. q0, qd0, ctrl and model leaves.
Divergence: a non-finite state raises FloatingPointError naming the first bad step when the
result is concrete (outside `jit`/`grad` tracing); inside a trace use `rollout_status`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from myotwin.engine.integrators import STEPS, Integrator
from myotwin.engine.model import Model, require_dynamics_support


def n_steps_for(duration_s: float, dt_s: float) -> int:
    """Number of steps of size dt_s covering duration_s (must be a whole number, to 1e-9)."""
    n = round(duration_s / dt_s)
    if n < 1 or abs(n * dt_s - duration_s) > 1e-9 * max(duration_s, 1.0):
        raise ValueError(f"duration_s={duration_s!r} is not a positive multiple of dt_s={dt_s!r}")
    return int(n)


@functools.partial(jax.jit, static_argnames=("n_steps", "integrator"))
def rollout(model: Model, q0, qd0, ctrl, dt_s, n_steps: int, integrator: Integrator):
    """(q (n_steps+1, n_q), qd (n_steps+1, n_v)) from (q0, qd0); ctrl (n_u,) or (n_steps, n_u)."""
    step = STEPS[integrator]
    ctrl = jnp.asarray(ctrl, dtype=jnp.result_type(float))
    per_step = ctrl if ctrl.ndim == 2 else jnp.broadcast_to(ctrl, (n_steps, model.n_u))

    def body(state, u):
        q, qd = step(model, *state, u, dt_s)
        return (q, qd), (q, qd)

    qs, qds = _chunked_scan(body, (q0, qd0), per_step, _chunk_length(model, n_steps))
    return jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds])


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
    n = xs.shape[0]
    if chunk <= 1 or n % chunk:
        return jax.lax.scan(body, init, xs)[1]

    def outer(c, x):
        return jax.lax.scan(body, c, x)

    _, ys = jax.lax.scan(outer, init, xs.reshape((n // chunk, chunk) + xs.shape[1:]))
    return jax.tree_util.tree_map(lambda y: y.reshape((-1,) + y.shape[2:]), ys)


def rollout_status(q: jax.Array, qd: jax.Array) -> jax.Array:
    """Index of the first row of (q, qd) with a non-finite entry, or -1 (traceable)."""
    bad = ~(jnp.all(jnp.isfinite(q), axis=1) & jnp.all(jnp.isfinite(qd), axis=1))
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1)


def simulate(model: Model, q0, qd0, ctrl, duration_s: float, dt_s: float,
             integrator: Integrator | str = Integrator.RK4):
    """Fixed-step rollout. Returns (q (n+1, n_q), qd (n+1, n_v), t (n+1,)), n = duration/dt.

    ctrl: constant (n_u,) or per step (n, n_u), the control held over each step.
    integrator: an `Integrator` or its name ("explicit_euler", "semi_implicit_euler", "rk4",
    "bdf1", "sdirk2"; the implicit ones go through `simulate_implicit` with default Newton
    settings). Raises FloatingPointError naming the first step whose state is not finite, or
    NewtonConvergenceError naming the first step whose Newton solve failed (when not traced).
    """
    require_dynamics_support(model)
    integrator = Integrator(integrator)
    if integrator in (Integrator.BDF1, Integrator.SDIRK2):
        from myotwin.engine.implicit import simulate_implicit

        return simulate_implicit(model, q0, qd0, ctrl, duration_s, dt_s, integrator)
    n = n_steps_for(duration_s, dt_s)
    ctrl = jnp.asarray(ctrl, dtype=jnp.result_type(float))
    expected = ((model.n_u,), (n, model.n_u))
    if ctrl.shape not in expected:
        raise ValueError(f"ctrl has shape {ctrl.shape}, expected {expected[0]} or {expected[1]}")
    q0 = jnp.asarray(q0, dtype=jnp.result_type(float))
    qd0 = jnp.asarray(qd0, dtype=jnp.result_type(float))
    q, qd = rollout(model, q0, qd0, ctrl, dt_s, n, integrator)
    t = jnp.arange(n + 1) * dt_s
    if not isinstance(q, jax.core.Tracer) and not isinstance(qd, jax.core.Tracer):
        first = int(rollout_status(q, qd))
        if first >= 0:
            raise FloatingPointError(
                f"simulation diverged: non-finite state at step {first} (t = {first * dt_s:g} s) "
                f"with integrator {integrator.value!r} and dt_s={dt_s:g}; reduce dt_s or use a "
                "more stable integrator")
    return q, qd, t
