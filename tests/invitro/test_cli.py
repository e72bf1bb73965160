"""The `myotwin invitro ...` command line: bad input is one line on stderr and exit status 2
(no traceback); the in-process loopback writes its verdict."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from myotwin.cli.main import main


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def assert_one_line_error(rc: int, err: str, *names: str) -> None:
    assert rc == 2, f"exit status {rc}, stderr {err!r}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("myotwin: error: "), f"stderr: {err!r}"
    assert "Traceback" not in err and all(n in err for n in names), f"stderr {err!r} lacks {names}"


def test_unknown_condition(capsys, tmp_path):
    out = tmp_path / "X"
    rc, _, err = run_main(capsys, "invitro", "run", "--condition", "nope", "--out", str(out),
                          "--inprocess")
    assert_one_line_error(rc, err, "'nope'", "nominal")
    assert not (out / "ticks.csv").exists(), "a trial ran for an unknown condition"


def test_unknown_condition_in_a_subprocess(tmp_path):
    """The installed entry point, as a user runs it: status 2, one line, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "myotwin", "invitro", "run", "--condition",
                           "nope", "--out", str(tmp_path / "X")],
                          capture_output=True, text=True, timeout=60)
    assert_one_line_error(proc.returncode, proc.stderr, "'nope'")
    assert "Traceback" not in proc.stdout


def test_unknown_condition_in_only(capsys, tmp_path):
    rc, _, err = run_main(capsys, "invitro", "conditions", "--only", "nominal", "nope",
                          "--out", str(tmp_path), "--inprocess")
    assert_one_line_error(rc, err, "'nope'")
    assert not (tmp_path / "nominal" / "ticks.csv").exists(), "ran conditions before rejecting"


@pytest.mark.parametrize("text, names", [
    ("[safety]\nwatchdog_ms = 5\n", ["'safety.watchdog_ms'"]),
    ('[trial]\nduration_s = "short"\n', ["'trial.duration_s'", "'short'"]),
    ("[link]\nperiod_s = 0\n", ["'link.period_s'", "0.0"]),
    ("safety = 1\n", ["'safety'", "1"]),
    ("[trial\n", ["not valid TOML"]),
    ("[calibration]\nforce_attenuation = -1\n", ["'calibration.force_attenuation' = -1"]),
    ("duration_s = 1\n", ["'duration_s' = 1 at the top level", "[trial]"]),
], ids=["unknown_field", "wrong_type", "out_of_range", "not_a_table", "bad_toml",
        "section_named", "top_level_key"])
@pytest.mark.parametrize("command", ["run", "loopback", "show-config"])
def test_bad_config_file(capsys, tmp_path, text, names, command):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    args = {"run": ["--condition", "nominal", "--out", str(tmp_path / "o"), "--inprocess"],
            "loopback": ["--out", str(tmp_path / "o"), "--inprocess", "--ticks", "10"],
            "show-config": []}[command]
    rc, _, err = run_main(capsys, "invitro", command, *args, "--config", str(path))
    assert_one_line_error(rc, err, str(path), *names)


def test_missing_config_file(capsys, tmp_path):
    rc, _, err = run_main(capsys, "invitro", "show-config", "--config", str(tmp_path / "no.toml"))
    assert_one_line_error(rc, err, "no.toml", "not found")


@pytest.mark.parametrize("args, names", [
    (["--max-ticks", "-1"], ["--max-ticks = -1: expected >= 1"]),
    (["--spin-s", "-1"], ["--spin-s = -1.0: expected a time >= 0 s"]),
    (["--spin-s", "nan"], ["--spin-s = nan"]),
    (["--cpu", "99999"], ["--cpu = 99999: this machine has CPUs 0 to "]),
    (["--stim-onset-s", "0.1"], ["--stim-onset-s with --protocol framed"]),
])
def test_bad_emulator_options_are_refused_before_the_port_opens(capsys, args, names):
    """Each was accepted: the emulator printed its port and waited for a host, and the option
    failed (or was ignored) only once the trial ran."""
    rc, out, err = run_main(capsys, "invitro", "emulate", "--pty", *args)
    assert "PORT" not in out
    assert_one_line_error(rc, err, *names)


@pytest.mark.parametrize("args, names", [
    (["--ticks", "0"], ["--ticks = 0"]),
    (["--rate-hz", "0"], ["--rate-hz = 0.0"]),
    (["--rate-hz", "inf"], ["--rate-hz = inf: expected a rate from 10 to 100000 Hz"]),
])
def test_bad_loopback_arguments(capsys, tmp_path, args, names):
    rc, _, err = run_main(capsys, "invitro", "loopback", "--inprocess", "--out", str(tmp_path),
                          *args)
    assert_one_line_error(rc, err, *names)


def test_loopback_inprocess_summary(capsys, tmp_path):
    rc, out, err = run_main(capsys, "invitro", "loopback", "--inprocess", "--ticks", "500",
                            "--out", str(tmp_path))
    assert rc == 0, f"exit status {rc}: {err}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    expected = {"passed": True, "max_error_lsb": 0, "lost": 0, "reordered": 0, "ticks": 500}
    assert {k: summary[k] for k in expected} == expected, f"summary.json: {summary}"
    # every echo but the last (answered after the device's final tick) was compared
    assert summary["device"]["loopback_checked"] == 499 and summary["bad_bytes"] == 0
    assert json.loads(out)["passed"] is True, f"stdout: {out!r}"


def test_loopback_runs_below_the_watchdogs_rate(capsys, tmp_path):
    """At 100 Hz the period (10 ms) exceeds the default watchdog (5 ms): a closed-loop trial
    is refused (test_config.py), but the loopback check has no watchdog and runs."""
    rc, out, err = run_main(capsys, "invitro", "loopback", "--inprocess", "--rate-hz", "100",
                            "--ticks", "20", "--out", str(tmp_path))
    assert rc == 0 and json.loads(out)["passed"] is True, f"exit status {rc}: {err}"
    config = tmp_path / "slow.toml"
    config.write_text("[link]\nperiod_s = 0.01\n")
    rc, _, err = run_main(capsys, "invitro", "run", "--condition", "nominal", "--inprocess",
                          "--config", str(config), "--out", str(tmp_path / "nominal"))
    assert_one_line_error(rc, err, "safety.watchdog_s", "link.period_s = 0.01")
    assert not (tmp_path / "nominal").exists()


def test_run_inprocess_completes(capsys, tmp_path):
    config = tmp_path / "short.toml"
    config.write_text("[trial]\nduration_s = 0.05\n")
    rc, out, err = run_main(capsys, "invitro", "run", "--condition", "nominal", "--inprocess",
                            "--config", str(config), "--out", str(tmp_path / "nominal"))
    assert rc == 0, f"exit status {rc}: {err}"
    trial = json.loads((tmp_path / "nominal" / "trial.json").read_text())
    assert trial["ended"] == "completed" and trial["ticks"] == 50, trial["message"]
    assert json.loads(out)["ticks"] == 50
