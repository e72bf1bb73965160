"""Implicit integrators BDF1 (implicit Euler) and SDIRK2 on the configuration manifold.

First-order system x = (q, qd), qdd = f(q, qd, ctrl) (`forward_dynamics`). The unknowns are
velocities (n_v,), never positions, so positions only move through `integrate_pos` and
quaternions stay unit.

  BDF1:   solve  r(v) = v - qd0 - h f(q0 (+) h v, v) = 0,   then q1 = q0 (+) h v, qd1 = v.
  SDIRK2: two-stage, L-stable, stiffly accurate SDIRK with gamma = 1 - 1/sqrt(2)
          (R. Alexander, "Diagonally implicit Runge-Kutta methods for stiff ODEs",
          SIAM J. Numer. Anal. 14(6), 1977; Hairer & Wanner, Solving ODEs II, Sec. IV.6):
              c = (gamma, 1),  A = [[gamma, 0], [1 - gamma, gamma]],  b = (1 - gamma, gamma).
          Stage i solves for its velocity V_i with the stage position
          Q_i = q0 (+) h sum_j a_ij V_j (formed from the step's start, as in rk4_step):
              V_1 = qd0 + h gamma f(Q_1, V_1)
              V_2 = qd0 + h ((1 - gamma) f(Q_1, V_1) + gamma f(Q_2, V_2))
          and, stiffly accurate, (q1, qd1) = (Q_2, V_2).                           order 2

Each nonlinear solve is Newton with the Jacobian from `jax.jacfwd` inside a `lax.while_loop`
(at most `max_iter` iterations, stop when ||r||_inf <= tol (1 + ||v||_inf)). Gradients use the
implicit-function theorem through `jax.lax.custom_root` (one linear solve with dr/dv at the
root), not the Newton iterations. Non-convergence is reported as a `NewtonStatus`:
`implicit_rollout` returns it per step and `simulate_implicit` raises `NewtonConvergenceError`
naming the step; the plain `*_step` functions (used by `simulate`) return a NaN state instead,
which `simulate` reports as a non-finite state at that step.
Applied forces (qfrc_applied (n_v,), xfrc_applied (n_body, 6); optional keywords) do not depend
on the state: they are held over the step and enter every f evaluation of the residuals.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.engine.arguments import jit_naming_refusals
from myotwin.engine.dynamics import forward_dynamics
from myotwin.engine.integrators import Integrator, integrate_pos
from myotwin.engine.model import Model

#: Defaults of the Newton solve: iteration cap and scaled residual tolerance.
NEWTON_MAX_ITER = 20
NEWTON_TOL = 1e-12

#: SDIRK2 diagonal coefficient (Alexander 1977); the method is L-stable for this root.
SDIRK2_GAMMA = 1.0 - 1.0 / math.sqrt(2.0)


class NewtonStatus(NamedTuple):
    """Outcome of the Newton solve(s) of one step (all traceable arrays)."""

    converged: jax.Array  # bool: every solve of the step met the tolerance
    n_iter: jax.Array  # int: Newton iterations summed over the step's solves
    residual: jax.Array  # float: largest final scaled residual ||r||_inf / (1 + ||v||_inf)


class NewtonConvergenceError(RuntimeError):
    """An implicit step's Newton iteration did not reach the tolerance."""


def _scaled_norm(r, v):
    return jnp.max(jnp.abs(r), initial=0.0) / (1.0 + jnp.max(jnp.abs(v), initial=0.0))


def _newton(residual, v0, max_iter, tol):
    """Newton on residual(v) = 0 from v0; returns (v, NewtonStatus)."""

    def cond(carry):
        v, r, k = carry
        return (k < max_iter) & ~(_scaled_norm(r, v) <= tol)  # NaN keeps iterating to the cap

    def body(carry):
        v, r, k = carry
        v = v - jnp.linalg.solve(jax.jacfwd(residual)(v), r)
        return v, residual(v), k + 1

    v, r, k = jax.lax.while_loop(cond, body, (v0, residual(v0), jnp.asarray(0)))
    err = _scaled_norm(r, v)
    return v, NewtonStatus(err <= tol, k, err)


