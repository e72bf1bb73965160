"""The supported subset of an .osim model as plain, validated data (read by `xml_reading`,
turned into builder calls by `to_builders`).

Units are SI as in the file (m, kg, kg m^2, rad, N). Ground is the engine's world body, named
`WORLD` ("world") here; every other body keeps its OpenSim name.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping

from myotwin.engine.builder import WORLD

Vec3 = tuple[float, float, float]

__all__ = ["WORLD", "Body", "Coordinate", "CoordinateActuator", "CoordinateCoupler", "Document",
           "Frame", "Joint", "JointAxis", "JointKind", "MovingPathPoint", "Muscle", "PathPoint",
           "PathWrap", "WrapCylinder", "WrapEllipsoid", "WrapObstacle", "WrapSphere"]


@dataclasses.dataclass(frozen=True)
class Frame:
    """A frame fixed on `body`: origin `translation` (m) and `orientation` (OpenSim's
    body-fixed X-Y-Z Euler angles, rad) in the body frame."""

    body: str
    translation: Vec3 = (0.0, 0.0, 0.0)
    orientation: Vec3 = (0.0, 0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class Body:
    """mass (kg), mass_center (m, body frame), inertia about the mass center (kg m^2) as
    (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) in the body frame."""

    name: str
    mass: float
    mass_center: Vec3
    inertia: tuple[float, float, float, float, float, float]


class JointKind(enum.Enum):
    """What a supported joint is in the engine."""

    WELD = "weld"      # the child body is fixed to the parent: no engine joint
    HINGE = "hinge"    # rotation about an axis through the joint frame's origin
    SLIDE = "slide"    # translation along an axis
    CUSTOM = "custom"  # several moving axes (JointAxis), each an engine hinge or slide


@dataclasses.dataclass(frozen=True)
class Coordinate:
    """An OpenSim coordinate: range (rad or m) and clamped are recorded, not enforced;
    default_value (rad or m) is OpenSim's initial value and default_speed_value (rad/s or
    m/s) its initial speed; locked: the file's <locked> (the coordinate held at
    default_value, `loader`)."""

    name: str
    range: tuple[float, float]
    clamped: bool
    default_value: float
    locked: bool = False
    default_speed_value: float = 0.0


@dataclasses.dataclass(frozen=True)
class JointAxis:
    """One moving axis of a joint: a rotation (HINGE) about, or a translation (SLIDE) along,
    the unit vector `axis` in the joint frame, by `function(coordinate)` (rad or m; an
    `osim.functions.OsimFunction`, or None for the identity: the coordinate itself, as in a
    PinJoint, a SliderJoint or a LinearFunction with coefficients (1, 0)). `name` is the
    OpenSim TransformAxis name (rotation1..translation3), or the joint's tag for a PinJoint /
    SliderJoint."""

    name: str
    kind: JointKind
    axis: Vec3
    coordinate: str
    function: object | None = None


@dataclasses.dataclass(frozen=True)
class Joint:
    """A joint of the subset. parent / child: the joint frames on the parent and child bodies
    (OpenSim's socket_parent_frame / socket_child_frame); coordinates: the joint's own, in file
    order; axes: its moving axes in the order they move the child (OpenSim's SpatialTransform:
    the translations, in the parent joint frame, then the rotations, body-fixed), none for a
    weld."""

    tag: str
    name: str
    parent: Frame
    child: Frame
    coordinates: tuple[Coordinate, ...] = ()
    axes: tuple[JointAxis, ...] = ()

    @property
    def kind(self) -> JointKind:
        """WELD without moving axes; else the kind of a single axis (HINGE or SLIDE), or
        CUSTOM for several."""
        if not self.axes:
            return JointKind.WELD
        return self.axes[0].kind if len(self.axes) == 1 else JointKind.CUSTOM


@dataclasses.dataclass(frozen=True)
class WrapCylinder:
    """OpenSim WrapCylinder on `body` (frame: translation m, xyz_body_rotation rad; axis = the
    frame's z), radius and length (m), quadrant as in the file; active: False for
    <active>false</active> (its PathWraps stay, unwrapped: `PathBuilder.add_opensim_cylinder`;
    the same for every kind)."""

    name: str
    body: str
    translation: Vec3
    xyz_body_rotation: Vec3
    radius: float
    length: float
    quadrant: str
    active: bool = True


@dataclasses.dataclass(frozen=True)
class WrapObstacle:
    """OpenSim WrapCylinderObst on `body`: frame as WrapCylinder, radius (m), wrap_direction
    ("righthand" / "lefthand")."""

    name: str
    body: str
    translation: Vec3
    xyz_body_rotation: Vec3
    radius: float
    wrap_direction: str
    active: bool = True


@dataclasses.dataclass(frozen=True)
class WrapSphere:
    """OpenSim WrapSphere on `body`: frame as WrapCylinder (its centre at `translation`),
    radius (m), quadrant as in the file."""

    name: str
    body: str
    translation: Vec3
    xyz_body_rotation: Vec3
    radius: float
    quadrant: str
    active: bool = True


@dataclasses.dataclass(frozen=True)
class WrapEllipsoid:
    """OpenSim WrapEllipsoid on `body`: frame as WrapCylinder, `dimensions` the semi-axes
    along the frame's x, y, z (m), quadrant as in the file."""

    name: str
    body: str
    translation: Vec3
    xyz_body_rotation: Vec3
    dimensions: Vec3
    quadrant: str
    active: bool = True


@dataclasses.dataclass(frozen=True)
class PathPoint:
    """A PathPoint (coordinate None) or ConditionalPathPoint (active while `coordinate`, of
    joint `joint`, is in `range`, rad or m) at `location` (m) in `body`'s frame."""

    name: str
    body: str
    location: Vec3
    coordinate: str | None = None
    joint: str | None = None
    range: tuple[float, float] | None = None


@dataclasses.dataclass(frozen=True)
class MovingPathPoint:
    """A MovingPathPoint on `body`: its location in the body frame is (f_x(q), f_y(q), f_z(q))
    m, each f an `osim.functions.OsimFunction` (`functions`, x, y, z; an absent <x_location>
    is OpenSim's default Constant 0) of the one coordinate `coordinate` (of joint `joint`) that
    OpenSim 4.6 requires all three sockets to name. OpenSim clamps the coordinate's value to
    its range before evaluating (`to_builders` passes the range on)."""

    name: str
    body: str
    functions: tuple[object, object, object]
    coordinate: str
    joint: str


@dataclasses.dataclass(frozen=True)
class PathWrap:
    """A PathWrap: the wrap object's name and OpenSim's 1-based point range (-1 = first/last);
    method as in the file ("hybrid" when absent; it matters only for ellipsoids, which support
    hybrid alone)."""

    wrap_object: str
    range: tuple[int, int]
    method: str = "hybrid"


@dataclasses.dataclass(frozen=True)
class Muscle:
    """A muscle of a supported type: its parameters (read-only mapping with SI names, see
    `force_reading`) and its GeometryPath (points in order; wraps in PathWrapSet order, those
    on omitted wrap objects already dropped)."""

    tag: str
    name: str
    parameters: Mapping[str, object]
    points: tuple[PathPoint | MovingPathPoint, ...]
    wraps: tuple[PathWrap, ...]


@dataclasses.dataclass(frozen=True)
class CoordinateActuator:
    """Generalized force optimal_force * control on `coordinate`; control bounds as in the
    file (+-inf when unbounded)."""

    name: str
    coordinate: str
    optimal_force: float
    min_control: float
    max_control: float


@dataclasses.dataclass(frozen=True)
class CoordinateCoupler:
    """An enforced CoordinateCouplerConstraint `name`: the coordinate `dependent` is
    scale_factor * function(independent) (`function` an `osim.functions.OsimFunction` of the
    one independent coordinate), eliminated by `loader` (docs/osim.md)."""

    name: str
    dependent: str
    independent: str
    function: object
    scale_factor: float
    description: str


@dataclasses.dataclass(frozen=True)
class Document:
    """A whole model of the subset. joints are ordered parent first (each body after the body
    it hangs from); muscles and actuators in ForceSet order; omitted: names of the elements
    left out because the caller listed them in `omit`, in file order; couplers: the enforced
    CoordinateCouplerConstraints (ConstraintSet order); unenforced_constraints: the names of
    those with isEnforced false (no effect in OpenSim: left out); force_names: the muscles and
    CoordinateActuators together in ForceSet order; controls: the enabled PrescribedControllers'
    controls (`controllers.PrescribedControl`), ControllerSet order."""

    source: str
    file_name: str
    model_name: str
    gravity: Vec3
    bodies: Mapping[str, Body]
    joints: tuple[Joint, ...]
    cylinders: tuple[WrapCylinder, ...]
    obstacles: tuple[WrapObstacle, ...]
    ellipsoids: tuple[WrapEllipsoid, ...]
    muscles: tuple[Muscle, ...]
    actuators: tuple[CoordinateActuator, ...]
    omitted: tuple[str, ...]
    couplers: tuple[CoordinateCoupler, ...] = ()
    unenforced_constraints: tuple[str, ...] = ()
    force_names: tuple[str, ...] = ()
    spheres: tuple[WrapSphere, ...] = ()
    controls: tuple = ()
