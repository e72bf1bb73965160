"""`myotwin osim static-optimization` (osim/static_optimization.py) against OpenSim 4.6's
StaticOptimization analysis, run here by its AnalyzeTool on the same files (optimizer
convergence criterion 1e-10; it prints activations to 8 decimals).

* arm26.osim (six Thelen2003Muscles, three pennated) along the tutorial's IK result with a
  6 Hz lowpass, 121 times: activations within 1e-6 (observed 1.9e-7: OpenSim's optimizer
  stops with a constraint violation ~6e-6 rad/s^2, ours at 1e-12), forces within 1e-3 N
  (the activations' tolerance times 1000 N; observed 9.5e-5 N on forces of hundreds of N).
  Then, on 0-0.3 s, the activation exponent 3 and use_muscle_physiology false (force per
  unit activation = max isometric force). With the exponent 3 the objective's slope 3 a^2 is
  1e4 times flatter at the lower bound 0.01 than at 1, and OpenSim's optimizer stops further
  from the minimum: 2e-5 (observed 7.2e-6).
* arm26 with its muscles made DeGrooteFregly2016Muscles (`osim_synthetic.to_degroote`,
  compliant tendons): OpenSim's force per unit activation is then the active fiber force
  along the fiber (no cosine of pennation), which the pennated triceps check.
* leg6dof9musc with pelvis residual actuators along a synthetic swing: the patella's
  coupler and the knee's spline translations (tau on the independent coordinates), and
  CoordinateActuators among the controls.
* double_pendulum.osim: CoordinateActuators alone, an exactly determined problem.
* Muscle flags static optimization does not use (ignore_activation_dynamics,
  ignore_passive_fiber_force) are read past, on a De Groote copy against OpenSim.
* gait10dof18musc (Millard2012EquilibriumMuscles): the force per unit activation against
  OpenSim's at random states, and walking with reserve actuators and ground reactions; an
  undamped compliant Millard muscle is refused. Muscles too weak for the motion leave the
  constraint unmet, reported per time in the summary.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.static_optimization import run
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_static_optimization
from osim_synthetic import (ARM26_ELLIPSOIDS, GAIT_RESERVES, TINY, coupled_pair, deactivate,
                            locked_copy, to_degroote, with_coordinate_actuators,
                            write_leg_swing, write_osim, write_reserves)
from shared_reference import SHARED, needs

opensim_package()

REF = SHARED / "reference" / "opensim"
ARM = REF / "models" / "arm26.osim"
IK = REF / "data" / "arm26" / "arm26_InverseKinematics.mot"
CUTOFF_HZ = 6.0
TOL_ACTIVATION = 1e-6
#: Forces are activations times at most ~1000 N here (arm26's largest max isometric force,
#: 987 N): their tolerance is the activations' times this.
FORCE_PER_ACTIVATION_N = 1e3


def _compare(tmp_path, model, start_s, end_s, tol_activation=TOL_ACTIVATION, **options):
    ours_dir = tmp_path / "ours"
    summary = run(model, needs(IK), ours_dir, cutoff_hz=CUTOFF_HZ, start_time_s=start_s,
                  end_time_s=end_s, **options)
    exponent = options.get("activation_exponent", 2.0)
    physiology = options.get("use_muscle_physiology", True)
    theirs_a, theirs_f = run_static_optimization(
        tmp_path, model, needs(IK), CUTOFF_HZ, start_s, end_s, exponent, physiology,
        force_set_files=options.get("force_set_files", ()),
        replace_force_set=options.get("replace_force_set", False))
    ours_a = read_storage(ours_dir / "static_optimization_activation.sto")
    ours_f = read_storage(ours_dir / "static_optimization_force.sto")
    assert ours_a.labels == theirs_a.labels and ours_f.labels == theirs_f.labels
    np.testing.assert_allclose(ours_a.time_s, theirs_a.time_s, rtol=0, atol=1e-9)
    da = np.abs(ours_a.data[:, 1:] - theirs_a.data[:, 1:]).max()
    df = np.abs(ours_f.data[:, 1:] - theirs_f.data[:, 1:]).max()
    print(f"{model.name} {options}: {ours_a.time_s.size} times, activations within {da:.1e}, "
          f"forces within {df:.1e} N of OpenSim's")
    assert summary["constraint_violated_at_s"] == {}
    assert da <= tol_activation and df <= tol_activation * FORCE_PER_ACTIVATION_N
    return summary, ours_a


def test_arm26_matches_opensim(tmp_path):
    summary, ours = _compare(tmp_path, needs(ARM), 0.0, 1.0)
    assert summary["n_rows"] == 121
    # OpenSim's Thelen2003Muscle min_control default 0.01 bounds the activations
    assert summary["actuators"]["BIClong"] == [0.01, 1.0]
    assert ours.data[:, 1:].min() == pytest.approx(0.01, abs=1e-12)


@pytest.mark.parametrize("options", [{"activation_exponent": 3.0, "tol_activation": 2e-5},
                                     {"use_muscle_physiology": False}],
                         ids=["exponent3", "max_isometric_force"])
def test_arm26_options_match_opensim(tmp_path, options):
    _compare(tmp_path, needs(ARM), 0.0, 0.3, **options)


def test_reserve_actuators_from_a_force_set_file_match_opensim(tmp_path):
    """arm26 with a reserve actuator on each coordinate (10 N m) given in a ForceSet file
    (`--force-set`, OpenSim's force_set_files): they join the muscles, after them, in both, and
    take part in the optimum (the shoulder's control reaches 0.10: observed when written).
    arm26's ellipsoids are inactive in the file both read. With 1 N m reserves OpenSim's
    optimizer stopped ("Restoration failed") at t = 0.1 s on that file, leaving controls that
    may move between machines (test_leg6dof9musc_coupler_and_residual_actuators_match_opensim);
    with 10 N m it converges at every time."""
    reserves = write_reserves(tmp_path / "reserves.xml", ("r_shoulder_elev", "r_elbow_flex"))
    # arm26's ellipsoids inactive in the file both read: compiling them is not what this is
    # about (osim_synthetic.ARM26_ELLIPSOIDS)
    model = write_osim(tmp_path, needs(ARM).read_text(),
                       lambda root: deactivate(root, ARM26_ELLIPSOIDS), name="arm26.osim")
    summary, ours = _compare(tmp_path, model, 0.0, 0.3, force_set_files=[reserves])
    assert ours.labels[-2:] == ("r_shoulder_elev_reserve", "r_elbow_flex_reserve")
    assert summary["force_set_files"] == [str(reserves)]
    assert np.abs(ours.data[:, -2:]).max() > 1e-2


def test_reserves_replacing_the_models_forces_match_opensim(tmp_path):
    """replace_force_set (`--replace-force-set`): arm26's muscles give way to the reserves of
    a ForceSet file, in both; with one unbounded actuator per coordinate the optimum is each
    generalized force over the reserve's optimal force."""
    reserves = write_reserves(tmp_path / "reserves.xml", ("r_shoulder_elev", "r_elbow_flex"))
    summary, ours = _compare(tmp_path, needs(ARM), 0.0, 0.3, force_set_files=[reserves],
                             replace_force_set=True)
    assert ours.labels[1:] == ("r_shoulder_elev_reserve", "r_elbow_flex_reserve")
    assert summary["force_set_replaced"] is True
    assert np.abs(ours.data[:, 1:]).max() > 1e-1


def test_flags_static_optimization_does_not_use_are_read_past(tmp_path):
    """arm26's De Groote copy with ignore_activation_dynamics and ignore_passive_fiber_force
    true on every muscle (`osim.build_muscles` refuses both for simulation; OpenSim's Thelen
    muscle refuses the first), rigid tendons (OpenSim's AnalyzeTool cannot equilibrate the
    compliant ones without a passive force): static optimization runs, against OpenSim's on
    the same file."""
    tree = ET.parse(needs(ARM))
    to_degroote(tree.getroot())
    for muscle in tree.getroot().iter("DeGrooteFregly2016Muscle"):
        for flag in ("ignore_activation_dynamics", "ignore_passive_fiber_force",
                     "ignore_tendon_compliance"):   # (OpenSim cannot equilibrate without it)
            ET.SubElement(muscle, flag).text = "true"
    model = tmp_path / "arm26_degroote_flags.osim"
    tree.write(model)
    _compare(tmp_path, model, 0.0, 0.3)


def test_degroote_arm26_matches_opensim(tmp_path):
    tree = ET.parse(needs(ARM))
    to_degroote(tree.getroot())
    model = tmp_path / "arm26_degroote.osim"
    tree.write(model)
    summary, _ = _compare(tmp_path, model, 0.0, 1.0)
    assert summary["actuators"]["TRIlong"] == [0.0, 1.0]   # De Groote's min_control is 0


#: Residual actuators on leg6dof9musc's pelvis (coordinate: optimal_force): no muscle
#: crosses the pelvis' joint with ground, as in OpenSim's tutorials' reserve actuators.
PELVIS_ACTUATORS = {"pelvis_tilt": 100.0, "pelvis_tx": 1000.0, "pelvis_ty": 1000.0}


def _leg_with_residuals(tmp_path):
    text = needs(REF / "models" / "leg6dof9musc.osim").read_text()
    path = tmp_path / "leg6dof9musc_residuals.osim"
    path.write_text(with_coordinate_actuators(text, PELVIS_ACTUATORS))
    return path


def test_leg6dof9musc_coupler_and_residual_actuators_match_opensim(tmp_path, capfd):
    """leg6dof9musc (nine Thelen2003Muscles, the patella's CoordinateCouplerConstraint, a
    knee whose translations are splines of its angle) with pelvis residual actuators
    (unbounded controls), along a synthetic swing of the hip, knee and ankle (0.5 s, SI,
    the dependent knee_angle_pat_r written as its constraint gives it): the actuators' controls
    against OpenSim's analysis. OpenSim's IPOPT leaves an acceleration constraint violation
    ~2-4e-4 rad/s^2 at every time (its log; ours meets the constraint to 1e-6 relative), and at
    some times it stops with "Restoration failed" and reports that it "could not find a
    solution" (8 of 51 times, read from its log). Where it converged: 5e-6 (observed: muscles
    7e-7, the pelvis tilt residual 1.4e-6, i.e. 1.4e-4 N m). Where it did not, its controls
    are those of a stopped solver and move between machines with the same OpenSim build
    (bifemsh_r at t = 0.26 s: 7e-7 from ours on one machine, 2.4e-5 on another): 5e-5, the
    size of its violation there (3e-4 rad/s^2 on the ankle) through the leg's inertia and a
    muscle's ~10-25 N m per unit activation."""
    model = _leg_with_residuals(tmp_path)
    motion = write_leg_swing(tmp_path / "leg_swing.mot")
    ours_dir = tmp_path / "ours"
    summary = run(model, motion, ours_dir, cutoff_hz=CUTOFF_HZ)
    capfd.readouterr()
    theirs, _ = run_static_optimization(tmp_path, model, motion, CUTOFF_HZ, 0.0, 0.5)
    log = capfd.readouterr()
    number = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    failed = {round(float(t), 9) for t in re.findall(
        f"could not find a solution at time = {number}", log.out + log.err)}
    ours = read_storage(ours_dir / "static_optimization_activation.sto")
    assert ours.labels == theirs.labels    # ForceSet order: the residual actuators first
    assert ours.labels[1:4] == tuple(f"res_{c}" for c in PELVIS_ACTUATORS)
    stopped = np.array([round(float(t), 9) in failed for t in theirs.time_s])
    diff = np.abs(ours.data[:, 1:] - theirs.data[:, 1:]).max(axis=1)
    converged = diff[~stopped].max()
    at_stops = diff[stopped].max() if stopped.any() else 0.0
    print(f"leg6dof9musc: {ours.time_s.size} times, controls within {converged:.1e} of "
          f"OpenSim's where it converged, {at_stops:.1e} at its {int(stopped.sum())} stops")
    assert summary["constraint_violated_at_s"] == {}
    assert stopped.sum() < stopped.size // 2    # a comparison with mostly converged times
    assert converged <= 5e-6 and at_stops <= 5e-5


def test_an_actuator_on_a_coupled_coordinate_is_refused(tmp_path):
    """A CoordinateActuator on a coordinate a CoordinateCouplerConstraint eliminates (phi of
    `osim_synthetic.coupled_pair`, which has its own axis, so the model loads)."""
    from myotwin.jax_setup import configure_jax
    from myotwin.osim.loader import load
    from myotwin.osim.static_optimization import actuators

    configure_jax()

    def edit(root):
        coupled_pair(root)
        root.find(".//ForceSet/objects").append(ET.fromstring(
            '<CoordinateActuator name="drive"><coordinate>phi</coordinate>'
            "<optimal_force>10</optimal_force></CoordinateActuator>"))

    loaded = load(write_osim(tmp_path, TINY, edit))
    with pytest.raises(ValueError, match=r"tiny.osim: CoordinateActuator 'drive' acts on "
                       r"'phi', which 'couple' eliminates"):
        actuators(loaded)


def test_double_pendulum_actuators_alone_match_opensim(tmp_path):
    """double_pendulum.osim (point-mass rods, two CoordinateActuators of optimal_force 1, no
    muscle): two controls for two coordinates, so the controls are the joint torques the
    motion needs, whatever the objective; against OpenSim's analysis along a synthetic swing
    that starts and ends moving. Inside 0.3-0.7 s within 1e-6 N m (observed 8.6e-7); toward
    the ends the difference grows to 6.4e-5 N m (3e-6 of the largest torque, 20 N m), so 1e-4:
    OpenSim's AnalyzeTool evidently prepares the ends of the coordinates slightly differently
    from its InverseDynamicsTool, which `prepared_motion` follows (not investigated further;
    arm26's tutorial motion starts and ends at rest, where it does not show)."""
    from myotwin.osim.storage import StorageWriter

    model = needs(REF / "models" / "double_pendulum.osim")
    t = np.linspace(0.0, 1.0, 101)
    motion = tmp_path / "swing.mot"
    with StorageWriter(motion, "Coordinates", ("time", "q1", "q2")) as writer:
        writer.write_rows(np.column_stack([t, 0.5 * np.sin(2 * np.pi * t),
                                           -0.8 + 0.4 * np.cos(2 * np.pi * t)]))
    summary = run(model, motion, tmp_path / "ours", cutoff_hz=CUTOFF_HZ)
    theirs, _ = run_static_optimization(tmp_path, model, motion, CUTOFF_HZ, 0.0, 1.0)
    ours = read_storage(tmp_path / "ours" / "static_optimization_activation.sto")
    assert ours.labels == theirs.labels == ("time", "Torq1", "Torq2")
    diff = np.abs(ours.data[:, 1:] - theirs.data[:, 1:]).max(axis=1)
    inside = (t >= 0.3) & (t <= 0.7)
    print(f"double_pendulum: {t.size} times, torques within {diff[inside].max():.1e} N m "
          f"inside 0.3-0.7 s, {diff.max():.1e} N m near the ends")
    assert summary["actuators"] == {"Torq1": [-np.inf, np.inf], "Torq2": [-np.inf, np.inf]}
    assert diff[inside].max() <= 1e-6 and diff.max() <= 1e-4
    assert np.abs(ours.data[:, 1:]).max() > 10.0


def test_a_locked_coordinate_has_no_equation_as_in_opensim(tmp_path):
    """arm26 with r_shoulder_elev locked at 0 rad and a coordinates file without its column:
    OpenSim's analysis writes no acceleration constraint for a locked coordinate (its
    constraint holds it, whatever the muscles do at the shoulder), so only the elbow's
    equation is met; ours eliminates the coordinate (the loader's coupling). Within the
    arm26 tolerances (TOL_ACTIVATION). The tutorial's file, whose shoulder column is not the
    locked value (OpenSim's analysis would take the file's values with the lock on), is
    refused naming the column, time and both values. A CoordinateActuator on the locked
    coordinate (first in the ForceSet) moves nothing: its control is 0 in both. The ellipsoids
    are inactive in the file both read (`osim_synthetic.ARM26_ELLIPSOIDS`: compiling them is
    not what this test is about; test_arm26_matches_opensim keeps them)."""
    from myotwin.osim.storage import StorageWriter

    model = locked_copy(needs(ARM), tmp_path, "r_shoulder_elev", 0.0,
                        inactive=ARM26_ELLIPSOIDS)
    # an actuator on the locked coordinate: it enters no equation, so its control is 0
    model.write_text(with_coordinate_actuators(model.read_text(), {"r_shoulder_elev": 10.0}))
    tutorial = read_storage(needs(IK))
    motion = tmp_path / "elbow_only.mot"
    with StorageWriter(motion, "Coordinates", ("time", "r_elbow_flex")) as writer:
        writer.write_rows(np.column_stack([tutorial.time_s,
                                           np.radians(tutorial.column("r_elbow_flex"))]))
    summary = run(model, motion, tmp_path / "ours", cutoff_hz=CUTOFF_HZ, end_time_s=0.5)
    theirs_a, theirs_f = run_static_optimization(tmp_path, model, motion, CUTOFF_HZ, 0.0, 0.5)
    ours_a = read_storage(tmp_path / "ours" / "static_optimization_activation.sto")
    ours_f = read_storage(tmp_path / "ours" / "static_optimization_force.sto")
    assert ours_a.labels == theirs_a.labels
    da = np.abs(ours_a.data[:, 1:] - theirs_a.data[:, 1:]).max()
    df = np.abs(ours_f.data[:, 1:] - theirs_f.data[:, 1:]).max()
    print(f"arm26, shoulder locked: {ours_a.time_s.size} times, activations within {da:.1e}, "
          f"forces within {df:.1e} N of OpenSim's")
    assert summary["constraint_violated_at_s"] == {}
    assert da <= TOL_ACTIVATION and df <= TOL_ACTIVATION * FORCE_PER_ACTIVATION_N
    assert ours_a.labels[1] == "res_r_shoulder_elev"
    assert np.abs(ours_a.column("res_r_shoulder_elev")).max() <= 1e-9
    with pytest.raises(ValueError, match=r"arm26_InverseKinematics.mot: column "
                       r"'r_shoulder_elev' at time 0\.0 s is -0\.000592.* but "
                       r"'r_shoulder_elev' is locked at 0\.0 in .*arm26_r_shoulder_elev_locked"):
        run(model, needs(IK), tmp_path / "refused", cutoff_hz=CUTOFF_HZ)


GAIT = REF / "models" / "gait10dof18musc.osim"
GAIT_DATA = REF / "data" / "gait10dof18musc"


def test_millard_force_per_activation_is_opensims_at_random_states():
    """gait10dof18musc's 18 Millard2012EquilibriumMuscles (damped compliant tendons): F_i at
    20 random poses and speeds against OpenSim 4.6's calcInextensibleTendonActiveFiberForce(s,
    1), which is what its analysis uses, within 1e-9 relative (observed 9.5e-14 to 2.4e-13:
    `millard_capacity`'s formula, the pennation angle of the normalised fiber length
    included; with cos(phi) of the fiber length in metres it was off by up to 9 % at one pose, a
    scratch probe)."""
    from myotwin.jax_setup import configure_jax
    from myotwin.osim.loader import load
    from myotwin.osim.static_optimization import force_per_control

    configure_jax()
    opensim = opensim_package()
    theirs_model = opensim.Model(str(needs(GAIT)))
    theirs_model.initSystem()
    coords = theirs_model.getCoordinateSet()
    loaded = load(GAIT)
    rng = np.random.default_rng(1)
    default = np.array([loaded.coordinate_default_values[c] for c in loaded.coordinates])
    q = default + rng.normal(0.0, 0.3, (20, default.size))
    qd = rng.normal(0.0, 2.0, q.shape)
    theirs = []
    for q_row, qd_row in zip(q, qd):
        state = theirs_model.initializeState()
        for name, value, speed in zip(loaded.coordinates, q_row, qd_row):
            coords.get(name).setValue(state, float(value), False)
            coords.get(name).setSpeedValue(state, float(speed))
        theirs_model.realizeVelocity(state)
        theirs.append([theirs_model.getMuscles().get(n).calcInextensibleTendonActiveFiberForce(
            state, 1.0) for n in loaded.muscle_names])
    ours = force_per_control(loaded, q, qd)[1]
    worst = (np.abs(ours - np.array(theirs)) / np.maximum(np.abs(theirs), 1.0)).max()
    print(f"Millard force per activation within {worst:.1e} (relative) of OpenSim's")
    assert worst <= 1e-9


def test_walking_with_millard_muscles_matches_opensim(tmp_path):
    """gait10dof18musc with reserve actuators on every coordinate (`GAIT_RESERVES`) along
    subject01's walk with its ground reactions, 0.6-0.7 s: controls against OpenSim's
    analysis. OpenSim's optimizer stops with an acceleration constraint violation ~2e-4
    rad/s^2 at every time (ours meets the constraint to 1e-6 relative); the activations that
    moves, ~M dqdd / (r F) ~ 10 kg m^2 x 2e-4 / (0.05 m x 1000 N), are 2e-5, so that is the
    tolerance (observed 1.3e-5; our cost is within 3e-5 of OpenSim's, on both sides)."""
    model = tmp_path / "gait10dof18musc_reserves.osim"
    model.write_text(with_coordinate_actuators(needs(GAIT).read_text(), GAIT_RESERVES))
    motion = needs(GAIT_DATA / "subject01_walk_IK.mot")
    loads = GAIT_DATA / "subject01_walk_grf.xml"
    summary = run(model, motion, tmp_path / "ours", external_loads_path=loads,
                  cutoff_hz=CUTOFF_HZ, start_time_s=0.6, end_time_s=0.7)
    theirs, _ = run_static_optimization(tmp_path, model, motion, CUTOFF_HZ, 0.6, 0.7,
                                        external_loads=loads)
    ours = read_storage(tmp_path / "ours" / "static_optimization_activation.sto")
    assert ours.labels == theirs.labels and ours.time_s.size == 7
    diff = np.abs(ours.data[:, 1:] - theirs.data[:, 1:]).max()
    print(f"gait10dof18musc: {ours.time_s.size} times, controls within {diff:.1e} of OpenSim's")
    assert summary["constraint_violated_at_s"] == {}
    assert diff <= 2e-5
    assert ours.data[:, 11:].max() > 0.3        # the muscles carry the motion, not only reserves


def test_undamped_compliant_millard_muscles_are_refused(tmp_path):
    text = needs(GAIT).read_text().replace(
        '<Millard2012EquilibriumMuscle name="soleus_r">',
        '<Millard2012EquilibriumMuscle name="soleus_r"><fiber_damping>0</fiber_damping>', 1)
    model = tmp_path / "undamped.osim"
    model.write_text(text)
    with pytest.raises(ValueError, match=r"undamped.osim: muscle 'soleus_r': a "
                       r"Millard2012EquilibriumMuscle with a compliant tendon and fiber_damping "
                       r"0\.0 < 1e-3 is OpenSim's undamped model"):
        run(model, needs(GAIT_DATA / "subject01_walk_IK.mot"), tmp_path / "out")


def test_weak_muscles_are_reported_through_the_command(tmp_path, capsys):
    """All six muscles at 2 % of their strength cannot move the arm as measured: the times
    where they fall short (all but the first, at rest) are reported with their residuals, and
    the command still writes every row."""
    text = re.sub(r"<max_isometric_force>([0-9.]+)</max_isometric_force>",
                  lambda m: f"<max_isometric_force>{float(m.group(1)) * 0.02!r}"
                            "</max_isometric_force>", needs(ARM).read_text())
    weak = tmp_path / "arm26_weak.osim"
    weak.write_text(text)
    out = tmp_path / "out"
    assert main(["osim", "static-optimization", str(weak), "--coordinates", str(needs(IK)),
                 "--lowpass-hz", "6", "--end-s", "0.2", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["n_rows"] == 25
    violated = summary["constraint_violated_at_s"]
    assert len(violated) >= 20 and all(residual > 1e-3 for residual in violated.values())
    activation = read_storage(out / "static_optimization_activation.sto").data
    assert activation.shape == (25, 7) and np.all(activation[:, 1:] <= 1.0 + 1e-12)


@pytest.mark.parametrize("option, value, message", [
    ("--lowpass-hz", "0", "--lowpass-hz must be positive (omit it for no filtering), got 0.0"),
    ("--activation-exponent", "0.5", "--activation-exponent must be a number >= 1, got 0.5"),
    ("--activation-exponent", "nan", "--activation-exponent must be a number >= 1, got nan"),
    ("--accuracy", "2", "--accuracy must be a number in (0, 1), got 2.0")])
def test_bad_options_are_one_line_before_any_work(tmp_path, capsys, option, value, message):
    out = tmp_path / "out"
    assert main(["osim", "static-optimization", str(needs(ARM)), "--coordinates",
                 str(needs(IK)), option, value, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"cutoff_hz": True}, "--lowpass-hz must be positive (omit it for no filtering), got True"),
    ({"cutoff_hz": "6"}, "--lowpass-hz must be positive (omit it for no filtering), got '6'"),
    ({"activation_exponent": True}, "--activation-exponent must be a number >= 1, got True"),
    ({"activation_exponent": "2"}, "--activation-exponent must be a number >= 1, got '2'"),
    ({"accuracy": "1e-6"}, "--accuracy must be a number in (0, 1), got '1e-6'"),
    ({"use_muscle_physiology": "no"}, "use_muscle_physiology must be True or False, got 'no'"),
    ({"start_time_s": "0.1"}, "arm26_InverseKinematics.mot: the start time must be a number, "
                              "got '0.1'"),
    ({"end_time_s": None}, "the end time must be a number, got None"),
    ({"start_time_s": 0.8, "end_time_s": 0.2}, "arm26_InverseKinematics.mot: the time range "
                                               "[0.8, 0.2] s ends before it starts"),
])
def test_bad_arguments_of_run_are_named_before_any_work(tmp_path, kwargs, message):
    """(True was taken as 1 Hz, as exponent 1 and as start time 1 s, 'no' as True; a string
    or None was a TypeError of a comparison or of math.isfinite.)"""
    from myotwin.osim import static_optimization

    out = tmp_path / "out"
    with pytest.raises(ValueError) as err:
        static_optimization.run(needs(ARM), needs(IK), out, **kwargs)
    assert message in str(err.value)
    assert not out.exists()
