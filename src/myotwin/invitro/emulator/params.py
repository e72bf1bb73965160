"""Parameters of the emulated device: muscle, activation, lever, force sensor, microcontroller.

Every field names its source. Tags follow notes/invitro-vr.md §5: **S** the seed paper
(Richards & Eberhard 2020), **V** read in the cited source, **R** a literature range not
verified against the source, **E** our own estimate (no source; a documented choice).
The full table with justifications is in docs/invitro/emulator.md.

All values are SI, with units in the names where a bare number would be ambiguous
(`*_rel` = relative to L0, F0 or Vmax as stated).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from myotwin.scalars import is_finite_number


#: Largest argument given to math.exp / math.expm1 (they raise OverflowError above 709.78):
#: the parameters whose exponentials the device computes are refused beyond it.
EXP_ARGUMENT_MAX = 700.0


def _check_positive(where: str, obj, names: tuple[str, ...], allow_zero: tuple[str, ...] = ()) -> None:
    for name in names:
        v = getattr(obj, name)
        ok = is_finite_number(v) and (v >= 0 if name in allow_zero else v > 0)
        if not ok:
            rel = ">= 0" if name in allow_zero else "> 0"
            raise ValueError(f"{where}: field '{name}' = {v!r}: expected a finite number {rel}")


@dataclass(frozen=True)
class MuscleParams:
    """Hill-type *Xenopus laevis* plantaris longus at 22 °C (docs/invitro/emulator.md §2)."""

    L0_m: float = 0.02408
    """Optimal fibre (muscle) length, m. S: peak twitch force length of the seed's PL."""
    F0_N: float = 1.5
    """Maximum isometric tetanic force at L0, N. E: 200-300 kPa (R) times the PL cross-section
    of a 30 g frog, and below the 2.2 N ergometer span (S); see the docs."""
    vmax_L0_per_s: float = 8.0
    """Maximum shortening velocity, L0/s. R: frog fast muscle 8-12 L0/s at 20-25 °C."""
    hill_a_rel: float = 0.25
    """Hill's a/P0 (curvature of the shortening hyperbola). V: Mashima et al. 1972."""
    ecc_force_max_rel: float = 1.5
    """Asymptotic force of the lengthening branch, F/F0. R (notes §5 default)."""
    ecc_slope_ratio: float = 2.0
    """Slope of the lengthening branch at v = 0 over that of the shortening branch. R: Katz
    (1939) found the lengthening slope about twice the shortening one."""
    fl_width_rel: float = 0.45
    """Active force-length half-width: f_L = exp(-((L/L0 - 1)/w)^2), so f_L = 1/e at
    L0(1 ± w). R: within 0.1 of Gordon, Huxley & Julian's (1966) plateau and descending
    limb over 1.0-1.6 L0 (optimum at 2.2 um)."""
    passive_slack_rel: float = 1.0
    """Passive force is zero below this length, L/L0. R (notes §5)."""
    passive_ref_length_rel: float = 1.2
    """Length at which the passive force equals `passive_ref_force_rel`, L/L0. R (notes §5)."""
    passive_ref_force_rel: float = 0.1
    """Passive force at `passive_ref_length_rel`, F/F0. R (notes §5: ~0.1 F0 at 1.2 L0)."""
    passive_shape: float = 10.0
    """Exponential shape of the passive curve, per unit strain. E."""
    see_enabled: bool = False
    """Series elastic element on (fibre length becomes a state). Off: the seed imposes the MTU
    strain on the muscle and the reproduction has no tendon (notes §5)."""
    see_slack_length_m: float = 0.00158
    """SEE slack length, m. E: the start length 25.66 mm minus L0, so that with the SEE on the
    fibre starts at L0 behind a just-slack SEE (aponeurosis and tendon stubs of the PL)."""
    see_strain_at_F0: float = 0.04
    """SEE strain at F0. R: 3-5 % (notes §5, Azizi & Roberts 2010)."""
    fiber_damping_rel: float = 0.1
    """Parallel fibre damping with the SEE, F0 per Vmax. Millard et al. 2013 (damped
    equilibrium model, beta = 0.1)."""

    def __post_init__(self) -> None:
        _check_positive("MuscleParams", self, (
            "L0_m", "F0_N", "vmax_L0_per_s", "hill_a_rel", "ecc_slope_ratio", "fl_width_rel",
            "passive_slack_rel", "passive_ref_force_rel", "passive_shape",
            "see_slack_length_m", "see_strain_at_F0", "fiber_damping_rel"))
        if not self.ecc_force_max_rel > 1.0:
            raise ValueError(f"MuscleParams: field 'ecc_force_max_rel' = {self.ecc_force_max_rel!r}: "
                             "expected > 1 (the lengthening branch rises above F0)")
        if not self.passive_ref_length_rel > self.passive_slack_rel:
            raise ValueError(f"MuscleParams: field 'passive_ref_length_rel' = "
                             f"{self.passive_ref_length_rel!r}: expected > passive_slack_rel "
                             f"({self.passive_slack_rel})")
        rise = self.passive_shape * (self.passive_ref_length_rel - self.passive_slack_rel)
        if not rise <= EXP_ARGUMENT_MAX:
            raise ValueError(f"MuscleParams: field 'passive_shape' = {self.passive_shape!r}: "
                             f"expected passive_shape * (passive_ref_length_rel - "
                             f"passive_slack_rel) <= {EXP_ARGUMENT_MAX:g}, got {rise:.6g} (the "
                             "passive curve's exp(passive_shape * strain) would overflow)")
        if not isinstance(self.see_enabled, bool):      # "no" would be true
            raise ValueError(f"MuscleParams: field 'see_enabled' = {self.see_enabled!r}: "
                             "expected True or False (a bool)")

    @property
    def vmax_m_per_s(self) -> float:
        return self.vmax_L0_per_s * self.L0_m


