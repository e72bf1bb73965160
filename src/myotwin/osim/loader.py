"""`load`: an .osim file of the supported subset -> an `OsimModel` (docs/osim.md)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from myotwin.engine.coupling import (CoordinateCoupling, PiecewisePolynomial,
                                     coordinate_coupling, identity_polynomial)
from myotwin.engine.model import Model
from myotwin.osim import to_builders
from myotwin.osim.description import JointKind
from myotwin.osim.errors import Where
from myotwin.osim.functions import is_linear, piecewise_polynomial
from myotwin.osim.xml_reading import read_document
from myotwin.paths.builder import PathBuilder


class CoupledCoordinate(NamedTuple):
    """A coordinate eliminated by an enforced CoordinateCouplerConstraint: its value is
    `function`(q[independent]) (the constraint's scale_factor * f, a
    `engine.piecewise.PiecewisePolynomial`; `engine.piecewise.evaluate_padded` evaluates it);
    description: the constraint as read, e.g. "knee_angle_pat_r = 1.0 * LinearFunction
    (coefficients '1 0') of knee_angle_r (CoordinateCouplerConstraint pat_angle_r)";
    constraint: its name; joint: the joint the dependent coordinate belongs to (its OpenSim
    state names, `/jointset/<joint>/<coordinate>/value`); motion: its OpenSim motion type (as
    `OsimModel.coordinate_motion`)."""

    independent: str
    description: str
    constraint: str
    function: PiecewisePolynomial
    joint: str
    motion: str


class LockedCoordinate(NamedTuple):
    """A coordinate whose file says <locked>true</locked>: held at `value` (its default_value,
    rad or m), as OpenSim's forward simulation, inverse kinematics and static optimization
    hold it; eliminated like a coupled coordinate (its dofs follow a constant function,
    docs/osim.md "Locked coordinates"). joint: the joint it belongs to (its OpenSim state
    names); motion: its OpenSim motion type (as `OsimModel.coordinate_motion`)."""

    value: float
    joint: str
    motion: str


@dataclasses.dataclass(frozen=True)
class OsimModel:
    """A loaded .osim model.

    model: the compiled engine `Model` (paths in `muscle_names` order) for
      `myotwin.muscle_lengths(model, q)`, `myotwin.moment_arms(model, q)`, the dynamics.
    path_builder: the `PathBuilder` (skeleton `ModelBuilder` in `path_builder.skeleton`), to
      add elements and `build()` again.
    coordinates: the OpenSim coordinate names: the joints in the engine's (depth-first)
      order, each joint's coordinates in the file's order (the engine's q order when
      `coupling` is None), without the dependent coordinates of CoordinateCouplerConstraints
      (`coupled_coordinates`) and without the locked ones (`locked_coordinates`).
    engine_joints: the engine's joint names in its q order: a coordinate's own name, or
      "<joint>/<axis>" for a CustomJoint axis that is a function of its coordinate (a knee's
      spline translations).
    coupling: None when every engine joint is a coordinate (then `model`'s q is the
      coordinates); else the `engine.CoordinateCoupling` from the coordinates q to the engine's
      q_f (`engine.coupling.full_positions`; `engine.coupled_dynamics` for the dynamics):
      `model`'s functions take q_f, and generalized forces reduce by J^T.
    coordinate_ranges: name -> (lo, hi) rad or m; coordinate_clamped: name -> the file's
      `clamped` flag; both recorded, not enforced (the engine's joints are unlimited).
    coordinate_default_values: name -> OpenSim's default value (rad or m), an initial pose.
    coordinate_default_speeds: name -> the file's default_speed_value (rad/s or m/s) of every
      coordinate in `all_coordinates` (the dependent and locked ones too: where a run starts
      from the default state, `forward_start.default_speeds` checks them).
    coordinate_joints: name -> the joint it belongs to (for OpenSim's state names,
      `/jointset/<joint>/<coordinate>/value`).
    coordinate_motion: name -> OpenSim's motion type: "rotational" when it turns a rotation
      axis through a linear function (PinJoint, LinearFunction), else "translational" when it
      moves a translation axis so, else "coupled" (only through other functions); a
      rotational coordinate is in rad (degrees in files marked inDegrees), the others in m.
    body_names: the engine's body names in its order, "world" (OpenSim's ground) first.
    muscle_names: the muscles in ForceSet order (= the model's paths).
    muscles: name -> read-only mapping of parameters (SI names, `osim.force_reading`).
    force_names: the muscles and CoordinateActuators together in ForceSet order (OpenSim's
      column order for its tools' per-actuator output).
    force_set_files: the ForceSet files whose forces joined the model's (`load`'s
      force_set_files), as given; force_set_replaced: True when they replaced the model's own
      forces (`load`'s replace_force_set).
    actuator_names: the CoordinateActuators in ForceSet order (= the model's actuators);
      actuators: name -> {"coordinate", "gear", "control_range" (min_control, max_control),
      recorded, not enforced: OpenSim applies control * optimal_force unclamped}.
    omitted: names left out because they were in `omit`, in file order.
    source: the file path as given.
    coupled_coordinates: dependent coordinate -> `CoupledCoordinate` for each enforced
      CoordinateCouplerConstraint, eliminated exactly: the dofs it moved follow its
      independent coordinate through `coupling` (docs/osim.md).
    unenforced_constraints: CoordinateCouplerConstraints with isEnforced false, left out
      (they have no effect in OpenSim), in file order.
    merged_bodies: welded child -> the body that took its mass properties (`to_builders.
      merge_welded`: an inertia MuJoCo refuses on a welded child); the child is massless.
    locked_coordinates: name -> `LockedCoordinate` for each coordinate the file locks (none
      when loaded with locks=False), eliminated: its dofs are held by `coupling`.
    all_coordinates: every coordinate of the file that moves an engine dof, the dependent ones
      of `coupled_coordinates` and the locked ones included at their joint's place (the
      joints in the engine's order, each joint's coordinates in the file's order: OpenSim's
      order for its tools' output); `coordinates` when nothing is coupled or locked.
    engine_joint_coordinates: per engine dof (`engine_joints` order), the coordinate whose
      joint axis it is (a dependent coordinate for the dofs it moves).
    prescribed_controls: the controls of the model's enabled PrescribedControllers
      (`osim.controllers.PrescribedControl`: controller, actuator, function of time), which
      `osim.forward.Inputs` adds to the excitations and controls as OpenSim adds them.
    """

    model: Model
    path_builder: PathBuilder
    coordinates: tuple[str, ...]
    engine_joints: tuple[str, ...]
    coupling: CoordinateCoupling | None
    coordinate_ranges: Mapping[str, tuple[float, float]]
    coordinate_clamped: Mapping[str, bool]
    coordinate_default_values: Mapping[str, float]
    coordinate_joints: Mapping[str, str]
    coordinate_motion: Mapping[str, str]
    body_names: tuple[str, ...]
    muscle_names: tuple[str, ...]
    muscles: Mapping[str, Mapping[str, object]]
    actuator_names: tuple[str, ...]
    actuators: Mapping[str, Mapping[str, object]]
    omitted: tuple[str, ...]
    source: str
    coupled_coordinates: Mapping[str, CoupledCoordinate] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    unenforced_constraints: tuple[str, ...] = ()
    merged_bodies: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    all_coordinates: tuple[str, ...] = ()
    engine_joint_coordinates: tuple[str, ...] = ()
    locked_coordinates: Mapping[str, LockedCoordinate] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    force_names: tuple[str, ...] = ()
    force_set_files: tuple[str, ...] = ()
    coordinate_default_speeds: Mapping[str, float] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    force_set_replaced: bool = False
    prescribed_controls: tuple = ()


def _frozen(mapping=(), **items) -> types.MappingProxyType:
    return types.MappingProxyType(dict(mapping, **items))


def _motion(doc, coordinate: str) -> str:
    """OpenSim's Coordinate motion type (checked against OpenSim 4.6's getMotionType)."""
    linear = {axis.kind for joint in doc.joints for axis in joint.axes
              if axis.coordinate == coordinate
              and (axis.function is None or is_linear(axis.function))}
    if JointKind.HINGE in linear:
        return "rotational"
    return "translational" if JointKind.SLIDE in linear else "coupled"


def _coupled(doc) -> dict[str, CoupledCoordinate]:
    """Dependent coordinate -> its coupling to the independent one (scale folded in)."""
    coupled = {}
    joint_of = {c.name: j.name for j in doc.joints for c in j.coordinates}
    for c in doc.couplers:
        g = piecewise_polynomial(c.function)
        coupled[c.dependent] = CoupledCoordinate(
            c.independent, c.description, c.name,
            g._replace(coefficients=g.coefficients * c.scale_factor), joint_of[c.dependent],
            _motion(doc, c.dependent))
    return coupled


def _all_coordinates(doc, engine_joints: tuple[str, ...]):
    """(every coordinate, each joint's in its file order, the joints in the engine's order,
    dependent ones included; per engine dof the coordinate whose joint axis it is)."""
    axes = to_builders.engine_joints(doc)
    driver = tuple(axes[name].coordinate for name in engine_joints)
    joint_of = {c.name: j for j in doc.joints for c in j.coordinates}
    joints = dict.fromkeys(joint_of[c].name for c in driver)
    by_name = {j.name: j for j in doc.joints}
    return tuple(c.name for name in joints for c in by_name[name].coordinates), driver


def _locked(doc, locks: bool) -> dict[str, LockedCoordinate]:
    """Locked coordinate -> its value, joint and motion (none unless `locks`)."""
    if not locks:
        return {}
    return {c.name: LockedCoordinate(c.default_value, j.name, _motion(doc, c.name))
            for j in doc.joints for c in j.coordinates if c.locked}


def _check_locked_couplers(doc, locked: Mapping[str, LockedCoordinate]) -> None:
    """Refuse a CoordinateCouplerConstraint on a locked coordinate: a locked dependent is held
    twice; a locked independent would make its dependent a constant, not modelled."""
    for c in doc.couplers:
        for role, name in (("dependent", c.dependent), ("independent", c.independent)):
            if name in locked:
                raise Where(doc.file_name, "CoordinateCouplerConstraint", c.name).error(
                    f"its {role} coordinate {name!r} is locked (<locked>true</locked>); a "
                    "coupler on a locked coordinate is not supported (unlock it or omit the "
                    f"constraint: omit=({c.name!r},))")


def _constant(value: float) -> PiecewisePolynomial:
    return PiecewisePolynomial(np.zeros(0), np.zeros(1), np.array([[float(value)]]))


def _coupling(doc, engine_joints: tuple[str, ...], coupled: Mapping[str, CoupledCoordinate],
              locked: Mapping[str, LockedCoordinate]):
    """(the coordinates, `_all_coordinates` without the dependent ones of `coupled` and the
    `locked` ones; the coupling, None when they are the engine's joints in its q order). A
    dof moved by a dependent coordinate follows its independent coordinate through the
    composition axis function o coupler function; a dof moved by a locked coordinate is the
    axis function of the constant locked value (its source coordinate is arbitrary: the
    derivatives are 0)."""
    axes = to_builders.engine_joints(doc)
    coordinates = tuple(c for c in _all_coordinates(doc, engine_joints)[0]
                        if c not in coupled and c not in locked)
    if coordinates == engine_joints:
        return coordinates, None
    if not coordinates:
        raise Where(doc.file_name, "Model", doc.model_name).error(
            f"every coordinate is locked ({', '.join(locked)}): the model cannot move")
    index = {name: i for i, name in enumerate(coordinates)}
    functions = [identity_polynomial() if axes[name].function is None
                 else piecewise_polynomial(axes[name].function) for name in engine_joints]
    source, inner = [], []
    for name in engine_joints:
        coordinate = axes[name].coordinate
        if coordinate in locked:
            source.append(0)
            inner.append(_constant(locked[coordinate].value))
        elif coordinate in coupled:
            source.append(index[coupled[coordinate].independent])
            inner.append(coupled[coordinate].function)
        else:
            source.append(index[coordinate])
            inner.append(None)
    if all(g is None for g in inner):
        inner = None
    return coordinates, coordinate_coupling(len(coordinates), source, functions, inner)


def load(path, *, omit: Iterable[str] = (), forces: bool = True,
         locks: bool = True, force_set_files: Iterable = (),
         replace_force_set: bool = False, controllers: bool = True) -> OsimModel:
    """Load an OpenSim 4 .osim file of the supported subset (docs/osim.md).

    omit: names of wrap objects, constraints, forces or components to leave out (paths then
    drop an omitted wrap object, as `models.arm26.build(ellipsoids=False)` drops its
    ellipsoids). forces=False loads the skeleton only (the ForceSet is not read: no muscles,
    no actuators), for inverse dynamics with every force excluded. locks=False reads every
    coordinate as unlocked, as OpenSim's inverse dynamics does (its solver ignores locks);
    by default a locked coordinate is held at its default_value (`locked_coordinates`).
    force_set_files: OpenSim ForceSet .xml files (e.g. CMC's reserve actuators) whose forces
    are added after the model's, as OpenSim's ForwardTool adds its `force_set_files` when
    `replace_force_set` is false; their forces must be of the types the model's may be.
    replace_force_set=True: the model's own forces (muscles included) are dropped and those of
    force_set_files are the model's forces, as OpenSim's tools' `replace_force_set` true
    empties the model's ForceSet before adding the files' (none given: no forces).
    controllers: read the ControllerSet's PrescribedControllers (`prescribed_controls`;
    another controller type is refused); False reads it past, for tools that do not run the
    model forward (static optimization, muscle analysis: their results do not depend on
    controls). Raises
    `osim.OsimError` (a ValueError naming the file, the element and the value) for anything
    outside the subset. Needs float64 (`myotwin.configure_jax()` first)."""
    names = () if isinstance(omit, str) else tuple(omit)
    if isinstance(omit, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"omit must be a collection of element names, e.g. omit=('TRIlonghh',),"
                        f" got {omit!r}")
    for flag, value in (("forces", forces), ("locks", locks),
                        ("replace_force_set", replace_force_set),
                        ("controllers", controllers)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    if not jax.config.jax_enable_x64:
        raise RuntimeError("osim.load needs float64: call myotwin.configure_jax() (or "
                           'jax.config.update("jax_enable_x64", True)) first')
    if isinstance(force_set_files, (str, Path)):
        raise TypeError(f"force_set_files must be a collection of paths, e.g. "
                        f"force_set_files=({str(force_set_files)!r},), got {force_set_files!r}")
    extra = tuple(str(f) for f in force_set_files)
    if (extra or replace_force_set) and not forces:
        raise ValueError("force_set_files and replace_force_set concern forces: they cannot be "
                         "given with forces=False")
    doc = read_document(path, names, forces=forces, force_set_files=extra,
                        replace_force_set=bool(replace_force_set),
                        controllers=bool(controllers))
    pb = to_builders.path_builder(doc, to_builders.skeleton(doc))
    model, engine_joints = to_builders.build_model(doc, pb)
    coupled, locked = _coupled(doc), _locked(doc, locks)
    _check_locked_couplers(doc, locked)
    coordinates, coupling = _coupling(doc, engine_joints, coupled, locked)
    all_coordinates, driver = _all_coordinates(doc, engine_joints)
    by_name = {c.name: c for j in doc.joints for c in j.coordinates}
    joint_of = {c.name: j.name for j in doc.joints for c in j.coordinates}
    coords = {name: by_name[name] for name in coordinates}  # q order
    actuators = {a.name: _frozen(coordinate=a.coordinate, gear=a.optimal_force,
                                 control_range=(a.min_control, a.max_control))
                 for a in doc.actuators}
    return OsimModel(
        model=model, path_builder=pb, coordinates=coordinates, engine_joints=engine_joints,
        coupling=coupling,
        coordinate_ranges=_frozen({n: c.range for n, c in coords.items()}),
        coordinate_clamped=_frozen({n: c.clamped for n, c in coords.items()}),
        coordinate_default_values=_frozen({n: c.default_value for n, c in coords.items()}),
        coordinate_joints=_frozen({n: joint_of[n] for n in coords}),
        coordinate_motion=_frozen({n: _motion(doc, n) for n in coords}),
        body_names=to_builders.body_names(pb),
        muscle_names=tuple(m.name for m in doc.muscles),
        muscles=_frozen({m.name: m.parameters for m in doc.muscles}),
        actuator_names=tuple(a.name for a in doc.actuators), actuators=_frozen(actuators),
        omitted=doc.omitted, source=str(path), coupled_coordinates=_frozen(coupled),
        unenforced_constraints=doc.unenforced_constraints,
        merged_bodies=_frozen(to_builders.merge_welded(doc)[1]),
        all_coordinates=all_coordinates, engine_joint_coordinates=driver,
        locked_coordinates=_frozen(locked), force_names=doc.force_names,
        force_set_files=extra, force_set_replaced=bool(replace_force_set),
        coordinate_default_speeds=_frozen(
            {n: by_name[n].default_speed_value for n in all_coordinates}),
        prescribed_controls=doc.controls)
