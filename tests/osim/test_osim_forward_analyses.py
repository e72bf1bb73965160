"""`myotwin osim run-tool SETUP.xml` on ForwardTool setups whose AnalysisSet holds Kinematics,
BodyKinematics, PointKinematics, Actuation, ForceReporter, StatesReporter and MuscleAnalysis
analyses (`osim.forward_setup`, `osim.analysis_set`), against OpenSim 4.6's ForwardTool run
on the same setup file.

OpenSim records its analyses at its integrator's steps; ours at the rows the run writes
(`--record-every-s`). So OpenSim's values are interpolated (a not-a-knot cubic spline through
its steps, `scipy.interpolate.CubicSpline`) at our rows' times and compared there. The
setups ask OpenSim for 16 digits (`<output_precision>`), so its printing is not the limit;
the tolerances are each test's (its docstring), relative to each file's largest value.

Bad setups are one line naming the file, element and value (exit status 2), before any file
is written.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_printing_16_digits
from osim_synthetic import with_controllers, write_osim
from shared_reference import SHARED, needs
from storage_files import write_mot

osim = opensim_package()

MODELS = SHARED / "reference" / "opensim" / "models"

_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600"><ForwardTool name="fw"><model_file>{model}</model_file>
<results_directory>opensim</results_directory><output_precision>16</output_precision>
<initial_time>0</initial_time><final_time>{final}</final_time>
<integrator_error_tolerance>{accuracy}</integrator_error_tolerance>
<solve_for_equilibrium_for_auxiliary_states>{equilibrium}
</solve_for_equilibrium_for_auxiliary_states>{extra}
<AnalysisSet name="Analyses"><objects>{analyses}</objects></AnalysisSet>
</ForwardTool></OpenSimDocument>"""

KIN = ('<Kinematics name="Kinematics"><on>true</on><in_degrees>true</in_degrees>'
       "<coordinates>all</coordinates></Kinematics>")
BODY_KIN = ('<BodyKinematics name="BodyKinematics"><on>true</on><bodies>all</bodies>'
            "</BodyKinematics>")
ACTUATION = '<Actuation name="Actuation"><on>true</on></Actuation>'
FORCES = '<ForceReporter name="ForceReporter"><on>true</on></ForceReporter>'
STATES = '<StatesReporter name="StatesReporter"><on>true</on></StatesReporter>'
MA = ('<MuscleAnalysis name="MuscleAnalysis"><on>true</on><muscle_list>all</muscle_list>'
      "<moment_arm_coordinate_list>all</moment_arm_coordinate_list>"
      "<compute_moments>true</compute_moments></MuscleAnalysis>")
#: OpenSim's file suffixes of each of our files (ours: <analysis>/<prefix>_<suffix>.sto)
SUFFIXES = {"Kinematics": ("kinematics", ("q", "u", "dudt")),
            "BodyKinematics": ("body_kinematics", ("pos_global", "vel_global", "acc_global")),
            "Actuation": ("actuation", ("force", "speed", "power")),
            "ForceReporter": ("force_reporter", ("forces",)),
            "StatesReporter": ("states_reporter", ("states",))}


def _run_both(tmp_path, capsys, setup, record_every_s):
    """OpenSim's ForwardTool on `setup` (into tmp_path/opensim), then ours (into
    tmp_path/ours, a row every record_every_s); returns our summary."""
    run_printing_16_digits(osim, osim.ForwardTool(str(setup)))
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "ours"),
                 "--record-every-s", str(record_every_s)]) == 0
    return json.loads(capsys.readouterr().out)


def _relative_error(ours_path, theirs_path, what: str, angles=()) -> float:
    """Our file `ours_path` against OpenSim's `theirs_path` interpolated at our times (module
    docstring; OpenSim's degrees, the columns `angles` and the bodies' _O*, converted by its
    header): same labels; returns the largest error / the file's largest value."""
    ours, theirs = read_storage(ours_path), read_storage(theirs_path)
    # OpenSim 4.6 labels a PointKinematics' columns state_0, state_1, state_2
    mapped = tuple(label if not label.startswith("state_") else ours.labels[k]
                   for k, label in enumerate(theirs.labels))
    assert ours.labels == mapped and not ours.in_degrees, (ours.labels, theirs.labels)
    values = theirs.data[:, 1:].copy()
    if theirs.in_degrees:
        turning = [k for k, label in enumerate(theirs.labels[1:])
                   if label in angles or "_O" in label]
        values[:, turning] = np.radians(values[:, turning])
    times, keep = np.unique(theirs.time_s, return_index=True)   # (a repeated last row)
    assert ours.time_s[0] == times[0] and abs(ours.time_s[-1] - times[-1]) < 1e-12
    at_ours = CubicSpline(times, values[keep], axis=0)(ours.time_s)
    scale = max(np.abs(values).max(), 1.0)
    relative = float(np.abs(ours.data[:, 1:] - at_ours).max() / scale)
    print(f"  {what}: within {relative:.1e} of the largest value {scale:.3g} (OpenSim's "
          f"{times.size} steps, our {ours.time_s.size} rows)")
    return relative


