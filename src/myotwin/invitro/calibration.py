"""Calibration of the ergometer signals: volts <-> newtons and volts <-> strain.

Conventions (docs/invitro/calibration.md):
* Force: tension is positive, in newtons. The ergometer's force output is `newtons_per_volt`
  (Aurora 305C-LR as used in the seed: 1 V = 1 N) and is attenuated by `force_attenuation`
  (0.5 in the authors' rig, `forceScale.dat`) before the microcontroller's ADC. So
  F = (V_adc - V_zero) / (force_attenuation * volts_per_newton_ergometer).
* Length: the lever command is `length_offset_V + volts_per_strain * (L - L_start) / lrest_m`.
  The seed's rig uses 6.875 V per unit strain (2.2 V for 0.32 strain) and an offset of 2.0 V,
  which leaves only +2.9 % of stretch headroom; our defaults (4.6 V per unit strain, 1.78 V)
  leave +9.1 % and -38.7 % (see docs/invitro/tuning.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from myotwin.scalars import is_finite_number


def require_field(cond: bool, field: str, value, expected: str, source: str,
                  section: str = "calibration") -> None:
    """ValueError naming the source, section.field and value unless cond (config.py uses it
    for its sections too)."""
    if not cond:
        raise ValueError(f"{source}: field '{section}.{field}' = {value!r}: expected "
                         f"{expected}")


@dataclass(frozen=True)
class Calibration:
    """Maps converter volts to SI quantities and back. All fields in SI or volts."""

    lrest_m: float = 0.02566
    """Length of the real preparation at the start of the trial (m); strain is relative to it."""
    volts_per_strain: float = 4.6
    """Lever-command gain: volts per unit MTU strain. The seed's rig used 2.2 V for 0.32 strain;
    our default spans 2.2 V / 4.6 = 0.478 strain, since the plantaris stretches up to 7.5 % in
    the initial sink and shortens up to 38 % by takeoff (docs/invitro/tuning.md)."""
    length_offset_V: float = 1.78
    """Lever command at the start length (V): +9.1 % stretch and -38.7 % shortening headroom
    (-9.93 mm, inside the lever's -10 mm travel), so no stance command is clamped."""
    length_min_V: float = 0.0
    """Lowest lever command the ergometer accepts (V)."""
    length_max_V: float = 2.2
    """Highest lever command the ergometer accepts (V)."""
    volts_per_newton: float = 1.0
    """Ergometer force output calibration, before attenuation (V/N)."""
    force_attenuation: float = 0.5
    """Gain applied to the force signal before the ADC (the seed's forceScale.dat)."""
    force_zero_V: float = 0.1
    """ADC volts at zero force (transducer offset), used when the baseline mode is 'config'."""
    source: str = "<defaults>"
    """Where these values came from, for error messages."""

    def __post_init__(self) -> None:
        s = self.source
        for name in ("lrest_m", "volts_per_strain", "volts_per_newton", "force_attenuation"):
            v = getattr(self, name)
            require_field(is_finite_number(v) and v > 0, name, v, "a finite number > 0", s)
        for name in ("length_offset_V", "length_min_V", "length_max_V", "force_zero_V"):
            v = getattr(self, name)
            require_field(is_finite_number(v), name, v, "a finite number", s)
        require_field(self.length_min_V < self.length_max_V, "length_max_V", self.length_max_V,
                      f"> length_min_V ({self.length_min_V})", s)
        require_field(self.length_min_V <= self.length_offset_V <= self.length_max_V,
                      "length_offset_V", self.length_offset_V,
                      f"within [{self.length_min_V}, {self.length_max_V}] V", s)

    # --- length -------------------------------------------------------------------------
    @property
    def metres_per_volt(self) -> float:
        return self.lrest_m / self.volts_per_strain

    def length_change_to_volts(self, delta_length_m: float) -> float:
        """Lever command (V, unclamped) for an MTU length change from the start length."""
        return self.length_offset_V + self.volts_per_strain * delta_length_m / self.lrest_m

    def volts_to_length_change(self, volts: float) -> float:
        """MTU length change from the start length (m) commanded by `volts`."""
        return (volts - self.length_offset_V) * self.lrest_m / self.volts_per_strain

    @property
    def stretch_headroom_strain(self) -> float:
        return (self.length_max_V - self.length_offset_V) / self.volts_per_strain

    @property
    def shortening_headroom_strain(self) -> float:
        return (self.length_offset_V - self.length_min_V) / self.volts_per_strain

    # --- force --------------------------------------------------------------------------
    @property
    def adc_volts_per_newton(self) -> float:
        return self.volts_per_newton * self.force_attenuation

    def force_volts_to_newtons(self, volts: float, zero_V: float | None = None) -> float:
        """Tension (N) from ADC volts, relative to `zero_V` (default: force_zero_V)."""
        z = self.force_zero_V if zero_V is None else zero_V
        return (volts - z) / self.adc_volts_per_newton

    def newtons_to_force_volts(self, force_N: float, zero_V: float | None = None) -> float:
        """ADC volts produced by a tension of `force_N` (used by the emulated device)."""
        z = self.force_zero_V if zero_V is None else zero_V
        return z + force_N * self.adc_volts_per_newton
