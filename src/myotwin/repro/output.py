"""What every reproduction does with its output directory (`myotwin repro NAME --out DIR`).

A reproduction is an entry point: it enables float64 before anything is compiled (STYLE 14),
writes figures with matplotlib's non-interactive Agg backend (no display on CI machines) and
ends with `summary.json`. The summary is written whole or not at all (a temporary file renamed
into place), so a crash while writing never leaves half a JSON file behind.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np


def prepare_output(out_dir) -> pathlib.Path:
    """Configure JAX (`myotwin.configure_jax`: float64, embedded constants) and create
    `out_dir` (and its parents); returns it as a Path."""
    from myotwin.jax_setup import configure_jax

    configure_jax()  # entry point (STYLE 14)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _json_value(x):
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"summary.json: a value of type {type(x).__name__} is not JSON "
                    f"serialisable: {x!r}")


def write_summary(out_dir: pathlib.Path, summary: dict) -> dict:
    """Write `summary` to out_dir/summary.json (indent 2; NumPy scalars and arrays as plain
    numbers and lists) and return it."""
    path = pathlib.Path(out_dir) / "summary.json"
    tmp = path.with_suffix(".json.partial")
    tmp.write_text(json.dumps(summary, indent=2, default=_json_value))
    tmp.replace(path)
    return summary
