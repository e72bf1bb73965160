"""Faults in the closed loop (issue acceptance 4): the real emulated device in-process, the
MuJoCo frog, the nominal stimulation, and a FaultPlan on the link.

For every fault: (a) the host is in its safe state within one tick of the fault becoming
detectable: the first command the *device* receives after the offending sample (after the
watchdog deadline for silence) is the first reset-ramp command; (b) no command the device
receives decodes outside [length_min_V, length_max_V]; (c) every tick processed before the
fault is in ticks.csv with the values the device saw; (d) the result and events.jsonl name
the fault and its tick.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.conditions import NOMINAL_STIMULATION
from myotwin.invitro.emulator import EmulatedDevice
from myotwin.invitro.frog.plant import MujocoFrogPlant
from myotwin.invitro.host import HostLoop, TrialResult, TrialSpec
from myotwin.invitro.links import DeviceLink, send_trigger
from myotwin.invitro.recorder import Recorder
from myotwin.invitro.safety import ResetRamp, SafetyConfig, command_code
from myotwin.invitro.transport import FaultPlan, InProcessLink
from myotwin.invitro.wire import (COMMAND_END, COMMAND_SAFE, COMMAND_STIM_GATE, Command,
                                  code_to_volts, get_protocol)

PERIOD_S = 1e-3
CAL = Calibration()
SAFETY = SafetyConfig()
N_TICKS = 80
K = 40            # device tick of the fault: inside the stimulation burst (20..100 ms)
WATCHDOG_TICKS = round(SAFETY.watchdog_s / PERIOD_S)


class RecordingPeer:
    """The emulated device, plus a decoded record of every command it receives:
    (device tick that will run next, Command)."""

    def __init__(self, device: EmulatedDevice) -> None:
        self.device = device
        self.period_s = device.period_s
        self._decoder = device.protocol.command_decoder()
        self.received: list[tuple[int, Command]] = []

    def receive(self, data: bytes) -> None:
        self.received += [(self.device.tick_count, c) for c in self._decoder.feed(data)]
        self.device.receive(data)

    def tick(self) -> bytes:
        return self.device.tick()


class KickedFrog:
    """The frog plant; at step `at_step` its joint velocities are kicked to 1e4 rad/s, so the
    frog's own divergence check (speed above 1e3) fires, as for a blown-up simulation."""

    def __init__(self, frog: MujocoFrogPlant, at_step: int) -> None:
        self.frog, self.at_step = frog, at_step
        self.dt_s, self.channel_names = frog.dt_s, frog.channel_names

    def reset(self):
        self.frog.reset()
        self.n_steps = 0

    def step(self):
        self.frog.step()
        self.n_steps += 1
        if self.n_steps == self.at_step:
            self.frog.data.qvel[:] = 1e4

    def __getattr__(self, name):            # set_muscle_tension, mtu_length_m, fault, ...
        return getattr(self.frog, name)


@dataclass
class Trial:
    result: TrialResult
    device: EmulatedDevice
    received: list
    rows: dict
    n_rows_recorded: int
    events: list


def run_trial(out: Path, plant, plan: FaultPlan | None, protocol: str = "framed") -> Trial:
    legacy = protocol == "legacy"   # legacy carries no gate flag: the device keeps the schedule
    device = EmulatedDevice(protocol=protocol, calibration=CAL, seed=0, period_s=PERIOD_S,
                            stimulation=NOMINAL_STIMULATION if legacy else None)
    peer = RecordingPeer(device)
    link = InProcessLink(peer, faults=plan)
    loop = HostLoop(plant, link, get_protocol(protocol), CAL, SAFETY, PERIOD_S)
    with Recorder(out, loop.columns) as rec:
        send_trigger(DeviceLink(link, "inprocess"), protocol, CAL)
        result = loop.run(TrialSpec("fault", N_TICKS, True, NOMINAL_STIMULATION), rec)
    with open(out / "ticks.csv", newline="") as f:
        table = list(csv.reader(f))
    rows = {name: np.array([float(r[i]) for r in table[1:]]) for i, name in enumerate(table[0])}
    events = [json.loads(s) for s in (out / "events.jsonl").read_text().splitlines()]
    assert plan is None or plan.log, "the fault plan fired nothing"
    return Trial(result, device, peer.received, rows, rec.n_rows, events)


