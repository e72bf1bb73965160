"""The `opensim` 4.6 package as a reference engine for tests (a [test] dependency).

`opensim_package()` imports it, or skips the calling module saying why, and stops OpenSim
writing opensim.log into the working directory. `run_inverse_dynamics_tool` runs OpenSim's
InverseDynamicsTool with its output printed to 16 digits (OpenSim's default is 8), and
`run_inverse_kinematics_tool` its InverseKinematicsTool so; `run_static_optimization` runs its
StaticOptimization analysis (AnalyzeTool with a coordinates file), `run_muscle_analysis` its
MuscleAnalysis.
`forward_final_state` runs OpenSim's forward simulation with every muscle at one excitation
(`excited_model` and `integrate_to` its parts, for other initial states); `run_forward_tool`
runs its ForwardTool itself (controls file, states file).
"""

from pathlib import Path


def opensim_package():
    """The imported `opensim` module (skips the calling test module when it is absent)."""
    import pytest

    osim = pytest.importorskip("opensim", reason="the opensim 4.6 package is a test "
                               "dependency (pyproject [test]); without it there is no OpenSim "
                               "to compare with")
    osim.Logger.removeFileSink()
    return osim


def run_printing_16_digits(osim, tool) -> None:
    """tool.run() with OpenSim's output files printed to 16 digits (its default is 8)."""
    precision = osim.IO.GetPrecision()
    osim.IO.SetPrecision(16)
    try:
        tool.run()
    finally:
        osim.IO.SetPrecision(precision)


def run_inverse_dynamics_tool(out_dir: Path, model: Path, coordinates: Path,
                              external_loads: Path | None, cutoff_hz: float, start_s: float,
                              end_s: float, file_name: str = "opensim_id.sto"):
    """OpenSim's InverseDynamicsTool on these files (external_loads None: no external loads)
    with the muscles excluded; returns the table it wrote (`myotwin.osim.storage.Storage`)."""
    from myotwin.osim.storage import read_storage

    osim = opensim_package()
    tool = osim.InverseDynamicsTool()
    tool.setModelFileName(str(model))
    tool.setCoordinatesFileName(str(coordinates))
    if external_loads is not None:
        tool.setExternalLoadsFileName(str(external_loads))
    tool.setLowpassCutoffFrequency(cutoff_hz)
    tool.setStartTime(start_s)
    tool.setEndTime(end_s)
    excluded = osim.ArrayStr()
    excluded.append("Muscles")
    tool.setExcludedForces(excluded)
    tool.setResultsDir(str(out_dir))
    tool.setOutputGenForceFileName(file_name)
    run_printing_16_digits(osim, tool)
    return read_storage(Path(out_dir) / file_name)


def run_inverse_kinematics_tool(out_dir: Path, model: Path, markers: Path, tasks: Path | None,
                                start_s: float, end_s: float, accuracy: float,
                                file_name: str = "opensim_ik.mot"):
    """OpenSim's InverseKinematicsTool on `markers` (.trc) with the IKTaskSet file `tasks`
    (None: the tool's default, every marker at weight 1) at `accuracy`, its output printed to
    16 digits; returns (the coordinates table, the marker errors table) it wrote
    (`myotwin.osim.storage.Storage`; the coordinates in degrees where OpenSim's are)."""
    from myotwin.osim.storage import read_storage

    osim = opensim_package()
    tool = osim.InverseKinematicsTool()
    opensim_model = osim.Model(str(model))   # held here: the tool does not own it
    tool.setModel(opensim_model)
    tool.setMarkerDataFileName(str(markers))
    if tasks is not None:
        tool.set_IKTaskSet(osim.IKTaskSet(str(tasks)))
    tool.set_accuracy(accuracy)
    tool.setStartTime(start_s)
    tool.setEndTime(end_s)
    tool.setResultsDir(str(out_dir))
    tool.setOutputMotionFileName(str(Path(out_dir) / file_name))
    tool.set_report_errors(True)
    run_printing_16_digits(osim, tool)
    return (read_storage(Path(out_dir) / file_name),
            read_storage(Path(out_dir) / "_ik_marker_errors.sto"))


_ANALYZE_TOOL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file><results_directory>{out}</results_directory>
  <initial_time>{start}</initial_time><final_time>{end}</final_time>
  <solve_for_equilibrium_for_auxiliary_states>false</solve_for_equilibrium_for_auxiliary_states>
  <AnalysisSet name="Analyses"><objects>{analysis}</objects><groups /></AnalysisSet>
  <coordinates_file>{coordinates}</coordinates_file>{loads}{force_sets}
  <lowpass_cutoff_frequency_for_coordinates>{cutoff}</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>
