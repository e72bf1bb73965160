"""Backward Euler and safeguarded Newton for one fiber, with or without cylinder contact.

Gfrerer & Simeon 2021, Sec. 4.2 (Eq. 64, backward Euler in (x, v)) and Sec. 4.4 (Eqs. 69-73,
safeguarded Newton). Each step solves r(q) = 0 of `assembly.step_system` by Newton:

  dq = -K^{-1} r   (banded LU, scipy.linalg.solve_banded: LAPACK gbsv, O(n_el) per solve)
  q  <- q + delta dq,   delta = min(delta_contact, delta_stretch) / 2^k in (0, 1]    (Eq. 69)

delta_contact keeps every contact gap admissible (`contact_cylinder.safeguard_fraction`,
Eqs. 70-73) and delta_stretch -- our addition, the same idea for the stretch -- keeps the
lower bound |a_1| - delta |d a_1| of every stretch above delta_bar |a_1| (the radius
r_0 sqrt(|A_1|/|a_1|) and the lambda^-3 terms blow up as lambda -> 0). k >= 0 halvings follow
(backtracking line search on ||r||_2, Armijo constant 1e-4, at most `max_backtrack`; our
addition, the seed is silent): a cable without tension has no transverse stiffness, and the
first Newton step from a slack or straight state overshoots by orders of magnitude. The first
iterate is the constant-velocity predictor q^n + dt v^n, scaled by the same safeguard.

Convergence: ||r_free||_inf <= rtol * force_scale, where force_scale is the largest entry of
the unassembled element forces (inertia, internal, contact, external), so rtol measures the
residual against the forces that cancel in it; or a full Newton step below xtol (1 + ||q||_inf)
(the residual of a stiff fiber has a round-off floor of about stiffness x 1e-16 m).
Failures raise, naming time, fiber and element:
  FiberNewtonError         no convergence within max_iter (or a singular tangent);
  FiberDivergenceError     a non-finite residual or update (no NaN escapes);
  InadmissibleContactError an iterate with a gap g <= -1/gamma (only without the safeguard,
                           or when the caller starts from such a state).
The Newton loop runs in Python/NumPy around the jitted `step_system`; it is not traced, so
gradients through a step are not available (later: implicit-function theorem, as the engine).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from myotwin.engine.arguments import check_step_count
from myotwin.fiber import hermite
from myotwin.fiber.assembly import step_system
from myotwin.fiber.cable import FiberModel, element_h, per_element
from myotwin.fiber.contact_cylinder import CylinderContact, bound_data, safeguard_fraction
from myotwin.scalars import as_real, is_integer, require_flag


class FiberNewtonError(RuntimeError):
    """Newton did not converge; `time_s`, `fiber`, `element`, `residual_N` name the failure."""

    def __init__(self, message, time_s, fiber, element, residual_N):
        super().__init__(message)
        self.time_s, self.fiber, self.element, self.residual_N = time_s, fiber, element, residual_N


class FiberDivergenceError(FloatingPointError):
    """A non-finite residual or Newton update."""


class InadmissibleContactError(RuntimeError):
    """A contact gap at or beyond -1/gamma (the rational penalty is undefined there)."""


class FiberState(NamedTuple):
    """Positions q (n_dof,) (m and m per theta) and velocities v (n_dof,) of one fiber."""

    q: jax.Array
    v: jax.Array


class FiberLoads(NamedTuple):
    """Inputs at the new time of a step.

    activation: alpha in [0, 1]; line_force (n_el, n_qp, 3): external line force per reference
    length (N/m) at the bulk quadrature points (`model.qp_theta`); fixed_values: values of the
    fixed dofs (len(model.fixed_dofs),) for prescribed end motion, or None to hold them.
    """

    activation: float
    line_force: jax.Array
    fixed_values: jax.Array | None = None


@dataclasses.dataclass(frozen=True)
class NewtonOptions:
    """max_iter: iteration cap; rtol: residual tolerance relative to the force scale;
    xtol: converged also when the full Newton step is below xtol (1 + ||q||_inf) (the
    residual of a stiff fiber has a round-off floor of stiffness x 1e-16 m); safeguard: scale
    steps (Eqs. 69-73); delta_bar: the factor of Eq. (71) in (0, 1); line_search: halve the
    (safeguarded) step up to max_backtrack times until ||r||_2 decreases (Armijo, c = 1e-4).
    Refused with a ValueError naming the field: max_iter not an integer >= 1, max_backtrack
    not an integer >= 0 (`is_integer`: 2.5 and True are no counts), rtol not a finite number
    > 0, xtol not a finite number >= 0, delta_bar not a number in (0, 1), safeguard or
    line_search not True or False."""

    max_iter: int = 30
    rtol: float = 1e-10
    xtol: float = 1e-10
    safeguard: bool = True
    delta_bar: float = 0.1
    line_search: bool = True
    max_backtrack: int = 12

    def __post_init__(self):
        for name, low in (("max_iter", 1), ("max_backtrack", 0)):
            value = getattr(self, name)
            if not is_integer(value) or value < low:
                raise ValueError(f"NewtonOptions: {name} must be an integer >= {low}, got "
                                 f"{value!r}")
        for name in ("safeguard", "line_search"):
            require_flag("NewtonOptions", name, getattr(self, name))
        for name, rule, ok in (("rtol", "finite and > 0", lambda x: x > 0),
                               ("xtol", "finite and >= 0", lambda x: x >= 0),
                               ("delta_bar", "in (0, 1)", lambda x: 0 < x < 1)):
            value = getattr(self, name)
            number = as_real(value)
            if number is None or not math.isfinite(number) or not ok(number):
                raise ValueError(f"NewtonOptions: {name} = {value!r} must be a number {rule}")


class NewtonInfo(NamedTuple):
    """Outcome of one solve: iterations, final residual (N), force scale (N), and the smallest
    step fraction delta used (safeguard and line search; 1 if every step was full)."""

    n_iter: int
    residual_N: float
    force_scale_N: float
    min_delta: float


@jax.jit
def _safeguard_data(model: FiberModel, contact, q, dq):
    """|a_1| and |d a_1| at every bulk and contact point (flat), and the contact bound data."""
    def one(q_e, dq_e, h):
        out = []
        for phi, dphi in ((model.qp_phi, model.qp_dphi), (model.qc_phi, model.qc_dphi)):
            _, a1 = hermite.interpolate(q_e, h, phi, dphi)
            _, da1 = hermite.interpolate(dq_e, h, phi, dphi)
            out.append((jnp.linalg.norm(a1, axis=-1), jnp.linalg.norm(da1, axis=-1)))
        return (jnp.concatenate([out[0][0], out[1][0]]),
                jnp.concatenate([out[0][1], out[1][1]]))

    a1, da1 = jax.vmap(one)(per_element(model, q), per_element(model, dq), element_h(model))
    bound = None if contact is None else bound_data(model, contact, q, dq)
    return a1, da1, bound


def _step_fraction(model, contact, q, dq, options: NewtonOptions) -> float:
    if not options.safeguard:
        return 1.0
    a1, da1, bound = _safeguard_data(model, contact, q, dq)
    a1, da1 = np.asarray(a1), np.asarray(da1)
    with np.errstate(divide="ignore"):
        limit = np.where(da1 > 0, (1.0 - options.delta_bar) * a1 / da1, np.inf)
    delta = min(1.0, float(np.min(limit)))
    if contact is not None:
        delta = min(delta, safeguard_fraction(model, contact, q, dq, options.delta_bar,
                                              data=bound)[0])
    return delta


def _when(time_s) -> str:
    return "in the static solve" if time_s is None else f"at t = {time_s:.6g} s"


def _worst_element(system) -> tuple[int, float]:
    elem = np.asarray(system.element_residual)
    e = int(np.argmax(np.where(np.isfinite(elem), elem, np.inf)))
    return e, float(elem[e])


def inadmissible_hint(safeguard: bool, step: bool = True) -> str:
    """What to do about an inadmissible contact gap: without the safeguard, enable it; with
    it, the state the step started from (or its predictor) already penetrated, which no step
    control mends."""
    if not safeguard:
        return "enable the safeguard" + (" or reduce the step" if step else "")
    return ("the safeguard keeps iterates admissible only from an admissible state: start "
            "from one where every gap g > -1/gamma")


def _check_contact(model, contact, system, time_s, safeguard: bool):
    if contact is None:
        return
    eps = np.asarray(system.eps)
    if np.all(eps > 0):
        return
    e, k = np.unravel_index(np.argmin(np.where(np.isfinite(eps), eps, -np.inf)), eps.shape)
    g = (eps[e, k] - 1.0) / float(contact.gamma)
    raise InadmissibleContactError(
        f"fiber '{model.name}' {_when(time_s)}: contact with '{contact.name}' at element "
        f"{e} (point {k}) has gap g = {g:.6g} <= -1/gamma = {-1 / float(contact.gamma):.6g}: "
        f"the rational penalty is undefined there ({inadmissible_hint(safeguard)})")


def _evaluate(model, contact, q, args, time_s, it):
    """step_system at q; raises FiberDivergenceError if the residual is not finite."""
    system = step_system(model, contact, jnp.asarray(q), *args)
    r = np.asarray(system.residual)
    if not np.all(np.isfinite(r)):
        e, _ = _worst_element(system)
        raise FiberDivergenceError(
            f"fiber '{model.name}' {_when(time_s)}: non-finite residual at element {e} after "
            f"{it} Newton iterations")
    return system, r


def _newton(model, contact, q, q_prev, v_prev, inv_dt, loads, time_s, options, predictor=None):
    """Safeguarded Newton with backtracking on step_system; returns (q, NewtonInfo)."""
    free = model.free_mask()
    q = np.array(q, dtype=np.float64)
    if loads.fixed_values is not None:
        fixed = np.asarray(loads.fixed_values, dtype=np.float64)
        if fixed.shape != (len(model.fixed_dofs),):
            raise ValueError(f"fiber '{model.name}': fixed_values must have shape "
                             f"({len(model.fixed_dofs)},), got {fixed.shape}")
        q[list(model.fixed_dofs)] = fixed
    args = (jnp.asarray(q_prev), jnp.asarray(v_prev), float(inv_dt),
            float(loads.activation), jnp.asarray(loads.line_force, jnp.float64))
    min_delta = 1.0
    if predictor is not None:
        dq = np.where(free, np.asarray(predictor), 0.0)
        q = q + _step_fraction(model, contact, q, dq, options) * dq
    system, r = _evaluate(model, contact, q, args, time_s, 0)
    _check_contact(model, contact, system, time_s, options.safeguard)
    for it in range(options.max_iter + 1):
        res, scale = float(np.max(np.abs(r))), float(system.force_scale)
        if res <= options.rtol * scale:
            return q, NewtonInfo(it, res, scale, min_delta)
        if it == options.max_iter:
            break
        try:
            dq = scipy.linalg.solve_banded((hermite.BANDWIDTH, hermite.BANDWIDTH),
                                           np.asarray(system.tangent_banded), -r,
                                           check_finite=False)
        except np.linalg.LinAlgError as exc:
            e, res_e = _worst_element(system)
            raise FiberNewtonError(
                f"fiber '{model.name}' {_when(time_s)}: singular Newton tangent ({exc}); "
                f"largest residual {res_e:.3e} N at element {e}", time_s, model.name, e,
                res_e) from None
        if not np.all(np.isfinite(dq)):
            e, _ = _worst_element(system)
            raise FiberDivergenceError(
                f"fiber '{model.name}' {_when(time_s)}: non-finite Newton update (near "
                f"element {e}) at iteration {it + 1}")
        delta = _step_fraction(model, contact, q, dq, options)
        if delta == 1.0 and np.max(np.abs(dq)) <= options.xtol * (1.0 + np.max(np.abs(q))):
            return q + dq, NewtonInfo(it + 1, res, scale, min_delta)
        merit = float(np.linalg.norm(r))
        for k in range(options.max_backtrack + 1):
            q_try = q + delta * dq
            system_try = step_system(model, contact, jnp.asarray(q_try), *args)
            r_try = np.asarray(system_try.residual)
            if not options.safeguard:
                _check_contact(model, contact, system_try, time_s, options.safeguard)
            finite = bool(np.all(np.isfinite(r_try)))
            if (finite and np.linalg.norm(r_try) <= (1.0 - 1e-4 * delta) * merit) \
                    or not options.line_search or k == options.max_backtrack:
                break
            delta *= 0.5
        min_delta = min(min_delta, delta)
        q = q_try
        system, r = _evaluate(model, contact, q, args, time_s, it + 1) if not finite \
            else (system_try, r_try)
        _check_contact(model, contact, system, time_s, options.safeguard)
    e, res_e = _worst_element(system)
    raise FiberNewtonError(
        f"fiber '{model.name}' {_when(time_s)}: Newton did not converge in "
        f"{options.max_iter} iterations; largest residual {res_e:.3e} N at element {e} "
        f"(theta in [{float(model.node_theta[e]):.4g}, {float(model.node_theta[e + 1]):.4g}]), "
        f"tolerance {options.rtol * scale:.3e} N (smallest step fraction {min_delta:.3g})",
        time_s, model.name, e, res_e)


def check_unit_activation(where: str, activation) -> np.ndarray:
    """activation as a float64 array, or ValueError naming `where` unless every entry is finite
    and in [0, 1] (the seed's alpha, Eq. 32)."""
    a = np.asarray(activation, dtype=np.float64)
    bad = ~(np.isfinite(a) & (a >= 0.0) & (a <= 1.0))
    if np.any(bad):
        raise ValueError(f"{where}: activation {float(a[bad].reshape(-1)[0])!r} must be in "
                         "[0, 1]")
    return a


def check_finite(where: str, name: str, value) -> None:
    """ValueError naming `where`, the field `name` and its first entry that is not finite
    (NaN or inf: Newton would report it as a divergence after 0 iterations)."""
    a = np.asarray(value, dtype=np.float64)
    bad = np.argwhere(~np.isfinite(a))
    if bad.shape[0]:
        index = tuple(int(i) for i in bad[0])
        label = f"{name}[{', '.join(str(i) for i in index)}]" if index else name
        raise ValueError(f"{where}: {label} = {float(a[index])!r} must be finite")


def check_seconds(where: str, name: str, value, positive: bool = False) -> float:
    """value as a float, or ValueError naming `where` and `name` unless it is one finite
    number (not a bool), > 0 if `positive` (a step size; a time may be any finite number)."""
    number = as_real(value)
    if number is None or not math.isfinite(number) or (positive and number <= 0):
        rule = "a finite number > 0" if positive else "a finite number"
        raise ValueError(f"{where}: {name} = {value!r} must be {rule}")
    return number


def check_inputs(model: FiberModel, loads: FiberLoads | None, state: FiberState | None = None,
                 q0=None) -> None:
    """ValueError naming the fiber and the field unless the state (or q0) and the loads (if
    given) fit `model`: q, v (n_dof,); activation one number in [0, 1]; line_force
    (n_el, n_qp, 3); fixed_values None or (len(fixed_dofs),); every entry finite (the first
    NaN or inf is named)."""
    where = f"fiber '{model.name}'"
    arrays = {"q0": q0} if state is None else {"state.q": state.q, "state.v": state.v}
    shapes = {name: (model.n_dof,) for name in arrays}
    if loads is not None:
        arrays["line_force"] = loads.line_force
        shapes["line_force"] = (model.n_el, model.n_qp, 3)
        if loads.fixed_values is not None:
            arrays["fixed_values"] = loads.fixed_values
            shapes["fixed_values"] = (len(model.fixed_dofs),)
    for name, value in arrays.items():
        if np.shape(value) != shapes[name]:
            raise ValueError(f"{where}: {name} has shape {np.shape(value)}, expected "
                             f"{shapes[name]}")
        check_finite(where, name, value)
    if loads is None:
        return
    if np.shape(loads.activation) != ():
        raise ValueError(f"{where}: activation must be one number, got shape "
                         f"{np.shape(loads.activation)}")
    check_unit_activation(where, loads.activation)


def step(model: FiberModel, state: FiberState, time_s: float, dt_s: float, loads: FiberLoads,
         contact: CylinderContact | None = None,
         options: NewtonOptions = NewtonOptions()) -> tuple[FiberState, NewtonInfo]:
    """One backward-Euler step from `state` to t = time_s (loads evaluated at time_s).

    Refused with a ValueError naming the fiber and the field: a time_s that is not a finite
    number, a dt_s that is not a finite number > 0, a state or loads that do not fit the
    model or are not finite (`check_inputs`)."""
    check_seconds(f"fiber '{model.name}'", "time_s", time_s)
    dt_s = check_seconds(f"fiber '{model.name}'", "dt_s", dt_s, positive=True)
    check_inputs(model, loads, state=state)
    q_prev, v_prev = np.asarray(state.q, np.float64), np.asarray(state.v, np.float64)
    q, info = _newton(model, contact, q_prev, q_prev, v_prev, 1.0 / dt_s, loads, time_s,
                      options, predictor=dt_s * v_prev)
    v = (q - q_prev) / dt_s
    return FiberState(jnp.asarray(q), jnp.asarray(v)), info


def solve_static(model: FiberModel, q0, loads: FiberLoads,
                 contact: CylinderContact | None = None,
                 options: NewtonOptions = NewtonOptions()) -> tuple[jax.Array, NewtonInfo]:
    """Static equilibrium f_int(q, 0) = f_ext + f_contact by safeguarded Newton from q0.

    Needs a tangent that is regular at q0 (e.g. a cable under tension); from a slack start,
    relax dynamically with `simulate` first.
    """
    check_inputs(model, loads, q0=q0)
    zeros = np.zeros(model.n_dof)
    q, info = _newton(model, contact, q0, zeros, zeros, 0.0, loads, None, options)
    return jnp.asarray(q), info


class Trajectory(NamedTuple):
    """Recorded steps: t (n+1,), q and v (n+1, n_dof), Newton iterations per step (n,)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    newton_iterations: np.ndarray


def simulate(model: FiberModel, state0: FiberState, t0_s: float, dt_s: float, n_steps: int,
             loads_at: Callable[[float], FiberLoads], contact: CylinderContact | None = None,
             options: NewtonOptions = NewtonOptions()) -> Trajectory:
    """n_steps backward-Euler steps of size dt_s; loads_at(t) gives the loads at each new time.
    t0_s must be a finite number and dt_s a finite number > 0 (ValueError naming the fiber)."""
    check_step_count("fiber simulate", n_steps)
    t0_s = check_seconds(f"fiber '{model.name}'", "t0_s", t0_s)
    dt_s = check_seconds(f"fiber '{model.name}'", "dt_s", dt_s, positive=True)
    t = t0_s + dt_s * np.arange(n_steps + 1)
    qs = np.empty((n_steps + 1, model.n_dof))
    vs = np.empty_like(qs)
    iters = np.zeros(n_steps, dtype=int)
    check_inputs(model, None, state=state0)
    qs[0], vs[0] = np.asarray(state0.q), np.asarray(state0.v)
    state = state0
    for n in range(n_steps):
        state, info = step(model, state, float(t[n + 1]), dt_s, loads_at(float(t[n + 1])),
                           contact, options)
        qs[n + 1], vs[n + 1] = np.asarray(state.q), np.asarray(state.v)
        iters[n] = info.n_iter
    return Trajectory(t, qs, vs, iters)
