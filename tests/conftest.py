"""Suite-wide hooks.

Tests marked `realtime` check real-time pacing over pseudo-terminals (an absolute 1 ms schedule,
late ticks, END timing). Their result is meaningless on an overloaded machine: when the 1-minute
load average exceeds 1.5 runnable tasks per CPU they are skipped with the measured load, instead
of failing on the scheduler's behaviour rather than our code's. The load average lags (a
minute-long mean), so each such test also waits for the machine as it is now: a bare loop
paced like the emulator (sleep, then spin to each absolute 1 ms deadline) over 200 ms, doing
nothing else, is run until it ends within 10 % (20 ms) of its schedule, at most PROBE_TRIES
times (~5 s); if it never does, the machine cannot pace 1 kHz at this moment, whatever our
code does, and the test is skipped with the probe's delays. (Seen once, stop 34's first run:
right after the parallel phase a tick period averaged 2.3 ms, i.e. a stall of ~0.4 s; the
same tests then passed three times in a row. CPU load alone hardly delays the probe: six
busy loops on the two CPUs delayed it by 0-2.5 ms; it catches stalls.)

After each test module the compiled JAX code is released (`jax.clear_caches()`): every XLA
executable keeps its own memory mappings, and one pytest process compiling the whole suite
exceeded Linux's default vm.max_map_count (65530; ~8,000 maps after two engine test files),
at which point XLA aborts the process inside a compilation.
"""

import gc
import os
import sys
import time

import pytest

MAX_LOAD_PER_CPU = 1.5
PROBE_TICKS = 200
PROBE_PERIOD_S = 1e-3
PROBE_SPIN_S = 200e-6
PROBE_MAX_DELAY = 0.1            # of the probe's 200 ms
PROBE_TRIES = 25


def _bare_pacing_delay_s() -> float:
    """How far behind its absolute schedule a loop doing nothing but pacing PROBE_TICKS ticks
    of PROBE_PERIOD_S ends (s)."""
    clock = time.perf_counter
    start = clock()
    for k in range(1, PROBE_TICKS + 1):
        deadline = start + k * PROBE_PERIOD_S
        rest = deadline - clock()
        if rest > PROBE_SPIN_S:
            time.sleep(rest - PROBE_SPIN_S)
        while clock() < deadline:
            pass
    return clock() - (start + PROBE_TICKS * PROBE_PERIOD_S)


def pytest_runtest_setup(item):
    if item.get_closest_marker("realtime") is None:
        return
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > MAX_LOAD_PER_CPU * cpus:
        pytest.skip(f"machine overloaded (load {load:.1f} on {cpus} CPUs > {MAX_LOAD_PER_CPU} "
                    "per CPU): real-time pacing cannot be judged")
    delays = []
    while len(delays) < PROBE_TRIES:
        delays.append(_bare_pacing_delay_s())
        if delays[-1] <= PROBE_MAX_DELAY * PROBE_TICKS * PROBE_PERIOD_S:
            return
    pytest.skip(f"machine cannot pace 1 kHz now: a bare {PROBE_TICKS}-tick loop ended "
                f"{min(delays) * 1e3:.1f} to {max(delays) * 1e3:.1f} ms behind its schedule "
                f"in {PROBE_TRIES} tries: real-time pacing cannot be judged")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    yield
    if "jax" in sys.modules:  # never import JAX for modules that did not use it
        sys.modules["jax"].clear_caches()
        gc.collect()
