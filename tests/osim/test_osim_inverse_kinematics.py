"""`myotwin osim inverse-kinematics` (osim/inverse_kinematics.py) against OpenSim 4.6's
InverseKinematicsTool run here on the same files, its output printed to 16 digits.

* arm26.osim with the tutorial's arm26_elbow_flex.trc, every marker moved up 0.8 m (the file's
  markers are given in the frame of the arm's base, which arm26.osim welds 0.8 m above
  ground), weighted by a task file (weights 1, 2, 0.5): the coordinates against OpenSim's, and
  against the tutorial's own IK result (arm26_InverseKinematics.mot, made with an older model
  and unknown weights: 0.1 deg), and the marker errors table against OpenSim's; with a task
  file that leaves a marker out, which neither tool then uses.
* gait10dof18musc_subject01.osim with subject01_walk.trc (0.5 - 0.7 s, 13 frames), the default
  weights (every model marker the file has, weight 1; 31 of its 39 markers are in the file):
  10 coordinates, the knee's translations splines of its angle.
* leg6dof9musc.osim with synthetic markers (a motion of its 6 coordinates pushed through the
  model's markers, plus 3 mm of noise, one marker missing in some frames): the patella's
  CoordinateCouplerConstraint, the clamped knee driven past its upper bound (0.17 rad), and a
  missing marker, each against OpenSim.
* An InverseKinematicsTool setup file given to `--setup` and to OpenSim's tool itself (a
  relative marker_file, a time range, the task set inside it).
Tolerances: OpenSim's tool runs at accuracy 1e-10, ours at 1e-14 (near the exact minimiser).
The marker cost is flat near its minimum (in gait10dof18musc a cost converged to 1e-10 leaves
q ~1e-6 rad from the minimiser), so q agrees to TOL_Q_RAD = 2e-7 rad (observed: arm26 1.0e-9,
gait 2.0e-8, leg6dof9musc 7.6e-8 away from the knee's bound) and the marker errors to 1e-7 m
(2e-7 rad on a 0.5 m lever; observed 3e-11, 5e-10, 6e-9 m).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from myotwin.osim.inverse_kinematics import problem, residual_function, run
from myotwin.osim.storage import read_storage
from myotwin.osim.trc import read_trc, write_trc
from opensim_live import opensim_package, run_inverse_kinematics_tool, run_printing_16_digits
from osim_synthetic import locked_copy
from shared_reference import SHARED, needs

opensim_package()

REF = SHARED / "reference" / "opensim"
MODELS = REF / "models"
ACCURACY_OPENSIM = 1e-10
ACCURACY_OURS = 1e-14
TOL_Q_RAD = 2e-7
TOL_MARKER_ERROR_M = 1e-7

ARM_TASKS = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><IKTaskSet name="arm"><objects>
  <IKMarkerTask name="r_acromion"><apply>true</apply><weight>1</weight></IKMarkerTask>
  <IKMarkerTask name="r_humerus_epicondyle"><apply>true</apply><weight>2</weight></IKMarkerTask>
  <IKMarkerTask name="r_radius_styloid"><apply>true</apply><weight>0.5</weight></IKMarkerTask>
</objects></IKTaskSet></OpenSimDocument>
"""


def _in_si(table, rotational) -> np.ndarray:
    """The coordinate columns of an IK table in rad and m (OpenSim writes only rotational
    coordinates in degrees: not translations, nor coordinates that move their joint only
    through functions, as leg6dof9musc's knee_angle_pat_r)."""
    q = table.data[:, 1:].copy()
    if table.in_degrees:
        for j, label in enumerate(table.labels[1:]):
            if label in rotational:
                q[:, j] = np.radians(q[:, j])
    return q


def _rotational(model) -> set[str]:
    from myotwin.jax_setup import configure_jax
    from myotwin.osim.inverse_dynamics import output_coordinates
    from myotwin.osim.loader import load

    configure_jax()
    out = output_coordinates(load(model, forces=False))
    return {name for name, motion in zip(out.names, out.motion) if motion == "rotational"}


