"""The one integer rule for counts and indices, in a module that imports no JAX.

`myotwin.engine.arguments` re-exports it; importing that module imports the engine package
and JAX, which the in vitro host and emulator (`myotwin.invitro`, real-time processes) never
load, so they take the rule from here.
"""

from __future__ import annotations

import numpy as np


def is_integer(value) -> bool:
    """Whether value is a Python or NumPy integer and not a bool (True is an int in Python,
    and a float such as 2.7 would be truncated silently by int()): the rule for counts and
    indices given to the builders and the rollouts."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
