"""argparse types of the command line's paths, counts and durations: checked while the
arguments are parsed, before any work, so that a run is not lost to an output path it cannot
write, and a refusal names the option as it was typed (argparse reports one as
`argument --out: ...` with exit status 2)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from myotwin.scalars import number_from_text


def _file_in_the_way(path: Path) -> Path | None:
    """The first of path's ancestors (path itself included) that exists and is no directory."""
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            return part
    return None


def output_directory(text: str) -> str:
    """A directory to write into: it exists, or it can be made (no file on its way)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give an output directory")
    blocker = _file_in_the_way(Path(text))
    if blocker is not None:
        raise argparse.ArgumentTypeError(f"{text}: {blocker} exists and is not a directory")
    return text


def output_file(text: str) -> str:
    """A file to write: not a directory, and its folder can be made (no file on its way)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give an output file")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file")
    blocker = _file_in_the_way(path.parent)
    if blocker is not None:
        raise argparse.ArgumentTypeError(f"{text}: {blocker} exists and is not a directory")
    return text


def number(text: str) -> float:
    """A number as typed (`myotwin.scalars.number_from_text`: "1_0" is refused, where
    Python's float() reads 10); the type of every option that takes a real number."""
    try:
        return number_from_text(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def integer(text: str) -> int:
    """An integer as typed, without Python's digit separators (int("1_0") is 10), for options
    whose range is checked with the command (`--ticks`, `--cpu`)."""
    if "_" in text:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _integer_at_least(text: str, minimum: int) -> int:
    try:
        value = integer(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}"
                                         ) from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


def seed(text: str) -> int:
    """A random seed: an integer >= 0 (NumPy's generators take no other)."""
    return _integer_at_least(text, 0)


def output_directory_or_json(text: str) -> str:
    """A .json file to write (`output_file`), or else a directory (`output_directory`)."""
    return output_file(text) if text.lower().endswith(".json") else output_directory(text)


def positive_seconds(text: str) -> float:
    """A duration or a step (s): a finite number > 0."""
    try:
        value = number_from_text(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def positive_integer(text: str) -> int:
    """A count: an integer >= 1."""
    return _integer_at_least(text, 1)