def _compare(tmp_path, model, markers, tasks, start_s, end_s, skip_q=None):
    """Run both tools; compare q and the marker errors (except at the frames `skip_q(their
    q)` marks); returns (our summary, our table, OpenSim's q in rad and m)."""
    ours_dir = tmp_path / "ours"
    summary = run(model, markers, ours_dir, tasks_path=tasks, start_time_s=start_s,
                  end_time_s=end_s, accuracy=ACCURACY_OURS)
    ours = read_storage(ours_dir / "inverse_kinematics.mot")
    theirs, their_errors = run_inverse_kinematics_tool(tmp_path, model, markers, tasks,
                                                       start_s, end_s, ACCURACY_OPENSIM)
    assert ours.labels == theirs.labels and not ours.in_degrees
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-12)
    their_q = _in_si(theirs, _rotational(model))
    checked = (np.ones(their_q.shape[0], bool) if skip_q is None
               else ~np.asarray(skip_q(their_q)))
    dq = np.abs(ours.data[:, 1:] - their_q)[checked].max()
    errors = read_storage(ours_dir / "marker_errors.sto")
    assert errors.labels == their_errors.labels
    de = np.abs(errors.data[:, 1:] - their_errors.data[:, 1:])[checked].max(axis=0)
    print(f"{model.name}: {ours.time_s.size} frames, q within {dq:.1e} rad of OpenSim's, marker "
          f"errors (total m^2, RMS m, max m) within {de}")
    assert dq <= TOL_Q_RAD
    # |d sum e_i^2| <= 2 sqrt(n total) max |d e_i|
    n_markers = len(summary["markers"])
    assert de[0] <= 2 * TOL_MARKER_ERROR_M * (n_markers * errors.data[:, 1].max()) ** 0.5
    assert np.all(de[1:] <= TOL_MARKER_ERROR_M)
    return summary, ours, their_q


def _arm_markers_in_ground(tmp_path, frames=None):
    """The tutorial's arm26 markers (the first `frames`, or all) moved up 0.8 m into the
    ground frame, written as a .trc in m; returns its path."""
    trc = read_trc(needs(REF / "data" / "arm26" / "arm26_elbow_flex.trc"))
    path = tmp_path / "arm26_in_ground.trc"
    write_trc(path, trc.time_s[:frames], trc.marker_names,
              trc.positions_m[:frames] + np.array([0.0, 0.8, 0.0]))
    return path


def test_arm26_matches_opensim_and_the_tutorial(tmp_path):
    markers = _arm_markers_in_ground(tmp_path)
    tasks = tmp_path / "arm_tasks.xml"
    tasks.write_text(ARM_TASKS)
    summary, ours, _ = _compare(tmp_path, MODELS / "arm26.osim", markers, tasks, 0.0, 1.0)
    assert summary["markers"] == {"r_acromion": 1.0, "r_humerus_epicondyle": 2.0,
                                  "r_radius_styloid": 0.5}
    assert summary["n_frames"] == 121 and summary["frames_not_converged_s"] == []
    tutorial = read_storage(REF / "data" / "arm26" / "arm26_InverseKinematics.mot")
    ddeg = np.abs(np.degrees(ours.data[:, 1:]) - tutorial.data[:, 1:]).max()
    print(f"arm26: within {ddeg:.3f} deg of the tutorial's IK result")
    assert ddeg <= 0.1
    assert summary["marker_error_max_m"] < 2e-3     # the tutorial's markers fit to ~1 mm


def test_markers_without_a_task_are_not_used_as_in_opensim(tmp_path):
    markers = _arm_markers_in_ground(tmp_path, frames=6)
    tasks = tmp_path / "two_tasks.xml"
    tasks.write_text(ARM_TASKS.replace(
        '<IKMarkerTask name="r_humerus_epicondyle"><apply>true</apply><weight>2</weight>'
        '</IKMarkerTask>', ""))
    summary, _, _ = _compare(tmp_path, MODELS / "arm26.osim", markers, tasks, 0.0, 1.0)
    assert summary["markers"] == {"r_acromion": 1.0, "r_radius_styloid": 0.5}


