"""Transports: raw pty pair, pyserial on a pty slave, and the in-process link with faults."""

from __future__ import annotations

import os
import threading
import time

import pytest

from myotwin.invitro.transport import (
    FaultPlan,
    FdTransport,
    InProcessLink,
    LinkClosed,
    SerialTransport,
    Transport,
    open_pty_pair,
    pty_slave_is_open,
)
from myotwin.invitro.wire import Sample, get_protocol

ALL_BYTES = bytes(range(256))


def read_exactly(link, n: int, timeout_s: float = 2.0) -> bytes:
    """Collect n bytes from `link` (a transport may return them in pieces)."""
    out = bytearray()
    deadline = time.perf_counter() + timeout_s
    while len(out) < n:
        remaining = deadline - time.perf_counter()
        assert remaining > 0, f"{link.name}: got {len(out)} of {n} bytes before the deadline"
        out += link.read(remaining)
    return bytes(out)


@pytest.fixture
def pty():
    master_fd, slave_path = open_pty_pair()
    master = FdTransport(master_fd, f"pty master of {slave_path}")
    yield master, slave_path
    master.close()


def open_slave_fd(path: str) -> FdTransport:
    return FdTransport(os.open(path, os.O_RDWR | os.O_NOCTTY), path)


@pytest.mark.parametrize("host_kind", ["fd", "serial"])
def test_pty_passes_all_byte_values_both_ways(pty, host_kind):
    master, path = pty
    host = open_slave_fd(path) if host_kind == "fd" else SerialTransport(path, 230400)
    try:
        for payload in (ALL_BYTES, ALL_BYTES[::-1], b"\x03\x0a\x0d\x11\x13\x1a\x04\x7f" * 8):
            host.write(payload)
            got = read_exactly(master, len(payload))
            assert got == payload, f"host -> device bytes ({host_kind}): {got.hex(' ')}"
            master.write(payload)
            got = read_exactly(host, len(payload))
            assert got == payload, f"device -> host bytes ({host_kind}): {got.hex(' ')}"
    finally:
        host.close()


def test_pty_detects_host_closing(pty):
    master, path = pty
    assert not pty_slave_is_open(master.fd), "slave open before any host"
    host = open_slave_fd(path)
    assert pty_slave_is_open(master.fd), "slave open after the host opened it"
    host.write(b"last words")
    host.close()
    assert not pty_slave_is_open(master.fd), "slave open after the host closed it"
    assert read_exactly(master, 10) == b"last words", "bytes written before closing"
    t0 = time.perf_counter()
    with pytest.raises(LinkClosed, match="pty master"):
        master.read(1.0)
    assert time.perf_counter() - t0 < 0.5, "LinkClosed must come at once, not at the timeout"


@pytest.mark.parametrize("host_kind", ["fd", "serial"])
def test_pty_detects_device_closing(host_kind):
    master_fd, path = open_pty_pair()
    host = open_slave_fd(path) if host_kind == "fd" else SerialTransport(path)
    try:
        os.close(master_fd)
        t0 = time.perf_counter()
        with pytest.raises(LinkClosed, match=path):
            host.read(1.0)
        assert time.perf_counter() - t0 < 0.5, f"read time to LinkClosed ({host_kind})"
        with pytest.raises(LinkClosed, match=path):
            host.write(b"x")
    finally:
        host.close()


def test_read_timeout_and_clock(pty):
    master, path = pty
    with SerialTransport(path) as host:
        t0 = host.now_s()
        assert host.read(0.02) == b"", "read with nothing sent"
        waited = host.now_s() - t0
        # Lower bound: select's timeout; upper bound: generous scheduling slack on a busy CI.
        assert 0.015 <= waited < 0.5, f"read timeout waited {waited} s"
        assert host.read(0.0) == b"", "zero-timeout read with nothing sent"
        master.write(b"\x01")
        assert read_exactly(host, 1) == b"\x01", "byte after the timeouts"


def test_large_write_loops_until_all_written(pty):
    master, path = pty
    payload = bytes(range(256)) * 800  # 200 kB, far more than the pty buffer
    received = bytearray()

    def drain():
        received.extend(read_exactly(master, len(payload), timeout_s=10.0))

    reader = threading.Thread(target=drain)
    with SerialTransport(path, write_timeout_s=5.0) as host:
        reader.start()
        host.write(payload)
        reader.join(10.0)
    assert bytes(received) == payload, f"{len(received)} of {len(payload)} bytes arrived intact"


def test_write_times_out_when_peer_does_not_read(pty):
    master, path = pty
    with SerialTransport(path):
        slow = FdTransport(os.dup(master.fd), "dup of master", write_timeout_s=0.05)
        t0 = time.perf_counter()
        with pytest.raises(TimeoutError, match="dup of master"):
            slow.write(b"\x00" * 1_000_000)
        assert time.perf_counter() - t0 < 1.0, "write timeout duration"
        slow.close()


