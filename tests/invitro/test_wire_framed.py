"""Framed 6-byte protocol: CRC against its published check value, docs/protocol.md vectors,
resynchronisation properties and sequence-number unwrapping."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from myotwin.invitro.wire import (
    COMMAND_END,
    COMMAND_LOOPBACK,
    COMMAND_SAFE,
    COMMAND_STIM_GATE,
    SAMPLE_ARMED,
    SAMPLE_LATE,
    SAMPLE_STIM,
    SAMPLE_TRIPPED,
    Command,
    Sample,
    SeqStep,
    SeqUnwrapper,
    crc16_ccitt_false,
    get_protocol,
)

PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
FRAMED = get_protocol("framed")


def doc_vectors() -> dict[str, bytes]:
    """Test vectors `| name | fields | `hex` |` from docs/protocol.md §5."""
    rows = re.findall(r"^\| ([a-z0-9-]+) \| .* \| `([0-9a-f ]+)` \|$",
                      PROTOCOL_DOC.read_text(), flags=re.M)
    return {name: bytes.fromhex(hexstr) for name, hexstr in rows}


def crc16_bitwise(data: bytes) -> int:
    """CRC-16/CCITT-FALSE straight from its definition (poly 0x1021, init 0xFFFF, MSB first,
    no reflection, no xorout), independent of binascii."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def test_crc_published_check_value():
    # Catalogue of parametrised CRC algorithms, CRC-16/IBM-3740 (alias CCITT-FALSE): check=0x29b1.
    assert crc16_ccitt_false(b"123456789") == 0x29B1, "CRC-16/CCITT-FALSE check value"
    assert crc16_bitwise(b"123456789") == 0x29B1, "bitwise reference CRC check value"
    assert doc_vectors()["crc-check"] == bytes([0x29, 0xB1]), "check value in docs/protocol.md"
    rng = np.random.default_rng(3)
    for n in (0, 1, 4, 17):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert crc16_ccitt_false(data) == crc16_bitwise(data), f"CRC of {data.hex()}"


def test_vectors_match_doc_and_code():
    documented = doc_vectors()
    sample = bytes([0xA5, 0x07, 0x23, 0x31, 0xA4, 0x22])   # seq 7, code 0x123, flags 3
    command = bytes([0x5A, 0xFF, 0xFF, 0x1F, 0x12, 0xB6])  # seq 255, code 4095, flags 1
    assert documented["framed-sample"] == sample, "framed sample vector in docs"
    assert documented["framed-command"] == command, "framed command vector in docs"
    assert FRAMED.encode_sample(7, 0x123, SAMPLE_ARMED | SAMPLE_STIM) == sample, "sample bytes"
    assert FRAMED.encode_command(255, 4095, COMMAND_STIM_GATE) == command, "command bytes"
    assert crc16_bitwise(sample[:4]) == sample[4] | sample[5] << 8, "sample CRC, little-endian"
    assert crc16_bitwise(command[:4]) == command[4] | command[5] << 8, "command CRC"
    assert FRAMED.sample_decoder().feed(sample) == [Sample(7, 0x123, 3)], "decoded sample"
    assert FRAMED.command_decoder().feed(command) == [Command(255, 4095, 1)], "decoded command"


def test_flag_values():
    assert (SAMPLE_ARMED, SAMPLE_STIM, SAMPLE_LATE, SAMPLE_TRIPPED) == (1, 2, 4, 8), "sample flags"
    assert (COMMAND_STIM_GATE, COMMAND_SAFE, COMMAND_END, COMMAND_LOOPBACK) == (1, 2, 4, 8), \
        "command flags"


def test_round_trip_all_codes_seqs_flags():
    stream = b"".join(FRAMED.encode_sample(k & 0xFF, k, k % 16) for k in range(4096))
    dec = FRAMED.sample_decoder()
    out = dec.feed(stream)
    assert out == [Sample(k & 0xFF, k, k % 16) for k in range(4096)], "all 4096 sample codes"
    assert (dec.frames, dec.bytes_discarded, dec.bad_frames) == (4096, 0, 0), "decoder counters"
    cdec = FRAMED.command_decoder()
    for k in range(4096):
        seq, flags = (k * 7) & 0xFF, (k >> 3) & 0xF
        got = cdec.feed(FRAMED.encode_command(seq, k, flags))
        assert got == [Command(seq, k, flags)], f"command round trip of code {k}"


