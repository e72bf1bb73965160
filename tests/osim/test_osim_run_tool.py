"""`myotwin osim run-tool SETUP.xml` (`osim.forward_setup`): an OpenSim ForwardTool setup file
run as `opensim-cmd run-tool` runs it, against OpenSim 4.6's ForwardTool on the same file.

* Without a states file the tool starts from the model's default state, not in equilibrium:
  Tug_of_War_Millard.osim starts with both muscles at their default activation 1 and fiber
  length 0.1 m (an equilibrium would differ), driven by a .sto of two linear controls, 0.2 s at
  integrator_error_tolerance 1e-9: the block's position and speed and the muscle states within
  1e-8 (m, m/s, activation) at the end (observed 6e-10 m, 1.7e-9 m/s when written). The
  arm26 run from CMC's states, controls and reserves through the setup the ForwardTool ran is
  in test_osim_controls.py.
* The default state's speeds are the coordinates' default_speed_value: double_pendulum.osim
  with q1 at 1.5 rad/s and q2 at -2 rad/s, 0.5 s at 1e-10 from its default state, within
  1e-8 rad and 1e-7 rad/s of the ForwardTool at the end (without the speeds the rods end
  more than 0.1 rad away); a nonzero default speed on a coupled coordinate is refused (OpenSim
  projects it onto the constraint).
* solve_for_equilibrium_for_auxiliary_states from the default state: Tug_of_War.osim with
  muscle2's default_fiber_length -0.1 m (refused without equilibrium: no state to start
  from) starts in OpenSim's equilibrium, as the ForwardTool starts it (OpenSim's Thelen
  equilibrium does not start from the fiber's length): fiber lengths within 1e-8 m at the
  start (observed 3e-17), the block within 1e-8 m after 0.1 s at 1e-11 (observed 1.9e-9; at
  1e-9 the two integrators' errors left 2.9e-8).
* replace_force_set true: arm26's muscles give way to two reserve actuators of a ForceSet
  file driven by a .sto, 0.3 s at 1e-9 from the default state: run-tool on the ForwardTool's
  setup and `osim forward --force-set F --replace-force-set` each within 1e-8 rad of the
  ForwardTool at the end.
* Bad setups are one line naming the file, the property and the value (exit status 2).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_forward_tool
from osim_synthetic import TINY, coupled_pair, set_text, write_osim, write_reserves
from shared_reference import SHARED
from storage_files import write_mot

MODELS = SHARED / "reference" / "opensim" / "models"
MILLARD = MODELS / "Tug_of_War_Millard.osim"
PENDULUM = MODELS / "double_pendulum.osim"
ARM26 = MODELS / "arm26.osim"
MUSCLES = ("RightMuscle", "LeftMuscle")


def _needs_model():
    if not MILLARD.exists():
        pytest.skip(f"{MILLARD} is absent (shared/reference not mounted)")


def test_a_setup_without_states_starts_from_the_models_default_state(tmp_path, capsys):
    _needs_model()
    import numpy as np

    controls = write_mot(tmp_path / "u.sto", np.array([0.0, 0.1, 0.3]),
                         {"RightMuscle": np.array([0.1, 0.9, 0.5]),
                          "LeftMuscle": np.array([0.6, 0.3, 0.5])}, name="controls")
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", MILLARD, controls, None, 0.0,
                                           0.2, 1e-9))
    status = main(["osim", "run-tool", str(tmp_path / "opensim" / "setup.xml"), "--out",
                   str(tmp_path / "ours"), "--record-every-s", "0.01"])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["initial_states"]["file"] == "the model's default state"
    assert summary["controls_file"] == "u.sto" and summary["accuracy"] == 1e-9
    written = json.loads((tmp_path / "ours" / "summary.json").read_text())
    assert (written["tool_type"], written["setup"]) == ("ForwardTool", "setup.xml")
    ours = read_storage(tmp_path / "ours" / "states.sto")
    assert ours.time_s[0] == 0.0 and ours.time_s[-1] == pytest.approx(0.2, abs=1e-12)
    for m in MUSCLES:     # the defaults as written, no equilibrium
        assert ours.column(f"/forceset/{m}/activation")[0] == 1.0
        assert ours.column(f"/forceset/{m}/fiber_length")[0] == 0.1
    error = max(abs(ours.column(label)[-1] - theirs.column(label)[-1])
                for label in ours.labels[1:])
    print(f"Tug_of_War_Millard from its default state: within {error:.1e} of the ForwardTool")
    assert error <= 1e-8


def test_the_default_state_starts_at_the_coordinates_default_speeds(tmp_path, capsys):
    if not PENDULUM.exists():
        pytest.skip(f"{PENDULUM} is absent (shared/reference not mounted)")
    speeds = {"q1": 1.5, "q2": -2.0}

    def spin(root):
        for name, value in speeds.items():
            set_text(root, f".//Coordinate[@name='{name}']/default_speed_value", repr(value))

    model = write_osim(tmp_path, PENDULUM.read_text(), spin, "spinning.osim")
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", model, None, None, 0.0, 0.5,
                                           1e-10))
    status = main(["osim", "run-tool", str(tmp_path / "opensim" / "setup.xml"), "--out",
                   str(tmp_path / "ours"), "--record-every-s", "0.05"])
    assert status == 0
    capsys.readouterr()
    ours = read_storage(tmp_path / "ours" / "states.sto")
    for name, value in speeds.items():
        label = f"/jointset/{name.replace('q', 'pin')}/{name}"
        assert ours.column(f"{label}/speed")[0] == value
        assert theirs.column(f"{label}/speed")[0] == value
        angle = abs(ours.column(f"{label}/value")[-1] - theirs.column(f"{label}/value")[-1])
        speed = abs(ours.column(f"{label}/speed")[-1] - theirs.column(f"{label}/speed")[-1])
        print(f"{name} after 0.5 s: {angle:.1e} rad, {speed:.1e} rad/s from the ForwardTool")
        assert angle <= 1e-8 and speed <= 1e-7


def test_a_default_speed_on_a_coupled_coordinate_is_refused(tmp_path, capsys):
    def couple_and_spin(root):
        coupled_pair(root)
        ET.SubElement(root.find(".//Coordinate[@name='theta']"),
                      "default_speed_value").text = "0.5"

    model = write_osim(tmp_path, TINY, couple_and_spin)
    status = main(["osim", "forward", str(model), "--out", str(tmp_path / "out"),
                   "--duration-s", "0.01", "--excitation", "0.1"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert ("tiny.osim: coordinate 'theta' has default_speed_value 0.5 and is coupled by "
            "CoordinateCouplerConstraint 'couple'") in err, err


def test_a_fiber_of_no_length_starts_in_equilibrium_as_in_the_forward_tool(tmp_path, capsys):
    tug = MODELS / "Tug_of_War.osim"
    if not tug.exists():
        pytest.skip(f"{tug} is absent (shared/reference not mounted)")

    def shrink(root):
        set_text(root, ".//Thelen2003Muscle[@name='muscle2']/default_fiber_length", "-0.1")

    model = write_osim(tmp_path, tug.read_text(), shrink, "tug.osim")
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", model, None, None, 0.0, 0.1,
                                           1e-11, solve_for_equilibrium=True))
    setup = tmp_path / "opensim" / "setup.xml"
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "ours"),
                 "--record-every-s", "0.01"]) == 0
    capsys.readouterr()
    ours = read_storage(tmp_path / "ours" / "states.sto")
    fibers = [f"/forceset/{m}/fiber_length" for m in ("muscle1", "muscle2")]
    start = max(abs(ours.column(f)[0] - theirs.column(f)[0]) for f in fibers)
    block = "/jointset/ground_block/block_tz/value"
    end = abs(ours.column(block)[-1] - theirs.column(block)[-1])
    with capsys.disabled():
        print(f"Tug_of_War, muscle2's fiber from -0.1 m into equilibrium: fibers within "
              f"{start:.1e} m at the start ({theirs.column(fibers[1])[0]:.4f} m), the block "
              f"within {end:.1e} m after 0.1 s")
    assert start <= 1e-8 and end <= 1e-8
    # without the equilibrium there is no state to start from
    setup.write_text(setup.read_text().replace(
        "<solve_for_equilibrium_for_auxiliary_states>true<",
        "<solve_for_equilibrium_for_auxiliary_states>false<"))
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "refused")]) == 2
    assert "default_fiber_length -0.1 m is not positive" in capsys.readouterr().err


def test_force_set_files_replace_the_models_forces_as_in_the_forward_tool(tmp_path, capsys):
    if not ARM26.exists():
        pytest.skip(f"{ARM26} is absent (shared/reference not mounted)")
    import numpy as np

    reserves = write_reserves(tmp_path / "reserves.xml", ("r_shoulder_elev", "r_elbow_flex"))
    controls = write_mot(tmp_path / "u.sto", np.array([0.0, 0.2, 0.3]),
                         {"r_shoulder_elev_reserve": np.array([0.5, 1.5, 1.0]),
                          "r_elbow_flex_reserve": np.array([0.2, -0.4, 0.1])}, name="controls")
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", ARM26, controls, None, 0.0,
                                           0.3, 1e-9, force_set_files=[reserves],
                                           replace_force_set=True))
    runs = {"run-tool": ["osim", "run-tool", str(tmp_path / "opensim" / "setup.xml")],
            "forward": ["osim", "forward", str(ARM26), "--force-set", str(reserves),
                        "--replace-force-set", "--controls", str(controls), "--duration-s",
                        "0.3", "--accuracy", "1e-9"]}
    for name, command in runs.items():
        out = tmp_path / name
        assert main(command + ["--out", str(out), "--record-every-s", "0.01"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["force_set_replaced"] is True and summary["final_activation"] == {}
        ours = read_storage(out / "states.sto")
        assert ours.labels == theirs.labels      # the muscles' states are gone in both
        error = max(abs(ours.column(label)[-1] - theirs.column(label)[-1])
                    for label in ours.labels[1:] if label.endswith("/value"))
        moved = abs(ours.column("/jointset/r_elbow/r_elbow_flex/value")[-1])
        with capsys.disabled():
            print(f"arm26, its forces replaced by reserves ({name}): within {error:.1e} rad "
                  f"of the ForwardTool (the elbow moved {moved:.2f} rad)")
        assert error <= 1e-8


_SETUP = """<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">
<ForwardTool name="run"><model_file>{model}</model_file>{extra}
<initial_time>0</initial_time><final_time>0.1</final_time></ForwardTool></OpenSimDocument>"""


@pytest.mark.parametrize("extra, message", [
    ('<AnalysisSet name="a"><objects><JointReaction name="k"/></objects></AnalysisSet>',
     "JointReaction 'k' (AnalysisSet a): only Kinematics, BodyKinematics, PointKinematics, "
     "Actuation, ForceReporter, StatesReporter, MuscleAnalysis are run (this analysis is "
     "on)"),
    ('<ControllerSet name="c"><objects><ToyReflexController name="p"/></objects>'
     "</ControllerSet>", "ToyReflexController 'p' (ControllerSet c): only a "
     "ControlSetController (a controls file) and PrescribedControllers can drive the run"),
    ("<use_specified_dt>true</use_specified_dt>", "<use_specified_dt> is not part of the "
     "supported subset"),
    # OpenSim 3's controls_file property beside OpenSim 4's ControlSetController
    ("<controls_file>a.sto</controls_file><ControllerSet name=\"c\"><objects>"
     "<ControlSetController><controls_file>b.xml</controls_file></ControlSetController>"
     "</objects></ControllerSet>", "2 controls files are given; one can drive the run"),
    ("<integrator_error_tolerance>0</integrator_error_tolerance>",
     "<integrator_error_tolerance> must be in (0, 1), got 0.0"),
])
def test_bad_setups_are_one_line(tmp_path, capsys, extra, message):
    _needs_model()
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(model=MILLARD, extra=extra))
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "setup.xml: " in err and message in err, err
    assert not (tmp_path / "out").exists()


def test_a_setup_whose_times_are_reversed_or_model_missing_is_refused(tmp_path, capsys):
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(model="missing.osim", extra="").replace(
        "<final_time>0.1</final_time>", "<final_time>0</final_time>"))
    assert main(["osim", "run-tool", str(setup)]) == 2
    assert "<final_time> 0.0 must be after <initial_time> 0.0" in capsys.readouterr().err
    setup.write_text(_SETUP.format(model="missing.osim", extra=""))
    assert main(["osim", "run-tool", str(setup)]) == 2
    assert "missing.osim: cannot read the file" in capsys.readouterr().err


@pytest.mark.parametrize("text, args, message", [
    ('<OpenSimDocument Version="40600"><CMCTool name="cmc"/></OpenSimDocument>', [],
     "setup.xml: CMCTool setups are not run (these are: ForwardTool, InverseKinematicsTool, "
     "InverseDynamicsTool, AnalyzeTool)"),
    ('<OpenSimDocument Version="40600"><ForwardTool/><ForwardTool/></OpenSimDocument>', [],
     "setup.xml: an OpenSimDocument holding one tool is expected, got ['ForwardTool', "
     "'ForwardTool']"),
    ('<ForwardTool name="run"/>', [],
     "setup.xml: the root element must be OpenSimDocument, got <ForwardTool>"),
    ('<OpenSimDocument Version="40600"><InverseKinematicsTool name="ik"/></OpenSimDocument>',
     ["--record-every-s", "0.01"], "--record-every-s is for ForwardTool setups; "),
    ('<OpenSimDocument Version="40600"><InverseKinematicsTool name="ik"><IKTaskSet>'
     "<objects/></IKTaskSet></InverseKinematicsTool></OpenSimDocument>", [],
     "setup.xml: InverseKinematicsTool: <model_file> is empty"),
])
def test_a_setup_of_a_tool_that_does_not_run_is_one_line(tmp_path, capsys, text, args,
                                                         message):
    setup = tmp_path / "setup.xml"
    setup.write_text(text)
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert message in err, err
    assert not (tmp_path / "out").exists()


_TUTORIAL_FORWARD = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="20302">
  <ForwardTool name="arm26">
    <model_file> arm26.osim </model_file>
    <replace_force_set> false </replace_force_set>
    <force_set_files> </force_set_files>
    <results_directory> Results </results_directory>
    <output_precision> 8 </output_precision>
    <initial_time>       0.00000000 </initial_time>
    <final_time>       0.10000000 </final_time>
    <solve_for_equilibrium_for_auxiliary_states> true </solve_for_equilibrium_for_auxiliary_states>
    <maximum_number_of_integrator_steps> 30000 </maximum_number_of_integrator_steps>
    <maximum_integrator_step_size>       1.00000000 </maximum_integrator_step_size>
    <minimum_integrator_step_size>       0.00000001 </minimum_integrator_step_size>
    <integrator_error_tolerance>       0.00000000001 </integrator_error_tolerance>
    <AnalysisSet name="Analyses"><objects/><groups/></AnalysisSet>
    <ControllerSet name="Controllers">
      <objects>
        <ControlSetController name="">
          <actuator_list> </actuator_list>
          <isDisabled> {disabled} </isDisabled>
          <controls_file> controls.sto </controls_file>
        </ControlSetController>
      </objects>
      <groups/>
    </ControllerSet>
    <external_loads_file>  </external_loads_file>
    <states_file>  </states_file>
  </ForwardTool>
</OpenSimDocument>
"""