def test_a_locked_coordinate_is_held_as_in_opensim(tmp_path):
    """arm26 with r_shoulder_elev locked at 0.3 rad: OpenSim's tool holds it there (written in
    every row) and fits the elbow alone; so do we, with a coordinate task on the locked
    coordinate left out (a constant of the cost)."""
    markers = _arm_markers_in_ground(tmp_path, frames=31)
    tasks = tmp_path / "arm_tasks.xml"
    tasks.write_text(ARM_TASKS.replace("</objects>", (
        '<IKCoordinateTask name="r_shoulder_elev"><apply>true</apply><weight>5</weight>'
        "<value_type>manual_value</value_type><value>1.0</value></IKCoordinateTask></objects>")))
    model = locked_copy(needs(MODELS / "arm26.osim"), tmp_path, "r_shoulder_elev", 0.3)
    summary, ours, theirs = _compare(tmp_path, model, markers, tasks, 0.0, 1.0)
    assert summary["coordinates"] == ["r_shoulder_elev", "r_elbow_flex"]
    np.testing.assert_array_equal(ours.column("r_shoulder_elev"), 0.3)
    np.testing.assert_allclose(theirs[:, 0], 0.3, rtol=0, atol=1e-12)   # OpenSim's, in rad
    assert np.ptp(ours.column("r_elbow_flex")) > 0.1                     # the elbow did move


SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><InverseKinematicsTool name="arm">
  <results_directory>./</results_directory>
  <model_file>{model}</model_file>
  <constraint_weight>Inf</constraint_weight>
  <accuracy>1e-10</accuracy>
  {tasks}
  <marker_file>arm26_in_ground.trc</marker_file>
  <coordinate_file>Unassigned</coordinate_file>
  <time_range>0.1 0.6</time_range>
  <output_motion_file>opensim_setup_ik.mot</output_motion_file>
  <report_errors>true</report_errors>
</InverseKinematicsTool></OpenSimDocument>
"""


def test_setup_file_runs_as_opensims_tool_runs_it(tmp_path, capsys):
    """An InverseKinematicsTool setup file (its marker_file relative to its folder, a time
    range, the task set inside it), given to the command with --setup and to OpenSim's
    InverseKinematicsTool(setup): the same frames and q within TOL_Q_RAD; and run as
    `myotwin osim run-tool SETUP` (into its results_directory, at our default accuracy)."""
    from myotwin.cli.main import main

    _arm_markers_in_ground(tmp_path)
    tasks = ARM_TASKS[ARM_TASKS.index("<IKTaskSet"):ARM_TASKS.index("</OpenSimDocument>")]
    setup = tmp_path / "arm_ik_setup.xml"
    setup.write_text(SETUP.format(model=needs(MODELS / "arm26.osim"), tasks=tasks))
    out = tmp_path / "ours"
    assert main(["osim", "inverse-kinematics", "--setup", str(setup), "--accuracy", "1e-14",
                 "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["markers"] == {"r_acromion": 1.0, "r_humerus_epicondyle": 2.0,
                                  "r_radius_styloid": 0.5}
    assert summary["setup_accuracy_not_used"] == 1e-10
    ours = read_storage(out / "inverse_kinematics.mot")
    osim = opensim_package()
    tool = osim.InverseKinematicsTool(str(setup))
    tool.setResultsDir(str(tmp_path))
    tool.setOutputMotionFileName(str(tmp_path / "opensim_setup_ik.mot"))
    run_printing_16_digits(osim, tool)
    theirs = read_storage(tmp_path / "opensim_setup_ik.mot")
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-12)
    assert ours.time_s[0] >= 0.1 - 1e-9 and ours.time_s[-1] <= 0.6 + 1e-9
    dq = np.abs(ours.data[:, 1:] - np.radians(theirs.data[:, 1:])).max()
    with capsys.disabled():
        print(f"arm26 from a setup file: {ours.time_s.size} frames, q within {dq:.1e} rad")
    assert dq <= TOL_Q_RAD
    # the same setup run as opensim-cmd run-tool runs it, into its results_directory
    assert main(["osim", "run-tool", str(setup)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tool_type"] == "InverseKinematicsTool" and summary["accuracy"] == 1e-12
    written = json.loads((tmp_path / "summary.json").read_text())
    assert (written["tool_type"], written["setup"]) == ("InverseKinematicsTool", setup.name)
    tool_run = read_storage(tmp_path / "inverse_kinematics.mot")
    np.testing.assert_allclose(tool_run.time_s, theirs.time_s, rtol=0, atol=1e-12)
    dq = np.abs(tool_run.data[:, 1:] - np.radians(theirs.data[:, 1:])).max()
    print(f"the same by run-tool: q within {dq:.1e} rad")
    assert dq <= TOL_Q_RAD


def test_gait_matches_opensim(tmp_path):
    summary, _, _ = _compare(tmp_path, needs(MODELS / "gait10dof18musc_subject01.osim"),
                          needs(REF / "data" / "gait10dof18musc" / "subject01_walk.trc"), None,
                          0.5, 0.7)
    assert len(summary["markers"]) == 31 and set(summary["markers"].values()) == {1.0}


def _leg_motion(t):
    """A motion of leg6dof9musc's coordinates (q order) whose knee passes its upper bound."""
    w = 2 * np.pi * t
    return np.stack([0.1 * np.sin(w), 0.3 * t, 0.95 + 0.02 * np.sin(2 * w), 0.5 * np.sin(w),
                     -0.6 + 0.8 * np.sin(w), 0.2 * np.cos(w)], axis=1)


