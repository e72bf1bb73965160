"""Bad input to `myotwin osim inverse-kinematics` is refused naming the file, the element and
the value (osim/inverse_kinematics.py, osim/markers.py); a coordinate task pulls its
coordinate as OpenSim's IKCoordinateTask does (checked in closed form below)."""

from __future__ import annotations

import numpy as np
import pytest

from myotwin import osim
from myotwin.osim.inverse_kinematics import run
from myotwin.osim.markers import read_markers
from myotwin.osim.storage import read_storage
from myotwin.osim.trc import read_trc, write_trc
from shared_reference import SHARED, needs

REF = SHARED / "reference" / "opensim"
ARM = REF / "models" / "arm26.osim"


def _arm_trc(tmp_path, frames=3):
    trc = read_trc(needs(REF / "data" / "arm26" / "arm26_elbow_flex.trc"))
    path = tmp_path / "arm.trc"
    write_trc(path, trc.time_s[:frames], trc.marker_names,
              trc.positions_m[:frames] + np.array([0.0, 0.8, 0.0]))
    return path


def _tasks(tmp_path, body: str):
    path = tmp_path / "tasks.xml"
    path.write_text(f'<OpenSimDocument Version="40000"><IKTaskSet><objects>{body}'
                    "</objects></IKTaskSet></OpenSimDocument>")
    return path


def _refused(tmp_path, *expected, tasks=None, markers=None, **kw):
    with pytest.raises(ValueError) as info:
        run(needs(ARM), markers or _arm_trc(tmp_path), tmp_path / "out", tasks_path=tasks, **kw)
    for text in expected:
        assert text in str(info.value), f"{text!r} not in: {info.value}"


def test_a_task_for_a_marker_the_model_lacks(tmp_path):
    _refused(tmp_path, "tasks.xml", "IKMarkerTask 'r_shoulder'", "no such marker",
             tasks=_tasks(tmp_path, '<IKMarkerTask name="r_shoulder"><weight>1</weight>'
                                    "</IKMarkerTask>"))


def test_a_task_for_a_marker_the_file_lacks(tmp_path):
    trc = read_trc(_arm_trc(tmp_path))
    two = tmp_path / "two.trc"
    write_trc(two, trc.time_s, trc.marker_names[:2], trc.positions_m[:, :2])
    _refused(tmp_path, "IKMarkerTask 'r_radius_styloid'", "two.trc", "no such marker",
             markers=two, tasks=_tasks(tmp_path, '<IKMarkerTask name="r_radius_styloid">'
                                                 "<weight>1</weight></IKMarkerTask>"))


def test_a_coordinate_task_for_an_unknown_coordinate(tmp_path):
    _refused(tmp_path, "IKCoordinateTask 'r_wrist'", "no such coordinate",
             tasks=_tasks(tmp_path, '<IKCoordinateTask name="r_wrist"><weight>1</weight>'
                                    "</IKCoordinateTask>"))


def test_no_marker_in_common(tmp_path):
    trc = read_trc(_arm_trc(tmp_path))
    other = tmp_path / "other.trc"
    write_trc(other, trc.time_s, ["a", "b", "c"], trc.positions_m)
    _refused(tmp_path, "other.trc", "no marker of the model", markers=other)


def test_a_time_range_without_frames(tmp_path):
    _refused(tmp_path, "arm.trc", "no frame between 5.0 s and 6.0 s", start_time_s=5.0,
             end_time_s=6.0)


def test_a_bad_accuracy(tmp_path):
    _refused(tmp_path, "--accuracy", "2.0", accuracy=2.0)


@pytest.mark.parametrize("kw, message", [
    ({"accuracy": "1e-6"}, "--accuracy must be a number in (0, 1), got '1e-6'"),
    ({"start_time_s": True}, "arm.trc: the start time must be a number, got True"),
    ({"end_time_s": "1"}, "arm.trc: the end time must be a number, got '1'"),
    ({"start_time_s": 0.8, "end_time_s": 0.2}, "arm.trc: the time range [0.8, 0.2] s ends"),
])
def test_arguments_that_are_not_numbers_in_order(tmp_path, kw, message):
    """(A string was float()'s or a comparison's error, True a start time of 1 s.)"""
    _refused(tmp_path, message, **kw)


def test_a_marker_on_an_offset_frame(tmp_path):
    text = needs(ARM).read_text()
    at = text.index('<Marker name="r_acromion">')
    text = text[:at] + text[at:].replace(
        "<socket_parent_frame>/bodyset/base</socket_parent_frame>",
        "<socket_parent_frame>/bodyset/base/base_offset</socket_parent_frame>", 1)
    path = tmp_path / "arm_offset_marker.osim"
    path.write_text(text)
    with pytest.raises(osim.OsimError, match=r"arm_offset_marker.osim: Marker 'r_acromion'.*"
                                             r"/ground or /bodyset/<body>.*base_offset"):
        read_markers(path)


def test_a_heavy_coordinate_task_holds_its_coordinate(tmp_path):
    """IKCoordinateTask manual_value (rad, as written) with a weight 1e8 times the markers':
    the elbow ends within 1e-6 rad of the value (the markers' pull over the task's weight,
    ~1e-3 m^2 / 1e8), and a default_value task on the shoulder holds it at its default 0."""
    tasks = _tasks(tmp_path, '<IKCoordinateTask name="r_elbow_flex"><weight>1e8</weight>'
                             "<value_type>manual_value</value_type><value>1.0</value>"
                             '</IKCoordinateTask><IKCoordinateTask name="r_shoulder_elev">'
                             "<weight>1e8</weight></IKCoordinateTask>"
                             '<IKMarkerTask name="r_radius_styloid"><weight>1</weight>'
                             "</IKMarkerTask>")
    summary = run(needs(ARM), _arm_trc(tmp_path), tmp_path / "out", tasks_path=tasks)
    assert summary["coordinate_tasks"] == {"r_elbow_flex": {"weight": 1e8, "value": 1.0},
                                           "r_shoulder_elev": {"weight": 1e8, "value": 0.0}}
    q = read_storage(tmp_path / "out" / "inverse_kinematics.mot").data[:, 1:]
    np.testing.assert_allclose(q, np.tile([0.0, 1.0], (q.shape[0], 1)), rtol=0, atol=1e-6)


def _setup(tmp_path, body: str):
    path = tmp_path / "ik_setup.xml"
    path.write_text(f'<OpenSimDocument Version="40000"><InverseKinematicsTool name="x">{body}'
                    "<IKTaskSet><objects /></IKTaskSet></InverseKinematicsTool>"
                    "</OpenSimDocument>")
    return path


def test_a_setup_with_a_penalty_constraint_weight_is_refused(tmp_path):
    from myotwin.osim.ik_setup import read_ik_setup

    with pytest.raises(ValueError, match=r"ik_setup.xml: InverseKinematicsTool: "
                                         r"<constraint_weight> must be Inf.*'20'"):
        read_ik_setup(_setup(tmp_path, "<constraint_weight>20</constraint_weight>"))


def test_a_setup_without_model_or_markers_is_refused(tmp_path, capsys):
    from myotwin.cli.main import main

    setup = _setup(tmp_path, "<model_file>Unassigned</model_file>")
    assert main(["osim", "inverse-kinematics", "--setup", str(setup), "--out",
                 str(tmp_path / "out")]) == 2
    assert "give FILE and --markers, or a --setup" in capsys.readouterr().err
