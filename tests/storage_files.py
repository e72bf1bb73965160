"""OpenSim storage files written by tests (version 1, inDegrees=no, full precision)."""

from __future__ import annotations

import numpy as np


def write_mot(path, times, columns: dict[str, np.ndarray], name: str = "loads"):
    """`path` as a storage table named `name`: a time column, then `columns` by label."""
    labels = ["time", *columns]
    rows = np.column_stack([times, *columns.values()])
    path.write_text(f"{name}\nversion=1\nnRows={rows.shape[0]}\nnColumns={len(labels)}\n"
                    "inDegrees=no\nendheader\n" + "\t".join(labels) + "\n"
                    + "".join("\t".join(repr(float(x)) for x in row) + "\n" for row in rows))
    return path