@dataclass(frozen=True)
class ActivationParams:
    """Pulse -> calcium-like active state -> activation (docs/invitro/emulator.md §3)."""

    tau_act_s: float = 0.010
    """Activation time constant, s. MuJoCo default (also Eberhard's frog muscles; notes §4)."""
    tau_deact_s: float = 0.040
    """Deactivation time constant, s. MuJoCo default (notes §4)."""
    release_plateau_s: float = 0.004
    """Time the active state stays saturated after one supramaximal pulse, s. E: chosen equal to
    the 250 Hz pulse period, so 250 Hz (Richards 2011, S) is the lowest fully fused rate."""
    release_decay_s: float = 0.020
    """Decay time constant of the active state after the plateau (Ca re-uptake), s. E: tuned so
    that a twitch peaks at 23 ms (R: 20-40 ms at 20-25 °C)."""

    def __post_init__(self) -> None:
        _check_positive("ActivationParams", self,
                        ("tau_act_s", "tau_deact_s", "release_plateau_s", "release_decay_s"),
                        allow_zero=("release_plateau_s",))
        least = self.release_plateau_s / EXP_ARGUMENT_MAX
        if not self.release_decay_s >= least:
            raise ValueError(f"ActivationParams: field 'release_decay_s' = "
                             f"{self.release_decay_s!r}: expected >= release_plateau_s / "
                             f"{EXP_ARGUMENT_MAX:g} = {least:.6g} s (the active state after a "
                             "pulse, exp(release_plateau_s / release_decay_s), would overflow)")


