"""OpenSim's InverseKinematicsTool setup file, for `myotwin osim inverse-kinematics --setup`
and `myotwin osim run-tool` (`run_ik_setup`).

    <OpenSimDocument Version="40000"><InverseKinematicsTool name="subject01">
      <model_file>subject01.osim</model_file>
      <marker_file>subject01_walk.trc</marker_file>
      <time_range>0.5 2.5</time_range>
      <accuracy>1e-05</accuracy>
      <constraint_weight>Inf</constraint_weight>
      <IKTaskSet> ... </IKTaskSet>                   (`ik_tasks.read_ik_tasks`)
      <output_motion_file>ik.mot</output_motion_file> ...
    </InverseKinematicsTool></OpenSimDocument>

Read here: model_file, marker_file and results_directory (relative paths resolved against
the setup file's folder, as OpenSim does; empty or "Unassigned" is none), time_range (two
numbers, first <= last), constraint_weight (Inf or absent: our CoordinateCouplerConstraints
are exact; a finite weight, OpenSim's penalty on constraint errors, is refused), accuracy
(recorded: it is the tolerance of OpenSim's assembler; ours stays the command's --accuracy)
and the task set. The tool's other output and reporting properties (output_motion_file,
report_errors, report_marker_locations, coordinate_file used only by from_file tasks, which
the task reader refuses) are read past. Errors name the file, the property and the value
(`ik_tasks.IKTaskError`, a ValueError).
"""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from pathlib import Path

from myotwin.osim.ik_tasks import IKTaskError, IKTasks, read_ik_tasks
from myotwin.osim.xml_values import parse_xml

_TOOL = "InverseKinematicsTool"
_UNSET = ("", "Unassigned")


@dataclasses.dataclass(frozen=True)
class IKSetup:
    """model_file, marker_file: paths (None when unset); time_range_s: (first, last) or None;
    accuracy: OpenSim's assembler tolerance as written (None when absent); tasks;
    results_directory: where `myotwin osim run-tool` writes (the setup's folder when unset)."""

    model_file: Path | None
    marker_file: Path | None
    time_range_s: tuple[float, float] | None
    accuracy: float | None
    tasks: IKTasks
    results_directory: Path | None = None


def _text(tool: ET.Element, tag: str) -> str | None:
    found = tool.findall(tag)
    if len(found) > 1:
        raise IKTaskError(f"{tag}: given {len(found)} times")
    return None if not found else (found[0].text or "").strip()


def read_ik_setup(path) -> IKSetup:
    """The InverseKinematicsTool setup file at `path` (module docstring)."""
    path = Path(path)
    where = path.name
    root = parse_xml(path, IKTaskError)
    tool = root.find(_TOOL)
    if root.tag != "OpenSimDocument" or tool is None:
        raise IKTaskError(f"{where}: expected an <OpenSimDocument> holding an <{_TOOL}>, got "
                          f"<{root.tag}> holding {[e.tag for e in root]}")

    def text(tag: str) -> str | None:
        try:
            return _text(tool, tag)
        except IKTaskError as err:
            raise IKTaskError(f"{where}: {_TOOL}: {err}") from None

    def file(tag: str) -> Path | None:
        value = text(tag)
        if value is None or value in _UNSET:
            return None
        given = Path(value)
        return given if given.is_absolute() else path.parent / given

    def numbers(tag: str) -> list[float] | None:
        value = text(tag)
        if value is None or value == "":
            return None
        try:
            return [float(word) for word in value.split()]
        except ValueError:
            raise IKTaskError(f"{where}: {_TOOL}: <{tag}> is not numbers, got "
                              f"{value!r}") from None

    weight = numbers("constraint_weight")
    if weight is not None and (len(weight) != 1 or not math.isinf(weight[0])
                               or weight[0] < 0):
        raise IKTaskError(f"{where}: {_TOOL}: <constraint_weight> must be Inf (constraints "
                          "exact; a finite weight, OpenSim's penalty on constraint errors, is "
                          f"not supported), got {text('constraint_weight')!r}")
    window = numbers("time_range")
    if window is not None and (len(window) != 2 or not window[0] <= window[1]
                               or any(math.isnan(w) for w in window)):
        raise IKTaskError(f"{where}: {_TOOL}: <time_range> must be two times, first <= last, "
                          f"got {text('time_range')!r}")
    accuracy = numbers("accuracy")
    if accuracy is not None and (len(accuracy) != 1 or not accuracy[0] > 0):
        raise IKTaskError(f"{where}: {_TOOL}: <accuracy> must be one positive number, got "
                          f"{text('accuracy')!r}")
    return IKSetup(file("model_file"), file("marker_file"),
                   None if window is None else (window[0], window[1]),
                   None if accuracy is None else accuracy[0], read_ik_tasks(path),
                   file("results_directory") or path.parent)


def run_ik_setup(path, out_dir=None) -> dict:
    """Run the InverseKinematicsTool setup file `path` as `opensim-cmd run-tool` runs it
    (`myotwin osim run-tool`): its model_file, marker_file, task set and time_range (absent:
    every frame), writing `inverse_kinematics.run`'s files (inverse_kinematics.mot,
    marker_errors.sto, summary.json; not the setup's output_motion_file name) into `out_dir`
    (default: its results_directory). The setup's accuracy is recorded, not used (module
    docstring): the solution is converged to `inverse_kinematics.DEFAULT_ACCURACY`. The
    summary (returned and written) adds the tool type and the setup's file name.
    IKTaskError naming the file for a setup without a model_file or marker_file."""
    from myotwin.osim.inverse_kinematics import DEFAULT_ACCURACY, run
    from myotwin.osim.tool_setups import write_setup_summary

    setup = read_ik_setup(path)
    for tag, value in (("model_file", setup.model_file), ("marker_file", setup.marker_file)):
        if value is None:
            raise IKTaskError(f"{Path(path).name}: {_TOOL}: <{tag}> is empty")
    start, end = setup.time_range_s or (-math.inf, math.inf)
    out = setup.results_directory if out_dir is None else out_dir
    summary = run(setup.model_file, setup.marker_file, out, tasks_path=path,
                  start_time_s=start, end_time_s=end, accuracy=DEFAULT_ACCURACY, setup=setup)
    return write_setup_summary(out, _TOOL, {"setup": Path(path).name, **summary})