def _solve(residual, v0, max_iter, tol):
    """Root of residual near v0, differentiated by the implicit-function theorem.

    custom_root's JVP rule gives aux outputs float tangents, so the status crosses it as
    floats and is converted back here."""

    def solve(f, x0):
        v, status = _newton(f, x0, max_iter, tol)
        return v, jnp.stack([status.converged, status.n_iter, status.residual]).astype(v.dtype)

    v, aux = jax.lax.custom_root(
        residual, v0, solve,
        tangent_solve=lambda g, y: jnp.linalg.solve(jax.jacfwd(g)(y), y),
        has_aux=True)
    aux = jax.lax.stop_gradient(aux)
    return v, NewtonStatus(aux[0] > 0.5, aux[1].astype(int), aux[2])


def bdf1_solve(model: Model, q, qd, ctrl, dt, max_iter=NEWTON_MAX_ITER, tol=NEWTON_TOL, *,
               qfrc_applied=None, xfrc_applied=None):
    """One implicit-Euler step; returns (q', qd', NewtonStatus)."""
    f = functools.partial(forward_dynamics, model, ctrl=ctrl, qfrc_applied=qfrc_applied,
                          xfrc_applied=xfrc_applied)

    def residual(v):
        return v - qd - dt * f(integrate_pos(model, q, v, dt), v)

    v, status = _solve(residual, qd, max_iter, tol)
    return integrate_pos(model, q, v, dt), v, status


def sdirk2_solve(model: Model, q, qd, ctrl, dt, max_iter=NEWTON_MAX_ITER, tol=NEWTON_TOL, *,
                 qfrc_applied=None, xfrc_applied=None):
    """One SDIRK2 step (Alexander 1977, gamma = 1 - 1/sqrt 2); returns (q', qd', NewtonStatus)."""
    g = SDIRK2_GAMMA
    f = functools.partial(forward_dynamics, model, ctrl=ctrl, qfrc_applied=qfrc_applied,
                          xfrc_applied=xfrc_applied)

    def stage1(v):
        return v - qd - g * dt * f(integrate_pos(model, q, v, g * dt), v)

    v1, s1 = _solve(stage1, qd, max_iter, tol)
    a1 = f(integrate_pos(model, q, v1, g * dt), v1)

    def stage2(v):
        q2 = integrate_pos(model, q, (1.0 - g) * v1 + g * v, dt)
        return v - qd - dt * ((1.0 - g) * a1 + g * f(q2, v))

    v2, s2 = _solve(stage2, v1, max_iter, tol)
    status = NewtonStatus(s1.converged & s2.converged, s1.n_iter + s2.n_iter,
                          jnp.maximum(s1.residual, s2.residual))
    return integrate_pos(model, q, (1.0 - g) * v1 + g * v2, dt), v2, status


SOLVES = {Integrator.BDF1: bdf1_solve, Integrator.SDIRK2: sdirk2_solve}


def _nan_unless(converged, x):
    return jnp.where(converged, x, jnp.nan)


def bdf1_step(model: Model, q, qd, ctrl, dt, qfrc_applied=None, xfrc_applied=None):
    """BDF1 step with default Newton settings; a NaN state if Newton did not converge."""
    q1, qd1, status = bdf1_solve(model, q, qd, ctrl, dt, qfrc_applied=qfrc_applied,
                                 xfrc_applied=xfrc_applied)
    return _nan_unless(status.converged, q1), _nan_unless(status.converged, qd1)


def sdirk2_step(model: Model, q, qd, ctrl, dt, qfrc_applied=None, xfrc_applied=None):
    """SDIRK2 step with default Newton settings; a NaN state if Newton did not converge."""
    q1, qd1, status = sdirk2_solve(model, q, qd, ctrl, dt, qfrc_applied=qfrc_applied,
                                   xfrc_applied=xfrc_applied)
    return _nan_unless(status.converged, q1), _nan_unless(status.converged, qd1)


def as_implicit(integrator) -> Integrator:
    """An implicit `Integrator` (BDF1, SDIRK2) from itself or its name, or ValueError naming
    the choices."""
    from myotwin.engine.simulate import as_integrator

    integrator = as_integrator(integrator)
    if integrator not in SOLVES:
        raise ValueError(f"integrator {integrator.value!r} is not implicit; "
                         f"expected one of {[i.value for i in SOLVES]}")
    return integrator


@jit_naming_refusals(("q0", "qd0", "ctrl", "dt_s", "max_iter", "tol", "qfrc_applied",
                      "xfrc_applied"), static_argnames=("n_steps", "integrator"))
