"""Loopback validation (seed Fig. 1E): the signal travels the whole loop unchanged.

The host echoes every force code it receives as the next length command (flag LOOPBACK in
the framed protocol: the device then does not move the lever) and the device compares each
echo with the code it sent: the round trip must be bit-exact at 12 bits, with no packet lost
and none out of order. The host checks the sequence numbers it receives as well, and times
every turnaround, so the same run also measures the loop delay (seed Fig. 1D).

Result fields (docs/invitro/metrics.md): passed, max_error_lsb, lost, reordered, ticks, plus
rate_hz, missed_ticks, turnaround_p50_s / p99_s, bad_bytes, device counters.
"""

from __future__ import annotations

import numpy as np

from .transport import LinkClosed, Transport
from .wire import COMMAND_END, COMMAND_LOOPBACK, SAMPLE_LATE, SeqUnwrapper, WireProtocol


def run_loopback(transport: Transport, protocol: WireProtocol, n_ticks: int,
                 period_s: float, start_timeout_s: float = 10.0) -> dict:
    """Echo `n_ticks` samples; return the host-side half of the loopback result."""
    if n_ticks <= 0:
        raise ValueError(f"loopback: ticks = {n_ticks}: expected > 0")
    decoder = protocol.sample_decoder()
    unwrap = SeqUnwrapper()
    turnaround = np.empty(n_ticks)
    k = missed = 0
    error = ""
    deadline = transport.now_s() + start_timeout_s
    pending: list = []
    try:
        while k < n_ticks:
            while not pending:
                remaining = deadline - transport.now_s()
                data = transport.read(remaining) if remaining > 0 else b""
                if not data:
                    raise TimeoutError(f"no sample within {remaining:.3f} s at tick {k}")
                t_arrival = transport.now_s()
                pending = decoder.feed(data)
            s = pending.pop(0)
            flags = COMMAND_LOOPBACK | (COMMAND_END if k == n_ticks - 1 else 0)
            transport.write(protocol.encode_command((s.seq or 0) & 0xFF, s.code, flags))
            turnaround[k] = transport.now_s() - t_arrival
            if s.seq is not None:
                unwrap.update(s.seq)
            missed += bool(s.flags & SAMPLE_LATE)
            deadline = t_arrival + max(0.05, 20 * period_s)
            k += 1
    except (LinkClosed, TimeoutError) as e:
        error = str(e)
    ta = turnaround[:k]
    return {
        "ticks": k,
        "lost": unwrap.n_lost,
        "reordered": unwrap.n_backward,
        "missed_ticks": missed,
        "bad_bytes": decoder.bytes_discarded + decoder.bad_frames,
        "turnaround_p50_s": float(np.percentile(ta, 50)) if k else None,
        "turnaround_p99_s": float(np.percentile(ta, 99)) if k else None,
        "error": error,
    }


def loopback_verdict(host: dict, device: dict, n_ticks: int, rate_hz: float) -> dict:
    """Combine the host's and the device's view into the loopback result."""
    checked = device.get("loopback_checked", 0)
    max_err = device.get("loopback_max_error_lsb")
    # The device counts every sample it never got an echo for, whichever direction lost the
    # packet; the host's seq gaps are a subset of those (its only count without device stats).
    lost = max(host["lost"], device.get("loopback_lost", 0)) + max(0, n_ticks - host["ticks"])
    reordered = host["reordered"]
    passed = (not host["error"] and host["ticks"] == n_ticks and lost == 0 and reordered == 0
              and max_err == 0 and device.get("loopback_mismatches", 1) == 0
              and host["bad_bytes"] == 0 and checked >= n_ticks - 1)
    return {
        "passed": bool(passed),
        "max_error_lsb": max_err,
        "lost": int(lost),
        "reordered": int(reordered),
        "ticks": int(host["ticks"]),
        "rate_hz": rate_hz,
        "missed_ticks": int(max(host["missed_ticks"], device.get("missed_ticks", 0))),
        "turnaround_p50_s": host["turnaround_p50_s"],
        "turnaround_p99_s": host["turnaround_p99_s"],
        "bad_bytes": host["bad_bytes"],
        "device": device,
        "error": host["error"],
    }
