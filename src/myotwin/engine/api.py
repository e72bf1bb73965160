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
from myotwin.engine.arguments import compiled
# by name: the package's `kinematics` attribute is the function, not the module
from myotwin.engine.kinematics import center_of_mass as _center_of_mass
from myotwin.engine.kinematics import forward_kinematics as _forward_kinematics
from myotwin.engine.kinematics import kinematics as _kinematics
from myotwin.engine.kinematics import site_poses as _site_poses

kinematics = compiled(_kinematics)
forward_kinematics = compiled(_forward_kinematics)
site_poses = compiled(_site_poses)
center_of_mass = compiled(_center_of_mass)
site_jacobians = compiled(_jacobian.site_jacobians)
mass_matrix = compiled(_mass.mass_matrix)
bias_forces = compiled(_bias.bias_forces)
passive_forces = compiled(_passive.passive_forces)
actuator_forces = compiled(_actuation.actuator_forces)
applied_forces = compiled(_applied.applied_forces)
contact_forces = compiled(_contact.contact_forces)
forward_dynamics = compiled(_dynamics.forward_dynamics)
inverse_dynamics = compiled(_dynamics.inverse_dynamics)
kinetic_energy = compiled(_dynamics.kinetic_energy)
potential_energy = compiled(_dynamics.potential_energy)
body_velocities = compiled(_twists.body_velocities)
body_bias_accelerations = compiled(_twists.body_bias_accelerations)
actuator_length = compiled(_actuation.actuator_length)
actuator_moment = compiled(_actuation.actuator_moment)
actuator_force = compiled(_actuation.actuator_force)
contact_points = compiled(_contact.contact_points)
limit_rows = compiled(_limits.limit_rows)
inverse_limit_forces = compiled(_limits.inverse_limit_forces)
tendon_lengths_and_jacobians = compiled(_tendons.tendon_lengths_and_jacobians)
tendon_passive_forces = compiled(_tendons.tendon_passive_forces)
tendon_spring_energy = compiled(_tendons.tendon_spring_energy)
limit_forces = compiled(_limits.limit_forces)
solve_limits = compiled(_limits.solve_limits)
coupled_forward_dynamics = compiled(_coupled.coupled_forward_dynamics)
coupled_inverse_dynamics = compiled(_coupled.coupled_inverse_dynamics)
coupled_mass_matrix = compiled(_coupled.coupled_mass_matrix)
