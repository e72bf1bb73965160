"""Best-effort real-time scheduling for the two ends of the loop.

Both the emulated device and the host ask for SCHED_FIFO (and optionally a CPU of their own)
while a trial runs, and put everything back afterwards. Without the privilege (not root, no
CAP_SYS_NICE) they carry on at normal priority; the trial records which one it got.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager


def raise_priority(cpu: int | None, realtime_priority: bool) -> tuple[bool, bool, object]:
    """Best effort CPU pinning and SCHED_FIFO; returns (fifo ok, pinned, restore info)."""
    pinned = fifo = False
    restore = {}
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        try:
            restore["affinity"] = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {cpu})
            pinned = True
        except (OSError, ValueError):
            restore.pop("affinity", None)
    if realtime_priority and hasattr(os, "sched_setscheduler"):
        try:
            restore["policy"] = (os.sched_getscheduler(0), os.sched_getparam(0))
            prio = max(1, min(50, os.sched_get_priority_max(os.SCHED_FIFO)))
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
            fifo = True
        except (OSError, AttributeError):
            restore.pop("policy", None)
    return fifo, pinned, restore


def restore_priority(restore: dict) -> None:
    try:
        if "policy" in restore:
            pol, param = restore["policy"]
            os.sched_setscheduler(0, pol, param)
        if "affinity" in restore:
            os.sched_setaffinity(0, restore["affinity"])
    except OSError:
        pass


@contextmanager
def realtime_priority(cpu: int | None = None):
    """SCHED_FIFO (and a CPU) for the duration of the block, if permitted; yields whether
    SCHED_FIFO was granted."""
    fifo, _, restore = raise_priority(cpu, True)
    try:
        yield fifo
    finally:
        restore_priority(restore)


@contextmanager
def realtime_section(fifo: bool = True, cpu: int | None = None):
    """What both ends of the loop do while a trial runs: collect garbage once, then keep the
    garbage collector off (a full collection can pause a Python process for milliseconds,
    longer than a tick) and, if `fifo`, ask for SCHED_FIFO. Yields whether SCHED_FIFO was
    granted. Everything is restored on exit."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    fifo_ok, restore = False, {}
    if fifo or cpu is not None:
        fifo_ok, _, restore = raise_priority(cpu, fifo)
    try:
        yield fifo_ok
    finally:
        restore_priority(restore)
        if was_enabled:
            gc.enable()


def loop_cpus() -> tuple[int | None, int | None]:
    """CPUs for (host, emulated device) when pinning: the first and the last CPU this process
    may use, so the two ends of the loop never evict each other's caches; (None, None) on a
    single CPU or where affinity is not supported."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    return (cpus[0], cpus[-1]) if len(cpus) >= 2 else (None, None)
