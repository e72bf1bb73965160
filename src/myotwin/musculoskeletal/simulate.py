"""Fixed-step simulation of a skeleton driven by Hill-type muscles.

The state (q, qd, activation, tendon state) advances with the engine's explicit integrators
(`engine.integrators`, the *_with steps): the skeleton on its configuration manifold exactly
as `engine.simulate` moves it (RK4 as MuJoCo 4.0.0's, Runge-Kutta-Munthe-Kaas on
quaternions), the muscle states with the same tableau. Inputs held over each step:
excitation u (n_muscles,) and the skeleton's own ctrl (n_u,), each constant or one row per
step. The implicit integrators (BDF1, SDIRK2) of the engine solve for the skeleton's
velocities only and are not offered here (ValueError).

Like `engine.simulate`, `simulate` raises FloatingPointError naming the first step whose state
is not finite (outside a trace), and the rollout is differentiable end to end (reverse mode
through the scan, w.r.t. the initial state, the excitations and every model leaf).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.integrators import (Integrator, euler_step_with, explicit_euler_step_with,
                                        rk4_step_with, semi_implicit_euler_step_with)
from myotwin.engine.arguments import (check_musculoskeletal_arguments, check_setting_value,
                                      check_step_count, real_array)
from myotwin.engine.simulate import DIVERGED_ABOVE, as_integrator, diverged_rows, n_steps_for
from myotwin.musculoskeletal.body_loads import (BodyLoads, load_values,
                                              musculoskeletal_wrenches)
from myotwin.musculoskeletal.dynamics import rates
from myotwin.musculoskeletal.model import MusculoskeletalModel, clamped_activation
from myotwin.musculoskeletal.state import MusculoskeletalState
from myotwin.scalars import require_real_numbers

_STEPS = {
    Integrator.EXPLICIT_EULER: explicit_euler_step_with,
    Integrator.SEMI_IMPLICIT_EULER: semi_implicit_euler_step_with,
    Integrator.EULER: euler_step_with,
    Integrator.RK4: rk4_step_with,
}


def _integrator(integrator) -> Integrator:
    integrator = as_integrator(integrator)   # ValueError naming the choices
    if integrator not in _STEPS:
        raise ValueError(f"integrator '{integrator.value}' is not available for a "
                         "musculoskeletal model (the engine's implicit steps solve for the "
                         f"skeleton's velocities only); use one of "
                         f"{[i.value for i in _STEPS]}")
    return integrator


def _per_step(x, n_steps: int, width: int, what: str):
    x = jnp.asarray(x, dtype=float)
    if x.ndim == 0:
        x = jnp.broadcast_to(x, (width,))
    if x.shape == (width,):
        return jnp.broadcast_to(x, (n_steps, width))
    if x.shape == (n_steps, width):
        return x
    raise ValueError(f"{what} has shape {x.shape}, expected ({width},) or ({n_steps}, {width})")


def check_excitation(excitation) -> None:
    """ValueError unless a concrete excitation (a scalar or an array) is finite and in [0, 1]
    (a traced one is not checked)."""
    if isinstance(excitation, jax.core.Tracer):
        return
    values = np.asarray(excitation, dtype=float)
    bad = ~(np.isfinite(values) & (values >= 0.0) & (values <= 1.0))
    if values.ndim == 0 and bad:     # (np.argwhere of a 0-d array is empty)
        raise ValueError(f"excitation must be finite and in [0, 1], got {float(values)!r}")
    where = np.argwhere(bad)
    if where.size:
        raise ValueError(f"excitation must be finite and in [0, 1]; entry "
                         f"{tuple(int(i) for i in where[0])} is "
                         f"{float(values[tuple(where[0])])!r}")


def rollout(msm: MusculoskeletalModel, state0: MusculoskeletalState, excitation, dt_s,
            n_steps: int, integrator: Integrator = Integrator.RK4,
            ctrl=None, *, loads: BodyLoads | None = None, t0_s=0.0) -> MusculoskeletalState:
    """The states at steps 0..n_steps (each field with a leading n_steps + 1 axis) from
    state0; excitation (n_muscles,) or (n_steps, n_muscles); ctrl None (zeros), (n_u,) or
    (n_steps, n_u) for the skeleton's own actuators; loads: external loads on bodies
    (`body_loads.BodyLoads`) or None, their values at each step's midpoint (the run starting
    at t0_s) held over the step, their wrenches following the bodies at every stage.
    ValueError, before compiling, for a state0 that is not a `MusculoskeletalState`, an
    n_steps that is not an integer >= 0, loads that are not a BodyLoads, and arguments that
    are not numbers (a bool or a string; values are `simulate`'s to check)."""
    check_step_count("rollout", n_steps)
    if loads is not None and not isinstance(loads, BodyLoads):
        raise ValueError(f"rollout: loads must be a BodyLoads (body_loads) or None, got "
                         f"{type(loads).__name__}")
    if not isinstance(state0, MusculoskeletalState):
        raise ValueError(f"rollout: state0 must be a MusculoskeletalState (equilibrium_state), "
                         f"got {type(state0).__name__}")
    named = [*((f"state0.{k}", v) for k, v in zip(MusculoskeletalState._fields, state0)),
             ("excitation", excitation), ("dt_s", dt_s), ("ctrl", ctrl), ("t0_s", t0_s)]
    for name, value in named:           # jit would refuse a string inside JAX
        if not (value is None and name == "ctrl"):
            require_real_numbers("rollout", name, value)
    check_setting_value("rollout", "dt_s", dt_s)
    check_musculoskeletal_arguments("rollout", msm, {"state": state0})   # (not a JAX error)
    return _rollout(msm, state0, excitation, dt_s, n_steps, integrator, ctrl, loads, t0_s)


@functools.partial(jax.jit, static_argnames=("n_steps", "integrator"))
def _rollout(msm: MusculoskeletalModel, state0: MusculoskeletalState, excitation, dt_s,
             n_steps: int, integrator: Integrator, ctrl, loads=None,
             t0_s=0.0) -> MusculoskeletalState:
    """`rollout` after its checks (the model and the state's shapes among them), compiled."""
    step = _STEPS[_integrator(integrator)]
    model = msm.skeleton
    u_steps = _per_step(excitation, n_steps, msm.n_muscles, "excitation")
    c_steps = _per_step(jnp.zeros(model.n_u) if ctrl is None else ctrl, n_steps, model.n_u,
                        "ctrl")
    l_steps = None if loads is None else jax.vmap(load_values, in_axes=(None, 0))(
        loads, t0_s + (jnp.arange(n_steps) + 0.5) * dt_s)

    # rematerialised, as engine.rollout: reverse mode keeps each step's state only
    @functools.partial(jax.checkpoint, prevent_cse=False)
    def body(state, x):
        u, c, values = x

        def step_rates(q, qd, extra, damping_dt=None):
            xfrc = None if values is None else musculoskeletal_wrenches(msm, loads, values, q)
            qdd, da, ds = rates(msm, MusculoskeletalState(q, qd, *extra), u, c,
                                xfrc_applied=xfrc, damping_dt=damping_dt)
            return qdd, (da, ds)

        q, qd, (a, s) = step(None if msm.coordinates is not None else model, state.q,
                             state.qd, (state.activation, state.tendon_state), step_rates,
                             dt_s)
        a = clamped_activation(msm, a)   # MuJoCo's actrange (mj_nextActivation)
        new = MusculoskeletalState(q, qd, a, s)
        return new, new

    _, states = jax.lax.scan(body, state0, (u_steps, c_steps, l_steps))
    return jax.tree_util.tree_map(lambda x0, xs: jnp.concatenate([x0[None], xs]), state0,
                                  states)


def first_diverged_step(states: MusculoskeletalState) -> int:
    """The first row of `states` (fields with a leading step axis) in which any field is not
    finite or exceeds `engine.simulate.DIVERGED_ABOVE` (MuJoCo's 1e10) in magnitude, or -1."""
    bad = np.zeros(states.q.shape[0], dtype=bool)
    for x in states:
        bad |= diverged_rows(np.asarray(x))
    return int(np.argmax(bad)) if bad.any() else -1


def simulate(msm: MusculoskeletalModel, state0: MusculoskeletalState, excitation,
             duration_s: float, dt_s: float, integrator: Integrator | str = Integrator.RK4,
             ctrl=None) -> tuple[MusculoskeletalState, jax.Array]:
    """Fixed-step simulation: (states (n + 1 rows per field), t (n + 1,)), n = duration / dt.

    excitation: scalar, (n_muscles,) or per step (n, n_muscles), in [0, 1]; ctrl: None, (n_u,)
    or (n, n_u). ValueError for a bad shape, a non-finite excitation or one outside [0, 1], or a
    non-finite initial state or ctrl (when concrete); FloatingPointError naming the first step
    whose state diverged (`first_diverged_step`)."""
    n = n_steps_for(duration_s, dt_s)
    integrator = _integrator(integrator)
    u = real_array("simulate", "excitation", excitation)   # numbers only: True is not 1.0
    check_excitation(u)
    if not isinstance(state0, MusculoskeletalState):   # (rebuilt field by field below)
        raise ValueError(f"simulate: state0 must be a MusculoskeletalState "
                         f"(equilibrium_state), got {type(state0).__name__}")
    state0 = MusculoskeletalState(*(real_array("simulate", f"state0.{name}", x)
                                    for name, x in zip(MusculoskeletalState._fields, state0)))
    ctrl = None if ctrl is None else real_array("simulate", "ctrl", ctrl)
    states = rollout(msm, state0, u, float(dt_s), n, integrator, ctrl)
    if not isinstance(states.q, jax.core.Tracer):
        k = first_diverged_step(states)
        if k >= 0:
            raise FloatingPointError(f"simulation diverged: the state is not finite or exceeds "
                                     f"{DIVERGED_ABOVE:g} at step {k} (t = {k * dt_s:.6g} s)")
    return states, jnp.arange(n + 1) * dt_s
