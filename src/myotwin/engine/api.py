"""The engine's public state functions, compiled (`jax.jit`), as `myotwin.engine` exports them.

Each takes the model as its first argument and arrays after it (keyword arguments that are
None or arrays), so `jax.jit` traces it once per model structure and argument shapes and
later calls run the compiled program. Called from plain Python, an uncompiled function is
evaluated op by op: `forward_dynamics` of the pai2010 arm with muscle mass took 13.5 s at its
first call (each primitive compiled alone) and 118 ms at every later one, against 1.7 s and
51 us compiled (`benchmarks/first_call.py`; docs/engine.md "Public functions are compiled").
Inside a caller's `jit`, `grad` or `vmap` a compiled function is inlined, so
composing them costs nothing. The paths' entry points (`myotwin.muscle_lengths`, ...) are
compiled the same way (`paths/on_model.py`).

The engine's own modules call the uncompiled functions of their defining modules
(`engine.dynamics.forward_dynamics`, ...), which are the same functions before `jax.jit`.
The coupled functions (`coupled_*`) take the `CoordinateCoupling` pytree and `limit_forces`
/ `solve_limits` the mass matrix's `cholesky.Factor` as arguments, traced like the model.
"""

from __future__ import annotations

import jax

from myotwin.engine import actuation as _actuation
from myotwin.engine import applied as _applied
from myotwin.engine import bias as _bias
from myotwin.engine import contact as _contact
from myotwin.engine import coupled_dynamics as _coupled
from myotwin.engine import dynamics as _dynamics
from myotwin.engine import jacobian as _jacobian
from myotwin.engine import limits as _limits
from myotwin.engine import mass as _mass
from myotwin.engine import passive as _passive
from myotwin.engine import tendons as _tendons
from myotwin.engine import twists as _twists
from myotwin.engine.arguments import checked
# by name: the package's `kinematics` attribute is the function, not the module
from myotwin.engine.kinematics import center_of_mass as _center_of_mass
from myotwin.engine.kinematics import forward_kinematics as _forward_kinematics
from myotwin.engine.kinematics import kinematics as _kinematics
from myotwin.engine.kinematics import site_poses as _site_poses

kinematics = jax.jit(checked(_kinematics))
forward_kinematics = jax.jit(checked(_forward_kinematics))
site_poses = jax.jit(checked(_site_poses))
center_of_mass = jax.jit(checked(_center_of_mass))
site_jacobians = jax.jit(checked(_jacobian.site_jacobians))
mass_matrix = jax.jit(checked(_mass.mass_matrix))
bias_forces = jax.jit(checked(_bias.bias_forces))
passive_forces = jax.jit(checked(_passive.passive_forces))
actuator_forces = jax.jit(checked(_actuation.actuator_forces))
applied_forces = jax.jit(checked(_applied.applied_forces))
contact_forces = jax.jit(checked(_contact.contact_forces))
forward_dynamics = jax.jit(checked(_dynamics.forward_dynamics))
inverse_dynamics = jax.jit(checked(_dynamics.inverse_dynamics))
kinetic_energy = jax.jit(checked(_dynamics.kinetic_energy))
potential_energy = jax.jit(checked(_dynamics.potential_energy))
body_velocities = jax.jit(checked(_twists.body_velocities))
body_bias_accelerations = jax.jit(checked(_twists.body_bias_accelerations))
actuator_length = jax.jit(checked(_actuation.actuator_length))
actuator_moment = jax.jit(checked(_actuation.actuator_moment))
actuator_force = jax.jit(checked(_actuation.actuator_force))
contact_points = jax.jit(checked(_contact.contact_points))
limit_rows = jax.jit(checked(_limits.limit_rows))
inverse_limit_forces = jax.jit(checked(_limits.inverse_limit_forces))
tendon_lengths_and_jacobians = jax.jit(checked(_tendons.tendon_lengths_and_jacobians))
tendon_passive_forces = jax.jit(checked(_tendons.tendon_passive_forces))
tendon_spring_energy = jax.jit(checked(_tendons.tendon_spring_energy))
limit_forces = jax.jit(checked(_limits.limit_forces))
solve_limits = jax.jit(checked(_limits.solve_limits))
coupled_forward_dynamics = jax.jit(checked(_coupled.coupled_forward_dynamics))
coupled_inverse_dynamics = jax.jit(checked(_coupled.coupled_inverse_dynamics))
coupled_mass_matrix = jax.jit(checked(_coupled.coupled_mass_matrix))
