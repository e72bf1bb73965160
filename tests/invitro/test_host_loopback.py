"""Loopback validation (seed Fig. 1E) in-process: clean runs pass; a fault on the host ->
device direction fails the verdict, in the field that describes it."""

from __future__ import annotations

import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.emulator import EmulatedDevice
from myotwin.invitro.links import DeviceLink, send_trigger
from myotwin.invitro.loopback import loopback_verdict, run_loopback
from myotwin.invitro.transport import FaultPlan, InProcessLink
from myotwin.invitro.wire import get_protocol

N = 300
K = 100


def loopback(protocol: str, plan: FaultPlan | None = None) -> dict:
    device = EmulatedDevice(protocol=protocol, loopback_mode=protocol == "legacy", seed=3)
    link = InProcessLink(device, faults=plan)
    send_trigger(DeviceLink(link, "inprocess"), protocol, Calibration())
    host = run_loopback(link, get_protocol(protocol), N, device.period_s)
    if plan is not None:
        assert plan.log, "the fault plan fired nothing"
    return loopback_verdict(host, device.stats(), N, 1.0 / device.period_s)


@pytest.mark.parametrize("protocol", ["framed", "legacy"])
def test_clean_loopback_passes(protocol):
    v = loopback(protocol)
    assert v["passed"], f"verdict: {v}"
    assert (v["max_error_lsb"], v["lost"], v["reordered"], v["ticks"]) == (0, 0, 0, N), v


def test_corrupted_echo_framed_is_a_lost_echo():
    """A corrupted command frame fails its CRC: the device never sees that echo."""
    v = loopback("framed", FaultPlan().corrupt_write(K, byte_index=2, mask=0x01))
    assert not v["passed"], f"verdict: {v}"
    assert v["lost"] == 1 and v["device"]["bad_frames"] == 1, f"lost / bad_frames: {v}"
    assert v["max_error_lsb"] == 0 and v["device"]["loopback_mismatches"] == 0


def test_corrupted_echo_legacy_is_a_code_error():
    """Legacy has no checksum: a flipped low data bit arrives as an echo one code off."""
    v = loopback("legacy", FaultPlan().corrupt_write(K, byte_index=0, mask=0x01))
    assert not v["passed"], f"verdict: {v}"
    assert v["max_error_lsb"] == 1 and v["device"]["loopback_mismatches"] == 1, \
        f"max_error_lsb / mismatches: {v}"
    assert v["lost"] == 0


def test_dropped_echo_is_lost():
    v = loopback("framed", FaultPlan().drop_write(K))
    assert not v["passed"] and v["lost"] == 1, f"verdict: {v}"


@pytest.mark.parametrize("protocol", ["framed", "legacy"])
def test_one_lost_sample_counts_once(protocol):
    """Seen at both ends (the host's seq gap, the device's missing echo), it is one packet."""
    v = loopback(protocol, FaultPlan().drop(K))
    assert not v["passed"] and v["lost"] == 1, f"lost: {v}"
    assert v["ticks"] == N and v["bad_bytes"] == 0 and v["max_error_lsb"] == 0, f"verdict: {v}"


def test_lost_sample_and_lost_echo_count_twice():
    v = loopback("framed", FaultPlan().drop(K).drop_write(K + 10))
    assert not v["passed"] and v["lost"] == 2, f"lost: {v}"
