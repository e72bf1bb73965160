"""`myotwin osim check` (src/myotwin/cli/osim.py): the report of a file that loads, and the
one-line error (exit status 2) of one that does not.

Tug_of_War.osim: a block on a slide between two straight muscles. The slide's joint frames
are turned by -1.5708 rad about y (the file's orientation, not exactly -pi/2), so the slide
axis is x turned onto z up to 1.5708 - pi/2 = 3.7e-6 rad, and each muscle, which runs along
z, has a moment arm of magnitude cos(3.7e-6) (1 - 6.7e-12), of opposite signs: checked to
1e-14 (roundoff of O(1) numbers). Its length at the default pose, 0.3 m, is the distance of
its points in the file (0.35 - 0.05 m).
"""

from __future__ import annotations

import json
import math

from myotwin.cli.main import main
from osim_synthetic import deactivate, set_text, write_osim
from shared_reference import SHARED, needs

MODELS = SHARED / "reference" / "opensim" / "models"


def _needs(name):
    return needs(MODELS / name)


def test_check_reports_the_loaded_model(capsys):
    assert main(["osim", "check", str(_needs("Tug_of_War.osim")), "--lengths"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["coordinates"]) == ["block_tz"]
    assert report["coordinates"]["block_tz"]["range"] == [-0.3, 0.3]
    assert report["muscles"] == {m: {"type": "Thelen2003Muscle", "path": "mujoco_tendon"}
                                 for m in ("muscle1", "muscle2")}
    pose = report["at_default_pose"]
    arm = math.cos(1.5708 - math.pi / 2)
    for muscle, sign in (("muscle1", -1.0), ("muscle2", 1.0)):
        assert abs(pose[muscle]["length_m"] - 0.3) <= 1e-14
        assert abs(pose[muscle]["moment_arm_m"]["block_tz"] - sign * arm) <= 1e-14


def test_check_and_forward_name_a_muscle_parameter_out_of_range(capsys, tmp_path):
    """A negative max_isometric_force loads (the file is well formed) but no muscle can be
    built from it: `check` lists the refusal, `forward` refuses in one line; both name the
    file, the muscle, the value and the file's property. Without it `check` has no
    muscles_refused."""
    assert main(["osim", "check", str(_needs("Tug_of_War.osim"))]) == 0
    assert "muscles_refused" not in json.loads(capsys.readouterr().out)
    path = write_osim(tmp_path, _needs("Tug_of_War.osim").read_text(), lambda r: set_text(
        r, ".//Thelen2003Muscle[@name='muscle1']/max_isometric_force", "-1000"), "neg.osim")
    message = ("neg.osim: muscle 'muscle1': max_isometric_force_N must be > 0, got -1000.0 "
               "(the file's <max_isometric_force>)")
    assert main(["osim", "check", str(path)]) == 0
    refused = json.loads(capsys.readouterr().out)["muscles_refused"]
    assert len(refused) == 1 and refused[0].endswith(message), refused
    assert main(["osim", "forward", str(path), "--excitation", "0.5", "--duration-s", "0.01",
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_check_reports_arm26_with_and_without_its_ellipsoids(capsys):
    path = _needs("arm26.osim")
    assert main(["osim", "check", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["omitted"] == [] and report["inactive_wrap_objects"] == []
    assert report["muscles"]["BIClong"]["path"] == "opensim"   # over its ellipsoid
    # the MarkerSet as written (arm26.osim: r_acromion on the base, 0.17 m out in z)
    assert {n: m["body"] for n, m in report["markers"].items()} == {
        "r_acromion": "base", "r_humerus_epicondyle": "r_humerus",
        "r_radius_styloid": "r_ulna_radius_hand"}
    assert report["markers"]["r_acromion"]["location_m"] == [-0.01256, 0.04, 0.17]
    assert main(["osim", "check", str(path), "--omit", "TRIlonghh", "BIClonghh"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["omitted"] == ["TRIlonghh", "BIClonghh"]
    assert report["muscles"]["BIClong"]["path"] == "mujoco_tendon"   # its ellipsoid left out
    assert report["muscles"]["TRIlong"]["path"] == "opensim"


def test_check_reports_inactive_wrap_objects(capsys, tmp_path):
    """arm26 with <active>false</active> on TRIlonghh (tests/osim/osim_synthetic.deactivate):
    listed, and TRIlong still an OpenSim path (its other two wraps)."""
    path = write_osim(tmp_path, _needs("arm26.osim").read_text(),
                      lambda root: deactivate(root, ("TRIlonghh",)), name="arm26.osim")
    assert main(["osim", "check", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inactive_wrap_objects"] == ["TRIlonghh"]
    assert report["omitted"] == []
    assert report["muscles"]["TRIlong"]["path"] == "opensim"


def test_check_reports_an_eliminated_coupler_and_a_merged_body(capsys):
    """leg6dof9musc.osim: the file's CoordinateCouplerConstraint pat_angle_r (dependent
    knee_angle_pat_r, independent knee_angle_r, LinearFunction 1 0) and its toes_r (inertia
    0 0 0.0009) welded to calcn_r."""
    assert main(["osim", "check", str(_needs("leg6dof9musc.osim"))]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "knee_angle_pat_r" not in report["coordinates"]
    assert "knee_angle_r" in report["coordinates"]
    coupled = report["coupled_coordinates"]["knee_angle_pat_r"]
    assert (coupled["independent"], coupled["constraint"]) == ("knee_angle_r", "pat_angle_r")
    assert "LinearFunction" in coupled["description"]
    assert report["merged_bodies"] == {"toes_r": "calcn_r"}
    assert report["unenforced_constraints"] == [] and report["coupled"] is True


def test_check_of_a_missing_file(capsys, tmp_path):
    assert main(["osim", "check", str(tmp_path / "none.osim")]) == 2
    assert "none.osim: cannot read the file" in capsys.readouterr().err


def test_a_diverged_run_exits_3_with_its_message(capsys):
    """The osim commands' shared exit path (`cli.main.print_summary_of`, docs: exit status 3
    when a simulation or solution stops being finite, what came before written): the message
    on stderr and no summary; a finished run prints its summary and exits 0."""
    from myotwin.cli.main import print_summary_of

    def diverges():
        raise FloatingPointError("simulation diverged: the state is not finite by t = 0.5 s")

    assert print_summary_of(diverges) == 3
    out, err = capsys.readouterr()
    assert out == "" and "myotwin: simulation diverged" in err
    assert print_summary_of(lambda: {"rows_written": 3}) == 0
    assert json.loads(capsys.readouterr().out) == {"rows_written": 3}
