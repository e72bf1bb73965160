"""Legacy 3-byte protocol against the notes (§3.3), docs/protocol.md and damage properties."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from myotwin.invitro.wire import (
    CODE_MAX,
    TERMINATOR,
    VOLTS_PER_CODE,
    Command,
    Sample,
    code_to_volts,
    get_protocol,
)

PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
LEGACY = get_protocol("legacy")


def doc_vectors() -> dict[str, bytes]:
    """Test vectors `| name | fields | `hex` |` from docs/protocol.md §5."""
    rows = re.findall(r"^\| ([a-z0-9-]+) \| [^|]*(?:\\\|[^|]*)* \| `([0-9a-f ]+)` \|$",
                      PROTOCOL_DOC.read_text(), flags=re.M)
    return {name: bytes.fromhex(hexstr) for name, hexstr in rows}


# The same vectors as docs/protocol.md §5, written out by hand from the packet definition of
# notes/invitro-vr.md §3.3: [k & 0x3F, (k >> 6) & 0x3F, 65].
HARD_CODED = {
    "legacy-0": (0, bytes([0x00, 0x00, 0x41])),
    "legacy-4095": (4095, bytes([0x3F, 0x3F, 0x41])),
    "legacy-2048": (2048, bytes([0x00, 0x20, 0x41])),  # 2048 = 32 << 6
    "legacy-1234": (1234, bytes([0x12, 0x13, 0x41])),  # 1234 = 19 * 64 + 18
}


@pytest.mark.parametrize("name", sorted(HARD_CODED))
def test_vectors_match_doc_and_code(name):
    code, expected = HARD_CODED[name]
    documented = doc_vectors()
    assert name in documented, f"test vector {name} missing from {PROTOCOL_DOC}"
    assert documented[name] == expected, f"{name}: doc bytes {documented[name].hex(' ')}"
    assert LEGACY.encode_sample(0, code) == expected, f"{name}: encoded sample bytes"
    assert LEGACY.encode_command(0, code) == expected, f"{name}: encoded command bytes"
    assert LEGACY.sample_decoder().feed(expected) == [Sample(None, code, 0)], f"{name}: sample"
    assert LEGACY.command_decoder().feed(expected) == [Command(None, code, 0)], f"{name}: command"


def test_packet_format_from_notes():
    # notes §3.3: decode v = (b0 | b1 << 6) * R / 4096 + V_MIN with R = 3.38 V, V_MIN = -0.05 V;
    # LSB 0.825 mV; the savedData force quantum is exactly 1.650 mN = 2 * 3.38 V / 4096 (force
    # attenuated x0.5, 1 V = 1 N). Tolerance: float rounding only, except the quantum, which the
    # notes quote to 4 significant digits.
    assert LEGACY.sample_size == 3 and LEGACY.command_size == 3, "legacy packet size"
    assert TERMINATOR == ord("A") == 65, "legacy terminator"
    for code in (0, 1, 63, 64, 1234, 2048, 4095):
        b0, b1, term = LEGACY.encode_sample(0, code)
        v_notes = (b0 | b1 << 6) * 3.38 / 4096 - 0.05
        assert abs(code_to_volts(code) - v_notes) < 1e-12, f"volts of code {code}"
        assert term == 65, f"terminator of code {code}"
    assert abs(VOLTS_PER_CODE - 0.825e-3) < 0.0005e-3, f"code step {VOLTS_PER_CODE} V"
    force_quantum_N = VOLTS_PER_CODE / 0.5 / 1.0
    assert abs(force_quantum_N - 1.650e-3) < 0.0005e-3, f"force quantum {force_quantum_N} N"


def test_round_trip_all_codes():
    stream = b"".join(LEGACY.encode_sample(0, k) for k in range(CODE_MAX + 1))
    assert len(stream) == 3 * 4096, "stream length of 4096 packets"
    data = np.frombuffer(stream, dtype=np.uint8).reshape(-1, 3)
    assert (data[:, :2] <= 63).all(), "legacy data bytes must stay <= 63"
    assert (data[:, 2] == 65).all(), "legacy terminators"
    dec = LEGACY.sample_decoder()
    codes = [s.code for s in dec.feed(stream)]
    assert codes == list(range(4096)), "decoded codes of all 4096 packets"
    assert (dec.frames, dec.bytes_discarded, dec.bad_frames) == (4096, 0, 0), "decoder counters"
    cdec = LEGACY.command_decoder()
    for k in range(4096):
        assert cdec.feed(LEGACY.encode_command(123, k, 15)) == [Command(None, k, 0)], \
            f"command round trip of code {k}"


def test_split_and_merged_delivery():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 4096, 500)
    stream = b"".join(LEGACY.encode_sample(0, int(k)) for k in codes)
    for trial in range(20):
        dec = LEGACY.sample_decoder()
        out, pos = [], 0
        while pos < len(stream):
            n = 1 if trial == 0 else int(rng.integers(1, 40))
            out += dec.feed(stream[pos:pos + n])
            pos += n
        assert [s.code for s in out] == codes.tolist(), f"codes, trial {trial}"
        assert dec.bytes_discarded == 0, f"bytes discarded, trial {trial}"


def test_counters_and_bounded_garbage():
    dec = LEGACY.sample_decoder()
    good = LEGACY.encode_sample(0, 1234)
    # One stray data byte before a packet: the run [1, lo, hi, A] has three data bytes.
    assert dec.feed(b"\x01" + good) == [], "packet after a stray byte is rejected"
    assert (dec.bytes_discarded, dec.bad_frames) == (4, 1), "counters after stray byte"
    assert dec.feed(good) == [Sample(None, 1234, 0)], "next packet is accepted"
    # 10000 bytes of garbage without a terminator are discarded as they arrive.
    dec.feed(b"\xff" * 10000)
    assert dec.bytes_discarded == 4 + 10000, "garbage discarded eagerly"
    assert dec.feed(good) == [], "packet completing a garbage run is rejected"
    assert dec.feed(good) == [Sample(None, 1234, 0)], "packet after the garbage run"
    assert (dec.frames, dec.bad_frames) == (2, 2), "frames and bad frames"


def touched_packets(kind: str, pos: int, n_packets: int, new_byte: int | None = None) -> set:
    """Packets that a single damaged byte at `pos` may cost under the legacy rule."""
    j = pos // 3
    if kind == "insert":
        return {j} if j < n_packets else set()
    is_terminator = pos % 3 == 2
    merges = is_terminator and (kind == "delete" or new_byte != TERMINATOR)
    return {j, j + 1} & set(range(n_packets)) if merges else {j}


def check_loss(decoded: list, original: list, touched: set, what: str) -> None:
    """decoded == original except within `touched`, where packets may be lost or (no CRC)
    altered, but never more packets than were touched."""
    if not touched:
        assert decoded == original, f"{what}: packets changed although none was touched"
        return
    lo, hi = min(touched), max(touched)
    n_tail = len(original) - hi - 1
    assert decoded[:lo] == original[:lo], f"{what}: packets before the damage"
    assert len(decoded) >= lo + n_tail, f"{what}: number of packets after the damage"
    assert decoded[len(decoded) - n_tail:] == original[hi + 1:], f"{what}: packets after damage"
    middle = len(decoded) - lo - n_tail
    assert middle <= len(touched), f"{what}: {middle} packets where {len(touched)} were touched"


def test_every_single_byte_damage_loses_only_touched_packets():
    rng = np.random.default_rng(7)
    codes = [int(k) for k in rng.integers(0, 4096, 12)]
    original = [Sample(None, k, 0) for k in codes]
    stream = b"".join(LEGACY.encode_sample(0, k) for k in codes)
    n = len(codes)
    for pos in range(len(stream)):
        damaged = stream[:pos] + stream[pos + 1:]
        check_loss(LEGACY.sample_decoder().feed(damaged), original,
                   touched_packets("delete", pos, n), f"delete byte {pos}")
        for mask in range(1, 256):
            new = stream[pos] ^ mask
            damaged = stream[:pos] + bytes([new]) + stream[pos + 1:]
            check_loss(LEGACY.sample_decoder().feed(damaged), original,
                       touched_packets("corrupt", pos, n, new), f"xor {mask:#04x} at {pos}")
    for pos in range(len(stream) + 1):
        for value in (0, 5, 63, 64, 65, 0xA5, 0xFF):
            damaged = stream[:pos] + bytes([value]) + stream[pos:]
            check_loss(LEGACY.sample_decoder().feed(damaged), original,
                       touched_packets("insert", pos, n), f"insert {value} before {pos}")


def test_damage_with_random_split_delivery():
    rng = np.random.default_rng(11)
    for trial in range(300):
        codes = [int(k) for k in rng.integers(0, 4096, 20)]
        original = [Sample(None, k, 0) for k in codes]
        stream = bytearray(b"".join(LEGACY.encode_sample(0, k) for k in codes))
        pos = int(rng.integers(0, len(stream)))
        kind = ("delete", "corrupt", "insert")[trial % 3]
        new = None
        if kind == "delete":
            del stream[pos]
        elif kind == "corrupt":
            new = stream[pos] ^ int(rng.integers(1, 256))
            stream[pos] = new
        else:
            stream.insert(pos, int(rng.integers(0, 256)))
        dec, out, i = LEGACY.sample_decoder(), [], 0
        while i < len(stream):
            step = int(rng.integers(1, 8))
            out += dec.feed(bytes(stream[i:i + step]))
            i += step
        check_loss(out, original, touched_packets(kind, pos, len(codes), new),
                   f"trial {trial}: {kind} at {pos}")
        # Byte accounting: every byte fed is in a packet, discarded, or pending (< 3 bytes).
        accounted = 3 * dec.frames + dec.bytes_discarded
        assert dec.frames == len(out), f"trial {trial}: frames counter"
        assert 0 <= len(stream) - accounted < 3, f"trial {trial}: bytes unaccounted for"


@pytest.mark.parametrize("bad", [-1, 4096, 1.5, "7", None])
def test_encode_validates_code(bad):
    with pytest.raises(ValueError, match=r"code = " + re.escape(repr(bad))):
        LEGACY.encode_sample(0, bad)
    with pytest.raises(ValueError, match=r"code = " + re.escape(repr(bad))):
        LEGACY.encode_command(0, bad)


def test_seq_and_flags_not_carried():
    assert not LEGACY.carries_seq and not LEGACY.carries_flags, "legacy capabilities"
    assert LEGACY.encode_sample(200, 77, 15) == LEGACY.encode_sample(0, 77, 0), \
        "legacy encoding must ignore seq and flags"


def test_get_protocol_rejects_unknown_name():
    with pytest.raises(ValueError, match=r"'legcy'.*framed.*legacy"):
        get_protocol("legcy")
    assert get_protocol().name == "framed", "default protocol"
    assert get_protocol("legacy").name == "legacy", "legacy protocol name"
