"""Controls files as OpenSim's ForwardTool reads them (its `controls_file`, through a
ControlSetController): a .sto table or a ControlSet .xml, each control a function of time.

OpenSim 4.6 makes every control a `ControlLinear`: a list of nodes (t_i, v_i), t strictly
increasing, and two flags. What it evaluates (`ControlLinear::getControlValue`; every case
below is checked against that function, live, in tests/osim/test_osim_controls.py):

* use_steps false: linear interpolation between the nodes; before the first node and after
  the last, the end segment's line continued if `extrapolate` is true (its default), else the
  end value held.
* use_steps true: a step function, v_i on (t_{i-1}, t_i], v_0 up to t_0 and v_n after t_n
  (extrapolate plays no part). CMC writes its muscles' controls so (it computes each control
  constant over its window) and the reserve actuators' linear.
* One node: that value at every time.

A .sto controls file becomes one linear control per column with `extrapolate` true, as
OpenSim's `ControlSet(Storage)` builds them (seen: `ForwardTool` driven by a two-row .sto
kept the line going past the last row, the excitations reaching 1.2 and -0.002). A
ControlSet .xml is read for its ControlLinear objects: `<x_nodes>` of `<ControlLinearNode>`
(`<t>`, `<value>`), `<use_steps>` (default false), `<extrapolate>` (default true); their bounds
(`<default_min>`, `<default_max>`, `<min_nodes>`, `<max_nodes>`), `<filter_on>`, `<kp>` and
`<kv>` are CMC's optimisation settings, which `getControlValue` does not read (a control with
`filter_on` true evaluated the same, seen), and are ignored. A control named `<actuator>.
excitation` (CMC's names) is that actuator's, as the ControlSetController connects it.

Refused, one OsimError naming the file, the control and the value: another control type
(OpenSim's ControlConstant is abstract in its Python API; no file of ours could be checked
against it), `is_model_control` false (OpenSim 4.6's ControlSetController then skips the
control but not its index: the next actuators got the wrong controls, seen), a control
without nodes (OpenSim evaluates it to NaN), times that are not strictly increasing, values
that are not finite (as the storage reader refuses them), and two controls for one
actuator.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from myotwin.osim.errors import OsimError
from myotwin.osim.storage import Storage, read_storage
from myotwin.osim.xml_values import Node, document_element, parse_xml

#: The suffix CMC gives a muscle's control; the ControlSetController drops it.
SUFFIX = ".excitation"
_CONTROL_PROPERTIES = ("is_model_control", "extrapolate", "default_min", "default_max",
                       "filter_on", "use_steps", "x_nodes", "min_nodes", "max_nodes", "kp",
                       "kv")


@dataclasses.dataclass(frozen=True)
class Control:
    """One control: `name` (the actuator's, suffix dropped), nodes times_s (k,) strictly
    increasing and values (k,), and OpenSim's flags (module docstring)."""

    name: str
    times_s: np.ndarray
    values: np.ndarray
    use_steps: bool = False
    extrapolate: bool = True
    #: the name as the file writes it ("BIClong.excitation"), and what the file calls the
    #: control and its nodes: "column" and "row" in a .sto, "ControlLinear" and "node" in a
    #: ControlSet (for messages)
    written: str = ""
    kind: str = "ControlLinear"
    point: str = "node"

    @property
    def label(self) -> str:
        """The control as messages name it: "column 'BIClong'"."""
        return f"{self.kind} {self.written or self.name!r}"

    def at(self, t) -> np.ndarray:
        """The control at times t (s), as OpenSim's ControlLinear evaluates it."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        times, values = self.times_s, self.values
        if times.size == 1:
            return np.full(t.shape, values[0])
        if self.use_steps:
            return values[np.minimum(np.searchsorted(times, t, side="left"), times.size - 1)]
        out = np.interp(t, times, values)
        if self.extrapolate:
            before, after = t < times[0], t > times[-1]
            out[before] = values[0] + (t[before] - times[0]) * self._slope(0)
            out[after] = values[-1] + (t[after] - times[-1]) * self._slope(-2)
        return out

    def _slope(self, i: int) -> float:
        return float((self.values[i + 1] - self.values[i])
                     / (self.times_s[i + 1] - self.times_s[i]))

    def knots(self, first_s: float, last_s: float) -> np.ndarray:
        """Times at which this control, linearly interpolated, is itself on [first_s, last_s]:
        its nodes and the interval's ends, and for a step function a point just after each
        node where it jumps: 1e-9 of the shortest node interval later, or 16 floating-point
        spacings of the times if that is more, so that the point stays distinct (the steps
        become ramps that short, which a state integrated over them does not notice)."""
        times = self.times_s
        extra = [first_s, last_s]
        if self.use_steps and times.size > 1:
            jump = np.flatnonzero(np.diff(self.values) != 0.0)
            shortest = float(np.min(np.diff(times)))
            ramp = min(max(1e-9 * shortest, 16 * float(np.spacing(np.abs(times).max()))),
                       0.5 * shortest)
            extra += list(times[jump] + ramp)
        knots = np.unique(np.concatenate([times, extra]))
        return knots[(knots >= first_s) & (knots <= last_s)]


@dataclasses.dataclass(frozen=True)
class Controls:
    """The controls of one file, by actuator name (`read_controls`); `source` is the file's
    name for messages, `path` the file read (None for a table given in memory)."""

    source: str
    controls: tuple[Control, ...]
    path: Path | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.controls)

    def __getitem__(self, name: str) -> Control:
        return self.controls[self.names.index(name)]


def actuator_name(control_name: str) -> str:
    """The actuator a control of this name drives (CMC's `<muscle>.excitation` is the
    muscle's)."""
    return control_name.removesuffix(SUFFIX)


def controls_from_storage(table: Storage, source: str | None = None) -> Controls:
    """A .sto table's columns as linear, extrapolating controls (OpenSim's
    `ControlSet(Storage)`)."""
    where = source or table.name
    times = np.asarray(table.time_s, dtype=np.float64)
    if times.size == 0:
        raise OsimError(f"{where}: the controls file has no rows")
    if times.size > 1 and not np.all(np.diff(times) > 0):
        bad = int(np.flatnonzero(np.diff(times) <= 0)[0]) + 1
        raise OsimError(f"{where}: the times must increase: row {bad + 1} (t = "
                        f"{float(times[bad])!r} s) does not follow row {bad} (t = "
                        f"{float(times[bad - 1])!r} s)")
    controls = [Control(actuator_name(label), times, np.asarray(table.column(label)),
                        written=label, kind="column", point="row")
                for label in table.labels[1:]]
    return Controls(where, _unique(controls, where))


def read_controls(path) -> Controls:
    """The controls file `path`: a ControlSet .xml, or a storage table (.sto) otherwise
    (module docstring); OsimError (or StorageError) naming the file and the value."""
    path = Path(path)
    if path.suffix.lower() != ".xml":
        return dataclasses.replace(controls_from_storage(read_storage(path), path.name),
                                   path=path)
    root = document_element(parse_xml(path), path.name, "ControlSet", 1, "")
    root.check_children(("objects", "groups"))
    objects = root.find("objects")
    controls = [_read_control(Node.of(elem, root.where))
                for elem in ([] if objects is None else list(objects))]
    return Controls(path.name, _unique(controls, path.name), path)


def _read_control(node: Node) -> Control:
    if node.tag != "ControlLinear":
        raise node.error("only ControlLinear controls are supported (what CMC and OpenSim's "
                         "ControlSet of a .sto write)")
    if not node.name:
        raise node.error("the control has no name attribute")
    node.check_children(_CONTROL_PROPERTIES)
    if not node.flag("is_model_control", True):
        raise node.error("is_model_control is false: OpenSim 4.6's ControlSetController "
                         "skips such a control but not its place, driving the next actuators "
                         "with the wrong controls; remove it from the file")
    nodes = node.find("x_nodes")
    rows = []
    for elem in ([] if nodes is None else list(nodes)):
        point = Node.of(elem, node.where)
        if point.tag != "ControlLinearNode":
            raise point.error("<x_nodes> holds ControlLinearNode elements only")
        point.check_children(("t", "value"))
        rows.append((point.number("t"), point.number("value")))
    if not rows:
        raise node.error("the control has no <x_nodes> (OpenSim evaluates it to NaN)")
    for k in range(1, len(rows)):
        if not rows[k][0] > rows[k - 1][0]:
            raise node.error(f"the node times must increase: node {k + 1} (t = "
                             f"{rows[k][0]!r} s) follows t = {rows[k - 1][0]!r} s")
    return Control(actuator_name(node.name), np.array([t for t, _ in rows]),
                   np.array([v for _, v in rows]),
                   use_steps=node.flag("use_steps", False),
                   extrapolate=node.flag("extrapolate", True),
                   written=node.name)


def _unique(controls: list[Control], where: str) -> tuple[Control, ...]:
    seen = set()
    for c in controls:
        if c.name in seen:
            raise OsimError(f"{where}: two controls drive actuator {c.name!r} (a name and its "
                            f"{SUFFIX!r} form, or one name twice)")
        seen.add(c.name)
    return tuple(controls)


def extrapolated_range(control: Control, first_s: float, last_s: float) -> tuple[float, float]:
    """(least, greatest) value of `control` over [first_s, last_s]: at its nodes inside and at
    the ends (a piecewise-linear function is extreme there)."""
    values = control.at(control.knots(first_s, last_s))
    return float(np.min(values)), float(np.max(values))

