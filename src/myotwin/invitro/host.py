"""The host side of the closed loop (seed: Methods, "Overall sequence of events").

Each tick the device samples the muscle force and sends it; the host decodes it, applies it
along the simulated muscle path, advances the plant exactly one step, and sends back the new
muscle-tendon length as a lever command. The host never keeps time of its own while the
loop runs: one valid sample = one step, so the device's clock paces the simulation and
t_sim = t_real by construction. The host *checks* that claim every tick (t_real is taken
from the link's clock at the arrival of each sample) and trips on anything that breaks it.

The loop is a small state machine, RUN -> RAMP -> DONE (see `safety.py`):
* RUN: the closed loop. A trip (watchdog, lost or corrupt data, instability, force out of
  range, divergence, overextension) or the end of the trial moves to RAMP *in the same tick*:
  the command answering the offending sample is already the first ramp command.
* RAMP: the simulation is frozen; the lever returns to the start length along a smooth ramp
  with the stimulator gate off and the SAFE flag set, one command per device tick (or per
  period of the host's own clock while the device is silent).
* DONE: an END command is sent (the start length); the device may disarm.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from .calibration import Calibration
from .plant import Plant
from .recorder import Recorder
from .safety import (InstabilityDetector, LoopState, ResetRamp, SafetyConfig, Trip,
                     clamp_volts, command_code)
from .stimulation import StimulationSchedule
from .transport import LinkClosed, Transport
from .wire import (COMMAND_END, COMMAND_SAFE, COMMAND_STIM_GATE, SAMPLE_LATE, SAMPLE_TRIPPED,
                   SeqUnwrapper,
                   WireProtocol)
from .wire.codes import code_to_volts

#: Columns written for every tick, before the plant's own channels.
LOOP_COLUMNS = (
    "tick", "device_tick", "t_sim_s", "t_real_s", "turnaround_s", "state",
    "force_code", "force_V", "measured_tension_N", "applied_tension_N", "mtu_length_m", "mtu_strain",
    "command_V", "command_code", "clamped", "stim_gate", "sample_flags",
)
STATE_CODE = {LoopState.RUN: 0, LoopState.RAMP: 1, LoopState.DONE: 2}


@dataclass(frozen=True)
class TrialSpec:
    """What one trial does: its length, whether the muscle acts, its stimulation."""

    name: str
    n_ticks: int
    muscle_present: bool = True
    stimulation: StimulationSchedule | None = None
    start_timeout_s: float = 10.0
    """How long to wait for the device's first sample."""


@dataclass
class TrialResult:
    """Summary of one trial as seen by the host."""

    name: str
    ticks: int = 0                      # closed-loop ticks completed (simulation steps)
    ramp_ticks: int = 0
    missed_ticks: int = 0               # device flagged LATE, or samples lost on the link
    lost_samples: int = 0
    bad_bytes: int = 0
    clamped_ticks: int = 0
    trip: Trip | None = None
    ended: str = "completed"            # completed | tripped | disconnected
    max_abs_tsim_minus_treal_s: float = 0.0
    turnaround_s: list[float] = field(default_factory=list)
    message: str = ""


CORRUPT = "corrupt"
"""Returned by `_Link.next_sample` when only corrupt bytes arrived."""


class _Link:
    """Sample reception with a watchdog deadline, sequence checks and corruption counts."""

    def __init__(self, transport: Transport, protocol: WireProtocol) -> None:
        self.transport = transport
        self.protocol = protocol
        self.decoder = protocol.sample_decoder()
        self.pending: deque = deque()
        self.last_seq: int | None = None
        self.device_tick = -1
        self.unwrapper = SeqUnwrapper()
        self.arrival_s = 0.0

    def bad_bytes(self) -> int:
        d = self.decoder
        return d.bytes_discarded + d.bad_frames

    def next_sample(self, deadline_s: float, max_bad_bytes: int | None = None):
        """(sample, t_arrival_s); None if nothing valid arrived by the deadline; CORRUPT as
        soon as more than `max_bad_bytes` bad bytes have been seen with no valid sample to
        answer (so the host need not wait for the next good sample to react)."""
        t = self.transport
        while not self.pending:
            remaining = deadline_s - t.now_s()
            if remaining <= 0:
                return None
            data = t.read(remaining)
            if data:
                self.arrival_s = t.now_s()
                self.pending.extend(self.decoder.feed(data))
                if (not self.pending and max_bad_bytes is not None
                        and self.bad_bytes() > max_bad_bytes):
                    return CORRUPT
        s = self.pending.popleft()
        self._sequence(s.seq)
        return s, self.arrival_s

    def _sequence(self, seq: int | None) -> None:
        if seq is None:                         # legacy protocol: no sequence numbers
            self.device_tick += 1
            return
        step = self.unwrapper.update(seq)
        self.device_tick = step.tick
        self.last_seq = seq

    @property
    def lost(self) -> int:
        return self.unwrapper.n_lost

    @property
    def reordered(self) -> int:
        return self.unwrapper.n_backward


