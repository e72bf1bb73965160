"""Suite-wide hooks.

Tests marked `realtime` check real-time pacing over pseudo-terminals (an absolute 1 ms schedule,
late ticks, END timing). Their result is meaningless on an overloaded machine: when the 1-minute
load average exceeds 1.5 runnable tasks per CPU they are skipped with the measured load, instead
of failing on the scheduler's behaviour rather than our code's.

After each test module the compiled JAX code is released (`jax.clear_caches()`): every XLA
executable keeps its own memory mappings, and one pytest process compiling the whole suite
exceeded Linux's default vm.max_map_count (65530; ~8,000 maps after two engine test files),
at which point XLA aborts the process inside a compilation.
"""

import gc
import os
import sys

import pytest

MAX_LOAD_PER_CPU = 1.5


def pytest_runtest_setup(item):
    if item.get_closest_marker("realtime") is None:
        return
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > MAX_LOAD_PER_CPU * cpus:
        pytest.skip(f"machine overloaded (load {load:.1f} on {cpus} CPUs > {MAX_LOAD_PER_CPU} "
                    "per CPU): real-time pacing cannot be judged")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    yield
    if "jax" in sys.modules:  # never import JAX for modules that did not use it
        sys.modules["jax"].clear_caches()
        gc.collect()
