"""The emulated device: Arduino Due + FPGA + Aurora 305C-LR lever + frog plantaris muscle.

One `tick()` is one period of the microcontroller's timer interrupt (1 ms). In order:

1. Commands received since the last tick (`receive`) are examined: missed-tick accounting
   (SAMPLE_LATE), loop-back checks, the host's SAFE / END flags, the stimulator gate, the
   device watchdog. The newest valid command sets the lever target (its DAC output), unless
   the device is tripped, ended, or the command is a loop-back echo.
2. The force ADC is sampled: the state at the tick's start t_k = k * period. This is the
   order of the authors' firmware (read A0 and send, then drain commands and write the DAC):
   a command applied at tick k can only show in samples k+1 and later. (A DAC change at t_k
   cannot change the force at the same instant, so "apply then sample" is the same thing.)
3. The physics runs over [t_k, t_k+1] in `n_substeps` FPGA steps (10 kHz): stimulation
   pulses, active state and activation, FPGA length filter, lever servo, muscle force, FPGA
   force filter.
4. One sample is encoded and returned, always (also when tripped or ended).

Safety rules of the device (docs/invitro/emulator.md §6):
* Watchdog: when `watchdog_ticks` ticks pass without a valid command, the device trips:
  SAMPLE_TRIPPED set, ARMED cleared, stimulator off, and the lever target follows a cosine
  ramp from its current value to the start length lasting max(ramp_s, pi/2 |dL| / v_ramp).
  Host commands are ignored (not applied to the lever) while tripped. The device re-arms on
  the first valid command without SAFE or END; the stimulator then needs a fresh rising
  edge of the gate.
* SAFE (host in its reset ramp): stimulator off while the newest command carries SAFE; the
  lever still follows the host's commands (the host ramps it).
* END: latched. Stimulator off, the device ramps the lever to the start length itself and
  ignores later commands; `finished` becomes True when that ramp has elapsed.

Determinism: everything depends only on the inputs and `seed` (noise from a
`numpy.random.default_rng(seed)`, drawn in blocks).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.emulator.activation import Activation
from myotwin.invitro.emulator.filters import butterworth2_lowpass
from myotwin.invitro.emulator.lever import Lever
from myotwin.invitro.emulator.muscle import Muscle
from myotwin.invitro.emulator.params import EXP_ARGUMENT_MAX, EmulatorParams
from myotwin.invitro.stimulation import StimulationSchedule
from myotwin.invitro.wire import (
    COMMAND_END,
    COMMAND_LOOPBACK,
    COMMAND_SAFE,
    COMMAND_STIM_GATE,
    SAMPLE_ARMED,
    SAMPLE_LATE,
    SAMPLE_STIM,
    SAMPLE_TRIPPED,
    SEQ_MODULUS,
    SeqUnwrapper,
    code_to_volts,
    get_protocol,
    volts_to_code,
)

LOG_COLUMNS = ("tick", "t_s", "length_m", "target_m", "force_true_N", "force_code", "activation",
               "stim", "command_code", "late", "tripped")
"""Columns of one log row. `t_s`, `length_m`, `force_true_N`, `activation` are the state at
the sample instant t_k; `target_m` and `command_code` (-1: none applied) are what the DAC was
set to at t_k; `stim` says the stimulator was on during the tick."""

_NOISE_BLOCK = 1024
_F_SAMPLE_ARMED = int(SAMPLE_ARMED)
_F_SAMPLE_STIM = int(SAMPLE_STIM)
_F_SAMPLE_LATE = int(SAMPLE_LATE)
_F_SAMPLE_TRIPPED = int(SAMPLE_TRIPPED)
_F_GATE = int(COMMAND_STIM_GATE)
_F_SAFE = int(COMMAND_SAFE)
_F_END = int(COMMAND_END)
_F_LOOPBACK = int(COMMAND_LOOPBACK)


@dataclass
class DeviceCounters:
    """Cumulative event counts of one device run."""

    missed_ticks: int = 0
    """Ticks (after the first) that began without a new command answering the previous sample."""
    commands: int = 0
    """Valid commands decoded."""
    bad_bytes: int = 0
    """Bytes the command decoder discarded while resynchronising."""
    bad_frames: int = 0
    """Candidate frames rejected (CRC failure, malformed)."""
    clamped_commands: int = 0
    """Commands whose voltage was outside the ergometer's accepted range (clamped)."""
    trips: int = 0
    """Watchdog trips."""
    loopback_checked: int = 0
    """Loop-back echoes compared with the code sent."""
    loopback_mismatches: int = 0
    """Echoes whose code differs from the code sent in the sample they answer."""
    loopback_lost: int = 0
    """Framed: samples never echoed (seq gaps). Legacy: ticks without an echo."""
    loopback_unknown: int = 0
    """Echoes answering a sample that was never sent (counted as mismatches too)."""
    loopback_max_error_lsb: int = 0
    """Largest |echoed code - sent code| over the checked echoes (12-bit LSB)."""


