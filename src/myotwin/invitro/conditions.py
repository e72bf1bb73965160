"""The five experimental conditions of the seed (Methods, "Experimental procedure").

1. nominal: stimulation 20 ms after the onset of hip and knee extension, 80 ms at 250 Hz;
   muscle origin at the knee centre (no knee moment).
2. control1: the plantaris is absent from the simulation (its force is measured but not
   applied; its length is still commanded, so the muscle follows the passive ankle).
3. control2: the muscle is in the simulation but unstimulated (passive force only).
4. delayed: as nominal with the stimulation onset 60 ms after extension onset.
5. origin_shifted: as nominal with the origin moved proximally along the femur, so the
   plantaris also flexes the knee.
Across conditions the stimulation burst and the hip/knee servo targets are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from .stimulation import StimulationSchedule

#: Distance of the shifted origin from the knee centre along the femur's axis (m). 3 mm gives
#: a knee-flexor moment arm of up to ~3 mm during push-off (docs/invitro/frog.md §9): the
#: extending knee then "pulls" on the origin and the plantaris stays nearly isometric (stance
#: strain range 0.19-0.24 x nominal's; docs/invitro/tuning.md). Offsets >= 3.75 mm make the muscle
#: (then nearly isometric at > 2 N) yank the unloaded foot past 1000 rad/s after takeoff.
SHIFTED_ORIGIN_OFFSET_M = 0.003


@dataclass(frozen=True)
class Condition:
    name: str
    description: str
    muscle_present: bool
    stimulation: StimulationSchedule | None
    origin_offset_m: float = 0.0


NOMINAL_STIMULATION = StimulationSchedule(onset_s=0.020, duration_s=0.080, frequency_hz=250.0)

CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition("nominal", "stimulated 20 ms after hip/knee extension onset, 80 ms at 250 Hz; "
              "origin at the knee centre", True, NOMINAL_STIMULATION),
    Condition("control1", "plantaris absent from the simulation", False, None),
    Condition("control2", "plantaris present, unstimulated (passive force only)", True, None),
    Condition("delayed", "as nominal with stimulation onset at 60 ms", True,
              StimulationSchedule(onset_s=0.060, duration_s=0.080, frequency_hz=250.0)),
    Condition("origin_shifted", "as nominal with the origin proximal on the femur "
              "(knee-flexor action)", True, NOMINAL_STIMULATION, SHIFTED_ORIGIN_OFFSET_M),
)}


def get_condition(name: str) -> Condition:
    try:
        return CONDITIONS[name]
    except KeyError:
        raise ValueError(f"unknown condition {name!r} (known: {', '.join(CONDITIONS)})") from None
