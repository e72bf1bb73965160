"""In-process link to a Python peer (e.g. the device emulator) on a virtual clock.

No threads, no sleeping: time advances only when the host waits for bytes, one peer period per
`peer.tick()`. Peer tick k (0-based) happens at virtual time (k + 1) * period_s. Deterministic,
so tests of the host loop can run thousands of ticks in milliseconds, with scheduled faults.
"""

from __future__ import annotations

import math
from typing import Protocol

from myotwin.invitro.transport.base import LinkClosed
from myotwin.invitro.transport.faults import FaultPlan


class TickPeer(Protocol):
    """What InProcessLink drives: a device that runs one tick per period."""

    period_s: float

    def receive(self, data: bytes) -> None:
        """Bytes from the host, delivered before the peer's next tick."""
        ...

    def tick(self) -> bytes:
        """Advance one period; return the bytes sent during it (possibly b"")."""
        ...


class InProcessLink:
    """Transport whose far end is `peer`, ticked on demand, with an optional FaultPlan."""

    def __init__(self, peer: TickPeer, faults: FaultPlan | None = None,
                 name: str | None = None) -> None:
        period_s = getattr(peer, "period_s", None)
        if not (isinstance(period_s, (int, float)) and math.isfinite(period_s) and period_s > 0):
            raise ValueError(f"InProcessLink: peer.period_s = {period_s!r}: expected a finite "
                             "number > 0")
        for method in ("receive", "tick"):
            if not callable(getattr(peer, method, None)):
                raise ValueError(f"InProcessLink: peer {type(peer).__name__} has no {method}()")
        self.peer = peer
        self.period_s = float(period_s)
        self.faults = faults
        self.name = name if name is not None else f"in-process:{type(peer).__name__}"
        self.n_ticks = 0
        """Peer ticks run so far (the index of the next tick)."""
        self._now_s = 0.0
        self._rx = bytearray()  # peer output not yet returned by read()
        self._delayed: list[tuple[int, bytes]] = []  # (deliver before tick, data)
        self._closed_why: str | None = None
        self._eps_s = 1e-6 * self.period_s  # float slack when a deadline meets a tick time

    @property
    def fault_log(self) -> list[tuple[int, str]]:
        """(tick, description) of every fault that fired (the plan's log)."""
        return self.faults.log if self.faults is not None else []

    def _check_open(self, what: str) -> None:
        if self._closed_why is not None:
            raise LinkClosed(f"{self.name}: {what}: {self._closed_why}")

    def _run_tick(self) -> bytes:
        k = self.n_ticks
        if self.faults is not None and self.faults.disconnects_at(k):
            self.faults.log.append((k, "disconnect"))
            self._closed_why = f"peer disconnected at tick {k}"
            self._rx.clear()
            raise LinkClosed(f"{self.name}: {self._closed_why}")
        if self._delayed:
            due = [d for d in self._delayed if d[0] <= k]
            if due:
                self._delayed = [d for d in self._delayed if d[0] > k]
                for _, data in due:
                    self.peer.receive(data)
        out = self.peer.tick()
        self.n_ticks = k + 1
        self._now_s = (k + 1) * self.period_s
        if self.faults is not None:
            out = self.faults.apply_output(k, out)
        return out

    def write(self, data: bytes) -> None:
        """Deliver `data` to the peer before its next tick. Write faults are keyed by the tick
        being answered (the last tick run, n_ticks - 1)."""
        self._check_open("write")
        data = bytes(data)
        delay = 0
        if self.faults is not None and self.n_ticks > 0:
            data, delay = self.faults.apply_write(self.n_ticks - 1, data)
        if not data:
            return
        if delay or self._delayed:
            # Bytes stay in order, as on a serial line: a write behind a delayed one waits too.
            due = self.n_ticks + delay
            if self._delayed:
                due = max(due, self._delayed[-1][0])
            self._delayed.append((due, data))
            return
        self.peer.receive(data)

    def read(self, timeout_s: float) -> bytes:
        """Undelivered peer output if any; else tick the peer until it sends bytes or the
        virtual wait reaches `timeout_s` (then b"")."""
        self._check_open("read")
        if self._rx:
            data = bytes(self._rx)
            self._rx.clear()
            return data
        deadline = self._now_s + max(0.0, timeout_s)
        while True:
            if (self.n_ticks + 1) * self.period_s > deadline + self._eps_s:
                self._now_s = max(self._now_s, deadline)
                return b""
            out = self._run_tick()
            if out:
                return out

    def advance_s(self, dt_s: float) -> None:
        """Let `dt_s` of virtual time pass without reading (e.g. host computation): the peer
        ticks that fall in it run, and their output waits for the next read()."""
        self._check_open("advance_s")
        if not dt_s >= 0:
            raise ValueError(f"InProcessLink.advance_s: dt_s = {dt_s!r}: expected >= 0")
        deadline = self._now_s + dt_s
        while (self.n_ticks + 1) * self.period_s <= deadline + self._eps_s:
            self._rx += self._run_tick()
        self._now_s = max(self._now_s, deadline)

    def now_s(self) -> float:
        return self._now_s

    def close(self) -> None:
        if self._closed_why is None:
            self._closed_why = "link closed by the host"

    def __repr__(self) -> str:
        return f"InProcessLink({self.name!r}, t={self._now_s:.6f} s, ticks={self.n_ticks})"
