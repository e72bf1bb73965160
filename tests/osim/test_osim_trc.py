"""Marker trajectories (`myotwin.osim.trc`): OpenSim's .trc files, in metres.

References: the .trc files of OpenSim's examples (shared/reference/opensim/data), values of
their first rows copied from the files by eye, and OpenSim 4.6's own reader
(`TimeSeriesTableVec3`, i.e. TRCFileAdapter) on the same files: it parses the same decimal
text, so its values times 0.001 equal ours to rounding. Synthetic files cover the units, the
missing markers and every refusal (each message names the file, the line and the value).
"""

from __future__ import annotations

import numpy as np
import pytest

from myotwin.osim.trc import TrcError, read_trc
from shared_reference import SHARED, needs

DATA = SHARED / "reference" / "opensim" / "data"
ARM = DATA / "arm26" / "arm26_elbow_flex.trc"
GAIT = DATA / "gait10dof18musc" / "subject01_walk.trc"


def test_reads_arm26_markers_in_metres():
    m = read_trc(needs(ARM))
    assert m.name == "arm26_elbow_flex.trc" and m.units == "mm"
    assert m.marker_names == ("r_acromion", "r_humerus_epicondyle", "r_radius_styloid")
    assert m.time_s.shape == (121,) and m.positions_m.shape == (121, 3, 3)
    assert m.time_s[0] == 0.0 and m.time_s[1] == 0.008333333 and m.time_s[-1] == 1.0
    np.testing.assert_allclose(m.marker("r_acromion")[0],
                               [-0.01305452443, 0.03950547557, 0.1695054756], rtol=1e-15)
    np.testing.assert_allclose(m.marker("r_radius_styloid")[-1],
                               [0.2310167559, -0.2994841418, 0.2309769121], rtol=1e-15)
    assert not np.isnan(m.positions_m).any()


def test_reads_gait_markers_with_padded_header_and_trailing_tabs():
    m = read_trc(needs(GAIT))
    assert m.positions_m.shape == (151, 41, 3) and len(m.marker_names) == 41
    assert m.marker_names[:3] == ("R.ASIS", "L.ASIS", "V.Sacral")
    assert m.marker_names[-2:] == ("L.Temple", "Top.Head")
    assert m.time_s[1] == 0.017 and m.time_s[-1] == 2.5
    np.testing.assert_allclose(m.marker("R.ASIS")[0], [0.61724762, 1.05527502, 0.17078198],
                               rtol=1e-15)
    assert not np.isnan(m.positions_m).any()


def test_unknown_marker_lists_the_known_ones():
    m = read_trc(needs(ARM))
    with pytest.raises(ValueError, match=r"arm26_elbow_flex.trc: no marker 'elbow'.*"
                       r"r_acromion"):
        m.marker("elbow")


def _opensim_markers(osim, path):
    """(times, labels, values (n, m, 3) in the file's units) as OpenSim reads the file."""
    table = osim.TimeSeriesTableVec3(str(path))
    flat_table = table.flatten()   # kept alive while its matrix view is copied
    flat = np.array(flat_table.getMatrix().to_numpy(), copy=True)
    values = flat.reshape(flat.shape[0], table.getNumColumns(), 3)
    return np.array(table.getIndependentColumn()), tuple(table.getColumnLabels()), values


@pytest.mark.parametrize("path", [ARM, GAIT], ids=["arm26", "gait10dof18musc"])
def test_matches_opensims_reader(path):
    from opensim_live import opensim_package

    osim = opensim_package()
    ours = read_trc(needs(path))
    times, labels, values = _opensim_markers(osim, path)
    assert labels == ours.marker_names
    np.testing.assert_array_equal(ours.time_s, times)
    np.testing.assert_allclose(ours.positions_m, values * 1e-3, rtol=1e-12, atol=0.0)


def _text(rows, names=("A", "B"), units="mm", num_frames=None, num_markers=None):
    num_frames = len(rows) if num_frames is None else num_frames
    num_markers = len(names) if num_markers is None else num_markers
    xyz = "\t".join(f"{a}{i}" for i in range(1, len(names) + 1) for a in "XYZ")
    return ("PathFileType\t4\t(X/Y/Z)\tbad.trc\n"
            "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\t"
            "OrigDataStartFrame\tOrigNumFrames\n"
            f"100\t100\t{num_frames}\t{num_markers}\t{units}\t100\t1\t{num_frames}\n"
            "Frame#\tTime\t" + "".join(f"{n}\t\t\t" for n in names) + "\n"
            f"\t\t{xyz}\n\n" + "".join(r + "\n" for r in rows))


FULL = ["1\t0\t1\t2\t3\t4\t5\t6", "2\t0.01\t1.5\t2.5\t3.5\t4.5\t5.5\t6.5"]


def _write(tmp_path, text, name="bad.trc"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("units, scale", [("mm", 1e-3), ("cm", 1e-2), ("m", 1.0),
                                          ("MM", 1e-3), ("M", 1.0)])
def test_units_become_metres(tmp_path, units, scale):
    m = read_trc(_write(tmp_path, _text(FULL, units=units)))
    assert m.units == units
    np.testing.assert_array_equal(m.positions_m[1], np.array([[1.5, 2.5, 3.5],
                                                              [4.5, 5.5, 6.5]]) * scale)
    np.testing.assert_array_equal(m.time_s, [0.0, 0.01])


def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path):
    """(The first header field began with U+FEFF.)"""
    path = tmp_path / "bom.trc"
    path.write_bytes(("\ufeff" + _text(FULL)).encode("utf-8"))
    np.testing.assert_array_equal(read_trc(path).time_s, [0.0, 0.01])


