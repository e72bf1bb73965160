"""`myotwin repro`: listing, bad names and the exit status (the reproductions themselves are
tested in their own packages at the reduced size)."""

import subprocess
import sys

from myotwin.cli.main import main
from myotwin.repro import REGISTRY


def test_list_prints_every_registered_reproduction(capsys):
    assert main(["repro", "--list"]) == 0
    assert capsys.readouterr().out.split() == sorted(REGISTRY)
    assert {"fiber-mms", "fiber-cylinder"} <= set(REGISTRY)


def test_unknown_name_is_a_clear_error_with_status_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "myotwin", "repro", "no-such", "--out",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown reproduction 'no-such'" in proc.stderr and "fiber-mms" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_out_is_a_clear_error(capsys):
    assert main(["repro", "fiber-mms"]) == 2
    assert "--out DIR is required" in capsys.readouterr().err



def test_quick_is_true_or_false(tmp_path, monkeypatch):
    """From Python, quick="no" is true (it ran the CI size) and 0 false (the full size);
    refused before the reproduction runs (stubbed here, so the unfixed source runs nothing)."""
    import pytest

    from myotwin.repro import fiber_mms

    ran = []
    monkeypatch.setattr(fiber_mms, "run", lambda out, quick: ran.append(quick) or {})
    for bad in ("no", 0):
        with pytest.raises(ValueError, match=f"myotwin.repro.fiber_mms:run: quick must be "
                           f"True or False, got {bad!r}"):
            REGISTRY["fiber-mms"](tmp_path / "out", quick=bad)
    assert ran == []
    REGISTRY["fiber-mms"](tmp_path / "out", quick=True)
    assert ran == [True]
