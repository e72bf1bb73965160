"""Controls files as OpenSim's ForwardTool reads them (`osim.controls`, `osim forward
--controls FILE.sto|FILE.xml`), against OpenSim 4.6 itself.

* Values: every kind of ControlLinear (linear with and without extrapolation, steps, one
  node), written by OpenSim into a ControlSet .xml and read back by `read_controls`, against
  OpenSim's `ControlLinear.getControlValue` at times before, at, just after, between and past
  the nodes; and CMC's .sto controls against OpenSim's `ControlSet(Storage)` built from the
  same file (what the ForwardTool makes of a .sto), past its last row too. Both sides
  interpolate the same doubles: 1e-12 (observed 0 to ~1e-16).
* A run: arm26 (its ellipsoids inactive in the file both read: compiling them is not what
  this is about) from CMC's states at 0.0534 s (the ForwardTool starts at its row at
  0.05099992 s) for 0.1 s, driven by CMC's controls as CMC writes them into its
  controls.xml (each muscle's control a step function named `<muscle>.excitation`, the
  reserve actuators' linear), BICshort and BRA instead by two-node linear controls that the
  ForwardTool continues past their last node, with CMC's reserve actuators added from a
  ForceSet file (`--force-set`, the tool's force_set_files), against OpenSim's ForwardTool
  itself on the same four files at accuracy 1e-9: the coordinates within 3e-7 rad and the
  fiber lengths within 1e-8 m at the end (the tolerances of the CMC-start tests of
  test_osim_forward_arm26.py; observed when written 4.0e-8 rad, 8e-10 m). Scratch runs with
  the ellipsoids show what each part weighs: CMC's controls read as linear (the .sto) moved
  the elbow 1.2e-4 rad away, and the reserves left out 1.4e-2 rad.
  The setup file the ForwardTool ran, run by `osim run-tool`, gives the same within the
  same tolerance.
* Bad files are one line naming the file, the control and the value (exit status 2).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.controls import read_controls
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_forward_tool
from osim_synthetic import ARM26_ELLIPSOIDS, deactivate, write_osim
from shared_reference import SHARED

OPENSIM = SHARED / "reference" / "opensim"
ARM26 = OPENSIM / "models" / "arm26.osim"
TUG = OPENSIM / "models" / "Tug_of_War.osim"
CMC_STATES = OPENSIM / "data" / "arm26" / "arm26_CMC_states.sto"
CMC_CONTROLS = OPENSIM / "data" / "arm26" / "arm26_CMC_controls.sto"
MUSCLES = ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA")
COORDS = ("/jointset/r_shoulder/r_shoulder_elev/value", "/jointset/r_elbow/r_elbow_flex/value")


def _need(*paths):
    for path in paths:
        if not path.exists():
            pytest.skip(f"{path} is absent (shared/reference not mounted)")


def _linear(osim, name, nodes, use_steps=False, extrapolate=True):
    control = osim.ControlLinear()
    control.setName(name)
    for t, value in nodes:
        control.setControlValue(t, value)
    control.setUseSteps(use_steps)
    control.setExtrapolate(extrapolate)
    return control


def test_controllinear_values_are_opensims(tmp_path):
    osim = opensim_package()
    nodes = [(0.1, 0.2), (0.3, 0.8), (0.5, 0.4), (0.55, 0.9)]
    made = [_linear(osim, "a", nodes), _linear(osim, "b.excitation", nodes, extrapolate=False),
            _linear(osim, "c", nodes, use_steps=True),
            _linear(osim, "d", nodes, use_steps=True, extrapolate=False),
            _linear(osim, "e", [(0.2, 0.7)])]
    control_set = osim.ControlSet()
    control_set.setName("made")
    for control in made:
        control_set.cloneAndAppend(control)
    control_set.printToXML(str(tmp_path / "made.xml"))
    ours = read_controls(tmp_path / "made.xml")
    assert ours.names == ("a", "b", "c", "d", "e")      # CMC's ".excitation" dropped
    times = np.concatenate([[0.0, 0.05, 0.7, 1.0], np.linspace(0.1, 0.55, 46),
                            [t + d for t, _ in nodes for d in (-1e-9, 1e-12, 1e-9)]])
    worst = 0.0
    for control, name in zip(made, ours.names):
        expected = np.array([control.getControlValue(float(t)) for t in times])
        worst = max(worst, np.abs(ours[name].at(times) - expected).max())
    print(f"ControlLinear values: within {worst:.1e} of OpenSim's")
    assert worst <= 1e-12
    assert ours["a"].at([0.0])[0] == pytest.approx(-0.1)   # the first segment continued
    assert ours["b"].at([1.0])[0] == 0.9                   # held


def test_a_sto_becomes_opensims_controlset_of_it():
    osim = opensim_package()
    _need(CMC_CONTROLS)
    theirs = osim.ControlSet(osim.Storage(str(CMC_CONTROLS)))
    ours = read_controls(CMC_CONTROLS)
    table = read_storage(CMC_CONTROLS)
    times = np.concatenate([np.linspace(0.0, 1.2, 241), table.time_s[::7] + 1e-7])
    worst = 0.0
    for k in range(theirs.getSize()):
        control = osim.ControlLinear.safeDownCast(theirs.get(k))
        assert control.getName() == ours.names[k] and not control.getUseSteps()
        expected = np.array([control.getControlValue(float(t)) for t in times])
        worst = max(worst, np.abs(ours[ours.names[k]].at(times) - expected).max())
    print(f"CMC's .sto as controls: within {worst:.1e} of OpenSim's ControlSet")
    assert worst <= 1e-12


RESERVES = ("r_shoulder_elev_reserve", "r_elbow_flex_reserve")


def _reserves_xml(osim, path):
    """CMC's reserve actuators of arm26 as a ForceSet file: a CoordinateActuator on each
    coordinate, optimal force 10 N m, controls unbounded."""
    forces = osim.ForceSet()
    forces.setName("arm26_reserves")
    for name in RESERVES:
        actuator = osim.CoordinateActuator(name.removesuffix("_reserve"))
        actuator.setName(name)
        actuator.setOptimalForce(10.0)
        actuator.setMinControl(-np.inf)
        actuator.setMaxControl(np.inf)
        forces.cloneAndAppend(actuator)
    forces.printToXML(str(path))
    return path


def _cmc_controls_xml(osim, path):
    """CMC's controls as CMC writes them into its controls.xml: its muscles' controls step
    functions named <muscle>.excitation, its reserve actuators' linear; but BICshort and BRA
    linear from 0.05 to 0.1 s, continued past 0.1 s."""
    table = osim.ControlSet(osim.Storage(str(CMC_CONTROLS)))
    written = osim.ControlSet()
    written.setName("arm26_CMC")
    for k in range(table.getSize()):
        control = osim.ControlLinear.safeDownCast(table.get(k)).clone()
        name = control.getName()
        if name in ("BICshort", "BRA"):
            control = _linear(osim, name, [(0.05, 0.1), (0.1, 0.4 if name == "BRA" else 0.3)])
        elif name in MUSCLES:
            control.setUseSteps(True)
            control.setName(f"{name}.excitation")
        written.cloneAndAppend(control)
    written.printToXML(str(path))
    return path


def test_cmcs_step_controls_drive_arm26_as_the_forward_tool_does(tmp_path, capsys):
    osim = opensim_package()
    _need(ARM26, CMC_STATES, CMC_CONTROLS)
    # the file both read has arm26's ellipsoids inactive: compiling them (a minute) is not
    # what this test is about (osim_synthetic.ARM26_ELLIPSOIDS)
    model = write_osim(tmp_path, ARM26.read_text(),
                       lambda root: deactivate(root, ARM26_ELLIPSOIDS), name="arm26.osim")
    controls = _cmc_controls_xml(osim, tmp_path / "controls.xml")
    reserves = _reserves_xml(osim, tmp_path / "reserves.xml")
    status = main(["osim", "forward", str(model), "--out", str(tmp_path / "run"),
                   "--controls", str(controls), "--force-set", str(reserves),
                   "--initial-states", str(CMC_STATES),
                   "--start-s", "0.0534", "--duration-s", "0.1", "--dt-s", "1e-4",
                   "--record-every-s", "0.01", "--accuracy", "1e-9"])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["controls_file"] == "controls.xml" and summary["start_s"] == 0.05099992
    assert summary["force_set_files"] == ["reserves.xml"]
    assert summary["controls_ignored_columns"] == []      # the reserves are driven
    ours = read_storage(tmp_path / "run" / "states.sto")
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", model, controls, CMC_STATES,
                                           0.0534, float(ours.time_s[-1]), 1e-9,
                                           force_set_files=[reserves]))
    assert theirs.time_s[0] == ours.time_s[0] and theirs.time_s[-1] == ours.time_s[-1]
    error_q = max(abs(ours.column(c)[-1] - theirs.column(c)[-1]) for c in COORDS)
    error_fiber = max(abs(ours.column(f"/forceset/{m}/fiber_length")[-1]
                          - theirs.column(f"/forceset/{m}/fiber_length")[-1]) for m in MUSCLES)
    bra = ours.column("/forceset/BRA/activation")[-1]
    print(f"CMC's controls.xml on arm26: q within {error_q:.2e} rad, fiber lengths within "
          f"{error_fiber:.2e} m of the ForwardTool's (BRA activation {bra:.3f})")
    assert bra > 0.5          # past its last node at 0.1 s the line went on to ~0.55
    assert error_q < 3e-7 and error_fiber < 1e-8
    # the setup file the ForwardTool ran, run by `osim run-tool` (forward_setup.py)
    capsys.readouterr()
    assert main(["osim", "run-tool", str(tmp_path / "opensim" / "setup.xml"), "--out",
                 str(tmp_path / "run_tool"), "--record-every-s", "0.01"]) == 0
    assert json.loads(capsys.readouterr().out)["force_set_files"] == ["reserves.xml"]
    tool = read_storage(tmp_path / "run_tool" / "states.sto")
    assert tool.time_s[0] == theirs.time_s[0] and tool.time_s[-1] == theirs.time_s[-1]
    error_tool = max(abs(tool.column(c)[-1] - theirs.column(c)[-1]) for c in COORDS)
    print(f"the same through the ForwardTool's setup file: q within {error_tool:.2e} rad")
    assert error_tool < 3e-7


_LINEAR = ("<ControlLinear name=\"{name}\">{extra}<x_nodes>{nodes}</x_nodes></ControlLinear>")


def _node(t, value):
    return f"<ControlLinearNode><t>{t}</t><value>{value}</value></ControlLinearNode>"


def _control_set(path, *controls):
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">'
                    '<ControlSet name="c"><objects>' + "".join(controls)
                    + "</objects><groups /></ControlSet></OpenSimDocument>")
    return path


_GOOD = _LINEAR.format(name="muscle2", extra="", nodes=_node(0, 0.2) + _node(1, 0.2))


@pytest.mark.parametrize("controls, message", [
    ((_LINEAR.format(name="muscle1", extra="<is_model_control>false</is_model_control>",
                     nodes=_node(0, 0.5)),),
     "ControlLinear 'muscle1' (ControlSet c): is_model_control is false"),
    (('<ControlConstant name="muscle1"><value>0.5</value></ControlConstant>',),
     "ControlConstant 'muscle1' (ControlSet c): only ControlLinear controls are supported"),
    ((_LINEAR.format(name="muscle1", extra="", nodes=""),),
     "ControlLinear 'muscle1' (ControlSet c): the control has no <x_nodes>"),
    ((_LINEAR.format(name="muscle1", extra="", nodes=_node(0.2, 0.5) + _node(0.1, 0.6)),),
     "the node times must increase: node 2 (t = 0.1 s) follows t = 0.2 s"),
    ((_LINEAR.format(name="muscle1", extra="", nodes=_node(0, 0.5)),
      _LINEAR.format(name="muscle1.excitation", extra="", nodes=_node(0, 0.5))),
     "two controls drive actuator 'muscle1'"),
    ((_LINEAR.format(name="muscle1", extra="<use_steps>yes</use_steps>", nodes=_node(0, 0.5)),),
     "<use_steps> must be true or false, got 'yes'"),
    ((_LINEAR.format(name="muscle1", extra="", nodes=_node(0, 0.5) + _node(0.5, 1.3)),),
     "ControlLinear 'muscle1', node 2 (t = 0.5 s): excitation 1.3 is outside [0, 1]"),
    # 0.5 at 0 s rising to 0.9 at 0.1 s reaches 1.3 at 0.2 s, where the run ends
    ((_LINEAR.format(name="muscle1", extra="", nodes=_node(0, 0.5) + _node(0.1, 0.9)),),
     "ControlLinear 'muscle1', extrapolated linearly past its nodes (t = 0.0 .. 0.1 s) as "
     "OpenSim's ControlSetController does, is 1.3"),
])
def test_bad_control_sets_are_one_line(tmp_path, capsys, controls, message):
    _need(TUG)
    path = _control_set(tmp_path / "c.xml", *controls, *(() if "muscle2" in "".join(controls)
                                                        else (_GOOD,)))
    status = main(["osim", "forward", str(TUG), "--out", str(tmp_path / "run"), "--controls",
                   str(path), "--duration-s", "0.2"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "c.xml: " in err and message in err, err
    assert not (tmp_path / "run").exists()
