"""OpenSim's IKTaskSet (the weights of inverse kinematics): read it from a task set or a setup.

    tasks = read_ik_tasks("gait_IK_Tasks.xml")         # or an InverseKinematicsTool setup
    {t.name: t.weight for t in tasks.markers if t.apply}

The file is an `<OpenSimDocument>` (any Version; OpenSim 3 setups say 30000) holding either
an `<IKTaskSet>` or an `<InverseKinematicsTool>` whose `<IKTaskSet>` is read (the tool's other
properties are ignored here). The set's `<objects>` hold the tasks:

    <IKMarkerTask name="r_acromion"><apply>true</apply><weight>1</weight></IKMarkerTask>
    <IKCoordinateTask name="r_elbow_flex"><apply>true</apply><weight>0.5</weight>
        <value_type>manual_value</value_type><value>0</value></IKCoordinateTask>

OpenSim 4.6's defaults for an absent property: apply true, weight 0 (IKTask's constructor
sets 0, and OpenSim reads a task without `<weight>` as weight 0: such a task counts for
nothing), value_type "default_value", value 0. `apply` is true/false (or 1/0), any case;
value_type is default_value (hold the model's default value of the coordinate), manual_value
(hold `value`) or from_file (follow a coordinate file), any case, returned in lower case.
from_file is refused: this reader has no coordinate file. OpenSim's InverseKinematicsTool
skips tasks whose apply is false; they are returned here with `apply` False.

Units of `value`: OpenSim uses it as written, in the coordinate's internal unit (radians for
a rotational coordinate, metres for a translational one), not in degrees:
`InverseKinematicsTool::populateReferences` makes it a `Constant` with no conversion (only
from_file data are converted from degrees), and OpenSim 4.6 solving arm26 with r_elbow_flex
held at manual_value 1 returns 57.29 degrees. This reader returns the number as written.

Checks: every weight finite and >= 0, every value finite, no property given twice or empty,
no unknown property in a task (it might change its meaning), nothing but IKMarkerTask and
IKCoordinateTask in `<objects>`, a non-empty name, no two marker tasks (or two coordinate
tasks) of one name, no task set in another file (`file=`). OpenSim itself ignores unknown
properties. Errors name the file, the element, the task and the value (`IKTaskError`, a
ValueError).
"""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from myotwin.osim.xml_values import parse_xml

#: Accepted value_type values (lower case); the last is refused with a reason.
VALUE_TYPES = ("default_value", "manual_value", "from_file")
_PROPERTIES = {"IKMarkerTask": ("apply", "weight"),
               "IKCoordinateTask": ("apply", "weight", "value_type", "value")}
_TASK_SET = "IKTaskSet"
_TOOL = "InverseKinematicsTool"


class IKTaskError(ValueError):
    """An IK task set that cannot be read (names file, element, task and value)."""


@dataclasses.dataclass(frozen=True)
class MarkerTask:
    """Track marker `name` with `weight` (when `apply`)."""

    name: str
    weight: float
    apply: bool


@dataclasses.dataclass(frozen=True)
class CoordinateTask:
    """Hold coordinate `name` at a value with `weight` (when `apply`): value_type
    "default_value" (the model's default; `value` unused) or "manual_value" (`value`, in the
    coordinate's internal unit: radians or metres)."""

    name: str
    weight: float
    apply: bool
    value_type: str
    value: float


@dataclasses.dataclass(frozen=True)
class IKTasks:
    """The marker and coordinate tasks of a task set, each in file order."""

    markers: tuple[MarkerTask, ...]
    coordinates: tuple[CoordinateTask, ...]


def _error(where: str, tag: str, name: str | None, problem: str, value) -> IKTaskError:
    named = f" '{name}'" if name is not None else ""
    return IKTaskError(f"{where}: {tag}{named}: {problem}, got {value!r}")


def _task_set(root: ET.Element, where: str) -> ET.Element:
    """The <IKTaskSet> element of the document (standalone or in the tool's setup)."""
    if root.tag != "OpenSimDocument":
        raise _error(where, root.tag, None, "the root element must be <OpenSimDocument>",
                     root.tag)
    content = list(root)
    if len(content) != 1 or content[0].tag not in (_TASK_SET, _TOOL):
        raise _error(where, "OpenSimDocument", None, f"expected one <{_TASK_SET}> or one "
                     f"<{_TOOL}>", [e.tag for e in content])
    element = content[0]
    if element.tag == _TOOL:
        found = element.findall(_TASK_SET)
        if len(found) != 1:
            raise _error(where, _TOOL, element.get("name", ""), f"expected one <{_TASK_SET}>",
                         len(found))
        element = found[0]
    if element.get("file") is not None:
        raise _error(where, _TASK_SET, element.get("name", ""), "a task set in another file "
                     "(file=) is not supported", element.get("file"))
    return element


