"""Experiment config files (TOML): rejection of bad input with file, field and value; merging
with defaults; the printed config reads back to the same settings."""

from __future__ import annotations

import dataclasses

import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.config import (ExperimentConfig, LinkConfig, TrialConfig, config_to_toml,
                                    load_config)
from myotwin.invitro.safety import SafetyConfig


@pytest.mark.parametrize("text, names", [
    # unknown section / field
    ("[lever]\ngain = 2.0\n", ["[lever]"]),
    ("[safety]\nwatchdog_ms = 5\n", ["'safety.watchdog_ms'", "watchdog_s"]),
    # wrong types
    ('[safety]\nwatchdog_s = "5 ms"\n', ["'safety.watchdog_s'", "'5 ms'", "float"]),
    ("[safety]\nmax_bad_bytes = 1.5\n", ["'safety.max_bad_bytes'", "1.5", "int"]),
    ("[link]\nbaudrate = true\n", ["'link.baudrate'", "True"]),
    ("[calibration]\nlrest_m = true\n", ["'calibration.lrest_m'", "True"]),
    ("[link]\nport = 3\n", ["'link.port'", "3", "str"]),
    ("trial = 0.1\n", ["'trial'", "0.1"]),
    # out of range
    ("[safety]\nwatchdog_s = -0.005\n", ["'safety.watchdog_s'", "-0.005"]),
    ("[link]\nperiod_s = 1.0\n", ["'link.period_s'", "1.0"]),
    ('[link]\nprotocol = "FRAMED"\n', ["'link.protocol'", "'FRAMED'"]),
    ("[trial]\nduration_s = 0\n", ["'trial.duration_s'", "0.0"]),
    ("[trial]\nseed = -1\n", ["'trial.seed'", "-1"]),
    ("[calibration]\nlength_offset_V = 2.5\n", ["'calibration.length_offset_V'", "2.5"]),
    ("[calibration]\nlength_max_V = -1\n", ["'calibration.length_max_V'", "-1.0"]),
    # not TOML at all
    ("[safety\nwatchdog_s = 1\n", ["not valid TOML"]),
], ids=["unknown_section", "unknown_field", "str_for_float", "float_for_int", "bool_for_int",
        "bool_for_float", "int_for_str", "section_not_a_table", "negative_watchdog",
        "period_too_long", "unknown_protocol", "zero_duration", "negative_seed",
        "offset_outside_range", "max_below_min", "bad_toml"])
def test_bad_config_names_file_field_and_value(tmp_path, text, names):
    path = tmp_path / "rig.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as e:
        load_config(path)
    msg = str(e.value)
    assert str(path) in msg and all(n in msg for n in names), f"message {msg!r} lacks {names}"
    assert "\n" not in msg, f"message is not one line: {msg!r}"


@pytest.mark.parametrize("text, fragment", [
    ("[link]\nbusy_poll_s = -1.0\n",
     "field 'link.busy_poll_s' = -1.0: expected a finite time >= 0 s"),
    ("[link]\nbusy_poll_s = nan\n", "field 'link.busy_poll_s' = nan: expected a finite time"),
    ("[link]\ndevice_spin_s = inf\n", "field 'link.device_spin_s' = inf: expected a finite time"),
    ("[link]\ndevice_spin_s = -1.0\n", "field 'link.device_spin_s' = -1.0: expected a finite"),
    ("[trial]\nduration_s = 1e-9\n",
     "field 'trial.duration_s' = 1e-09: expected at least one loop period link.period_s = 0.001"),
    ("[safety]\nwatchdog_s = 1e-6\n",
     "field 'safety.watchdog_s' = 1e-06: expected longer than the loop period link.period_s = "
     "0.001"),
    ("[safety]\nwatchdog_s = 0.002\n[link]\nperiod_s = 0.002\n",
     "field 'safety.watchdog_s' = 0.002: expected longer than the loop period"),
], ids=["negative_busy_poll", "nan_busy_poll", "inf_device_spin", "negative_device_spin",
        "zero_ticks", "watchdog_below_period", "watchdog_equal_to_period"])
