"""Packet types, flag bits and the two interfaces shared by both wire protocols.

A tick of the in vitro-VR loop exchanges one packet each way (docs/protocol.md):
device -> host a `Sample` (12-bit force ADC code), host -> device a `Command` (12-bit lever
length code). The framed protocol also carries a sequence number and four flag bits; the
legacy protocol of the authors' 2017 firmware carries neither (decoded as seq=None, flags=0).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag
from typing import Protocol

from myotwin.invitro.wire.codes import CODE_MAX

SEQ_MODULUS = 256
"""Framed packets carry the device tick modulo 256."""
FLAGS_MAX = 0xF
"""Four flag bits per packet."""


class SampleFlag(IntFlag):
    """Flag bits of a device -> host sample."""

    ARMED = 1
    """The device is enabled and the lever follows commands."""
    STIM = 2
    """The stimulator trigger is active this tick."""
    LATE = 4
    """When this tick began, the command answering the previous sample had not arrived."""
    TRIPPED = 8
    """The device's own watchdog has put the lever in its safe ramp."""


class CommandFlag(IntFlag):
    """Flag bits of a host -> device command."""

    STIM_GATE = 1
    """The host allows the stimulator to fire."""
    SAFE = 2
    """The host is in its safe state (reset ramp)."""
    END = 4
    """The trial is over."""
    LOOPBACK = 8
    """The command code is the echoed force code (loop-back test), not a length."""


SAMPLE_ARMED = SampleFlag.ARMED
SAMPLE_STIM = SampleFlag.STIM
SAMPLE_LATE = SampleFlag.LATE
SAMPLE_TRIPPED = SampleFlag.TRIPPED
COMMAND_STIM_GATE = CommandFlag.STIM_GATE
COMMAND_SAFE = CommandFlag.SAFE
COMMAND_END = CommandFlag.END
COMMAND_LOOPBACK = CommandFlag.LOOPBACK


@dataclass(frozen=True, slots=True)
class Sample:
    """Device -> host packet: one force sample per device tick."""

    seq: int | None
    """Device tick modulo 256 (framed), or None (legacy carries no sequence number)."""
    code: int
    """12-bit force ADC code, 0..4095 (see wire/codes.py for volts)."""
    flags: int
    """`SampleFlag` bits (always 0 for legacy)."""


@dataclass(frozen=True, slots=True)
class Command:
    """Host -> device packet: one lever length command per tick."""

    seq: int | None
    """Seq of the sample this command answers (framed), or None (legacy)."""
    code: int
    """12-bit lever command code, 0..4095."""
    flags: int
    """`CommandFlag` bits (always 0 for legacy)."""


def fast_constructor(cls: type):
    """A constructor for the frozen slotted packet class `cls` that skips the generated
    `__init__` (its frozen-attribute guard costs ~0.5 us per packet, a tenth of the tick
    budget). Decoders use it only with values they have already range-checked."""
    new = object.__new__
    set_seq = cls.__dict__["seq"].__set__
    set_code = cls.__dict__["code"].__set__
    set_flags = cls.__dict__["flags"].__set__

    def make(seq, code, flags):
        obj = new(cls)
        set_seq(obj, seq)
        set_code(obj, code)
        set_flags(obj, flags)
        return obj

    make.__name__ = f"fast_{cls.__name__}"
    return make


class StreamDecoder(Protocol):
    """Incremental decoder of one direction of a byte stream.

    `feed` accepts bytes split anywhere and returns the packets completed by them. The
    counters are cumulative: `frames` decoded packets, `bytes_discarded` bytes thrown away
    while resynchronising, `bad_frames` candidate packets rejected (CRC failure, malformed).
    """

    frames: int
    bytes_discarded: int
    bad_frames: int

    def feed(self, data: bytes) -> list: ...


class WireProtocol(Protocol):
    """Encoder/decoder factory for one wire format."""

    name: str
    sample_size: int
    command_size: int
    carries_seq: bool
    carries_flags: bool

    def encode_sample(self, seq: int, code: int, flags: int = 0) -> bytes: ...

    def encode_command(self, seq: int, code: int, flags: int = 0) -> bytes: ...

    def sample_decoder(self) -> StreamDecoder: ...

    def command_decoder(self) -> StreamDecoder: ...


def _check_int(where: str, field: str, value, hi: int) -> None:
    """Raise ValueError naming `field` unless `value` is an integer in [0, hi]."""
    if not hasattr(value, "__index__"):
        raise ValueError(f"{where}: {field} = {value!r} is not an integer (expected 0..{hi})")
    if not 0 <= value <= hi:
        raise ValueError(f"{where}: {field} = {value!r} outside 0..{hi}")


def validate_fields(where: str, seq, code, flags, check_seq: bool = True) -> None:
    """Slow-path validation of packet fields, raising ValueError naming the bad one."""
    _check_int(where, "code", code, CODE_MAX)
    if check_seq:
        _check_int(where, "seq", seq, SEQ_MODULUS - 1)
        _check_int(where, "flags", flags, FLAGS_MAX)
