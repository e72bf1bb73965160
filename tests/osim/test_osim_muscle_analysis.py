"""`myotwin osim muscle-analysis` (osim/muscle_analysis.py) against OpenSim 4.6's MuscleAnalysis,
run here by its AnalyzeTool on the same files.

OpenSim prints its analyses with 8 decimals (+-5e-9 m), which is the tolerance's floor:
1e-8 m for lengths and moment arms (observed ~5e-9: the rounding alone; the quantities
themselves agree to ~1e-15 in the path tests).
* arm26.osim along the tutorial's IK result (6 Hz lowpass, 0-0.3 s): the wrap objects
  (cylinders, ellipsoids) and OpenSim's computeMomentArm, where it is not -dL/dq;
* leg6dof9musc.osim along a synthetic swing (the patella's CoordinateCouplerConstraint and
  the knee's spline translations: moment arms reduced by the coupling's J^T), every
  coordinate's file, the pelvis' all zero;
* gait10dof18musc along subject01's walk: the knees' MovingPathPoints;
* the command's files, summary and one-line error.
"""

from __future__ import annotations

import json

import numpy as np

from myotwin.cli.main import main
from myotwin.osim.muscle_analysis import run
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_muscle_analysis
from osim_synthetic import write_leg_swing
from shared_reference import SHARED, needs

opensim_package()

REF = SHARED / "reference" / "opensim"
TOL_M = 1e-8


def _compare(tmp_path, model, motion, end_s, start_s=0.0):
    summary = run(model, motion, tmp_path / "ours", cutoff_hz=6.0, start_time_s=start_s,
                  end_time_s=end_s)
    length, arms = run_muscle_analysis(tmp_path, model, motion, 6.0, start_s, end_s,
                                       summary["coordinates"])
    ours = read_storage(tmp_path / "ours" / "muscle_analysis_Length.sto")
    assert ours.labels == length.labels and ours.data.shape == length.data.shape
    np.testing.assert_allclose(ours.time_s, length.time_s, rtol=0, atol=1e-9)
    worst = {"Length": np.abs(ours.data[:, 1:] - length.data[:, 1:]).max()}
    for coordinate, theirs in arms.items():
        mine = read_storage(tmp_path / "ours" / f"muscle_analysis_MomentArm_{coordinate}.sto")
        assert mine.labels == theirs.labels
        worst[coordinate] = np.abs(mine.data[:, 1:] - theirs.data[:, 1:]).max()
    print(f"{model.name}: {ours.time_s.size} times, within "
          + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) <= TOL_M
    return summary, arms


def test_arm26_matches_opensims_muscle_analysis(tmp_path):
    summary, arms = _compare(tmp_path, needs(REF / "models" / "arm26.osim"),
                             needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot"),
                             0.3)
    assert summary["coordinates"] == ["r_shoulder_elev", "r_elbow_flex"]
    assert np.abs(arms["r_elbow_flex"].data[:, 1:]).max() > 0.01   # moment arms, not zeros


def test_coupled_leg_matches_opensims_muscle_analysis(tmp_path):
    motion = write_leg_swing(tmp_path / "leg_swing.mot")
    summary, arms = _compare(tmp_path, needs(REF / "models" / "leg6dof9musc.osim"), motion,
                             0.3)
    assert "knee_angle_pat_r" not in summary["coordinates"]        # eliminated, no file
    assert np.abs(arms["knee_angle_r"].data[:, 1:]).max() > 0.01
    assert np.abs(arms["pelvis_tx"].data[:, 1:]).max() == 0.0


def test_walking_with_moving_points_matches_opensims_muscle_analysis(tmp_path):
    """gait10dof18musc along subject01's walk (0.5-0.7 s): the knees' MovingPathPoints,
    whose motion adds OpenSim's mobility force to computeMomentArm."""
    data = REF / "data" / "gait10dof18musc"
    summary, arms = _compare(tmp_path, needs(REF / "models" / "gait10dof18musc.osim"),
                             needs(data / "subject01_walk_IK.mot"), 0.7, start_s=0.5)
    assert len(summary["coordinates"]) == 10
    assert np.abs(arms["knee_angle_r"].data[:, 1:]).max() > 0.01


def test_the_command_writes_its_files_and_refuses_bad_input(tmp_path, capsys):
    model = needs(REF / "models" / "arm26.osim")
    motion = needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot")
    out = tmp_path / "out"
    assert main(["osim", "muscle-analysis", str(model), "--coordinates", str(motion),
                 "--end-s", "0.05", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == json.loads((out / "summary.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == [
        "muscle_analysis_Length.sto", "muscle_analysis_MomentArm_r_elbow_flex.sto",
        "muscle_analysis_MomentArm_r_shoulder_elev.sto", "summary.json"]
    assert summary["n_rows"] == read_storage(out / "muscle_analysis_Length.sto").time_s.size
    assert main(["osim", "muscle-analysis", str(model), "--coordinates", str(motion),
                 "--lowpass-hz", "-1", "--out", str(out)]) == 2
    assert "--lowpass-hz must be positive" in capsys.readouterr().err
