"""OpenSim storage files (`myotwin.osim.storage`): reading OpenSim's own files, writing ours.

References: the .sto/.mot files OpenSim wrote (shared/reference/opensim/data; their headers
promise nRows and nColumns, which the reader checks), and known values of their first rows
copied from the files by eye (exact: the reader must return the printed decimals).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from myotwin.osim.storage import StorageError, StorageWriter, read_storage
from shared_reference import SHARED, needs

DATA = SHARED / "reference" / "opensim" / "data" / "arm26"


def _data(name):
    return needs(DATA / name)


def test_reads_opensim_states_and_controls():
    states = read_storage(_data("arm26_CMC_states.sto"))
    assert states.data.shape == (441, 17)
    assert states.labels[:3] == ("time", "r_shoulder_elev", "r_elbow_flex")
    assert states.column("BRA.fiber_length")[0] == 0.09327521
    assert states.time_s[1] == 0.03013083
    assert not states.in_degrees
    controls = read_storage(_data("arm26_CMC_controls.sto"))
    assert controls.name == "controls"
    assert controls.column("BIClong")[1] == 0.06145857
    assert controls.column("r_elbow_flex_reserve")[0] == -0.00538780


def test_reads_a_motion_in_degrees():
    ik = read_storage(_data("arm26_InverseKinematics.mot"))
    assert ik.in_degrees and ik.data.shape == (121, 3)
    assert ik.column("r_shoulder_elev")[0] == -0.03394423


def test_writer_streams_rows_and_keeps_them_on_a_crash(tmp_path):
    path = tmp_path / "out.sto"
    rows = np.array([[0.0, 1.5, -2.0], [0.01, 1.25, 3.0e-17]])
    w = StorageWriter(path, "states", ("time", "a", "/forceset/m/activation"), "comment line")
    w.write_rows(rows[:1])
    # not closed yet (a crash now): what is on disk is a valid table with the one row
    partial = read_storage(path)
    assert partial.data.shape == (1, 3) and partial.header["nRows"] == "1"
    w.write_rows(rows[1:])
    w.close()
    table = read_storage(path)
    np.testing.assert_array_equal(table.data, rows)   # repr() round-trips float64 exactly
    assert table.labels == ("time", "a", "/forceset/m/activation")
    assert table.header["version"] == "1" and not table.in_degrees


@pytest.mark.parametrize("text, message", [
    ("x\nendheader\ntime a\n0 1\n1 2 3\n", "line 5: 3 values, expected 2"),
    ("x\nendheader\ntime a\n0 one\n", "line 4: 'one' is not a number"),
    ("x\nnRows=3\nendheader\ntime a\n0 1\n", "nRows=3, the table has 1"),
    ("x\nendheader\nt a\n0 1\n", "first column must be 'time', got 't'"),
    ("x\ntime a\n0 1\n", "no 'endheader' line"),
    ("x\nendheader\ntime a\n1 1\n0 1\n", "time decreases at row 2 (1.0 -> 0.0)"),
    ("x\ninDegrees=maybe\nendheader\ntime a\n0 1\n", "inDegrees must be 'yes' or 'no'"),
    ("x\nendheader\ntime a a\n0 1 2\n", "repeated column labels ['a']"),
])
def test_bad_files_are_named_with_line_and_value(tmp_path, text, message):
    path = tmp_path / "bad.sto"
    path.write_text(text)
    with pytest.raises(StorageError, match="bad.sto") as err:
        read_storage(path)
    assert message in str(err.value)


@pytest.mark.parametrize("labels, name, comment, rows, message", [
    (("time", "a b"), "n", "", [[0.0, 1.0]], "column label 'a b' is not a non-empty string"),
    (("time", ""), "n", "", [[0.0, 1.0]], "column label '' is not a non-empty string"),
    (("time", 1), "n", "", [[0.0, 1.0]], "column label 1 is not a non-empty string"),
    (("time", "a", "a"), "n", "", [[0.0, 1.0, 2.0]], "repeated column labels ['a']"),
    (("time", "a"), "n\nendheader", "", [[0.0, 1.0]], "the table name 'n\\nendheader' must"),
    (("time", "a"), "n", "x\nendheader", [[0.0, 1.0]], "comment line 'endheader' would end"),
    (("time", "a"), "n", "nRows=5", [[0.0, 1.0]], "comment line 'nRows=5' would end or change"),
    (("time", "a"), "n", "", np.zeros((2, 2, 2)), "rows have shape (2, 2, 2), expected (k, 2)"),
    (("time", "a"), "n", "", [["0", "x"]], "rows must be numbers"),
    (("time", "a"), "n", "", [[1.0, 1.0], [0.5, 1.0]], "time decreases at row 2 (1.0 -> 0.5)"),
    (("time", "a"), "n", "", [[0.0, 1.0], [np.nan, 1.0]], "row 2 is [nan, 1.0]: times must be "
     "finite and values finite or NaN (missing)"),
    (("time", "a"), "n", "", [[0.0, -np.inf]], "row 1 is [0.0, -inf]: times must be finite"),
])
def test_writer_refuses_what_the_reader_would_not_read(tmp_path, labels, name, comment, rows,
                                                       message):
    """(Each of these wrote a file that read_storage refused or misread, or was a TypeError
    of float() naming no file.)"""
    with pytest.raises(ValueError, match="out.sto") as err:
        with StorageWriter(tmp_path / "out.sto", name, labels, comment) as w:
            w.write_rows(rows)
    assert message in str(err.value)


def test_writer_refuses_a_time_before_the_last_row_written(tmp_path):
    with StorageWriter(tmp_path / "out.sto", "n", ("time", "a")) as w:
        w.write_rows([[0.0, 1.0], [1.0, 1.0]])
        with pytest.raises(ValueError, match=r"out.sto: time decreases at row 3 \(1.0 -> 0.5\)"):
            w.write_rows([[0.5, 1.0]])
    assert read_storage(tmp_path / "out.sto").data.shape == (2, 2)


def test_a_missing_value_is_written_as_nan_and_read_back_only_when_asked(tmp_path):
    """IK's marker errors are NaN at a frame without markers (osim.inverse_kinematics
    .marker_errors): the writer writes NaN, and read_storage reads it with allow_nan=True; by
    default it refuses the row, saying how to read it."""
    path = tmp_path / "errors.sto"
    with StorageWriter(path, "Model Marker Errors from IK", ("time", "rms", "max")) as w:
        w.write_rows([[0.0, 0.01, 0.02], [0.01, np.nan, np.nan]])
    with pytest.raises(StorageError, match=re.escape(
            "errors.sto, line 9: non-finite value in ['0.01', 'nan', 'nan'] (NaN marks a "
            "missing value: read_storage(..., allow_nan=True) reads it)")):
        read_storage(path)
    table = read_storage(path, allow_nan=True)
    np.testing.assert_array_equal(table.data, [[0.0, 0.01, 0.02], [0.01, np.nan, np.nan]])
    with pytest.raises(ValueError, match="allow_nan must be True or False, got 'yes'"):
        read_storage(path, allow_nan="yes")


def test_a_nan_time_is_refused_even_with_allow_nan(tmp_path):
    path = tmp_path / "t.sto"
    path.write_text("t\nendheader\ntime\ta\n0.0\t1.0\nnan\t2.0\n")
    with pytest.raises(StorageError, match=r"t.sto, line 5: non-finite value in \['nan', "
                                           r"'2.0'\]$"):
        read_storage(path, allow_nan=True)


@pytest.mark.parametrize("head", ["states\n", ""])
def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path, head):
    """(It was: the table's name began with U+FEFF, or a file starting with 'endheader' had
    no 'endheader' line.)"""
    path = tmp_path / "bom.sto"
    path.write_bytes(("\ufeff" + head + "endheader\r\ntime\ta\r\n0\t1\r\n").encode("utf-8"))
    table = read_storage(path)
    assert table.name == ("states" if head else "bom") and table.labels == ("time", "a")


@pytest.mark.parametrize("head, body, message", [
    ("nRows=2\nnRows=1\n", "0\t1\n1\t2\n", "the header gives nRows twice ('2' and '1')"),
    ("", "0\t1_0\n", "line 4: '1_0' is not a number"),
])
def test_what_opensims_reader_would_not_read_is_refused(tmp_path, head, body, message):
    """Python's float() reads '1_0' as 10.0 (OpenSim's strtod stops at the underscore), and a
    repeated header key kept its last value silently."""
    path = tmp_path / "t.sto"
    path.write_text("t\n" + head + "endheader\ntime\ta\n" + body)
    with pytest.raises(StorageError, match=re.escape(f"t.sto: {message}")
                       if message.startswith("the") else re.escape(message)):
        read_storage(path)
