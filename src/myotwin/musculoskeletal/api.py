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

from myotwin.engine.arguments import check_musculoskeletal_arguments, compiled
from myotwin.musculoskeletal import dynamics as _dynamics
from myotwin.musculoskeletal import energy as _energy
from myotwin.musculoskeletal import paths as _paths

rates = compiled(_dynamics.rates, check_musculoskeletal_arguments)
state_derivative = compiled(_dynamics.state_derivative, check_musculoskeletal_arguments)
muscle_drive = compiled(_dynamics.muscle_drive, check_musculoskeletal_arguments)
path_state = compiled(_paths.path_state, check_musculoskeletal_arguments)
elastic_energy = compiled(_energy.elastic_energy, check_musculoskeletal_arguments)
mechanical_energy = compiled(_energy.mechanical_energy, check_musculoskeletal_arguments)
muscle_input_power = compiled(_energy.muscle_input_power, check_musculoskeletal_arguments)
muscle_outputs_at = compiled(_energy.muscle_outputs_at, check_musculoskeletal_arguments)