@pytest.fixture(scope="module")
def frog():
    return MujocoFrogPlant()


def check_trial(t: Trial, kind: str, safe_at_tick: int | None, protocol: str = "framed"):
    """(a)-(d) of the module docstring for a fault at device tick K."""
    r = t.result
    # (d) what happened, and when
    assert r.trip is not None and r.trip.kind == kind, f"trip: {r.trip}; message: {r.message}"
    assert r.trip.tick == K and r.message.startswith(f"tick {K}:"), f"message: {r.message}"
    want_event = "disconnect" if kind == "disconnect" else "trip"
    hits = [e for e in t.events if e["kind"] == want_event]
    assert hits and hits[0]["tick"] == K, f"{want_event} event at tick {K}: {t.events}"
    if kind != "disconnect":
        assert hits[0]["trip"] == kind, f"trip event: {hits[0]}"
        assert [e["kind"] for e in t.events][-1] == "done", f"events: {t.events}"

    # (b) every command the device received decodes inside the ergometer range
    volts = [code_to_volts(c.code) for _, c in t.received]
    assert CAL.length_min_V <= min(volts) and max(volts) <= CAL.length_max_V, \
        f"lever command volts [{min(volts)}, {max(volts)}] outside the ergometer range"

    # (c) the K ticks processed before the fault are on disk, as the device saw them
    rows, run = t.rows, t.rows["state"] == 0
    assert len(rows["tick"]) == t.n_rows_recorded == r.ticks + r.ramp_ticks, "rows on disk"
    assert run.sum() == r.ticks == K, f"RUN rows on disk: {run.sum()}, ticks {r.ticks}"
    assert np.array_equal(rows["tick"][run], np.arange(K)), "tick column"
    assert np.array_equal(rows["force_code"][run], t.device.log.force_code[:K]), \
        "force_code on disk vs the codes the device sent"
    run_cmds = t.received[1:K + 1]        # [0] is the trigger; then the answers to 0..K-1
    assert [at for at, _ in run_cmds] == list(range(1, K + 1)), "answer k arrives before tick k+1"
    assert np.array_equal(rows["command_code"][run], [c.code for _, c in run_cmds]), \
        "command_code on disk vs the codes the device received"
    np.testing.assert_allclose(
        rows["measured_tension_N"][run],
        [CAL.force_volts_to_newtons(code_to_volts(int(c))) for c in rows["force_code"][run]],
        rtol=0, atol=1e-12, err_msg="measured_tension_N on disk")

    # (a) the safe state within one tick of detection, seen from the device
    safe_cmds = t.received[K + 1:]
    if safe_at_tick is None:               # disconnected: nothing can be sent any more
        assert r.ended == "disconnected" and not safe_cmds, f"{r.ended}, {safe_cmds[:3]}"
        return
    assert r.ended == "tripped", r.message
    at_tick, first = safe_cmds[0]
    assert at_tick == safe_at_tick, \
        f"first command after the fault reached the device before tick {at_tick}, " \
        f"expected {safe_at_tick}"
    # it is the first step of the reset ramp from the last RUN command to the start length
    ramp = ResetRamp(rows["command_V"][run][-1], CAL.length_offset_V, CAL.metres_per_volt,
                     PERIOD_S, SAFETY)
    assert first.code == command_code(ramp.next_volts(), CAL.length_min_V, CAL.length_max_V), \
        f"first ramp command code {first.code}"
    assert np.array_equal(rows["command_code"][~run], [c.code for _, c in safe_cmds]), \
        "ramp command codes on disk vs received"
    assert safe_cmds[-1][1].code == command_code(CAL.length_offset_V, CAL.length_min_V,
                                                 CAL.length_max_V), "last command: start length"
    if protocol == "framed":
        flags = [c.flags for _, c in safe_cmds]
        assert all(f & COMMAND_SAFE and not f & COMMAND_STIM_GATE for f in flags), \
            f"ramp command flags {flags[:5]}..."
        assert [bool(f & COMMAND_END) for f in flags] == [False] * (len(flags) - 1) + [True]
        # the device's stimulator is off from the first SAFE command on
        stim = t.device.log.stim
        assert stim[K - 5:K].any(), "stimulation was on before the fault (test premise)"
        assert not stim[at_tick:].any(), "stimulator on after the host entered its safe state"


