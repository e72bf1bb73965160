"""OpenSim ExternalLoads (.xml) and their data file -> the loads of inverse dynamics and of
forward simulations (`forward_loads.py`).

    loads = read_external_loads("subject01_walk_grf.xml")
    for load in evaluate_external_loads(loads, times_s):   # the ID tool's output times
        load.force_N, load.point_m, load.torque_Nm          # (n_times, 3) each

What OpenSim 4.6 does, and this module with it (ExternalLoads.cpp, ExternalForce.cpp/.h,
Storage.cpp, DynamicsTool.cpp):

* The XML (OpenSim 3 `Version="30000"` or OpenSim 4) holds a set of `ExternalForce`s and one
  `datafile` (resolved here relative to the XML's folder; OpenSim tries its working directory
  first). Every force takes its data from that file, which overrides the forces'
  `data_source_name`. OpenSim 3's `isDisabled` is OpenSim 4's `appliesForce` negated; a force
  with neither applies force (OpenSim's default).
  `external_loads_model_kinematics_file` and `lowpass_cutoff_frequency_for_load_kinematics`
  are ignored since OpenSim 4.0 (it warns): the data are used as written, unfiltered, and the
  file's `inDegrees` flag is not applied (forces, points and torques carry no angles).
* An identifier (force, point, torque) names the 3 data columns whose labels start with it,
  in file order (`Storage::getColumnIndicesForIdentifier`); exactly 3 must match. A blank or
  `Unassigned` identifier means none; a force needs a force or a torque identifier, and a
  point only makes sense with a force.
* Each column becomes a function of time: a constant for 1 row, piecewise linear (linear
  extrapolation) for 2-3 rows, else an interpolating natural cubic GCV spline
  (`GCVSpline(3, ...)`, `signals.natural_spline`), which continues linearly outside the data
  (the ID tool's first output time, -0.0000005 s, lies before the GRF data's t = 0).
* Frames. OpenSim 4.6's ID tool does *not* call `transformPointsExpressedInGroundToAppliedBodies`
  (`DynamicsTool::createExternalLoads` only adds the loads to the model). Instead
  `ExternalForce::computeForce` re-expresses, at each time, with the state the solver set from
  the coordinate splines: the force and the torque from `force_expressed_in_body` to ground
  (rotation only), the point from `point_expressed_in_body` to the applied body
  (`findStationLocationInAnotherFrame`); the force acts at that point, the torque is free.
  `evaluate_external_loads` therefore returns each vector in the frame its name says
  (`force_frame`, `point_frame`, `torque_frame`, as written in the file: "ground" or a body
  name); the caller maps them with its own kinematics at the same times (for a point in
  ground: p_body = R_body^T (p_ground - o_body)). A force without a point acts at the applied
  body's origin (point zeros in `applied_to_body`); a missing force or torque is zeros.

Every property OpenSim writes must be present (identifiers and data_source_name may be
blank), frame names must not be blank, unknown properties are refused: anything malformed is
an `OsimError` naming the file, the element and the value.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from myotwin.osim.signals import NaturalSpline, natural_spline
from myotwin.osim.storage import Storage, StorageError, read_storage
from myotwin.osim.xml_values import Node, document_element, parse_xml

#: Oldest document version in the ExternalForce format (older ones use PrescribedForces).
MIN_VERSION = 20301
#: Properties of <ExternalLoads>; the last two are read past (ignored since OpenSim 4.0).
_LOADS_PROPERTIES = ("objects", "groups", "datafile", "external_loads_model_kinematics_file",
                     "lowpass_cutoff_frequency_for_load_kinematics")
_ENABLED_FLAGS = ("appliesForce", "isDisabled")
_FRAMES = ("applied_to_body", "force_expressed_in_body", "point_expressed_in_body")
_IDENTIFIERS = ("force_identifier", "point_identifier", "torque_identifier")
_FORCE_PROPERTIES = (*_ENABLED_FLAGS, *_FRAMES, *_IDENTIFIERS, "data_source_name")


@dataclasses.dataclass(frozen=True, eq=False)
class LoadCurve:
    """Three data columns (force, point or torque) as OpenSim's ExternalForce makes them
    functions of time: times_s (n,), values (n, 3), and `__call__(t) -> (len(t), 3)`."""

    times_s: np.ndarray
    values: np.ndarray
    spline: NaturalSpline | None   # the natural cubic for 4 rows or more

    @classmethod
    def of(cls, times_s: np.ndarray, values: np.ndarray) -> LoadCurve:
        spline = natural_spline(times_s, values, 3) if times_s.shape[0] >= 4 else None
        return cls(times_s, values, spline)

    def __call__(self, t) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        n = self.times_s.shape[0]
        if n == 1:                                   # OpenSim's Constant
            return np.repeat(self.values[:1], t.shape[0], axis=0)
        if n <= 3:                                   # PiecewiseLinearFunction
            return np.stack([_piecewise_linear(self.times_s, self.values[:, k], t)
                             for k in range(3)], axis=1)
        return self.spline(t)                        # GCVSpline(3, ...), natural cubic


def _piecewise_linear(x: np.ndarray, y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """OpenSim's PiecewiseLinearFunction: linear between points, the end slopes outside."""
    slopes = np.diff(y) / np.diff(x)
    k = np.clip(np.searchsorted(x, t, side="right") - 1, 0, x.shape[0] - 2)
    return y[k] + (t - x[k]) * slopes[k]


