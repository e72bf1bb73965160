"""Wall-clock helper shared by the benchmark scripts (imported as a sibling module: each
script runs as `python benchmarks/NAME.py`, whose folder is first on sys.path)."""

from __future__ import annotations

import time

import jax


def best_of(fn, repeats: int, warm_up: bool = False) -> float:
    """Best wall time (s) of `repeats` calls of fn(), its result blocked on (JAX arrays; other
    results pass through); with warm_up, one untimed call first (compilation)."""
    if warm_up:
        jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t)
    return best
