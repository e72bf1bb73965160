"""Time-varying actuator controls from a CSV table (`myotwin mjcf forward --controls FILE`).

Format, the layout of the `states.csv` that command writes: a header row `time_s,<actuator>,...`
then one row per time, numbers only (SI: seconds; a muscle's column is its excitation, MuJoCo's
ctrl of its actuator, in [0, 1]; another actuator's column its ctrl). Times strictly
increasing, every value finite; at least one row. UTF-8, a byte-order mark (as spreadsheets
write) allowed.

Values between rows are interpolated linearly and held at the first and last row outside the
file's time range (what OpenSim's ControlLinear does with a controls file, `osim/forward.py`).
A fixed-step simulation takes the values at each step's start, held over the step: what a
MuJoCo control loop does when it sets `d.ctrl` from the table before each `mj_step`
(tests/musculoskeletal/test_mjcf_forward.py checks the run against that loop).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from myotwin.scalars import number_from_text


class ControlsTable(NamedTuple):
    """A read controls file: `name` (its path, for messages), `time_s` (n_rows,) and the
    columns by header name, each (n_rows,)."""

    name: str
    time_s: np.ndarray
    columns: dict[str, np.ndarray]

    def at(self, column: str, t: np.ndarray) -> np.ndarray:
        """The column's values at times t (s): linear between rows, held outside."""
        return np.interp(t, self.time_s, self.columns[column])


def read_controls_csv(path) -> ControlsTable:
    """Read and check a controls file (module docstring). ValueError naming the file and the
    row, column or value at fault."""
    name = str(path)
    if not Path(name).is_file():
        raise ValueError(f"{name}: no such controls file")
    try:
        with open(name, newline="", encoding="utf-8-sig") as f:   # a spreadsheet's BOM: skipped
            rows = [r for r in csv.reader(f) if r]
    except UnicodeDecodeError as err:
        raise ValueError(f"{name}: not a text (UTF-8) CSV file: {err.reason} at byte "
                         f"{err.start}") from None
    if not rows:
        raise ValueError(f"{name}: empty controls file (expected a header "
                         "time_s,<actuator>,...)")
    header = [h.strip() for h in rows[0]]
    if header[0] != "time_s" or len(header) < 2:
        raise ValueError(f"{name}: the header must be time_s followed by actuator names, got "
                         f"{','.join(header)!r}")
    seen = set()
    for h in header[1:]:
        if not h or h in seen or h == "time_s":
            raise ValueError(f"{name}: column name {h!r} is empty or repeated")
        seen.add(h)
    if len(rows) < 2:
        raise ValueError(f"{name}: no rows after the header")
    values = np.empty((len(rows) - 1, len(header)))
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{name}: row {i} has {len(row)} values, the header "
                             f"{len(header)}")
        for j, cell in enumerate(row):
            try:
                v = number_from_text(cell)     # float() would read "1_0" as 10
            except ValueError:
                raise ValueError(f"{name}: row {i}, column {header[j]!r}: {cell!r} is not a "
                                 "number") from None
            if not math.isfinite(v):
                raise ValueError(f"{name}: row {i}, column {header[j]!r}: {cell!r} is not "
                                 "finite")
            values[i - 2, j] = v
    time_s = values[:, 0]
    back = np.flatnonzero(np.diff(time_s) <= 0.0)
    if back.size:
        i = int(back[0]) + 3
        raise ValueError(f"{name}: row {i}: time_s {float(time_s[i - 2])!r} does not increase "
                         f"(the row before: {float(time_s[i - 3])!r})")
    return ControlsTable(name, time_s, {h: values[:, j] for j, h in enumerate(header)
                                        if j > 0})


def check_unit_interval(table: ControlsTable, column: str) -> None:
    """ValueError naming the row and time if the column (an excitation) leaves [0, 1]."""
    values = table.columns[column]
    bad = np.flatnonzero((values < 0.0) | (values > 1.0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{table.name}: column {column!r}, row {k + 2} (t = "
                         f"{float(table.time_s[k])!r} s): excitation {float(values[k])!r} is "
                         "outside [0, 1]")
