"""Power balance of compliant musculotendons driven by a prescribed length (OpenSim's
testMuscles.cpp oracle, notes Sec. 3.3).

The musculotendon length follows l_MT(t) = l0 + A sin(2 pi t) (the slider of OpenSim's rig
prescribed as a sine), the excitation is constant, and (activation, tendon state, W) are
integrated with scipy's solve_ivp (LSODA, rtol 1e-10), where

    dW/dt = fiber_active_power + fiber_damping_power - musculotendon_power
          = F_T v_MT - (F_active + F_damping) v_M

is the net power flowing into the elastic elements, built from forces and velocities only.
The stored energy E = F_iso l_opt int f_PE + F_iso l_ts int f_T, evaluated from the state,
must satisfy E(t) - E(0) = W(t): this holds only if the state derivative, the force
equilibrium F_M cos(phi) = F_T, the pennation kinematics v_MT = v_M/cos(phi) + v_T and the
curve integrals are mutually consistent. Also the element powers must add up to the
musculotendon power at every sample (OpenSim's power definitions).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin.muscle import build_muscles, dynamics, equilibrium

L_OPT, L_TS, PHI = 0.1, 0.2, 0.3
AMPLITUDE_M, OMEGA = 0.02, 2 * math.pi
EXCITATION, A0, T_END = 0.8, 0.3, 0.5
# LSODA at rtol 1e-10 / atol 1e-12 leaves a global error ~1e-9 relative in the state, so the
# energy identity holds to ~1e-9 of the energy swing (observed ~1e-9 J of ~3 J): the
# tolerance is 1e-7 relative.
POWER_RTOL = 1e-7


def _mt(t):
    l0 = L_OPT * math.cos(PHI) + 1.02 * L_TS
    return l0 + AMPLITUDE_M * jnp.sin(OMEGA * t), AMPLITUDE_M * OMEGA * jnp.cos(OMEGA * t)


def _simulate(muscle):
    @jax.jit
    def rhs_and_energy(t, y):
        l_mt, v_mt = _mt(t)
        a, s = y[0], y[1:2]
        out, dadt, dsdt = dynamics(muscle, EXCITATION, a, l_mt, v_mt, s)
        dwdt = out.fiber_active_power_W + out.fiber_damping_power_W - out.musculotendon_power_W
        energy = out.fiber_potential_energy_J + out.tendon_potential_energy_J
        element_sum = (out.fiber_active_power_W + out.fiber_damping_power_W
                       + out.fiber_passive_power_W + out.tendon_power_W)
        return (jnp.concatenate([dadt, dsdt, dwdt]), energy[0],
                element_sum[0] - out.musculotendon_power_W[0], out.musculotendon_power_W[0])

    l_mt0, v_mt0 = _mt(0.0)
    eq = jax.jit(equilibrium)(muscle, A0, l_mt0, v_mt0)
    assert bool(eq.converged[0])
    y0 = np.array([A0, float(eq.tendon_state[0]), 0.0])
    sol = solve_ivp(lambda t, y: np.asarray(rhs_and_energy(t, jnp.asarray(y))[0]),
                    (0.0, T_END), y0, method="LSODA", rtol=1e-10, atol=1e-12,
                    t_eval=np.linspace(0.0, T_END, 51))
    assert sol.success, sol.message
    samples = [rhs_and_energy(t, jnp.asarray(y)) for t, y in zip(sol.t, sol.y.T)]
    energy = np.array([float(s[1]) for s in samples])
    identity = np.array([float(s[2]) for s in samples])
    p_mt = np.array([float(s[3]) for s in samples])
    return sol, energy, identity, p_mt


@pytest.mark.parametrize("curves, tendon", [("degroote2016", "explicit_force"),
                                            ("millard2012", "damped_fiber_length"),
                                            ("thelen2003", "explicit_force"),
                                            ("thelen2003", "fiber_length"),
                                            ("degroote2016", "fiber_length")])
def test_power_balance_of_a_driven_compliant_musculotendon(curves, tendon):
    muscle = build_muscles(["m"], curves=curves, tendon=tendon, max_isometric_force_N=1000.0,
                           optimal_fiber_length_m=L_OPT, tendon_slack_length_m=L_TS,
                           pennation_at_optimal_rad=PHI)
    sol, energy, identity, p_mt = _simulate(muscle)
    d_energy = energy - energy[0]
    work = sol.y[2]
    swing = np.abs(d_energy).max()
    assert swing > 0.1, "the elastic energy must actually change (J)"
    err = np.abs(d_energy - work).max()
    assert err <= POWER_RTOL * swing, f"E(t) - E(0) vs work: {err:.2e} J of {swing:.2f} J"
    assert np.abs(identity).max() <= 1e-9 * np.abs(p_mt).max(), "element powers != MTU power"
