"""Energy bookkeeping of a skeleton driven by Hill-type muscles (the power-balance oracle).

  E = T + V + E_el:  T, V the skeleton's kinetic and potential energy with the muscle mass
  points (`engine.kinetic_energy`, `engine.potential_energy`), E_el the muscles' stored
  elastic energy (passive fiber and tendon, `MuscleOutputs`).

Each musculotendon obeys dE_el/dt = P_active + P_damping - P_MT (`myotwin.muscle`, OpenSim's
power definitions: each the power *delivered* by the element, P_MT = -F v_MT to the
skeleton), and the skeleton d(T + V)/dt = P_MT plus the power of its other non-conservative
forces (joint damping, its own actuators, contact, limits, applied forces). Without those,

  dE/dt = P_active + P_damping                     (`muscle_input_power`),

which `tests/musculoskeletal` checks along simulated trajectories: it holds only if the
coupling sign, the moment arms, the path speeds, the mass matrix with the mass points and the
muscle state equations agree with each other.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.coupling import full_motion
from myotwin.engine.dynamics import kinetic_energy, potential_energy
from myotwin.muscle.musculotendon import MuscleOutputs, muscle_outputs
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.musculoskeletal.paths import path_state
from myotwin.musculoskeletal.state import MusculoskeletalState


def muscle_outputs_at(msm: MusculoskeletalModel, state: MusculoskeletalState) -> MuscleOutputs:
    """Every muscle's fiber and tendon quantities (`MuscleOutputs`, (n_muscles,) each) at a
    state of the coupled system: the paths' l_MT, v_MT at (q, qd), the muscles' own states."""
    length, speed, _ = path_state(msm, state.q, state.qd)
    return muscle_outputs(msm.muscles, state.activation, length, speed, state.tendon_state)


def elastic_energy(msm: MusculoskeletalModel, state: MusculoskeletalState) -> jax.Array:
    """Scalar elastic energy stored in the muscles' passive fibers and tendons (J)."""
    out = muscle_outputs_at(msm, state)
    return jnp.sum(out.fiber_potential_energy_J + out.tendon_potential_energy_J)


def mechanical_energy(msm: MusculoskeletalModel, state: MusculoskeletalState) -> jax.Array:
    """Scalar T + V + E_el (J) (module docstring)."""
    q, qd = state.q, state.qd
    if msm.coordinates is not None:   # the skeleton's dofs of the coordinates
        motion = full_motion(msm.coordinates, q, qd, jnp.zeros_like(qd))
        q, qd = motion.q, motion.qd
    return (kinetic_energy(msm.skeleton, q, qd)
            + potential_energy(msm.skeleton, q) + elastic_energy(msm, state))


def muscle_input_power(msm: MusculoskeletalModel, state: MusculoskeletalState) -> jax.Array:
    """Scalar power delivered by the muscles' active elements and fiber dampers (W); it
    depends on the state only (the excitation sets the activation's rate, not the force)."""
    out = muscle_outputs_at(msm, state)
    return jnp.sum(out.fiber_active_power_W + out.fiber_damping_power_W)
