"""Musculotendon force, state derivatives, equilibrium and power bookkeeping (vmapped over
n_muscles). Stages (STYLE 2): muscle lengths/speeds from the path -> fiber state (`tendon`)
-> forces, energies and powers (`MuscleOutputs`) -> generalized forces (`coupling`).

Inputs per call, each (n_muscles,) or a scalar broadcast to all muscles: activation a (the
state of `activation.activation_derivative`), musculotendon length l_MT (m), lengthening speed
v_MT (m/s), and for compliant tendons the tendon state s: the normalized tendon force for
`TendonModel.EXPLICIT_FORCE`, the fiber length (m) for `TendonModel.DAMPED_FIBER_LENGTH` and
`TendonModel.FIBER_LENGTH`.

Power convention (OpenSim `Muscle::MuscleDynamicsInfo`): each power is the power DELIVERED by
the element, and tension is positive:

    fiber_active_power_W  = -F_active v_M        fiber_damping_power_W = -F_damping v_M
    fiber_passive_power_W = -F_passive v_M        tendon_power_W        = -F_T v_T
    musculotendon_power_W = -F_T v_MT  (power delivered to the skeleton)

with F_active = F_iso a f_L f_V, F_passive = F_iso f_PE (conservative), F_damping =
F_iso beta v~ (OpenSim lumps damping into its active power). With equilibrium
F_M cos(phi) = F_T and v_MT = v_M/cos(phi) + v_T they satisfy
sum of the four element powers = musculotendon power, and the stored elastic energy
E = F_iso l_opt int f_PE + F_iso l_ts int f_T obeys

    dE/dt = -(fiber_passive_power + tendon_power)
          = fiber_active_power + fiber_damping_power - musculotendon_power
    (= rate of work done on the musculotendon F_T v_MT minus the power absorbed by the active
       element and the damper),

the power-balance oracle of OpenSim's testMuscles.cpp.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from myotwin.muscle import pennation, tendon
from myotwin.muscle.activation import activation_derivative
from myotwin.muscle.model import Muscle, TendonModel
from myotwin.muscle.millard2012 import MillardCurves
from myotwin.muscle.thelen2003 import ThelenCurves
from myotwin.scalars import require_real_numbers


class MuscleOutputs(NamedTuple):
    """Everything about the fiber and tendon, each (n_muscles,). Forces in N (tension > 0),
    lengths m, speeds m/s (lengthening > 0), angles rad, energies J, powers W."""

    tendon_force_N: jax.Array
    fiber_force_N: jax.Array
    active_fiber_force_N: jax.Array
    passive_fiber_force_N: jax.Array
    damping_fiber_force_N: jax.Array
    fiber_length_m: jax.Array
    fiber_length_along_tendon_m: jax.Array
    fiber_velocity_m_per_s: jax.Array
    fiber_velocity_along_tendon_m_per_s: jax.Array
    norm_fiber_length: jax.Array
    norm_fiber_velocity: jax.Array
    pennation_rad: jax.Array
    cos_pennation: jax.Array
    pennation_velocity_rad_per_s: jax.Array
    tendon_length_m: jax.Array
    tendon_velocity_m_per_s: jax.Array
    norm_tendon_length: jax.Array
    norm_tendon_force: jax.Array
    activation: jax.Array
    active_force_length_multiplier: jax.Array
    force_velocity_multiplier: jax.Array
    passive_force_multiplier: jax.Array
    fiber_potential_energy_J: jax.Array
    tendon_potential_energy_J: jax.Array
    fiber_active_power_W: jax.Array
    fiber_damping_power_W: jax.Array
    fiber_passive_power_W: jax.Array
    tendon_power_W: jax.Array
    musculotendon_power_W: jax.Array


class MuscleDynamics(NamedTuple):
    """Result of `dynamics`: outputs (MuscleOutputs), activation_rate da/dt (1/s) and
    tendon_state_rate d(tendon state)/dt (zeros for RIGID), each (n_muscles,)."""

    outputs: MuscleOutputs
    activation_rate: jax.Array
    tendon_state_rate: jax.Array


class Equilibrium(NamedTuple):
    """Result of `equilibrium`, each (n_muscles,): fiber_length_m, tendon_state (the state of
    the muscle's tendon model), residual (f~_M cos(phi) - f~_T) and converged
    (|residual| <= EQUILIBRIUM_TOL)."""

    fiber_length_m: jax.Array
    tendon_state: jax.Array
    residual: jax.Array
    converged: jax.Array


#: Normalized-force residual below which an equilibrium counts as converged.
EQUILIBRIUM_TOL = 1e-9


def _fiber(m: Muscle, a, l_mt, v_mt, s) -> tendon.Fiber:
    if m.tendon is TendonModel.RIGID:
        return tendon.rigid(m, a, l_mt, v_mt)
    if m.tendon is TendonModel.EXPLICIT_FORCE:
        return tendon.explicit_force(m, a, l_mt, v_mt, s)
    if m.tendon is TendonModel.FIBER_LENGTH:
        return tendon.fiber_length(m, a, l_mt, v_mt, s)
    return tendon.damped_fiber_length(m, a, l_mt, v_mt, s)


def _outputs_from_fiber(m: Muscle, fib: tendon.Fiber, v_mt) -> MuscleOutputs:
    geo = fib.geometry
    f_iso = m.max_isometric_force_N
    free = ~fib.clamped          # a fiber held at its lower bound bears no force (`tendon`)
    active = jnp.where(free, f_iso * fib.activation * fib.active_force_length_multiplier
                       * fib.force_velocity_multiplier, 0.0)
    passive = f_iso * fib.passive_force_multiplier
    damping = f_iso * m.fiber_damping * fib.norm_fiber_velocity
    if m.tendon is TendonModel.RIGID and isinstance(m.curves, MillardCurves):
        # a rigid tendon does not push: the damping absorbs a compressive fiber force
        damping = jnp.where(active + passive + damping < 0.0, -(active + passive), damping)
    fiber_force = jnp.where(free, active + passive + damping, 0.0)
    if not isinstance(m.curves, ThelenCurves):
        passive = jnp.where(free, passive, 0.0)
    v_m = fib.fiber_velocity_m_per_s
    v_along = pennation.fiber_velocity_along_tendon(v_m, geo)
    l_norm = geo.fiber_length_m / m.optimal_fiber_length_m
    l_ts = m.tendon_slack_length_m          # <= 0 only for MuJoCo's offset (docs/muscle.md)
    lt_norm = jnp.where(l_ts > 0.0, fib.tendon_length_m / jnp.where(l_ts > 0.0, l_ts, 1.0), 1.0)
    f_t = f_iso * fib.norm_tendon_force
    if m.tendon is TendonModel.RIGID:
        v_t = jnp.where(fib.clamped, v_mt, 0.0)      # a slack one shortens with the path
        e_tendon = jnp.zeros_like(v_mt)
    else:
        v_t = v_mt - v_along
        e_tendon = f_iso * m.tendon_slack_length_m * m.curves.tendon_force_length_integral(
            lt_norm)
    phi_dot = jnp.where(free, pennation.pennation_angular_velocity(v_m, geo), 0.0)
    return MuscleOutputs(
        f_t, fiber_force, active, passive, damping,
        geo.fiber_length_m, geo.fiber_length_along_tendon_m, v_m, v_along, l_norm,
        fib.norm_fiber_velocity, geo.pennation_rad, geo.cos_pennation,
        phi_dot, fib.tendon_length_m, v_t, lt_norm,
        fib.norm_tendon_force, fib.activation, fib.active_force_length_multiplier,
        fib.force_velocity_multiplier, fib.passive_force_multiplier,
        f_iso * m.optimal_fiber_length_m * m.curves.passive_force_length_integral(l_norm),
        e_tendon, -active * v_m, -damping * v_m, -passive * v_m, -f_t * v_t, -f_t * v_mt)


def _outputs(m: Muscle, a, l_mt, v_mt, s) -> MuscleOutputs:
    return _outputs_from_fiber(m, _fiber(m, a, l_mt, v_mt, s), v_mt)


def _rate_from_fiber(m: Muscle, fib: tendon.Fiber, v_mt):
    if m.tendon in (TendonModel.DAMPED_FIBER_LENGTH, TendonModel.FIBER_LENGTH):
        return fib.fiber_velocity_m_per_s
    v_along = pennation.fiber_velocity_along_tendon(fib.fiber_velocity_m_per_s, fib.geometry)
    lt_norm = fib.tendon_length_m / m.tendon_slack_length_m
    df_dl = jax.grad(m.curves.tendon_force_length)(lt_norm)
    return df_dl * (v_mt - v_along) / m.tendon_slack_length_m


def _state_derivative(m: Muscle, a, l_mt, v_mt, s):
    return _rate_from_fiber(m, _fiber(m, a, l_mt, v_mt, s), v_mt)


def _dynamics(m: Muscle, u, a, l_mt, v_mt, s):
    fib = _fiber(m, a, l_mt, v_mt, s)
    rate = (jnp.zeros_like(v_mt) if m.tendon is TendonModel.RIGID
            else _rate_from_fiber(m, fib, v_mt))
    return (_outputs_from_fiber(m, fib, v_mt), activation_derivative(m.activation, a, u), rate)


def _equilibrium(m: Muscle, a, l_mt, v_mt):
    along, res = tendon.equilibrium_along(m, a, l_mt, v_mt)
    geo = pennation.from_fiber_length_along_tendon(
        along, pennation.fiber_width(m.optimal_fiber_length_m, m.pennation_at_optimal_rad))
    if m.tendon is TendonModel.EXPLICIT_FORCE:
        state = m.curves.tendon_force_length((l_mt - along) / m.tendon_slack_length_m)
    else:
        state = geo.fiber_length_m
    return geo.fiber_length_m, state, res


def _broadcast(m: Muscle, **named):
    """Each named argument as (n_muscles,): one number for every muscle, or one per muscle;
    ValueError naming the argument for any other shape (a (1,) array for two muscles was
    broadcast silently, a (3,) one failed inside jnp.broadcast_to). Shapes are static under
    `jit`, so this costs nothing per call."""
    out = []
    for name, x in named.items():
        require_real_numbers(f"muscles {list(m.names)}", name, x)     # True is not 1.0
        x = jnp.asarray(x, dtype=float)
        if x.shape not in ((), (m.n_muscles,)):
            raise ValueError(f"muscles {list(m.names)}: {name} has shape {x.shape}, expected "
                             f"() or ({m.n_muscles},), one per muscle")
        out.append(jnp.broadcast_to(x, (m.n_muscles,)))
    return out


def _require_state(m: Muscle, tendon_state):
    if m.tendon is TendonModel.RIGID:
        return jnp.zeros(m.n_muscles)
    if tendon_state is None:
        raise ValueError(f"muscles {list(m.names)}: tendon model '{m.tendon.value}' needs a "
                         "tendon_state (normalized tendon force or fiber length)")
    return tendon_state


def muscle_outputs(muscle: Muscle, activation, mt_length_m, mt_speed_m_per_s,
                   tendon_state=None) -> MuscleOutputs:
    """Forces, fiber/tendon kinematics, elastic energies and powers, each (n_muscles,).
    `tendon_state` (n_muscles,) is required for compliant tendons, ignored for RIGID."""
    s = _require_state(muscle, tendon_state)
    a, l_mt, v_mt, s = _broadcast(muscle, activation=activation, mt_length_m=mt_length_m,
                                  mt_speed_m_per_s=mt_speed_m_per_s, tendon_state=s)
    return jax.vmap(_outputs)(muscle, a, l_mt, v_mt, s)


def tendon_force(muscle: Muscle, activation, mt_length_m, mt_speed_m_per_s,
                 tendon_state=None) -> jax.Array:
    """(n_muscles,) tendon force F_T (N, tension > 0): the force the musculotendon applies
    at both ends of its path (see `coupling.generalized_forces`)."""
    return muscle_outputs(muscle, activation, mt_length_m, mt_speed_m_per_s,
                          tendon_state).tendon_force_N


def tendon_state_derivative(muscle: Muscle, activation, mt_length_m, mt_speed_m_per_s,
                            tendon_state) -> jax.Array:
    """(n_muscles,) d(tendon state)/dt: d f~_T/dt (1/s) for EXPLICIT_FORCE, d l_M/dt (m/s) for
    DAMPED_FIBER_LENGTH and FIBER_LENGTH. A RIGID tendon has no state (ValueError)."""
    if muscle.tendon is TendonModel.RIGID:
        raise ValueError(f"muscles {list(muscle.names)}: a rigid tendon has no state")
    a, l_mt, v_mt, s = _broadcast(muscle, activation=activation, mt_length_m=mt_length_m,
                                  mt_speed_m_per_s=mt_speed_m_per_s, tendon_state=tendon_state)
    return jax.vmap(_state_derivative)(muscle, a, l_mt, v_mt, s)


def state_derivative(muscle: Muscle, excitation, activation, mt_length_m, mt_speed_m_per_s,
                     tendon_state=None):
    """(da/dt, d(tendon state)/dt) each (n_muscles,); the second is None for RIGID tendons."""
    dyn = dynamics(muscle, excitation, activation, mt_length_m, mt_speed_m_per_s, tendon_state)
    if muscle.tendon is TendonModel.RIGID:
        return dyn.activation_rate, None
    return dyn.activation_rate, dyn.tendon_state_rate


def dynamics(muscle: Muscle, excitation, activation, mt_length_m, mt_speed_m_per_s,
             tendon_state=None) -> MuscleDynamics:
    """Outputs and both state derivatives in one pass (the fiber state and its solve are
    computed once): what a simulation step needs."""
    s = _require_state(muscle, tendon_state)
    u, a, l_mt, v_mt, s = _broadcast(muscle, excitation=excitation, activation=activation,
                                     mt_length_m=mt_length_m,
                                     mt_speed_m_per_s=mt_speed_m_per_s, tendon_state=s)
    return MuscleDynamics(*jax.vmap(_dynamics)(muscle, u, a, l_mt, v_mt, s))


def equilibrium(muscle: Muscle, activation, mt_length_m, mt_speed_m_per_s) -> Equilibrium:
    """Fiber length (and tendon state) at which fiber and tendon forces balance with zero
    tendon velocity (OpenSim's initial fiber equilibrium of DeGrooteFregly2016Muscle; see
    `tendon.equilibrium_along`), each (n_muscles,). Differentiable (implicit-function theorem);
    check `converged` (no sign change in the bracket, e.g. a slack musculotendon, fails).
    A RIGID tendon has no equilibrium to solve (ValueError): use `muscle_outputs`."""
    if muscle.tendon is TendonModel.RIGID:
        raise ValueError(f"muscles {list(muscle.names)}: a rigid tendon has no fiber "
                         "equilibrium to solve; the fiber follows l_MT (muscle_outputs)")
    a, l_mt, v_mt = _broadcast(muscle, activation=activation, mt_length_m=mt_length_m,
                               mt_speed_m_per_s=mt_speed_m_per_s)
    l_m, state, res = jax.vmap(_equilibrium)(muscle, a, l_mt, v_mt)
    return Equilibrium(l_m, state, res, jnp.abs(res) <= EQUILIBRIUM_TOL)
