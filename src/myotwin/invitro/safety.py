"""Safety of the ergometer: range clamp, trip detectors and the reset ramp.

What the authors' 2017 program got wrong (notes/invitro-vr.md §3.5, §3.7) and what we do:
* out-of-range commands were *held* at the previous value; we *clamp* to the ergometer's
  range, so the command is as close as the hardware allows, and log entering/leaving it;
* the instability check compared a value with itself (dead code); ours watches the simulated
  MTU length tick by tick and trips on what an unstable loop looks like: a tick-to-tick
  oscillation (the length reversing direction fast on `oscillation_ticks` consecutive
  ticks: a loop ringing at its Nyquist rate) or a runaway faster than any 3 cm animal
  moves (`max_length_speed_m_per_s`). A fast but smooth motion (the unloaded foot swinging
  after takeoff) is not an instability: the lever simply follows as fast as it can;
* any trip froze the output for the rest of the run through an accidental latch; ours is an
  explicit state machine RUN -> RAMP -> DONE: a trip ends the trial, the lever returns to the
  start length along a smooth, speed-limited ramp, and the reason is logged with its tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum

from myotwin.scalars import is_finite_number, is_integer

from .wire.codes import CODE_MAX, code_to_volts, volts_to_code


class LoopState(str, Enum):
    RUN = "run"        # closed loop: the simulation follows the muscle
    RAMP = "ramp"      # safe state: lever ramps back to the start length, stimulator off
    DONE = "done"      # ramp finished, END sent


@dataclass(frozen=True)
class SafetyConfig:
    """Trip thresholds and the reset ramp. SI units."""

    watchdog_s: float = 0.005
    """No valid sample from the device within this time trips the loop."""
    max_length_speed_m_per_s: float = 5.0
    """Simulated MTU speed taken as a numerical runaway (12x the lever's ~0.4 m/s)."""
    oscillation_speed_m_per_s: float = 0.1
    """Speed above which alternating tick-to-tick reversals count as oscillation."""
    oscillation_ticks: int = 4
    """Consecutive fast reversals that trip the instability detector."""
    max_force_N: float = 3.0
    """Measured tension beyond this magnitude trips (beyond the transducer's useful range)."""
    max_lost_samples: int = 0
    """Samples lost on the link (sequence gaps) tolerated before a trip."""
    max_bad_bytes: int = 0
    """Corrupt or unframed bytes tolerated before a trip."""
    ramp_s: float = 0.2
    """Minimum duration of the reset ramp back to the start length."""
    ramp_max_speed_m_per_s: float = 0.05
    """Peak lever speed during the reset ramp."""
    source: str = "<defaults>"

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "source":
                continue
            v = getattr(self, f.name)
            if f.name in _COUNT_MINIMUM:        # a bool or 2.0 is not a count
                least = _COUNT_MINIMUM[f.name]
                ok, expected = is_integer(v) and v >= least, f"an integer >= {least}"
            else:
                ok = is_finite_number(v) and (v >= 0 if f.name == "ramp_s" else v > 0)
                expected = f"a finite number {'>=' if f.name == 'ramp_s' else '>'} 0"
            if not ok:
                raise ValueError(f"{self.source}: field 'safety.{f.name}' = {v!r}: "
                                 f"expected {expected}")


#: The count fields of SafetyConfig and their least value. oscillation_ticks >= 1: with 0,
#: `reversals >= 0` holds on every tick and the first sample would trip the loop.
_COUNT_MINIMUM = {"oscillation_ticks": 1, "max_lost_samples": 0, "max_bad_bytes": 0}


@dataclass(frozen=True)
class Trip:
    """Why the loop left the RUN state."""

    tick: int
    kind: str       # watchdog | lost_samples | bad_bytes | instability | force_range | divergence | disconnect | overextension
    message: str


def clamp_volts(volts: float, low_V: float, high_V: float) -> tuple[float, int]:
    """Clamp a lever command to the ergometer's range. Returns (volts, side): side is -1 when
    clamped low, +1 when clamped high, 0 inside. A non-finite command is an error."""
    if not math.isfinite(volts):
        raise ValueError(f"lever command is not finite: {volts}")
    if volts < low_V:
        return low_V, -1
    if volts > high_V:
        return high_V, 1
    return volts, 0


def command_code(volts: float, low_V: float, high_V: float) -> int:
    """The 12-bit lever code for a command already clamped to [low_V, high_V]: the nearest
    code whose own voltage is inside the range too. Plain rounding can land up to half a code
    (0.41 mV) outside it: the default 2.2 V maximum rounds to code 2727 = 2.2003 V."""
    code = volts_to_code(volts)
    if code > 0 and code_to_volts(code) > high_V:
        code -= 1
    elif code < CODE_MAX and code_to_volts(code) < low_V:
        code += 1
    return code


class InstabilityDetector:
    """Watches the simulated MTU length, one update per tick (see the module docstring)."""

    def __init__(self, cfg: SafetyConfig, dt_s: float) -> None:
        self.cfg, self.dt_s = cfg, dt_s
        self.prev_v = 0.0
        self.reversals = 0

    def update(self, delta_length_m: float) -> str | None:
        """Message when the loop is unstable, given this tick's MTU length change."""
        cfg = self.cfg
        v = delta_length_m / self.dt_s
        if not math.isfinite(v) or abs(v) > cfg.max_length_speed_m_per_s:
            return (f"instability: simulated MTU speed {abs(v):.3g} m/s exceeds "
                    f"max_length_speed_m_per_s = {cfg.max_length_speed_m_per_s} m/s (runaway)")
        fast = min(abs(v), abs(self.prev_v)) > cfg.oscillation_speed_m_per_s
        self.reversals = self.reversals + 1 if fast and v * self.prev_v < 0 else 0
        self.prev_v = v
        if self.reversals >= cfg.oscillation_ticks:
            return (f"instability: simulated MTU length reversed direction on "
                    f"{self.reversals} consecutive ticks at > {cfg.oscillation_speed_m_per_s} "
                    "m/s (the loop is oscillating)")
        return None


class ResetRamp:
    """Smooth (raised-cosine) ramp of the lever command from its current value to the start.

    Duration: at least `ramp_s`, and long enough that the peak speed (pi/2 times the mean
    speed for a raised cosine) stays under `ramp_max_speed_m_per_s`.
    """

    def __init__(self, from_V: float, to_V: float, metres_per_volt: float, dt_s: float,
                 cfg: SafetyConfig) -> None:
        distance_m = abs(to_V - from_V) * metres_per_volt
        t_speed = math.pi / 2 * distance_m / cfg.ramp_max_speed_m_per_s
        self.n_ticks = max(1, int(math.ceil(max(cfg.ramp_s, t_speed) / dt_s)))
        self.from_V, self.to_V = from_V, to_V
        self.i = 0

    @property
    def finished(self) -> bool:
        return self.i >= self.n_ticks

    def next_volts(self) -> float:
        """The command for the next tick; the last one equals the start command exactly."""
        self.i = min(self.i + 1, self.n_ticks)
        s = 0.5 - 0.5 * math.cos(math.pi * self.i / self.n_ticks)
        return self.from_V + (self.to_V - self.from_V) * s if self.i < self.n_ticks else self.to_V
