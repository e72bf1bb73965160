"""An .osim file -> a validated `description.Document`, or an `OsimError`.

The model is read in the order OpenSim writes it, and the first element outside the subset
stops the reading: the document (Version >= 40000), the model's units and gravity, Ground,
the BodySet (bodies and their wrap objects), the JointSet (then the tree: every body the child
of exactly one joint, parents connected to ground), the ConstraintSet (CoordinateCoupler-
Constraints, `constraints`), the ForceSet (muscles, their paths, CoordinateActuators), the
ComponentSet, the ControllerSet (PrescribedControllers, `controllers`; with the forces).
MarkerSet, ContactGeometrySet and ProbeSet carry no model physics and are read past
(docs/osim.md).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from myotwin.osim.constraints import read_constraints
from myotwin.osim.controllers import read_controllers
from myotwin.osim.description import WORLD, Document, Joint
from myotwin.osim.force_reading import MUSCLE_TYPES, read_coordinate_actuator, read_muscle
from myotwin.osim.skeleton_reading import frame_components, read_body, read_ground, read_joint
from myotwin.osim.xml_values import Node, Omissions, document_element, parse_xml

#: First OpenSim 4 document version (older files use OpenSim 3's format).
MIN_VERSION = 40000
#: Model sets without model physics: markers (experimental landmarks), contact geometry (no
#: force without a contact force, which the ForceSet rule refuses), probes (outputs).
IGNORED_SETS = ("MarkerSet", "ContactGeometrySet", "ProbeSet")
_MODEL_PROPERTIES = ("Ground", "gravity", "credits", "publications", "length_units",
                     "force_units", "BodySet", "JointSet", "ConstraintSet", "ForceSet",
                     "ComponentSet", "components", "ControllerSet", *IGNORED_SETS)
_UNITS = {"length_units": ("meters", "m"), "force_units": ("N", "newtons")}


def _model_node(root: ET.Element, file_name: str) -> Node:
    return document_element(root, file_name, "Model", MIN_VERSION,
                            "an OpenSim 3 (or older) file (OpenSim 4 files have 40000 or more)")


def model_node(path) -> Node:
    """The checked `Model` element of the .osim file at `path` (for readers of parts the
    loader reads past, e.g. `markers.read_markers`)."""
    path = Path(path)
    return _model_node(parse_xml(path), path.name)


def _check_units(model: Node) -> None:
    for field, accepted in _UNITS.items():
        value = model.text(field, accepted[0])
        if value not in accepted:
            raise model.error(f"<{field}> must be {accepted[0]} (SI, no conversion is made), "
                              f"got {value!r}")


def _tree_order(model: Node, read: list[tuple[Node, Joint]], bodies) -> tuple[Joint, ...]:
    """The joints parent first; every body the child of exactly one joint."""
    by_child: dict[str, tuple[Node, Joint]] = {}
    for node, joint in read:
        for field, frame in (("socket_parent_frame", joint.parent),
                             ("socket_child_frame", joint.child)):
            if frame.body != WORLD and frame.body not in bodies:
                raise node.error(f"<{field}> leads to body {frame.body!r}, which is not in the "
                                 "BodySet")
        if joint.child.body == WORLD:
            raise node.error("ground cannot be a joint's child (reversed joints are not "
                             "supported)")
        if joint.child.body in by_child:
            raise node.error(f"body {joint.child.body!r} is already the child of joint "
                             f"{by_child[joint.child.body][1].name!r}")
        by_child[joint.child.body] = (node, joint)
    for name in bodies:
        if name not in by_child:
            raise model.where.inside("Body", name, "").error(
                "the body is the child of no joint; every body must hang from exactly one "
                "joint")
    placed, ordered, waiting = {WORLD}, [], list(read)
    while waiting:
        ready = [(n, j) for n, j in waiting if j.parent.body in placed]
        if not ready:
            node, joint = waiting[0]
            raise node.error(f"the parent body {joint.parent.body!r} is not connected to "
                             "ground (the joints form a closed loop)")
        for node, joint in ready:
            ordered.append(joint)
            placed.add(joint.child.body)
            waiting.remove((node, joint))
    return tuple(ordered)


def _refuse_unless_omitted(model: Node, set_tag: str, omissions: Omissions, what: str):
    for elem in model.objects(set_tag):
        node = Node.of(elem, model.where, "")
        if not omissions.take(node):
            raise node.error(f"{node.tag} is not supported ({what}); pass "
                             f"omit=({node.name!r},) to load the model without it")


def _read_bodies(model: Node, omissions: Omissions, omitted_wraps: set[str]):
    """Ground's and the bodies' wrap objects, and the bodies by name."""
    cylinders, obstacles, ellipsoids, spheres = read_ground(
        Node.of(model.require("Ground"), model.where, ""), omissions, omitted_wraps)
    bodies = {}
    for elem in model.objects("BodySet"):
        node = Node.of(elem, model.where, "")
        body, cyls, obsts, ells, sphs = read_body(node, omissions, omitted_wraps)
        if body.name in bodies:
            raise node.error("two bodies have this name")
        bodies[body.name] = body
        cylinders, obstacles, ellipsoids = cylinders + cyls, obstacles + obsts, ellipsoids + ells
        spheres = spheres + sphs
    wraps = [w.name for w in (*cylinders, *obstacles, *ellipsoids, *spheres)]
    if len(set(wraps)) != len(wraps):
        dup = sorted({w for w in wraps if wraps.count(w) > 1})
        raise model.error(f"wrap object names must be unique (paths refer to them by name), "
                          f"got {dup} more than once")
    return bodies, cylinders, obstacles, ellipsoids, spheres


def _read_joints(model: Node, bodies) -> tuple[tuple[Joint, ...], dict[str, str]]:
    """The joints parent first, and coordinate -> joint."""
    read = [(node, read_joint(node)) for node in
            (Node.of(e, model.where, "") for e in model.objects("JointSet"))]
    joints = _tree_order(model, read, bodies)
    coordinates: dict[str, str] = {}
    for node, joint in read:
        for coordinate in joint.coordinates:
            if coordinate.name in coordinates:
                raise node.error(f"coordinate {coordinate.name!r} is defined twice")
            coordinates[coordinate.name] = joint.name
    return joints, coordinates


def _force_nodes(model: Node, force_set_files, replace: bool = False) -> list[Node]:
    """The forces of the model's ForceSet (none when `replace`), then those of each ForceSet
    file (OpenSim's tools' `force_set_files`, appended as AbstractTool::updateModelForces
    appends them after emptying the model's ForceSet when `replace_force_set` is true), each a
    Node naming its own file; OsimError for a file that is not a ForceSet document or a force
    whose name another force has."""
    nodes = [] if replace else [Node.of(elem, model.where, "")
                                for elem in model.objects("ForceSet")]
    nodes += force_set_file_nodes(force_set_files)
    seen = set()
    for node in nodes:
        if node.name and node.name in seen:     # (unnamed forces are not compared)
            raise node.error("another force of the model or of its force set files has this "
                             "name")
        seen.add(node.name)
    return nodes


def force_set_file_nodes(force_set_files) -> list[Node]:
    """The forces of each ForceSet file (OpenSim's tools' `force_set_files`), in order, each a
    Node naming its own file; OsimError for a file that is not a ForceSet document."""
    nodes = []
    for path in force_set_files:
        path = Path(path)
        force_set = document_element(parse_xml(path), path.name, "ForceSet", 1, "")
        force_set.check_children(("objects", "groups"))
        objects = force_set.find("objects")
        nodes += [Node.of(elem, force_set.where, "")
                  for elem in ([] if objects is None else list(objects))]
    return nodes


def _read_forces(nodes: list[Node], omissions: Omissions, bodies, coordinates, wraps,
                 omitted_wraps, ellipsoids):
    muscles, actuators = [], []
    for node in nodes:
        if omissions.take(node):
            continue
        if node.tag in MUSCLE_TYPES:
            muscles.append(read_muscle(node, {WORLD, *bodies}, coordinates, wraps,
                                       omitted_wraps, ellipsoids))
        elif node.tag == "CoordinateActuator":
            actuators.append(read_coordinate_actuator(node, coordinates))
        else:
            raise node.error(f"{node.tag} is not a supported force (supported: "
                             f"{', '.join(MUSCLE_TYPES)}, CoordinateActuator); pass "
                             f"omit=({node.name!r},) to load the model without it")
    return tuple(muscles), tuple(actuators)


def read_document(path, omit=(), *, forces: bool = True, force_set_files=(),
                  replace_force_set: bool = False, controllers: bool = True) -> Document:
    """Read and check the .osim file at `path`; the names in `omit` (wrap objects,
    constraints, forces, components) are left out and recorded in `Document.omitted`.
    forces=False reads the skeleton only: the ForceSet is not read (no muscles, no
    actuators), as OpenSim's tools do with every force excluded. force_set_files: ForceSet
    .xml files whose forces join the model's, after them, or replace them with
    replace_force_set (`_force_nodes`). controllers=False reads the ControllerSet past (for
    tools that do not run the model forward: static optimization, muscle analysis)."""
    path = Path(path)
    omissions = Omissions(frozenset(omit))
    model = _model_node(parse_xml(path), path.name)
    model.check_children(_MODEL_PROPERTIES)
    _check_units(model)
    gravity = model.numbers("gravity", 3)
    omitted_wraps: set[str] = set()
    bodies, cylinders, obstacles, ellipsoids, spheres = _read_bodies(model, omissions,
                                                                     omitted_wraps)
    joints, coordinates = _read_joints(model, bodies)
    couplers, unenforced = read_constraints(model, omissions, joints)
    wraps = {w.name for w in (*cylinders, *obstacles, *ellipsoids, *spheres)}
    nodes = _force_nodes(model, force_set_files, replace_force_set) if forces else []
    muscles, actuators = _read_forces(nodes, omissions, bodies, coordinates, wraps,
                                      omitted_wraps, {w.name for w in ellipsoids})
    order = [node.name for node in nodes]
    _refuse_unless_omitted(model, "ComponentSet", omissions, "components may carry physics")
    frame_components(model, omissions)
    controls = (_read_controllers(model, omissions, muscles + actuators)
                if forces and controllers else ())
    unknown = sorted(set(omit) - set(omissions.used))
    if unknown:
        raise model.error(f"omit names {unknown}, which are not wrap objects, constraints, "
                          "forces or components of the file")
    return Document(str(path), path.name, model.name, gravity, bodies, joints,
                    tuple(cylinders), tuple(obstacles), tuple(ellipsoids), muscles, actuators,
                    tuple(omissions.used), couplers, unenforced,
                    tuple(sorted((f.name for f in (*muscles, *actuators)), key=order.index)),
                    tuple(spheres), controls)


def _read_controllers(model: Node, omissions: Omissions, forces):
    """The model's prescribed controls (`controllers.read_controllers`); none without a
    ControllerSet."""
    found = model.find("ControllerSet")
    if found is None:
        return ()
    node = Node(found, model.where.inside("ControllerSet", found.get("name", "")))
    if found.get("file"):
        raise node.error(f"sets kept in another file are not supported, got "
                         f"file={found.get('file')!r}")
    return read_controllers(node, [f.name for f in forces], omissions,
                            [n for n in omissions.used])
