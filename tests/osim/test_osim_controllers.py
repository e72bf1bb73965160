"""PrescribedControllers (`osim.controllers`): a model's, and a ForwardTool setup's, run as
OpenSim 4.6 runs them, against OpenSim on the same files.

* arm26 (its two ellipsoids inactive) with three controllers in its file: "pc" drives BIClong
  by a StepFunction, TRIlong by a Sine, BRA by a PiecewiseLinearFunction and BICshort (by a
  relative socket path) by a Constant; "pc2" (OpenSim 3's actuator_list) adds a Constant to
  BIClong and drives TRIlat and TRImed by a scaled SimmSpline and a Constant; "off" is
  disabled and would add 0.5 to BRA. 0.3 s at accuracy 1e-11: `osim run-tool` on the
  ForwardTool's setup (from the default state) against the ForwardTool, and `osim forward`
  (activations = excitations, fibers in equilibrium) against OpenSim's Manager from the same
  start: each within 2e-8 rad and 1e-9 m (fibers) at the end (observed 2.2e-9 rad / 3.5e-11 m
  and 8.8e-9 rad / 2.7e-10 m; at 1e-9 the two integrators' errors alone left 2.3e-7 rad on
  this fast swing, so the test runs at 1e-11). Without pc2's 0.1 on BIClong the elbow ends
  0.16 rad away (checked: the sum matters).
* A ForwardTool setup whose ControllerSet holds a ControlSetController (.sto) and a
  PrescribedController (a StepFunction adding up to 0.4, a Sine) driving the same two muscles:
  OpenSim adds them. Tug_of_War_Millard.osim, 0.2 s at 1e-11: every state within 1e-8 of the
  ForwardTool at the end (observed 4.4e-9, an activation; at 1e-9 1.5e-7).
* double_pendulum.osim's CoordinateActuators driven by a Sine and a PiecewiseConstantFunction
  (jumps at 0.3 s and 0.55 s), 0.8 s from rest: rk45 at 1e-10 and RK4 at 0.1 ms each within
  1e-8 rad of OpenSim's Manager at 1e-12 (observed 8.2e-10 and 7.3e-10 rad).
* Refusals are one OsimError naming the file, the controller and the value; an excitation
  given for a muscle replaces its controllers' controls; a sum leaving [0, 1] is refused
  before the run.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim import OsimError, load
from myotwin.osim.forward import Inputs
from myotwin.osim.storage import read_storage
from opensim_live import integrate_to, opensim_package, run_forward_tool
from osim_synthetic import ARM26_ELLIPSOIDS, deactivate, with_controllers, write_osim
from shared_reference import SHARED
from storage_files import write_mot

MODELS = SHARED / "reference" / "opensim" / "models"
ARM26 = MODELS / "arm26.osim"
MILLARD = MODELS / "Tug_of_War_Millard.osim"
#: Both integrators' accuracy: the arm swings fast (the elbow at 4 rad/s), and at 1e-9 their
#: errors left 2.3e-7 rad between them, at 1e-11 2.2e-9 rad (scratch).
ACCURACY = 1e-11

STEP = ("<StepFunction><transition_start_time>0.05</transition_start_time>"
        "<transition_end_time>0.2</transition_end_time><start_value>0.05</start_value>"
        "<end_value>0.6</end_value></StepFunction>")
SINE = ("<Sine><amplitude>0.2</amplitude><omega>20</omega><phase>0.3</phase>"
        "<offset>0.3</offset></Sine>")
LINEAR = ("<PiecewiseLinearFunction><x>0 0.1 0.25</x><y>0.02 0.4 0.1</y>"
          "</PiecewiseLinearFunction>")
SPLINE = ("<MultiplierFunction><function><SimmSpline><x>0 0.1 0.2 0.3</x>"
          "<y>0.2 0.5 0.3 0.6</y></SimmSpline></function><scale>0.5</scale>"
          "</MultiplierFunction>")


def _constant(value: float) -> str:
    return f"<Constant><value>{value}</value></Constant>"


def _controller(name: str, actuators: str, functions: str, extra: str = "") -> str:
    return (f'<PrescribedController name="{name}">{extra}{actuators}'
            f'<FunctionSet name="ControlFunctions"><objects>{functions}</objects>'
            "</FunctionSet></PrescribedController>")


ARM26_CONTROLLERS = (
    _controller("pc", "<socket_actuators>/forceset/BIClong /forceset/TRIlong /forceset/BRA "
                "../../forceset/BICshort</socket_actuators>", STEP + SINE + LINEAR
                + _constant(0.15))
    + _controller("pc2", "<actuator_list>BIClong TRIlat TRImed</actuator_list>",
                  _constant(0.1) + SPLINE + _constant(0.05))
    + _controller("off", "<socket_actuators>/forceset/BRA</socket_actuators>",
                  _constant(0.5), "<enabled>false</enabled>"))


def _arm26_with_controllers(directory, xml: str = ARM26_CONTROLLERS):
    if not ARM26.exists():
        pytest.skip(f"{ARM26} is absent (shared/reference not mounted)")

    def edit(root):
        deactivate(root, ARM26_ELLIPSOIDS)
        with_controllers(xml)(root)
    return write_osim(directory, ARM26.read_text(), edit, "arm26_controlled.osim")


def _final_errors(ours, theirs) -> tuple[float, float]:
    """The largest differences at the end: coordinates (rad) and fiber lengths (m)."""
    assert ours.labels == theirs.labels
    q = max(abs(ours.column(n)[-1] - theirs.column(n)[-1]) for n in ours.labels
            if n.endswith("/value"))
    fiber = max(abs(ours.column(n)[-1] - theirs.column(n)[-1]) for n in ours.labels
                if n.endswith("/fiber_length"))
    return q, fiber


def _opensim_from_equilibrium(model, t_end_s: float, accuracy: float):
    """OpenSim's Manager on `model` (its controllers in place) from its default pose, each
    activation set to its excitation at t = 0 and the muscles equilibrated, as `osim forward`
    starts; ({coordinate: value}, {muscle: fiber length}) at t_end_s."""
    osim = opensim_package()
    m = osim.Model(str(model))
    state = m.initSystem()
    m.realizeVelocity(state)
    excitations = [(mu, mu.getExcitation(state)) for mu in m.getMuscles()]
    for mu, excitation in excitations:
        mu.setActivation(state, excitation)
    m.equilibrateMuscles(state)
    return integrate_to(osim, m, state, t_end_s, accuracy)


def test_a_models_prescribed_controllers_drive_it_as_in_the_forward_tool(tmp_path, capsys):
    model = _arm26_with_controllers(tmp_path)
    loaded = load(model)
    assert [(c.controller, c.actuator, c.function.tag) for c in loaded.prescribed_controls] == [
        ("pc", "BIClong", "StepFunction"), ("pc", "TRIlong", "Sine"),
        ("pc", "BRA", "PiecewiseLinearFunction"), ("pc", "BICshort", "Constant"),
        ("pc2", "BIClong", "Constant"), ("pc2", "TRIlat", "MultiplierFunction"),
        ("pc2", "TRImed", "Constant")]
    # run-tool from the default state (activations 0.05, default fibers), as the ForwardTool
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", model, None, None, 0.0, 0.3,
                                           ACCURACY))
    assert main(["osim", "run-tool", str(tmp_path / "opensim" / "setup.xml"), "--out",
                 str(tmp_path / "run-tool"), "--record-every-s", "0.01"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["controllers"] == ["pc", "pc2"] and summary["controls_overridden"] == []
    q, fiber = _final_errors(read_storage(tmp_path / "run-tool" / "states.sto"), theirs)
    # osim forward from activations = excitations, fibers in equilibrium, as OpenSim's Manager
    assert main(["osim", "forward", str(model), "--duration-s", "0.3", "--accuracy",
                 str(ACCURACY), "--out", str(tmp_path / "forward"),
                 "--record-every-s", "0.01"]) == 0
    assert json.loads(capsys.readouterr().out)["controllers"] == ["pc", "pc2"]
    ours = read_storage(tmp_path / "forward" / "states.sto")
    coordinates, fibers = _opensim_from_equilibrium(model, 0.3, ACCURACY)
    joints = {"r_shoulder_elev": "r_shoulder", "r_elbow_flex": "r_elbow"}
    q_forward = max(abs(ours.column(f"/jointset/{joints[c]}/{c}/value")[-1] - v)
                    for c, v in coordinates.items())
    fiber_forward = max(abs(ours.column(f"/forceset/{n}/fiber_length")[-1] - v)
                        for n, v in fibers.items())
    with capsys.disabled():
        print(f"arm26 driven by its PrescribedControllers, 0.3 s: run-tool within {q:.1e} rad "
              f"and {fiber:.1e} m (fibers) of the ForwardTool; osim forward within "
              f"{q_forward:.1e} rad and {fiber_forward:.1e} m of OpenSim's Manager")
    assert q <= 2e-8 and fiber <= 1e-9
    assert q_forward <= 2e-8 and fiber_forward <= 1e-9
    # Counterfactual: without pc2's 0.1 on BIClong the elbow ends elsewhere.
    (tmp_path / "other").mkdir()
    other = _arm26_with_controllers(tmp_path / "other", ARM26_CONTROLLERS.replace(
        _constant(0.1), _constant(0.0)))
    setup = tmp_path / "opensim" / "setup.xml"
    setup.write_text(setup.read_text().replace(str(model), str(other)))
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "other_run"),
                 "--record-every-s", "0.01"]) == 0
    capsys.readouterr()
    moved, _ = _final_errors(read_storage(tmp_path / "other_run" / "states.sto"), theirs)
    with capsys.disabled():
        print(f"  without pc2's 0.1 on BIClong: {moved:.1e} rad away")
    assert moved > 1e-3


def test_a_setups_prescribed_controller_adds_to_its_controls_file(tmp_path, capsys):
    if not MILLARD.exists():
        pytest.skip(f"{MILLARD} is absent (shared/reference not mounted)")
    controls = write_mot(tmp_path / "u.sto", np.array([0.0, 0.1, 0.3]),
                         {"RightMuscle": np.array([0.1, 0.5, 0.3]),
                          "LeftMuscle": np.array([0.2, 0.2, 0.4])}, name="controls")
    run_forward_tool(tmp_path / "opensim", MILLARD, controls, None, 0.0, 0.2, ACCURACY)
    setup = tmp_path / "opensim" / "setup.xml"
    extra = _controller("adds", "<socket_actuators>/forceset/RightMuscle "
                        "/forceset/LeftMuscle</socket_actuators>",
                        STEP.replace("0.6", "0.4") + SINE.replace("0.3</offset>",
                                                                  "0.25</offset>"))
    text = setup.read_text()
    at = text.index("</ControlSetController>") + len("</ControlSetController>")
    setup.write_text(text[:at] + extra + text[at:])
    opensim_package().ForwardTool(str(setup)).run()
    theirs = read_storage(tmp_path / "opensim" / "forward_states.sto")
    assert main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "ours"),
                 "--record-every-s", "0.01"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["controllers"] == ["adds"] and summary["controls_file"].endswith("u.sto")
    ours = read_storage(tmp_path / "ours" / "states.sto")
    error = max(abs(ours.column(n)[-1] - theirs.column(n)[-1]) for n in ours.labels[1:])
    with capsys.disabled():
        print(f"Tug_of_War_Millard, a controls file plus a PrescribedController: within "
              f"{error:.1e} of the ForwardTool after 0.2 s")
    assert error <= 1e-8


def test_excitation_replaces_a_controllers_control_and_sums_are_checked(tmp_path, capsys):
    model = _arm26_with_controllers(tmp_path)
    loaded = load(model)
    inputs = Inputs(loaded, {"BIClong": 0.3})
    assert inputs.overridden == ["BIClong"]
    t = np.array([0.0, 0.125, 0.3])
    step = 0.05 + 0.55 * np.array([0.0, 0.5, 1.0])       # the quintic is 1/2 at mid-way
    expected = {"BIClong": [0.3] * 3, "BICshort": [0.15] * 3, "TRImed": [0.05] * 3,
                "TRIlong": 0.2 * np.sin(20 * t + 0.3) + 0.3}
    got = inputs.excitation(t)
    for name, values in expected.items():
        assert np.allclose(got[:, loaded.muscle_names.index(name)], values, atol=1e-15), name
    plain = Inputs(loaded)
    assert np.allclose(plain.excitation(t)[:, loaded.muscle_names.index("BIClong")],
                       step + 0.1, atol=1e-15)
    # pc2's constant raised to 0.5 puts BIClong's sum past 1 after the step
    (tmp_path / "sum").mkdir()
    too_much = _arm26_with_controllers(tmp_path / "sum", ARM26_CONTROLLERS.replace(
        _constant(0.1), _constant(0.5)))
    assert main(["osim", "forward", str(too_much), "--duration-s", "0.3",
                 "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert ("the excitation of muscle 'BIClong' (StepFunction of PrescribedController 'pc' "
            "(arm26_controlled.osim) + Constant of PrescribedController 'pc2'") in err, err
    assert "outside [0, 1]" in err and not (tmp_path / "refused").exists()


@pytest.mark.parametrize("xml, message", [
    (_controller("p", "<socket_actuators>BIClong</socket_actuators>", _constant(0.1)),
     "PrescribedController 'p': <socket_actuators> path 'BIClong' leads to "
     "'/controllerset/p/BIClong', not to a force of the ForceSet"),
    (_controller("p", "<socket_actuators>/forceset/BIClong /forceset/BRA</socket_actuators>",
                 _constant(0.1)),
     "its FunctionSet has 1 functions for 2 actuators ['BIClong', 'BRA']"),
    (_controller("p", "<actuator_list>BIClong BIClong</actuator_list>",
                 _constant(0.1) + _constant(0.2)), "lists actuator 'BIClong' twice"),
    (_controller("p", "<actuator_list>nope</actuator_list>", _constant(0.1)),
     "drives 'nope', which is not a muscle or CoordinateActuator"),
    (_controller("p", "<actuator_list>BIClong</actuator_list>", "<Constant/>",
                 "<controls_file>u.sto</controls_file>"), "<controls_file> 'u.sto' is not "
     "offered"),
    (_controller("p", "<actuator_list>BIClong</actuator_list>",
                 "<ExpressionBasedFunction/>"), "ExpressionBasedFunction is not a supported "
     "function type here"),
    ('<ControlSetController name="c"><controls_file>u.sto</controls_file>'
     "</ControlSetController>", "a ControlSetController in the model is not run: give its "
     "controls file to --controls"),
    ('<ToyReflexController name="r"/>', "ToyReflexController is not a supported controller"),
    (_controller("p", "<actuator_list>BIClong</actuator_list>", _constant(0.1)).replace(
        'name="ControlFunctions"', 'name="f"'), "<FunctionSet name='f'>: OpenSim 4.6 reads "
     "the controls from the FunctionSet named ControlFunctions"),
])
def test_bad_controllers_are_one_osim_error(tmp_path, xml, message):
    model = _arm26_with_controllers(tmp_path, xml)
    with pytest.raises(OsimError) as info:
        load(model)
    assert "arm26_controlled.osim: " in str(info.value) and message in str(info.value), (
        str(info.value))


def test_omit_takes_a_controller_and_refuses_one_driving_an_omitted_muscle(tmp_path, capsys):
    model = _arm26_with_controllers(tmp_path)
    with pytest.raises(OsimError, match="drives 'BRA', which omit leaves out: omit the "
                                        "controller \\('pc'\\) too"):
        load(model, omit=("BRA",))
    loaded = load(model, omit=("BRA", "pc", "off"))   # "off" drives BRA too (disabled)
    assert {c.controller for c in loaded.prescribed_controls} == {"pc2"}
    assert loaded.omitted == ("BRA", "pc", "off")
    assert main(["osim", "check", str(model), "--omit", "BRA", "pc", "off"]) == 0
    assert json.loads(capsys.readouterr().out)["prescribed_controls"] == [
        {"controller": "pc2", "actuator": name, "function": tag} for name, tag in (
            ("BIClong", "Constant"), ("TRIlat", "MultiplierFunction"), ("TRImed", "Constant"))]


PENDULUM = MODELS / "double_pendulum.osim"
JUMPS = ("<PiecewiseConstantFunction><x>0 0.3 0.55</x><y>-0.5 1.2 0.2</y>"
         "</PiecewiseConstantFunction>")


@pytest.mark.parametrize("integrator, options, tolerance", [
    ("rk45", ["--accuracy", "1e-10"], 1e-8),
    # a fixed step holds each input at its midpoint: the jumps at 0.3 s and 0.55 s fall on
    # step boundaries, so the held values are the right ones (observed 7.3e-10)
    ("rk4", ["--dt-s", "1e-4"], 1e-8)])
def test_coordinate_actuators_driven_by_a_controller_match_opensims_manager(
        tmp_path, capsys, integrator, options, tolerance):
    # double_pendulum.osim's two CoordinateActuators (optimal_force 1): Torq1 by a Sine,
    # Torq2 by a PiecewiseConstantFunction jumping at 0.3 s and 0.55 s; 0.8 s from rest.
    if not PENDULUM.exists():
        pytest.skip(f"{PENDULUM} is absent (shared/reference not mounted)")
    model = write_osim(tmp_path, PENDULUM.read_text(), with_controllers(_controller(
        "torques", "<socket_actuators>/forceset/Torq1 /forceset/Torq2</socket_actuators>",
        SINE.replace("<omega>20", "<omega>8") + JUMPS)), "pendulum.osim")
    assert main(["osim", "forward", str(model), "--duration-s", "0.8", "--integrator",
                 integrator, *options, "--record-every-s", "0.1", "--out",
                 str(tmp_path / "ours")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["controllers"] == ["torques"]
    osim = opensim_package()
    m = osim.Model(str(model))
    reference, _ = integrate_to(osim, m, m.initSystem(), 0.8, 1e-12)
    error = max(abs(summary["final_q"][k] - v) for k, v in reference.items())
    with capsys.disabled():
        print(f"double pendulum, Torq1 a Sine and Torq2 a piecewise constant ({integrator}):"
              f" within {error:.1e} rad of OpenSim's Manager at 0.8 s")
    assert error <= tolerance


def test_tools_that_do_not_run_the_model_forward_read_its_controllers_past(tmp_path):
    # A controller type we do not run: refused where the model runs forward (with the way out:
    # omit it), read past by static optimization and muscle analysis, whose results do not
    # depend on controls (each then fails on its missing coordinates file, past the model).
    from myotwin.osim import muscle_analysis, static_optimization

    model = _arm26_with_controllers(tmp_path, '<ToyReflexController name="r"/>')
    with pytest.raises(OsimError, match=r"ToyReflexController is not a supported controller .*"
                                        r"pass omit=\('r',\) to load the model without it"):
        load(model)
    assert load(model, controllers=False).prescribed_controls == ()
    assert load(model, omit=("r",)).omitted == ("r",)
    missing = tmp_path / "missing.mot"
    for run in (static_optimization.run, muscle_analysis.run):
        with pytest.raises(ValueError, match="missing.mot"):
            run(model, missing, tmp_path / "out")
