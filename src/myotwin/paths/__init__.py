"""Musculotendon path geometry with MuJoCo 4.0 spatial-tendon semantics (issue 4, paths).

Path types of Wang et al. 2022 §3.1-3.3: straight segments (`straight`, Type I), site
sequences with via points (`sequence`, Type II), wraps over spheres and cylinders with side
sites (`circle` in 2-D, `sphere`, `cylinder`, and `obstacle` for the shared 3-D steps; Type
III), pulleys (`pulley`). `pathset` compiles the spatial tendons of an MjModel into a `PathSet`
pytree; `length` is the position stage (lengths, tangent points, path points), `moment_arms`
the velocity level (ten_J, moment arms r = -dL/dq, lengthening speeds dL/dt).
All functions are pure JAX functions of (paths, model, q[, qd]) with `model` the skeleton
`engine.Model` compiled from the same MjModel. Float64 is expected (enable x64 first).
See docs/paths.md.
"""

from myotwin.paths.length import (
    PathGeometry,
    PathPoints,
    muscle_lengths,
    path_geometry,
    path_points,
    path_points_from_geometry,
    wrap_frames,
)
from myotwin.paths.moment_arms import (
    length_jacobian,
    length_jacobian_from_geometry,
    lengthening_speeds,
    moment_arms,
)
from myotwin.paths.cylinder import cylinder_wrap
from myotwin.paths.obstacle import Wrap3D, obstacle_wrap
from myotwin.paths.pathset import PathSet, check_model, compile_paths
from myotwin.paths.sequence import WrapType
from myotwin.paths.sphere import sphere_wrap

# Paths declared in Python, OpenSim semantics (docs/paths.md, "OpenSim features and arm26")
from myotwin.paths.builder import (ConditionalPoint, CylinderWrap, MovingPoint, PathBuilder,
                                   Point, SphereWrap)
from myotwin.paths.opensim_composite import CompositePaths
from myotwin.paths.opensim_path import OpenSimPathSet

__all__ = [
    "CompositePaths",
    "ConditionalPoint",
    "CylinderWrap",
    "MovingPoint",
    "OpenSimPathSet",
    "PathBuilder",
    "Point",
    "SphereWrap",
    "PathGeometry",
    "PathPoints",
    "PathSet",
    "Wrap3D",
    "WrapType",
    "check_model",
    "compile_paths",
    "cylinder_wrap",
    "length_jacobian",
    "length_jacobian_from_geometry",
    "lengthening_speeds",
    "moment_arms",
    "muscle_lengths",
    "obstacle_wrap",
    "path_geometry",
    "path_points",
    "path_points_from_geometry",
    "sphere_wrap",
    "wrap_frames",
]
