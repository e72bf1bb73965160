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

__all__ = ["WORLD", "Body", "Coordinate", "CoordinateActuator", "Document", "Frame", "Joint",
           "JointKind", "Muscle", "PathPoint", "PathWrap", "WrapCylinder", "WrapEllipsoid",
           "WrapObstacle"]


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
    HINGE = "hinge"    # rotation about `Joint.axis` through the joint frame's origin
    SLIDE = "slide"    # translation along `Joint.axis`


@dataclasses.dataclass(frozen=True)
class Coordinate:
    """An OpenSim coordinate: range (rad or m) and clamped are recorded, not enforced;
    default_value (rad or m) is OpenSim's initial value."""

    name: str
    range: tuple[float, float]
    clamped: bool
    default_value: float


@dataclasses.dataclass(frozen=True)
class Joint:
    """A joint of the subset. parent / child: the joint frames on the parent and child bodies
    (OpenSim's socket_parent_frame / socket_child_frame); axis: the hinge or slide direction in
    the joint frame (None for a weld); coordinate: the joint's one coordinate (None for a
    weld)."""

    tag: str
    name: str
    parent: Frame
    child: Frame
    kind: JointKind
    axis: Vec3 | None = None
    coordinate: Coordinate | None = None


@dataclasses.dataclass(frozen=True)
class WrapCylinder:
    """OpenSim WrapCylinder on `body` (frame: translation m, xyz_body_rotation rad; axis = the
    frame's z), radius and length (m), quadrant as in the file."""

    name: str
    body: str
    translation: Vec3
    xyz_body_rotation: Vec3
    radius: float
    length: float
    quadrant: str


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
    points: tuple[PathPoint, ...]
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
class Document:
    """A whole model of the subset. joints are ordered parent first (each body after the body
    it hangs from); muscles and actuators in ForceSet order; omitted: names of the elements
    left out because the caller listed them in `omit`, in file order."""

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
