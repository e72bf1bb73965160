"""`myotwin osim run-tool SETUP.xml` on AnalyzeTool setups (`osim.analyze_setup`), against
OpenSim 4.6's AnalyzeTool run on the same setup file (`osim.AnalyzeTool(setup).run()`).

arm26.osim with its two wrap ellipsoids inactive in the file both read
(`osim_synthetic.ARM26_ELLIPSOIDS`: compiling them would cost ~60 s and is tested elsewhere)
along the tutorial's IK result, 0-0.3 s (37 rows), lowpass 6 Hz. The setups ask OpenSim for
16 digits (`<output_precision>`, which ours reads past), so its printing is not the limit.
Tolerances are those of the commands' own tests, for the same reasons:
* static optimization (test_osim_static_optimization.py): activations within 1e-6 (OpenSim's
  optimizer stops at its convergence criterion 1e-10 with a constraint violation ~5e-6
  rad/s^2, ours at 1e-12), forces within that times 1000 N (arm26's largest max isometric
  force is 987 N). Observed 2.3e-7 and 1.2e-4 N; with the reserves and the hand load
  1.7e-7 and 9.1e-5 N.
* muscle analysis (test_osim_muscle_analysis.py): lengths and moment arms within 1e-8 m
  (observed 1.1e-15 here, 16 digits printed); the muscle-state outputs at the default states
  within 1e-8 + 1e-12 |value| (arm26's Thelen muscles: no damped fiber solve; observed at
  0.02 of it); with the muscles equilibrated (solve_for_equilibrium_for_auxiliary_states)
  fiber lengths within 1e-8 m, tendon forces within OpenSim's equilibrium tolerance 1e-8
  F_iso, moments within 1e-8 + that times the moment arm (observed 1.3e-11 m, 1.1e-9 F_iso
  with F_iso 436-987 N, moments at 0.10 of their tolerance).
* Kinematics, BodyKinematics and PointKinematics: within 1e-11 of each file's largest value
  (both evaluate the same kinematics and forward dynamics in double precision: observed
  <= 4e-14); with the muscles equilibrated the accelerations within 1e-5 more (OpenSim's
  equilibrium tolerance), on the coupled leg 1e-8 and 1e-7 (OpenSim's assembly; the tests'
  docstrings).
What each test adds: the setup with both analyses (their own start and end times, in_degrees,
integrator settings, an analysis that is off: read past, as OpenSim does); a reserves force
set file, a load on the hand and equilibrated muscles (static optimization takes the
reserves and the load, the muscle analysis reads both past, as OpenSim's files show); a
states file with an initial time between rows (OpenSim starts at the row before; its filter
and coordinates_file do not apply); the kinematics analyses along the IK motion (all,
listed, in the bodies' frames, a point in ground and in the humerus' frame), along a states
file with a hand load and equilibrium, on a model whose controller drives its actuators, on
the coupled leg (a coordinates file, a states file), and on the arm with its shoulder locked.
Bad setups are one line naming the file, element and value (exit status 2).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.inverse_dynamics import output_coordinates
from myotwin.osim.loader import load
from myotwin.osim.muscle_states import OUTPUTS
from myotwin.osim.storage import StorageWriter, read_storage
from opensim_live import opensim_package, run_printing_16_digits
from osim_synthetic import (ARM26_ELLIPSOIDS, deactivate, locked_copy, to_degroote,
                             with_controllers, write_leg_swing, write_osim, write_reserves)
from shared_reference import SHARED, needs
from storage_files import write_mot

osim = opensim_package()

REF = SHARED / "reference" / "opensim"
ARM = REF / "models" / "arm26.osim"
IK = REF / "data" / "arm26" / "arm26_InverseKinematics.mot"
COORDINATES = ("r_shoulder_elev", "r_elbow_flex")
#: test_osim_static_optimization.py's tolerances (module docstring)
TOL_ACTIVATION = 1e-6
FORCE_PER_ACTIVATION_N = 1e3
#: test_osim_muscle_analysis.py's (module docstring)
TOL_M = 1e-8
REL_TOL = 1e-12
EQUILIBRIUM_TOL = 1e-8

_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600"><AnalyzeTool name="arm">
  <model_file>arm26.osim</model_file>
  <results_directory>opensim</results_directory>
  <output_precision>16</output_precision>
  <initial_time>{initial}</initial_time><final_time>0.3</final_time>
  <maximum_number_of_integrator_steps>20000</maximum_number_of_integrator_steps>
  <maximum_integrator_step_size>1</maximum_integrator_step_size>
  <minimum_integrator_step_size>1e-08</minimum_integrator_step_size>
  <integrator_error_tolerance>1e-05</integrator_error_tolerance>
  <AnalysisSet name="Analyses"><objects>{analyses}</objects><groups /></AnalysisSet>
  <ControllerSet name="Controllers"><objects /><groups /></ControllerSet>
  <coordinates_file>{coordinates}</coordinates_file>
  <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
  {extra}
</AnalyzeTool></OpenSimDocument>
"""
#: OpenSim's defaults but the convergence criterion (the SO tests'); its own window 0.1-0.2 s
SO = """<StaticOptimization name="StaticOptimization"><on>true</on>
  <start_time>0.1</start_time><end_time>0.2</end_time><step_interval>1</step_interval>
  <in_degrees>true</in_degrees><use_model_force_set>true</use_model_force_set>
  <activation_exponent>2</activation_exponent><use_muscle_physiology>true</use_muscle_physiology>
  <optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion>
  <optimizer_max_iterations>1000</optimizer_max_iterations></StaticOptimization>"""
MA = """<MuscleAnalysis name="MuscleAnalysis"><on>true</on>
  <start_time>0.05</start_time><end_time>0.15</end_time><step_interval>1</step_interval>
  <in_degrees>false</in_degrees><muscle_list> all</muscle_list>
  <moment_arm_coordinate_list> all</moment_arm_coordinate_list>
  <compute_moments>true</compute_moments></MuscleAnalysis>"""

KIN = """<Kinematics name="Kinematics"><on>true</on><step_interval>1</step_interval>
  <in_degrees>true</in_degrees><coordinates>all</coordinates></Kinematics>"""
BODY_KIN = """<BodyKinematics name="BodyKinematics"><on>true</on><step_interval>1</step_interval>
  <in_degrees>true</in_degrees><bodies>all</bodies>
  <express_results_in_body_local_frame>false</express_results_in_body_local_frame>
  </BodyKinematics>"""