def test_leg6dof9musc_coupler_bound_and_missing_marker(tmp_path):
    import jax.numpy as jnp

    from myotwin.engine.coupling import full_positions
    from myotwin.jax_setup import configure_jax
    from myotwin.osim.loader import load
    from myotwin.osim.markers import placement, positions, read_markers

    configure_jax()
    model = needs(MODELS / "leg6dof9musc.osim")
    leg = load(model, forces=False)
    assert leg.coordinate_clamped["knee_angle_r"] and leg.coupled_coordinates
    markers = read_markers(model)
    place = placement(markers, leg.body_names, str(model))
    t = np.linspace(0.0, 0.5, 26)
    q = _leg_motion(t)
    truth = np.array([np.asarray(positions(leg.model, place,
                                           full_positions(leg.coupling, jnp.asarray(row))))
                      for row in q])
    noisy = truth + np.random.default_rng(3).normal(0.0, 3e-3, truth.shape)
    noisy[5:9, 4] = np.nan                     # R.Thigh.Front missing in 4 frames
    trc = tmp_path / "leg.trc"
    write_trc(trc, t, [m.name for m in markers], noisy)
    column = 1 + leg.all_coordinates.index("knee_angle_r")
    upper = leg.coordinate_ranges["knee_angle_r"][1]
    summary, ours, their_q = _compare(tmp_path, model, trc, None, 0.0, 0.5,
                                      skip_q=lambda q: q[:, column - 1] > upper - 1e-3)
    knee = ours.data[:, column]
    assert knee.max() == pytest.approx(upper, abs=1e-12)   # held at its bound
    assert summary["clamped_coordinates_at_bound"] == ["knee_angle_r"]
    # Near the bound OpenSim's assembler stops up to 1e-7 rad inside it and up to 5e-6 rad
    # from our q in the frames next to it; there our q is the better minimiser: its cost is
    # lower at every frame (by up to 2e-10 m^2), and q stays within 1e-5 rad.
    prob = problem(leg, markers, read_trc(trc))
    fun, _ = residual_function(leg, prob)
    reduced = [1 + leg.all_coordinates.index(c) for c in leg.coordinates]
    for k, frame_q in enumerate(ours.data[:, reduced]):
        measured = noisy[k]
        present = np.all(np.isfinite(measured), axis=1)
        args = (jnp.asarray(np.where(present[:, None], measured, 0.0)),
                jnp.asarray(present, dtype=jnp.float64))
        cost = [float(np.sum(np.asarray(fun(jnp.asarray(x), *args)) ** 2))
                for x in (frame_q, their_q[k, np.asarray(reduced) - 1])]
        assert cost[0] <= cost[1] * (1 + 1e-12), (k, cost)
    assert np.abs(ours.data[:, 1:] - their_q).max() <= 1e-5


def test_cli_writes_the_tables_and_the_summary(tmp_path):
    markers = _arm_markers_in_ground(tmp_path, frames=5)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "myotwin", "osim", "inverse-kinematics",
                           str(MODELS / "arm26.osim"), "--markers", str(markers), "--out",
                           str(out)], capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    assert done.returncode == 0, done.stderr
    # building the command line imports no JAX (configure_jax must come first, silently; the
    # test's own XLA_FLAGS, set by its configure_jax, would hide the warning)
    assert "Warning" not in done.stderr, done.stderr
    summary = json.loads(done.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["n_frames"] == 5 and summary["coordinates"] == ["r_shoulder_elev",
                                                                   "r_elbow_flex"]
    assert read_storage(out / "inverse_kinematics.mot").data.shape == (5, 3)
    assert read_storage(out / "marker_errors.sto").data.shape == (5, 4)