def test_split_and_merged_delivery():
    rng = np.random.default_rng(2)
    n = 400
    fields = np.stack([np.arange(n) % 256, rng.integers(0, 4096, n), rng.integers(0, 16, n)], 1)
    fields[::7, 1] = 0x0A5  # data bytes equal to the sync byte
    fields[::5, 0] = 0xA5
    original = [Sample(int(s), int(c), int(f)) for s, c, f in fields]
    stream = b"".join(FRAMED.encode_sample(p.seq, p.code, p.flags) for p in original)
    for trial in range(20):
        dec, out, pos = FRAMED.sample_decoder(), [], 0
        while pos < len(stream):
            step = 1 if trial == 0 else int(rng.integers(1, 40))
            out += dec.feed(stream[pos:pos + step])
            pos += step
        assert out == original, f"packets, trial {trial}"
        assert (dec.bytes_discarded, dec.bad_frames) == (0, 0), f"counters, trial {trial}"


def test_spurious_sync_in_data_does_not_hide_next_frame():
    # Frame 0 carries 0xA5 as seq and as code low byte; destroy its real sync byte. The decoder
    # then tries the 0xA5s inside frame 0, whose CRCs fail; dropping one byte per failure, it
    # must still find frame 1 right behind.
    f0 = FRAMED.encode_sample(0xA5, 0x3A5, 0)
    f1 = FRAMED.encode_sample(0x11, 0x222, 1)
    dec = FRAMED.sample_decoder()
    assert dec.feed(b"\x00" + f0[1:] + f1) == [Sample(0x11, 0x222, 1)], "frame after damage"
    assert dec.bad_frames == 2, "two spurious sync candidates rejected"
    assert dec.bytes_discarded == 6, "the damaged frame's bytes discarded"


def test_directions_are_not_confused():
    s = FRAMED.encode_sample(1, 100, 0)
    c = FRAMED.encode_command(1, 100, 0)
    assert FRAMED.command_decoder().feed(s * 3) == [], "command decoder must ignore samples"
    assert FRAMED.sample_decoder().feed(c * 3) == [], "sample decoder must ignore commands"


