"""An OpenSim InverseDynamicsTool setup file, run as OpenSim's `opensim-cmd run-tool SETUP.xml`
runs it (`myotwin osim run-tool SETUP.xml`), by `osim.inverse_dynamics.run`.

What the setup's properties become (OpenSim 4.6's InverseDynamicsTool, whose default setup
holds exactly these ten, and one of OpenSim 2; paths relative to the setup file's folder;
empty or "Unassigned" is none):

* `model_file`, `coordinates_file` (required), `external_loads_file`: `run`'s model,
  coordinates and external loads. OpenSim 4.6 resolves the coordinates and loads files, and
  writes the results, relative to the setup's folder, but opens a relative `model_file` from
  the working directory (its tool loads the model before changing into that folder): the two
  agree when `opensim-cmd run-tool` is started in the setup's folder, its usual use.
* `time_range` (two numbers, first <= last; absent: -inf to inf, OpenSim's default, the whole
  file): the start and end times (`run`'s start_time_s, end_time_s). An infinite end (`-inf`,
  `inf`, as OpenSim's default setup prints it) is read as open; OpenSim 4.6 itself cannot
  read any infinity there (Simbody's parser refuses even the ` -inf inf` it prints).
* `lowpass_cutoff_frequency_for_coordinates`: a positive value is the cutoff (Hz); a negative
  one (OpenSim's default -1) is no filtering. 0 is refused: OpenSim 4.6 filters at a cutoff
  >= 0, and at 0 Hz its output times moved by 3e-7 s (arm26).
* `forces_to_exclude`: our inverse dynamics runs on the skeleton alone (every force of the
  model excluded), so a setup is run only where OpenSim's tool leaves no force of the model
  acting (`forces_left_in`). OpenSim 4.6 (`DynamicsTool::disableModelForces`, checked by
  running it): the keywords All, Actuators and Muscles, in any case, exclude every force,
  actuator or muscle of the ForceSet (All: the rest of the list is not read); any other word
  is an ObjectGroup of the ForceSet when the ForceSet has groups, else a force's name
  (case-sensitive), so with groups a force is not excluded by its own name; an unknown word
  is a warning (`forces_to_exclude_not_found`). All keeps the external loads of
  `external_loads_file` (the 4.6 property's comment says it drops them; the 4.6 tool applies
  them: subject01's GRF within 4e-10 N m of our run with the loads, 924 N off without).
  Left in and accepted: a force the model disables (`appliesForce` false), and a
  CoordinateActuator of a model without controllers (its control is 0, so it applies nothing;
  `actuators_at_zero_control`). Anything else left in is refused naming it: a muscle (its
  force depends on its state: with nothing excluded OpenSim's arm26 moments were 404 N m off),
  an actuator of a model with controllers, another force.
* `coordinates_in_degrees` (OpenSim 2's property, in its arm26 tutorial setup) must be true or
  false and is read past: OpenSim 4.6 ignores it too (the coordinates file's inDegrees header
  decides; the tutorial's setup gave the same moments with true and false, scratch).
* `joints_to_report_body_forces` must be empty (body forces are not computed);
  `output_gen_force_file` and `output_body_forces_file` are read past: the files are those of
  `osim inverse-dynamics` (inverse_dynamics.sto, summary.json), whatever the setup names.
* `results_directory` is the output folder unless another is given (default: the setup's
  folder, OpenSim's "./").
* Any other property is refused. Errors are one line naming the file, the property and the
  value (OsimError, a ValueError).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from myotwin.osim.errors import Where
from myotwin.osim.force_reading import ACTUATOR_TAGS, MUSCLE_TAGS
from myotwin.osim.xml_values import Node, document_element, parse_xml

_TOOL = "InverseDynamicsTool"
_PROPERTIES = ("results_directory", "model_file", "time_range", "forces_to_exclude",
               "external_loads_file", "coordinates_file",
               "lowpass_cutoff_frequency_for_coordinates", "output_gen_force_file",
               "joints_to_report_body_forces", "output_body_forces_file",
               "coordinates_in_degrees")


@dataclasses.dataclass(frozen=True)
class IDSetup:
    """An InverseDynamicsTool setup file's settings (module docstring), paths resolved.
    file_name, name: the setup file's name and the tool's (its file's stem when unnamed);
    where: the tool element, for messages; time_range_s:
    (start, end), infinite where open; cutoff_hz: None for no filtering; forces_to_exclude:
    the property's words as written."""

    file_name: str
    name: str
    where: Where
    model_file: Path
    coordinates_file: Path
    external_loads_file: Path | None
    results_directory: Path
    time_range_s: tuple[float, float]
    cutoff_hz: float | None
    forces_to_exclude: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ModelForce:
    """A force of the model's ForceSet: its XML tag, name and `appliesForce`."""

    tag: str
    name: str
    applies: bool



def _cutoff(tool: Node) -> float | None:
    """lowpass_cutoff_frequency_for_coordinates: positive Hz, or None (negative, absent)."""
    tag = "lowpass_cutoff_frequency_for_coordinates"
    value = tool.number(tag, -1.0)
    if value == 0.0:
        raise tool.error(f"<{tag}> 0 is not offered (OpenSim 4.6 filters at a 0 Hz cutoff): "
                         "give a positive cutoff (Hz), or a negative value for no filtering")
    return value if value > 0.0 else None


def read_id_setup(path) -> IDSetup:
    """The InverseDynamicsTool setup file `path`; OsimError naming the file, property and
    value for what is malformed or not offered (module docstring). The model's forces are
    checked against forces_to_exclude by `forces_left_in`."""
    path = Path(path)
    folder = path.parent
    tool = document_element(parse_xml(path), path.name, _TOOL, 1, "")
    tool.check_children(_PROPERTIES)
    files = {tag: tool.path(tag, folder) for tag in ("model_file", "coordinates_file")}
    for tag, value in files.items():
        if value is None:
            raise tool.error(f"<{tag}> is empty")
    window = tool.numbers("time_range", 2, (-math.inf, math.inf), finite=False)
    if not window[0] <= window[1]:
        raise tool.error(f"<time_range> must be two times, first <= last, got "
                         f"{tool.text('time_range')!r}")
    joints = tool.text("joints_to_report_body_forces", "")
    if joints:
        raise tool.error(f"<joints_to_report_body_forces> must be empty (body forces at "
                         f"joints are not computed), got {joints!r}")
    for tag in ("output_gen_force_file", "output_body_forces_file"):
        tool.text(tag, "")                     # read past (module docstring)
    tool.flag("coordinates_in_degrees", True)  # read past, as OpenSim 4.6 (module docstring)
    return IDSetup(path.name, tool.name or path.stem, tool.where, files["model_file"],
                   files["coordinates_file"], tool.path("external_loads_file", folder),
                   tool.path("results_directory", folder) or folder,
                   (window[0], window[1]), _cutoff(tool),
                   tuple(tool.text("forces_to_exclude", "").split()))


def read_model_forces(model_path) -> tuple[tuple[ModelForce, ...], dict[str, tuple[str, ...]],
                                           int]:
    """(the forces of the .osim file's ForceSet, its ObjectGroups as name -> member names,
    the number of controllers in its ControllerSet); OsimError naming the model file for a
    malformed one."""
    from myotwin.osim.xml_reading import model_node

    model = model_node(model_path)
    forces = tuple(ModelForce(node.tag, node.name, node.flag("appliesForce", True))
                   for node in (Node.of(e, model.where, "") for e in model.objects("ForceSet")))
    groups: dict[str, tuple[str, ...]] = {}
    found = model.find("ForceSet")
    listed = None if found is None else found.find("groups")
    for elem in [] if listed is None else listed:
        group = Node.of(elem, model.where, "ForceSet groups")
        groups[group.name] = tuple(group.text("members", "").split())
    return forces, groups, len(model.objects("ControllerSet"))


def excluded_by(words, forces, groups) -> tuple[set[str], list[str]]:
    """(the names of `forces` that OpenSim 4.6's tool excludes for the forces_to_exclude
    `words`, the words that name nothing), as `DynamicsTool::disableModelForces` reads them
    (module docstring): keywords in any case; with groups, other words are group names
    only."""
    excluded: set[str] = set()
    unknown = []
    for word in words:
        key = word.upper()
        if key == "ALL":
            return {f.name for f in forces}, unknown
        if key in ("ACTUATORS", "MUSCLES"):
            tags = MUSCLE_TAGS + (ACTUATOR_TAGS if key == "ACTUATORS" else ())
            excluded |= {f.name for f in forces if f.tag in tags}
        elif groups:
            if word in groups:
                excluded |= set(groups[word])
            else:
                unknown.append(word)
        elif word in {f.name for f in forces}:
            excluded.add(word)
        else:
            unknown.append(word)
    return excluded, unknown


def forces_left_in(setup: IDSetup) -> dict:
    """Check that OpenSim's tool leaves no force of the setup's model acting (module
    docstring); returns {"actuators_at_zero_control": [...], "forces_to_exclude_not_found":
    [...]}, or raises an OsimError naming the setup file, forces_to_exclude, its value and the
    first force left in."""
    forces, groups, controllers = read_model_forces(setup.model_file)
    excluded, unknown = excluded_by(setup.forces_to_exclude, forces, groups)
    model = setup.model_file.name
    left = [f for f in forces if f.applies and f.name not in excluded]
    idle = []
    for force in left:
        if force.tag == "CoordinateActuator" and not controllers:
            idle.append(force.name)
            continue
        if force.tag in MUSCLE_TAGS:
            why = "a muscle's force depends on its state, which inverse dynamics does not have"
        elif force.tag in ACTUATOR_TAGS:
            why = (f"the {controllers} controller(s) of the model may drive it"
                   if force.tag == "CoordinateActuator" else
                   "only a CoordinateActuator without controllers is known to apply nothing")
        else:
            why = "it is not a muscle or actuator: All or its name excludes it"
        hint = ("; this ForceSet has groups, so OpenSim 4.6 reads the names as group names "
                "only" if groups and force.name in setup.forces_to_exclude else "")
        raise setup.where.error(
            f"<forces_to_exclude> {' '.join(setup.forces_to_exclude)!r} leaves {force.tag} "
            f"{force.name!r} of {model} applying its force (the generalized forces are "
            f"computed with every force of the model excluded; {why}){hint}: exclude it, "
            "e.g. with Muscles, Actuators or All")
    return {"actuators_at_zero_control": idle, "forces_to_exclude_not_found": unknown}


def run_id_setup(path, out_dir=None) -> dict:
    """Run the InverseDynamicsTool setup file `path` (module docstring) with
    `inverse_dynamics.run`, writing into `out_dir` (default: its results_directory); returns
    run's summary with the tool type, the setup's file name, tool name, forces_to_exclude and
    what `forces_left_in` found (also in the written summary.json)."""
    from myotwin.osim.inverse_dynamics import run
    from myotwin.osim.tool_setups import write_setup_summary

    setup = read_id_setup(path)
    forces = forces_left_in(setup)
    out = setup.results_directory if out_dir is None else Path(out_dir)
    start, end = setup.time_range_s
    summary = run(setup.model_file, setup.coordinates_file, out,
                  external_loads_path=setup.external_loads_file, cutoff_hz=setup.cutoff_hz,
                  start_time_s=start, end_time_s=end)
    return write_setup_summary(out, _TOOL, {
        "setup": setup.file_name, "tool": setup.name,
        "forces_to_exclude": list(setup.forces_to_exclude), **forces, **summary})