def implicit_rollout(model: Model, q0, qd0, ctrl, dt_s, n_steps: int,
                     integrator: Integrator | str,
                     max_iter=NEWTON_MAX_ITER, tol=NEWTON_TOL, qfrc_applied=None,
                     xfrc_applied=None):
    """(q (n+1, n_q), qd (n+1, n_v), NewtonStatus with (n,) fields); ctrl (n_u,) or (n, n_u),
    qfrc_applied None, (n_v,) or (n, n_v), xfrc_applied None, (n_body, 6) or (n, n_body, 6).

    Unlike `rollout`, a step that does not converge returns Newton's last iterate; check
    `status.converged` (or use `simulate_implicit`)."""
    from myotwin.engine.arguments import rollout_arguments
    from myotwin.engine.simulate import step_inputs

    solve = SOLVES[as_implicit(integrator)]
    q0, qd0, ctrl, qfrc_applied, xfrc_applied = rollout_arguments(
        "implicit_rollout", model, n_steps, q0, qd0, ctrl, qfrc_applied, xfrc_applied,
        dt_s=dt_s, max_iter=max_iter, tol=tol)
    per_step, held = step_inputs(model, n_steps, ctrl, qfrc_applied, xfrc_applied)

    def body(state, xs):
        u, qfrc, xfrc = held(xs)
        q, qd, status = solve(model, *state, u, dt_s, max_iter, tol, qfrc_applied=qfrc,
                              xfrc_applied=xfrc)
        return (q, qd), (q, qd, status)

    _, (qs, qds, status) = jax.lax.scan(body, (q0, qd0), per_step)
    return jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds]), status


def simulate_implicit(model: Model, q0, qd0, ctrl, duration_s: float, dt_s: float,
                      integrator: Integrator | str = Integrator.BDF1,
                      max_iter: int = NEWTON_MAX_ITER, tol: float = NEWTON_TOL, *,
                      qfrc_applied=None, xfrc_applied=None):
    """`simulate` for BDF1/SDIRK2 with explicit Newton settings and convergence check.

    Returns (q (n+1, n_q), qd (n+1, n_v), t (n+1,)). When the result is concrete, raises
    NewtonConvergenceError naming the first step whose Newton solve missed the tolerance;
    inside jit/grad/vmap the rows from that step on are NaN (see `rollout_status`).
    qfrc_applied / xfrc_applied: as in `simulate`."""
    from myotwin.engine.arguments import model_of
    from myotwin.scalars import as_real, is_integer
    from myotwin.engine.model import require_dynamics_support
    from myotwin.engine.simulate import n_steps_for, simulation_inputs

    require_dynamics_support(model_of("simulate_implicit", model))
    integrator = as_implicit(integrator)
    if not is_integer(max_iter) or max_iter < 1:
        raise ValueError(f"simulate_implicit: max_iter must be an integer >= 1, got {max_iter!r}")
    tol_value = as_real(tol)
    if tol_value is None or not (math.isfinite(tol_value) and tol_value > 0.0):
        raise ValueError(f"simulate_implicit: tol must be a finite number > 0, got {tol!r}")
    tol = tol_value
    n = n_steps_for(duration_s, dt_s)
    dt_s = float(dt_s)
    q0, qd0, ctrl, qfrc_applied, xfrc_applied = simulation_inputs(
        "simulate_implicit", q0, qd0, ctrl, qfrc_applied, xfrc_applied)
    q, qd, status = implicit_rollout(model, q0, qd0, ctrl, dt_s, n, integrator, max_iter, tol,
                                     qfrc_applied, xfrc_applied)
    if isinstance(status.converged, jax.core.Tracer):
        # traced (jit/grad/vmap): no exception possible; rows from the first failure are NaN
        failed = jnp.concatenate([jnp.zeros(1, bool), jnp.cumsum(~status.converged) > 0])
        q = jnp.where(failed[:, None], jnp.nan, q)
        qd = jnp.where(failed[:, None], jnp.nan, qd)
    else:
        failed = ~status.converged
        if bool(jnp.any(failed)):
            k = int(jnp.argmax(failed))  # scan index k produces state row k + 1
            raise NewtonConvergenceError(
                f"Newton did not converge in step {k + 1} (t = {(k + 1) * dt_s:g} s) with "
                f"integrator {integrator.value!r}, dt_s={dt_s:g}: scaled residual "
                f"{float(status.residual[k]):.3e} > tol={tol:g} after {int(status.n_iter[k])} "
                f"iterations (max_iter={max_iter} per solve); reduce dt_s or raise max_iter")
    return q, qd, jnp.arange(n + 1) * dt_s
