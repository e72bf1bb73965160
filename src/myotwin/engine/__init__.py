"""Differentiable skeleton engine in JAX, loading MJCF through MuJoCo's compiler (issue 3).

Stages: `model` (compile once into an immutable pytree) -> `kinematics` (poses, COMs) ->
`jacobian` (dof motion vectors, site Jacobians) -> `mass` and `bias` (M(q), c(q, qd)) ->
`passive` and `actuation` (generalized forces) -> `dynamics` (forward/inverse) ->
`integrators` (one step; `implicit` for BDF1/SDIRK2) -> `simulate` (fixed-step rollouts
with lax.scan).
Everything is float64: enable `jax_enable_x64` in the entry point before `load`.
See docs/engine.md.
"""

from myotwin.engine.actuation import actuator_force, actuator_forces
from myotwin.engine.bias import bias_forces
from myotwin.engine.dynamics import (
    forward_dynamics,
    inverse_dynamics,
    kinetic_energy,
    potential_energy,
)
from myotwin.engine.integrators import Integrator, integrate_pos
from myotwin.engine.implicit import (
    NewtonConvergenceError,
    NewtonStatus,
    bdf1_solve,
    implicit_rollout,
    sdirk2_solve,
    simulate_implicit,
)
from myotwin.engine.jacobian import dof_motion, point_jacobian, site_jacobians
from myotwin.engine.kinematics import (
    Kinematics,
    center_of_mass,
    forward_kinematics,
    kinematics,
    site_poses,
)
from myotwin.engine.mass import mass_matrix
from myotwin.engine.model import JointType, Model, compile_model, load, require_dynamics_support
from myotwin.engine.passive import passive_forces
from myotwin.engine.simulate import rollout, simulate

__all__ = [
    "Integrator",
    "JointType",
    "Kinematics",
    "Model",
    "NewtonConvergenceError",
    "NewtonStatus",
    "actuator_force",
    "actuator_forces",
    "bdf1_solve",
    "bias_forces",
    "center_of_mass",
    "compile_model",
    "dof_motion",
    "forward_dynamics",
    "forward_kinematics",
    "implicit_rollout",
    "integrate_pos",
    "inverse_dynamics",
    "kinematics",
    "kinetic_energy",
    "load",
    "mass_matrix",
    "passive_forces",
    "point_jacobian",
    "potential_energy",
    "require_dynamics_support",
    "rollout",
    "sdirk2_solve",
    "site_jacobians",
    "site_poses",
    "simulate",
    "simulate_implicit",
]
