"""Differentiable skeleton engine in JAX, loading MJCF through MuJoCo's compiler (issue 3).

Stages: `model` (compile once into an immutable pytree) -> `kinematics` (poses, COMs) ->
`jacobian` (dof motion vectors, site Jacobians) -> `mass` and `bias` (M(q), c(q, qd)) ->
`twists` (body velocities and bias accelerations) -> `passive`, `actuation`, `contact` and
`applied` (generalized forces) -> `limits` (joint-limit constraint QP) ->
`dynamics` (forward/inverse; `coupling` projects them onto coordinates that drive several
dofs, OpenSim's spline-coupled joint axes) ->
`integrators` (one step; `implicit` for BDF1/SDIRK2) -> `simulate` (fixed-step rollouts
with lax.scan).
Everything is float64: enable `jax_enable_x64` in the entry point before `load`.
See docs/engine.md.
"""

from myotwin.engine.batching import model_axes
from myotwin.engine.builder import GeomType, ModelBuilder
from myotwin.engine.contact import (
    CONTACT_PARAMS,
    ContactForces,
    ContactModel,
    ContactPoints,
    with_contact_params,
)
from myotwin.engine.coupling import (
    CoordinateCoupling,
    PiecewisePolynomial,
    coordinate_coupling,
    full_motion,
    full_positions,
    reduce_forces,
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
from myotwin.engine.jacobian import dof_motion, point_jacobian
from myotwin.engine.kinematics import Kinematics
from myotwin.engine.limits import (
    LimitRows,
    LimitSolution,
    constrained_acceleration,
)
from myotwin.engine.equality import EqualityModel
from myotwin.engine.friction import FrictionModel
from myotwin.engine.model import JointType, Model, compile_model, load, require_dynamics_support
from myotwin.engine.simulate import rollout, simulate
from myotwin.engine.tendon_armature import TendonArmature
from myotwin.engine.tendons import TendonModel
from myotwin.engine.twists import BodyMotion

# the state functions, compiled (`jax.jit`; api.py)
from myotwin.engine.api import (
    actuator_force,
    actuator_forces,
    actuator_length,
    actuator_moment,
    applied_forces,
    bias_forces,
    body_bias_accelerations,
    body_velocities,
    center_of_mass,
    contact_forces,
    contact_points,
    coupled_forward_dynamics,
    coupled_inverse_dynamics,
    coupled_mass_matrix,
    forward_dynamics,
    forward_kinematics,
    inverse_dynamics,
    inverse_limit_forces,
    kinematics,
    kinetic_energy,
    limit_forces,
    limit_rows,
    mass_matrix,
    passive_forces,
    potential_energy,
    site_jacobians,
    site_poses,
    solve_limits,
    tendon_lengths_and_jacobians,
    tendon_passive_forces,
    tendon_spring_energy,
)

__all__ = [
    "BodyMotion",
    "CONTACT_PARAMS",
    "ContactForces",
    "ContactModel",
    "ContactPoints",
    "CoordinateCoupling",
    "PiecewisePolynomial",
    "coordinate_coupling",
    "coupled_forward_dynamics",
    "coupled_inverse_dynamics",
    "coupled_mass_matrix",
    "full_motion",
    "full_positions",
    "reduce_forces",
    "GeomType",
    "Integrator",
    "JointType",
    "Kinematics",
    "LimitRows",
    "LimitSolution",
    "Model",
    "ModelBuilder",
    "NewtonConvergenceError",
    "NewtonStatus",
    "actuator_force",
    "actuator_forces",
    "actuator_length",
    "actuator_moment",
    "applied_forces",
    "bdf1_solve",
    "bias_forces",
    "body_bias_accelerations",
    "body_velocities",
    "center_of_mass",
    "compile_model",
    "constrained_acceleration",
    "contact_forces",
    "contact_points",
    "dof_motion",
    "forward_dynamics",
    "forward_kinematics",
    "implicit_rollout",
    "integrate_pos",
    "inverse_dynamics",
    "inverse_limit_forces",
    "kinematics",
    "kinetic_energy",
    "limit_forces",
    "limit_rows",
    "load",
    "mass_matrix",
    "model_axes",
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
    "solve_limits",
    "with_contact_params",
    "TendonModel",
    "TendonArmature",
    "EqualityModel",
    "FrictionModel",
    "tendon_lengths_and_jacobians",
    "tendon_passive_forces",
    "tendon_spring_energy",
]
