"""The emulated device over in-memory byte queues, framed and legacy protocols."""

import math

import numpy as np
import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.emulator import (ActivationParams, DeviceParams, EmulatedDevice,
                                      EmulatorParams, ForceSensorParams, LeverParams,
                                      MuscleParams)
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
    VOLTS_PER_CODE,
    code_to_volts,
    volts_to_code,
)
from shared_reference import SHARED

CAL = Calibration()
REST = volts_to_code(CAL.length_offset_V)  # 2218 -> 1.78028 V (start length + 1.6 um)
NO_NOISE = EmulatorParams(sensor=ForceSensorParams(noise_V=0.0))


class Host:
    """A host on the other side of two in-memory byte queues: decodes each sample and
    (optionally) answers it with one command."""

    def __init__(self, dev: EmulatedDevice):
        self.dev = dev
        self.proto = dev.protocol
        self.dec = self.proto.sample_decoder()
        self.samples = []
        self.raw = bytearray()

    def tick(self, code=None, flags=0, extra=b""):
        out = self.dev.tick()
        self.raw += out
        got = self.dec.feed(out)
        assert len(got) == 1, "one sample per tick"
        s = got[0]
        self.samples.append(s)
        if code is not None:
            self.dev.receive(extra + self.proto.encode_command(s.seq or 0, code, flags))
        return s

    def flags(self):
        return np.array([s.flags for s in self.samples])

    def codes(self):
        return np.array([s.code for s in self.samples])


# --- converters --------------------------------------------------------------------------------

def test_adc_and_force_quantum_match_the_authors_rig():
    # notes §3.3/3.4: code step 3.38 V / 4096 = 0.825 mV; force quantum 2 x 3.38 / 4096 N
    # = 1.650 mN with the 0.5 attenuation and 1 V/N.
    assert VOLTS_PER_CODE == pytest.approx(0.825e-3, rel=3e-4)
    quantum_N = VOLTS_PER_CODE / CAL.adc_volts_per_newton
    assert quantum_N == pytest.approx(2 * 3.38 / 4096, rel=1e-15)
    # noise-free device at rest: the sample is the nearest code to zero + 0.5 F_rest, so the
    # host's force reading is within half a quantum of the true passive force
    dev = EmulatedDevice(params=NO_NOISE)
    host = Host(dev)
    s = host.tick()
    F_read = CAL.force_volts_to_newtons(code_to_volts(s.code))
    assert abs(F_read - dev.log.force_true_N[0]) <= 0.5 * quantum_N + 1e-15
    assert 0.020 < F_read < 0.024, "passive rest force at 1.066 L0 (documented 21.8 mN)"


def test_force_quantum_in_the_authors_recording():
    # The force column of the authors' saved run is quantised in steps of 2 x 3.38/4096 N.
    ref = SHARED / "reference" / "invitro-vr" / "savedData.txt"
    if not ref.exists():
        pytest.skip("reference recording not available")
    f = np.loadtxt(ref)[:, 3]
    q = VOLTS_PER_CODE / CAL.adc_volts_per_newton
    n = f / q
    # Printed with 6 decimals (<= 5e-7 N) after float32 arithmetic on volts ~1-2 V (ulp 1.2e-7 V,
    # twice, /0.5 -> <= 4.8e-7 N): residue <= 1e-6 N = 6e-4 quanta. A different ADC window
    # (e.g. 2.2 V / 4096 -> 1.07 mN) would leave residues up to 0.5.
    assert np.max(np.abs(n - np.round(n))) < 6e-4


def test_command_code_sets_lever_length():
    # notes §3.4 with the seed's offset 2.0 V: 6.875 V per unit strain of lrest = 25.66 mm, so
    # a command 1 V lower shortens by 25.66 mm / 6.875 = 3.7324 mm. The lever settles there.
    cal = Calibration(length_offset_V=2.0, volts_per_strain=2.2 / 0.32)
    dev = EmulatedDevice(calibration=cal, params=NO_NOISE)
    host = Host(dev)
    c1 = volts_to_code(1.0)
    for _ in range(150):
        host.tick(c1)
    expected = 0.02566 + (code_to_volts(c1) - 2.0) * 0.02566 / 6.875
    assert dev.log.target_m[-1] == pytest.approx(expected, abs=1e-15)
    assert dev.log.length_m[-1] == pytest.approx(expected, abs=1e-9), "lever settled at the target"
    assert 0.02566 - expected == pytest.approx(3.7324e-3, abs=3.2e-6)  # within one code (3.1 um)


def test_out_of_range_command_is_clamped():
    dev = EmulatedDevice(params=NO_NOISE)
    host = Host(dev)
    host.tick(4095)  # 3.33 V > 2.2 V accepted by the ergometer
    host.tick(4095)
    assert dev.counters.clamped_commands == 1
    assert dev.log.target_m[1] == pytest.approx(CAL.lrest_m + CAL.volts_to_length_change(2.2), abs=1e-15)


