"""Marker trajectories (.trc, the Motion Analysis format OpenSim reads): read them, in metres
(`read_trc`), and write them (`write_trc`).

    markers = read_trc("subject01_walk.trc")
    markers.time_s                 # (n_frames,) s, from the Time column
    markers.marker("R.ASIS")       # (n_frames, 3) m, NaN in frames where it is missing

The format (OpenSim's `TRCFileAdapter` is the reference for its meaning), fields separated
by tabs:

    PathFileType  4  (X/Y/Z)  <file name>
    DataRate  CameraRate  NumFrames  NumMarkers  Units  OrigDataRate  OrigDataStartFrame  ...
    <the values of the keys above>
    Frame#  Time  <marker 1>  <empty>  <empty>  <marker 2>  <empty>  <empty> ...
    <empty>  <empty>  X1  Y1  Z1  X2  Y2  Z2 ...
    <optional blank lines>
    <frame>  <time>  <x1>  <y1>  <z1>  <x2> ...      one row per frame

Empty fields of lines 2-5 are padding (OpenSim erases them too), numbers may be padded with
spaces, and a row may end with empty fields (tabs). Coordinates are in the file's Units ("mm",
"cm" or "m", any case) and are returned in metres. A marker is missing in a frame when any of
its three fields is empty (or `NaN`), or the row ends before it: its three coordinates are then
NaN, as in OpenSim (which refuses rows shorter than 2 + 3 NumMarkers fields; this reader
reads them as missing markers). The Frame# column is not used (OpenSim discards it); time is
the Time column, which must be finite and strictly increasing.

Reading checks what the header promises: NumMarkers marker names (distinct) and X/Y/Z labels
for them, NumFrames data rows (OpenSim 4.6 does not check this count), no row wider than
2 + 3 NumMarkers non-empty fields, every non-empty field a number. A blank line ends the data
for OpenSim; data after one is refused here. Errors name the file, the line and the value
(`TrcError`, a ValueError).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from myotwin.osim.storage import is_number
from myotwin.scalars import number_from_text

#: Scale of each accepted Units value (lower case) to metres.
UNITS_TO_M = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}
_HEADER_LINES = 5


class TrcError(ValueError):
    """A .trc file that cannot be read as marker trajectories (names file, line and value)."""


@dataclasses.dataclass(frozen=True)
class MarkerTrajectories:
    """Markers read from a .trc file: name (the file's name), time_s (n_frames,),
    marker_names, positions_m (n_frames, n_markers, 3) in metres with NaN where a marker is
    missing, units (the file's Units value as written)."""

    name: str
    time_s: np.ndarray
    marker_names: tuple[str, ...]
    positions_m: np.ndarray
    units: str

    def marker(self, name: str) -> np.ndarray:
        """The trajectory (n_frames, 3) of marker `name`; TrcError listing the markers if
        there is none of that name."""
        if name not in self.marker_names:
            raise TrcError(f"{self.name}: no marker {name!r}; markers are "
                           f"{list(self.marker_names)}")
        return self.positions_m[:, self.marker_names.index(name)]


def _error(where: str, line: int, problem: str, value) -> TrcError:
    return TrcError(f"{where}: line {line}: {problem}, got {value!r}")


def _fields(line: str) -> list[str]:
    """The non-empty tab-separated fields of a header line, stripped."""
    return [f.strip() for f in line.split("\t") if f.strip()]


def _count(where: str, header: dict[str, str], key: str) -> int:
    value = header[key]
    try:
        count = int(value)
    except ValueError:
        raise _error(where, 3, f"{key} must be a whole number", value) from None
    if count < 0:
        raise _error(where, 3, f"{key} must not be negative", value)
    return count


def _header(where: str, lines: list[str]) -> tuple[dict[str, str], int, str, float]:
    """The header keys -> values (lines 2-3), NumFrames, Units as written, its scale to m."""
    first = lines[0].split()
    if not first or first[0] != "PathFileType":
        raise _error(where, 1, "not a .trc file: the first field must be PathFileType",
                     first[0] if first else lines[0])
    keys, values = _fields(lines[1]), _fields(lines[2])
    if len(values) != len(keys):
        raise _error(where, 3, f"line 2 has {len(keys)} header keys, line 3 must have as "
                     "many values", values)
    header = dict(zip(keys, values))
    for key in ("NumFrames", "NumMarkers", "Units"):
        if key not in header:
            raise _error(where, 2, f"the header key {key} is missing", keys)
    units = header["Units"]
    if units.lower() not in UNITS_TO_M:
        raise _error(where, 3, "Units must be mm, cm or m", units)
    return header, _count(where, header, "NumFrames"), units, UNITS_TO_M[units.lower()]


def _marker_names(where: str, lines: list[str], n_markers: int) -> tuple[str, ...]:
    labels = _fields(lines[3])
    for k, expected in enumerate(("Frame#", "Time")):
        if len(labels) <= k or labels[k] != expected:
            raise _error(where, 4, f"column {k + 1} must be labelled {expected}",
                         labels[k] if len(labels) > k else lines[3])
    names = tuple(labels[2:])
    if len(names) != n_markers:
        raise _error(where, 4, f"NumMarkers (line 3) is {n_markers}, the line must name as "
                     "many markers", list(names))
    seen = set()
    for name in names:
        if name in seen:
            raise _error(where, 4, "a marker name is given twice", name)
        seen.add(name)
    xyz = _fields(lines[4])
    expected = [f"{axis}{i}" for i in range(1, n_markers + 1) for axis in "XYZ"]
    if xyz != expected:
        bad = next((a for a, b in zip(xyz, expected) if a != b), xyz[len(expected):] or xyz)
        raise _error(where, 5, f"the coordinate labels must be X1 Y1 Z1 ... Z{n_markers}", bad)
    return names


def _row(where: str, line_no: int, line: str, n_markers: int) -> tuple[float, np.ndarray]:
    """(time, positions (n_markers, 3) in the file's units, NaN where missing) of one row."""
    width = 2 + 3 * n_markers
    fields = [f.strip() for f in line.split("\t")]
    while len(fields) > width and not fields[-1]:
        fields.pop()
    if len(fields) > width:
        raise _error(where, line_no, f"more fields than 2 + 3 NumMarkers = {width}",
                     len(fields))
    fields += [""] * (width - len(fields))
    if not fields[1]:
        raise _error(where, line_no, "the time (column 2) is missing", fields[1])
    try:
        time = number_from_text(fields[1])
    except ValueError:
        raise _error(where, line_no, "the time (column 2) is not a number", fields[1]) from None
    if not math.isfinite(time):
        raise _error(where, line_no, "the time (column 2) is not finite", fields[1])
    xyz = np.full((n_markers, 3), np.nan)
    for m in range(n_markers):
        texts = fields[2 + 3 * m:5 + 3 * m]
        try:
            values = [number_from_text(t) if t else math.nan for t in texts]
        except ValueError:
            bad = next(t for t in texts if t and not is_number(t))
            raise _error(where, line_no, f"a coordinate of marker {m + 1} is not a number",
                         bad) from None
        if any(math.isinf(v) for v in values):
            raise _error(where, line_no, f"a coordinate of marker {m + 1} is infinite",
                         next(t for t, v in zip(texts, values) if math.isinf(v)))
        if not any(math.isnan(v) for v in values):
            xyz[m] = values
    return time, xyz



def read_trc(path) -> MarkerTrajectories:
    """The marker trajectories in the .trc file `path`, in metres (module docstring)."""
    path = Path(path)
    where = path.name
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")   # a BOM is no text
    except (OSError, UnicodeDecodeError) as err:
        raise TrcError(f"{where}: cannot read the file: {err}") from None
    if lines and not lines[-1]:
        lines.pop()   # the end of the last line
    if len(lines) < _HEADER_LINES:
        raise _error(where, len(lines) + 1, "the file ends inside the 5 header lines",
                     f"{len(lines)} lines")
    header, n_frames, units, scale = _header(where, lines)
    names = _marker_names(where, lines, _count(where, header, "NumMarkers"))
    times, positions = [], []
    blank = None
    for k in range(_HEADER_LINES, len(lines)):
        if not lines[k].strip():
            if times and blank is None:
                blank = k + 1
            continue
        if blank is not None:
            raise _error(where, k + 1, f"data after the blank line {blank} (OpenSim stops "
                         "reading at a blank line)", lines[k][:40])
        time, xyz = _row(where, k + 1, lines[k], len(names))
        if times and not time > times[-1]:
            raise _error(where, k + 1, f"times must increase strictly (the row before has "
                         f"{times[-1]!r})", time)
        times.append(time)
        positions.append(xyz)
    if len(times) != n_frames:
        raise _error(where, 3, f"NumFrames must equal the number of data rows, "
                     f"{len(times)}", n_frames)
    time_s = np.asarray(times, dtype=np.float64)
    positions_m = np.asarray(positions, dtype=np.float64).reshape(len(times), len(names), 3)
    return MarkerTrajectories(where, time_s, names, positions_m * scale, units)


def write_trc(path, time_s, marker_names, positions_m) -> None:
    """Write marker trajectories (n_frames,), names, (n_frames, n_markers, 3) m to `path` in
    the format above (Units m; numbers in shortest round-trip form; NaN written as an empty
    field, a missing marker). DataRate is 1 / the first time step (1 for a single frame)."""
    path = Path(path)
    time_s = np.asarray(time_s, dtype=np.float64).reshape(-1)
    xyz = np.asarray(positions_m, dtype=np.float64)
    names = tuple(marker_names)
    if xyz.shape != (time_s.size, len(names), 3):
        raise ValueError(f"{path.name}: positions_m must be (n_frames, n_markers, 3) = "
                         f"({time_s.size}, {len(names)}, 3), got {xyz.shape}")
    rate = 1.0 / (time_s[1] - time_s[0]) if time_s.size > 1 else 1.0
    lines = [f"PathFileType\t4\t(X/Y/Z)\t{path.name}",
             "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\t"
             "OrigDataStartFrame\tOrigNumFrames",
             f"{rate!r}\t{rate!r}\t{time_s.size}\t{len(names)}\tm\t{rate!r}\t1\t{time_s.size}",
             "Frame#\tTime\t" + "\t\t\t".join(names),
             "\t\t" + "\t".join(f"X{i}\tY{i}\tZ{i}" for i in range(1, len(names) + 1))]
    for k, (t, row) in enumerate(zip(time_s, xyz.reshape(time_s.size, -1))):
        values = ("" if math.isnan(v) else repr(float(v)) for v in row)
        lines.append(f"{k + 1}\t{float(t)!r}\t" + "\t".join(values))
    path.write_text("\n".join(lines) + "\n")