def test_a_setup_in_the_form_of_opensims_arm26_tutorial_runs_as_the_forward_tool(
        tmp_path, capsys, monkeypatch):
    """The properties of OpenSim's arm26 tutorial ForwardTool setup (a Version 20302 file,
    values padded with spaces, OpenSim 2's isDisabled, an empty actuator_list), isDisabled
    true: OpenSim 4.6 applies the controls file all the same, and so does run-tool. arm26
    (ellipsoids inactive) from the default state in equilibrium, 0.1 s at 1e-11 (at 1e-9 the
    two integrators' errors left 1.2e-7 rad): within 2e-8 rad of the ForwardTool run in the
    setup's folder, as opensim-cmd run-tool runs (observed 7.0e-9). Controls ignored on either
    side would show: with every excitation 0 the arm ends 0.60 rad away (scratch)."""
    if not ARM26.exists():
        pytest.skip(f"{ARM26} is absent (shared/reference not mounted)")
    import numpy as np

    from osim_synthetic import ARM26_ELLIPSOIDS, deactivate

    write_osim(tmp_path, ARM26.read_text(), lambda root: deactivate(root, ARM26_ELLIPSOIDS),
               "arm26.osim")
    excitations = {"TRIlong": 0.1, "TRIlat": 0.1, "TRImed": 0.1, "BIClong": 0.5,
                   "BICshort": 0.5, "BRA": 0.5}
    write_mot(tmp_path / "controls.sto", np.array([0.0, 1.0]),
              {m: np.array([u, u]) for m, u in excitations.items()}, name="controls")
    setup = tmp_path / "setup.xml"
    setup.write_text(_TUTORIAL_FORWARD.format(disabled="true"))
    opensim = opensim_package()
    with monkeypatch.context() as patch:
        patch.chdir(tmp_path)
        opensim.ForwardTool(str(setup)).run()
    theirs = read_storage(tmp_path / "Results" / "arm26_states.sto")
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "ours"),
                 "--record-every-s", "0.01"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["controls_file"].endswith("controls.sto")
    ours = read_storage(tmp_path / "ours" / "states.sto")
    error = max(abs(float(np.interp(0.1, theirs.time_s, theirs.column(n)))
                    - ours.column(n)[-1]) for n in ours.labels if n.endswith("/value"))
    with capsys.disabled():
        print(f"arm26 tutorial-form ForwardTool setup (isDisabled true): within {error:.1e} "
              "rad of the ForwardTool")
    assert error <= 2e-8


def test_a_run_out_of_steps_leaves_the_setups_summary(tmp_path, capsys):
    # a ForwardTool run that stops (its integrator out of steps: maximum_number_of_integrator_
    # steps 20 at tolerance 1e-12) writes the rows before it and the summary, with the setup's
    # names, as a finished one does (exit status 3)
    _needs_model()
    setup = tmp_path / "setup.xml"
    setup.write_text(_SETUP.format(model=MILLARD, extra=(
        "<integrator_error_tolerance>1e-12</integrator_error_tolerance>"
        "<maximum_number_of_integrator_steps>20</maximum_number_of_integrator_steps>")))
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")]) == 3
    assert "max_steps attempts" in capsys.readouterr().err
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (written["tool_type"], written["setup"], written["tool"]) == (
        "ForwardTool", "setup.xml", "run")
    assert written["diverged"] is True and written["integrator_status"] == "max_steps"