# --- stimulation ---------------------------------------------------------------------------------

def test_framed_gate_and_legacy_schedule_give_identical_contractions():
    # Gate on for ticks 20..99 (framed) == schedule onset 20 ms, 80 ms (legacy): the same 20
    # pulses at the same sub-steps, hence bit-identical physics and, with the same seed,
    # identical force codes.
    sched = StimulationSchedule(onset_s=0.020, duration_s=0.080)
    fr = EmulatedDevice("framed", seed=3)
    lg = EmulatedDevice("legacy", stimulation=sched, seed=3)
    hf, hl = Host(fr), Host(lg)
    for k in range(200):
        gate = COMMAND_STIM_GATE if 20 <= k + 1 < 100 else 0
        hf.tick(REST, gate)
        hl.tick(REST)
    assert fr.pulses_fired == lg.pulses_fired == [round(t / fr.substep_s) for t in sched.pulse_times_s()]
    np.testing.assert_array_equal(fr.log.force_true_N, lg.log.force_true_N)
    np.testing.assert_array_equal(hf.codes(), hl.codes())
    # the force rises: the tetanus at 1.066 L0 reaches F0 f_L(1.066) + passive ~ 1.49 N
    F = fr.log.force_true_N
    assert F[:20].max() < 0.03 and F[99] > 1.4
    stim = (hf.flags() & SAMPLE_STIM) != 0
    np.testing.assert_array_equal(np.nonzero(stim)[0], np.arange(20, 100))
    assert np.all(hl.flags() == 0), "legacy samples carry no flags"
    np.testing.assert_array_equal(lg.log.stim, fr.log.stim)


def test_safe_stops_stimulation_immediately():
    dev = EmulatedDevice(params=NO_NOISE)
    host = Host(dev)
    for k in range(60):
        flags = COMMAND_STIM_GATE | (COMMAND_SAFE if k + 1 >= 30 else 0)
        host.tick(REST, flags if k + 1 >= 10 else 0)
    stim = (host.flags() & SAMPLE_STIM) != 0
    np.testing.assert_array_equal(np.nonzero(stim)[0], np.arange(10, 30))
    assert max(dev.pulses_fired) < 30 * dev.n_substeps, "no pulse after SAFE"
    # the last pulse (t = 28 ms) keeps the active state saturated for 4 ms, and activation
    # peaks when the decaying active state meets it (a few ms later); then it only decays
    a = dev.log.activation
    assert np.all(np.diff(a[40:]) < 0), "activation decays once the stimulator is off"
    assert host.flags()[40] & SAMPLE_ARMED, "SAFE alone does not disarm the lever"


# --- watchdog -------------------------------------------------------------------------------------

def test_watchdog_trips_ramps_back_and_rearms():
    p = EmulatorParams(sensor=ForceSensorParams(noise_V=0.0), device=DeviceParams(watchdog_ticks=20))
    dev = EmulatedDevice(params=p)
    host = Host(dev)
    short = volts_to_code(CAL.length_offset_V - 0.8)  # 0.8 V = 2.99 mm shorter
    for k in range(50):  # commands answer samples 0..49, applied at ticks 1..50
        host.tick(short, COMMAND_STIM_GATE if k >= 30 else 0)
    for _ in range(400):  # host silent
        host.tick()
    log, flags = dev.log, host.flags()
    trip = 50 + 20  # last command applied at tick 50; 20 silent ticks later
    tripped = (flags & SAMPLE_TRIPPED) != 0
    assert not tripped[:trip].any() and tripped[trip:].all(), "trip tick"
    assert not (flags[trip:] & SAMPLE_ARMED).any() and (flags[:trip] & SAMPLE_ARMED).all()
    assert dev.counters.trips == 1 and dev.counters.missed_ticks == 450 - 51
    # stimulation (gate still on in the last command) stops at the trip
    assert not (flags[trip:] & SAMPLE_STIM).any() and (flags[31:trip] & SAMPLE_STIM).all()
    assert max(dev.pulses_fired) < trip * dev.n_substeps
    # ramp: cosine over max(0.2 s, pi/2 * 2.99 mm / 0.05 m/s = 0.094 s) = 200 ticks
    start = CAL.lrest_m
    x = log.length_m
    speed = np.abs(np.diff(x)) / dev.period_s
    assert speed.max() <= 0.4, "lever above its speed limit"
    dx = start - log.target_m[trip]
    peak_ramp = math.pi / 2 * dx / 0.2
    assert speed[trip:].max() <= 1.05 * peak_ramp, "ramp faster than its cosine profile"
    assert abs(x[trip + 200 + 40] - start) < 1e-6, "back at the start length"
    assert np.all(np.diff(log.target_m[trip:trip + 201]) >= 0), "monotonic ramp"
    # SAFE does not re-arm; a command without SAFE does
    host.tick(REST, COMMAND_SAFE)
    host.tick(REST, 0)
    host.tick(REST, 0)
    f = host.flags()
    assert f[-2] & SAMPLE_TRIPPED and not f[-1] & SAMPLE_TRIPPED and f[-1] & SAMPLE_ARMED
    assert dev.log.command_code[-1] == REST


