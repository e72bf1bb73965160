"""Safety primitives: range clamp, command codes, instability threshold, the reset ramp, and
the validation of the settings they depend on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.config import ExperimentConfig, LinkConfig, TrialConfig
from myotwin.invitro.safety import (InstabilityDetector, ResetRamp, SafetyConfig, clamp_volts,
                                    command_code)
from myotwin.invitro.wire import N_CODES, VOLTS_PER_CODE, code_to_volts, volts_to_code

CAL = Calibration()
DT_S = 1e-3


# --- clamp and command codes ---------------------------------------------------------------
@pytest.mark.parametrize("volts, expected", [
    (1.0, (1.0, 0)), (0.0, (0.0, 0)), (2.2, (2.2, 0)),
    (-1e-9, (0.0, -1)), (-5.0, (0.0, -1)), (2.2 + 1e-9, (2.2, 1)), (1e6, (2.2, 1)),
])
def test_clamp_volts(volts, expected):
    assert clamp_volts(volts, 0.0, 2.2) == expected, f"clamp_volts({volts})"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_clamp_volts_rejects_non_finite_commands(bad):
    with pytest.raises(ValueError, match="not finite"):
        clamp_volts(bad, 0.0, 2.2)


@pytest.mark.parametrize("low_V, high_V", [(CAL.length_min_V, CAL.length_max_V), (0.3, 1.7),
                                           (-1.0, 5.0)])
def test_command_code_stays_in_range_and_within_one_code(low_V, high_V):
    """For every clamped command the code's own voltage is in range (brute force over all
    codes gives the admissible set) and at most one code (0.825 mV) from the request."""
    admissible = [c for c in range(N_CODES) if low_V <= code_to_volts(c) <= high_V]
    rng = np.random.default_rng(7)
    lo, hi = max(low_V, code_to_volts(0)), min(high_V, code_to_volts(N_CODES - 1))
    for v in np.concatenate([[lo, hi], rng.uniform(lo, hi, 2000)]):
        code = command_code(float(v), low_V, high_V)
        assert admissible[0] <= code <= admissible[-1], f"code {code} for {v} V"
        assert abs(code_to_volts(code) - v) <= VOLTS_PER_CODE * (1 + 1e-9), \
            f"code {code} ({code_to_volts(code)} V) for {v} V"
        if admissible[0] < volts_to_code(v) < admissible[-1]:
            assert code == volts_to_code(v), f"interior command {v} V: nearest code"


# --- instability ---------------------------------------------------------------------------
def test_instability_runaway_threshold():
    cfg = SafetyConfig()
    at_limit_m = cfg.max_length_speed_m_per_s * DT_S
    for sign in (1, -1):
        below = InstabilityDetector(cfg, DT_S).update(sign * at_limit_m * (1 - 1e-9))
        assert below is None, f"just below the runaway speed: {below}"
        msg = InstabilityDetector(cfg, DT_S).update(sign * at_limit_m * (1 + 1e-9))
        assert msg and f"max_length_speed_m_per_s = {cfg.max_length_speed_m_per_s}" in msg, msg
    assert InstabilityDetector(cfg, DT_S).update(math.nan), "a NaN length change is unstable"


def test_instability_oscillation_and_smooth_motion():
    cfg = SafetyConfig()
    fast_m = 2 * cfg.oscillation_speed_m_per_s * DT_S
    det = InstabilityDetector(cfg, DT_S)
    # the first update has nothing to reverse; then each update is one fast reversal
    msgs = [det.update(fast_m * (-1) ** i) for i in range(cfg.oscillation_ticks + 1)]
    assert msgs[:-1] == [None] * cfg.oscillation_ticks and msgs[-1], f"messages: {msgs}"
    assert f"{cfg.oscillation_ticks} consecutive ticks" in msgs[-1], msgs[-1]
    det = InstabilityDetector(cfg, DT_S)       # fast but smooth, or alternating slowly
    assert all(det.update(fast_m) is None for _ in range(50)), "smooth motion tripped"
    slow_m = 0.5 * cfg.oscillation_speed_m_per_s * DT_S
    assert all(det.update(slow_m * (-1) ** i) is None for i in range(50)), "slow ripple tripped"


# --- reset ramp ----------------------------------------------------------------------------
def ramp_values(ramp: ResetRamp) -> np.ndarray:
    out = []
    while not ramp.finished:
        out.append(ramp.next_volts())
    return np.array(out)


@pytest.mark.parametrize("from_V, to_V", [
    (0.0, 1.6), (2.2, 1.6), (1.6, 1.6), (1.61, 1.6), (0.3, 2.2), (1.6, 0.0)])
@pytest.mark.parametrize("cfg", [SafetyConfig(), SafetyConfig(ramp_s=0.0),
                                 SafetyConfig(ramp_s=0.05, ramp_max_speed_m_per_s=0.2)],
                         ids=["default", "speed_only", "fast"])
def test_reset_ramp(from_V, to_V, cfg):
    ramp = ResetRamp(from_V, to_V, CAL.metres_per_volt, DT_S, cfg)
    n = ramp.n_ticks
    v = ramp_values(ramp)
    assert len(v) == n and v[-1] == to_V, f"last ramp command {v[-1]!r} != start {to_V!r}"
    assert ramp.next_volts() == to_V, "a finished ramp stays at the start command"
    steps = np.diff(np.concatenate([[from_V], v]))
    assert np.all(steps * np.sign(to_V - from_V) >= 0), "ramp not monotone"
    assert n * DT_S >= cfg.ramp_s, f"ramp duration {n * DT_S} s < ramp_s {cfg.ramp_s} s"

    distance_m = abs(to_V - from_V) * CAL.metres_per_volt
    peak_m_per_s = CAL.metres_per_volt * np.abs(steps).max() / DT_S
    assert peak_m_per_s <= cfg.ramp_max_speed_m_per_s * (1 + 1e-12), \
        f"ramp peak speed {peak_m_per_s} m/s > ramp_max_speed_m_per_s"
    # Raised cosine: peak = pi/2 * mean speed. Sampled at n ticks the largest step lies
    # between sin(pi/n)/2 and sin(pi/(2n)) of the distance, i.e. within (pi/n)^2/6 of it.
    mean_m_per_s = distance_m / (n * DT_S)
    assert peak_m_per_s == pytest.approx(math.pi / 2 * mean_m_per_s,
                                         rel=(math.pi / n) ** 2 / 6 + 1e-12, abs=1e-15), \
        "ramp peak speed vs pi/2 * mean speed"
    # duration: the longer of ramp_s and pi/2 * distance / v_max, rounded up to whole ticks
    t_min = max(cfg.ramp_s, math.pi / 2 * distance_m / cfg.ramp_max_speed_m_per_s)
    assert t_min <= n * DT_S < t_min + DT_S + 1e-12, f"ramp of {n} ticks for {t_min} s"


def test_reset_ramp_of_zero_length_and_time_is_one_tick():
    ramp = ResetRamp(1.6, 1.6, CAL.metres_per_volt, DT_S, SafetyConfig(ramp_s=0.0))
    assert ramp.n_ticks == 1 and list(ramp_values(ramp)) == [1.6]


# --- validation messages name the field and the value -------------------------------------
@pytest.mark.parametrize("field, value", [
    ("watchdog_s", 0.0), ("watchdog_s", -0.005), ("watchdog_s", math.inf),
    ("max_length_speed_m_per_s", math.nan), ("max_force_N", -3.0),
    ("max_lost_samples", -1), ("max_lost_samples", 1.5), ("max_bad_bytes", -2),
    ("ramp_s", -0.1), ("ramp_max_speed_m_per_s", 0.0), ("ramp_max_speed_m_per_s", "fast"),
])
def test_safety_config_rejects_bad_values(field, value):
    with pytest.raises(ValueError) as e:
        SafetyConfig(**{field: value}, source="rig.toml")
    msg = str(e.value)
    assert "rig.toml" in msg and f"'safety.{field}'" in msg and repr(value) in msg, msg


@pytest.mark.parametrize("field, value, expected", [
    ("oscillation_ticks", 0, "expected an integer >= 1"),
    ("oscillation_ticks", True, "expected an integer >= 1"),
    ("max_lost_samples", 2.0, "expected an integer >= 0"),
    ("max_bad_bytes", False, "expected an integer >= 0"),
    ("watchdog_s", True, "expected a finite number > 0"),
    ("ramp_s", True, "expected a finite number >= 0"),
])
def test_safety_config_counts_are_integers_and_booleans_are_not_numbers(field, value, expected):
    """oscillation_ticks = 0 tripped on the first tick with no motion (0 reversals >= 0);
    True and 2.0 were taken as counts."""
    with pytest.raises(ValueError) as e:
        SafetyConfig(**{field: value}, source="rig.toml")
    assert f"rig.toml: field 'safety.{field}' = {value!r}: {expected}" == str(e.value)


def test_safety_config_accepts_zero_tolerances_and_ramp_time():
    cfg = SafetyConfig(max_lost_samples=0, max_bad_bytes=0, ramp_s=0.0)
    assert (cfg.max_lost_samples, cfg.max_bad_bytes, cfg.ramp_s) == (0, 0, 0.0)
    one = SafetyConfig(oscillation_ticks=np.int64(1))     # NumPy integers are counts
    assert InstabilityDetector(one, DT_S).update(0.0) is None, "no motion is no oscillation"


@pytest.mark.parametrize("kw, field", [
    ({"lrest_m": 0.0}, "lrest_m"), ({"volts_per_strain": -6.875}, "volts_per_strain"),
    ({"force_attenuation": math.nan}, "force_attenuation"),
    ({"volts_per_newton": "1"}, "volts_per_newton"),
    ({"force_zero_V": math.inf}, "force_zero_V"),
    ({"length_min_V": 2.5}, "length_max_V"),            # max must exceed min
    ({"length_offset_V": 2.3}, "length_offset_V"),      # start outside the range
    ({"length_offset_V": -0.1}, "length_offset_V"),
])
def test_calibration_rejects_bad_values(kw, field):
    with pytest.raises(ValueError) as e:
        Calibration(**kw, source="rig.toml")
    msg = str(e.value)
    value = kw.get(field, getattr(Calibration(), field))
    assert "rig.toml" in msg and f"'calibration.{field}'" in msg and repr(value) in msg, msg


@pytest.mark.parametrize("kw, field", [
    ({"protocol": "serial"}, "link.protocol"), ({"period_s": 0.0}, "link.period_s"),
    ({"period_s": 1.0}, "link.period_s"), ({"period_s": math.nan}, "link.period_s"),
    ({"baudrate": 0}, "link.baudrate"),
])
def test_link_config_rejects_bad_values(kw, field):
    with pytest.raises(ValueError) as e:
        LinkConfig(**kw, source="rig.toml")
    msg = str(e.value)
    assert "rig.toml" in msg and f"'{field}'" in msg and repr(next(iter(kw.values()))) in msg, msg


@pytest.mark.parametrize("cls, kw, fragment", [
    (LinkConfig, {"period_s": "0.001"},
     "field 'link.period_s' = '0.001': expected a period between 1e-05 and 0.1 s"),
    (LinkConfig, {"baudrate": None}, "field 'link.baudrate' = None: expected an integer > 0"),
    (LinkConfig, {"baudrate": 115200.0},
     "field 'link.baudrate' = 115200.0: expected an integer > 0"),
    (LinkConfig, {"busy_poll_s": True}, "field 'link.busy_poll_s' = True: expected a finite"),
    (LinkConfig, {"port": None}, "field 'link.port' = None: expected a str"),
    (LinkConfig, {"pin_cpus": "no"}, "field 'link.pin_cpus' = 'no': expected true or false"),
    (TrialConfig, {"seed": 1.5},
     "field 'trial.seed' = 1.5: expected an integer >= 0 (numpy.random.default_rng)"),
    (TrialConfig, {"seed": True}, "field 'trial.seed' = True: expected an integer >= 0"),
    (TrialConfig, {"duration_s": "0.35"},
     "field 'trial.duration_s' = '0.35': expected 0 < duration <= 60 s"),
    (Calibration, {"lrest_m": True}, "field 'calibration.lrest_m' = True: expected a finite"),
    (Calibration, {"force_zero_V": False},
     "field 'calibration.force_zero_V' = False: expected a finite number"),
], ids=["str_period", "none_baudrate", "float_baudrate", "bool_busy_poll", "none_port",
        "str_pin_cpus", "float_seed", "bool_seed", "str_duration", "bool_lrest",
        "bool_force_zero"])
def test_sections_built_in_python_check_types(cls, kw, fragment):
    """Before: TypeError from a comparison (a str period, a None baudrate), or accepted (seed
    1.5, lrest_m True = 1 m, pin_cpus 'no' taken as true)."""
    with pytest.raises(ValueError) as e:
        cls(**kw, source="rig.toml")
    assert str(e.value).startswith(f"rig.toml: {fragment}"), str(e.value)


def test_experiment_config_checks_its_sections():
    with pytest.raises(ValueError, match="field 'safety' = None: expected SafetyConfig"):
        ExperimentConfig(safety=None)
