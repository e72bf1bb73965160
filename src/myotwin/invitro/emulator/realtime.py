"""Run an emulated device in real time on a file descriptor (a pty master, a socket, a pipe).

Pacing: tick k starts at the absolute deadline t0 + k * period (time.perf_counter), never
relative to the previous tick, so errors do not accumulate (no drift). Waiting is hybrid:
`time.sleep` until `spin_s` (200 µs) before the deadline, then a busy-wait, which keeps the
start jitter to a few µs on an idle core without burning a whole core. A tick that starts
more than half a period after its deadline is counted as late; the schedule is not shifted
(late ticks are followed by catch-up ticks, as a hardware timer with queued interrupts would).

Each tick: read every byte available (non-blocking) -> device.receive; out = device.tick();
os.write(fd, out); append the device's log row to the CSV (flushed every 100 ticks and at
exit).

Stopping:
* after `n_ticks` ticks;
* when the device has `finished` (the host sent COMMAND_END and the device's return ramp has
  elapsed), after `tail_ticks` more ticks;
* when the host is gone (EOF, or EIO from a pty whose other side closed): the device is told
  (`device.host_gone()`: stimulator off, lever ramps to the start length), the runner keeps
  ticking in real time without I/O until that ramp has elapsed, then returns.

Optional: pin to a CPU (`cpu`) and ask for SCHED_FIFO (`realtime_priority`); failures are
ignored and reported in the stats. The previous policy is restored at exit.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import select
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from myotwin.invitro.sched import raise_priority, restore_priority
from myotwin.invitro.emulator.device import LOG_COLUMNS, EmulatedDevice

CSV_COLUMNS = LOG_COLUMNS + ("wall_s", "lateness_s")
"""Columns of the runner's CSV log: the device's log row, then the tick's actual start time
(s after t0) and its lateness (s after its deadline)."""
FLUSH_EVERY = 100
_log = logging.getLogger(__name__)


@dataclass
class DeviceRunStats:
    """What happened during one real-time run."""

    period_s: float
    ticks: int = 0
    late_ticks: int = 0
    """Ticks that started more than half a period after their deadline."""
    max_lateness_s: float = 0.0
    mean_period_s: float = math.nan
    """Mean interval between tick starts: (last start - first start) / (ticks - 1)."""
    median_period_s: float = math.nan
    """Median interval between tick starts: the period of a typical tick, unmoved by a few
    scheduler stalls (after a stall the absolute schedule catches up with short intervals)."""
    stop_reason: str = ""
    """'n_ticks', 'end' (END + ramp + tail), or 'host_gone'."""
    host_gone_tick: int | None = None
    """First device tick run after the host was found gone (the return ramp starts there)."""
    host_gone_why: str = ""
    bytes_read: int = 0
    bytes_written: int = 0
    write_drops: int = 0
    """Samples not written because the fd was not writable (host not reading)."""
    realtime_priority: bool = False
    """SCHED_FIFO was granted."""
    cpu_affinity: bool = False
    """The process was pinned to the requested CPU."""
    tick_start_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Actual start time of each tick, s after t0."""
    lateness_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Start time minus deadline of each tick, s."""

    def to_dict(self) -> dict:
        """JSON-ready summary (the per-tick arrays are left out)."""
        d = asdict(self)
        d.pop("tick_start_s")
        d.pop("lateness_s")
        if self.lateness_s.size:
            d["lateness_p99_s"] = float(np.percentile(self.lateness_s, 99))
            d["lateness_median_s"] = float(np.median(self.lateness_s))
        return d


def _format_row(row: tuple, wall_s: float, late_s: float) -> str:
    k, t, x, r, f, code, a, stim, cmd, late, tripped = row
    return (f"{k},{t:.6f},{x:.9e},{r:.9e},{f:.9e},{code},{a:.9e},{int(stim)},{cmd},{int(late)},"
            f"{int(tripped)},{wall_s:.7f},{late_s:.7f}\n")


def run_device_realtime(device: EmulatedDevice, fd: int, *, n_ticks: int | None = None,
                        tail_ticks: int = 50, log_path: str | None = None,
                        wait_for_command: bool = False, start_timeout_s: float | None = None,
                        spin_s: float = 200e-6, cpu: int | None = None,
                        realtime_priority: bool = False) -> DeviceRunStats:
    """Tick `device` every `device.period_s` on `fd` until a stop condition (module doc).

    `wait_for_command`: block until the host's first bytes arrive and start the clock then
    (the bytes are fed to the device before tick 0; the seed's rig waited for a trigger).
    `start_timeout_s` bounds that wait (then the run stops with reason 'no_start').
    """
    if n_ticks is not None and n_ticks < 0:
        raise ValueError(f"run_device_realtime: n_ticks = {n_ticks!r}: expected >= 0 or None")
    if tail_ticks < 0:
        raise ValueError(f"run_device_realtime: tail_ticks = {tail_ticks!r}: expected >= 0")
    if log_path is not None and not device.record:
        raise ValueError("run_device_realtime: log_path needs a device created with record=True")
    period = device.period_s
    stats = DeviceRunStats(period_s=period)
    was_blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    log = open(log_path, "w", buffering=1 << 16) if log_path is not None else None
    fifo, pinned, restore = raise_priority(cpu, realtime_priority)
    stats.realtime_priority, stats.cpu_affinity = fifo, pinned
    starts: list[float] = []
    lates: list[float] = []
    host_ok = True
    pending = b""  # rest of a sample the fd accepted only in part
    stop_at: int | None = None
    try:
        if log is not None:
            log.write(",".join(CSV_COLUMNS) + "\n")
        if wait_for_command:
            ready, _, _ = select.select([fd], [], [], start_timeout_s)
            if not ready:
                stats.stop_reason = "no_start"
                return stats
        rows = device.log_rows
        logged = 0
        t0 = time.perf_counter()
        k = 0
        sleep, clock = time.sleep, time.perf_counter
        while True:
            if n_ticks is not None and k >= n_ticks:
                stats.stop_reason = stats.stop_reason or "n_ticks"
                break
            if stop_at is not None and k >= stop_at:
                break
            deadline = t0 + k * period
            rem = deadline - clock()
            if rem > spin_s:
                sleep(rem - spin_s)
            now = clock()
            while now < deadline:
                now = clock()
            starts.append(now - t0)
            lates.append(now - deadline)
            if host_ok:
                host_ok = _read_into(device, fd, stats)
                if not host_ok:
                    stats.host_gone_tick = device.tick_count
                    _log.warning("host gone at tick %d (%s): ramping the lever back",
                                 device.tick_count, stats.host_gone_why)
                    device.host_gone()
            out = device.tick()
            if host_ok:
                host_ok, pending = _write_out(fd, pending + out, len(pending), stats)
                if not host_ok:
                    stats.host_gone_tick = device.tick_count
                    _log.warning("host gone at tick %d (%s): ramping the lever back",
                                 device.tick_count, stats.host_gone_why)
                    device.host_gone()
            k += 1
            if log is not None:
                while logged < len(rows):
                    log.write(_format_row(rows[logged], starts[logged], lates[logged]))
                    logged += 1
                if k % FLUSH_EVERY == 0:
                    log.flush()
            if stop_at is None and device.finished:
                if host_ok:
                    stats.stop_reason = "end"
                    stop_at = k + tail_ticks
                else:
                    stats.stop_reason = "host_gone"
                    stop_at = k
    finally:
        if log is not None:
            log.flush()
            log.close()
        restore_priority(restore)
        try:
            os.set_blocking(fd, was_blocking)
        except OSError:
            pass
        st = np.asarray(starts)
        lt = np.asarray(lates)
        stats.ticks = len(st)
        stats.tick_start_s, stats.lateness_s = st, lt
        if lt.size:
            stats.max_lateness_s = float(lt.max())
            stats.late_ticks = int(np.count_nonzero(lt > 0.5 * period))
        if st.size >= 2:
            stats.mean_period_s = float((st[-1] - st[0]) / (st.size - 1))
            stats.median_period_s = float(np.median(np.diff(st)))
    return stats


def _read_into(device: EmulatedDevice, fd: int, stats: DeviceRunStats) -> bool:
    """Drain `fd` into the device. False when the host is gone (EOF or EIO)."""
    while True:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return True
        except OSError as e:
            if e.errno == errno.EIO:
                stats.host_gone_why = "EIO on read (the other side closed)"
                return False
            raise
        if not data:
            stats.host_gone_why = "EOF on read"
            return False
        stats.bytes_read += len(data)
        device.receive(data)
        if len(data) < 4096:
            return True


def _write_out(fd: int, data: bytes, n_pending: int, stats: DeviceRunStats) -> tuple[bool, bytes]:
    """Write the rest of a partly sent sample (`n_pending` bytes) and the new sample.

    Returns (host still there, bytes still to send). A sample is never split and then
    abandoned: if the fd is full, the new sample is dropped whole (counted in write_drops)
    and only the rest of an already started one is kept for the next tick.
    """
    try:
        n = os.write(fd, data)
    except BlockingIOError:
        stats.write_drops += 1
        return True, data[:n_pending]
    except OSError as e:
        if e.errno in (errno.EIO, errno.EPIPE):
            stats.host_gone_why = f"{errno.errorcode.get(e.errno, e.errno)} on write"
            return False, b""
        raise
    stats.bytes_written += n
    if n >= len(data):
        return True, b""
    if n < n_pending:
        stats.write_drops += 1
        return True, data[n:n_pending]
    return True, data[n:]