def touched_frames(kind: str, pos: int, n_frames: int) -> set:
    """Frames that a single damaged byte at `pos` may cost under the framed rule: the frame
    containing it; a byte inserted between two frames touches none."""
    if kind == "insert" and pos % 6 == 0:
        return set()
    return {pos // 6} & set(range(n_frames))


def check_loss(decoded: list, original: list, touched: set, what: str) -> None:
    """decoded == original with at most the touched frames removed (never altered)."""
    expected_min = [p for i, p in enumerate(original) if i not in touched]
    # decoded must be a subsequence of original that contains every untouched frame.
    j = 0
    for d in decoded:
        while j < len(original) and original[j] != d:
            assert j in touched, f"{what}: untouched frame {j} lost"
            j += 1
        assert j < len(original), f"{what}: decoded a frame that was never sent: {d}"
        j += 1
    assert all(i in touched for i in range(j, len(original))), f"{what}: frames lost at the end"
    assert len(decoded) >= len(expected_min), f"{what}: number of frames"


def make_stream(rng, n: int, sync_rich: bool) -> tuple[list, bytes]:
    seqs = (np.arange(n) + int(rng.integers(0, 256))) % 256
    codes = rng.integers(0, 4096, n)
    flags = rng.integers(0, 16, n)
    if sync_rich:
        codes[rng.random(n) < 0.4] = 0x1A5
        seqs[rng.random(n) < 0.3] = 0xA5
    original = [Sample(int(s), int(c), int(f)) for s, c, f in zip(seqs, codes, flags)]
    return original, b"".join(FRAMED.encode_sample(p.seq, p.code, p.flags) for p in original)


def test_every_single_byte_corruption_loses_only_that_frame():
    # Exhaustive: every position, every xor mask. Data without 0xA5, so a misaligned candidate
    # exists only where the corruption itself makes a 0xA5 (false CRC match odds 2^-16 each).
    rng = np.random.default_rng(5)
    while True:
        original, stream = make_stream(rng, 8, sync_rich=False)
        if all(b != 0xA5 for i, b in enumerate(stream) if i % 6):
            break
    for pos in range(len(stream)):
        for mask in range(1, 256):
            damaged = stream[:pos] + bytes([stream[pos] ^ mask]) + stream[pos + 1:]
            dec = FRAMED.sample_decoder()
            out = dec.feed(damaged)
            check_loss(out, original, {pos // 6}, f"xor {mask:#04x} at byte {pos}")
            assert len(out) == len(original) - 1, f"frames after xor {mask:#04x} at {pos}"
            assert dec.bad_frames >= (pos % 6 != 0), f"bad_frames after xor at {pos}"


def test_every_single_byte_deletion_and_insertion():
    rng = np.random.default_rng(6)
    original, stream = make_stream(rng, 10, sync_rich=True)
    for pos in range(len(stream)):
        out = FRAMED.sample_decoder().feed(stream[:pos] + stream[pos + 1:])
        check_loss(out, original, touched_frames("delete", pos, 10), f"delete byte {pos}")
    for pos in range(len(stream) + 1):
        for value in (0x00, 0x5A, 0xA5, 0xFF, int(rng.integers(0, 256))):
            out = FRAMED.sample_decoder().feed(stream[:pos] + bytes([value]) + stream[pos:])
            check_loss(out, original, touched_frames("insert", pos, 10),
                       f"insert {value:#04x} before byte {pos}")


def test_random_damage_with_random_split_delivery():
    rng = np.random.default_rng(8)
    for trial in range(600):
        original, stream = make_stream(rng, 16, sync_rich=True)
        stream = bytearray(stream)
        pos = int(rng.integers(0, len(stream)))
        kind = ("delete", "corrupt", "insert")[trial % 3]
        if kind == "delete":
            del stream[pos]
        elif kind == "corrupt":
            stream[pos] ^= int(rng.integers(1, 256))
        else:
            stream.insert(pos, int(rng.integers(0, 256)))
        dec, out, i = FRAMED.sample_decoder(), [], 0
        while i < len(stream):
            step = int(rng.integers(1, 10))
            out += dec.feed(bytes(stream[i:i + step]))
            i += step
        check_loss(out, original, touched_frames(kind, pos, 16), f"trial {trial}: {kind} at {pos}")
        # Byte accounting: every byte fed is in a frame, discarded, or pending (< 6 bytes).
        accounted = 6 * dec.frames + dec.bytes_discarded
        assert dec.frames == len(out), f"trial {trial}: frames counter"
        assert 0 <= len(stream) - accounted < 6, f"trial {trial}: bytes unaccounted for"


@pytest.mark.parametrize("field,args", [
    ("code", (0, 4096, 0)), ("code", (0, -1, 0)), ("code", (0, 2.5, 0)),
    ("seq", (256, 0, 0)), ("seq", (-1, 0, 0)), ("seq", (None, 0, 0)),
    ("flags", (0, 0, 16)), ("flags", (0, 0, -1)), ("flags", (0, 0, 1.0)),
])
def test_encode_validates_fields(field, args):
    value = args[("seq", "code", "flags").index(field)]
    pattern = f"{field} = " + re.escape(repr(value))
    with pytest.raises(ValueError, match=pattern):
        FRAMED.encode_sample(*args)
    with pytest.raises(ValueError, match=pattern):
        FRAMED.encode_command(*args)


def test_encode_accepts_numpy_integers():
    got = FRAMED.encode_sample(np.uint8(7), np.int64(0x123), np.int32(3))
    assert got == doc_vectors()["framed-sample"], "numpy integer fields"


def test_seq_unwrapper_in_order_and_wrapping():
    u = SeqUnwrapper()
    ticks = [u.update(t % 256).tick for t in range(250, 250 + 600)]
    assert ticks == list(range(250, 850)), "unwrapped ticks across three wraps"
    assert (u.n_lost, u.n_backward, u.newest, u.n_seen) == (0, 0, 849, 600), "counters"


def test_seq_unwrapper_gaps_and_backwards():
    u = SeqUnwrapper()
    assert u.update(254) == SeqStep(254, 0, False), "first seq"
    assert u.update(1) == SeqStep(257, 2, False), "gap across the wrap (255, 0 lost)"
    assert u.update(1) == SeqStep(257, 0, True), "duplicate"
    assert u.update(255) == SeqStep(255, 0, True), "late packet from before the wrap"
    assert u.update(128) == SeqStep(384, 126, False), "largest forward jump (+127)"
    assert u.update(0) == SeqStep(256, 0, True), "a jump of -128 counts as backwards"
    assert (u.n_backward, u.n_lost, u.newest, u.n_seen) == (3, 128, 384, 6), "counters"


def test_seq_unwrapper_long_silence_needs_near():
    u = SeqUnwrapper()
    u.update(10)
    # 300 ticks of silence: 310 % 256 = 54; alone it looks like 44 ticks later.
    assert u.update(54).tick == 54, "ambiguous without near: smallest forward jump"
    u2 = SeqUnwrapper()
    u2.update(10)
    step = u2.update(54, near=305)
    assert step == SeqStep(310, 299, False), "with near: the tick expected from elapsed time"


def test_seq_unwrapper_validates():
    with pytest.raises(ValueError, match="seq = 256"):
        SeqUnwrapper().update(256)
    with pytest.raises(ValueError, match="modulus = 1"):
        SeqUnwrapper(1)
