"""Differentiable skeleton engine in JAX, loading MJCF through MuJoCo's compiler (issue 3).

Stages: `model` (compile once into an immutable pytree) -> `kinematics` (poses, COMs) ->
`jacobian` (dof motion vectors, site Jacobians) -> `mass` and `bias` (M(q), c(q, qd)).
Everything is float64: enable `jax_enable_x64` in the entry point before `load`.
See docs/engine.md.
"""

from myotwin.engine.bias import bias_forces
from myotwin.engine.jacobian import dof_motion, point_jacobian, site_jacobians
from myotwin.engine.kinematics import (
    Kinematics,
    center_of_mass,
    forward_kinematics,
    kinematics,
    site_poses,
)
from myotwin.engine.mass import mass_matrix
from myotwin.engine.model import JointType, Model, compile_model, load

__all__ = [
    "JointType",
    "Kinematics",
    "Model",
    "bias_forces",
    "center_of_mass",
    "compile_model",
    "dof_motion",
    "forward_kinematics",
    "kinematics",
    "load",
    "mass_matrix",
    "point_jacobian",
    "site_jacobians",
    "site_poses",
]
