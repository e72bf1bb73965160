"""Rows evaluated by a compiled function in calls of one shape.

A jitted (often vmapped) function compiles once per input shape, so a command that evaluates
a varying number of rows (a motion's frames, a simulation's recorded rows, chunk by chunk)
calls it on blocks of a fixed number of rows, the last block padded by repeating its final
row, and keeps the first n rows of the outputs: one compilation for any number of rows.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np


def map_row_blocks(fn: Callable, rows, rows_per_call: int) -> tuple[np.ndarray, ...]:
    """fn's outputs on `rows` (a pytree of arrays with a leading axis n >= 1), evaluated in
    blocks of rows_per_call rows: fn(block) -> a tuple of arrays with the same leading axis;
    returns those arrays for the n rows, concatenated over the blocks, as NumPy arrays."""
    n = int(jax.tree_util.tree_leaves(rows)[0].shape[0])
    blocks = []
    for start in range(0, n, rows_per_call):
        index = np.minimum(np.arange(start, start + rows_per_call), n - 1)
        block = jax.tree_util.tree_map(lambda x, i=index: x[i], rows)
        keep = min(rows_per_call, n - start)
        blocks.append([np.asarray(x)[:keep] for x in fn(block)])
    return tuple(np.concatenate(parts) for parts in zip(*blocks))