@pytest.mark.parametrize("protocol", ["framed", "legacy"])
def test_corrupted_sample(tmp_path, frog, protocol):
    # framed: one bit of the code's low byte (only the CRC sees it); legacy: bit 6 of the
    # first data byte, which makes it > 63 (a data-byte error that stays <= 63 is
    # undetectable by the legacy protocol, see wire/legacy.py)
    plan = (FaultPlan().corrupt(K, byte_index=2, mask=0x01) if protocol == "framed"
            else FaultPlan().corrupt(K, byte_index=0, mask=0x40))
    t = run_trial(tmp_path, frog, plan, protocol)
    # sample K is lost; the corruption is known when K's bytes arrive, and the host answers
    # them at once with the first ramp command (received before tick K + 1), without
    # waiting for the next good sample
    check_trial(t, "bad_bytes", safe_at_tick=K + 1, protocol=protocol)
    assert "corrupt" in t.result.message


def test_dropped_sample(tmp_path, frog):
    t = run_trial(tmp_path, frog, FaultPlan().drop(K))
    check_trial(t, "lost_samples", safe_at_tick=K + 2)
    assert "1 sample(s) lost" in t.result.message, t.result.message


@pytest.mark.parametrize("protocol", ["framed", "legacy"])
def test_device_silent_for_50_ms(tmp_path, frog, protocol):
    t = run_trial(tmp_path, frog, FaultPlan().silence(K, K + 50), protocol)
    # the last sample (K - 1) arrived at K * period; the deadline is watchdog_s later, and the
    # first ramp command goes out then, before device tick K + watchdog_ticks
    check_trial(t, "watchdog", safe_at_tick=K + WATCHDOG_TICKS, protocol=protocol)
    assert f"within {SAFETY.watchdog_s * 1e3:.1f} ms" in t.result.message, t.result.message


def test_disconnect_mid_trial(tmp_path, frog):
    t = run_trial(tmp_path, frog, FaultPlan().disconnect(K))
    check_trial(t, "disconnect", safe_at_tick=None)
    assert t.result.ended == "disconnected"
    assert "link closed" in t.result.message and "disconnected at tick 40" in t.result.message


def test_diverging_simulation(tmp_path, frog):
    t = run_trial(tmp_path, KickedFrog(frog, at_step=K + 1), None)
    # the step taken for sample K diverges; its answer is already the first ramp command
    check_trial(t, "divergence", safe_at_tick=K + 1)
    assert "divergence" in t.result.message and "above" in t.result.message, t.result.message


def test_disconnect_during_the_reset_ramp_keeps_the_reason_of_the_trip(tmp_path, frog):
    t = run_trial(tmp_path, frog, FaultPlan().drop(K).disconnect(K + 40))
    r = t.result
    assert r.ended == "disconnected" and r.trip.kind == "lost_samples" and r.trip.tick == K, \
        f"{r.ended}, {r.trip}"
    # ramp commands answered samples K + 1 .. K + 39; the link closed before device tick K + 40
    assert r.ramp_ticks == 39 and len(t.received) == 1 + K + 39, f"ramp ticks {r.ramp_ticks}"
    assert r.message.startswith(f"tick {K}: link: 1 sample(s) lost"), r.message
    assert "39 tick(s) into the reset ramp, link closed" in r.message, r.message
    assert "disconnected at tick 80" in r.message, r.message
    assert [e["kind"] for e in t.events] == ["trip", "ramp_start", "disconnect"], t.events
    assert len(t.rows["tick"]) == t.n_rows_recorded == K + 39, "rows on disk"