"""


def _run_analyze_tool(name: str, analysis: str, out_dir: Path, model: Path, coordinates: Path,
                      cutoff_hz: float, start_s: float, end_s: float,
                      external_loads: Path | None = None, states: bool = False,
                      equilibrium: bool = False, force_set_files=(),
                      replace_force_set: bool = False) -> None:
    """OpenSim's AnalyzeTool `name` with the one analysis `analysis` (its XML, over
    start_s-end_s) on a coordinates file (or, if `states`, on `coordinates` as a states
    file, unfiltered), from a setup file written into `out_dir`; `equilibrium`: its
    solve_for_equilibrium_for_auxiliary_states; force_set_files: its force_set_files,
    added to the model's forces (or replacing them: replace_force_set)."""
    osim = opensim_package()
    setup = Path(out_dir) / f"opensim_{name}_setup.xml"
    text = _ANALYZE_TOOL.format(
        name=name, model=model, out=out_dir, start=start_s, end=end_s, analysis=analysis,
        coordinates=coordinates, cutoff=cutoff_hz,
        loads="" if external_loads is None
        else f"<external_loads_file>{external_loads}</external_loads_file>",
        force_sets="" if not (force_set_files or replace_force_set) else
        f"<replace_force_set>{str(replace_force_set).lower()}</replace_force_set>"
        "<force_set_files>"
        + " ".join(str(f) for f in force_set_files) + "</force_set_files>")
    if states:
        text = text.replace(f"<coordinates_file>{coordinates}</coordinates_file>",
                            f"<states_file>{coordinates}</states_file>")
    if equilibrium:
        text = text.replace("<solve_for_equilibrium_for_auxiliary_states>false<",
                            "<solve_for_equilibrium_for_auxiliary_states>true<")
    setup.write_text(text)
    run_printing_16_digits(osim, osim.AnalyzeTool(str(setup)))


def run_static_optimization(out_dir: Path, model: Path, coordinates: Path, cutoff_hz: float,
                            start_s: float, end_s: float, exponent: float = 2.0,
                            use_muscle_physiology: bool = True, convergence: float = 1e-10,
                            external_loads: Path | None = None, force_set_files=(),
                            replace_force_set: bool = False):
    """OpenSim's StaticOptimization analysis run by its AnalyzeTool (a setup file written
    into `out_dir`) on `coordinates` (with the ExternalLoads file `external_loads`, if
    given; and with the ForceSet files `force_set_files` added to the model's forces, or
    replacing them with replace_force_set); returns
    its (activation, force) tables (`myotwin.osim.storage.Storage`)."""
    from myotwin.osim.storage import read_storage

    analysis = (
        '<StaticOptimization name="StaticOptimization"><on>true</on>'
        f"<start_time>{start_s}</start_time><end_time>{end_s}</end_time>"
        "<step_interval>1</step_interval><use_model_force_set>true</use_model_force_set>"
        f"<activation_exponent>{exponent}</activation_exponent>"
        f"<use_muscle_physiology>{str(use_muscle_physiology).lower()}</use_muscle_physiology>"
        f"<optimizer_convergence_criterion>{convergence}</optimizer_convergence_criterion>"
        "<optimizer_max_iterations>1000</optimizer_max_iterations></StaticOptimization>")
    _run_analyze_tool("so", analysis, out_dir, model, coordinates, cutoff_hz, start_s, end_s,
                      external_loads, force_set_files=force_set_files,
                      replace_force_set=replace_force_set)
    return tuple(read_storage(Path(out_dir) / f"so_StaticOptimization_{kind}.sto")
                 for kind in ("activation", "force"))


def run_muscle_analysis(out_dir: Path, model: Path, coordinates: Path, cutoff_hz: float,
                        start_s: float, end_s: float, coordinate_names, outputs=(),
                        states: bool = False, equilibrium: bool = False):
    """OpenSim's MuscleAnalysis run by its AnalyzeTool on `coordinates` (moment arms
    computed); returns its (Length table, {coordinate: MomentArm table}) for
    `coordinate_names` (`myotwin.osim.storage.Storage`; it prints 8 decimals), and with
    `outputs` (names of its other files, e.g. "TendonForce", "Moment_r_elbow_flex") a third
    item, {output: table}. `states`: `coordinates` is a states file; `equilibrium`: the
    muscles equilibrated at each time."""
    from myotwin.osim.storage import read_storage

    analysis = (
        '<MuscleAnalysis name="MuscleAnalysis"><on>true</on>'
        f"<start_time>{start_s}</start_time><end_time>{end_s}</end_time>"
        "<step_interval>1</step_interval><muscle_list>all</muscle_list>"
        "<moment_arm_coordinate_list>all</moment_arm_coordinate_list>"
        "<compute_moments>true</compute_moments></MuscleAnalysis>")
    _run_analyze_tool("ma", analysis, out_dir, model, coordinates, cutoff_hz, start_s, end_s,
                      states=states, equilibrium=equilibrium)
    tables = (read_storage(Path(out_dir) / "ma_MuscleAnalysis_Length.sto"),
              {c: read_storage(Path(out_dir) / f"ma_MuscleAnalysis_MomentArm_{c}.sto")
               for c in coordinate_names})
    if outputs:
        tables += ({o: read_storage(Path(out_dir) / f"ma_MuscleAnalysis_{o}.sto")
                    for o in outputs},)
    return tables


