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

import jax

from myotwin.engine.arguments import checked
from myotwin.inertia import dynamics as _dynamics
from myotwin.inertia import path_fraction as _path_fraction

mass_point_positions = jax.jit(checked(_path_fraction.mass_point_positions))
mass_point_jacobians = jax.jit(checked(_dynamics.mass_point_jacobians))
jacobians_by_autodiff = jax.jit(checked(_dynamics.jacobians_by_autodiff))
mass_point_velocities = jax.jit(checked(_dynamics.mass_point_velocities))
mass_point_bias_accelerations = jax.jit(checked(_dynamics.mass_point_bias_accelerations))
jacobians_and_bias = jax.jit(checked(_dynamics.jacobians_and_bias))
muscle_mass_matrix = jax.jit(checked(_dynamics.muscle_mass_matrix))
muscle_bias_forces = jax.jit(checked(_dynamics.muscle_bias_forces))
muscle_mass_terms = jax.jit(checked(_dynamics.muscle_mass_terms))
muscle_inverse_forces = jax.jit(checked(_dynamics.muscle_inverse_forces))
muscle_kinetic_energy = jax.jit(checked(_dynamics.muscle_kinetic_energy))
muscle_potential_energy = jax.jit(checked(_dynamics.muscle_potential_energy))
retract = jax.jit(checked(_dynamics.retract))
