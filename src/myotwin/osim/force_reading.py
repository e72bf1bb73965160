"""The ForceSet of an .osim file -> `description` data: muscles (parameters and GeometryPath)
and CoordinateActuators.

Muscle parameters are recorded under SI names (those of `models.arm26.MUSCLES`), read-only:

* always: `type` (the XML tag), `applies_force` (bool), and the five parameters every OpenSim
  muscle has, `max_isometric_force_N`, `optimal_fiber_length_m`, `tendon_slack_length_m`,
  `pennation_angle_at_optimal_rad`, `max_contraction_velocity_Lopt_per_s`; a file that omits
  one gets OpenSim's default (Muscle::constructProperties: 1000 N, 0.1 m, 0.2 m, 0 rad,
  10 L_opt/s), and `opensim_defaults_used` lists the XML names that were defaulted;
* the properties that set a type's physics (`TYPE_DEFAULTS`: time constants, Thelen's shape
  factors and strains, damping, De Groote's width scale and strains, minimum activation) and
  the bounds of its control (min_control, max_control: static optimization's bounds):
  the file's value, or OpenSim's default (also listed in `opensim_defaults_used`);
* where present: the other properties of the muscle type (tables below), and for
  Millard2012EquilibriumMuscle its curve objects as `millard_curve_parameters` (curve ->
  parameter -> value, keyword arguments of `muscle.millard2012`'s curve builders; empty,
  i.e. unset, curve properties are left out).
`optimal_force` is read past: a muscle computes its force from max_isometric_force, not from
this PathActuator property. Any other property is refused (an OsimError), so nothing the file
says about a muscle is dropped unseen.
"""

from __future__ import annotations

import math
import types

import xml.etree.ElementTree as ET

from myotwin.osim.description import (CoordinateActuator, MovingPathPoint, Muscle, PathPoint,
                                      PathWrap)
from myotwin.osim.errors import Where
from myotwin.osim.functions import read_function
from myotwin.osim.skeleton_reading import body_path
from myotwin.osim.xml_values import Node

MUSCLE_TYPES = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle", "DeGrooteFregly2016Muscle")
#: OpenSim 4.6's concrete Muscle classes (the ID tool's keyword Muscles excludes them; a
#: force set file's muscles are found by them; tests check the list against the opensim
#: package's class hierarchy).
MUSCLE_TAGS = ("DeGrooteFregly2016Muscle", "MeyerFregly2016Muscle",
               "Millard2012AccelerationMuscle", "Millard2012EquilibriumMuscle",
               "RigidTendonMuscle", "Thelen2003Muscle")
#: Its other concrete Actuator classes (the ID tool's keyword Actuators excludes these and
#: the muscles).
ACTUATOR_TAGS = ("ActivationCoordinateActuator", "BodyActuator", "ClutchedPathSpring",
                 "CoordinateActuator", "McKibbenActuator", "PathActuator", "PointActuator",
                 "PointToPointActuator", "TorqueActuator")

#: XML property -> (recorded name, kind); kinds: number (finite), bound (may be +-Inf), flag,
#: text. Properties of every muscle (Force, Actuator, Muscle):
_MUSCLE = {
    "max_isometric_force": ("max_isometric_force_N", "number"),
    "optimal_fiber_length": ("optimal_fiber_length_m", "number"),
    "tendon_slack_length": ("tendon_slack_length_m", "number"),
    "pennation_angle_at_optimal": ("pennation_angle_at_optimal_rad", "number"),
    "max_contraction_velocity": ("max_contraction_velocity_Lopt_per_s", "number"),
    "ignore_tendon_compliance": ("ignore_tendon_compliance", "flag"),
    "ignore_activation_dynamics": ("ignore_activation_dynamics", "flag"),
    "min_control": ("min_control", "bound"),
    "max_control": ("max_control", "bound"),
}
#: OpenSim's defaults of the five parameters (Muscle::constructProperties).
_MUSCLE_DEFAULTS = {"max_isometric_force": 1000.0, "optimal_fiber_length": 0.1,
                    "tendon_slack_length": 0.2, "pennation_angle_at_optimal": 0.0,
                    "max_contraction_velocity": 10.0}
