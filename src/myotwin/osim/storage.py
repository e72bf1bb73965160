"""OpenSim's storage files (.sto, .mot): read a table, write one.

The format (OpenSim `Storage`, version 1; also what `TimeSeriesTable` writes): header lines
(the first is the table's name; `key=value` lines such as `version=1`, `nRows=`,
`nColumns=`, `inDegrees=yes|no`; free text), a line `endheader`, a line of column labels, then
one row per line, all separated by tabs or spaces. The first column is time (s). Reading
checks what the header promises (nRows, nColumns when given) and converts angles given in
degrees only when asked (`in_degrees` is reported; which columns are angles is the caller's
knowledge). Errors name the file, the line and the value (`StorageError`, a ValueError).

Writing streams: `StorageWriter` writes the header with the row count left blank-padded and
fills it in at `close`, so a crash leaves every row written so far readable (nRows then reads
as the number of rows at the last `flush`). A value may be NaN (missing; `read_storage`
reads it back when asked, `allow_nan`), a time may not, and nothing may be infinite.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TextIO

import numpy as np

from myotwin.scalars import number_from_text, require_flag

#: Width reserved for the row count in a streamed header (rows up to 10**12 - 1).
_COUNT_WIDTH = 12
#: The header keys the writer writes itself (and the reader checks).
_HEADER_KEYS = ("version", "nRows", "nColumns", "inDegrees")


class StorageError(ValueError):
    """A storage file that cannot be read as a table (names file, line and value)."""


@dataclasses.dataclass(frozen=True)
class Storage:
    """A table read from a .sto/.mot file: name (first header line), labels (column labels,
    "time" first), data (n_rows, n_columns) float64, in_degrees (the header's flag; False when
    absent), header (key -> value of the `key=value` header lines)."""

    name: str
    labels: tuple[str, ...]
    data: np.ndarray
    in_degrees: bool
    header: dict[str, str]

    @property
    def time_s(self) -> np.ndarray:
        """The time column (s)."""
        return self.data[:, 0]

    def column(self, label: str) -> np.ndarray:
        """The column named `label`; StorageError naming the file's labels if absent."""
        if label not in self.labels:
            raise StorageError(f"{self.name}: no column {label!r}; columns are "
                               f"{list(self.labels)}")
        return self.data[:, self.labels.index(label)]


def read_storage(path, *, allow_nan: bool = False) -> Storage:
    """The table in the OpenSim storage file `path` (module docstring). Every value must be
    finite, except that allow_nan=True reads NaN (a missing value, as `StorageWriter` writes
    it, e.g. in IK's marker errors at a frame without markers) outside the time column."""
    require_flag("read_storage", "allow_nan", allow_nan)
    path = Path(path)
    where = path.name
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()   # a BOM is no text
    except (OSError, UnicodeDecodeError) as err:
        raise StorageError(f"{where}: cannot read the file: {err}") from None
    try:
        end = next(k for k, line in enumerate(lines) if line.strip().lower() == "endheader")
    except StopIteration:
        raise StorageError(f"{where}: no 'endheader' line: not an OpenSim storage file") from None
    name = lines[0].strip() if end > 0 else path.stem
    header = {}
    for line in lines[1:end]:
        key, sep, value = line.strip().partition("=")
        key, value = key.strip(), value.strip()
        if sep and key in _HEADER_KEYS and header.get(key, value) != value:
            raise StorageError(f"{where}: the header gives {key} twice ({header[key]!r} and "
                               f"{value!r})")
        if sep:
            header[key] = value
    if end + 1 >= len(lines) or not lines[end + 1].split():
        raise StorageError(f"{where}, line {end + 2}: expected the column labels after "
                           "'endheader'")
    labels = tuple(lines[end + 1].split())
    if labels[0].lower() != "time":
        raise StorageError(f"{where}, line {end + 2}: the first column must be 'time', got "
                           f"{labels[0]!r}")
    if len(set(labels)) != len(labels):
        dup = sorted({x for x in labels if labels.count(x) > 1})
        raise StorageError(f"{where}, line {end + 2}: repeated column labels {dup}")
    rows = []
    for k in range(end + 2, len(lines)):
        fields = lines[k].split()
        if not fields:
            continue
        if len(fields) != len(labels):
            raise StorageError(f"{where}, line {k + 1}: {len(fields)} values, expected "
                               f"{len(labels)} (one per column label)")
        try:
            row = [number_from_text(x) for x in fields]
        except ValueError:
            bad = next(x for x in fields if not is_number(x))
            raise StorageError(f"{where}, line {k + 1}: {bad!r} is not a number") from None
        if not all(math.isfinite(x) or (allow_nan and math.isnan(x) and i > 0)
                   for i, x in enumerate(row)):
            only_missing = math.isfinite(row[0]) and not any(math.isinf(x) for x in row)
            hint = (" (NaN marks a missing value: read_storage(..., allow_nan=True) reads it)"
                    if only_missing and not allow_nan else "")
            raise StorageError(f"{where}, line {k + 1}: non-finite value in {fields}{hint}")
        rows.append(row)
    data = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(labels))
    _check_count(where, header, "nRows", data.shape[0])
    _check_count(where, header, "nColumns", data.shape[1])
    if data.shape[0] > 1 and np.any(np.diff(data[:, 0]) < 0.0):
        k = int(np.argmax(np.diff(data[:, 0]) < 0.0))
        raise StorageError(f"{where}: time decreases at row {k + 2} "
                           f"({float(data[k, 0])!r} -> {float(data[k + 1, 0])!r})")
    flag = header.get("inDegrees", "no").lower()
    if flag not in ("yes", "no"):
        raise StorageError(f"{where}: inDegrees must be 'yes' or 'no', got {flag!r}")
    return Storage(name, labels, data, flag == "yes", header)