def test_serial_open_errors_name_the_port(pty):
    _, path = pty
    with pytest.raises(OSError, match="/dev/no-such-tty"):
        SerialTransport("/dev/no-such-tty")
    with pytest.raises(ValueError, match=path):
        SerialTransport(path, baudrate=-5)
    with SerialTransport(path):
        with pytest.raises(OSError, match=path):
            SerialTransport(path)  # exclusive: a second host cannot open the same port


def test_serial_pyserial_read_path(pty):
    # Where a port has no file descriptor (Windows) SerialTransport reads through pyserial.
    # Exercise that path on the pty by removing the descriptor route.
    master, path = pty
    host = SerialTransport(path)
    host._fd_link = None
    try:
        t0 = time.perf_counter()
        assert host.read(0.02) == b"", "pyserial read with nothing sent"
        assert time.perf_counter() - t0 >= 0.015, "pyserial read timeout"
        master.write(ALL_BYTES)
        assert read_exactly(host, 256) == ALL_BYTES, "pyserial read bytes"
        host.write(ALL_BYTES)
        assert read_exactly(master, 256) == ALL_BYTES, "pyserial write bytes"
        master.close()
        with pytest.raises(LinkClosed, match=path):
            host.read(1.0)
    finally:
        host.close()


def test_framed_packets_over_pty(pty):
    master, path = pty
    proto = get_protocol("framed")
    with SerialTransport(path, 230400) as host:
        dec = proto.sample_decoder()
        got = []
        for k in range(300):
            master.write(proto.encode_sample(k & 0xFF, (k * 13) % 4096, k % 16))
        while len(got) < 300:
            data = host.read(1.0)
            assert data, f"pty stalled after {len(got)} samples"
            got += dec.feed(data)
        assert got == [Sample(k & 0xFF, (k * 13) % 4096, k % 16) for k in range(300)], "samples"


def test_all_transports_satisfy_protocol(pty):
    master, path = pty
    with SerialTransport(path) as host:
        for link in (master, host, InProcessLink(CounterPeer())):
            assert isinstance(link, Transport), f"{type(link).__name__} is a Transport"


class CounterPeer:
    """Toy device: every `every`-th tick sends 3 bytes [k, k, k] (k = tick mod 256) and it
    records what it receives with the index of the tick it will run next."""

    def __init__(self, period_s: float = 0.001, every: int = 1) -> None:
        self.period_s = period_s
        self.every = every
        self.k = 0
        self.received: list[tuple[int, bytes]] = []

    def receive(self, data: bytes) -> None:
        self.received.append((self.k, data))

    def tick(self) -> bytes:
        k = self.k
        self.k += 1
        return bytes([k & 0xFF]) * 3 if k % self.every == 0 else b""


def test_inprocess_virtual_clock():
    peer = CounterPeer(period_s=0.001)
    link = InProcessLink(peer)
    assert link.now_s() == 0.0, "virtual clock at start"
    for k in range(5):
        assert link.read(1.0) == bytes([k]) * 3, f"output of tick {k}"
        assert link.now_s() == pytest.approx((k + 1) * 1e-3, abs=1e-15), f"clock after tick {k}"
        link.write(bytes([k]))
    assert peer.received == [(k + 1, bytes([k])) for k in range(5)], "writes reach the peer"
    sparse = InProcessLink(CounterPeer(every=5))
    sparse.read(1.0)
    assert sparse.read(1.0) == b"\x05" * 3, "sparse peer: next output"
    assert sparse.now_s() == pytest.approx(6e-3, abs=1e-15), "clock after waiting 5 ticks"


def test_inprocess_timeout():
    link = InProcessLink(CounterPeer(every=1000))
    link.read(1.0)  # tick 0 sends
    assert link.read(0.0) == b"", "zero timeout"
    assert link.n_ticks == 1, "zero timeout must not tick the peer"
    assert link.read(0.0105) == b"", "timeout shorter than the next output"
    assert link.n_ticks == 11, "ticks run during a 10.5 ms wait after t = 1 ms"
    assert link.now_s() == pytest.approx(0.0115, abs=1e-12), "clock after the timeout"
    assert link.read(0.0005) == b"", "wait that ends exactly at the next tick time"
    assert link.n_ticks == 12, "a deadline on a tick time runs that tick"


def test_inprocess_advance_buffers_output():
    peer = CounterPeer()
    link = InProcessLink(peer)
    link.advance_s(0.0035)
    assert link.n_ticks == 3 and link.now_s() == pytest.approx(0.0035), "ticks during advance"
    assert link.read(0.0) == b"\x00\x00\x00\x01\x01\x01\x02\x02\x02", "buffered output"
    assert link.read(1.0) == b"\x03" * 3, "next tick after the buffered output"