@dataclasses.dataclass(frozen=True, eq=False)
class ExternalForce:
    """One <ExternalForce> with its data: identifiers None when blank or `Unassigned`; the
    *_columns are the 3 matched column labels (empty without identifier)."""

    name: str
    applies_force: bool
    applied_to_body: str
    force_expressed_in_body: str
    point_expressed_in_body: str
    force_identifier: str | None
    point_identifier: str | None
    torque_identifier: str | None
    data_source_name: str
    force_columns: tuple[str, ...]
    point_columns: tuple[str, ...]
    torque_columns: tuple[str, ...]
    force_curve: LoadCurve | None
    point_curve: LoadCurve | None
    torque_curve: LoadCurve | None


@dataclasses.dataclass(frozen=True, eq=False)
class ExternalLoads:
    """An ExternalLoads file: its name, path, data file (read with `read_storage`) and
    forces in file order."""

    name: str
    path: Path
    datafile: Path
    data: Storage
    forces: tuple[ExternalForce, ...]

    def force(self, name: str) -> ExternalForce:
        """The ExternalForce called `name` (KeyError naming the forces if absent)."""
        for force in self.forces:
            if force.name == name:
                return force
        raise KeyError(f"{self.path.name}: no ExternalForce {name!r}; the forces are "
                       f"{[f.name for f in self.forces]}")


@dataclasses.dataclass(frozen=True, eq=False)
class AppliedLoad:
    """One force evaluated at n times, each vector (n, 3) in the frame named beside it:
    force_N in force_frame, point_m in point_frame, torque_Nm in torque_frame (module
    docstring: OpenSim maps them with the state at each time)."""

    name: str
    applied_to_body: str
    times_s: np.ndarray
    force_N: np.ndarray
    force_frame: str
    point_m: np.ndarray
    point_frame: str
    torque_Nm: np.ndarray
    torque_frame: str


def evaluate_external_loads(loads: ExternalLoads, times_s,
                            include_disabled: bool = False) -> tuple[AppliedLoad, ...]:
    """Every force of `loads` at times_s (s), as ExternalForce::getForceAtTime,
    getPointAtTime and getTorqueAtTime give them; forces with appliesForce false (OpenSim 3:
    isDisabled true) apply nothing in OpenSim and are left out unless include_disabled."""
    t = np.atleast_1d(np.asarray(times_s, dtype=np.float64))
    zeros = np.zeros((t.shape[0], 3))
    out = []
    for f in loads.forces:
        if not (f.applies_force or include_disabled):
            continue
        force = f.force_curve(t) if f.force_curve is not None else zeros.copy()
        torque = f.torque_curve(t) if f.torque_curve is not None else zeros.copy()
        if f.point_curve is not None:
            point, point_frame = f.point_curve(t), f.point_expressed_in_body
        else:
            point, point_frame = zeros.copy(), f.applied_to_body
        out.append(AppliedLoad(f.name, f.applied_to_body, t.copy(), force,
                               f.force_expressed_in_body, point, point_frame, torque,
                               f.force_expressed_in_body))
    return tuple(out)