POINT_KIN = """<PointKinematics name="tip"><on>true</on><step_interval>1</step_interval>
  <in_degrees>true</in_degrees><body_name>r_ulna_radius_hand</body_name>
  <relative_to_body_name>none</relative_to_body_name><point_name>tip</point_name>
  <point>0.01 -0.3 0.02</point></PointKinematics>"""
ACTUATION = '<Actuation name="Actuation"><on>true</on><in_degrees>true</in_degrees></Actuation>'
FORCES = ('<ForceReporter name="ForceReporter"><on>true</on>'
          "<include_constraint_forces>false</include_constraint_forces></ForceReporter>")
STATES = '<StatesReporter name="StatesReporter"><on>true</on></StatesReporter>'
#: Kinematics, BodyKinematics and PointKinematics: of the largest value of each file
#: (rounding: both evaluate the same kinematics and forward dynamics in double precision;
#: observed <= 4e-14)
REL_TOL_KINEMATICS = 1e-11
#: accelerations with the muscles equilibrated (test_body_kinematics_on_a_states_file_...)
EQUILIBRIUM_ACCELERATION = 1e-5


def _arm(directory):
    """arm26.osim with its ellipsoids inactive, written into `directory`."""
    return write_osim(directory, needs(ARM).read_text(),
                      lambda root: deactivate(root, ARM26_ELLIPSOIDS), name="arm26.osim")


def _setup(directory, analyses, extra="", initial=0.0, coordinates=None):
    """setup.xml (module docstring) in `directory`, beside arm26.osim."""
    _arm(directory)
    path = directory / "setup.xml"
    path.write_text(_SETUP.format(analyses=analyses, extra=extra, initial=initial,
                                  coordinates=coordinates or needs(IK)))
    return path


def _run_both(tmp_path, capsys, setup, out_args=True):
    """OpenSim's AnalyzeTool on `setup` (into its results_directory, tmp_path/opensim), then
    ours (into tmp_path/ours, or with out_args False into the setup's results_directory);
    returns our summary."""
    run_printing_16_digits(osim, osim.AnalyzeTool(str(setup)))
    out = ["--out", str(tmp_path / "ours")] if out_args else []
    assert main(["osim", "run-tool", str(setup), *out]) == 0
    return json.loads(capsys.readouterr().out)


def _pair(theirs_name, ours_path):
    """(OpenSim's table, ours): same rows; OpenSim's columns cut to ours (its force file adds
    the external forces' columns after the actuators')."""
    theirs = read_storage(ours_path.parents[2] / "opensim" / theirs_name)
    ours = read_storage(ours_path)
    assert theirs.labels[:len(ours.labels)] == ours.labels, (theirs.labels, ours.labels)
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-9)
    return theirs.data[:, 1:len(ours.labels)], ours.data[:, 1:]


def _check_static_optimization(folder, what):
    """Our activations and forces in `folder` against OpenSim's (module docstring)."""
    theirs, ours = _pair("arm_StaticOptimization_activation.sto",
                         folder / "static_optimization_activation.sto")
    da = np.abs(ours - theirs).max()
    theirs, ours = _pair("arm_StaticOptimization_force.sto",
                         folder / "static_optimization_force.sto")
    df = np.abs(ours - theirs).max()
    print(f"{what}: static optimization {ours.shape[0]} rows, activations within {da:.1e}, "
          f"forces within {df:.1e} N of OpenSim's")
    assert da <= TOL_ACTIVATION and df <= TOL_ACTIVATION * FORCE_PER_ACTIVATION_N
    return ours.shape[0]


def _geometry(folder, what):
    """Our lengths and moment arms in `folder` against OpenSim's, within TOL_M."""
    names = ["Length", *(f"MomentArm_{c}" for c in COORDINATES)]
    worst = {}
    for name in names:
        theirs, ours = _pair(f"arm_MuscleAnalysis_{name}.sto",
                             folder / f"muscle_analysis_{name}.sto")
        worst[name] = np.abs(ours - theirs).max()
    print(f"{what}: muscle analysis {ours.shape[0]} rows, "
          + ", ".join(f"{k} {v:.1e} m" for k, v in worst.items()))
    assert max(worst.values()) <= TOL_M
    return ours.shape[0]


def test_a_setup_with_both_analyses_matches_opensims_tool(tmp_path, capsys):
    """Both analyses at the muscles' default states: every file of each within the
    commands' tolerances; the analyses' own start and end times are read past (OpenSim
    reports all 37 rows of the tool's window), as is an analysis that is off (OpenSim writes
    nothing for it)."""
    setup = _setup(tmp_path, SO + MA + '<Kinematics name="kin"><on>false</on></Kinematics>')
    summary = _run_both(tmp_path, capsys, setup)
    assert summary["analyses_off"] == ["kin"]
    assert not list((tmp_path / "opensim").glob("*kin*"))
    assert summary["tool_type"] == "AnalyzeTool" and summary["tool"] == "arm"
    assert json.loads((tmp_path / "ours" / "summary.json").read_text()) == summary
    assert list(summary["analyses"]) == ["StaticOptimization", "MuscleAnalysis"]
    so, ma = summary["analyses"].values()
    assert so["setup_values_not_used"] == {"optimizer_convergence_criterion": 1e-10,
                                           "optimizer_max_iterations": 1000}
    assert so["lowpass_cutoff_hz"] == 6.0 and ma["muscle_states"] == "default"
    assert so["constraint_violated_at_s"] == {}
    ours = tmp_path / "ours"
    assert _check_static_optimization(ours / "StaticOptimization", "both") == 37
    assert _geometry(ours / "MuscleAnalysis", "both") == 37
    worst = 0.0
    for name in (*OUTPUTS, *(f"Moment_{c}" for c in COORDINATES)):
        theirs, mine = _pair(f"arm_MuscleAnalysis_{name}.sto",
                             ours / "MuscleAnalysis" / f"muscle_analysis_{name}.sto")
        worst = max(worst, (np.abs(mine - theirs) / (TOL_M + REL_TOL * np.abs(theirs))).max())
    print(f"muscle-state outputs: worst error / tolerance {worst:.2f}")
    assert worst <= 1.0


