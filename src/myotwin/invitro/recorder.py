"""Trial data written as it is produced: one CSV row per tick, one JSON line per event.

Each row is written and flushed to the operating system right after the tick's length
command has been sent (so writing never delays the command), and the events file is
flushed as each event happens: a crash, a fault or a killed process loses nothing that
had been recorded. Files:
* `ticks.csv`: a header line, then one row per tick (columns: see `Recorder.columns`).
* `events.jsonl`: safety actions, link faults, state changes, each with its tick.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable


class Recorder:
    """Streams tick rows and events of one trial into a directory."""

    def __init__(self, directory: str | os.PathLike, columns: Iterable[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.columns = tuple(columns)
        self._n = len(self.columns)
        self._ticks = open(self.directory / "ticks.csv", "w", buffering=1 << 16)
        self._events = open(self.directory / "events.jsonl", "w", buffering=1 << 12)
        self._ticks.write(",".join(self.columns) + "\n")
        self._ticks.flush()
        self.n_rows = 0
        self.events: list[dict] = []

    def row(self, values: tuple) -> None:
        """Write one tick row (same order as `columns`) and flush it to the OS."""
        if len(values) != self._n:
            raise ValueError(f"recorder: row has {len(values)} values, header has {self._n}")
        self._ticks.write(",".join(map(str, values)) + "\n")
        self._ticks.flush()
        self.n_rows += 1

    def event(self, tick: int, kind: str, message: str, **extra) -> None:
        """Record an event (written and flushed at once)."""
        e = {"tick": tick, "kind": kind, "message": message, **extra}
        self.events.append(e)
        self._events.write(json.dumps(e) + "\n")
        self._events.flush()

    def close(self) -> None:
        for f in (self._ticks, self._events):
            if not f.closed:
                f.flush()
                os.fsync(f.fileno())
                f.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
