"""The authors' legacy 3-byte packet (notes/invitro-vr.md §3.3), both directions.

Packet = [code & 0x3F, (code >> 6) & 0x3F, 65]. Data bytes are <= 63, so they never equal
the terminator 65 ('A'). There is no sequence number, no flags and no checksum: a corrupted
data byte that stays <= 63 is delivered with a wrong code, undetectably.

Resynchronisation: a packet is valid only when its terminator is preceded by exactly two
data bytes (<= 63) received since the previous terminator (or since the decoder started).
Every other run of bytes up to and including a terminator is discarded and counted as one
bad frame. A lost terminator therefore costs two packets (the two merge into one invalid run).
"""

from __future__ import annotations

from myotwin.invitro.wire.types import Command, Sample, fast_constructor, validate_fields

TERMINATOR = 65
"""ASCII 'A', the end-of-packet byte."""
DATA_MAX = 0x3F
"""Largest data byte (six bits)."""
PACKET_SIZE = 3


def _encode(where: str, code: int) -> bytes:
    try:
        if 0 <= code <= 4095:
            return bytes((code & 0x3F, (code >> 6) & 0x3F, TERMINATOR))
    except TypeError:
        pass
    validate_fields(where, None, code, 0, check_seq=False)
    raise AssertionError("unreachable: validate_fields accepted a code the encoder rejected")


class LegacyDecoder:
    """Incremental decoder of legacy packets into `Sample` or `Command` objects."""

    __slots__ = ("_make", "_buf", "_poisoned", "frames", "bytes_discarded", "bad_frames")

    def __init__(self, packet_type: type) -> None:
        self._make = fast_constructor(packet_type)
        self._buf = bytearray()
        self._poisoned = False  # bytes since the last terminator were already discarded
        self.frames = 0
        self.bytes_discarded = 0
        self.bad_frames = 0

    def feed(self, data: bytes) -> list:
        """Decode the packets completed by `data` (any split of the stream)."""
        buf = self._buf
        if (not buf and len(data) == PACKET_SIZE and data[2] == TERMINATOR
                and data[0] <= DATA_MAX and data[1] <= DATA_MAX and not self._poisoned):
            # Hot path: exactly one packet per read, nothing pending.
            self.frames += 1
            return [self._make(None, data[0] | (data[1] << 6), 0)]
        buf += data
        out = []
        start = 0
        make = self._make
        while True:
            t = buf.find(TERMINATOR, start)
            if t < 0:
                break
            if (t - start == 2 and not self._poisoned
                    and buf[start] <= DATA_MAX and buf[start + 1] <= DATA_MAX):
                out.append(make(None, buf[start] | (buf[start + 1] << 6), 0))
            else:
                self.bytes_discarded += t - start + 1
                self.bad_frames += 1
            self._poisoned = False
            start = t + 1
        rest = len(buf) - start
        if rest and (self._poisoned or rest > 2 or max(buf[start:]) > DATA_MAX):
            # The run since the last terminator can no longer form a packet: drop it now
            # (bounded memory) and reject whatever completes it.
            self.bytes_discarded += rest
            self._poisoned = True
            start = len(buf)
        if start:
            del buf[:start]
        self.frames += len(out)
        return out


class LegacyProtocol:
    """The 3-byte protocol of the authors' 2017 Arduino Due firmware."""

    name = "legacy"
    sample_size = PACKET_SIZE
    command_size = PACKET_SIZE
    carries_seq = False
    carries_flags = False

    def encode_sample(self, seq: int, code: int, flags: int = 0) -> bytes:
        """[code & 0x3F, (code >> 6) & 0x3F, 65]; `seq` and `flags` are not carried."""
        return _encode("legacy encode_sample", code)

    def encode_command(self, seq: int, code: int, flags: int = 0) -> bytes:
        """Same packet as a sample; `seq` and `flags` are not carried."""
        return _encode("legacy encode_command", code)

    def sample_decoder(self) -> LegacyDecoder:
        return LegacyDecoder(Sample)

    def command_decoder(self) -> LegacyDecoder:
        return LegacyDecoder(Command)

    def __repr__(self) -> str:
        return "LegacyProtocol()"