@dataclass(frozen=True)
class DeviceLog:
    """Per-tick log as arrays (see LOG_COLUMNS)."""

    tick: np.ndarray
    t_s: np.ndarray
    length_m: np.ndarray
    target_m: np.ndarray
    force_true_N: np.ndarray
    force_code: np.ndarray
    activation: np.ndarray
    stim: np.ndarray
    command_code: np.ndarray
    late: np.ndarray
    tripped: np.ndarray

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> "DeviceLog":
        dtypes = (np.int64, float, float, float, float, np.int64, float, bool, np.int64, bool, bool)
        if not rows:
            return cls(*(np.zeros(0, dtype=d) for d in dtypes))
        cols = list(zip(*rows))
        return cls(*(np.asarray(c, dtype=d) for c, d in zip(cols, dtypes)))


@dataclass
class _Ramp:
    """Cosine ramp of the lever target between two lengths, in ticks."""

    start_tick: int
    r0: float
    r1: float
    n_ticks: int

    def value(self, k: int) -> float:
        s = (k - self.start_tick) / self.n_ticks if self.n_ticks > 0 else 1.0
        if s >= 1.0:
            return self.r1
        return self.r1 + (self.r0 - self.r1) * 0.5 * (1.0 + math.cos(math.pi * s))

    def done(self, k: int) -> bool:
        return k - self.start_tick >= self.n_ticks


def _check_passive_reach(calibration: Calibration, params: EmulatorParams) -> None:
    """The passive force must stay finite up to the lever's longest reach (the fibre is never
    longer than the MTU): math.exp raised OverflowError in the tick loop otherwise."""
    m = params.muscle
    reach_rel = (calibration.lrest_m + params.lever.travel_max_m) / m.L0_m
    arg = m.passive_shape * (reach_rel - m.passive_slack_rel)
    if not arg <= EXP_ARGUMENT_MAX:
        raise ValueError(f"EmulatedDevice: field 'muscle.passive_shape' = {m.passive_shape!r}: "
                         f"at the lever's longest reach (calibration.lrest_m + "
                         f"lever.travel_max_m = {reach_rel:.6g} L0) the passive curve's "
                         f"exponent would be {arg:.6g}; expected <= {EXP_ARGUMENT_MAX:g}")


