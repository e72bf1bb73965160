"""The mass points' public state functions, compiled (`jax.jit`), as `myotwin.inertia` exports
them (the pattern of `engine/api.py`; docs/engine.md "Public functions are compiled").

Each takes the model first and arrays after it, so `jax.jit` traces it once per model
structure and argument shapes: called from plain Python, the plain functions run op by op
(each primitive compiled alone at its first use and dispatched from Python at every call).
Inside a caller's `jit`, `grad` or `vmap` they are inlined. The engine's dynamics and the
package's own modules call the plain functions of `inertia.dynamics` and
`inertia.path_fraction`, which are these before `jax.jit`.
"""

from __future__ import annotations

from myotwin.engine.arguments import compiled
from myotwin.inertia import dynamics as _dynamics
from myotwin.inertia import path_fraction as _path_fraction

mass_point_positions = compiled(_path_fraction.mass_point_positions)
mass_point_jacobians = compiled(_dynamics.mass_point_jacobians)
jacobians_by_autodiff = compiled(_dynamics.jacobians_by_autodiff)
mass_point_velocities = compiled(_dynamics.mass_point_velocities)
mass_point_bias_accelerations = compiled(_dynamics.mass_point_bias_accelerations)
jacobians_and_bias = compiled(_dynamics.jacobians_and_bias)
muscle_mass_matrix = compiled(_dynamics.muscle_mass_matrix)
muscle_bias_forces = compiled(_dynamics.muscle_bias_forces)
muscle_mass_terms = compiled(_dynamics.muscle_mass_terms)
muscle_inverse_forces = compiled(_dynamics.muscle_inverse_forces)
muscle_kinetic_energy = compiled(_dynamics.muscle_kinetic_energy)
muscle_potential_energy = compiled(_dynamics.muscle_potential_energy)
retract = compiled(_dynamics.retract)