def _compare(tmp_path, analysis, ours_prefix, theirs_prefix, suffixes, angles=()):
    """Our files tmp_path/ours/<analysis>/<ours_prefix>_<suffix>.sto against OpenSim's
    tmp_path/opensim/fw_<theirs_prefix>_<suffix>.sto (`_relative_error`); returns {suffix:
    largest error / the file's largest value}."""
    return {suffix: _relative_error(
        tmp_path / "ours" / analysis / f"{ours_prefix}_{suffix}.sto",
        tmp_path / "opensim" / f"fw_{theirs_prefix}_{suffix}.sto", f"{analysis} {suffix}",
        angles) for suffix in suffixes}


def _compare_controls(tmp_path) -> dict:
    """The run's controls.sto against OpenSim's fw_controls.sto (`_relative_error`)."""
    return {"controls": _relative_error(tmp_path / "ours" / "controls.sto",
                                        tmp_path / "opensim" / "fw_controls.sto", "controls")}


#: A setup's ControllerSet driving the pendulum's second CoordinateActuator by a Sine.
PENDULUM_CONTROLLERS = (
    '<ControllerSet name="Controllers"><objects><PrescribedController name="second">'
    "<socket_actuators>/forceset/Torq2</socket_actuators>"
    '<FunctionSet name="ControlFunctions"><objects><Sine><amplitude>0.5</amplitude>'
    "<omega>3</omega><phase>0</phase><offset>0.1</offset></Sine></objects></FunctionSet>"
    "</PrescribedController></objects></ControllerSet>")


def _pendulum(tmp_path):
    """pendulum.osim: double_pendulum.osim whose PrescribedController drives its first
    CoordinateActuator by a Sine (`PENDULUM_CONTROLLERS` drives the second); loads.xml: a
    force (in ground) at a point on rod2 and a torque on rod1, both varying in time."""
    controller = (
        '<PrescribedController name="torques"><socket_actuators>/forceset/Torq1'
        '</socket_actuators><FunctionSet name="ControlFunctions"><objects>'
        "<Sine><amplitude>0.2</amplitude><omega>8</omega><phase>0.3</phase>"
        "<offset>0.3</offset></Sine></objects></FunctionSet></PrescribedController>")
    write_osim(tmp_path, needs(MODELS / "double_pendulum.osim").read_text(),
               with_controllers(controller), name="pendulum.osim")
    t = np.linspace(0.0, 1.0, 21)
    zero = 0.0 * t
    write_mot(tmp_path / "loads.mot", t, {
        "f_vx": 2.0 * np.cos(2.0 * t), "f_vy": -3.0 - t, "f_vz": zero,
        "f_px": zero + 0.05, "f_py": zero - 0.4, "f_pz": zero + 0.02,
        "m_x": zero, "m_y": zero, "m_z": 0.5 * np.sin(4.0 * t)})
    force = ('<ExternalForce name="{name}"><appliesForce>true</appliesForce>'
             "<applied_to_body>{body}</applied_to_body>"
             "<force_expressed_in_body>ground</force_expressed_in_body>"
             "<point_expressed_in_body>{body}</point_expressed_in_body>"
             "<force_identifier>{force}</force_identifier><point_identifier>{point}"
             "</point_identifier><torque_identifier>{torque}</torque_identifier>"
             "<data_source_name>Unassigned</data_source_name></ExternalForce>")
    (tmp_path / "loads.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">'
        '<ExternalLoads name="loads"><objects>'
        + force.format(name="push", body="rod2", force="f_v", point="f_p", torque="")
        + force.format(name="twist", body="rod1", force="", point="", torque="m_")
        + "</objects><groups /><datafile>loads.mot</datafile></ExternalLoads>"
        "</OpenSimDocument>")