class EmulatedDevice:
    """Microcontroller + ergometer + muscle, one 12-bit packet each way per tick."""

    def __init__(self, protocol: str = "framed", calibration: Calibration = Calibration(),
                 params: EmulatorParams = EmulatorParams(),
                 stimulation: StimulationSchedule | None = None, seed: int = 0,
                 period_s: float = 1e-3, *, loopback_mode: bool = False, record: bool = True) -> None:
        for name, value, cls in (("calibration", calibration, Calibration),
                                 ("params", params, EmulatorParams)):
            if not isinstance(value, cls):
                raise TypeError(f"EmulatedDevice: {name} is a {type(value).__name__}, "
                                f"expected {cls.__name__}")
        _check_passive_reach(calibration, params)
        if not (isinstance(period_s, (int, float)) and math.isfinite(period_s) and period_s > 0):
            raise ValueError(f"EmulatedDevice: period_s = {period_s!r}: expected a finite number > 0")
        n_sub = params.device.fpga_rate_hz * period_s
        if abs(n_sub - round(n_sub)) > 1e-9 * n_sub or round(n_sub) < 1:
            raise ValueError(f"EmulatedDevice: period_s = {period_s} s is not a whole number of FPGA "
                             f"steps at {params.device.fpga_rate_hz} Hz")
        self.protocol = get_protocol(protocol)
        self.calibration = calibration
        self.params = params
        self.stimulation = stimulation
        self.period_s = float(period_s)
        self.n_substeps = int(round(n_sub))
        self.substep_s = self.period_s / self.n_substeps
        self.loopback_mode = bool(loopback_mode)
        self.record = bool(record)
        self._framed = bool(self.protocol.carries_flags)
        self._decoder = self.protocol.command_decoder()

        h = self.substep_s
        self.start_length_m = calibration.lrest_m
        self.muscle = Muscle.build(params.muscle)
        self.activation_model = Activation.build(params.activation, h)
        self.lever = Lever.build(params.lever, self.start_length_m, h)
        self.length_filter = butterworth2_lowpass(params.lever.length_filter_hz, params.device.fpga_rate_hz)
        self.force_filter = butterworth2_lowpass(params.sensor.filter_hz, params.device.fpga_rate_hz)
        self._see = params.muscle.see_enabled

        # --- physical state at t = 0: everything at rest at the start length --------------
        L = self.start_length_m
        self.x = L                      # lever position = MTU length (m)
        self.v = 0.0                    # lever velocity (m/s)
        self.target = L                 # lever target (DAC output as a length, m)
        self.a = 0.0                    # activation
        self.c = 0.0                    # active-state variable
        if self._see:
            self.lf = self.muscle.see_static_fibre_length(L, 0.0)
            self.force_N = self.muscle.see_force(L - self.lf)
        else:
            self.lf = L
            self.force_N = self.muscle.force(L, 0.0, 0.0)
        self._ls = self.length_filter.steady_state(L)
        self._fs = self.force_filter.steady_state(self.force_N * calibration.volts_per_newton)
        self.force_filtered_V = self.force_N * calibration.volts_per_newton

        # --- microcontroller state -----------------------------------------------------------
        self.counters = DeviceCounters()
        self.tick_count = 0
        self._pending: list = []
        self._last_cmd_tick = 0
        self.tripped = False
        self.ended = False
        self.end_reason = ""
        self.safe = False
        self._ramp: _Ramp | None = None
        self._gate = False              # host gate (framed) as last received
        self._stim_was_on = False
        self._need_edge = False         # after a disable, wait for the gate to fall first
        self._pulse_next = -1           # global sub-step index of the next pulse, -1 = none
        self._pulse_i = 0
        self._pulse_origin = 0
        stim_f = (stimulation or StimulationSchedule()).frequency_hz
        self._substeps_per_pulse = (1.0 / (stim_f * h)) if stim_f > 0 else math.inf
        self._legacy_pulses: list[int] = []
        self._legacy_ptr = 0
        if not self._framed and stimulation is not None:
            self._legacy_pulses = sorted(int(round(t / h)) for t in stimulation.pulse_times_s())
        self._sent_codes = [-1] * SEQ_MODULUS
        self._sent_history: list[int] = []      # legacy loop-back: codes by tick
        self._loop_seq = SeqUnwrapper()
        self.pulses_fired: list[int] = []       # global sub-step indices of stimulus pulses
        self._rows: list[tuple] = []
        self._rng = np.random.default_rng(seed)
        self._noise = self._rng.standard_normal(_NOISE_BLOCK).tolist()
        self._noise_i = 0

    # --- host interface ------------------------------------------------------------------------
    def receive(self, data: bytes) -> None:
        """Feed bytes from the host; complete commands are kept for the next tick."""
        if not data:
            return
        cmds = self._decoder.feed(data)
        if cmds:
            self._pending.extend(cmds)
            self.counters.commands += len(cmds)
        self.counters.bad_bytes = self._decoder.bytes_discarded
        self.counters.bad_frames = self._decoder.bad_frames

    @property
    def time_s(self) -> float:
        """Time of the next sample, t_k = k * period."""
        return self.tick_count * self.period_s

    @property
    def armed(self) -> bool:
        return not (self.tripped or self.ended)

    @property
    def finished(self) -> bool:
        """END received and the last tick applied the final value of the return ramp."""
        return self.ended and self._ramp is not None and self._ramp.done(self.tick_count - 1)

    @property
    def log(self) -> DeviceLog:
        return DeviceLog.from_rows(self._rows)

    @property
    def log_rows(self) -> list[tuple]:
        """The raw log rows (tuples in LOG_COLUMNS order); do not modify."""
        return self._rows

    def command_to_length(self, code: int) -> tuple[float, bool]:
        """Lever target (m) for a command code, and whether the voltage had to be clamped."""
        cal = self.calibration
        volts = code_to_volts(code)
        clamped = False
        if volts < cal.length_min_V:
            volts, clamped = cal.length_min_V, True
        elif volts > cal.length_max_V:
            volts, clamped = cal.length_max_V, True
        return self.start_length_m + cal.volts_to_length_change(volts), clamped

    def host_gone(self) -> None:
        """The host disappeared (EOF/EIO): end as on COMMAND_END (stimulator off, return ramp)."""
        if not self.ended:
            self._end(self.tick_count, "host_gone")

    def _end(self, k: int, reason: str) -> None:
        self.ended = True
        self.end_reason = reason
        self._start_ramp(k)

    def stats(self) -> dict:
        """JSON-ready summary: counters and final state."""
        d = asdict(self.counters)
        d.update(ticks=self.tick_count, tripped=self.tripped, ended=self.ended,
                 finished=self.finished, end_reason=self.end_reason, pulses=len(self.pulses_fired),
                 protocol=self.protocol.name, period_s=self.period_s, loopback_mode=self.loopback_mode)
        return d

    def _start_ramp(self, k: int) -> None:
        dp = self.params.device
        dist = abs(self.start_length_m - self.target)
        dur_s = max(dp.ramp_s, 0.5 * math.pi * dist / dp.ramp_max_speed_m_per_s)
        self._ramp = _Ramp(k, self.target, self.start_length_m, int(math.ceil(dur_s / self.period_s)))

    def _check_loopback(self, k: int, cmds: list) -> None:
        cnt = self.counters
        if self._framed:
            for cmd in cmds:
                if not (self.loopback_mode or cmd.flags & _F_LOOPBACK):
                    continue
                cnt.loopback_checked += 1
                sent = self._sent_codes[cmd.seq]
                if sent < 0:
                    cnt.loopback_unknown += 1
                    cnt.loopback_mismatches += 1
                elif sent != cmd.code:
                    cnt.loopback_mismatches += 1
                    cnt.loopback_max_error_lsb = max(cnt.loopback_max_error_lsb,
                                                     abs(sent - cmd.code))
                cnt.loopback_lost += self._loop_seq.update(cmd.seq).lost
        else:
            if k == 0:                    # the host's trigger command, not an echo
                return
            n = len(cmds)
            if n == 0 and k > 0:
                cnt.loopback_lost += 1
            for i, cmd in enumerate(cmds):
                j = k - n + i  # commands at tick k answer samples k-n .. k-1, in order
                cnt.loopback_checked += 1
                if j < 0:
                    cnt.loopback_unknown += 1
                    cnt.loopback_mismatches += 1
                elif self._sent_history[j] != cmd.code:
                    cnt.loopback_mismatches += 1
                    cnt.loopback_max_error_lsb = max(cnt.loopback_max_error_lsb,
                                                     abs(self._sent_history[j] - cmd.code))

    # --- one period ------------------------------------------------------------------------------
    def tick(self) -> bytes:
        """Advance one period and return the encoded force sample (see the module doc)."""
        k = self.tick_count
        cmds = self._pending
        self._pending = []
        cnt = self.counters
        framed = self._framed

        # 1. commands -----------------------------------------------------------------------
        late = False
        if k > 0 and not self.ended:      # after END the host no longer answers: not a miss
            prev = (k - 1) % SEQ_MODULUS
            answered = any(c.seq == prev for c in cmds) if framed else bool(cmds)
            if not answered:
                late = True
                cnt.missed_ticks += 1
        if self.loopback_mode or (framed and cmds):
            self._check_loopback(k, cmds)
        command_code = -1
        if cmds:
            self._last_cmd_tick = k
            newest = cmds[-1]
            flags = newest.flags
            if not self.ended and any(c.flags & _F_END for c in cmds):
                self._end(k, "end_command")
            self.safe = bool(flags & _F_SAFE)
            if self.tripped and not self.ended and not (flags & (_F_SAFE | _F_END)):
                self.tripped = False  # re-armed by a valid command outside the safe state
                self._ramp = None
            self._gate = bool(flags & _F_GATE)
            loop = self.loopback_mode or bool(flags & _F_LOOPBACK)
            if not (self.tripped or self.ended or loop):
                self.target, clamped = self.command_to_length(newest.code)
                cnt.clamped_commands += clamped
                command_code = newest.code
        if not (self.tripped or self.ended) and k - self._last_cmd_tick >= self.params.device.watchdog_ticks:
            self.tripped = True
            cnt.trips += 1
            self._start_ramp(k)
        if (self.tripped or self.ended) and self._ramp is not None:
            self.target = self._ramp.value(k)

        # stimulator ----------------------------------------------------------------------------
        n_sub = self.n_substeps
        base = k * n_sub
        enabled = not (self.tripped or self.ended or self.safe)
        if not enabled:
            self._need_edge = True  # after any disable, a new train needs the gate to fall first
        if framed:
            gate = self._gate
            if enabled and not gate:
                self._need_edge = False
            stim_on = enabled and gate and not self._need_edge
            if stim_on and not self._stim_was_on:  # rising edge: the train starts now
                self._pulse_origin, self._pulse_i, self._pulse_next = base, 0, base
            if not stim_on:
                self._pulse_next = -1
        else:
            sched = self.stimulation
            pulses, p = self._legacy_pulses, self._legacy_ptr
            while p < len(pulses) and pulses[p] < base:
                p += 1  # pulses of past ticks (skipped while disabled)
            self._legacy_ptr = p
            in_tick = p < len(pulses) and pulses[p] < base + n_sub
            gate = sched is not None and (sched.gate(k * self.period_s) or in_tick)
            if enabled and not gate:
                self._need_edge = False
            stim_on = enabled and gate and not self._need_edge
            self._pulse_next = pulses[p] if (stim_on and p < len(pulses)) else -1
        self._stim_was_on = stim_on

        # 2. sample the force ADC at t_k ---------------------------------------------------------
        cal = self.calibration
        if self._noise_i >= _NOISE_BLOCK:
            self._noise = self._rng.standard_normal(_NOISE_BLOCK).tolist()
            self._noise_i = 0
        noise = self._noise[self._noise_i] * self.params.sensor.noise_V
        self._noise_i += 1
        code = volts_to_code(cal.force_zero_V + cal.force_attenuation * self.force_filtered_V + noise)
        flags_out = 0
        if not (self.tripped or self.ended):
            flags_out |= _F_SAMPLE_ARMED
        if stim_on:
            flags_out |= _F_SAMPLE_STIM
        if late:
            flags_out |= _F_SAMPLE_LATE
        if self.tripped:
            flags_out |= _F_SAMPLE_TRIPPED
        self._sent_codes[k % SEQ_MODULUS] = code
        if self.loopback_mode and not framed:
            self._sent_history.append(code)
        if self.record:
            self._rows.append((k, k * self.period_s, self.x, self.target, self.force_N, code, self.a,
                               stim_on, command_code, late, self.tripped))
        out = self.protocol.encode_sample(k % SEQ_MODULUS, code, flags_out)

        # 3. physics over [t_k, t_k+1] ----------------------------------------------------------------
        self._advance(base, n_sub)
        self.tick_count = k + 1
        return out

    def _advance(self, base: int, n_sub: int) -> None:
        """Run the FPGA sub-steps of one tick (hot loop: plain float arithmetic)."""
        act = self.activation_model
        lev = self.lever
        mus = self.muscle
        lf_, ff = self.length_filter, self.force_filter
        lb0, lb1, lb2, la1, la2 = lf_.b0, lf_.b1, lf_.b2, lf_.a1, lf_.a2
        fb0, fb1, fb2, fa1, fa2 = ff.b0, ff.b1, ff.b2, ff.a1, ff.a2
        (p00, p01), (p10, p11) = lev.phi
        g0, g1 = lev.gamma
        vmax, dmax, xmin, xmax = lev.max_speed_m_per_s, lev.max_speed_m_per_s * lev.step_s, lev.x_min_m, lev.x_max_m
        beta, kps, e_full, e_zero, c_decay = act.beta, act.k_per_step, act.e_full, act.e_zero, act.c_decay
        F0, inv_L0, inv_vmax, iw = mus.params.F0_N, mus.inv_L0, mus.inv_vmax, mus.fl_inv_width
        hk, emax, ec = mus.hill_k, mus.ecc_max, mus.ecc_c
        ps, pk, pscale = mus.p_slack, mus.p_shape, mus.p_scale
        vpn = self.calibration.volts_per_newton
        see = self._see
        h = self.substep_s
        exp = math.exp

        x, v, r, a, c, lf = self.x, self.v, self.target, self.a, self.c, self.lf
        s1, s2 = self._ls
        q1, q2 = self._fs
        F = self.force_N
        yF = self.force_filtered_V
        nxt = self._pulse_next
        for j in range(n_sub):
            n = base + j
            if n == nxt:
                c = act.c_peak
                self.pulses_fired.append(n)
                nxt = self._next_pulse(n)
            # activation (exact for u held over the sub-step), then active-state decay
            if c >= 1.0:
                a = 1.0 + (a - 1.0) * e_full
            elif c > 0.0:
                g = beta + (1.0 - beta) * c
                ainf = c / g
                a = ainf + (a - ainf) * exp(-g * kps)
            else:
                a *= e_zero
            c *= c_decay
            if c < 1e-12:
                c = 0.0
            # FPGA length filter (transposed DF-II)
            y = lb0 * r + s1
            s1 = lb1 * r - la1 * y + s2
            s2 = lb2 * r - la2 * y
            # lever servo, exact ZOH step, then speed limit and stops
            xn = p00 * x + p01 * v + g0 * y
            vn = p10 * x + p11 * v + g1 * y
            if vn > vmax:
                vn = vmax
            elif vn < -vmax:
                vn = -vmax
            if xn - x > dmax:
                xn = x + dmax
            elif x - xn > dmax:
                xn = x - dmax
            if xn > xmax:
                xn, vn = xmax, 0.0
            elif xn < xmin:
                xn, vn = xmin, 0.0
            x, v = xn, vn
            # muscle force
            if see:
                lf, F = mus.see_step(lf, x, a, h)
            else:
                l_rel = x * inv_L0
                z = (l_rel - 1.0) * iw
                vr = v * inv_vmax
                if vr <= 0.0:
                    fv = 0.0 if vr <= -1.0 else (1.0 + vr) / (1.0 - vr / hk)
                else:
                    fv = (emax * vr + ec) / (vr + ec)
                fp = pscale * (exp(pk * (l_rel - ps)) - 1.0) if l_rel > ps else 0.0
                F = F0 * (a * exp(-z * z) * fv + fp)
                lf = x
            # FPGA force filter on the ergometer's force output (V)
            u = F * vpn
            yF = fb0 * u + q1
            q1 = fb1 * u - fa1 * yF + q2
            q2 = fb2 * u - fa2 * yF
        self.x, self.v, self.a, self.c, self.lf = x, v, a, c, lf
        self._ls = (s1, s2)
        self._fs = (q1, q2)
        self.force_N = F
        self.force_filtered_V = yF
        self._pulse_next = nxt

    def _next_pulse(self, n: int) -> int:
        """Sub-step index of the pulse after the one at `n` (-1 if none)."""
        if self._framed:
            self._pulse_i += 1
            return self._pulse_origin + int(round(self._pulse_i * self._substeps_per_pulse))
        self._legacy_ptr += 1
        p = self._legacy_ptr
        return self._legacy_pulses[p] if p < len(self._legacy_pulses) else -1
