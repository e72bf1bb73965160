"""Scheduled link faults for the in-process link, keyed by peer tick index.

The tick index is the 0-based count of `peer.tick()` calls. Output faults act on the bytes
the peer sends in that tick (device -> host); write faults act on the bytes the host writes
in answer to that tick (after tick k ran and before tick k + 1 runs). Every fault that fires
is appended to `log` as (tick, description), so tests can assert on what happened. A plan
keeps its log, so use one plan per link.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FaultKind(Enum):
    CORRUPT = "corrupt"
    DROP = "drop"
    INSERT = "insert"
    DROP_WRITE = "drop write"
    CORRUPT_WRITE = "corrupt write"
    DELAY_WRITE = "delay write"


@dataclass(frozen=True, slots=True)
class _Fault:
    kind: FaultKind
    byte_index: int = 0
    mask: int = 0
    garbage: bytes = b""
    at: int | None = 0
    by_ticks: int = 0


def _check_tick(method: str, name: str, value) -> None:
    if not (isinstance(value, int) and value >= 0):
        raise ValueError(f"FaultPlan.{method}: {name} = {value!r}: expected an int >= 0")


def _xor(data: bytes, byte_index: int, mask: int) -> bytes:
    out = bytearray(data)
    out[byte_index] ^= mask
    return bytes(out)


class FaultPlan:
    """Builder of a fault schedule; each method returns the plan, so calls chain:

        FaultPlan().corrupt(5, byte_index=2, mask=0x10).drop(7).silence(20, 30).disconnect(50)
    """

    def __init__(self) -> None:
        self._output: dict[int, list[_Fault]] = {}
        self._writes: dict[int, list[_Fault]] = {}
        self._silences: list[tuple[int, int]] = []
        self.disconnect_tick: int | None = None
        self.log: list[tuple[int, str]] = []

    # ---- device -> host (peer output) -------------------------------------------------------
    def corrupt(self, tick: int, byte_index: int = 0, mask: int = 0xFF) -> "FaultPlan":
        """XOR byte `byte_index` of the output of tick `tick` with `mask` (1..255)."""
        _check_tick("corrupt", "tick", tick)
        _check_tick("corrupt", "byte_index", byte_index)
        if not (isinstance(mask, int) and 1 <= mask <= 0xFF):
            raise ValueError(f"FaultPlan.corrupt: mask = {mask!r}: expected 1..255")
        self._output.setdefault(tick, []).append(_Fault(FaultKind.CORRUPT, byte_index, mask))
        return self

    def drop(self, tick: int) -> "FaultPlan":
        """Lose the whole output of tick `tick`."""
        _check_tick("drop", "tick", tick)
        self._output.setdefault(tick, []).append(_Fault(FaultKind.DROP))
        return self

    def insert(self, tick: int, garbage: bytes, at: int | None = 0) -> "FaultPlan":
        """Insert `garbage` into the output of tick `tick` at byte `at` (None: append)."""
        _check_tick("insert", "tick", tick)
        if not isinstance(garbage, (bytes, bytearray)) or not garbage:
            raise ValueError(f"FaultPlan.insert: garbage = {garbage!r}: expected non-empty bytes")
        if at is not None:
            _check_tick("insert", "at", at)
        self._output.setdefault(tick, []).append(
            _Fault(FaultKind.INSERT, garbage=bytes(garbage), at=at))
        return self

    def silence(self, start: int, stop: int) -> "FaultPlan":
        """Discard the output of ticks start <= k < stop (the peer keeps ticking)."""
        _check_tick("silence", "start", start)
        _check_tick("silence", "stop", stop)
        if stop <= start:
            raise ValueError(f"FaultPlan.silence: [start, stop) = [{start}, {stop}) is empty")
        self._silences.append((start, stop))
        return self

    def disconnect(self, tick: int) -> "FaultPlan":
        """The peer goes away instead of running tick `tick`: from then on read and write
        raise LinkClosed."""
        _check_tick("disconnect", "tick", tick)
        if self.disconnect_tick is not None:
            raise ValueError(f"FaultPlan.disconnect: already disconnecting at tick "
                             f"{self.disconnect_tick}")
        self.disconnect_tick = tick
        return self

    # ---- host -> device (writes answering a tick) -------------------------------------------
    def drop_write(self, tick: int) -> "FaultPlan":
        """Lose the bytes the host writes in answer to tick `tick`."""
        _check_tick("drop_write", "tick", tick)
        self._writes.setdefault(tick, []).append(_Fault(FaultKind.DROP_WRITE))
        return self

    def corrupt_write(self, tick: int, byte_index: int = 0, mask: int = 0xFF) -> "FaultPlan":
        """XOR byte `byte_index` of each write answering tick `tick` with `mask`."""
        _check_tick("corrupt_write", "tick", tick)
        _check_tick("corrupt_write", "byte_index", byte_index)
        if not (isinstance(mask, int) and 1 <= mask <= 0xFF):
            raise ValueError(f"FaultPlan.corrupt_write: mask = {mask!r}: expected 1..255")
        self._writes.setdefault(tick, []).append(
            _Fault(FaultKind.CORRUPT_WRITE, byte_index, mask))
        return self

    def delay_write(self, tick: int, by_ticks: int = 1) -> "FaultPlan":
        """Deliver the writes answering tick `tick` just before peer tick tick + 1 + by_ticks
        instead of before tick + 1 (so the peer runs `by_ticks` ticks without them)."""
        _check_tick("delay_write", "tick", tick)
        if not (isinstance(by_ticks, int) and by_ticks >= 1):
            raise ValueError(f"FaultPlan.delay_write: by_ticks = {by_ticks!r}: expected >= 1")
        self._writes.setdefault(tick, []).append(_Fault(FaultKind.DELAY_WRITE, by_ticks=by_ticks))
        return self

    # ---- application (used by the link) -----------------------------------------------------
    def apply_output(self, tick: int, data: bytes) -> bytes:
        """The bytes that reach the host from the peer's output `data` of tick `tick`."""
        if any(a <= tick < b for a, b in self._silences):
            self.log.append((tick, f"silence: {len(data)} bytes discarded"))
            data = b""
        for f in self._output.get(tick, ()):
            if f.kind is FaultKind.DROP:
                self.log.append((tick, f"drop: {len(data)} bytes lost"))
                data = b""
            elif f.kind is FaultKind.CORRUPT:
                if f.byte_index < len(data):
                    data = _xor(data, f.byte_index, f.mask)
                    self.log.append((tick, f"corrupt: byte {f.byte_index} xor {f.mask:#04x}"))
                else:
                    self.log.append((tick, f"corrupt: no byte {f.byte_index} in {len(data)} "
                                           "bytes, nothing corrupted"))
            elif f.kind is FaultKind.INSERT:
                at = len(data) if f.at is None else min(f.at, len(data))
                data = data[:at] + f.garbage + data[at:]
                self.log.append((tick, f"insert: {f.garbage.hex(' ')} at byte {at}"))
        return data

    def apply_write(self, tick: int, data: bytes) -> tuple[bytes, int]:
        """(bytes delivered, delay in ticks) for a host write answering tick `tick`."""
        delay = 0
        for f in self._writes.get(tick, ()):
            if f.kind is FaultKind.DROP_WRITE:
                self.log.append((tick, f"drop write: {len(data)} bytes lost"))
                data = b""
            elif f.kind is FaultKind.CORRUPT_WRITE:
                if f.byte_index < len(data):
                    data = _xor(data, f.byte_index, f.mask)
                    self.log.append((tick, f"corrupt write: byte {f.byte_index} xor "
                                           f"{f.mask:#04x}"))
                else:
                    self.log.append((tick, f"corrupt write: no byte {f.byte_index} in "
                                           f"{len(data)} bytes, nothing corrupted"))
            elif f.kind is FaultKind.DELAY_WRITE:
                delay = max(delay, f.by_ticks)
                self.log.append((tick, f"delay write: {len(data)} bytes by {f.by_ticks} ticks"))
        return data, delay

    def disconnects_at(self, tick: int) -> bool:
        return self.disconnect_tick is not None and tick >= self.disconnect_tick