#: OpenSim 4.6's defaults of the properties of each muscle type that set its physics (the
#: values of a default-constructed object; tests/osim/test_osim_muscles.py reads them from
#: OpenSim): a muscle that leaves one out gets it, so the muscles of a group need not all
#: give the same properties.
TYPE_DEFAULTS = {
    "Thelen2003Muscle": {"min_control": 0.01, "max_control": 1.0,
                         "activation_time_constant": 0.015, "deactivation_time_constant": 0.05,
                         "FmaxTendonStrain": 0.04, "FmaxMuscleStrain": 0.6,
                         "KshapeActive": 0.45, "KshapePassive": 5.0, "Af": 0.25, "Flen": 1.4,
                         "fv_linear_extrap_threshold": 0.95, "minimum_activation": 0.01},
    "Millard2012EquilibriumMuscle": {"min_control": 0.01, "max_control": 1.0,
                                     "activation_time_constant": 0.01,
                                     "deactivation_time_constant": 0.04,
                                     "fiber_damping": 0.1, "minimum_activation": 0.01},
    "DeGrooteFregly2016Muscle": {"min_control": 0.0, "max_control": 1.0,
                                 "activation_time_constant": 0.015,
                                 "deactivation_time_constant": 0.06, "fiber_damping": 0.0,
                                 "active_force_width_scale": 1.0,
                                 "passive_fiber_strain_at_one_norm_force": 0.6,
                                 "tendon_strain_at_one_norm_force": 0.049},
}
_ACTIVATION = {
    "activation_time_constant": ("activation_time_constant_s", "number"),
    "deactivation_time_constant": ("deactivation_time_constant_s", "number"),
    "default_activation": ("default_activation", "number"),
}
_TYPE_PROPERTIES = {
    "Thelen2003Muscle": {
        **_ACTIVATION,
        "FmaxTendonStrain": ("fmax_tendon_strain", "number"),
        "FmaxMuscleStrain": ("fmax_muscle_strain", "number"),
        "KshapeActive": ("kshape_active", "number"),
        "KshapePassive": ("kshape_passive", "number"),
        "Af": ("af", "number"),
        "Flen": ("flen", "number"),
        "fv_linear_extrap_threshold": ("fv_linear_extrap_threshold", "number"),
        "maximum_pennation_angle": ("maximum_pennation_angle_rad", "number"),
        "minimum_activation": ("minimum_activation", "number"),
        "default_fiber_length": ("default_fiber_length_m", "number"),
    },
    "Millard2012EquilibriumMuscle": {
        **_ACTIVATION,
        "fiber_damping": ("fiber_damping", "number"),
        "minimum_activation": ("minimum_activation", "number"),
        "maximum_pennation_angle": ("maximum_pennation_angle_rad", "number"),
        "default_fiber_length": ("default_fiber_length_m", "number"),
    },
    "DeGrooteFregly2016Muscle": {
        **_ACTIVATION,
        "fiber_damping": ("fiber_damping", "number"),
        "active_force_width_scale": ("active_force_width_scale", "number"),
        "passive_fiber_strain_at_one_norm_force": ("passive_fiber_strain_at_one_norm_force",
                                                   "number"),
        "tendon_strain_at_one_norm_force": ("tendon_strain_at_one_norm_force", "number"),
        "ignore_passive_fiber_force": ("ignore_passive_fiber_force", "flag"),
        "default_normalized_tendon_force": ("default_normalized_tendon_force", "number"),
        "tendon_compliance_dynamics_mode": ("tendon_compliance_dynamics_mode", "text"),
    },
}


def muscle_property(kind: str, recorded: str) -> str | None:
    """The XML property of muscle type `kind` recorded under the name `recorded`, if any."""
    table = {**_MUSCLE, **_TYPE_PROPERTIES.get(kind, {})}
    return next((tag for tag, (name, _) in table.items() if name == recorded), None)


#: Millard curve objects: XML tag -> (key of `millard_curve_parameters`, its properties).
_MILLARD_CURVES = {
    "ActiveForceLengthCurve": ("active_force_length", (
        "min_norm_active_fiber_length", "transition_norm_fiber_length",
        "max_norm_active_fiber_length", "shallow_ascending_slope", "minimum_value")),
    "ForceVelocityCurve": ("force_velocity", (
        "concentric_slope_at_vmax", "concentric_slope_near_vmax", "isometric_slope",
        "eccentric_slope_at_vmax", "eccentric_slope_near_vmax",
        "max_eccentric_velocity_force_multiplier", "concentric_curviness",
        "eccentric_curviness")),
    "FiberForceLengthCurve": ("fiber_force_length", (
        "strain_at_zero_force", "strain_at_one_norm_force", "stiffness_at_low_force",
        "stiffness_at_one_norm_force", "curviness")),
    "TendonForceLengthCurve": ("tendon_force_length", (
        "strain_at_one_norm_force", "stiffness_at_one_norm_force", "norm_force_at_toe_end",
        "curviness")),
}
_READ_PAST = ("GeometryPath", "appliesForce", "optimal_force")


