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
