"""An .osim model's markers (its MarkerSet) and where they are at a pose.

OpenSim 4 writes each marker as

    <Marker name="r_acromion">
      <socket_parent_frame>/bodyset/base</socket_parent_frame>
      <location>-0.01256 0.04 0.17</location>      (m, in the frame)
      <fixed>false</fixed>                          (for OpenSim's marker placer only)
    </Marker>

Markers carry no physics, so `osim.load` reads past the MarkerSet; inverse kinematics reads it
here (`read_markers`). The subset is the one of path points: a marker sits on a body
(`/bodyset/<body>`) or on ground; a marker on another frame (a PhysicalOffsetFrame) is
refused naming it. Visual properties (attached geometry, appearance) are read past.
"""

from __future__ import annotations

import dataclasses
import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import point_tangents
from myotwin.engine.kinematics import kinematics
from myotwin.osim.skeleton_reading import body_path
from myotwin.osim.xml_reading import model_node
from myotwin.osim.xml_values import Node

#: Marker properties read past: visual only (OpenSim's Marker / Frame geometry).
_VISUAL = ("attached_geometry", "FrameGeometry", "Appearance", "input_transform",
           "frame_geometry")


@dataclasses.dataclass(frozen=True)
class Marker:
    """name; body: the engine body it is fixed on ("world" for ground); location_m (3,) in
    the body's frame."""

    name: str
    body: str
    location_m: tuple[float, float, float]


def read_markers(path) -> tuple[Marker, ...]:
    """The markers of the .osim file at `path`, in MarkerSet order (module docstring);
    `osim.OsimError` naming the file, the marker and the value for anything else."""
    model = model_node(path)
    out: list[Marker] = []
    seen: set[str] = set()
    for elem in model.objects("MarkerSet"):
        node = Node.of(elem, model.where)
        if node.tag != "Marker":
            raise node.error(f"{node.tag} is not supported in a MarkerSet (only Marker)")
        node.check_children(("socket_parent_frame", "location", "fixed", *_VISUAL))
        if not node.name:
            raise node.error("a marker needs a name")
        if node.name in seen:
            raise node.error("the marker name is given twice")
        seen.add(node.name)
        frame = node.text("socket_parent_frame")
        out.append(Marker(node.name, body_path(node, "socket_parent_frame", frame),
                          node.numbers("location", 3)))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class MarkerPlacement:
    """Markers as the engine's body indices and body-frame locations, for `positions`."""

    names: tuple[str, ...]
    body: tuple[int, ...]
    location_m: np.ndarray   # (n_markers, 3)


def placement(markers, body_names, source: str) -> MarkerPlacement:
    """`markers` (Marker) on the engine bodies `body_names` (`OsimModel.body_names`);
    ValueError naming a marker whose body the model does not have."""
    index = {name: i for i, name in enumerate(body_names)}
    for m in markers:
        if m.body not in index:
            raise ValueError(f"{source}: marker {m.name!r} is on body {m.body!r}, which the "
                             f"model does not have (bodies: {list(body_names[1:])})")
    return MarkerPlacement(tuple(m.name for m in markers), tuple(index[m.body] for m in markers),
                           np.array([m.location_m for m in markers], dtype=np.float64
                                    ).reshape(-1, 3))


def _positions(kin, place: MarkerPlacement) -> jax.Array:
    body = np.asarray(place.body, dtype=np.int64)
    return (kin.body_pos_world[body]
            + jnp.einsum("mij,mj->mi", kin.body_rot_world[body], jnp.asarray(place.location_m)))


def positions(model, place: MarkerPlacement, q_f: jax.Array) -> jax.Array:
    """(n_markers, 3) marker positions (m, ground frame) at the engine's q_f."""
    return _positions(kinematics(model, q_f), place)


def positions_and_jacobian(model, place: MarkerPlacement,
                           q_f: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(positions (n_markers, 3) m, d positions / d qd (n_markers, 3, n_v)) at q_f: the
    engine's point Jacobians (mj_jac) of the markers' world points on their bodies."""
    kin = kinematics(model, q_f)
    x = _positions(kin, place)
    tangents = point_tangents(model, kin, x, np.asarray(place.body, dtype=np.int64))
    return x, jnp.transpose(tangents, (1, 2, 0))