def _value(node: Node, prop: str, kind: str):
    if kind == "flag":
        return node.flag(prop)
    if kind == "text":
        return node.text(prop)
    return node.number(prop, finite=kind == "number")


def _millard_curves(node: Node) -> types.MappingProxyType:
    curves = {}
    for tag, (key, props) in _MILLARD_CURVES.items():
        found = node.find(tag)
        if found is None:
            continue
        curve = Node.of(found, node.where)
        curve.check_children(props)
        curves[key] = types.MappingProxyType({p: curve.number(p) for p in props
                                              if curve.has_value(p)})
    return types.MappingProxyType(curves)


def muscle_parameters(node: Node) -> types.MappingProxyType:
    """The recorded parameters of a muscle element (see the module docstring)."""
    table = {**_MUSCLE, **_TYPE_PROPERTIES[node.tag]}
    curves = _MILLARD_CURVES if node.tag == "Millard2012EquilibriumMuscle" else {}
    node.check_children((*table, *_READ_PAST, *curves))
    params = {"type": node.tag, "applies_force": node.flag("appliesForce", True)}
    defaulted = []
    for prop, (key, kind) in table.items():
        if node.find(prop) is not None:
            params[key] = _value(node, prop, kind)
        elif prop in (defaults := {**_MUSCLE_DEFAULTS, **TYPE_DEFAULTS[node.tag]}):
            params[key] = defaults[prop]
            defaulted.append(prop)
    params["opensim_defaults_used"] = tuple(defaulted)
    if curves:
        params["millard_curve_parameters"] = _millard_curves(node)
    return types.MappingProxyType(params)


def _coordinate_socket(node: Node, tag: str, coordinates) -> tuple[str, str]:
    """(coordinate, joint) named by the socket property `tag`, which must read
    /jointset/<joint>/<coordinate> of a coordinate of the model."""
    path = node.text(tag)
    parts = path.split("/")
    if (len(parts) != 4 or parts[:2] != ["", "jointset"]
            or coordinates.get(parts[3]) != parts[2]):
        raise node.error(f"<{tag}> must be /jointset/<joint>/<coordinate> of a coordinate of "
                         f"the model, got {path!r}")
    return parts[3], parts[2]


def _moving_path_point(node: Node, body: str, coordinates) -> MovingPathPoint:
    """A MovingPathPoint: three coordinate sockets naming one coordinate (OpenSim 4.6 refuses a
    missing or empty socket, and different coordinates: MovingPathPoint::extendConnectToModel)
    and three location functions (absent: OpenSim's default Constant 0). A <location> is read
    past: OpenSim ignores it (checked with OpenSim 4.6)."""
    named = [_coordinate_socket(node, f"socket_{axis}_coordinate", coordinates)
             for axis in "xyz"]
    if len(set(named)) != 1:
        raise node.error("the x, y and z coordinate sockets must name the same coordinate "
                         "(OpenSim 4.6 refuses others), got "
                         f"{[node.text(f'socket_{axis}_coordinate') for axis in 'xyz']}")
    functions = []
    for axis in "xyz":
        where = Where(node.where.file, node.tag, node.name,
                      ", ".join(c for c in (f"{axis}_location", node.where.context) if c))
        prop = node.find(f"{axis}_location")
        if prop is None:
            functions.append(read_function(ET.Element("Constant"), where))
            continue
        inner = list(prop)
        if len(inner) != 1:
            raise node.error(f"<{axis}_location> must hold exactly one function, got "
                             f"{[e.tag for e in inner]}")
        functions.append(read_function(inner[0], where))
    coordinate, joint = named[0]
    return MovingPathPoint(node.name, body, tuple(functions), coordinate, joint)


#: The properties of each supported path point.
_POINT_PROPERTIES = {
    "PathPoint": ("socket_parent_frame", "location"),
    "ConditionalPathPoint": ("socket_parent_frame", "location", "socket_coordinate", "range"),
    "MovingPathPoint": ("socket_parent_frame", "socket_x_coordinate", "socket_y_coordinate",
                        "socket_z_coordinate", "x_location", "y_location", "z_location",
                        "location"),
}


