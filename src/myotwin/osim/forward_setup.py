"""An OpenSim ForwardTool setup file, run as OpenSim's `opensim-cmd run-tool SETUP.xml` runs it
(`myotwin osim run-tool SETUP.xml`), by `osim.forward.forward`.

What the setup's properties become (OpenSim 4.6's ForwardTool; paths relative to the setup
file's folder, as OpenSim resolves them):

* `model_file`; `force_set_files` (space-separated) added to its forces, or replacing them
  with `replace_force_set` true (`osim.load`'s force_set_files and replace_force_set).
* `initial_time`, `final_time`; `states_file`: the run starts from its last row at or before
  the initial time, at that row's time (`forward_start.read_initial_states`); without one, from
  the model's default state at the initial time (`forward_start.default_initial_states`: the
  coordinates' default values and speeds, each muscle at its default activation and fiber state),
  as the tool starts. `solve_for_equilibrium_for_auxiliary_states` puts the fibers in
  equilibrium there.
* Controls: the `controls_file` of the one `ControlSetController` in `ControllerSet` (OpenSim
  4's form) or a `controls_file` property of the tool (OpenSim 3's), read by
  `osim.controls.read_controls`; the `PrescribedController`s of the ControllerSet
  (`osim.controllers`), run with the model's own; each actuator's input is the sum of what
  they give it, as OpenSim adds controllers' controls. Muscles without a control get
  excitation 0, as a muscle no controller drives gets control 0 in OpenSim. Other controllers
  are refused. The ControlSetController's `enabled` (and OpenSim 2's `isDisabled`, in its
  arm26 tutorial setup) must be flags and change nothing: OpenSim 4.6's ForwardTool applies
  the controls file whatever they say (seen: arm26 ended at the same state with `enabled`
  false, and with `isDisabled` true in Version 20302 and 40600 files), while a disabled
  PrescribedController adds nothing (seen).
* `external_loads_file` (`forward_loads`).
* `integrator_error_tolerance` is the error-controlled integrator's accuracy (rk45);
  `maximum_number_of_integrator_steps` bounds its attempts per chunk of 500 rows (OpenSim's
  bound is for the whole run); `maximum_integrator_step_size` and
  `minimum_integrator_step_size` are read past (the controller picks its own steps; a step
  below the smallest the times can hold stops the run). `output_precision` is read past: the
  files hold every digit.
* Rows are written every `record_every_s` (default 1 ms, adjusted so that the last row is at
  the final time), not at each integrator step as the tool writes them; `results_directory`
  is the output folder unless another is given. The files are `osim forward`'s (states.sto,
  muscle_forces.sto, controls.sto, summary.json), and the analyses' folders.
* The `AnalysisSet`'s Kinematics, BodyKinematics, PointKinematics, Actuation, ForceReporter,
  StatesReporter and MuscleAnalysis analyses (read as `osim.analysis_set` reads them; others
  that are on are refused, before anything is written) run on the rows the run wrote
  (states.sto: its states, the run's controls, controllers and external loads), each into
  `<out>/<analysis name>`, as an AnalyzeTool's do (`kinematics_analysis`,
  `force_analyses`, `muscle_analysis.run` on the states file: the model file's muscles, so
  force set files that add muscles, or replace_force_set true, are refused with it, as in
  the AnalyzeTool); their summaries under "analyses", the names of those that are off under
  "analyses_off". OpenSim records them at its integrator's steps (every `step_interval`-th);
  ours at the written rows (`record_every_s`), so `step_interval` must be 1. Checked
  against the ForwardTool's own files, interpolated at our rows' times
  (tests/osim/test_osim_forward_analyses.py: a driven, loaded double pendulum within 1.5e-9
  of each file's largest value; Tug_of_War_Millard driven and pushed, 3.4e-8). A run that
  diverges writes no analyses.
* Any property the tool does not have is refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from myotwin.osim.analysis_set import (MA, ROW_SETTINGS, ROW_TYPES, analysis_type,
                                       read_analysis_set, refuse_added_muscles,
                                       row_selections, write_row_analysis)
from myotwin.osim.errors import OsimError
from myotwin.osim.tool_setups import ABSTRACT_TOOL_PROPERTIES, write_setup_summary
from myotwin.osim.xml_values import Node, document_element, parse_xml
from myotwin.scalars import as_real

_PROPERTIES = ABSTRACT_TOOL_PROPERTIES + ("states_file", "controls_file")
#: Rows written about this often (s), unless the caller says otherwise.
ROW_INTERVAL_S = 1e-3


@dataclasses.dataclass(frozen=True)
class ForwardSetup:
    """A ForwardTool setup file's settings (module docstring), paths resolved."""

    name: str
    model_file: Path
    force_set_files: tuple[Path, ...]
    replace_force_set: bool
    results_directory: Path
    initial_time_s: float
    final_time_s: float
    solve_for_equilibrium: bool
    max_steps: int
    accuracy: float
    controls_file: Path | None
    external_loads_file: Path | None
    states_file: Path | None
    #: the PrescribedController elements of the ControllerSet (read against the model's
    #: forces once it is loaded: `controllers.read_controller`)
    controllers: tuple[Node, ...] = ()
    #: the AnalysisSet's analyses that are on (`analysis_set.ROW_TYPES` and MuscleAnalysis),
    #: in its order
    analyses: tuple = ()
    #: the names of its analyses that are off
    analyses_off: tuple[str, ...] = ()



