"""Unwrap the 8-bit sequence number of framed packets into a device tick count."""

from __future__ import annotations

from dataclasses import dataclass

from myotwin.invitro.wire.types import SEQ_MODULUS


@dataclass(frozen=True, slots=True)
class SeqStep:
    """What one received seq means."""

    tick: int
    """Unwrapped device tick of this packet (congruent to seq modulo the modulus)."""
    lost: int
    """Ticks skipped since the newest packet seen before this one (0 when in order)."""
    backward: bool
    """True when this packet is not newer than the newest seen (duplicate or reordered)."""


class SeqUnwrapper:
    """Turns a stream of seq values (tick mod `modulus`) into increasing tick counts.

    The first seq received defines tick = seq. Each later seq is placed at the tick within
    half a modulus of a reference: the newest tick seen, or `near` when the caller knows
    which tick to expect (e.g. from its own clock after a long silence). Hence without
    `near` a gap of more than modulus/2 - 1 lost packets is reported as going backwards.
    `newest` only ever increases; `n_lost` and `n_backward` count the anomalies.
    """

    __slots__ = ("modulus", "newest", "n_seen", "n_lost", "n_backward")

    def __init__(self, modulus: int = SEQ_MODULUS) -> None:
        if not (isinstance(modulus, int) and modulus >= 2):
            raise ValueError(f"SeqUnwrapper: modulus = {modulus!r}: expected an integer >= 2")
        self.modulus = modulus
        self.newest: int | None = None
        self.n_seen = 0
        self.n_lost = 0
        self.n_backward = 0

    def update(self, seq: int, near: int | None = None) -> SeqStep:
        """Account for one received `seq`; `near` optionally gives the expected tick."""
        m = self.modulus
        if not (isinstance(seq, int) and 0 <= seq < m):
            raise ValueError(f"SeqUnwrapper.update: seq = {seq!r} outside 0..{m - 1}")
        self.n_seen += 1
        if self.newest is None and near is None:
            self.newest = seq
            return SeqStep(seq, 0, False)
        ref = self.newest if near is None else near
        delta = (seq - ref) % m
        if delta >= m // 2:
            delta -= m
        tick = ref + delta
        if self.newest is None or tick > self.newest:
            lost = 0 if self.newest is None else tick - self.newest - 1
            self.newest = tick
            self.n_lost += lost
            return SeqStep(tick, lost, False)
        self.n_backward += 1
        return SeqStep(tick, 0, True)