def excited_model(model: Path, excitation: float, controls=None):
    """(the opensim module, `model` loaded with every muscle excited at `excitation` and the
    actuators named in `controls` (name -> control) at theirs, a PrescribedController of
    Constants, and its initial State)."""
    osim = opensim_package()
    m = osim.Model(str(model))
    controller = osim.PrescribedController()
    muscles = m.getMuscles()
    for i in range(muscles.getSize()):
        controller.addActuator(muscles.get(i))
        controller.prescribeControlForActuator(muscles.get(i).getName(),
                                               osim.Constant(excitation))
    for name, value in (controls or {}).items():
        controller.addActuator(m.getActuators().get(name))
        controller.prescribeControlForActuator(name, osim.Constant(value))
    m.addController(controller)
    return osim, m, m.initSystem()


def integrate_to(osim, m, state, t_end_s: float, accuracy: float):
    """OpenSim's Manager at integrator `accuracy` from `state` (at its time) to t_end_s;
    ({coordinate: value}, {muscle: fiber length (m)}) there."""
    manager = osim.Manager(m)
    manager.setIntegratorAccuracy(accuracy)
    manager.initialize(state)
    state = manager.integrate(t_end_s)
    m.realizePosition(state)
    q = {c.getName(): c.getValue(state) for c in m.getCoordinateSet()}
    fiber = {mu.getName(): mu.getFiberLength(state) for mu in m.getMuscles()}
    return q, fiber


def forward_final_state(model: Path, excitation: float, t_end_s: float, accuracy: float,
                        controls=None):
    """OpenSim's forward simulation of `model` from its default pose at rest at t = 0
    (`excited_model`: every muscle at `excitation`, `controls` for the actuators),
    activations = excitation, muscles equilibrated, the Manager at integrator `accuracy`;
    returns ({coordinate: value at t_end_s}, {muscle: fiber length (m) at t_end_s})."""
    osim, m, state = excited_model(model, excitation, controls)
    for muscle in m.getMuscles():
        muscle.setActivation(state, excitation)
    m.equilibrateMuscles(state)
    state.setTime(0.0)
    return integrate_to(osim, m, state, t_end_s, accuracy)


def set_pose(model, state, q, qd) -> None:
    """Every coordinate of `model` (in its CoordinateSet order) to q, its speed to qd, in
    `state` (constraints not enforced)."""
    coords = model.getCoordinateSet()
    for j, (value, speed) in enumerate(zip(q, qd)):
        coords.get(j).setValue(state, float(value), False)
        coords.get(j).setSpeedValue(state, float(speed))


def run_forward_tool(out_dir: Path, model: Path, controls: Path | None, states: Path | None,
                     initial_s: float, final_s: float, accuracy: float,
                     external_loads: Path | None = None, force_set_files=(),
                     replace_force_set: bool = False, solve_for_equilibrium: bool = False):
    """OpenSim's ForwardTool on these files (controls None: none; states None: the model's
    default state; external_loads None: none; force_set_files added to the model's forces,
    or replacing them with replace_force_set; solve_for_equilibrium: its
    solve_for_equilibrium_for_auxiliary_states), its integrator at `accuracy`, output printed
    to 16 digits; returns the path of its states file. The tool is built from a setup file it
    wrote itself, as `opensim-cmd run-tool` builds it: given a Model object from Python
    (setModel), OpenSim 4.6 crashed in run()."""
    osim = opensim_package()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tool = osim.ForwardTool()
    tool.setName("forward")
    tool.setModelFilename(str(model))
    if controls is not None:
        tool.setControlsFileName(str(controls))
    if external_loads is not None:
        tool.setExternalLoadsFileName(str(external_loads))
    if states is not None:
        tool.setStatesFileName(str(states))
    if force_set_files or replace_force_set:
        files = osim.ArrayStr()
        for path in force_set_files:
            files.append(str(path))
        tool.setForceSetFiles(files)
        tool.setReplaceForceSet(replace_force_set)
    tool.setInitialTime(initial_s)
    tool.setFinalTime(final_s)
    tool.setSolveForEquilibrium(solve_for_equilibrium)
    tool.setErrorTolerance(accuracy)
    tool.setOutputPrecision(16)
    tool.setResultsDir(str(out_dir))
    tool.printToXML(str(out_dir / "setup.xml"))
    osim.ForwardTool(str(out_dir / "setup.xml")).run()
    return out_dir / "forward_states.sto"
