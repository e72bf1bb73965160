"""The host loop against closed forms: a constant force on a mass-spring load, range clamps,
and the trips the loop raises itself (instability, force range, no first sample).

The far end is a minimal device of our own (constant or scheduled force code, one framed
sample per tick, a record of every command it receives), so everything the host does is
checked against numbers computed here, not against the emulator.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.host import HostLoop, TrialSpec
from myotwin.invitro.inertial_load import InertialLoadPlant
from myotwin.invitro.recorder import Recorder
from myotwin.invitro.safety import SafetyConfig, clamp_volts
from myotwin.invitro.transport import FaultPlan, InProcessLink
from myotwin.invitro.wire import (COMMAND_END, COMMAND_SAFE, COMMAND_STIM_GATE, N_CODES,
                                  VOLTS_PER_CODE, code_to_volts, get_protocol, volts_to_code)

PERIOD_S = 1e-3
CAL = Calibration()
#: Half a 12-bit force code in newtons: 0.825 mV / 2 at 0.5 V/N (attenuation 0.5 of 1 V/N).
HALF_CODE_N = 0.5 * VOLTS_PER_CODE / CAL.adc_volts_per_newton
#: Codes whose voltage lies inside the ergometer range, found by brute force over all codes.
RANGE_CODES = [c for c in range(N_CODES) if CAL.length_min_V <= code_to_volts(c) <= CAL.length_max_V]


class ScriptedDevice:
    """One framed sample per tick with force code `force_code(k)`; records every command it
    receives as (index of the next tick at receipt, Command)."""

    def __init__(self, force_code: Callable[[int], int], period_s: float = PERIOD_S) -> None:
        self.period_s = period_s
        self.force_code = force_code
        self.protocol = get_protocol("framed")
        self._decoder = self.protocol.command_decoder()
        self.n_ticks = 0
        self.received: list = []

    def receive(self, data: bytes) -> None:
        self.received += [(self.n_ticks, c) for c in self._decoder.feed(data)]

    def tick(self) -> bytes:
        k = self.n_ticks
        self.n_ticks += 1
        return self.protocol.encode_sample(k % 256, self.force_code(k), 0)


class CountingLoad(InertialLoadPlant):
    """The inertial load, counting its steps."""

    def reset(self) -> None:
        super().reset()
        self.n_steps = 0

    def step(self) -> None:
        super().step()
        self.n_steps += 1


def force_code_N(force_N: float) -> int:
    return volts_to_code(CAL.newtons_to_force_volts(force_N))


def read_ticks(path: Path) -> dict[str, np.ndarray]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], np.array(rows[1:], dtype=float).reshape(-1, len(rows[0]))
    return {name: body[:, i] for i, name in enumerate(header)}


def read_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run(tmp_path: Path, device, plant, n_ticks: int, safety: SafetyConfig = SafetyConfig(),
        faults: FaultPlan | None = None, **trial_kw):
    link = InProcessLink(device, faults=faults)
    loop = HostLoop(plant, link, get_protocol("framed"), CAL, safety, PERIOD_S)
    with Recorder(tmp_path, loop.columns) as rec:
        result = loop.run(TrialSpec("test", n_ticks, **trial_kw), rec)
    return result, read_ticks(tmp_path / "ticks.csv"), read_events(tmp_path / "events.jsonl")


def test_constant_force_matches_undamped_mass_spring_closed_form(tmp_path):
    """x(t) = F/k (1 - cos(w t)) from rest under a constant force (exact for the ZOH step)."""
    F_N, k_N_per_m, m_kg, n = 0.5, 500.0, 0.01, 100       # 2 mm peak, 3.6 oscillations
    code = force_code_N(F_N)
    F_q = CAL.force_volts_to_newtons(code_to_volts(code))  # the force the loop really applies
    assert abs(F_q - F_N) <= HALF_CODE_N, f"quantised force {F_q} N vs {F_N} N"
    device = ScriptedDevice(lambda k: code)
    plant = CountingLoad(m_kg, k_N_per_m, length0_m=CAL.lrest_m, dt_s=PERIOD_S)
    result, rows, _ = run(tmp_path, device, plant, n)

    assert result.ended == "completed" and result.trip is None, result.message
    # one simulation step per valid sample, and t_sim = k * period
    assert result.ticks == n and plant.n_steps == n, f"steps {plant.n_steps} for {n} samples"
    assert plant.time_s() == pytest.approx(n * PERIOD_S, abs=1e-12), "plant time after n steps"
    run_rows = rows["state"] == 0
    k = np.arange(n)
    assert run_rows.sum() == n and np.array_equal(rows["tick"][run_rows], k), "RUN rows on disk"
    np.testing.assert_allclose(rows["t_sim_s"][run_rows], k * PERIOD_S, rtol=0, atol=1e-15,
                               err_msg="t_sim_s = k * period")
    # the virtual clock delivers sample k at (k + 1) * period: t_real = t_sim exactly
    np.testing.assert_allclose(rows["t_real_s"][run_rows], k * PERIOD_S, rtol=0, atol=1e-12,
                               err_msg="t_real_s")
    assert result.max_abs_tsim_minus_treal_s <= 1e-12, "max |t_sim - t_real|"

    # Row k holds the length after step k + 1, i.e. at t = (k + 1) * period.
    w = math.sqrt(k_N_per_m / m_kg)
    t = (k + 1) * PERIOD_S
    L = rows["mtu_length_m"][run_rows]
    L0 = CAL.lrest_m
    # Against the nominal force: the only error is the 12-bit force quantisation, at most half
    # a code (0.825 mN) on a response whose peak is 2 F / k.
    tol_m = 2 * HALF_CODE_N / k_N_per_m + 1e-12
    err = np.abs(L - (L0 - F_N / k_N_per_m * (1 - np.cos(w * t))))
    assert err.max() <= tol_m, f"mtu_length_m vs closed form: {err.max():.3g} m > {tol_m:.3g} m"
    # Against the quantised force the ZOH step is exact: only float round-off is left
    # (1e-16 m per step on a 2 mm amplitude, 100 steps).
    err_q = np.abs(L - (L0 - F_q / k_N_per_m * (1 - np.cos(w * t))))
    assert err_q.max() <= 1e-12, f"mtu_length_m vs closed form at the quantised force: {err_q.max():.3g} m"
    assert np.all(rows["force_code"][run_rows] == code), "force_code on disk"
    np.testing.assert_allclose(rows["measured_tension_N"][run_rows], F_q, rtol=0, atol=1e-15,
                               err_msg="measured_tension_N")

    # What the device received: the answer to sample k arrives before its tick k + 1, echoes
    # seq k, and commands the recorded length through the calibration (clamped to the range).
    got = device.received
    assert len(got) == result.ticks + result.ramp_ticks, "one command per tick"
    for i, (at_tick, cmd) in enumerate(got[:n]):
        V, _ = clamp_volts(CAL.length_change_to_volts(L[i] - L0), CAL.length_min_V,
                           CAL.length_max_V)
        assert (at_tick, cmd.seq, cmd.flags) == (i + 1, i % 256, 0), f"command {i}: {cmd}"
        assert cmd.code == volts_to_code(V), f"command code {i}: {cmd.code} vs {volts_to_code(V)}"
    assert np.array_equal(rows["command_code"][run_rows], [c.code for _, c in got[:n]]), \
        "command_code on disk vs received"
    # then the reset ramp: SAFE, stimulator gate off, END on the last, which is the start length
    ramp = [c for _, c in got[n:]]
    assert ramp and all(c.flags & COMMAND_SAFE and not c.flags & COMMAND_STIM_GATE for c in ramp)
    assert [bool(c.flags & COMMAND_END) for c in ramp] == [False] * (len(ramp) - 1) + [True]
    assert ramp[-1].code == volts_to_code(CAL.length_offset_V), "final command = start length"


def headroom_m(side: str) -> float:
    """MTU length change from the start at which the lever command reaches the range edge."""
    edge_V = CAL.length_max_V if side == "high" else CAL.length_min_V
    return CAL.volts_to_length_change(edge_V)


# A 40 g load on 100 N/m: w = 50 rad/s, so the first extreme (2 F / k) comes at 63 ms, and
# the peak speed F / k * w stays at or under 0.3 m/s, far below any trip threshold.
CLAMP_LOAD = dict(mass_kg=0.04, stiffness_N_per_m=100.0)


@pytest.mark.parametrize("side", ["high", "low"])
def test_commands_never_leave_the_ergometer_range(tmp_path, side):
    """Drive the load beyond the lever range both ways: every code the device gets decodes to
    a voltage inside [length_min_V, length_max_V]; the clamped code is the extreme such code
    (found by brute force), not the nearest code, which can be 0.3 mV outside (2.2 V -> 2727)."""
    # high: a push (code 0 = -0.3 N) stretches the MTU by up to 6 mm; low: a pull of 0.6 N
    # shortens it by up to 12 mm
    code = 0 if side == "high" else force_code_N(0.6)
    F_N = CAL.force_volts_to_newtons(code_to_volts(code))
    peak_dL_m = -2 * F_N / CLAMP_LOAD["stiffness_N_per_m"]
    assert abs(peak_dL_m) > 1.2 * abs(headroom_m(side)), "test premise: the load leaves the range"
    device = ScriptedDevice(lambda k: code)
    result, rows, events = run(tmp_path, device, InertialLoadPlant(**CLAMP_LOAD), 100)

    assert result.ended == "completed", result.message
    codes = np.array([c.code for _, c in device.received])
    volts = np.array([code_to_volts(c) for c in codes])
    assert volts.min() >= CAL.length_min_V and volts.max() <= CAL.length_max_V, \
        f"command volts [{volts.min()}, {volts.max()}] outside the ergometer range"
    extreme = RANGE_CODES[-1] if side == "high" else RANGE_CODES[0]
    clamped = rows["clamped"] != 0
    assert clamped.sum() == result.clamped_ticks > 0, "clamped ticks"
    assert np.all(rows["command_code"][clamped] == extreme), f"clamped command code ({side})"
    assert np.all(codes[:100][clamped[:100]] == extreme), "clamped code received"
    starts = [e for e in events if e["kind"] == "clamp_start"]
    where = "above length_max_V" if side == "high" else "below length_min_V"
    assert starts and where in starts[0]["message"], f"clamp_start events: {starts}"
    assert starts[0]["tick"] == int(np.argmax(clamped)), "tick of the first clamp_start"


def test_clamp_state_does_not_leak_into_the_next_trial(tmp_path):
    """A trial that ends clamped must not hide the clamp_start of the next one."""
    device = ScriptedDevice(lambda k: 0)   # push: clamped high around the first extreme
    link = InProcessLink(device)
    loop = HostLoop(InertialLoadPlant(**CLAMP_LOAD), link, get_protocol("framed"), CAL,
                    SafetyConfig(), PERIOD_S)
    kinds = []
    for i in range(2):
        with Recorder(tmp_path / str(i), loop.columns) as rec:
            result = loop.run(TrialSpec(f"trial{i}", 63), rec)
        rows = read_ticks(tmp_path / str(i) / "ticks.csv")
        assert rows["clamped"][result.ticks - 1] != 0, f"trial {i} should end clamped"
        kinds.append([e["kind"] for e in rec.events if e["kind"].startswith("clamp")])
    assert kinds[1] == kinds[0] == ["clamp_start"], f"clamp events per trial: {kinds}"


ZERO = force_code_N(0.0)
LIGHT = dict(mass_kg=1e-4, stiffness_N_per_m=100.0)    # w = 1000 rad/s: w dt = 1 rad
RUNAWAY_N = 2.5
OVER_RANGE_N = SafetyConfig().max_force_N + 0.2


def test_trip_premises():
    """The runaway force moves the light load faster than the trip speed in one step
    (x = F/k (1 - cos(w dt)) from rest) and is itself inside the force range."""
    cfg = SafetyConfig()
    w_dt = math.sqrt(LIGHT["stiffness_N_per_m"] / LIGHT["mass_kg"]) * PERIOD_S
    speed = RUNAWAY_N / LIGHT["stiffness_N_per_m"] * (1 - math.cos(w_dt)) / PERIOD_S
    assert speed > 1.5 * cfg.max_length_speed_m_per_s and RUNAWAY_N < cfg.max_force_N
    assert force_code_N(OVER_RANGE_N) < N_CODES - 1, "over-range force must fit in 12 bits"


@pytest.mark.parametrize("kind, force_N, expect", [
    ("instability", RUNAWAY_N, "MTU speed"),
    ("force_range", OVER_RANGE_N, "measured tension"),
])
def test_loop_trips_answer_the_offending_sample_with_a_safe_command(tmp_path, kind, force_N,
                                                                     expect):
    K = 10
    step = force_code_N(force_N)
    device = ScriptedDevice(lambda k: ZERO if k < K else step)
    result, rows, events = run(tmp_path, device, InertialLoadPlant(**LIGHT), 50)

    assert result.ended == "tripped" and result.trip.kind == kind, result.message
    assert result.trip.tick == K and result.message.startswith(f"tick {K}:"), result.message
    assert expect in result.message, result.message
    trip_events = [e for e in events if e["kind"] == "trip"]
    assert [(e["tick"], e["trip"]) for e in trip_events] == [(K, kind)], f"events: {events}"
    # answers to samples 0..K-1 are RUN commands; the answer to sample K is already SAFE
    got = device.received
    assert all(c.flags & COMMAND_SAFE == 0 for _, c in got[:K]), "RUN commands before the trip"
    at_tick, first = got[K]
    assert (at_tick, first.seq) == (K + 1, K) and first.flags & COMMAND_SAFE, \
        f"first command after the offending sample: {first} at tick {at_tick}"
    assert (rows["state"] == 0).sum() == K, "RUN rows on disk"
    assert len(rows["tick"]) == K + result.ramp_ticks, "rows on disk"


def test_no_first_sample_trips_the_start_watchdog(tmp_path):
    device = ScriptedDevice(lambda k: ZERO)
    plan = FaultPlan().silence(0, 1000)
    result, rows, events = run(tmp_path, device, InertialLoadPlant(), 10, faults=plan,
                               start_timeout_s=0.05)
    assert result.ended == "tripped" and result.trip.kind == "watchdog", result.message
    assert "first sample" in result.message and "50.0 ms" in result.message, result.message
    assert result.trip.tick == 0 and result.ticks == 0
    # the first SAFE command goes out at the deadline (virtual time 50 ms, before tick 50)
    at_tick, first = device.received[0]
    assert at_tick == 50 and first.flags & COMMAND_SAFE, f"{first} at tick {at_tick}"
    assert (rows["state"] == 0).sum() == 0
