"""Stimulation schedule of a trial: a train of supramaximal pulses.

Seed (Methods): 250 Hz trains (the frequency of maximal force for Xenopus; Richards 2011),
80 ms long, starting 20 ms (nominal) or 60 ms (delayed) after the onset of hip and knee
extension. Extension onset is t = 0 of the trial (the servo targets start moving at t = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from myotwin.scalars import is_finite_number


@dataclass(frozen=True)
class StimulationSchedule:
    """One pulse train. Times in seconds from the start of the trial (t_sim = 0)."""

    onset_s: float = 0.020
    duration_s: float = 0.080
    frequency_hz: float = 250.0
    pulse_width_s: float = 0.0005

    def __post_init__(self) -> None:
        for name in ("onset_s", "duration_s", "frequency_hz", "pulse_width_s"):
            v = getattr(self, name)
            if not (is_finite_number(v) and v >= 0):       # True is no time (is_finite_number)
                raise ValueError(f"stimulation: field '{name}' = {v!r}: expected a finite number >= 0")
        if self.frequency_hz > 0 and self.pulse_width_s * self.frequency_hz >= 1.0:
            raise ValueError(
                f"stimulation: field 'pulse_width_s' = {self.pulse_width_s}: must be shorter than "
                f"the pulse period 1/{self.frequency_hz} s")

    @property
    def end_s(self) -> float:
        return self.onset_s + self.duration_s

    def gate(self, t_s: float) -> bool:
        """True while the train is on: onset <= t < onset + duration."""
        return self.onset_s <= t_s < self.end_s

    def pulse_times_s(self) -> list[float]:
        """Start times of the pulses of the train (the first at onset)."""
        if self.frequency_hz <= 0 or self.duration_s <= 0:
            return []
        n = int(math.floor(self.duration_s * self.frequency_hz - 1e-9)) + 1
        return [self.onset_s + i / self.frequency_hz for i in range(n)]

    def to_dict(self) -> dict:
        return {"onset_s": self.onset_s, "duration_s": self.duration_s,
                "frequency_hz": self.frequency_hz, "pulse_width_s": self.pulse_width_s}