def test_end_ramps_to_start_and_finishes():
    dev = EmulatedDevice(params=NO_NOISE)
    host = Host(dev)
    short = volts_to_code(CAL.length_offset_V - 0.5)
    for _ in range(30):
        host.tick(short)
    host.tick(short, COMMAND_END)  # applied at tick 31
    n_ramp = 200
    for _ in range(n_ramp + 50):
        host.tick(volts_to_code(0.0))  # ignored after END
        if dev.finished:
            break
    assert dev.ended and dev.finished and dev.end_reason == "end_command"
    assert dev.tick_count == 31 + n_ramp + 1  # the ramp's last value is applied at tick 31 + 200
    assert not (host.flags()[31:] & SAMPLE_ARMED).any()
    assert dev.log.target_m[-1] == pytest.approx(CAL.lrest_m, abs=1e-15)
    assert np.all(dev.log.command_code[31:] == -1)


# --- link accounting ---------------------------------------------------------------------------

def test_missed_ticks_and_late_flag():
    dev = EmulatedDevice()
    host = Host(dev)
    pending = None
    for k in range(60):
        if k in (10, 20, 30):
            host.tick()  # no answer to samples 10, 20, 30
        elif k == 40:
            s = host.tick()
            pending = dev.protocol.encode_command(s.seq, REST, 0)  # answer delivered late
        elif k == 41:
            host.tick(REST)
            dev.receive(pending)  # arrives after the answer to 41 -- both at tick 42
        else:
            host.tick(REST)
    late = (host.flags() & SAMPLE_LATE) != 0
    np.testing.assert_array_equal(np.nonzero(late)[0], [11, 21, 31, 41])
    assert dev.counters.missed_ticks == 4
    assert dev.counters.commands == 57


def test_bad_bytes_are_counted_and_skipped():
    dev = EmulatedDevice()
    host = Host(dev)
    for k in range(20):
        host.tick(REST, 0, extra=b"\x00\x5a\x13" if k % 5 == 0 else b"")
    assert dev.counters.bad_bytes > 0
    assert dev.counters.commands == 20 and dev.counters.missed_ticks == 0


@pytest.mark.parametrize("protocol", ["framed", "legacy"])
def test_seeded_runs_are_bit_identical(protocol):
    def run(seed):
        sched = StimulationSchedule() if protocol == "legacy" else None
        dev = EmulatedDevice(protocol, stimulation=sched, seed=seed)
        host = Host(dev)
        for k in range(300):
            host.tick(REST + (k % 7), COMMAND_STIM_GATE if 20 <= k < 100 else 0)
        return bytes(host.raw), dev.log
    a, la = run(5)
    b, lb = run(5)
    c, _ = run(6)
    assert a == b, "same seed, same inputs: same bytes"
    np.testing.assert_array_equal(la.force_true_N, lb.force_true_N)
    assert a != c, "a different seed changes the noise"


# --- loop-back --------------------------------------------------------------------------------------

def test_framed_loopback_exact_echo_and_corruption():
    dev = EmulatedDevice(seed=1)
    proto = dev.protocol
    dec = proto.sample_decoder()
    corrupt = {50, 51, 200}
    skip = {100, 101, 102}
    for k in range(300):
        s = dec.feed(dev.tick())[0]
        if k in skip:
            continue
        code = s.code ^ 1 if k in corrupt else s.code
        dev.receive(proto.encode_command(s.seq, code, COMMAND_LOOPBACK))
    c = dev.counters
    assert c.loopback_checked == 300 - len(skip) - 1  # the last echo is still in the queue
    assert c.loopback_mismatches == len(corrupt) and c.loopback_unknown == 0
    assert c.loopback_lost == len(skip)
    # 1e-14 m: the filter's steady state carries a ~2e-13 relative rounding (see test_emulator_filters)
    assert np.allclose(dev.log.length_m, CAL.lrest_m, rtol=0, atol=1e-14), "the lever does not move in loop-back"
    assert len(set(dev.log.force_code)) > 3, "noise makes the echoed codes vary"