def _hand_load(directory):
    """hand.xml: a downward force of 20-25 N on arm26's hand, 0.2 m down its forearm."""
    t = np.linspace(0.0, 1.0, 11)
    zero = 0.0 * t
    write_mot(directory / "hand.mot", t, {"h_vx": zero, "h_vy": -20.0 - 5.0 * t, "h_vz": zero,
                                          "h_px": zero, "h_py": zero - 0.2, "h_pz": zero + 0.05})
    path = directory / "hand.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">'
        '<ExternalLoads name="hand"><objects><ExternalForce name="weight">'
        "<appliesForce>true</appliesForce><applied_to_body>r_ulna_radius_hand</applied_to_body>"
        "<force_expressed_in_body>ground</force_expressed_in_body>"
        "<point_expressed_in_body>r_ulna_radius_hand</point_expressed_in_body>"
        "<force_identifier>h_v</force_identifier><point_identifier>h_p</point_identifier>"
        "<torque_identifier></torque_identifier><data_source_name>Unassigned</data_source_name>"
        "</ExternalForce></objects><groups /><datafile>hand.mot</datafile></ExternalLoads>"
        "</OpenSimDocument>")
    return path


def test_reserves_a_hand_load_and_equilibrium_as_opensims_tool(tmp_path, capsys):
    """Reserve actuators (force_set_files) and a load on the hand (external_loads_file):
    static optimization takes both; the muscle analysis reads both past, as OpenSim's files
    show; solve_for_equilibrium_for_auxiliary_states equilibrates the muscles. Written into
    the setup's results_directory."""
    write_reserves(tmp_path / "reserves.xml", COORDINATES, 5.0)
    _hand_load(tmp_path)
    setup = _setup(tmp_path, SO + MA, "<force_set_files>reserves.xml</force_set_files>"
                   "<external_loads_file>hand.xml</external_loads_file>"
                   "<solve_for_equilibrium_for_auxiliary_states>true"
                   "</solve_for_equilibrium_for_auxiliary_states>")
    # ours into the setup's results_directory too: its folders beside OpenSim's files
    summary = _run_both(tmp_path, capsys, setup, out_args=False)
    assert summary["out_dir"] == str(tmp_path / "opensim")
    so, ma = summary["analyses"].values()
    assert so["force_set_files"] == [str(tmp_path / "reserves.xml")]
    assert so["external_loads_file"] == str(tmp_path / "hand.xml")
    assert ma["setup_values_not_used"] == {"force_set_files": [str(tmp_path / "reserves.xml")],
                                           "external_loads_file": str(tmp_path / "hand.xml")}
    assert ma["muscle_states"] == "equilibrium" and ma["muscle_equilibrium_failed"] == {}
    ours = tmp_path / "opensim"
    _check_static_optimization(ours / "StaticOptimization", "reserves and hand load")
    activation = read_storage(ours / "StaticOptimization" / "static_optimization_activation.sto")
    assert activation.labels[-2:] == tuple(f"{c}_reserve" for c in COORDINATES)
    _geometry(ours / "MuscleAnalysis", "reserves and hand load")
    loaded = load(tmp_path / "arm26.osim")
    f_iso = np.array([loaded.muscles[n]["max_isometric_force_N"] for n in loaded.muscle_names])
    folder = ours / "MuscleAnalysis"
    theirs_l, ours_l = _pair("arm_MuscleAnalysis_FiberLength.sto",
                             folder / "muscle_analysis_FiberLength.sto")
    theirs_f, ours_f = _pair("arm_MuscleAnalysis_TendonForce.sto",
                             folder / "muscle_analysis_TendonForce.sto")
    dl, df = np.abs(ours_l - theirs_l).max(), (np.abs(ours_f - theirs_f) / f_iso).max()
    moments = []
    for c in COORDINATES:
        theirs_m, ours_m = _pair(f"arm_MuscleAnalysis_Moment_{c}.sto",
                                 folder / f"muscle_analysis_Moment_{c}.sto")
        arm = read_storage(folder / f"muscle_analysis_MomentArm_{c}.sto").data[:, 1:]
        moments.append((np.abs(ours_m - theirs_m)
                        / (TOL_M + EQUILIBRIUM_TOL * f_iso * np.abs(arm))).max())
    print(f"equilibrated: fiber lengths within {dl:.1e} m, tendon forces within {df:.1e} F_iso,"
          f" moments within {max(moments):.2f} of their tolerance")
    assert dl <= TOL_M and df <= EQUILIBRIUM_TOL and max(moments) <= 1.0


def _states_file(path, activations=False):
    """A states file of the IK's rows to 0.35 s: its coordinates (rad) and their differences
    as speeds; with `activations` each muscle's activation (0.1, 0.2, ..., 0.6), no fiber
    lengths (OpenSim and ours take their defaults)."""
    ik = read_storage(needs(IK))
    rows = ik.time_s <= 0.35
    t = ik.time_s[rows]
    labels, columns = ["time"], [t]
    for c, joint in zip(COORDINATES, ("r_shoulder", "r_elbow")):
        q = np.radians(ik.column(c)[rows])
        labels += [f"/jointset/{joint}/{c}/value", f"/jointset/{joint}/{c}/speed"]
        columns += [q, np.gradient(q, t)]
    muscles = ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA")
    for k, m in enumerate(muscles if activations else ()):
        labels.append(f"/forceset/{m}/activation")
        columns.append(np.full(t.size, 0.1 * (k + 1)))
    with StorageWriter(path, "states", labels) as writer:
        writer.write_rows(np.column_stack(columns))


def test_a_states_file_starts_at_the_row_before_the_initial_time(tmp_path, capsys):
    """A MuscleAnalysis on a states file (the IK's coordinates in rad, their differences as
    speeds), initial_time 0.055 s between rows: OpenSim starts at the row before (0.05 s),
    and ignores the lowpass filter and the coordinates_file beside it."""
    _states_file(tmp_path / "states.sto")
    setup = _setup(tmp_path, MA, "<states_file>states.sto</states_file>", initial=0.055)
    summary = _run_both(tmp_path, capsys, setup)
    ma = summary["analyses"]["MuscleAnalysis"]
    assert ma["states_file"] == str(tmp_path / "states.sto") and ma["coordinates_file"] is None
    assert ma["setup_values_not_used"] == {"coordinates_file": str(needs(IK)),
                                           "lowpass_cutoff_frequency_for_coordinates": 6.0}
    assert _geometry(tmp_path / "ours" / "MuscleAnalysis", "states file") == 31
    assert ma["first_time_s"] == pytest.approx(0.05, abs=1e-8)