class HostLoop:
    """Runs trials of the closed loop between a device link and a plant."""

    def __init__(self, plant: Plant, transport: Transport, protocol: WireProtocol,
                 calibration: Calibration = Calibration(), safety: SafetyConfig = SafetyConfig(),
                 period_s: float = 1e-3) -> None:
        if abs(plant.dt_s - period_s) > 1e-12:
            raise ValueError(f"plant time step dt_s = {plant.dt_s} s differs from the loop "
                             f"period {period_s} s: t_sim would not equal t_real")
        self.plant, self.transport, self.protocol = plant, transport, protocol
        self.cal, self.safety, self.period_s = calibration, safety, period_s
        self.columns = LOOP_COLUMNS + tuple(plant.channel_names)

    # -- one trial ---------------------------------------------------------------------
    def run(self, trial: TrialSpec, recorder: Recorder, start=None) -> TrialResult:
        """Run one trial. `start()`, if given, is called once everything is ready and just
        before waiting for the first sample: it triggers the device (whose clock starts then),
        so no set-up work delays the answer to the first sample."""
        self.plant.reset()
        self.result = TrialResult(trial.name)
        self.rec, self.trial = recorder, trial
        self.link = _Link(self.transport, self.protocol)
        self.L0 = self.plant.mtu_length_m()
        self.command_V = self.cal.length_offset_V
        self.force_zero_V = self.cal.force_zero_V
        self._clamp_side = 0
        try:
            if start is not None:
                start()
            self._run_closed_loop()
            self._run_ramp()
        except LinkClosed as e:
            self._disconnected(str(e))
        self.result.bad_bytes = self.link.bad_bytes()
        self.result.lost_samples = self.link.lost
        return self.result

    def _run_closed_loop(self) -> None:
        r, cfg, link = self.result, self.safety, self.link
        deadline = self.transport.now_s() + self.trial.start_timeout_s
        self.t0 = None
        self.prev_L = self.L0
        self.instability = InstabilityDetector(cfg, self.period_s)
        while r.ticks < self.trial.n_ticks:
            got = link.next_sample(deadline, cfg.max_bad_bytes)
            if got is CORRUPT:
                return self._trip("bad_bytes", f"link: {link.bad_bytes()} corrupt or unframed "
                                  f"bytes received (max_bad_bytes = {cfg.max_bad_bytes})")
            if got is None:
                what = "first sample" if self.t0 is None else "sample"
                wait = self.trial.start_timeout_s if self.t0 is None else cfg.watchdog_s
                return self._trip("watchdog", f"watchdog: no valid {what} from the device "
                                  f"within {wait * 1e3:.1f} ms")
            sample, t_arrival = got
            if self.t0 is None:
                self.t0 = t_arrival
            deadline = t_arrival + cfg.watchdog_s
            if self._link_fault(sample):
                return
            if not self._closed_loop_tick(sample, t_arrival):
                return

    def _link_fault(self, sample) -> bool:
        link, cfg, r = self.link, self.safety, self.result
        if sample.flags & SAMPLE_LATE:
            r.missed_ticks += 1
        if link.bad_bytes() > cfg.max_bad_bytes:
            self._trip("bad_bytes", f"link: {link.bad_bytes()} corrupt or unframed bytes "
                       f"received (max_bad_bytes = {cfg.max_bad_bytes})", sample)
            return True
        if link.lost > cfg.max_lost_samples or link.reordered:
            self._trip("lost_samples", f"link: {link.lost} sample(s) lost, {link.reordered} "
                       f"out of order (max_lost_samples = {cfg.max_lost_samples})", sample)
            return True
        if sample.flags & SAMPLE_TRIPPED:
            self._trip("device_tripped", "device: its own watchdog tripped (it had no valid "
                       "command in time) and it is ramping the lever back", sample)
            return True
        return False

    def _closed_loop_tick(self, sample, t_arrival: float) -> bool:
        """One closed-loop tick. Returns False when the loop tripped."""
        plant, cal, r = self.plant, self.cal, self.result
        k = r.ticks
        t_sim = k * self.period_s
        force_V = code_to_volts(sample.code)
        tension = cal.force_volts_to_newtons(force_V, self.force_zero_V)
        if abs(tension) > self.safety.max_force_N:
            self._trip("force_range", f"force: measured tension {tension:.3f} N exceeds "
                       f"max_force_N = {self.safety.max_force_N} N", sample)
            return False
        applied = tension if self.trial.muscle_present else 0.0
        plant.set_muscle_tension(applied)
        plant.step()
        fault = plant.fault()
        L = plant.mtu_length_m()
        if fault is None and not math.isfinite(L):
            fault = f"divergence: muscle-tendon length is {L}"
        if fault is not None:
            self._trip("divergence" if "overextension" not in fault else "overextension",
                       fault, sample)
            return False
        unstable = self.instability.update(L - self.prev_L)
        if unstable:
            self._trip("instability", unstable, sample)
            return False
        self.prev_L = L
        V, side = clamp_volts(cal.length_change_to_volts(L - self.L0),
                              cal.length_min_V, cal.length_max_V)
        self._clamp_events(k, side)
        stim = self.trial.stimulation is not None and self.trial.stimulation.gate(t_sim)
        code = command_code(V, cal.length_min_V, cal.length_max_V)
        self.transport.write(self.protocol.encode_command(
            (sample.seq or 0) & 0xFF, code, COMMAND_STIM_GATE if stim else 0))
        t_sent = self.transport.now_s()
        self.command_V = V
        t_real = t_arrival - self.t0
        r.max_abs_tsim_minus_treal_s = max(r.max_abs_tsim_minus_treal_s, abs(t_sim - t_real))
        r.turnaround_s.append(t_sent - t_arrival)
        r.ticks += 1
        self.rec.row((k, self.link.device_tick, t_sim, t_real, t_sent - t_arrival, 0,
                      sample.code, force_V, tension, applied, L, (L - self.L0) / cal.lrest_m, V, code,
                      side, int(stim), sample.flags) + tuple(plant.channels()))
        return True

    def _clamp_events(self, k: int, side: int) -> None:
        prev = self._clamp_side
        if side:
            self.result.clamped_ticks += 1
        if side != prev:
            if side:
                where = "below length_min_V" if side < 0 else "above length_max_V"
                self.rec.event(k, "clamp_start", f"lever command clamped: simulated MTU "
                               f"length maps {where}")
            else:
                self.rec.event(k, "clamp_end", "lever command back inside the ergometer range")
            self._clamp_side = side

    # -- leaving the closed loop ---------------------------------------------------------
    def _trip(self, kind: str, message: str, sample=None) -> None:
        """Enter the safe state at the current tick; answer `sample` with a ramp command."""
        k = self.result.ticks
        self.result.trip = Trip(k, kind, message)
        self.result.ended = "tripped"
        self.result.message = f"tick {k}: {message}"
        self.rec.event(k, "trip", message, trip=kind)
        self._start_ramp()
        # The safe state begins in this very tick: answer the offending sample (or, when the
        # device is silent, send on our own clock) with the first ramp command.
        self._send_ramp_command(sample.seq if sample is not None else self.link.last_seq, sample)

    def _start_ramp(self) -> None:
        self.ramp = ResetRamp(self.command_V, self.cal.length_offset_V, self.cal.metres_per_volt,
                              self.period_s, self.safety)
        self.rec.event(self.result.ticks, "ramp_start",
                       f"reset ramp to the start length over {self.ramp.n_ticks} ticks")

    def _send_ramp_command(self, seq, sample=None) -> None:
        V = self.ramp.next_volts()
        code = command_code(V, self.cal.length_min_V, self.cal.length_max_V)
        flags = COMMAND_SAFE | (COMMAND_END if self.ramp.finished else 0)
        self.transport.write(self.protocol.encode_command((seq or 0) & 0xFF, code, flags))
        self.command_V = V
        r = self.result
        t = self.transport.now_s() - (self.t0 if self.t0 is not None else 0.0)
        self.rec.row((r.ticks + r.ramp_ticks, self.link.device_tick, math.nan, t, math.nan, 1,
                      sample.code if sample else -1, math.nan, math.nan, math.nan, math.nan, math.nan,
                      V, code, 0, 0, sample.flags if sample else -1)
                     + (math.nan,) * len(self.plant.channel_names))
        r.ramp_ticks += 1

    def _run_ramp(self) -> None:
        if self.result.trip is None:
            self._start_ramp()
        link = self.link
        while not self.ramp.finished:
            got = link.next_sample(self.transport.now_s() + 1.5 * self.period_s)
            if got is None:                       # device silent: keep ramping on our clock
                self._send_ramp_command(link.last_seq)
            else:
                self._send_ramp_command(got[0].seq, got[0])
        self.rec.event(self.result.ticks, "done", "lever at the start length; END sent")

    def _disconnected(self, why: str) -> None:
        r = self.result
        k = r.ticks
        r.ended = "disconnected"
        closed = (f"link closed ({why}); the host can no longer command the lever: the "
                  "device's own watchdog returns it to the start length")
        if r.trip is None:
            r.trip = Trip(k, "disconnect", f"link closed: {why}")
            r.message = f"tick {k}: {closed}"
        else:                   # closed during the reset ramp: keep the reason of the trip
            r.message = f"{r.message}; then, {r.ramp_ticks} tick(s) into the reset ramp, {closed}"
        self.rec.event(k, "disconnect", r.message)
