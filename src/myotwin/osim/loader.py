"""`load`: an .osim file of the supported subset -> an `OsimModel` (docs/osim.md)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterable, Mapping

import jax

from myotwin.engine.model import Model
from myotwin.osim import to_builders
from myotwin.osim.xml_reading import read_document
from myotwin.paths.builder import PathBuilder


@dataclasses.dataclass(frozen=True)
class OsimModel:
    """A loaded .osim model.

    model: the compiled engine `Model` (paths in `muscle_names` order) for
      `myotwin.muscle_lengths(model, q)`, `myotwin.moment_arms(model, q)`, the dynamics.
    path_builder: the `PathBuilder` (skeleton `ModelBuilder` in `path_builder.skeleton`), to
      add elements and `build()` again.
    coordinates: coordinate names in the engine's q order (read from the compiled model).
    coordinate_ranges: name -> (lo, hi) rad or m; coordinate_clamped: name -> the file's
      `clamped` flag; both recorded, not enforced (the engine's joints are unlimited).
    coordinate_default_values: name -> OpenSim's default value (rad or m), an initial pose.
    coordinate_joints: name -> the joint it belongs to (for OpenSim's state names,
      `/jointset/<joint>/<coordinate>/value`).
    muscle_names: the muscles in ForceSet order (= the model's paths).
    muscles: name -> read-only mapping of parameters (SI names, `osim.force_reading`).
    actuator_names: the CoordinateActuators in ForceSet order (= the model's actuators);
      actuators: name -> {"coordinate", "gear", "control_range" (min_control, max_control),
      recorded, not enforced: OpenSim applies control * optimal_force unclamped}.
    omitted: names left out because they were in `omit`, in file order.
    source: the file path as given.
    """

    model: Model
    path_builder: PathBuilder
    coordinates: tuple[str, ...]
    coordinate_ranges: Mapping[str, tuple[float, float]]
    coordinate_clamped: Mapping[str, bool]
    coordinate_default_values: Mapping[str, float]
    coordinate_joints: Mapping[str, str]
    muscle_names: tuple[str, ...]
    muscles: Mapping[str, Mapping[str, object]]
    actuator_names: tuple[str, ...]
    actuators: Mapping[str, Mapping[str, object]]
    omitted: tuple[str, ...]
    source: str


def _frozen(mapping=(), **items) -> types.MappingProxyType:
    return types.MappingProxyType(dict(mapping, **items))


def load(path, *, omit: Iterable[str] = ()) -> OsimModel:
    """Load an OpenSim 4 .osim file of the supported subset (docs/osim.md).

    omit: names of wrap objects, constraints, forces or components to leave out (paths then
    drop an omitted wrap object, as `models.arm26.build(ellipsoids=False)` drops its
    ellipsoids). Raises
    `osim.OsimError` (a ValueError naming the file, the element and the value) for anything
    outside the subset. Needs float64 (`myotwin.configure_jax()` first)."""
    names = () if isinstance(omit, str) else tuple(omit)
    if isinstance(omit, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"omit must be a collection of element names, e.g. omit=('TRIlonghh',),"
                        f" got {omit!r}")
    if not jax.config.jax_enable_x64:
        raise RuntimeError("osim.load needs float64: call myotwin.configure_jax() (or "
                           'jax.config.update("jax_enable_x64", True)) first')
    doc = read_document(path, names)
    pb = to_builders.path_builder(doc, to_builders.skeleton(doc))
    model, coordinates = to_builders.build_model(doc, pb)
    by_name = {j.coordinate.name: j.coordinate for j in doc.joints if j.coordinate is not None}
    joint_of = {j.coordinate.name: j.name for j in doc.joints if j.coordinate is not None}
    coords = {name: by_name[name] for name in coordinates}  # q order
    actuators = {a.name: _frozen(coordinate=a.coordinate, gear=a.optimal_force,
                                 control_range=(a.min_control, a.max_control))
                 for a in doc.actuators}
    return OsimModel(
        model=model, path_builder=pb, coordinates=coordinates,
        coordinate_ranges=_frozen({n: c.range for n, c in coords.items()}),
        coordinate_clamped=_frozen({n: c.clamped for n, c in coords.items()}),
        coordinate_default_values=_frozen({n: c.default_value for n, c in coords.items()}),
        coordinate_joints=_frozen({n: joint_of[n] for n in coords}),
        muscle_names=tuple(m.name for m in doc.muscles),
        muscles=_frozen({m.name: m.parameters for m in doc.muscles}),
        actuator_names=tuple(a.name for a in doc.actuators), actuators=_frozen(actuators),
        omitted=doc.omitted, source=str(path))