def _objects(task_set: ET.Element, where: str) -> list[ET.Element]:
    name = task_set.get("name", "")
    for child in task_set:
        if child.tag not in ("objects", "groups"):
            raise _error(where, _TASK_SET, name, "unknown property (expected <objects>, "
                         "<groups>)", child.tag)
    found = task_set.findall("objects")
    if len(found) > 1:
        raise _error(where, _TASK_SET, name, "<objects> is given more than once", len(found))
    return list(found[0]) if found else []


def _properties(task: ET.Element, where: str) -> dict[str, str]:
    """Property tag -> stripped text of one task, checked against the task's properties."""
    name = task.get("name")
    values: dict[str, str] = {}
    for child in task:
        if child.tag not in _PROPERTIES[task.tag]:
            raise _error(where, task.tag, name, "unknown property (expected "
                         f"{', '.join(_PROPERTIES[task.tag])})", child.tag)
        if child.tag in values:
            raise _error(where, task.tag, name, f"<{child.tag}> is given twice", child.tag)
        text = (child.text or "").strip()
        if not text:
            raise _error(where, task.tag, name, f"<{child.tag}> is empty", text)
        values[child.tag] = text
    return values


def _apply(text: str, where: str, task: ET.Element) -> bool:
    flag = text.lower()
    if flag not in ("true", "false", "1", "0"):
        raise _error(where, task.tag, task.get("name"), "<apply> must be true or false", text)
    return flag in ("true", "1")


def _number(text: str, tag: str, where: str, task: ET.Element) -> float:
    try:
        if "_" in text:
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise _error(where, task.tag, task.get("name"), f"<{tag}> is not a number",
                     text) from None
    if not math.isfinite(value):
        raise _error(where, task.tag, task.get("name"), f"<{tag}> must be finite", text)
    return value


def _read_task(task: ET.Element, where: str) -> MarkerTask | CoordinateTask:
    name = task.get("name", "").strip()
    if not name:
        raise _error(where, task.tag, None, "a task needs a name attribute",
                     task.get("name", ""))
    values = _properties(task, where)
    apply = _apply(values.get("apply", "true"), where, task)
    weight = _number(values.get("weight", "0"), "weight", where, task)
    if weight < 0.0:
        raise _error(where, task.tag, name, "<weight> must be >= 0", values["weight"])
    if task.tag == "IKMarkerTask":
        return MarkerTask(name, weight, apply)
    value_type = values.get("value_type", VALUE_TYPES[0]).lower()
    if value_type not in VALUE_TYPES:
        raise _error(where, task.tag, name, f"<value_type> must be one of "
                     f"{', '.join(VALUE_TYPES)}", values["value_type"])
    if value_type == "from_file":
        raise _error(where, task.tag, name, "<value_type> from_file needs a coordinate file, "
                     "which this reader does not read (use default_value or manual_value)",
                     values["value_type"])
    value = _number(values.get("value", "0"), "value", where, task)
    return CoordinateTask(name, weight, apply, value_type, value)


def read_ik_tasks(path) -> IKTasks:
    """The IK tasks of the task set or InverseKinematicsTool setup file `path` (module
    docstring)."""
    path = Path(path)
    where = path.name
    task_set = _task_set(parse_xml(path, IKTaskError), where)
    markers: list[MarkerTask] = []
    coordinates: list[CoordinateTask] = []
    for element in _objects(task_set, where):
        if element.tag not in _PROPERTIES:
            raise _error(where, element.tag, element.get("name"), "not an IK task (expected "
                         "IKMarkerTask or IKCoordinateTask in <objects>)", element.tag)
        task = _read_task(element, where)
        same_kind = markers if isinstance(task, MarkerTask) else coordinates
        if any(t.name == task.name for t in same_kind):
            raise _error(where, element.tag, task.name, "a second task of this name",
                         task.name)
        same_kind.append(task)
    return IKTasks(tuple(markers), tuple(coordinates))
