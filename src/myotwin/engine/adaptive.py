"""Error-controlled explicit Runge-Kutta integration: Dormand-Prince 5(4), in JAX.

`dormand_prince(rhs, y0, t0_s, t_out_s, rtol=..., atol=...)` integrates dy/dt = rhs(t, y, args)
from t0_s to each output time of t_out_s (s) and returns the state there (`AdaptiveResult`).
The state is any pytree of float arrays (a vector space: leaves are raveled into one float64
vector with `jax.flatten_util.ravel_pytree`); the function is jittable, with the tolerances,
times and `args` traced or concrete.

Method: the Dormand-Prince pair RK5(4)7M (J. R. Dormand, P. J. Prince, J. Comput. Appl. Math.
6(1), 1980; Hairer, Norsett & Wanner, Solving ODEs I, Sec. II.5), the RK45 of MATLAB's ode45
and SciPy's `solve_ivp`: 7 stages, first same as last (FSAL: the 7th stage, rhs at the new
state, is the next step's first, so an accepted step costs 6 new evaluations), the step taken
with the 5th-order weights, the error estimated against the embedded 4th-order ones. The
stages run in one `lax.fori_loop` inside one `lax.while_loop` of attempts over all output
times; rhs(t0, y0) and the initial step's trial evaluation are two more rows of the same
tableau, evaluated by the loop's first iterations, so rhs is traced once (a large right-hand
side, a musculoskeletal model, compiles once, not three times).

Controller: exactly SciPy's RK45 (scipy/integrate/_ivp/rk.py, common.py), with the same
tableau. err = RMS of (h E.K) / (atol + max(|y|, |y_new|) rtol); accept if err < 1, then
h <- h min(10, 0.9 err^(-1/5)) (10 if err = 0; the factor capped at 1 if this step had a
rejection); else h <- h max(0.2, 0.9 err^(-1/5)). At the start of a step the proposal is
raised to the minimum step max(h_min_s, 10 spacing(t)); a rejection that takes it below that
stops with STEP_UNDERFLOW. The initial step (h0_s None) is SciPy's `select_initial_step`
(Hairer et al., II.4) over the whole interval [t0_s, last output time]. A step is clipped to
land exactly on the next output time (t = t_out_s[k] bit for bit) or breakpoint (a time
where rhs is continuous but not smooth, e.g. the rows of a piecewise-linear input: no step
straddles one, so every step integrates a smooth rhs; an input ramping within 1e-12 s costs
one short step instead of an error the embedded estimate underweights: that step's first
stage, reused from the previous step, holds the input's value before the ramp, and its
weight in the error estimate is 1/74 of its weight in the solution). A jump in rhs needs
rhs(t_b) to be the value after it and is not what breakpoints are for (the step ending at
t_b sees that value in its error estimate). Where this differs from SciPy (whose only clip is its end time):
after a clipped accepted step the next proposal is the larger of the controller's
h_clipped * factor and the unclipped proposal, so output times do not shorten later steps. Hence with t_out_s = [T] the steps, the state and the counts are
SciPy's `solve_ivp(method="RK45", first_step=h0_s)` up to roundoff; only `h_next_s` may differ.

A non-finite error estimate (a NaN or inf from rhs) rejects the step and shrinks it by 0.2.
Status (`AdaptiveStatus`): OK; MAX_STEPS (max_steps attempts, accepted and rejected, made);
STEP_UNDERFLOW (see above: also how a solution blowing up in finite time ends); NONFINITE (an
accepted state is not finite, e.g. overflow). On failure the integration stops: output rows
from the first time not reached on are NaN, `n_done` counts those reached, `t_s` and `y_last`
are the last accepted time and state.

Differentiation: forward mode (`jax.jvp`, `jax.jacfwd`) works and differentiates the steps
actually taken, their sizes not depending on the state (the step sizes are under
`lax.stop_gradient`), i.e. the derivative of the discrete map, which approximates the true
sensitivity to the tolerance. Reverse mode (`jax.grad`, `jax.vjp`) does not: JAX cannot
transpose a `lax.while_loop` and raises its ValueError ("Reverse-mode differentiation does
not work for lax.while_loop ..."); use `jax.jacfwd` for gradients of few inputs.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

# Dormand-Prince tableau as in SciPy's RK45; row 6 of A holds the 5th-order weights B, so
# stage 6 is the new state and its derivative is the FSAL stage.
_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
_B = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
_A = np.zeros((7, 7))
_A[1, :1] = [1 / 5]
_A[2, :2] = [3 / 40, 9 / 40]
_A[3, :3] = [44 / 45, -56 / 15, 32 / 9]
_A[4, :4] = [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]
_A[5, :5] = [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]
_A[6, :6] = _B
# Two more rows used before the first step (one compiled rhs for everything): row 0 alone
# evaluates rhs(t0, y0); row _TRIAL, y0 + h f0 at t0 + h, is the initial step's trial.
_ROWS, _TRIAL = 8, 7
_A_ALL = np.zeros((_ROWS, _ROWS))
_A_ALL[:7, :7] = _A
_A_ALL[_TRIAL, 0] = 1.0
_C_ALL = np.append(_C, 1.0)
_E = np.array([-71 / 57600, 0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])

SAFETY = 0.9  # multiplies the asymptotic step factor (SciPy's SAFETY)
MIN_FACTOR = 0.2  # smallest step factor (SciPy's MIN_FACTOR)
MAX_FACTOR = 10.0  # largest step factor (SciPy's MAX_FACTOR)
ERROR_EXPONENT = -1 / 5  # -1 / (error estimator order 4 + 1)


class AdaptiveStatus(enum.IntEnum):
    """How `dormand_prince` ended (module docstring)."""

    OK = 0
    MAX_STEPS = 1
    STEP_UNDERFLOW = 2
    NONFINITE = 3


class AdaptiveResult(NamedTuple):
    """ys: the state at each output time, every leaf with a leading (n_out,) axis (NaN rows
    from the first output not reached on); n_done: outputs reached (n_out if OK); status: an
    AdaptiveStatus; t_s: time of the last accepted step's end; y_last: the state there;
    h_next_s: the controller's next step (pass as h0_s to continue); n_accepted, n_rejected:
    steps over all outputs."""

    ys: Any
    n_done: jax.Array
    status: jax.Array
    t_s: jax.Array
    y_last: Any
    h_next_s: jax.Array
    n_accepted: jax.Array
    n_rejected: jax.Array


class _Carry(NamedTuple):
    phase: jax.Array  # 0: rhs(t0, y0) next; 1: the initial step's trial next; 2: stepping
    k: jax.Array  # next output index
    t: jax.Array
    y: jax.Array
    f: jax.Array  # rhs(t, y): the FSAL stage
    h: jax.Array  # the controller's proposal
    rejected: jax.Array  # the current step had a rejection
    n_acc: jax.Array
    n_rej: jax.Array
    status: jax.Array
    ys: jax.Array  # (n_out, n)


def _rms(x: jax.Array) -> jax.Array:
    return jnp.linalg.norm(x) / np.sqrt(max(x.size, 1))


def check_times(t0_s, t_out_s) -> None:
    """ValueError unless t0_s is a scalar and t_out_s a non-empty 1-D array, and, when both
    are concrete, t_out_s finite and strictly increasing after a finite t0_s."""
    if jnp.ndim(t0_s) != 0 or jnp.ndim(t_out_s) != 1 or jnp.shape(t_out_s)[0] == 0:
        raise ValueError(f"t0_s must be a scalar and t_out_s a non-empty 1-D array; got shapes "
                         f"{jnp.shape(t0_s)} and {jnp.shape(t_out_s)}")
    if isinstance(t0_s, jax.core.Tracer) or isinstance(t_out_s, jax.core.Tracer):
        return
    t0, t_out = float(t0_s), np.asarray(t_out_s, dtype=np.float64)
    if not (np.all(np.isfinite(t_out)) and np.isfinite(t0) and t_out[0] > t0
            and np.all(np.diff(t_out) > 0)):
        raise ValueError(f"t_out_s must be finite, strictly increasing and after t0_s = {t0}; "
                         f"got t_out_s = {t_out}")


def dormand_prince(rhs: Callable, y0, t0_s, t_out_s, *, rtol, atol, args=None, h0_s=None,
                   max_steps: int = 1_000_000, h_min_s=0.0, n_used=None,
                   breakpoints_s=None) -> AdaptiveResult:
    """Integrate dy/dt = rhs(t, y, args) from (t0_s, y0) to each time of t_out_s (module
    docstring). rtol, atol: scalars (or arrays broadcasting to the raveled state). h0_s: the
    first step (s); None, NaN or <= 0 selects it as SciPy does. n_used
    (int, may be traced): integrate to the first n_used output times only (the rest stay NaN;
    one compiled shape for output chunks of different lengths); None: all. breakpoints_s
    (m,) increasing: times where rhs is continuous but not smooth (kinks of a piecewise-linear
    input); steps end on them as on output times, so that no step straddles one. Raises
    ValueError for concrete output times that are not strictly increasing after t0_s, and
    RuntimeError if JAX's float64 mode is off."""
    if not jax.config.jax_enable_x64:
        raise RuntimeError('dormand_prince needs float64: call jax.config.update('
                           '"jax_enable_x64", True) (or myotwin.configure_jax()) first')
    check_times(t0_s, t_out_s)
    f64 = jnp.float64
    y0 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, f64), y0)
    y0_flat, unravel = ravel_pytree(y0)
    n, structure = y0_flat.size, jax.tree_util.tree_structure(y0)
    t0 = jnp.asarray(t0_s, f64)
    t_out = jnp.asarray(t_out_s, f64)
    rtol, atol = jnp.asarray(rtol, f64), jnp.asarray(atol, f64)

    def rhs_flat(t, y_flat):
        dy = rhs(t, unravel(y_flat), args)
        if jax.tree_util.tree_structure(dy) != structure:
            raise ValueError(f"rhs returned a {jax.tree_util.tree_structure(dy)}, the state "
                             f"is a {structure}")
        dy_flat = ravel_pytree(dy)[0].astype(f64)
        if dy_flat.shape != (n,):
            raise ValueError(f"rhs returned {dy_flat.shape[0]} numbers for {n} states")
        return dy_flat

    a, c, e = jnp.asarray(_A_ALL), jnp.asarray(_C_ALL), jnp.asarray(_E)
    n_out = t_out.shape[0]
    i32 = jnp.int32
    given_h0 = jnp.nan if h0_s is None else jnp.asarray(h0_s, f64)
    breaks = None if breakpoints_s is None else jnp.append(
        jnp.asarray(breakpoints_s, f64).reshape(-1), jnp.inf)   # inf: none left
    last = n_out if n_used is None else jnp.clip(jnp.asarray(n_used, i32), 0, n_out)

    def stages(t, y, f, h, lo, hi):
        """Rows lo..hi-1 of the extended tableau from (t, y) with K[0] = f: (K, y_(hi-1))."""
        def stage(i, carry):
            ks, _ = carry
            y_i = y + (a[i] @ ks) * h
            return ks.at[i].set(rhs_flat(t + c[i] * h, y_i)), y_i

        ks0 = jnp.zeros((_ROWS, n), f64).at[0].set(f)
        return lax.fori_loop(lo, hi, stage, (ks0, y))

    def attempt(s: _Carry) -> _Carry:
        # the phase picks the tableau rows: 0 evaluates rhs(t0, y0), 1 the initial step's
        # trial rhs(t0 + h0, y0 + h0 f0), 2 a Dormand-Prince step (stages 1..6)
        lo = jnp.where(s.phase == 0, 0, jnp.where(s.phase == 1, _TRIAL, 1))
        stepping = s.phase == 2
        output = t_out[s.k]
        target = output if breaks is None else jnp.minimum(
            output, breaks[jnp.searchsorted(breaks, s.t, side="right")])
        min_step = jnp.maximum(h_min_s, 10 * (jnp.nextafter(s.t, jnp.inf) - s.t))
        h_try = jnp.where(s.rejected, s.h, jnp.maximum(s.h, min_step))
        status = jnp.where(s.n_acc + s.n_rej >= max_steps, AdaptiveStatus.MAX_STEPS,
                           jnp.where(h_try < min_step, AdaptiveStatus.STEP_UNDERFLOW,
                                     AdaptiveStatus.OK)).astype(i32)
        clipped = s.t + h_try > target
        t_new = jnp.where(clipped, target, s.t + h_try)
        h = jnp.where(stepping, t_new - s.t, s.h)  # as SciPy: the step actually taken
        ks, y_new = stages(s.t, s.y, s.f, h, lo, jnp.where(stepping, 7, lo + 1))
        # the phases before the first step (SciPy's select_initial_step, Hairer et al. II.4)
        scale0 = atol + jnp.abs(s.y) * rtol
        d0, d1 = _rms(s.y / scale0), _rms(ks[0] / scale0)
        small = (d0 < 1e-5) | (d1 < 1e-5)
        interval = t_out[jnp.maximum(last - 1, 0)] - s.t
        guess = jnp.minimum(jnp.where(small, 1e-6, 0.01 * d0 / jnp.where(small, 1.0, d1)),
                            interval)
        d2 = _rms((ks[_TRIAL] - s.f) / scale0) / s.h
        flat = (d1 <= 1e-15) & (d2 <= 1e-15)
        h1 = jnp.where(flat, jnp.maximum(1e-6, s.h * 1e-3),
                       (0.01 / jnp.where(flat, 1.0, jnp.maximum(d1, d2))) ** (1 / 5))
        selected = jnp.minimum(jnp.minimum(100 * s.h, h1), interval)
        h_start = jnp.where(given_h0 > 0, given_h0, guess)
        # a Dormand-Prince attempt
        scale = atol + jnp.maximum(jnp.abs(s.y), jnp.abs(y_new)) * rtol
        err = lax.stop_gradient(_rms((e @ ks[:7]) * h / scale))
        accept = err < 1  # False for NaN
        power = SAFETY * jnp.where(err > 0, err, 1.0) ** ERROR_EXPONENT
        grow = jnp.where(err == 0, MAX_FACTOR, jnp.minimum(MAX_FACTOR, power))
        grow = jnp.where(s.rejected, jnp.minimum(1.0, grow), grow)
        h_grown = jnp.where(clipped, jnp.maximum(h * grow, h_try), h * grow)
        shrink = jnp.where(jnp.isfinite(err), jnp.maximum(MIN_FACTOR, power), MIN_FACTOR)
        go = stepping & (status == AdaptiveStatus.OK)
        finite = jnp.all(jnp.isfinite(y_new))
        status = jnp.where(go & accept & ~finite, AdaptiveStatus.NONFINITE, status).astype(i32)
        take = go & accept & finite
        landed = take & (t_new == output)
        row = jnp.where(landed, y_new, s.ys[s.k])
        h_next = jnp.where(go, jnp.where(accept, h_grown, h * shrink), s.h)
        h_next = lax.stop_gradient(jnp.where(s.phase == 0, h_start,
                                             jnp.where(s.phase == 1, selected, h_next)))
        phase = jnp.where(s.phase == 0, jnp.where(given_h0 > 0, 2, 1), 2).astype(i32)
        return _Carry(
            phase=phase,
            k=s.k + landed.astype(i32),
            t=jnp.where(take, t_new, s.t),
            y=jnp.where(take, y_new, s.y),
            f=jnp.where(s.phase == 0, ks[0], jnp.where(take, ks[6], s.f)),
            h=h_next,
            rejected=jnp.where(go, ~accept, s.rejected),
            n_acc=s.n_acc + take.astype(i32),
            n_rej=s.n_rej + (go & ~accept).astype(i32),
            status=jnp.where(stepping, status, s.status).astype(i32),
            ys=s.ys.at[s.k].set(row),
        )

    def running(s: _Carry) -> jax.Array:
        return (s.status == AdaptiveStatus.OK) & (s.k < last)

    zero = jnp.zeros((), i32)
    init = _Carry(phase=zero, k=zero, t=t0, y=y0_flat, f=jnp.zeros(n, f64),
                  h=jnp.zeros((), f64),
                  rejected=jnp.zeros((), bool), n_acc=zero, n_rej=zero,
                  status=jnp.asarray(AdaptiveStatus.OK, i32),
                  ys=jnp.full((n_out, n), jnp.nan, f64))
    s = lax.while_loop(running, attempt, init)
    return AdaptiveResult(ys=jax.vmap(unravel)(s.ys), n_done=s.k, status=s.status, t_s=s.t,
                          y_last=unravel(s.y), h_next_s=s.h, n_accepted=s.n_acc,
                          n_rejected=s.n_rej)