def _muscle_force_set(path):
    """A ForceSet file holding a copy of arm26's BRA named BRA2 (a muscle)."""
    root = ET.fromstring(needs(ARM).read_text())
    muscle = root.find(".//Thelen2003Muscle[@name='BRA']")
    muscle.set("name", "BRA2")
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">'
                    '<ForceSet name="more"><objects>' + ET.tostring(muscle, encoding="unicode")
                    + "</objects><groups /></ForceSet></OpenSimDocument>")


@pytest.mark.parametrize("analyses, extra, message", [
    (SO, "<use_specified_dt>true</use_specified_dt>", "AnalyzeTool 'arm': <use_specified_dt> "
     "is not part of the supported subset"),
    (SO, "<speeds_file>u.sto</speeds_file>", "<speeds_file> is not offered"),
    (SO, "<states_file>x.sto</states_file>", "<states_file> with a StaticOptimization is not "
     "offered"),
    (SO, ('<ControllerSet name="Controllers"><objects />', '<ControllerSet name="Controllers">'
          '<objects><PrescribedController name="p"/></objects>'),
     "<ControllerSet> must be empty"),
    (MA, "<replace_force_set>true</replace_force_set>", "<replace_force_set> true with a "
     "MuscleAnalysis is not offered"),
    (SO, ("<lowpass_cutoff_frequency_for_coordinates>6<",
          "<lowpass_cutoff_frequency_for_coordinates>0<"),
     "<lowpass_cutoff_frequency_for_coordinates> 0 would filter at 0 Hz"),
    (SO.replace("<step_interval>1<", "<step_interval>2<"), "", "StaticOptimization "
     "'StaticOptimization' (AnalysisSet Analyses): <step_interval> must be 1 (every row is "
     "analysed), got '2'"),
    (SO.replace("<use_model_force_set>true<", "<use_model_force_set>false<"), "",
     "<use_model_force_set> must be true"),
    (SO.replace("<activation_exponent>2<", "<activation_exponent>0.5<"), "",
     "<activation_exponent> must be >= 1, got '0.5'"),
    (SO.replace("<optimizer_max_iterations>1000<", "<optimizer_max_iterations>1.5<"), "",
     "<optimizer_max_iterations> must be a positive integer, got '1.5'"),
    (SO.replace("</StaticOptimization>", "<tolerance>1</tolerance></StaticOptimization>"), "",
     "<tolerance> is not part of the supported subset"),
    (MA.replace("<muscle_list> all<", "<muscle_list>BIClong<"), "",
     "MuscleAnalysis 'MuscleAnalysis' (AnalysisSet Analyses): <muscle_list> must be all "
     "(every muscle is analysed), got 'BIClong'"),
    (MA.replace("<moment_arm_coordinate_list> all<",
                "<moment_arm_coordinate_list>r_elbow_flex<"), "",
     "<moment_arm_coordinate_list> must be all"),
    (MA.replace("<compute_moments>true<", "<compute_moments>false<"), "",
     "<compute_moments> must be true"),
    (SO + '<InducedAccelerations name="k"><on>true</on></InducedAccelerations>', "",
     "InducedAccelerations 'k' (AnalysisSet Analyses): only StaticOptimization, "
     "MuscleAnalysis, Kinematics, BodyKinematics, PointKinematics, Actuation, ForceReporter, "
     "StatesReporter are run"),
    (SO.replace("<on>true<", "<on>false<"), "", "AnalysisSet 'Analyses' (AnalyzeTool arm): no "
     "StaticOptimization, MuscleAnalysis, Kinematics, BodyKinematics, PointKinematics, "
     "Actuation, ForceReporter, StatesReporter is on: nothing to run"),
    (FORCES.replace("constraint_forces>false<", "constraint_forces>true<"), "",
     "ForceReporter 'ForceReporter' (AnalysisSet Analyses): <include_constraint_forces> must "
     "be false: constraint forces are not computed"),
    (POINT_KIN.replace("<point>0.01 -0.3 0.02<", "<point>0.01 -0.3<"), "",
     "PointKinematics 'tip' (AnalysisSet Analyses): <point> must be 3 numbers, got "
     "'0.01 -0.3'"),
    (KIN.replace("<coordinates>all<", "<coordinates>all r_elbow_flex<"), "",
     "Kinematics 'Kinematics' (AnalysisSet Analyses): <coordinates> must be all or a list of "
     "names, got 'all r_elbow_flex'"),
    (BODY_KIN.replace("<in_degrees>", "<points>1</points><in_degrees>"), "",
     "BodyKinematics 'BodyKinematics' (AnalysisSet Analyses): <points> is not part of the "
     "supported subset"),
    (SO + SO, "", "two analyses that are on are named 'StaticOptimization'"),
    (SO, "<final_time>0</final_time>", "AnalyzeTool 'arm': <final_time> is given 2 times"),
])
def test_bad_setups_are_one_line(tmp_path, capsys, analyses, extra, message):
    """`extra`: properties added to _SETUP's, or (old, new): a change of its text."""
    setup = tmp_path / "setup.xml"
    text = _SETUP.format(analyses=analyses, extra="" if isinstance(extra, tuple) else extra,
                         initial=0.0, coordinates="ik.mot")
    setup.write_text(text.replace(*extra) if isinstance(extra, tuple) else text)
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "setup.xml: " in err and message in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case, message", [
    ("muscles", "setup.xml: AnalyzeTool 'arm': <force_set_files> add muscles ['BRA2'] with a "
     "MuscleAnalysis, which is not offered"),
    ("reversed", "setup.xml: AnalyzeTool 'arm': <final_time> 0.3 must be after <initial_time> "
     "0.5"),
    ("window", "setup.xml: AnalyzeTool 'arm': <initial_time> -0.1 to <final_time> 0.3 reaches "
     "beyond arm26_InverseKinematics.mot's times (0.0 to 1.0 s): with the lowpass filter on, "
     "OpenSim would analyse its padding there"),
    ("damped", "arm26.osim: muscle 'TRIlong': fiber_damping must be 0 for the explicit "
     "tendon-force model"),
    ("body", "setup.xml: AnalyzeTool 'arm': BodyKinematics 'BodyKinematics': no body named "
     "'hand' in"),
    ("coordinate", "setup.xml: AnalyzeTool 'arm': Kinematics 'Kinematics': coordinate "
     "'r_elbow_flex' is listed twice"),
    ("point", "setup.xml: AnalyzeTool 'arm': PointKinematics 'tip': <relative_to_body_name> "
     "'humerus' is not a body of"),
    ("point_name", "setup.xml: AnalyzeTool 'arm': PointKinematics 'tip': <point_name> names "
     "its files and columns: one word without slashes is needed, got 'a/b'"),
])
def test_setups_refused_by_their_files_are_one_line(tmp_path, capsys, case, message):
    """Refusals of setups written beside the model and coordinates: force set files that add
    a muscle to a MuscleAnalysis' model; a window that ends before it starts; a filtered
    window reaching before the coordinates (OpenSim analyses the padding there: 12 rows
    from -0.1 s before the file's first at 0 s, in a scratch run)."""
    if case == "muscles":
        _muscle_force_set(tmp_path / "more.xml")
        setup = _setup(tmp_path, SO + MA, "<force_set_files>more.xml</force_set_files>")
    elif case == "reversed":
        setup = _setup(tmp_path, SO, initial=0.5)
    elif case in ("body", "coordinate", "point", "point_name"):   # checked before any writes
        kin, body, point = KIN, BODY_KIN, POINT_KIN
        if case == "body":
            body = BODY_KIN.replace("<bodies>all<", "<bodies>r_humerus hand<")
        elif case == "point":    # (OpenSim would report it in ground)
            point = POINT_KIN.replace(">none<", ">humerus<")
        elif case == "point_name":
            point = POINT_KIN.replace("<point_name>tip<", "<point_name>a/b<")
        else:
            kin = KIN.replace("<coordinates>all<", "<coordinates>r_elbow_flex r_elbow_flex<")
        setup = _setup(tmp_path, SO + kin + body + point)
    elif case == "damped":    # a muscle without a state model: no CLI option to suggest
        setup = _setup(tmp_path, MA)
        root = ET.parse(tmp_path / "arm26.osim").getroot()
        to_degroote(root)
        for muscle in root.iter("DeGrooteFregly2016Muscle"):
            ET.SubElement(muscle, "fiber_damping").text = "0.05"
        ET.ElementTree(root).write(tmp_path / "arm26.osim", encoding="unicode")
    else:
        setup = _setup(tmp_path, MA, initial=-0.1)
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert message in err and "--muscle-states" not in err, err
    assert not (tmp_path / "out").exists()