def read_external_loads(path) -> ExternalLoads:
    """The ExternalLoads file `path` and its data file (module docstring), or an OsimError."""
    path = Path(path)
    file_name = path.name
    loads = _loads_node(parse_xml(path), file_name)
    loads.check_children(_LOADS_PROPERTIES)
    datafile_text = loads.text("datafile")
    if not datafile_text or datafile_text == "Unassigned":
        raise loads.error("<datafile> is empty: the forces have no data (OpenSim: 'No Data "
                          "source has been set')")
    datafile = Path(datafile_text)
    if not datafile.is_absolute():
        datafile = path.parent / datafile
    try:
        data = read_storage(datafile)
    except StorageError as err:
        raise loads.error(f"<datafile> {datafile_text!r}: {err}") from None
    if data.data.shape[0] < 1:
        raise loads.error(f"<datafile> {datafile_text!r} has no rows")
    forces, names = [], set()
    objects = loads.find("objects")          # ExternalLoads is itself a Set
    for elem in ([] if objects is None else list(objects)):
        node = Node.of(elem, loads.where)
        if node.tag != "ExternalForce":
            raise node.error("only ExternalForce objects can be external loads")
        if not node.name:
            raise node.error("the ExternalForce has no name attribute")
        if node.name in names:
            raise node.error("two ExternalForces have this name")
        names.add(node.name)
        forces.append(_read_force(node, data, datafile_text))
    return ExternalLoads(loads.name, path, datafile, data, tuple(forces))


def _loads_node(root: ET.Element, file_name: str) -> Node:
    return document_element(root, file_name, "ExternalLoads", MIN_VERSION,
                            "the PrescribedForces format of OpenSim before 2.3.1 (the "
                            "ExternalForce format has 20301 or more)")


def _identifier(node: Node, tag: str) -> str | None:
    """ExternalForce::appliesForce/specifiesPoint/appliesTorque: blank or Unassigned is none."""
    raw = node.text(tag)
    return None if raw.strip(" \t") in ("", "Unassigned") else raw


def _enabled(node: Node) -> bool:
    """appliesForce, or OpenSim 3's isDisabled negated; neither: true (OpenSim's default)."""
    given = [tag for tag in _ENABLED_FLAGS if node.find(tag) is not None]
    if len(given) > 1:
        raise node.error("at most one of <appliesForce> (OpenSim 4) and <isDisabled> "
                         f"(OpenSim 3) may be given, got {given}")
    if not given:
        return True
    flag = node.flag(given[0])
    return flag if given[0] == "appliesForce" else not flag


def _read_force(node: Node, data: Storage, datafile_text: str) -> ExternalForce:
    node.check_children(_FORCE_PROPERTIES)
    applies = _enabled(node)
    frames = {tag: node.text(tag) for tag in _FRAMES}
    ids = {tag: _identifier(node, tag) for tag in _IDENTIFIERS}
    source = node.text("data_source_name")
    if ids["force_identifier"] is None and ids["torque_identifier"] is None:
        raise node.error("no force or torque identified: <force_identifier> and "
                         "<torque_identifier> are both blank or Unassigned")
    if ids["force_identifier"] is None and ids["point_identifier"] is not None:
        raise node.error(f"<point_identifier> {ids['point_identifier']!r} is given for no "
                         "applied force")
    needed = ["applied_to_body", "force_expressed_in_body"]    # a force or a torque is given
    if ids["point_identifier"] is not None:
        needed.append("point_expressed_in_body")
    for tag in needed:
        if not frames[tag]:
            raise node.error(f"<{tag}> is empty")
    columns, curves = {}, {}
    for tag, identifier in ids.items():
        columns[tag], curves[tag] = _columns(node, tag, identifier, data, datafile_text)
    return ExternalForce(
        node.name, applies, frames["applied_to_body"], frames["force_expressed_in_body"],
        frames["point_expressed_in_body"], ids["force_identifier"], ids["point_identifier"],
        ids["torque_identifier"], source, columns["force_identifier"],
        columns["point_identifier"], columns["torque_identifier"],
        curves["force_identifier"], curves["point_identifier"], curves["torque_identifier"])


def _columns(node: Node, tag: str, identifier: str | None, data: Storage,
             datafile_text: str) -> tuple[tuple[str, ...], LoadCurve | None]:
    if identifier is None:
        return (), None
    labels = tuple(label for label in data.labels[1:] if label.startswith(identifier))
    if len(labels) != 3:
        raise node.error(f"<{tag}> {identifier!r} matches {len(labels)} columns of "
                         f"{datafile_text!r} ({list(labels)}); exactly 3 column labels must "
                         "start with it")
    times = data.time_s
    if times.shape[0] >= 4 and np.any(np.diff(times) <= 0.0):
        k = int(np.argmax(np.diff(times) <= 0.0))
        raise node.error(f"the times of {datafile_text!r} must increase strictly for a spline, "
                         f"got {float(times[k])!r} then {float(times[k + 1])!r} (rows {k + 1}, "
                         f"{k + 2})")
    values = np.stack([data.column(label) for label in labels], axis=1)
    return labels, LoadCurve.of(times.copy(), values)
