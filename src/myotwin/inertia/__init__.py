"""Inertial musculotendons: mass points on muscle paths (Wang et al. 2022, §3, Eqs. 1-28).

A path given a mass carries m mass points at fixed fractions alpha of its length
(`muscle_mass.py`: specification, validation, the `MuscleMass` pytree kept in
`engine.Model.muscle_mass`, MJCF `muscle_mass:<tendon>` numerics); the points slide with the
path (`path_fraction.py`: x_alpha(q) for straight, via-point and wrapped paths); their inertia
and weight enter the skeleton's equations of motion by the seed's Eq. 7 (`dynamics.py`), which
`engine.forward_dynamics`, `inverse_dynamics`, `kinetic_energy` and `potential_energy` include
whenever the model carries muscle mass. Models with OpenSim-semantics paths (`paths.builder`,
e.g. arm26) place their points on OpenSim's current path (`opensim_points.py`, `composite.py`).
Float64 expected (enable x64 in the entry point).
See docs/inertia.md.
"""

from myotwin.inertia.anchors import AnchorMotion, PathAnchors, anchor_motion, path_anchors
from myotwin.inertia.arcs import WrapArc, arc_point, wrap_arc
from myotwin.inertia.muscle_mass import (
    MuscleMass,
    PointRule,
    PositionModel,
    distribution,
    muscle_mass_from_mjcf,
    path_masses,
    with_muscle_mass,
    without_qvv,
)
from myotwin.inertia.path_fraction import (
    mass_point_layout,
    mass_point_positions_from_anchors,
    mass_point_positions_from_kinematics,
    path_pieces,
    piece_layout,
    points_along_path,
)

# the state functions, compiled (`jax.jit`; api.py)
from myotwin.inertia.api import (
    jacobians_and_bias,
    jacobians_by_autodiff,
    mass_point_bias_accelerations,
    mass_point_jacobians,
    mass_point_positions,
    mass_point_velocities,
    muscle_bias_forces,
    muscle_inverse_forces,
    muscle_kinetic_energy,
    muscle_mass_matrix,
    muscle_mass_terms,
    muscle_potential_energy,
    retract,
)

__all__ = [
    "AnchorMotion",
    "MuscleMass",
    "PathAnchors",
    "PointRule",
    "PositionModel",
    "WrapArc",
    "anchor_motion",
    "arc_point",
    "distribution",
    "jacobians_and_bias",
    "jacobians_by_autodiff",
    "mass_point_bias_accelerations",
    "mass_point_jacobians",
    "mass_point_layout",
    "mass_point_positions",
    "mass_point_positions_from_anchors",
    "mass_point_positions_from_kinematics",
    "mass_point_velocities",
    "muscle_bias_forces",
    "muscle_inverse_forces",
    "muscle_kinetic_energy",
    "muscle_mass_from_mjcf",
    "muscle_mass_matrix",
    "muscle_mass_terms",
    "muscle_potential_energy",
    "path_anchors",
    "path_masses",
    "path_pieces",
    "piece_layout",
    "points_along_path",
    "retract",
    "with_muscle_mass",
    "without_qvv",
    "wrap_arc",
]