def _check_kinematics(tmp_path, ours_folder, theirs_prefix, names, what, abs_tol=0.0,
                      angles=COORDINATES, rel_tol=REL_TOL_KINEMATICS):
    """Our files `<ours_folder>/<name>.sto` against OpenSim's `<theirs_prefix>_<suffix>.sto`
    (names: {ours: OpenSim's suffix}): same labels and rows, values within abs_tol + rel_tol
    of each file's largest (OpenSim's angles, the coordinates `angles` and the bodies' _O*
    columns, converted from degrees by its header); returns the worst error / tolerance."""
    worst = 0.0
    for ours_name, suffix in names.items():
        theirs = read_storage(tmp_path / "opensim" / f"{theirs_prefix}_{suffix}.sto")
        ours = read_storage(ours_folder / f"{ours_name}.sto")
        # OpenSim 4.6 labels a PointKinematics' columns state_0, state_1, state_2
        mapped = tuple(label if not label.startswith("state_") else ours.labels[k]
                       for k, label in enumerate(theirs.labels))
        assert ours.labels == mapped and not ours.in_degrees, (ours.labels, theirs.labels)
        np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-9)
        values = theirs.data[:, 1:].copy()
        if theirs.in_degrees:
            turning = [k for k, label in enumerate(theirs.labels[1:])
                       if label in angles or "_O" in label]
            values[:, turning] = np.radians(values[:, turning])
        error = np.abs(ours.data[:, 1:] - values).max()
        scale = max(np.abs(values).max(), 1.0)
        print(f"{what}: {ours_name} within {error:.1e} (largest {scale:.3g})")
        worst = max(worst, error / (abs_tol + rel_tol * scale))
    return worst


def test_kinematics_and_body_kinematics_match_opensims_tool(tmp_path, capsys):
    """Kinematics (all coordinates, degrees asked; a second with a list in reverse order),
    BodyKinematics (all bodies and the mass center in ground; a second with a list, the mass
    center listed first, in the bodies' frames) and PointKinematics (a point on the hand in
    ground, and relative to the humerus; a point of ground relative to the humerus) along the IK
    motion at the muscles' default states: every file within REL_TOL_KINEMATICS of OpenSim's.
    The accelerations are OpenSim's forward dynamics at those states, not the motion's (the
    elbow's reach ~1000 rad/s^2 at rest)."""
    local = (BODY_KIN.replace('"BodyKinematics"', '"local"')
             .replace("<bodies>all<", "<bodies>center_of_mass r_ulna_radius_hand r_humerus<")
             .replace("frame>false<", "frame>true<").replace("<in_degrees>true<",
                                                             "<in_degrees>false<"))
    listed = (KIN.replace('"Kinematics"', '"listed"')
              .replace("<coordinates>all<", "<coordinates>r_elbow_flex r_shoulder_elev<"))
    relative = (POINT_KIN.replace('"tip"', '"relative"')
                .replace("<relative_to_body_name>none<",
                         "<relative_to_body_name>r_humerus<"))
    fixed = (relative.replace('"relative"', '"fixed"')
             .replace("<body_name>r_ulna_radius_hand<", "<body_name>ground<"))
    setup = _setup(tmp_path, KIN + BODY_KIN + local + listed + POINT_KIN + relative + fixed)
    summary = _run_both(tmp_path, capsys, setup)
    kin, body, body_local, kin_listed, tip, relative, fixed = summary["analyses"].values()
    assert [a["type"] for a in summary["analyses"].values()] == [
        "Kinematics", "BodyKinematics", "BodyKinematics", "Kinematics", "PointKinematics",
        "PointKinematics", "PointKinematics"]
    assert (tip["body"], tip["relative_to"], relative["relative_to"], fixed["body"]) == (
        "r_ulna_radius_hand", "ground", "r_humerus", "ground")
    assert kin["coordinates"] == list(COORDINATES) and kin["muscle_states"] == "default"
    assert kin_listed["coordinates"] == ["r_elbow_flex", "r_shoulder_elev"]
    assert body["bodies"] == ["base", "r_humerus", "r_ulna_radius_hand"]
    assert body["center_of_mass"] and body_local["center_of_mass"]
    assert body_local["bodies"] == ["r_ulna_radius_hand", "r_humerus"]
    ours = tmp_path / "ours"
    kinematics = {"kinematics_q": "q", "kinematics_u": "u", "kinematics_dudt": "dudt"}
    with capsys.disabled():
        worst = max(
            _check_kinematics(tmp_path, ours / "Kinematics", "arm_Kinematics", kinematics,
                              "Kinematics"),
            _check_kinematics(tmp_path, ours / "listed", "arm_listed", kinematics, "listed"),
            _check_kinematics(tmp_path, ours / "BodyKinematics", "arm_BodyKinematics",
                              {f"body_kinematics_{k}": k for k in
                               ("pos_global", "vel_global", "acc_global")}, "BodyKinematics"),
            _check_kinematics(tmp_path, ours / "local", "arm_local",
                              {f"body_kinematics_{k}": k for k in
                               ("pos_global", "vel_bodyLocal", "acc_bodyLocal")}, "local"),
            *(_check_kinematics(tmp_path, ours / name, f"arm_{name}_tip",
                                {f"point_kinematics_tip_{k}": k for k in ("pos", "vel", "acc")},
                                name) for name in ("tip", "relative", "fixed")))
        print(f"the three kinematics analyses: worst error / tolerance {worst:.2g}")
    assert worst <= 1.0
    dudt = read_storage(ours / "Kinematics" / "kinematics_dudt.sto").column("r_elbow_flex")
    assert np.abs(dudt).max() > 500.0


