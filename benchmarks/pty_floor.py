"""The platform's floor for the in vitro-VR loop: a bare pty round trip at the loop's rate.

Two processes, scheduled exactly like the closed loop (SCHED_FIFO if permitted, pinned to
the CPUs `myotwin.invitro.sched.loop_cpus` picks, garbage collector off), talk over a raw
pseudo-terminal with no simulation and no protocol:
* the "device" (pty master) keeps the emulator's clock: it sleeps until `--spin-us` before
  each tick, busy-waits to the deadline, checks that the answer to its previous sample has
  arrived (a missed tick otherwise, the definition of docs/invitro/metrics.md), and sends
  the next sample (4 bytes);
* the "host" (pty slave) waits in select() like the host loop, busy-works `--work-us` (the
  host's own turnaround; 0 for the bare link) and answers.
Every miss here is the platform's (kernel pty transfer, wake-ups, other tasks on the CPUs),
since nothing else runs. The script also lists the other tasks that used the CPU during the
run (from /proc/*/task/*/schedstat) and the spacing of the misses, which shows a periodic
disturber when there is one.

    .venv/bin/python benchmarks/pty_floor.py [--seconds 15] [--rate-hz 1000] [--work-us 150]

Not a test: nothing here passes or fails; numbers go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import struct
import sys
import time

from myotwin.invitro.sched import loop_cpus, realtime_section
from myotwin.invitro.transport.fd import set_raw

WORD = struct.Struct("<i")


def _device(fd: int, n: int, period: float, spin: float, cpu, fifo: bool, out_fd: int) -> None:
    with realtime_section(fifo, cpu) as got_fifo:
        clock, sleep = time.perf_counter, time.sleep
        t0 = clock() + 0.1
        answered, misses, buf = -1, [], b""
        for k in range(n):
            deadline = t0 + k * period
            rem = deadline - clock()
            if rem > spin:
                sleep(rem - spin)
            while clock() < deadline:
                pass
            try:
                buf += os.read(fd, 4096)
            except BlockingIOError:
                pass
            while len(buf) >= WORD.size:
                answered = WORD.unpack_from(buf)[0]
                buf = buf[WORD.size:]
            if k > 0 and answered != k - 1:
                misses.append(k)
            os.write(fd, WORD.pack(k))
    os.write(out_fd, json.dumps({"misses": misses, "fifo": bool(got_fifo)}).encode())


def _host(fd: int, n: int, work: float, cpu, fifo: bool) -> list[float]:
    """Answers every sample; returns the host-side arrival spacing (s) of each sample."""
    arrivals = []
    with realtime_section(fifo, cpu):
        clock, buf, done = time.perf_counter, b"", 0
        while done < n:
            if not select.select([fd], [], [], 2.0)[0]:
                break
            try:
                buf += os.read(fd, 4096)
            except BlockingIOError:
                continue
            t = clock()
            while len(buf) >= WORD.size:
                k = WORD.unpack_from(buf)[0]
                buf = buf[WORD.size:]
                arrivals.append(t)
                end = clock() + work
                while clock() < end:
                    pass
                os.write(fd, WORD.pack(k))
                done = k + 1
    return arrivals


def _cpu_by_task() -> dict:
    """CPU time (ns) of every task on the machine, keyed by (pid, tid) -> (ns, name)."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    ns = int(f.read().split()[0])
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    out[(pid, tid)] = (ns, f.read().strip())
        except OSError:
            continue
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--rate-hz", type=float, default=1000.0)
    ap.add_argument("--work-us", type=float, default=150.0,
                    help="host busy-work per tick (the host loop's turnaround is ~100-200 us)")
    ap.add_argument("--spin-us", type=float, default=200.0, help="device busy-wait per tick")
    ap.add_argument("--no-realtime", action="store_true", help="normal priority, no pinning")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args(argv)
    period, n = 1.0 / a.rate_hz, int(a.seconds * a.rate_hz)
    host_cpu, dev_cpu = (None, None) if a.no_realtime else loop_cpus()
    fifo = not a.no_realtime
    master, slave = os.openpty()
    set_raw(slave)
    for fd in (master, slave):
        os.set_blocking(fd, False)
    r_fd, w_fd = os.pipe()
    before = _cpu_by_task()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(slave)
            _device(master, n, period, a.spin_us * 1e-6, dev_cpu, fifo, w_fd)
        finally:
            os._exit(0)
    os.close(master)
    os.close(w_fd)          # so that the read below ends if the device process dies
    arrivals = _host(slave, n, a.work_us * 1e-6, host_cpu, fifo)
    os.waitpid(pid, 0)
    after = _cpu_by_task()
    raw = os.read(r_fd, 1 << 20)
    if not raw:
        raise SystemExit("pty_floor: the device process ended without reporting its ticks")
    dev = json.loads(raw.decode())
    misses = dev["misses"]
    # Clusters of consecutive misses, and the spacing between clusters.
    starts = [m for i, m in enumerate(misses) if i == 0 or m - misses[i - 1] > 5]
    spacing_s = [(b - c) * period for c, b in zip(starts, starts[1:])]
    gaps = sorted(b - c for c, b in zip(arrivals, arrivals[1:]))
    me = {str(os.getpid()), str(pid)}
    others = sorted(((after[k][0] - before[k][0]) / 1e6, after[k][1], k[0])
                    for k in after if k in before and k[0] not in me
                    and after[k][0] > before[k][0])[::-1][:6]
    res = {
        "ticks": n, "rate_hz": a.rate_hz, "work_us": a.work_us, "spin_us": a.spin_us,
        "realtime_priority": dev["fifo"], "cpus": [host_cpu, dev_cpu],
        "missed_ticks": len(misses), "miss_clusters": len(starts),
        "miss_cluster_spacing_median_s": statistics.median(spacing_s) if spacing_s else None,
        "arrival_gap_p99_ms": gaps[int(0.99 * len(gaps))] * 1e3 if gaps else None,
        "arrival_gap_max_ms": gaps[-1] * 1e3 if gaps else None,
        "other_tasks_cpu_ms": [{"ms": round(ms, 2), "task": name, "pid": p}
                               for ms, name, p in others],
        "python": sys.version.split()[0],
    }
    print(f"bare pty round trip, {n} ticks at {a.rate_hz:g} Hz, host work {a.work_us:g} us, "
          f"SCHED_FIFO {dev['fifo']}, CPUs host {host_cpu} / device {dev_cpu}")
    print(f"  missed ticks {len(misses)} ({len(misses) / n:.2%}) in {len(starts)} clusters; "
          f"median spacing of clusters {res['miss_cluster_spacing_median_s']} s")
    print(f"  host-side spacing of sample arrivals: p99 {res['arrival_gap_p99_ms']:.3f} ms, "
          f"max {res['arrival_gap_max_ms']:.3f} ms")
    print("  other tasks on the CPUs during the run (ms): " + ", ".join(
        f"{o['task']} [{o['pid']}] {o['ms']}" for o in res["other_tasks_cpu_ms"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