def test_inprocess_output_faults():
    plan = (FaultPlan().corrupt(1, byte_index=2, mask=0x10).drop(2).insert(3, b"\xee\xff")
            .insert(4, b"\x99", at=None).silence(5, 7).corrupt(8, byte_index=5))
    link = InProcessLink(CounterPeer(), plan)
    got = [link.read(1.0) for _ in range(5)]
    assert got == [b"\x00" * 3, b"\x01\x01\x11", b"\xee\xff\x03\x03\x03", b"\x04\x04\x04\x99",
                   b"\x07" * 3], "outputs of ticks 0, 1, 3, 4, 7 (2, 5, 6 lost)"
    assert link.read(1.0) == b"\x08" * 3, "corrupt beyond the output leaves it intact"
    assert plan.log == [
        (1, "corrupt: byte 2 xor 0x10"),
        (2, "drop: 3 bytes lost"),
        (3, "insert: ee ff at byte 0"),
        (4, "insert: 99 at byte 3"),
        (5, "silence: 3 bytes discarded"),
        (6, "silence: 3 bytes discarded"),
        (8, "corrupt: no byte 5 in 3 bytes, nothing corrupted"),
    ], "fault log"
    assert link.fault_log is plan.log, "link exposes the plan's log"


def test_inprocess_disconnect():
    plan = FaultPlan().disconnect(3)
    peer = CounterPeer()
    link = InProcessLink(peer, plan, name="toy")
    for k in range(3):
        assert link.read(1.0) == bytes([k]) * 3, f"tick {k} before the disconnect"
    link.write(b"ok")  # the disconnect is discovered only when tick 3 is due
    with pytest.raises(LinkClosed, match="toy.*tick 3"):
        link.read(1.0)
    with pytest.raises(LinkClosed, match="toy"):
        link.write(b"x")
    with pytest.raises(LinkClosed, match="toy"):
        link.read(0.0)
    assert peer.k == 3, "the peer must not run its tick 3"
    assert plan.log == [(3, "disconnect")], "fault log"


def test_inprocess_write_faults():
    plan = FaultPlan().drop_write(0).corrupt_write(1, byte_index=0, mask=0x01).delay_write(2, 2)
    peer = CounterPeer()
    link = InProcessLink(peer, plan)
    link.write(b"early")  # before any tick: nothing to answer, no fault applies
    for k in range(6):
        link.read(1.0)
        link.write(bytes([0x40 + k]))
    # Tick 0's answer is lost; tick 1's 0x41 arrives as 0x40. Tick 2's answer is held until just
    # before tick 5 (2 + 1 + 2); the answers to ticks 3 and 4 queue behind it, as on a serial line.
    assert peer.received == [(0, b"early"), (2, b"\x40"), (5, b"\x42"), (5, b"\x43"),
                             (5, b"\x44"), (6, b"\x45")], "bytes and tick of delivery"
    assert plan.log == [(0, "drop write: 1 bytes lost"), (1, "corrupt write: byte 0 xor 0x01"),
                        (2, "delay write: 1 bytes by 2 ticks")], "fault log"


def test_inprocess_wire_damage_costs_one_frame():
    proto = get_protocol("framed")

    class FramedDevice:
        period_s = 0.001

        def __init__(self):
            self.k = 0

        def receive(self, data):
            pass

        def tick(self):
            self.k += 1
            return proto.encode_sample((self.k - 1) & 0xFF, self.k - 1, 0)

    plan = FaultPlan().corrupt(10, byte_index=3, mask=0x04).drop(20).insert(30, b"\xa5\x00")
    link = InProcessLink(FramedDevice(), plan)
    dec = proto.sample_decoder()
    got = []
    while link.n_ticks < 40:
        got += dec.feed(link.read(0.01))
    assert [s.code for s in got] == [k for k in range(40) if k not in (10, 20)], "codes"
    assert dec.bad_frames == 2, "bad frames: the corrupted one and the inserted 0xa5"


def test_inprocess_and_fault_plan_validation():
    class NoPeriod:
        def receive(self, data): pass
        def tick(self): return b""

    with pytest.raises(ValueError, match="period_s = None"):
        InProcessLink(NoPeriod())
    peer = CounterPeer(period_s=0.0)
    with pytest.raises(ValueError, match="period_s = 0.0"):
        InProcessLink(peer)
    with pytest.raises(ValueError, match="mask = 0"):
        FaultPlan().corrupt(1, mask=0)
    with pytest.raises(ValueError, match="tick = -1"):
        FaultPlan().drop(-1)
    with pytest.raises(ValueError, match=r"\[5, 5\)"):
        FaultPlan().silence(5, 5)
    with pytest.raises(ValueError, match="garbage"):
        FaultPlan().insert(1, b"")
    link = InProcessLink(CounterPeer())
    link.close()
    with pytest.raises(LinkClosed, match="closed by the host"):
        link.read(0.1)