def test_body_kinematics_on_a_states_file_with_a_load_and_equilibrium(tmp_path, capsys):
    """Along a states file (activations 0.1-0.6, fiber lengths left to equilibrium by
    solve_for_equilibrium_for_auxiliary_states) with the 20-25 N load on the hand: the
    forward dynamics' accelerations take the states, the equilibrium and the load, as
    OpenSim's. The accelerations within EQUILIBRIUM_ACCELERATION (rad/s^2, m/s^2) beside
    REL_TOL_KINEMATICS: OpenSim's equilibrium stops within 1e-8 F_iso (arm26's up to 987 N),
    1e-5 N on a ~0.03 m moment arm moves the forearm (~0.02 kg m^2 about the elbow) by
    ~1e-5 rad/s^2 (observed 1.6e-6); the StatesReporter's equilibrium fiber lengths within
    TOL_M (the muscle analysis' equilibrium tolerance); the rest within REL_TOL_KINEMATICS
    alone."""
    _states_file(tmp_path / "states.sto", activations=True)
    _hand_load(tmp_path)
    setup = _setup(tmp_path, KIN + BODY_KIN + STATES, "<states_file>states.sto</states_file>"
                   "<external_loads_file>hand.xml</external_loads_file>"
                   "<solve_for_equilibrium_for_auxiliary_states>true"
                   "</solve_for_equilibrium_for_auxiliary_states>", initial=0.05)
    summary = _run_both(tmp_path, capsys, setup)
    kin, body, states = summary["analyses"].values()
    assert kin["muscle_states"] == "states_file + equilibrium"
    assert kin["muscle_equilibrium_failed"] == {}
    assert kin["external_loads_file"] == str(tmp_path / "hand.xml")
    assert len(kin["muscle_states_defaulted"]) == 6
    assert kin["setup_values_not_used"] == {"coordinates_file": str(needs(IK)),
                                            "lowpass_cutoff_frequency_for_coordinates": 6.0}
    ours = tmp_path / "ours"
    with capsys.disabled():
        kinematics, body = ours / "Kinematics", ours / "BodyKinematics"
        worst = max(
            _check_kinematics(tmp_path, kinematics, "arm_Kinematics",
                              {"kinematics_q": "q", "kinematics_u": "u"}, "states file"),
            _check_kinematics(tmp_path, kinematics, "arm_Kinematics",
                              {"kinematics_dudt": "dudt"}, "states file",
                              EQUILIBRIUM_ACCELERATION),
            _check_kinematics(tmp_path, body, "arm_BodyKinematics",
                              {f"body_kinematics_{k}": k for k in ("pos_global", "vel_global")},
                              "states file"),
            _check_kinematics(tmp_path, body, "arm_BodyKinematics",
                              {"body_kinematics_acc_global": "acc_global"}, "states file",
                              EQUILIBRIUM_ACCELERATION),
            _check_kinematics(tmp_path, ours / "StatesReporter", "arm_StatesReporter",
                              {"states_reporter_states": "states"}, "states file", TOL_M))
        print(f"states file, hand load, equilibrium: worst error / tolerance {worst:.2g}")
    assert worst <= 1.0


def _kinematics_setup(tmp_path, model: str, final_time_s: float, more: str = ""):
    """setup.xml in tmp_path: a Kinematics and a BodyKinematics (and the analyses `more`) of
    `model` along swing.mot from 0 s, no filter."""
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(analyses=KIN + BODY_KIN + more, extra="", initial=0.0,
                                   coordinates="swing.mot")
                     .replace("arm26.osim", model)
                     .replace("<final_time>0.3<", f"<final_time>{final_time_s}<")
                     .replace("coordinates>6<", "coordinates>-1<"))
    return setup


def test_kinematics_of_a_model_whose_controllers_drive_its_actuators(tmp_path, capsys):
    """double_pendulum.osim (no muscles) whose PrescribedController drives its two
    CoordinateActuators (a Sine; a piecewise constant jumping at 0.3 s and 0.55 s), along a
    made-up motion, no filter: the accelerations, and the Actuation's forces and powers, take
    the controls at each row's time, as OpenSim's. With the controls left out the
    accelerations were 23 rad/s^2 off (a deliberate-bug run), 1e11 times the tolerance."""
    pendulum = SHARED / "reference" / "opensim" / "models" / "double_pendulum.osim"
    controller = (
        '<PrescribedController name="torques"><socket_actuators>/forceset/Torq1 '
        '/forceset/Torq2</socket_actuators><FunctionSet name="ControlFunctions"><objects>'
        "<Sine><amplitude>0.2</amplitude><omega>8</omega><phase>0.3</phase>"
        "<offset>0.3</offset></Sine><PiecewiseConstantFunction><x>0 0.3 0.55</x>"
        "<y>-0.5 1.2 0.2</y></PiecewiseConstantFunction></objects></FunctionSet>"
        "</PrescribedController>")
    write_osim(tmp_path, needs(pendulum).read_text(), with_controllers(controller),
               name="pendulum.osim")
    t = np.linspace(0.0, 1.0, 101)
    write_mot(tmp_path / "swing.mot", t, {"q1": 0.5 * np.sin(3.0 * t),
                                          "q2": 0.3 * np.cos(2.0 * t)}, "swing")
    setup = _kinematics_setup(tmp_path, "pendulum.osim", 0.8, ACTUATION)
    summary = _run_both(tmp_path, capsys, setup)
    assert summary["analyses"]["Kinematics"]["controllers"] == ["torques"]
    ours = tmp_path / "ours"
    with capsys.disabled():
        worst = max(
            _check_kinematics(tmp_path, ours / "Kinematics", "arm_Kinematics",
                              {"kinematics_q": "q", "kinematics_u": "u",
                               "kinematics_dudt": "dudt"}, "pendulum", angles=("q1", "q2")),
            _check_kinematics(tmp_path, ours / "BodyKinematics", "arm_BodyKinematics",
                              {f"body_kinematics_{k}": k for k in
                               ("pos_global", "vel_global", "acc_global")}, "pendulum"),
            _check_kinematics(tmp_path, ours / "Actuation", "arm_Actuation",
                              {f"actuation_{k}": k for k in ("force", "speed", "power")},
                              "pendulum", angles=()))
        print(f"double pendulum driven by its controller: worst error / tolerance {worst:.2g}")
    assert worst <= 1.0