def test_a_driven_pendulums_analyses_match_the_forward_tools(tmp_path, capsys):
    """double_pendulum driven by a Sine of its own controller and one of the setup's,
    pushed at a point of rod2 and twisted on rod1 (external loads), 0.5 s from its default state
    at accuracy 1e-10, a row every 10 ms: every analysis file within 1e-7 of its largest value
    of OpenSim's (observed <= 1.5e-9: the two integrators' errors and the spline's through
    OpenSim's ~1 ms steps). The accelerations are the forward dynamics at each row with the
    controls and loads; with the loads left out of the analyses (a deliberate-bug run) they were
    0.23 of their largest value off, with the setup's controller left out 0.099 (and the
    Actuation's forces 0.6). A torque-only ExternalForce has no force columns in OpenSim's
    ForceReporter."""
    _pendulum(tmp_path)
    point = ('<PointKinematics name="tip"><on>true</on><body_name>rod2</body_name>'
             "<point_name>tip</point_name><point>0 -0.5 0.1</point></PointKinematics>")
    off = '<MuscleAnalysis name="unused"><on>false</on></MuscleAnalysis>'
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(
        model="pendulum.osim", final=0.5, accuracy=1e-10, equilibrium="false",
        extra="<external_loads_file>loads.xml</external_loads_file>" + PENDULUM_CONTROLLERS,
        analyses=KIN + BODY_KIN + point + ACTUATION + FORCES + STATES + off))
    summary = _run_both(tmp_path, capsys, setup, 0.01)
    analyses = summary["analyses"]
    assert [a["type"] for a in analyses.values()] == [
        "Kinematics", "BodyKinematics", "PointKinematics", "Actuation", "ForceReporter",
        "StatesReporter"]
    assert summary["analyses_off"] == ["unused"]
    assert analyses["Kinematics"]["n_rows"] == 51 and analyses["tip"]["body"] == "rod2"
    assert analyses["ForceReporter"]["external_forces"] == [
        f"rod2_push_{k}{a}" for k in "Fp" for a in "xyz"] + [
        f"rod1_twist_T{a}" for a in "xyz"]          # a torque only: no force columns
    assert analyses["Actuation"]["controllers"] == ["torques", "second"]
    with capsys.disabled():
        print()
        errors = {}
        for name, (prefix, suffixes) in SUFFIXES.items():
            errors |= {f"{name} {s}": e for s, e in _compare(
                tmp_path, name, prefix, name, suffixes, angles=("q1", "q2")).items()}
        errors |= {f"tip {s}": e for s, e in _compare(
            tmp_path, "tip", "point_kinematics_tip", "tip_tip", ("pos", "vel", "acc")).items()}
        errors |= _compare_controls(tmp_path)
    assert max(errors.values()) <= 1e-7, errors


