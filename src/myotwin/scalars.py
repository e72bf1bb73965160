"""The rules for a count or index (`is_integer`) and for one real number (`as_real`), in a
module that imports no JAX, so that every package takes them from here: the in vitro host and
emulator (`myotwin.invitro`, real-time processes) never load JAX, and the builders and tools
of every package give the same answer (True is an int in Python, not a count or a value).
"""

from __future__ import annotations

import numpy as np


def is_integer(value) -> bool:
    """Whether value is a Python or NumPy integer and not a bool (True is an int in Python,
    and a float such as 2.7 would be truncated silently by int()): the rule for counts and
    indices given to the builders and the rollouts."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def as_real(value) -> float | None:
    """value as a float if it is one real number, else None: a bool is not a number (True
    would be 1.0), nor is a string or an array of several entries. For the checks of builders,
    options and tools, which then name the argument."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.shape(value) != ():
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def is_finite_number(value) -> bool:
    """Whether value is one finite real number (`as_real`: not a bool, a string or an array)."""
    number = as_real(value)
    return number is not None and bool(np.isfinite(number))


def as_real_pair(value) -> tuple[float, float] | None:
    """value as two floats (lo, hi) if it is a list, tuple or 1-D array of two real numbers
    (`as_real`), else None; for ranges and clamps, whose checks then name the argument."""
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != 2:
        return None
    lo, hi = as_real(value[0]), as_real(value[1])
    return None if lo is None or hi is None else (lo, hi)


def holds_real_numbers(value) -> bool:
    """Whether value (a number, an array, a JAX array or tracer, or nested lists of them, not
    ragged) holds real numbers only, finite or not: np.asarray(value, float) would take True
    as 1.0 and "0.5" as 0.5, so a list is checked entry by entry (np.asarray([True, 0.5])
    hides the bool), and an array or a tracer by its dtype (a tracer has no values yet)."""
    if hasattr(value, "dtype"):
        return np.dtype(value.dtype).kind in "iuf"
    if isinstance(value, (list, tuple)):
        if not all(holds_real_numbers(v) for v in value):
            return False
        if any(hasattr(v, "dtype") and not isinstance(v, np.generic) for v in value):
            return True         # arrays or tracers: their shapes are the caller's to check
        try:
            np.asarray(value, dtype=np.float64)     # a ragged list is not an array
        except ValueError:
            return False
        return True
    return as_real(value) is not None


def number_from_text(text: str) -> float:
    """`text` as a decimal number, or ValueError: Python's float() without its digit
    separators (`1_000`), which OpenSim's reader (strtod), C and the other tools that read our
    files do not take. For numbers in text files and on the command line."""
    if "_" in text:
        raise ValueError(f"{text!r} is not a number (no '_' digit separators)")
    return float(text)


def require_real_numbers(where: str, name: str, value) -> None:
    """ValueError "{where}: {name} must be numbers, got ..." unless value holds real numbers
    only (`holds_real_numbers`; a tracer is judged by its dtype, so a traced bool is refused
    and any traced number passes). The one check of the array arguments of the Python API."""
    if not holds_real_numbers(value):
        raise ValueError(f"{where}: {name} must be numbers, got {_shown(value)}")


def _shown(value) -> str:
    """repr(value), but a JAX tracer (whose repr names JAX internals) by its dtype and shape,
    also inside a list: a jitted function's list argument arrives as a list of tracers. A
    tracer is told by its class name (JAX's tracer classes all end in "Tracer"), since this
    module imports no JAX; a wrong guess changes only the wording of the message."""
    if type(value).__name__.endswith("Tracer"):
        return f"a traced {np.dtype(value.dtype)} array of shape {tuple(value.shape)}"
    if isinstance(value, (list, tuple)) and any(type(v).__name__.endswith("Tracer") or
                                                isinstance(v, (list, tuple)) for v in value):
        inner = ", ".join(_shown(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def require_flag(where: str, name: str, value) -> bool:
    """value as a bool if it is a Python or NumPy bool, else ValueError "{where}: {name} must
    be True or False, got ...": the string "no" would be true, and 0 or 1 are numbers."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{where}: {name} must be True or False, got {value!r}")
    return bool(value)
