"""The framed 6-byte protocol (our default): sync byte, sequence number, flags, CRC-16.

    sample  (device -> host): [0xA5, seq, code & 0xFF, (flags << 4) | (code >> 8), crc_lo, crc_hi]
    command (host -> device): [0x5A, seq, code & 0xFF, (flags << 4) | (code >> 8), crc_lo, crc_hi]

crc is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor; check
value 0x29B1 for b"123456789") over the first four bytes, sent little-endian. seq is the
device tick modulo 256; a command echoes the seq of the sample it answers.

Resynchronisation: scan for the sync byte of the expected direction; a candidate whose CRC
fails costs exactly one byte (the sync) before the scan resumes, so a 0xA5 that happens to
sit inside a frame's data cannot hide the good frame that follows it. Frames of the other
direction (0x5A vs 0xA5) are never accepted, which catches a loop-back wiring mistake.
"""

from __future__ import annotations

import struct
from binascii import crc_hqx

from myotwin.invitro.wire.types import Command, Sample, fast_constructor, validate_fields

SAMPLE_SYNC = 0xA5
COMMAND_SYNC = 0x5A
FRAME_SIZE = 6
CRC_INIT = 0xFFFF
_HEAD = struct.Struct("<4B")
_CRC = struct.Struct("<H")


def crc16_ccitt_false(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of `data` (poly 0x1021, init 0xFFFF, no reflection, no xorout)."""
    return crc_hqx(data, CRC_INIT)


def _encode(where: str, sync: int, seq: int, code: int, flags: int) -> bytes:
    try:
        if 0 <= code <= 4095 and 0 <= seq <= 255 and 0 <= flags <= 15:
            head = _HEAD.pack(sync, seq, code & 0xFF, (flags << 4) | (code >> 8))
            return head + _CRC.pack(crc_hqx(head, CRC_INIT))
    except (TypeError, struct.error):
        pass
    validate_fields(where, seq, code, flags)
    raise AssertionError("unreachable: validate_fields accepted fields the encoder rejected")


class FramedDecoder:
    """Incremental decoder of framed packets with one sync byte into `Sample`/`Command`."""

    __slots__ = ("_sync", "_make", "_buf", "frames", "bytes_discarded", "bad_frames")

    def __init__(self, sync: int, packet_type: type) -> None:
        self._sync = sync
        self._make = fast_constructor(packet_type)
        self._buf = bytearray()
        self.frames = 0
        self.bytes_discarded = 0
        self.bad_frames = 0

    def feed(self, data: bytes) -> list:
        """Decode the frames completed by `data` (any split of the stream)."""
        buf = self._buf
        if not buf and len(data) == FRAME_SIZE and data[0] == self._sync:
            # Hot path: exactly one frame per read, nothing pending.
            if crc_hqx(data[:4], CRC_INIT) == data[4] | (data[5] << 8):
                self.frames += 1
                b3 = data[3]
                return [self._make(data[1], data[2] | ((b3 & 0xF) << 8), b3 >> 4)]
        buf += data
        out = []
        sync = self._sync
        make = self._make
        n = len(buf)
        pos = 0
        while True:
            i = buf.find(sync, pos)
            if i < 0:
                self.bytes_discarded += n - pos
                pos = n
                break
            self.bytes_discarded += i - pos
            pos = i
            if n - i < FRAME_SIZE:
                break  # incomplete candidate: wait for more bytes
            if crc_hqx(buf[i:i + 4], CRC_INIT) == buf[i + 4] | (buf[i + 5] << 8):
                b3 = buf[i + 3]
                out.append(make(buf[i + 1], buf[i + 2] | ((b3 & 0xF) << 8), b3 >> 4))
                pos = i + FRAME_SIZE
            else:
                self.bad_frames += 1
                self.bytes_discarded += 1
                pos = i + 1
        if pos:
            del buf[:pos]
        self.frames += len(out)
        return out


class FramedProtocol:
    """6-byte frames with sync, seq, 4 flag bits, 12-bit code and CRC-16/CCITT-FALSE."""

    name = "framed"
    sample_size = FRAME_SIZE
    command_size = FRAME_SIZE
    carries_seq = True
    carries_flags = True

    def encode_sample(self, seq: int, code: int, flags: int = 0) -> bytes:
        """Sample frame; seq in 0..255 (device tick mod 256), code 0..4095, flags 0..15."""
        return _encode("framed encode_sample", SAMPLE_SYNC, seq, code, flags)

    def encode_command(self, seq: int, code: int, flags: int = 0) -> bytes:
        """Command frame; seq echoes the answered sample, code 0..4095, flags 0..15."""
        return _encode("framed encode_command", COMMAND_SYNC, seq, code, flags)

    def sample_decoder(self) -> FramedDecoder:
        return FramedDecoder(SAMPLE_SYNC, Sample)

    def command_decoder(self) -> FramedDecoder:
        return FramedDecoder(COMMAND_SYNC, Command)

    def __repr__(self) -> str:
        return "FramedProtocol()"