def _members(node: Node, tag: str) -> list:
    """The child elements of `node`'s property `tag` (none if it is absent)."""
    found = node.find(tag)
    return [] if found is None else list(found)


def _controllers(tool: Node, folder: Path) -> tuple[Path | None, tuple[Node, ...]]:
    """The controls file (OpenSim 3's property of the tool, or OpenSim 4's
    ControlSetController) and the PrescribedController elements."""
    own = tool.path("controls_file", folder)
    files = [] if own is None else [own]
    prescribed = []
    found = tool.find("ControllerSet")
    if found is not None:
        controllers = Node(found, tool.where.inside("ControllerSet", found.get("name", "")))
        controllers.check_children(("objects", "groups", "components"))
        for elem in _members(controllers, "objects") + _members(controllers, "components"):
            controller = Node.of(elem, controllers.where)
            if controller.tag == "PrescribedController":
                prescribed.append(controller)
                continue
            if controller.tag != "ControlSetController":
                raise controller.error("only a ControlSetController (a controls file) and "
                                       "PrescribedControllers can drive the run")
            controller.check_children(("controls_file", "enabled", "isDisabled",
                                       "components", "socket_actuators", "actuator_list"))
            for tag in ("socket_actuators", "actuator_list", "components"):
                if controller.has_value(tag) or _members(controller, tag):
                    raise controller.error(f"<{tag}> is not offered: the controller drives "
                                           "every actuator its controls file names")
            controller.flag("enabled", True)       # read, not used (module docstring)
            controller.flag("isDisabled", False)
            path = controller.path("controls_file", folder)
            if path is None:
                raise controller.error("<controls_file> is empty")
            files.append(path)
    if len(files) > 1:
        raise tool.error(f"{len(files)} controls files are given; one can drive the run")
    return (files[0] if files else None), tuple(prescribed)


def read_forward_setup(path) -> ForwardSetup:
    """The ForwardTool setup file `path`; OsimError naming the file, property and value for
    what is malformed or not offered (module docstring)."""
    from myotwin.osim.forward import OUTPUT_FILES    # (JAX: imported when a setup is read)

    path = Path(path)
    folder = path.parent
    tool = document_element(parse_xml(path), path.name, "ForwardTool", 1, "")
    tool.check_children(_PROPERTIES)
    model = tool.path("model_file", folder)
    if model is None:
        raise tool.error("<model_file> is empty")
    force_sets = tool.paths("force_set_files", folder)
    analyses, off = read_analysis_set(tool, ROW_TYPES + (MA,), required=False)
    for a in analyses:
        if a.name in OUTPUT_FILES:
            raise tool.error(f"an analysis named {a.name!r} would write into a folder of the "
                             "name of the run's own file: rename it")
    if tool.flag("replace_force_set", False) and any(analysis_type(a) == MA for a in analyses):
        raise tool.error(f"<replace_force_set> true with a {MA} is not offered (the model's "
                         "muscles would be dropped)")
    initial = tool.number("initial_time", 0.0)
    final = tool.number("final_time", 1.0)
    if not final > initial:
        raise tool.error(f"<final_time> {final!r} must be after <initial_time> {initial!r}")
    steps = tool.number("maximum_number_of_integrator_steps", 20000.0)
    if not (steps >= 1 and float(steps).is_integer()):
        raise tool.error(f"<maximum_number_of_integrator_steps> must be a positive integer, "
                         f"got {steps!r}")
    accuracy = tool.number("integrator_error_tolerance", 1e-5)
    if not 0.0 < accuracy < 1.0:
        raise tool.error(f"<integrator_error_tolerance> must be in (0, 1), got {accuracy!r}")
    for tag in ("maximum_integrator_step_size", "minimum_integrator_step_size",
                "output_precision"):
        tool.number(tag, 0.0)                  # read past, but numbers (module docstring)
    results = tool.path("results_directory", folder) or folder
    controls_file, controllers = _controllers(tool, folder)
    return ForwardSetup(tool.name or path.stem, model, force_sets,
                        tool.flag("replace_force_set", False), results, initial, final,
                        tool.flag("solve_for_equilibrium_for_auxiliary_states", False),
                        int(steps), accuracy, controls_file,
                        tool.path("external_loads_file", folder),
                        tool.path("states_file", folder), controllers, analyses, off)


