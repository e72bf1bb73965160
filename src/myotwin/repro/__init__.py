"""Reproductions of the seeds' figures and tables.

Each reproduction is a plain function `run(out_dir: pathlib.Path, quick: bool = False) -> dict`
that writes its figures (matplotlib, Agg) and `summary.json` into `out_dir` and returns the
summary (`output.py`: float64 on, the directory, Agg figures, summary.json). `quick=True` is the
CI size (under a minute on the 2-CPU machine). `REGISTRY` maps the
CLI name (`myotwin repro NAME --out DIR`) to the function; modules are imported on demand so
that listing the registry stays cheap.
"""

from __future__ import annotations

import importlib
import pathlib
from collections.abc import Callable

from myotwin.scalars import require_flag

#: CLI name -> "module:function" of the reproduction.
_ENTRIES = {
    "fiber-mms": "myotwin.repro.fiber_mms:run",
    "fiber-cylinder": "myotwin.repro.fiber_cylinder:run",
    "fiber-fiber": "myotwin.repro.fiber_fiber:run",
    "fiber-upper-limb": "myotwin.repro.fiber_upper_limb:run",
    "frog-engine": "myotwin.repro.frog_engine:run",
    "massless-limit": "myotwin.repro.massless_limit:run",
    "pai2010": "myotwin.repro.pai2010:run",
    "energy-qvv": "myotwin.repro.energy_qvv:run",
    "wrap-smoothness": "myotwin.repro.wrap_smoothness:run",
    "finger-flick": "myotwin.repro.finger_flick:run",
    "reaching": "myotwin.repro.reaching:run",
}


def _lazy(target: str) -> Callable[..., dict]:
    module_name, func_name = target.split(":")

    def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
        quick = require_flag(target, "quick", quick)    # "no" would be true, 0 is no size
        return getattr(importlib.import_module(module_name), func_name)(out_dir, quick=quick)

    run.__name__ = func_name
    run.__doc__ = f"Run `{target}` (imported on first use)."
    return run


#: Reproduction name -> run(out_dir, quick=False) -> summary dict.
REGISTRY: dict[str, Callable[..., dict]] = {name: _lazy(t) for name, t in _ENTRIES.items()}

__all__ = ["REGISTRY"]