def _check_leg(tmp_path, capsys, what):
    """The leg's Kinematics and BodyKinematics against OpenSim's (the tolerances of
    test_kinematics_of_a_coupled_leg_match_opensims_tool)."""
    loaded = load(tmp_path / "leg.osim")
    angles = [c for c, m in zip(loaded.all_coordinates, output_coordinates(loaded).motion)
              if m == "rotational"]
    kinematics, body = tmp_path / "ours" / "Kinematics", tmp_path / "ours" / "BodyKinematics"
    with capsys.disabled():
        worst = max(
            _check_kinematics(tmp_path, kinematics, "arm_Kinematics",
                              {"kinematics_q": "q", "kinematics_u": "u"}, what, 1e-8, angles),
            _check_kinematics(tmp_path, body, "arm_BodyKinematics",
                              {"body_kinematics_pos_global": "pos_global",
                               "body_kinematics_vel_global": "vel_global"}, what, 1e-8),
            _check_kinematics(tmp_path, kinematics, "arm_Kinematics",
                              {"kinematics_dudt": "dudt"}, what, rel_tol=1e-7, angles=angles),
            _check_kinematics(tmp_path, body, "arm_BodyKinematics",
                              {"body_kinematics_acc_global": "acc_global"}, what,
                              rel_tol=1e-7),
            _check_kinematics(tmp_path, tmp_path / "ours" / "StatesReporter",
                              "arm_StatesReporter", {"states_reporter_states": "states"},
                              what, 1e-8))
        print(f"{what}: worst error / tolerance {worst:.2g}")
    assert worst <= 1.0


def test_kinematics_of_a_coupled_leg_match_opensims_tool(tmp_path, capsys):
    """leg6dof9musc (its patella coordinate a CoordinateCouplerConstraint's, the toes welded;
    9 muscles at their default states) along a synthetic swing whose patella column the
    coupler gives, no filter: the dependent coordinate's q, u, udot, and every body's
    kinematics, the patella's and the welded toes' included. Tolerances: OpenSim assembles
    each row onto the coupler to its accuracy (the coordinates move by up to 1.9e-9 rad,
    seen), so positions and velocities within 1e-8, and accelerations within 1e-7 of each
    file's largest (that pose difference through the muscles' stiff tendons at their default
    fiber lengths: 1.2e-8 of it seen). Without the patella's column the setup is refused:
    OpenSim would hold its speed at 0, against the constraint."""
    (tmp_path / "leg.osim").write_text(needs(REF / "models" / "leg6dof9musc.osim").read_text())
    write_leg_swing(tmp_path / "swing.mot")
    setup = _kinematics_setup(tmp_path, "leg.osim", 0.4, STATES)
    summary = _run_both(tmp_path, capsys, setup)
    kin, body, states = summary["analyses"].values()
    assert "knee_angle_pat_r" in kin["coordinates"] and "patella_r" in body["bodies"]
    assert states["states"].index("/jointset/tib_pat_r/knee_angle_pat_r/value") == 10
    _check_leg(tmp_path, capsys, "coupled leg")
    swing = read_storage(tmp_path / "swing.mot")
    keep = [k for k, label in enumerate(swing.labels) if label != "knee_angle_pat_r"]
    with StorageWriter(tmp_path / "swing.mot", "Coordinates",
                       [swing.labels[k] for k in keep]) as writer:
        writer.write_rows(swing.data[:, keep])
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "swing.mot: no column for 'knee_angle_pat_r', which CoordinateCouplerConstraint" in err
    assert err.count("\n") == 1 and not (tmp_path / "refused").exists()


def test_a_coupled_legs_states_file_needs_the_dependent_speed(tmp_path, capsys):
    """A states file of the leg (the swing's coordinates, speeds by differences, the patella's
    value and speed as its linear coupler gives them, muscles at their defaults): as
    OpenSim's tool (the tolerances of the test above). With the patella's speed 0.01 rad/s
    off the constraint OpenSim would use it; ours keeps g' u and reports the difference. Its
    speed column left out: refused."""
    (tmp_path / "leg.osim").write_text(needs(REF / "models" / "leg6dof9musc.osim").read_text())
    swing = read_storage(write_leg_swing(tmp_path / "swing.mot"))
    joints = {"pelvis_tilt": "ground_pelvis", "pelvis_tx": "ground_pelvis",
              "pelvis_ty": "ground_pelvis", "hip_flexion_r": "hip_r", "knee_angle_r": "knee_r",
              "knee_angle_pat_r": "tib_pat_r", "ankle_angle_r": "ankle_r"}

    def states(path, offset=0.0, speed_of_patella=True):
        labels, columns = ["time"], [swing.time_s]
        for c, joint in joints.items():
            q = swing.column(c)
            labels += [f"/jointset/{joint}/{c}/value", f"/jointset/{joint}/{c}/speed"]
            columns += [q, np.gradient(swing.column(c.replace("_pat", "")), swing.time_s)
                        + offset * (c == "knee_angle_pat_r")]
        keep = [k for k, label in enumerate(labels)
                if speed_of_patella or label != "/jointset/tib_pat_r/knee_angle_pat_r/speed"]
        with StorageWriter(path, "states", [labels[k] for k in keep]) as writer:
            writer.write_rows(np.column_stack(columns)[:, keep])

    states(tmp_path / "states.sto")
    setup = _kinematics_setup(tmp_path, "leg.osim", 0.4, STATES)
    setup.write_text(setup.read_text().replace(
        "<coordinates_file>", "<states_file>states.sto</states_file><coordinates_file>"))
    summary = _run_both(tmp_path, capsys, setup)
    assert summary["analyses"]["Kinematics"]["dependent_speeds_off_constraint"] == {
        "knee_angle_pat_r": 0.0}
    _check_leg(tmp_path, capsys, "coupled leg's states file")
    states(tmp_path / "states.sto", offset=0.01)
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "off")]) == 0
    off = json.loads(capsys.readouterr().out)["analyses"]["Kinematics"]
    assert off["dependent_speeds_off_constraint"]["knee_angle_pat_r"] == pytest.approx(0.01)
    states(tmp_path / "states.sto", speed_of_patella=False)
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert ("states.sto: no column '/jointset/tib_pat_r/knee_angle_pat_r/speed' for "
            "'knee_angle_pat_r'") in err and not (tmp_path / "refused").exists()


