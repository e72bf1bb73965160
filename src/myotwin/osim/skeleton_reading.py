"""Ground, bodies, wrap objects and joints of an .osim file -> `description` data.

Each function reads one element, accepts only the supported subset (docs/osim.md) and raises
an `OsimError` naming the element otherwise. Cross-references (does a joint's body exist, is
the skeleton a tree) are checked by `xml_reading` once the whole model is read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from myotwin.osim.description import (WORLD, Body, Coordinate, Frame, Joint, JointAxis,
                                      JointKind, WrapCylinder, WrapEllipsoid, WrapObstacle,
                                      WrapSphere)
from myotwin.osim.errors import Where
from myotwin.osim.functions import (is_constant, is_constant_zero, is_identity,
                                    read_function)
from myotwin.osim.xml_values import Node, Omissions

#: Visual-only children of frames and bodies (drawn by OpenSim's GUI, no physics).
VISUAL = ("FrameGeometry", "attached_geometry")
_BODY_PROPERTIES = ("mass", "mass_center", "inertia", "WrapObjectSet", "components", *VISUAL)
_OFFSET_FRAME_PROPERTIES = ("socket_parent", "translation", "orientation", *VISUAL)
_WRAP_COMMON = ("active", "xyz_body_rotation", "translation", "quadrant", "Appearance",
                "display_preference")
_UNSUPPORTED_WRAPS = {
    "WrapTorus": "torus wrapping is not supported",
    "WrapSphereObst": "obstacle-set sphere wrapping is not supported",
    "WrapDoubleCylinderObst": "obstacle-set double-cylinder wrapping is not supported",
}
_JOINT_PROPERTIES = ("socket_parent_frame", "socket_child_frame", "coordinates", "frames",
                     "reverse")
_COORDINATE_PROPERTIES = ("default_value", "default_speed_value", "range", "clamped", "locked",
                          "prescribed_function", "prescribed", "is_free_to_satisfy_constraints")
_AXES = ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3")


# ---------------------------------------------------------------- bodies and wrap objects

def body_path(node: Node, field: str, path: str) -> str:
    """The body named by a socket path: "/ground" -> WORLD, "/bodyset/NAME" -> NAME."""
    if path == "/ground":
        return WORLD
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "" and parts[1] == "bodyset" and parts[2]:
        return parts[2]
    raise node.error(f"<{field}> must be /ground or /bodyset/<body>, got {path!r}")


def frame_components(node: Node, omissions: Omissions) -> None:
    """A body's or ground's <components>: only PhysicalOffsetFrames (frames carry no
    physics; nothing in the subset refers to them); anything else unless omitted."""
    found = node.find("components")
    for elem in [] if found is None else found:
        child = Node.of(elem, node.where)
        if child.tag == "PhysicalOffsetFrame" or omissions.take(child):
            continue
        raise child.error(f"{child.tag} is not supported as a component; pass "
                          f"omit=({child.name!r},) to load the model without it")


def read_wrap_objects(node: Node, body: str, omissions: Omissions, omitted: set[str]
                      ) -> tuple[list[WrapCylinder], list[WrapObstacle], list[WrapEllipsoid],
                                 list[WrapSphere]]:
    """The WrapObjectSet of a body (or ground): its cylinders, obstacle cylinders, ellipsoids
    and spheres. Omitted wrap objects go into `omitted`."""
    cylinders, obstacles, ellipsoids, spheres = [], [], [], []
    context = "ground" if body == WORLD else f"body {body}"
    for elem in node.objects("WrapObjectSet"):
        wrap = Node.of(elem, node.where, context)
        if omissions.take(wrap):
            omitted.add(wrap.name)
            continue
        hint = f"; pass omit=({wrap.name!r},) to load the model without it"
        if wrap.tag in _UNSUPPORTED_WRAPS:
            raise wrap.error(_UNSUPPORTED_WRAPS[wrap.tag] + hint)
        if wrap.tag not in ("WrapCylinder", "WrapCylinderObst", "WrapEllipsoid", "WrapSphere"):
            raise wrap.error(f"{wrap.tag} is not a supported wrap object" + hint)
        if not wrap.name:
            raise wrap.error("a wrap object needs a name (paths refer to it by name)")
        extra = {"WrapCylinder": ("radius", "length"),
                 "WrapCylinderObst": ("radius", "length", "wrapDirection"),
                 "WrapEllipsoid": ("dimensions",), "WrapSphere": ("radius",)}[wrap.tag]
        wrap.check_children(_WRAP_COMMON + extra)
        active = wrap.flag("active", True)
        frame = (wrap.numbers("translation", 3, (0.0, 0.0, 0.0)),
                 wrap.numbers("xyz_body_rotation", 3, (0.0, 0.0, 0.0)))
        if wrap.tag == "WrapCylinder":
            cylinders.append(WrapCylinder(wrap.name, body, *frame, wrap.number("radius"),
                                          wrap.number("length"), wrap.text("quadrant", "all"),
                                          active))
            continue
        if wrap.tag == "WrapEllipsoid":
            dimensions = wrap.numbers("dimensions", 3)
            if min(dimensions) <= 0.0:
                raise wrap.error(f"<dimensions> must be 3 semi-axes > 0 m, got "
                                 f"{wrap.text('dimensions')!r}")
            ellipsoids.append(WrapEllipsoid(wrap.name, body, *frame, dimensions,
                                            wrap.text("quadrant", "all"), active))
            continue
        if wrap.tag == "WrapSphere":
            spheres.append(WrapSphere(wrap.name, body, *frame, wrap.number("radius", 0.05),
                                      wrap.text("quadrant", "all"), active))
            continue
        quadrant = wrap.text("quadrant", "all")
        if quadrant.lower() != "all":
            raise wrap.error(f"an obstacle-set cylinder is supported only with quadrant all "
                             f"(it wraps in its wrapDirection), got {quadrant!r}")
        obstacles.append(WrapObstacle(wrap.name, body, *frame, wrap.number("radius"),
                                      wrap.text("wrapDirection"), active))
    return cylinders, obstacles, ellipsoids, spheres


def read_ground(node: Node, omissions: Omissions, omitted: set[str]):
    """The Ground element: its wrap objects (on the engine's world body)."""
    node.check_children(("WrapObjectSet", "components", *VISUAL))
    frame_components(node, omissions)
    return read_wrap_objects(node, WORLD, omissions, omitted)


def read_body(node: Node, omissions: Omissions, omitted: set[str]):
    """A Body: mass properties (required) and wrap objects (cylinders, obstacles,
    ellipsoids). A point mass (mass > 0, inertia 0) is accepted here; `to_builders` merges it
    into its parent if it is welded and builds it as a point mass otherwise
    (engine/point_mass.py)."""
    if node.tag != "Body":
        raise node.error(f"{node.tag} is not supported in a BodySet (only Body)")
    node.check_children(_BODY_PROPERTIES)
    if not node.name or node.name == WORLD:
        raise node.error(f"a body needs a name other than {WORLD!r} (the engine's ground)")
    frame_components(node, omissions)
    mass = node.number("mass")
    inertia = node.numbers("inertia", 6)
    if mass < 0.0:
        raise node.error(f"<mass> must be >= 0 kg, got {node.text('mass')!r}")
    body = Body(node.name, mass, node.numbers("mass_center", 3), inertia)
    return body, *read_wrap_objects(node, node.name, omissions, omitted)


# ---------------------------------------------------------------- joints

def _offset_frame(node: Node) -> Frame:
    node.check_children(_OFFSET_FRAME_PROPERTIES)
    return Frame(body_path(node, "socket_parent", node.text("socket_parent")),
                 node.numbers("translation", 3, (0.0, 0.0, 0.0)),
                 node.numbers("orientation", 3, (0.0, 0.0, 0.0)))


def _socket_frame(node: Node, field: str, frames: dict[str, Frame]) -> Frame:
    """A joint's parent or child frame: one of its <frames>, or a body's own frame."""
    path = node.text(field)
    if path in frames:
        return frames[path]
    if path.startswith("/"):
        return Frame(body_path(node, field, path))
    raise node.error(f"<{field}> names {path!r}, which is neither one of the joint's "
                     f"<frames> ({', '.join(sorted(frames)) or 'none'}) nor /ground or "
                     "/bodyset/<body>")


def _coordinate(node: Node) -> Coordinate:
    if node.tag != "Coordinate":
        raise node.error(f"{node.tag} is not a Coordinate")
    node.check_children(_COORDINATE_PROPERTIES)
    prescribed = node.find("prescribed_function")
    if node.flag("prescribed", False) and prescribed is not None and len(prescribed):
        raise node.error("prescribed motion (<prescribed>true</prescribed> with a "
                         f"<prescribed_function> {prescribed[0].tag}) is not supported")
    low, high = node.numbers("range", 2)
    if low > high:
        # OpenSim refuses it too (Coordinate::extendFinalizeFromProperties)
        raise node.error(f"<range> must be min max with min <= max, got "
                         f"{node.text('range')!r}")
    return Coordinate(node.name, (low, high), node.flag("clamped", False),
                      node.number("default_value", 0.0), node.flag("locked", False),
                      node.number("default_speed_value", 0.0))


def read_joint(node: Node) -> Joint:
    """A WeldJoint, PinJoint, SliderJoint or CustomJoint of the subset."""
    if node.tag not in ("WeldJoint", "PinJoint", "SliderJoint", "CustomJoint"):
        raise node.error(f"{node.tag} is not supported (supported joints: WeldJoint, PinJoint, "
                         "SliderJoint, CustomJoint)")
    node.check_children(_JOINT_PROPERTIES + (("SpatialTransform",)
                                             if node.tag == "CustomJoint" else ()))
    if node.flag("reverse", False):
        raise node.error("reversed joints (<reverse>true</reverse>) are not supported")
    found = node.find("frames")
    frames = {}
    for elem in [] if found is None else found:
        frame = Node.of(elem, node.where)
        if frame.tag != "PhysicalOffsetFrame":
            raise frame.error(f"{frame.tag} is not supported as a joint frame (only "
                              "PhysicalOffsetFrame)")
        if frame.name in frames:
            raise frame.error("two frames of the joint have this name")
        frames[frame.name] = _offset_frame(frame)
    parent = _socket_frame(node, "socket_parent_frame", frames)
    child = _socket_frame(node, "socket_child_frame", frames)
    found = node.find("coordinates")
    coords = tuple(_coordinate(Node.of(e, node.where))
                   for e in ([] if found is None else found))
    if node.tag == "CustomJoint":
        return Joint(node.tag, node.name, parent, child, coords,
                     _spatial_transform(node, coords))
    expected = 0 if node.tag == "WeldJoint" else 1
    if len(coords) != expected:
        raise node.error(f"a {node.tag} has {expected} coordinate{'s' * (expected != 1)}, got "
                         f"{[c.name for c in coords]}")
    if node.tag == "WeldJoint":
        return Joint(node.tag, node.name, parent, child)
    if node.tag == "PinJoint":  # rotation about the joint frames' common z axis
        axis = JointAxis(node.tag, JointKind.HINGE, (0.0, 0.0, 1.0), coords[0].name)
    else:  # SliderJoint: translation along the joint frames' x axis
        axis = JointAxis(node.tag, JointKind.SLIDE, (1.0, 0.0, 0.0), coords[0].name)
    return Joint(node.tag, node.name, parent, child, coords, (axis,))


# ---------------------------------------------------------------- CustomJoint

def _function(axis: Node) -> ET.Element:
    functions = [e for e in axis.elem if e.tag not in ("coordinates", "axis")]
    if len(functions) != 1:
        raise axis.error(f"a TransformAxis needs exactly one function, got "
                         f"{[e.tag for e in functions]}")
    return functions[0]


def _is_zero(function: ET.Element, where: Where) -> bool:
    """True for Constant 0 and MultiplierFunction(Constant 0, finite scale): exactly 0."""
    node = Node(function, where)
    if function.tag == "Constant":
        node.check_children(("value",))
        return node.number("value") == 0.0
    if function.tag == "MultiplierFunction":
        node.check_children(("function", "scale"))
        inner = list(node.require("function"))
        node.number("scale")
        return len(inner) == 1 and inner[0].tag == "Constant" and _is_zero(inner[0], where)
    return False


def describe_function(function: ET.Element) -> str:
    """A function as written, e.g. "LinearFunction (coefficients '2 0')" (long values cut)."""
    def cut(text):
        return text if len(text) <= 40 else text[:37] + "..."

    values = ", ".join(f"{c.tag} {cut((c.text or '').strip())!r}" for c in function
                       if (c.text or "").strip())
    inner = ", ".join(c.tag for c in function if len(c))
    details = ", ".join(x for x in (values, inner) if x)
    return function.tag + (f" ({details})" if details else "")


def _spatial_transform(node: Node, coords: tuple[Coordinate, ...]) -> tuple[JointAxis, ...]:
    """The moving axes of a CustomJoint's SpatialTransform, translations first (OpenSim's
    X_FM(q) = translation in F, then the rotations body-fixed in order; checked against
    OpenSim 4.6 in tests/osim/test_osim_custom_joints.py). An axis moves when it lists one
    of the joint's coordinates and its function is not exactly 0; an axis without a coordinate
    is skipped when exactly 0, and a Constant (a fixed offset between the other axes, as
    leg6dof9musc's pelvis) becomes an axis held at that value (a constant function of the
    joint's first coordinate); an axis of several coordinates is refused."""
    st = Node(node.require("SpatialTransform"), node.where)
    st.check_children(("TransformAxis",))
    axes = {}
    for elem in st.elem:
        axis = Node.of(elem, node.where)
        if axis.name not in _AXES or axis.name in axes:
            raise axis.error(f"expected each of {', '.join(_AXES)} once, got {axis.name!r}")
        axes[axis.name] = axis
    if len(axes) != len(_AXES):
        raise st.error(f"a SpatialTransform lists {', '.join(_AXES)}, got {sorted(axes)}")
    names = [c.name for c in coords]
    moving = []
    for name in _AXES[3:] + _AXES[:3]:  # translations, then rotations
        axis = axes[name]
        listed = axis.text("coordinates", "").split()
        element = _function(axis)
        if not listed:
            if _is_zero(element, axis.where):
                continue
            function = read_function(element, axis.where)
            if not is_constant(function) or not names:
                raise axis.error(
                    "an axis without coordinates must be a Constant (a fixed offset) in a "
                    f"joint with coordinates, got {describe_function(element)}"
                    + ("" if names else " in a joint without coordinates"))
            listed = names[:1]  # a constant "function" of the joint's first coordinate
        if len(listed) != 1:
            raise axis.error(f"an axis driven by several coordinates ({listed}) is not "
                             "supported")
        if listed[0] not in names:
            raise axis.error(f"the axis moves with {listed[0]!r}, which is not one of the "
                             f"joint's coordinates {names}")
        function = read_function(element, axis.where)
        if is_constant_zero(function):
            continue
        direction = axis.numbers("axis", 3)
        if not any(direction):  # else the engine (MuJoCo) normalises it, as OpenSim does
            raise axis.error(f"<axis> must be non-zero, got {axis.text('axis')!r}")
        kind = JointKind.HINGE if name.startswith("rotation") else JointKind.SLIDE
        moving.append(JointAxis(name, kind, direction, listed[0],
                                None if is_identity(function) else function))
    idle = [n for n in names if not any(a.coordinate == n for a in moving)]
    if idle:
        raise node.error(f"coordinates {idle} drive no transform axis")
    return tuple(moving)