def test_legacy_loopback_mode():
    for corrupt in (set(), {10, 150}):
        dev = EmulatedDevice("legacy", seed=2, loopback_mode=True)
        host = Host(dev)
        for k in range(200):
            out = dev.tick()
            s = host.dec.feed(out)[0]
            s_code = s.code + 1 if k in corrupt else s.code
            dev.receive(dev.protocol.encode_command(0, s_code, 0))
        dev.tick()
        c = dev.counters
        assert c.loopback_checked == 200
        assert c.loopback_mismatches == len(corrupt)
        assert c.loopback_lost == 0
        assert np.allclose(dev.log.length_m, CAL.lrest_m, rtol=0, atol=1e-14)


def test_rejects_period_not_multiple_of_fpga_step():
    with pytest.raises(ValueError, match="whole number of FPGA"):
        EmulatedDevice(period_s=1.05e-4)


@pytest.mark.parametrize("build, fragment", [
    (lambda: MuscleParams(passive_shape=1e4),
     "MuscleParams: field 'passive_shape' = 10000.0: expected passive_shape * "
     "(passive_ref_length_rel - passive_slack_rel) <= 700, got 2000"),
    (lambda: MuscleParams(see_enabled="no"),
     "MuscleParams: field 'see_enabled' = 'no': expected True or False (a bool)"),
    (lambda: ActivationParams(release_decay_s=1e-300),
     "ActivationParams: field 'release_decay_s' = 1e-300: expected >= release_plateau_s / 700"),
    (lambda: EmulatorParams(lever=LeverParams(length_filter_hz=6000.0)),
     "EmulatorParams: field 'lever.length_filter_hz' = 6000.0: expected below half the FPGA "
     "rate device.fpga_rate_hz = 10000.0 Hz, 5000 Hz"),
    (lambda: EmulatorParams(sensor=ForceSensorParams(filter_hz=5000.0)),
     "EmulatorParams: field 'sensor.filter_hz' = 5000.0: expected below half the FPGA rate"),
    (lambda: EmulatedDevice(params=EmulatorParams(muscle=MuscleParams(passive_shape=2000.0))),
     "EmulatedDevice: field 'muscle.passive_shape' = 2000.0: at the lever's longest reach"),
    # True is an int in Python: StimulationSchedule took it as 1 s (both now use
    # myotwin.scalars.is_finite_number)
    (lambda: StimulationSchedule(onset_s=True),
     "stimulation: field 'onset_s' = True: expected a finite number >= 0"),
    (lambda: MuscleParams(L0_m=True), "MuscleParams: field 'L0_m' = True: expected a finite"),
], ids=["passive_overflow", "see_enabled_str", "release_decay_overflow", "length_filter_nyquist",
        "force_filter_nyquist", "passive_overflow_at_reach", "stimulation_bool",
        "muscle_bool"])
def test_emulator_parameters_that_would_fail_while_building_are_refused(build, fragment):
    """Before: OverflowError (math range error) from muscle.py and activation.py, the filter's
    message naming no field, a passive curve overflowing in the tick loop, 'no' taken as
    true."""
    with pytest.raises(ValueError) as e:
        build()
    assert str(e.value).startswith(fragment), str(e.value)


@pytest.mark.parametrize("kw, fragment", [
    ({"params": MuscleParams()}, "EmulatedDevice: params is a MuscleParams, expected "
                                 "EmulatorParams"),
    ({"calibration": None}, "EmulatedDevice: calibration is a NoneType, expected Calibration"),
])
def test_emulated_device_checks_argument_types(kw, fragment):
    """Before: AttributeError ('MuscleParams' object has no attribute 'device')."""
    with pytest.raises(TypeError) as e:
        EmulatedDevice(**kw)
    assert str(e.value) == fragment


def test_series_elastic_element_tetanus_settles_at_static_equilibrium():
    # With the optional SEE, a long isometric tetanus (MTU held at the start length) must end
    # at the static equilibrium of fibre and SEE (bisection reference in muscle.py, itself
    # checked against scipy's brentq in test_emulator_muscle); 1e-6 relative covers the
    # remaining exp(-t/tau_act) transient after 250 ms.
    from myotwin.invitro.emulator import MuscleParams
    p = EmulatorParams(muscle=MuscleParams(see_enabled=True), sensor=ForceSensorParams(noise_V=0.0))
    cal0 = Calibration(length_offset_V=code_to_volts(REST))  # REST commands exactly zero change
    dev = EmulatedDevice(calibration=cal0, params=p)
    host = Host(dev)
    for k in range(300):
        host.tick(REST, COMMAND_STIM_GATE if k + 1 >= 20 else 0)
    L = cal0.lrest_m
    lf_eq = dev.muscle.see_static_fibre_length(L, 1.0)
    assert dev.lf == pytest.approx(lf_eq, abs=1e-9)
    assert dev.force_N == pytest.approx(dev.muscle.see_force(L - lf_eq), rel=1e-6)
    assert dev.log.force_true_N[0] == 0.0, "fibre at L0 behind a just-slack SEE carries no force"