def is_number(text: str) -> bool:
    try:
        number_from_text(text)
    except ValueError:
        return False
    return True


def _check_count(where: str, header: dict, key: str, actual: int) -> None:
    if key not in header:
        return
    try:
        promised = int(header[key])
    except ValueError:
        raise StorageError(f"{where}: {key}={header[key]!r} is not an integer") from None
    if promised != actual:
        raise StorageError(f"{where}: the header says {key}={promised}, the table has {actual}")


class StorageWriter:
    """Streams rows into an OpenSim storage file (version 1, inDegrees=no).

    with StorageWriter(path, "states", labels) as w:
        w.write_rows(rows)    # (k, len(labels)); written and flushed at once

    Writes only what `read_storage` reads back: ValueError naming the file for a label that
    is not one whitespace-free string or is repeated, a name or comment line that would end or
    change the header, rows that are not numbers of shape (k, len(labels)) or a decreasing time.
    """

    def __init__(self, path, name: str, labels, comment: str = ""):
        self.path = Path(path)
        self.labels = tuple(labels)
        if not self.labels or self.labels[0] != "time":
            raise ValueError(f"{self.path.name}: the first column label must be 'time'")
        bad = next((x for x in self.labels if not (isinstance(x, str) and x.split() == [x])),
                   None)
        if bad is not None:
            raise ValueError(f"{self.path.name}: column label {bad!r} is not a non-empty "
                             "string without whitespace (the reader splits labels at it)")
        if len(set(self.labels)) != len(self.labels):
            dup = sorted({x for x in self.labels if self.labels.count(x) > 1})
            raise ValueError(f"{self.path.name}: repeated column labels {dup}")
        if len(str(name).splitlines()) > 1 or str(name).strip().lower() == "endheader":
            raise ValueError(f"{self.path.name}: the table name {name!r} must be one line, "
                             "not 'endheader'")
        for line in comment.splitlines():
            key, sep, _ = line.partition("=")
            if line.strip().lower() == "endheader" or (sep and key.strip() in _HEADER_KEYS):
                raise ValueError(f"{self.path.name}: comment line {line!r} would end or change "
                                 f"the header (the writer writes {'/'.join(_HEADER_KEYS)}=)")
        self._last_time = -math.inf
        self.rows = 0
        self._file: TextIO = self.path.open("w")
        self._file.write(f"{name}\nversion=1\n")
        self._count_at = self._file.tell() + len("nRows=")
        self._file.write(f"nRows={'0'.rjust(_COUNT_WIDTH)}\n")
        self._file.write(f"nColumns={len(self.labels)}\ninDegrees=no\n")
        for line in comment.splitlines():
            self._file.write(f"{line}\n")
        self._file.write("endheader\n" + "\t".join(self.labels) + "\n")
        self._file.flush()

    def write_rows(self, rows) -> None:
        """Append rows (k, n_columns) and flush them, with the row count updated."""
        try:
            rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{self.path.name}: rows must be numbers: {err}") from None
        if rows.ndim != 2 or rows.shape[1] != len(self.labels):
            raise ValueError(f"{self.path.name}: rows have shape {rows.shape}, expected (k, "
                             f"{len(self.labels)}) (one value per column)")
        if not np.all(np.isfinite(rows[:, 0])) or np.any(np.isinf(rows)):
            k = int(np.argmax(~np.isfinite(rows[:, 0]) | np.any(np.isinf(rows), axis=1)))
            raise ValueError(f"{self.path.name}: row {self.rows + k + 1} is {rows[k].tolist()}: "
                             "times must be finite and values finite or NaN (missing)")
        times = np.concatenate([[self._last_time], rows[:, 0]])
        if np.any(np.diff(times) < 0.0):
            k = int(np.argmax(np.diff(times) < 0.0))
            raise ValueError(f"{self.path.name}: time decreases at row {self.rows + k + 1} "
                             f"({float(times[k])!r} -> {float(times[k + 1])!r})")
        for row in rows:
            self._file.write("\t".join(repr(float(x)) for x in row) + "\n")
        self.rows += rows.shape[0]
        self._last_time = float(times[-1])
        self._update_count()

    def _update_count(self) -> None:
        end = self._file.tell()
        self._file.seek(self._count_at)
        self._file.write(str(self.rows).rjust(_COUNT_WIDTH))
        self._file.seek(end)
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._update_count()
            self._file.close()

    def __enter__(self) -> "StorageWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
