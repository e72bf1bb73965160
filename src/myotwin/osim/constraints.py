"""The ConstraintSet of an .osim file -> `description.CoordinateCoupler`s, or an `OsimError`.

A CoordinateCouplerConstraint makes its dependent coordinate q_d = scale_factor * f(q_i), f
a function of one independent coordinate q_i. `loader` eliminates q_d exactly: q_d is not a
coordinate of the loaded model, and every engine dof that q_d moved follows q_i through the
composition (docs/osim.md, "Coordinate coupler constraints"). Supported: one independent
coordinate, f one of the one-variable functions of `osim.functions`, no chains (a coordinate
dependent in one coupler and independent in another, or dependent in two). A coupler with
isEnforced false has no effect in OpenSim and is left out (its name recorded). Any other
constraint type is refused unless omitted.
"""

from __future__ import annotations

from myotwin.osim.description import CoordinateCoupler, Joint
from myotwin.osim.functions import read_function
from myotwin.osim.skeleton_reading import describe_function
from myotwin.osim.xml_values import Node, Omissions

COUPLER = "CoordinateCouplerConstraint"
_COUPLER_PROPERTIES = ("components", "isEnforced", "coupled_coordinates_function",
                       "independent_coordinate_names", "dependent_coordinate_name",
                       "scale_factor")


def _coupler(node: Node, coordinates: dict[str, str]) -> CoordinateCoupler:
    """An enforced CoordinateCouplerConstraint (coordinates: name -> its joint)."""
    holder = node.require("coupled_coordinates_function")
    functions = list(holder)
    if len(functions) != 1:
        raise node.error(f"<coupled_coordinates_function> must hold exactly one function, "
                         f"got {[e.tag for e in functions]}")
    independent = node.text("independent_coordinate_names").split()
    if len(independent) != 1:
        raise node.error(f"a coupler with exactly one independent coordinate is supported, "
                         f"got <independent_coordinate_names>"
                         f"{node.text('independent_coordinate_names')}"
                         "</independent_coordinate_names>")
    dependent = node.text("dependent_coordinate_name")
    for field, name in (("independent_coordinate_names", independent[0]),
                        ("dependent_coordinate_name", dependent)):
        if name not in coordinates:
            raise node.error(f"<{field}> must name a coordinate of the model, got {name!r}")
    if dependent == independent[0]:
        raise node.error(f"the dependent coordinate is also the independent one, got "
                         f"{dependent!r}")
    function = read_function(functions[0], node.where)
    scale = node.number("scale_factor", 1.0)
    text = (f"{dependent} = {scale!r} * {describe_function(functions[0])} of {independent[0]} "
            f"({COUPLER} {node.name})")
    return CoordinateCoupler(node.name, dependent, independent[0], function, scale, text)


def _check_chains(nodes: list[Node], couplers: list[CoordinateCoupler]) -> None:
    """Refuse a coordinate dependent in two couplers, or dependent in one and independent in
    another (a chain)."""
    dependents: dict[str, str] = {}
    for node, c in zip(nodes, couplers):
        if c.dependent in dependents:
            raise node.error(f"<dependent_coordinate_name> {c.dependent!r} is already the "
                             f"dependent coordinate of {COUPLER} {dependents[c.dependent]!r}")
        dependents[c.dependent] = c.name
    for node, c in zip(nodes, couplers):
        if c.independent in dependents:
            raise node.error(f"<independent_coordinate_names> {c.independent!r} is the "
                             f"dependent coordinate of {COUPLER} {dependents[c.independent]!r};"
                             " chained couplers are not supported")


def read_constraints(model: Node, omissions: Omissions, joints: tuple[Joint, ...]
                     ) -> tuple[tuple[CoordinateCoupler, ...], tuple[str, ...]]:
    """(the enforced couplers, the names of the unenforced ones) of the ConstraintSet; any
    other constraint is refused unless omitted."""
    coordinates = {c.name: j.name for j in joints for c in j.coordinates}
    nodes, couplers, unenforced = [], [], []
    for elem in model.objects("ConstraintSet"):
        node = Node.of(elem, model.where, "")
        if omissions.take(node):
            continue
        if node.tag != COUPLER:
            raise node.error(f"{node.tag} is not supported (constraints other than {COUPLER} "
                             f"are not modelled); pass omit=({node.name!r},) to load the model "
                             "without it")
        node.check_children(_COUPLER_PROPERTIES)
        components = node.find("components")
        if components is not None and len(components):
            raise node.error(f"a constraint's <components> must be empty, got "
                             f"{[e.tag for e in components]}")
        if not node.name:
            raise node.error("a constraint needs a name")
        if not node.flag("isEnforced", True):
            unenforced.append(node.name)   # no effect in OpenSim
            continue
        nodes.append(node)
        couplers.append(_coupler(node, coordinates))
    _check_chains(nodes, couplers)
    return tuple(couplers), tuple(unenforced)