MISSING = ["1\t0\t1\t\t3\t4\t5\t6",          # A's Y empty: A missing
           "2\t0.01\t1\t2\t3\t\t\t",          # B's fields empty
           "3\t0.02\t1\t2\t3",                # the row ends before B
           "4\t0.03\t1\t2\t3\t4\t5",          # the row ends inside B
           "5\t0.04\tNaN\t2\t3\t4\t5\t6\t\t"]  # A written as NaN; trailing empty fields


def test_missing_marker_fields_are_nan(tmp_path):
    m = read_trc(_write(tmp_path, _text(MISSING), "gaps.trc"))
    missing = np.isnan(m.positions_m).any(axis=2)
    assert missing.tolist() == [[True, False], [False, True], [False, True], [False, True],
                                [True, False]]
    assert (np.isnan(m.positions_m).all(axis=2) == missing).all()   # all three or none
    np.testing.assert_array_equal(m.marker("A")[1], [1e-3, 2e-3, 3e-3])
    np.testing.assert_array_equal(m.marker("B")[0], [4e-3, 5e-3, 6e-3])


def test_missing_marker_fields_as_opensim_reads_them(tmp_path):
    from opensim_live import opensim_package

    osim = opensim_package()
    # OpenSim refuses short rows and drops one trailing empty field: full-width rows, B empty
    rows = [MISSING[0], MISSING[1] + "\t", FULL[1].replace("0.01", "0.02")]
    path = _write(tmp_path, _text(rows), "gaps.trc")
    ours = read_trc(path)
    times, _, values = _opensim_markers(osim, path)
    np.testing.assert_array_equal(ours.time_s, times)
    np.testing.assert_array_equal(np.isnan(ours.positions_m), np.isnan(values))
    np.testing.assert_allclose(ours.positions_m, values * 1e-3, rtol=1e-12, atol=0.0)


HEADER_LINES = "PathFileType\t4\t(X/Y/Z)\tbad.trc\nDataRate\tNumFrames\n"


@pytest.mark.parametrize("text, line, problem, value", [
    (HEADER_LINES, 3, "the file ends inside the 5 header lines", "2 lines"),
    ("Path\t4\n" + _text(FULL).split("\n", 1)[1], 1, "the first field must be PathFileType",
     "Path"),
    (_text(FULL, num_frames="two"), 3, "NumFrames must be a whole number", "two"),
    (_text(FULL, num_markers="2.0"), 3, "NumMarkers must be a whole number", "2.0"),
    (_text(FULL, units="in"), 3, "Units must be mm, cm or m", "in"),
    (_text(FULL, num_markers=3), 4, "NumMarkers (line 3) is 3", ["A", "B"]),
    (_text(FULL, names=("A", "A")), 4, "a marker name is given twice", "A"),
    (_text(FULL).replace("\tY2", "\tQ2"), 5, "coordinate labels must be X1 Y1 Z1", "Q2"),
    (_text([FULL[0], "2\t0.01\t1\t2\tx3\t4\t5\t6"]), 8, "marker 1 is not a number", "x3"),
    (_text([FULL[0], "2\t0.01\t1\t2\t3\t4\t5\t6\t7"]), 8, "more fields than 2 + 3 NumMarkers",
     9),
    (_text([FULL[0], "2\tinf\t1\t2\t3\t4\t5\t6"]), 8, "the time (column 2) is not finite",
     "inf"),
    (_text([FULL[0], "2\tnan\t1\t2\t3\t4\t5\t6"]), 8, "the time (column 2) is not finite",
     "nan"),
    (_text([FULL[0], "2\t\t1\t2\t3\t4\t5\t6"]), 8, "the time (column 2) is missing", ""),
    (_text([FULL[0], "2\t0.0a\t1\t2\t3\t4\t5\t6"]), 8, "the time (column 2) is not a number",
     "0.0a"),
    (_text([FULL[0], "2\t0\t1\t2\t3\t4\t5\t6"]), 8, "times must increase strictly", 0.0),
    (_text([FULL[1], FULL[0]]), 8, "times must increase strictly", 0.0),
    (_text([FULL[0], "2\t0.01\t1\t2\t-inf\t4\t5\t6"]), 8, "marker 1 is infinite", "-inf"),
    (_text(FULL, num_frames=3), 3, "NumFrames must equal the number of data rows, 2", 3),
    (_text([FULL[0], "", FULL[1]]), 9, "data after the blank line 8", FULL[1]),
])
def test_bad_files_are_named_with_line_and_value(tmp_path, text, line, problem, value):
    with pytest.raises(TrcError) as err:
        read_trc(_write(tmp_path, text))
    message = str(err.value)
    assert message.startswith(f"bad.trc: line {line}: "), message
    assert problem in message and message.endswith(f", got {value!r}"), message


def test_missing_file_is_named(tmp_path):
    with pytest.raises(TrcError, match="absent.trc: cannot read the file"):
        read_trc(tmp_path / "absent.trc")