def test_a_driven_tug_of_wars_analyses_match_the_forward_tools(tmp_path, capsys):
    """Tug_of_War_Millard (a block between two Millard muscles with compliant tendons) whose
    muscles a PrescribedController of the setup drives (a Sine, a Constant), a force along
    the block's slide (external loads), fibers in equilibrium at the start, 0.2 s at accuracy
    1e-10, a row every 5 ms: Kinematics, BodyKinematics, Actuation, ForceReporter,
    StatesReporter and MuscleAnalysis (its 20 files) within 2e-7 of each file's largest value
    of OpenSim's (the two integrators' errors grow through the stiff tendons into the forces,
    powers and accelerations; observed <= 3.4e-8, the fibers' active power)."""
    write_osim(tmp_path, needs(MODELS / "Tug_of_War_Millard.osim").read_text(),
               lambda root: None, name="tug.osim")
    t = np.linspace(0.0, 1.0, 11)
    zero = 0.0 * t
    write_mot(tmp_path / "push.mot", t, {"p_vx": zero, "p_vy": zero, "p_vz": 30.0 + 40.0 * t,
                                          "p_px": zero, "p_py": zero, "p_pz": zero})
    (tmp_path / "push.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">'
        '<ExternalLoads name="push"><objects><ExternalForce name="push">'
        "<appliesForce>true</appliesForce><applied_to_body>block</applied_to_body>"
        "<force_expressed_in_body>ground</force_expressed_in_body>"
        "<point_expressed_in_body>block</point_expressed_in_body>"
        "<force_identifier>p_v</force_identifier><point_identifier>p_p</point_identifier>"
        "<torque_identifier></torque_identifier><data_source_name>Unassigned</data_source_name>"
        "</ExternalForce></objects><groups /><datafile>push.mot</datafile></ExternalLoads>"
        "</OpenSimDocument>")
    controllers = (
        '<ControllerSet name="Controllers"><objects><PrescribedController name="drive">'
        "<socket_actuators>/forceset/RightMuscle /forceset/LeftMuscle</socket_actuators>"
        '<FunctionSet name="ControlFunctions"><objects><Sine><amplitude>0.3</amplitude>'
        "<omega>20</omega><phase>0</phase><offset>0.5</offset></Sine><Constant><value>0.3"
        "</value></Constant></objects></FunctionSet></PrescribedController></objects>"
        "</ControllerSet>")
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(
        model="tug.osim", final=0.2, accuracy=1e-10, equilibrium="true",
        extra="<external_loads_file>push.xml</external_loads_file>" + controllers,
        analyses=KIN + BODY_KIN + ACTUATION + FORCES + STATES + MA))
    summary = _run_both(tmp_path, capsys, setup, 0.005)
    assert summary["analyses"]["Actuation"]["controllers"] == ["drive"]
    assert summary["analyses"]["Actuation"]["actuators"] == ["RightMuscle", "LeftMuscle"]
    assert summary["analyses"]["MuscleAnalysis"]["type"] == "MuscleAnalysis"
    outputs = sorted(p.stem.removeprefix("muscle_analysis_") for p in
                     (tmp_path / "ours" / "MuscleAnalysis").glob("muscle_analysis_*.sto"))
    assert len(outputs) == 20 and "TendonForce" in outputs, outputs
    with capsys.disabled():
        print()
        errors = {}
        for name, (prefix, suffixes) in SUFFIXES.items():
            errors |= {f"{name} {s}": e for s, e in _compare(
                tmp_path, name, prefix, name, suffixes).items()}
        errors |= {f"MuscleAnalysis {s}": e for s, e in _compare(
            tmp_path, "MuscleAnalysis", "muscle_analysis", "MuscleAnalysis", outputs).items()}
        errors |= _compare_controls(tmp_path)
    assert max(errors.values()) <= 2e-7, errors


def test_a_pendulum_driven_by_a_controls_file_analyses_match_the_forward_tools(tmp_path,
                                                                               capsys):
    """The pendulum of the first test driven by a ControlSetController's controls file (a
    ramp on each CoordinateActuator, linear over the run: no kink for the spline to smooth)
    added to its own controller's Sine on Torq1, 0.5 s at accuracy 1e-10, a row every 10 ms:
    Kinematics, Actuation, ForceReporter and the controls within 1e-7 of each file's largest
    value of OpenSim's (as the first test; observed <= 6.7e-10). With the controls file left out
    of the analyses (a deliberate-bug run) the accelerations were 0.079 of their largest value
    off and the Actuation's forces 0.3."""
    _pendulum(tmp_path)
    write_mot(tmp_path / "u.sto", np.array([0.0, 1.0]),
              {"Torq1": np.array([0.2, -0.8]), "Torq2": np.array([-0.1, 0.5])},
              name="controls")
    controllers = ('<ControllerSet name="Controllers"><objects><ControlSetController '
                   'name="file"><controls_file>u.sto</controls_file></ControlSetController>'
                   "</objects></ControllerSet>")
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(model="pendulum.osim", final=0.5, accuracy=1e-10,
                                   equilibrium="false", extra=controllers,
                                   analyses=KIN + ACTUATION + FORCES))
    summary = _run_both(tmp_path, capsys, setup, 0.01)
    assert summary["controls_file"].endswith("u.sto")
    assert summary["analyses"]["Actuation"]["controllers"] == ["torques"]
    with capsys.disabled():
        print()
        errors = {}
        for name in ("Kinematics", "Actuation", "ForceReporter"):
            prefix, suffixes = SUFFIXES[name]
            errors |= {f"{name} {s}": e for s, e in _compare(
                tmp_path, name, prefix, name, suffixes, angles=("q1", "q2")).items()}
        errors |= _compare_controls(tmp_path)
    assert max(errors.values()) <= 1e-7, errors