@dataclass(frozen=True)
class LeverParams:
    """Length path: FPGA low-pass, then the 305C-LR motor (docs/invitro/emulator.md §4)."""

    length_filter_hz: float = 60.0
    """Cutoff of the FPGA's 2nd-order Butterworth on the length signal, Hz. S."""
    servo_natural_hz: float = 400.0
    """Natural frequency of the lever position servo, Hz. E (300-500 Hz class of the 305C)."""
    servo_damping: float = 1.0
    """Damping ratio of the lever servo. E ("well damped"; the seed: speed depends on damping)."""
    max_speed_m_per_s: float = 0.4
    """Maximum lever speed, m/s. S: ~400 mm/s for the Aurora 305C-LR."""
    travel_min_m: float = -0.010
    """Lowest lever position relative to the start length, m. E (mechanical stop)."""
    travel_max_m: float = 0.010
    """Highest lever position relative to the start length, m. E (mechanical stop)."""

    def __post_init__(self) -> None:
        _check_positive("LeverParams", self,
                        ("length_filter_hz", "servo_natural_hz", "servo_damping", "max_speed_m_per_s"))
        if not (self.travel_min_m < 0.0 < self.travel_max_m):
            raise ValueError(f"LeverParams: travel [{self.travel_min_m}, {self.travel_max_m}] m: "
                             "expected travel_min_m < 0 < travel_max_m (the start length is inside)")


@dataclass(frozen=True)
class ForceSensorParams:
    """Force path after the muscle: FPGA low-pass, attenuation, noise, ADC."""

    filter_hz: float = 100.0
    """Cutoff of the FPGA's 2nd-order Butterworth on the force signal, Hz. S."""
    noise_V: float = 0.002
    """Standard deviation of white Gaussian noise at the ADC input, V. E (a few mV; the one
    saved run of the authors suggests ~30 mV, see the docs)."""

    def __post_init__(self) -> None:
        _check_positive("ForceSensorParams", self, ("filter_hz", "noise_V"), allow_zero=("noise_V",))


@dataclass(frozen=True)
class DeviceParams:
    """The microcontroller and the FPGA's clock."""

    fpga_rate_hz: float = 10_000.0
    """Physics sub-step rate = FPGA loop rate, Hz. S (10 kHz). Must be a multiple of the tick rate."""
    watchdog_ticks: int = 20
    """Ticks without a valid command after which the device trips. E."""
    ramp_s: float = 0.2
    """Minimum duration of the device's own return ramp to the start length, s. E."""
    ramp_max_speed_m_per_s: float = 0.05
    """Peak lever-target speed of that ramp, m/s (the ramp lengthens to respect it). E."""

    def __post_init__(self) -> None:
        _check_positive("DeviceParams", self, ("fpga_rate_hz", "ramp_s", "ramp_max_speed_m_per_s"),
                        allow_zero=("ramp_s",))
        w = self.watchdog_ticks
        if not (isinstance(w, int) and not isinstance(w, bool) and w >= 1):
            raise ValueError(f"DeviceParams: field 'watchdog_ticks' = {w!r}: expected an integer >= 1")


@dataclass(frozen=True)
class EmulatorParams:
    """Everything the emulated device needs besides the calibration and the stimulation."""

    muscle: MuscleParams = field(default_factory=MuscleParams)
    activation: ActivationParams = field(default_factory=ActivationParams)
    lever: LeverParams = field(default_factory=LeverParams)
    sensor: ForceSensorParams = field(default_factory=ForceSensorParams)
    device: DeviceParams = field(default_factory=DeviceParams)

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            expected = {"muscle": MuscleParams, "activation": ActivationParams, "lever": LeverParams,
                        "sensor": ForceSensorParams, "device": DeviceParams}[f.name]
            if not isinstance(v, expected):
                raise ValueError(f"EmulatorParams: field '{f.name}' = {v!r}: expected {expected.__name__}")
        nyquist = self.device.fpga_rate_hz / 2
        for name, cutoff in (("lever.length_filter_hz", self.lever.length_filter_hz),
                             ("sensor.filter_hz", self.sensor.filter_hz)):
            if not cutoff < nyquist:
                raise ValueError(f"EmulatorParams: field '{name}' = {cutoff!r}: expected below "
                                 f"half the FPGA rate device.fpga_rate_hz = "
                                 f"{self.device.fpga_rate_hz!r} Hz, {nyquist:g} Hz (the filter "
                                 "runs at that rate)")