def _path_point(node: Node, bodies, coordinates) -> PathPoint | MovingPathPoint:
    if node.tag not in _POINT_PROPERTIES:
        raise node.error(f"{node.tag} is not a supported path point (PathPoint, "
                         "ConditionalPathPoint, MovingPathPoint)")
    node.check_children(_POINT_PROPERTIES[node.tag])
    frame = node.text("socket_parent_frame")
    body = body_path(node, "socket_parent_frame", frame)
    if body not in bodies:
        raise node.error(f"<socket_parent_frame> names a body that is not in the BodySet, got "
                         f"{frame!r}")
    if node.tag == "MovingPathPoint":
        return _moving_path_point(node, body, coordinates)
    conditional = node.tag == "ConditionalPathPoint"
    location = node.numbers("location", 3)
    if not conditional:
        return PathPoint(node.name, body, location)
    coordinate, joint = _coordinate_socket(node, "socket_coordinate", coordinates)
    return PathPoint(node.name, body, location, coordinate, joint, node.numbers("range", 2))


#: PathWrap <method> spellings OpenSim accepts (PathWrap::extendConnectToModel; "Unassigned"
#: is its default, hybrid), by the method they name.
_METHODS = {"hybrid": ("hybrid", "Hybrid", "HYBRID", "Unassigned"),
            "midpoint": ("midpoint", "Midpoint", "MIDPOINT"),
            "axial": ("axial", "Axial", "AXIAL")}


def _path_wrap(node: Node, wraps, ellipsoids) -> PathWrap:
    node.check_children(("wrap_object", "method", "range"))
    name = node.text("wrap_object")
    if name not in wraps:
        raise node.error(f"<wrap_object> names no wrap object of the model, got {name!r}")
    raw = node.numbers("range", 2, (-1.0, -1.0))
    if any(x != int(x) for x in raw):
        raise node.error(f"<range> must hold point indices, got {node.text('range')!r}")
    written = node.text("method", "hybrid")
    method = next((m for m, spellings in _METHODS.items() if written in spellings), None)
    if method is None:
        raise node.error(f"<method> must be hybrid, midpoint or axial (OpenSim refuses other "
                         f"values), got {written!r}")
    if name in ellipsoids and method != "hybrid":
        raise node.error(f"the {method} method is not supported for WrapEllipsoid {name!r} "
                         f"(only hybrid, OpenSim's default), got <method>{written}</method>")
    return PathWrap(name, (int(raw[0]), int(raw[1])), method)


def read_muscle(node: Node, bodies, coordinates, wraps, omitted_wraps,
                ellipsoids=frozenset()) -> Muscle:
    """A muscle of a supported type. bodies: known body names (with WORLD); coordinates:
    coordinate -> joint; wraps / omitted_wraps: names of the kept / omitted wrap objects;
    ellipsoids: names of the kept WrapEllipsoids (their PathWraps must use "hybrid")."""
    parameters = muscle_parameters(node)
    path = Node.of(node.require("GeometryPath"), node.where)
    path.check_children(("PathPointSet", "PathWrapSet", "Appearance", "default_color"))
    context = f"muscle {node.name}"
    points = tuple(_path_point(Node.of(e, path.where, context), bodies, coordinates)
                   for e in path.objects("PathPointSet"))
    kept = []
    for elem in path.objects("PathWrapSet"):
        wrap = _path_wrap(Node.of(elem, path.where, context), wraps | omitted_wraps,
                          ellipsoids)
        if wrap.wrap_object not in omitted_wraps:
            kept.append(wrap)
    return Muscle(node.tag, node.name, parameters, points, tuple(kept))


def read_coordinate_actuator(node: Node, coordinates) -> CoordinateActuator:
    """A CoordinateActuator on one of the model's coordinates."""
    node.check_children(("appliesForce", "min_control", "max_control", "coordinate",
                         "optimal_force"))
    if not node.flag("appliesForce", True):
        raise node.error("a disabled actuator (<appliesForce>false</appliesForce>) is not "
                         f"supported; pass omit=({node.name!r},) to load the model without it")
    coordinate = node.text("coordinate")
    if coordinate not in coordinates:
        raise node.error(f"<coordinate> names no coordinate of the model, got {coordinate!r}")
    optimal_force = node.number("optimal_force")
    if optimal_force == 0.0:
        raise node.error("<optimal_force> must be non-zero, got "
                         f"{node.text('optimal_force')!r}")
    lo = node.number("min_control", -math.inf, finite=False)
    hi = node.number("max_control", math.inf, finite=False)
    if not lo <= hi:
        raise node.error("the control range (<min_control>, <max_control>) must have min <= "
                         f"max, got ({lo!r}, {hi!r})")
    return CoordinateActuator(node.name, coordinate, optimal_force, lo, hi)