def run_forward_setup(path, out_dir=None, *, record_every_s: float = ROW_INTERVAL_S) -> dict:
    """Run the ForwardTool setup file `path` (module docstring), writing into `out_dir`
    (default: its results_directory); returns `forward`'s summary with the tool type and
    the setup's and tool's names (also in the written summary.json, and there too when the
    run diverges: `forward`'s FloatingPointError is raised after it)."""
    from myotwin import musculoskeletal as ms
    from myotwin.osim.controllers import read_controller
    from myotwin.osim.controls import read_controls
    from myotwin.osim.external_loads import read_external_loads
    from myotwin.osim.forward import Inputs, forward
    from myotwin.osim.forward_start import default_initial_states, read_initial_states
    from myotwin.osim.loader import load
    from myotwin.osim.muscles import build_muscles
    from myotwin.osim.storage import read_storage

    setup = read_forward_setup(path)
    interval = as_real(record_every_s)          # (True is not 1 s)
    if interval is None or not (math.isfinite(interval) and interval > 0):
        raise ValueError(f"record_every_s must be a positive number of seconds, got "
                         f"{record_every_s!r}")
    loaded = load(setup.model_file, force_set_files=setup.force_set_files,
                  replace_force_set=setup.replace_force_set)
    where = f"{Path(path).name}: ForwardTool '{setup.name}'"
    chosen = row_selections(loaded, setup.analyses, where)    # checked before a file is written
    if any(analysis_type(a) == MA for a in setup.analyses):
        refuse_added_muscles(setup.force_set_files, where)
        if not loaded.muscle_names:
            raise OsimError(f"{where}: a {MA} with a model without muscles "
                            f"({setup.model_file.name}): nothing to analyse")
    controls = None if setup.controls_file is None else read_controls(setup.controls_file)
    tool_controls = tuple(c for node in setup.controllers
                          for c in read_controller(node, loaded.force_names))
    inputs = Inputs(loaded, None, controls, controllers=tool_controls, undriven=0.0)
    if setup.states_file is None:
        initial = default_initial_states(loaded, setup.initial_time_s,
                                         setup.solve_for_equilibrium)
    else:
        initial = read_initial_states(loaded, read_storage(setup.states_file),
                                      str(setup.states_file), setup.initial_time_s)
    duration = setup.final_time_s - initial.time_s
    rows = max(1, round(duration / interval))
    msm = ms.musculoskeletal_model(loaded.model, build_muscles(loaded, tendon="opensim"),
                                   coupling="opensim", coordinates=loaded.coupling)
    external = (None if setup.external_loads_file is None
                else read_external_loads(setup.external_loads_file))
    out = setup.results_directory if out_dir is None else out_dir
    names = {"setup": Path(path).name, "tool": setup.name}
    try:
        summary = forward(loaded, msm, out,
                          inputs=inputs, duration_s=duration, dt_s=duration / rows,
                          integrator="rk45", accuracy=setup.accuracy, max_steps=setup.max_steps,
                          initial=initial, solve_for_equilibrium=setup.solve_for_equilibrium,
                          external_loads=external)
    except FloatingPointError:   # a divergence: the rows before it and the summary written
        written = Path(out) / "summary.json"
        summary = json.loads(written.read_text()) if written.exists() else {}
        if summary.get("diverged"):
            write_setup_summary(out, "ForwardTool", {**names, **summary})
        raise
    if setup.analyses or setup.analyses_off:
        summary = {**summary, **_analyses(setup, loaded, Path(out), chosen, inputs, external)}
    return write_setup_summary(out, "ForwardTool", {**names, **summary})


def _analyses(setup: ForwardSetup, loaded, out: Path, chosen: dict, inputs, external) -> dict:
    """The setup's analyses, each run on the rows the run wrote (out/states.sto: its states,
    the run's controls and external loads) into out/<analysis name>; returns {"analyses":
    {name: {"type", "out_dir", **its summary}}, "analyses_off": [names]}."""
    from myotwin.osim import muscle_analysis
    from myotwin.osim.kinematics_analysis import analysis_rows

    states = out / "states.sto"
    rows = None
    if any(isinstance(a, ROW_SETTINGS) for a in setup.analyses):
        rows = analysis_rows(loaded, states_path=states, inputs=inputs,
                             external_loads=external, with_accelerations=bool(chosen))
    results, computed = {}, {}
    for analysis in setup.analyses:
        folder = out / analysis.name
        if isinstance(analysis, ROW_SETTINGS):
            summary = write_row_analysis(analysis, loaded, rows, chosen, folder, external,
                                         computed)
        else:     # a MuscleAnalysis: the model file's muscles at the written states
            summary = muscle_analysis.run(setup.model_file, None, folder, states_path=states,
                                          geometry_hint=None)
        results[analysis.name] = {"type": analysis_type(analysis), "out_dir": str(folder),
                                  **summary}
    return {"analyses": results, "analyses_off": list(setup.analyses_off)}
