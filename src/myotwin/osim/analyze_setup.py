"""An OpenSim AnalyzeTool setup file whose AnalysisSet holds StaticOptimization,
MuscleAnalysis, Kinematics, BodyKinematics, PointKinematics, Actuation, ForceReporter and
StatesReporter analyses, run as OpenSim's `opensim-cmd run-tool SETUP.xml` runs it (`myotwin
osim run-tool SETUP.xml`), by `osim.static_optimization.run`, `osim.muscle_analysis.run`,
`osim.kinematics_analysis` and `osim.force_analyses` (what OpenSim's kinematics and force
analyses write: those modules' docstrings; those six take their rows, states and controls
from `kinematics_analysis.analysis_rows`).

What the setup's properties become (OpenSim 4.6's AnalyzeTool and its analyses, whose
property lists are these; paths relative to the setup file's folder, as
OpenSim resolves them; an empty path or "Unassigned" is none). "Checked" means run through
OpenSim 4.6's AnalyzeTool (arm26, 0-0.3 s, scratch runs and tests/osim/
test_osim_analyze_setup.py):

* `model_file`; `force_set_files` (space-separated) added to the model's forces, or replacing
  them with `replace_force_set` true: static optimization's force_set_files and
  replace_force_set. A MuscleAnalysis reports muscles only: force set files that add none
  (reserve actuators) are read past for it (checked: OpenSim's MuscleAnalysis files are the
  same with arm26's reserves), files that add muscles are refused, as is replace_force_set
  true (the model's muscles would be dropped).
* `initial_time`, `final_time`: the window of every analysis, rows from the last at or before
  the initial time to the last at or before the final time (Storage::findIndex, as the tool
  picks them; checked: 0.055-0.245 s gives OpenSim's 24 rows from 0.05 s). The analyses' own
  `start_time` and `end_time` are read past: the tool does not use them (checked: a
  StaticOptimization with 0.1-0.2 s and a MuscleAnalysis with 0.05-0.15 s in a 0-0.3 s tool
  each report all 37 rows).
* `coordinates_file` with `lowpass_cutoff_frequency_for_coordinates` (negative: no filter;
  0 is refused: OpenSim would filter at 0 Hz), prepared as OpenSim's tools prepare it. With
  the filter on, a window reaching before the file's first time or after its last is refused:
  OpenSim analyses its padding's rows there (checked: initial_time -0.1 s on a file from 0 s
  gives 12 rows from -0.1 s), which static optimization does not reproduce.
* `states_file`: the MuscleAnalysis and the kinematics and force analyses read the
  coordinates, speeds and muscle states from it (`muscle_analysis.run`'s states_path);
  OpenSim then ignores coordinates_file (recorded) and the filter (checked: the same files
  at 6 Hz and -1). A StaticOptimization with a states file is refused (ours prepares
  coordinates only). `speeds_file` is refused.
* `external_loads_file`: static optimization's external loads. The MuscleAnalysis reads past
  it (checked: its files are the same with a 20 N load on arm26's hand, which changes the
  activations by 0.18). The kinematics analyses take it, and the force set files,
  into the forward dynamics that gives their accelerations; the ForceReporter lists its
  forces.
* `solve_for_equilibrium_for_auxiliary_states`: the MuscleAnalysis' muscle_states
  "equilibrium" (true) or "default" (false); the same muscle states for the kinematics
  analyses' forward dynamics. Static optimization does not use the muscles'
  states (checked: its files are the same either way).
* A non-empty `ControllerSet` is refused. `output_precision` and the integrator settings
  (`maximum_number_of_integrator_steps`, `maximum_integrator_step_size`,
  `minimum_integrator_step_size`, `integrator_error_tolerance`) are read past (no integration;
  our files hold every digit).
* The AnalysisSet: its StaticOptimization, MuscleAnalysis, Kinematics, BodyKinematics,
  PointKinematics, Actuation, ForceReporter and StatesReporter analyses, read as
  `osim.analysis_set` says (their properties; others that are on refused); a setup where
  none is on is refused. Any property the tool does not have is refused.

Output: each analysis that is on, in the set's order, writes into its own folder
`<out>/<analysis name>` (the type's name for an unnamed one; `<out>` is `out_dir`, else the
setup's results_directory), the files of `myotwin osim static-optimization` /
`myotwin osim muscle-analysis` (static_optimization_activation.sto, muscle_analysis_Length.sto,
..., summary.json), or kinematics_q.sto, body_kinematics_pos_global.sto,
point_kinematics_<point>_pos.sto, actuation_force.sto, force_reporter_forces.sto,
states_reporter_states.sto, ..., summary.json,
not OpenSim's `<tool>_<analysis>_activation.sto` names.
`run_analyze_setup` returns {"tool_type", "setup": file name, "tool": the tool's name,
"out_dir", "analyses": {folder: {"type", "out_dir", "setup_values_not_used", **the command's
summary}}, "analyses_off": [names]}, and writes it to <out>/summary.json. Errors are one
line naming the file, the element and the value (`OsimError`, a ValueError).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from myotwin.osim.analysis_set import (MA, ROW_SETTINGS, SO, MuscleAnalysisSettings, Settings,
                                       StaticOptimizationSettings, analysis_type,
                                       read_analysis_set, refuse_added_muscles, row_selections,
                                       write_row_analysis)
from myotwin.osim.errors import OsimError
from myotwin.osim.tool_setups import (ABSTRACT_TOOL_PROPERTIES, INTEGRATION_PROPERTIES,
                                      write_setup_summary)
from myotwin.osim.xml_values import Node, document_element, parse_xml

_TOOL = "AnalyzeTool"
_PROPERTIES = ABSTRACT_TOOL_PROPERTIES + ("states_file", "coordinates_file", "speeds_file",
                                          "lowpass_cutoff_frequency_for_coordinates")


@dataclasses.dataclass(frozen=True)
class AnalyzeSetup:
    """An AnalyzeTool setup file's settings (module docstring), paths resolved; `analyses`:
    those that are on, in the set's order; `analyses_off`: the names of the others;
    cutoff_hz None: no filter."""

    name: str
    model_file: Path
    force_set_files: tuple[Path, ...]
    replace_force_set: bool
    results_directory: Path
    initial_time_s: float
    final_time_s: float
    solve_for_equilibrium: bool
    coordinates_file: Path | None
    states_file: Path | None
    cutoff_hz: float | None
    external_loads_file: Path | None
    analyses: tuple[Settings, ...]
    analyses_off: tuple[str, ...]


def _cutoff(tool: Node) -> float | None:
    """lowpass_cutoff_frequency_for_coordinates: None for a negative value (no filter)."""
    tag = "lowpass_cutoff_frequency_for_coordinates"
    cutoff = tool.number(tag, -1.0)
    if cutoff == 0:
        raise tool.error(f"<{tag}> 0 would filter at 0 Hz (OpenSim filters at any value >= "
                         "0); give a negative value for no filter or a positive cutoff, got "
                         f"{tool.text(tag)!r}")
    return None if cutoff < 0 else cutoff


def read_analyze_setup(path) -> AnalyzeSetup:
    """The AnalyzeTool setup file `path`; OsimError naming the file, element and value for
    what is malformed or not offered (module docstring)."""
    path = Path(path)
    folder = path.parent
    tool = document_element(parse_xml(path), path.name, _TOOL, 1, "")
    tool.check_children(_PROPERTIES)
    model = tool.path("model_file", folder)
    if model is None:
        raise tool.error("<model_file> is empty")
    force_sets = tool.paths("force_set_files", folder)
    replace = tool.flag("replace_force_set", False)
    initial = tool.number("initial_time", 0.0)
    final = tool.number("final_time", 1.0)
    if not final > initial:
        raise tool.error(f"<final_time> {final!r} must be after <initial_time> {initial!r}")
    for tag in INTEGRATION_PROPERTIES:
        tool.number(tag, 0.0)                  # read past, but numbers (module docstring)
    if tool.objects("ControllerSet"):
        raise tool.error("<ControllerSet> must be empty: controllers are not run")
    if tool.path("speeds_file", folder) is not None:
        raise tool.error(f"<speeds_file> is not offered (speeds are the coordinates' "
                         f"derivatives), got {tool.text('speeds_file')!r}")
    analyses, off = read_analysis_set(tool)
    states = tool.path("states_file", folder)
    coordinates = tool.path("coordinates_file", folder)
    if states is None and coordinates is None:
        raise tool.error("<coordinates_file> and <states_file> are empty: one gives the motion")
    kinds = {type(a) for a in analyses}
    if states is not None and StaticOptimizationSettings in kinds:
        raise tool.error(f"<states_file> with a {SO} is not offered (ours prepares a "
                         f"coordinates_file), got {tool.text('states_file')!r}")
    if replace and MuscleAnalysisSettings in kinds:
        raise tool.error(f"<replace_force_set> true with a {MA} is not offered (the model's "
                         "muscles would be dropped)")
    return AnalyzeSetup(tool.name, model, force_sets, replace,
                        tool.path("results_directory", folder) or folder, initial, final,
                        tool.flag("solve_for_equilibrium_for_auxiliary_states", False),
                        coordinates, states, _cutoff(tool),
                        tool.path("external_loads_file", folder), analyses, off)


def _first_row_time(times_s: np.ndarray, t: float) -> float:
    """The time of Storage::findIndex(t): the last row at or before t, or the first row."""
    return float(times_s[max(int(np.searchsorted(times_s, t, side="right")) - 1, 0)])


def _window(setup: AnalyzeSetup, where: str) -> tuple[float, float]:
    """(start, end) for the analyses' run functions, as the tool picks its rows (module
    docstring); OsimError naming `where` for a filtered window beyond the coordinates."""
    from myotwin.osim.storage import read_storage

    if setup.states_file is not None:
        # the states are used as written: the first row is the one at or before initial_time
        times = read_storage(setup.states_file).time_s
        return _first_row_time(times, setup.initial_time_s), setup.final_time_s
    if setup.cutoff_hz is not None:
        times = read_storage(setup.coordinates_file).time_s
        first, last = float(times[0]), float(times[-1])
        if setup.initial_time_s < first or setup.final_time_s > last:
            raise OsimError(f"{where}: <initial_time> {setup.initial_time_s!r} to "
                            f"<final_time> {setup.final_time_s!r} reaches beyond "
                            f"{setup.coordinates_file.name}'s times ({first!r} to {last!r} "
                            "s): with the lowpass filter on, OpenSim would analyse its "
                            "padding there (not reproduced)")
    return setup.initial_time_s, setup.final_time_s


def _kinematics_rows(setup: AnalyzeSetup, start: float, end: float, where: str):
    """(the loaded model, `kinematics_analysis.AnalysisRows`, `analysis_set.row_selections`,
    the external loads or None) of the setup's row analyses: the tool's motion, muscle states
    and forward dynamics (if a kinematics analysis reads it); their lists checked first."""
    from myotwin.osim import kinematics_analysis as ka
    from myotwin.osim.external_loads import read_external_loads
    from myotwin.osim.loader import load

    loaded = load(setup.model_file, force_set_files=setup.force_set_files,
                  replace_force_set=setup.replace_force_set)
    chosen = row_selections(loaded, setup.analyses, where)
    loads = (None if setup.external_loads_file is None
             else read_external_loads(setup.external_loads_file))
    states = setup.states_file
    return loaded, ka.analysis_rows(
        loaded, coordinates_path=None if states else setup.coordinates_file,
        states_path=states, cutoff_hz=None if states else setup.cutoff_hz,
        start_time_s=start, end_time_s=end, equilibrium=setup.solve_for_equilibrium,
        external_loads=loads, with_accelerations=bool(chosen)), chosen, loads


def run_analyze_setup(path, out_dir=None) -> dict:
    """Run the AnalyzeTool setup file `path` (module docstring): each analysis that is on, in
    order, into `out_dir` (default: its results_directory)/<analysis name>; returns the
    summary the module docstring describes."""
    from myotwin.osim import muscle_analysis, static_optimization

    path = Path(path)
    setup = read_analyze_setup(path)
    where = f"{path.name}: {_TOOL}" + (f" '{setup.name}'" if setup.name else "")
    if any(isinstance(a, MuscleAnalysisSettings) for a in setup.analyses):
        refuse_added_muscles(setup.force_set_files, where)
    start, end = _window(setup, where)
    out = Path(setup.results_directory if out_dir is None else out_dir)
    results = {}
    kinematics = None     # (loaded, rows, lists, loads): found before any analysis writes
    computed: dict = {}   # what the row analyses share
    if any(isinstance(a, ROW_SETTINGS) for a in setup.analyses):
        kinematics = _kinematics_rows(setup, start, end, where)
    for analysis in setup.analyses:
        folder = out / analysis.name
        unused = {}
        if isinstance(analysis, StaticOptimizationSettings):
            summary = static_optimization.run(
                setup.model_file, setup.coordinates_file, folder,
                external_loads_path=setup.external_loads_file, cutoff_hz=setup.cutoff_hz,
                start_time_s=start, end_time_s=end,
                activation_exponent=analysis.activation_exponent,
                use_muscle_physiology=analysis.use_muscle_physiology,
                force_set_files=setup.force_set_files,
                replace_force_set=setup.replace_force_set)
            unused = {"optimizer_convergence_criterion": analysis.optimizer_convergence_criterion,
                      "optimizer_max_iterations": analysis.optimizer_max_iterations}
        elif isinstance(analysis, MuscleAnalysisSettings):
            states = setup.states_file
            summary = muscle_analysis.run(
                setup.model_file, None if states is not None else setup.coordinates_file,
                folder, cutoff_hz=None if states is not None else setup.cutoff_hz,
                start_time_s=start, end_time_s=end,
                muscle_states="equilibrium" if setup.solve_for_equilibrium else "default",
                states_path=states, geometry_hint=None)
            ignored = {"force_set_files": [str(f) for f in setup.force_set_files] or None,
                       "external_loads_file": setup.external_loads_file}
            if states is not None:      # OpenSim ignores these beside a states file
                ignored.update({"coordinates_file": setup.coordinates_file,
                                "lowpass_cutoff_frequency_for_coordinates": setup.cutoff_hz})
            unused = {k: v if isinstance(v, (list, float)) else str(v)
                      for k, v in ignored.items() if v is not None}
        else:
            loaded, rows, chosen, loads = kinematics
            summary = write_row_analysis(analysis, loaded, rows, chosen, folder, loads,
                                         computed)
            if setup.states_file is not None:   # OpenSim ignores these beside a states file
                unused = {k: v for k, v in (
                    ("coordinates_file", setup.coordinates_file and str(setup.coordinates_file)),
                    ("lowpass_cutoff_frequency_for_coordinates", setup.cutoff_hz)) if v}
        results[analysis.name] = {"type": analysis_type(analysis), "out_dir": str(folder),
                                  "setup_values_not_used": unused, **summary}
    return write_setup_summary(out, _TOOL, {
        "setup": path.name, "tool": setup.name, "out_dir": str(out), "analyses": results,
        "analyses_off": list(setup.analyses_off)})
