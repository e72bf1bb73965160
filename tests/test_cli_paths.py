"""Output paths, seeds and unreadable inputs on the command line: refused in one line with exit
status 2 before any work (argparse's `argument --out: ...`, or `myotwin: error: ...`), never a
traceback. The cases are what a probe of the commands found raising FileExistsError,
NotADirectoryError, IsADirectoryError or FileNotFoundError tracebacks (exit 1), or NumPy's
"expected non-negative integer" for a seed. Durations and counts of the simulation commands
are checked while parsing too, so that the refusal names the option as typed (`--duration-s`,
not the Python name `duration_s`)."""

import pytest

from myotwin.cli.main import main


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("not a directory\n")
    return path


def _refused(capsys, argv, *needles):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("myotwin"), err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize("command", [
    ["invitro", "run", "--condition", "control1", "--inprocess"],
    ["invitro", "conditions", "--inprocess"],
    ["invitro", "loopback", "--ticks", "5", "--inprocess"],
    ["repro", "energy-qvv", "--quick"],
    ["osim", "inverse-dynamics", "model.osim", "--coordinates", "ik.mot"],
    ["mjcf", "forward", "model.xml", "--excitation", "0.5"],
])
def test_an_output_directory_that_is_a_file_is_refused_while_parsing(capsys, a_file, command):
    _refused(capsys, command + ["--out", str(a_file)], "argument --out:",
             f"{a_file} exists and is not a directory")
    _refused(capsys, command + ["--out", str(a_file / "sub")], "argument --out:",
             f"{a_file} exists and is not a directory")
    _refused(capsys, command + ["--out", ""], "argument --out: an empty path")


def test_output_files_and_seeds_are_checked_before_training(capsys, a_file, tmp_path):
    _refused(capsys, ["train-wrap", "--quick", "--out", str(a_file / "w.npz")],
             "argument --out:", f"{a_file} exists and is not a directory")
    folder = tmp_path / "w.npz"
    folder.mkdir()
    _refused(capsys, ["train-wrap", "--quick", "--out", str(folder)], "argument --out:",
             f"{folder} is a directory; give a file")
    _refused(capsys, ["train-wrap", "--quick", "--out", str(tmp_path / "x.npz"), "--seed",
                      "-1"], "argument --seed: expected an integer >= 0, got -1")
    _refused(capsys, ["invitro", "emulate", "--pty", "--seed", "two"],
             "argument --seed: expected an integer >= 0, got 'two'")
    _refused(capsys, ["invitro", "emulate", "--pty", "--max-ticks", "1_0"],   # int(): 10
             "argument --max-ticks: expected an integer, got '1_0'")
    _refused(capsys, ["invitro", "emulate", "--pty", "--log", str(a_file / "log.csv")],
             "argument --log:", f"{a_file} exists and is not a directory")
    _refused(capsys, ["invitro", "replay-legacy", "somewhere", "--out", str(a_file / "s.json")],
             "argument --out:", f"{a_file} exists and is not a directory")


def test_a_missing_legacy_directory_is_one_line(capsys, tmp_path):
    """replay-legacy's own FileNotFoundError (an OSError) names the folder: exit 2."""
    assert main(["invitro", "replay-legacy", str(tmp_path / "nowhere"), "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere: not a directory" in err, err


@pytest.mark.parametrize("command", [
    ["mjcf", "forward", "model.xml", "--excitation", "0.5"],
    ["osim", "forward", "model.osim", "--excitation", "0.5"],
])
@pytest.mark.parametrize("option, value, message", [
    ("--duration-s", "-1", "expected a positive number of seconds, got -1"),
    ("--duration-s", "0", "expected a positive number of seconds, got 0"),
    ("--dt-s", "nan", "expected a positive number of seconds, got nan"),
    ("--dt-s", "inf", "expected a positive number of seconds, got inf"),
    ("--record-every-s", "1ms", "expected a number of seconds, got '1ms'"),
    # float() reads "1_0" as 10; no other reader of numbers we share files with does
    ("--duration-s", "1_0", "expected a number of seconds, got '1_0'"),
])
def test_durations_are_checked_while_parsing(capsys, tmp_path, command, option, value,
                                             message):
    _refused(capsys, command + ["--out", str(tmp_path), option, value],
             f"argument {option}: {message}")


@pytest.mark.parametrize("argv, message", [
    (["mjcf", "forward", "model.xml", "--excitation", "0.5", "--mass-points", "0"],
     "argument --mass-points: expected an integer >= 1, got 0"),
    (["mjcf", "forward", "model.xml", "--excitation", "0.5", "--mass-points", "2.5"],
     "argument --mass-points: expected an integer >= 1, got '2.5'"),
    (["osim", "forward", "model.osim", "--excitation", "0.5", "--max-steps", "0"],
     "argument --max-steps: expected an integer >= 1, got 0"),
    (["osim", "forward", "model.osim", "--excitation", "0.5", "--max-steps", "1_000"],
     "argument --max-steps: expected an integer >= 1, got '1_000'"),
    (["osim", "inverse-dynamics", "model.osim", "--coordinates", "m.mot", "--lowpass-hz", "6_0"],
     "argument --lowpass-hz: expected a number, got '6_0'"),
    (["invitro", "loopback", "--rate-hz", "1_000"],
     "argument --rate-hz: expected a number, got '1_000'"),
])
def test_counts_are_checked_while_parsing(capsys, tmp_path, argv, message):
    _refused(capsys, argv + ["--out", str(tmp_path)], message)