def test_kinematics_of_a_locked_arm_match_opensims_tool(tmp_path, capsys):
    """arm26 with its shoulder locked at 0.3 rad (ellipsoids inactive), the IK's elbow alone
    (the locked coordinate's column absent: its locked value): the locked coordinate's q, u,
    udot are 0.3, 0, 0, the arm's kinematics and forward dynamics hold it there, as OpenSim's
    (REL_TOL_KINEMATICS)."""
    model = locked_copy(needs(ARM), tmp_path, "r_shoulder_elev", 0.3, ARM26_ELLIPSOIDS)
    ik = read_storage(needs(IK))
    write_mot(tmp_path / "swing.mot", ik.time_s,
              {"r_elbow_flex": np.radians(ik.column("r_elbow_flex"))}, "Coordinates")
    summary = _run_both(tmp_path, capsys, _kinematics_setup(tmp_path, model.name, 0.3))
    assert summary["analyses"]["Kinematics"]["coordinates"] == list(COORDINATES)
    ours = tmp_path / "ours"
    q, u, udot = (read_storage(ours / "Kinematics" / f"kinematics_{k}.sto").column(
        "r_shoulder_elev") for k in ("q", "u", "dudt"))
    assert np.all(q == 0.3) and not u.any() and not udot.any()
    with capsys.disabled():
        worst = max(
            _check_kinematics(tmp_path, ours / "Kinematics", "arm_Kinematics",
                              {"kinematics_q": "q", "kinematics_u": "u",
                               "kinematics_dudt": "dudt"}, "locked arm"),
            _check_kinematics(tmp_path, ours / "BodyKinematics", "arm_BodyKinematics",
                              {f"body_kinematics_{k}": k for k in
                               ("pos_global", "vel_global", "acc_global")}, "locked arm"))
        print(f"locked arm: worst error / tolerance {worst:.2g}")
    assert worst <= 1.0



def _two_loads(directory):
    """loads.xml over _hand_load's data: "weight" on the hand, its force in the hand's frame
    and its point in ground; "twist" on the humerus, a force in the humerus' frame and a
    torque (hand.mot's point columns), no point; "off" on the humerus with appliesForce
    false."""
    _hand_load(directory)
    text = (directory / "hand.xml").read_text()
    text = (text.replace("<force_expressed_in_body>ground<",
                         "<force_expressed_in_body>r_ulna_radius_hand<")
            .replace("<point_expressed_in_body>r_ulna_radius_hand<",
                     "<point_expressed_in_body>ground<"))
    twist = ('<ExternalForce name="twist"><appliesForce>true</appliesForce>'
             "<applied_to_body>r_humerus</applied_to_body>"
             "<force_expressed_in_body>r_humerus</force_expressed_in_body>"
             "<point_expressed_in_body>ground</point_expressed_in_body>"
             "<force_identifier>h_v</force_identifier><point_identifier></point_identifier>"
             "<torque_identifier>h_p</torque_identifier>"
             "<data_source_name>Unassigned</data_source_name></ExternalForce>")
    off = twist.replace('"twist"', '"off"').replace(">true<", ">false<")
    twist = off + twist         # (before an applying force: its place is skipped)
    (directory / "loads.xml").write_text(text.replace("</ExternalForce></objects>",
                                                      "</ExternalForce>" + twist + "</objects>"))


def test_actuation_and_force_reporter_match_opensims_tool(tmp_path, capsys):
    """Actuation and ForceReporter on arm26 (ellipsoids inactive) with reserve actuators and
    two external forces (a force in the hand's frame at a point given in ground; a force and
    a torque in the humerus' frame), muscles at their default states: every file within
    REL_TOL_KINEMATICS of OpenSim's (the muscles' forces up to ~1.3e4 N at these states). The
    external forces' columns: the force and torque in ground, the point in the applied body's
    frame, as OpenSim's ForceReporter writes them; the force whose appliesForce is false has
    none (OpenSim's labels are compared)."""
    write_reserves(tmp_path / "reserves.xml", COORDINATES, 5.0)
    _two_loads(tmp_path)
    setup = _setup(tmp_path, ACTUATION + FORCES, "<force_set_files>reserves.xml"
                   "</force_set_files><external_loads_file>loads.xml</external_loads_file>")
    summary = _run_both(tmp_path, capsys, setup)
    actuation, forces = summary["analyses"].values()
    assert actuation["actuators"] == forces["forces"] and len(forces["forces"]) == 8
    assert forces["external_forces"] == [
        f"r_ulna_radius_hand_weight_{k}{a}" for k in "Fp" for a in "xyz"] + [
        f"r_humerus_twist_{k}{a}" for k in "FT" for a in "xyz"]
    ours = tmp_path / "ours"
    with capsys.disabled():
        worst = max(
            _check_kinematics(tmp_path, ours / "Actuation", "arm_Actuation",
                              {f"actuation_{k}": k for k in ("force", "speed", "power")},
                              "Actuation", angles=()),
            _check_kinematics(tmp_path, ours / "ForceReporter", "arm_ForceReporter",
                              {"force_reporter_forces": "forces"}, "ForceReporter",
                              angles=()))
        print(f"Actuation and ForceReporter: worst error / tolerance {worst:.2g}")
    assert worst <= 1.0
