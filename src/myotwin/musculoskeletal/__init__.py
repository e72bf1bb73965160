"""A skeleton driven by Hill-type muscles (seed 003 §4.6): Hill-type musculotendons
(`myotwin.muscle`) pulling along an engine model's paths (`myotwin.paths`), with or without
muscle mass points (`myotwin.inertia`), simulated as one system.

  msm = musculoskeletal_model(skeleton, muscles)         # muscle i on the path of its name
  x0 = equilibrium_state(msm, q0, qd0, activation=0.05)  # tendons in equilibrium
  states, t = simulate(msm, x0, excitation, duration_s=0.5, dt_s=1e-3)

Modules: `model` (the pytree and its validated builder), `paths` (l_MT, v_MT, moment arms),
`state` (state and equilibrium), `dynamics` (right-hand side), `simulate` (fixed-step
integration), `adaptive` (error-controlled integration, inputs as tables of time), `energy`
(power balance), `mjcf` (an MJCF model with MuJoCo `<muscle>` actuators, e.g. MyoSuite's:
`load_mjcf`; `mjcf_forward`: its forward simulation, `myotwin mjcf forward`). docs/muscle.md,
"Driving the skeleton" and "MuJoCo's muscle".
"""

from myotwin.musculoskeletal.adaptive import (InputTable, adaptive_rollout, input_table,
                                              inputs_at)
from myotwin.musculoskeletal.mjcf import load_mjcf, muscle_actuators
from myotwin.musculoskeletal.model import (MusculoskeletalModel, musculoskeletal_model,
                                           with_muscle_masses)
from myotwin.musculoskeletal.simulate import first_diverged_step, rollout, simulate
from myotwin.musculoskeletal.state import MusculoskeletalState, equilibrium_state
# the state functions, compiled (`jax.jit`; api.py)
from myotwin.musculoskeletal.api import (elastic_energy, mechanical_energy, muscle_drive,
                                         muscle_input_power, muscle_outputs_at, path_state,
                                         rates, state_derivative)

__all__ = [
    "InputTable",
    "MusculoskeletalModel",
    "MusculoskeletalState",
    "adaptive_rollout",
    "elastic_energy",
    "equilibrium_state",
    "first_diverged_step",
    "input_table",
    "load_mjcf",
    "inputs_at",
    "mechanical_energy",
    "muscle_drive",
    "muscle_actuators",
    "muscle_input_power",
    "muscle_outputs_at",
    "musculoskeletal_model",
    "path_state",
    "rates",
    "rollout",
    "simulate",
    "state_derivative",
    "with_muscle_masses",
]