def test_config_times_are_checked_against_their_range_and_the_period(tmp_path, text, fragment):
    """These were accepted: NaN busy_poll_s never spun, inf spun for the whole wait, a
    negative device_spin_s reached the emulator's --spin-s; duration_s = 1e-9 ran 0 ticks; a
    watchdog no longer than the period tripped between two samples on time (checked before a
    closed-loop trial, `check_closed_loop`: a loopback check has no watchdog)."""
    path = tmp_path / "rig.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as e:
        load_config(path).check_closed_loop()
    assert str(e.value).startswith(f"{path}: ") and fragment in str(e.value), str(e.value)


def test_config_times_at_their_limits_are_accepted(tmp_path):
    """A spin of a whole period or more busy-waits throughout (as emulate --spin-s allows); a
    trial of one period runs one tick; one not a whole number of periods is rounded."""
    path = tmp_path / "rig.toml"
    path.write_text("[link]\nbusy_poll_s = 1.0\ndevice_spin_s = 0.0\n"
                    "[trial]\nduration_s = 0.001\n[safety]\nwatchdog_s = 0.0011\n")
    cfg = load_config(path)
    link, trial = cfg.link, cfg.trial
    assert (link.busy_poll_s, link.device_spin_s, trial.duration_s) == (1.0, 0.0, 0.001)


def test_config_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "rig.toml"
    path.write_bytes(b"[trial]\n# dur\xe9e\nduration_s = 0.35\n")
    with pytest.raises(ValueError) as e:
        load_config(path)
    assert str(e.value) == (f"{path}: not a text (UTF-8) TOML file: invalid continuation byte "
                            "at byte 13")


def test_unreadable_config_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ValueError, match="cannot read"):
        load_config(tmp_path)          # a directory


def test_partial_config_merges_with_defaults(tmp_path):
    path = tmp_path / "partial.toml"
    path.write_text("[safety]\nwatchdog_s = 0.01\nmax_bad_bytes = 2\n\n"
                    "[trial]\nduration_s = 1\n")     # an integer for a float field
    cfg = load_config(path)
    assert cfg.safety.watchdog_s == 0.01 and cfg.safety.max_bad_bytes == 2
    assert cfg.trial.duration_s == 1.0 and isinstance(cfg.trial.duration_s, float)
    defaults = ExperimentConfig().to_dict()
    got = cfg.to_dict()
    changed = {(s, k) for s in defaults for k in defaults[s] if defaults[s][k] != got[s][k]}
    assert changed == {("safety", "watchdog_s"), ("safety", "max_bad_bytes"),
                       ("trial", "duration_s")}, f"fields differing from the defaults: {changed}"
    assert cfg.safety.source == str(path), "errors raised later must name the file"
    assert load_config(None) == ExperimentConfig()


def test_config_to_toml_round_trips(tmp_path):
    cfg = ExperimentConfig(
        link=LinkConfig(protocol="legacy", period_s=0.002, port='\\\\.\\COM10 "rig"',
                        baudrate=230400),
        calibration=Calibration(lrest_m=0.024, volts_per_strain=2.2 / 0.32, length_offset_V=1.3,
                                force_zero_V=0.1 + 1e-7),
        safety=SafetyConfig(watchdog_s=0.0035, max_lost_samples=3, ramp_s=0.0),
        trial=TrialConfig(duration_s=0.5, seed=42))
    path = tmp_path / "printed.toml"
    path.write_text(config_to_toml(cfg))
    back = load_config(path)
    assert back.to_dict() == cfg.to_dict(), "config_to_toml -> load_config changed settings"
    # and the defaults as printed by show-config
    path.write_text(config_to_toml(ExperimentConfig()))
    assert load_config(path).to_dict() == ExperimentConfig().to_dict()


def test_replace_keeps_validation():
    """The CLI overrides fields with dataclasses.replace: the checks still run."""
    with pytest.raises(ValueError, match="link.period_s"):
        dataclasses.replace(LinkConfig(), period_s=-1.0)
