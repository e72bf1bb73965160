"""The musculoskeletal system's public state functions, compiled (`jax.jit`), as
`myotwin.musculoskeletal` exports them (the pattern of `engine/api.py`; docs/engine.md
"Public functions are compiled").

Each takes the `MusculoskeletalModel` first and arrays (or a `MusculoskeletalState`) after
it, so `jax.jit` traces it once per model structure and argument shapes: called from plain
Python, the plain functions would run op by op. Inside a caller's `jit`, `grad` or `vmap`
they are inlined. The package's own modules (`simulate`, `adaptive`, `state`) and
`myotwin.osim` call the plain functions of the defining modules.
"""

from __future__ import annotations

import jax

from myotwin.musculoskeletal import dynamics as _dynamics
from myotwin.musculoskeletal import energy as _energy
from myotwin.musculoskeletal import paths as _paths

rates = jax.jit(_dynamics.rates)
state_derivative = jax.jit(_dynamics.state_derivative)
muscle_drive = jax.jit(_dynamics.muscle_drive)
path_state = jax.jit(_paths.path_state)
elastic_energy = jax.jit(_energy.elastic_energy)
mechanical_energy = jax.jit(_energy.mechanical_energy)
muscle_input_power = jax.jit(_energy.muscle_input_power)
muscle_outputs_at = jax.jit(_energy.muscle_outputs_at)