@pytest.mark.parametrize("analyses, extra, message", [
    ('<StaticOptimization name="so"><on>true</on></StaticOptimization>', "",
     "StaticOptimization 'so' (AnalysisSet Analyses): only Kinematics, BodyKinematics, "
     "PointKinematics, Actuation, ForceReporter, StatesReporter, MuscleAnalysis are run (this "
     "analysis is on)"),
    (MA, "", "setup.xml: ForwardTool 'fw': a MuscleAnalysis with a model without muscles "
     "(pendulum.osim): nothing to analyse"),
    (MA, "<replace_force_set>true</replace_force_set>", "<replace_force_set> true with a "
     "MuscleAnalysis is not offered"),
    (KIN.replace('"Kinematics"', '"states.sto"'), "", "ForwardTool 'fw': an analysis named "
     "'states.sto' would write into a folder of the name of the run's own file"),
    (KIN.replace("<coordinates>all<", "<coordinates>q1 q3<"), "", "setup.xml: ForwardTool "
     "'fw': Kinematics 'Kinematics': no coordinate named 'q3' in"),
    (BODY_KIN.replace("<bodies>", "<step_interval>10</step_interval><bodies>"), "",
     "BodyKinematics 'BodyKinematics' (AnalysisSet Analyses): <step_interval> must be 1"),
])
def test_bad_analyses_are_one_line(tmp_path, capsys, analyses, extra, message):
    _pendulum(tmp_path)
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(model="pendulum.osim", final=0.5, accuracy=1e-10,
                                   equilibrium="false", extra=extra, analyses=analyses))
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "setup.xml: " in err and message in err, err
    assert not (tmp_path / "out").exists()


def test_a_run_does_not_write_over_its_inputs(tmp_path, capsys):
    """A controls file named controls.sto in the output folder (the run writes its own
    controls.sto there), or a states file named states.sto there, is refused before anything
    is written: the file is left as it was."""
    _pendulum(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    controls = write_mot(out / "controls.sto", np.array([0.0, 1.0]),
                         {"Torq1": np.array([0.1, 0.2]), "Torq2": np.array([0.0, 0.3])},
                         name="controls")
    before = controls.read_text()
    status = main(["osim", "forward", str(tmp_path / "pendulum.osim"), "--controls",
                   str(controls), "--duration-s", "0.01", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert (f"{controls}: the run reads it and would write controls.sto over it in the same "
            "folder: write into another folder (--out)") in err, err
    assert controls.read_text() == before and sorted(p.name for p in out.iterdir()) == [
        "controls.sto"]
    (tmp_path / "setup.xml").write_text(_SETUP.format(
        model="pendulum.osim", final=0.1, accuracy=1e-6, equilibrium="false",
        extra="<states_file>opensim/states.sto</states_file>", analyses=""))
    (tmp_path / "opensim").mkdir()     # the setup's results_directory
    states = write_mot(tmp_path / "opensim" / "states.sto", np.array([0.0, 1.0]), {
        "/jointset/pin1/q1/value": np.zeros(2), "/jointset/pin1/q1/speed": np.zeros(2),
        "/jointset/pin2/q2/value": np.zeros(2), "/jointset/pin2/q2/speed": np.zeros(2)},
        name="states")
    before = states.read_text()
    assert main(["osim", "run-tool", str(tmp_path / "setup.xml")]) == 2
    err = capsys.readouterr().err
    assert "states.sto: the run reads it and would write states.sto over it" in err, err
    assert states.read_text() == before


def test_a_muscle_analysis_with_force_set_files_adding_muscles_is_refused(tmp_path, capsys):
    """A MuscleAnalysis reads the model file's muscles (OpenSim's would report the added one
    too): force set files that add a muscle are refused before the run, naming the muscle."""
    text = needs(MODELS / "Tug_of_War_Millard.osim").read_text()
    write_osim(tmp_path, text, lambda root: None, name="tug.osim")
    start = text.index('<Millard2012EquilibriumMuscle name="RightMuscle">')
    end = text.index("</Millard2012EquilibriumMuscle>", start)
    muscle = text[start:end + len("</Millard2012EquilibriumMuscle>")].replace(
        'name="RightMuscle"', 'name="RightMuscle2"', 1)
    (tmp_path / "more.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">'
        f'<ForceSet name="more"><objects>{muscle}</objects><groups /></ForceSet>'
        "</OpenSimDocument>")
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(
        model="tug.osim", final=0.1, accuracy=1e-6, equilibrium="true",
        extra="<force_set_files>more.xml</force_set_files>", analyses=MA))
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert ("setup.xml: ForwardTool 'fw': <force_set_files> add muscles ['RightMuscle2'] with "
            "a MuscleAnalysis, which is not offered (reserve actuators are)") in err, err
    assert not (tmp_path / "out").exists()
