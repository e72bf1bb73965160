"""Emulated in vitro-VR device: microcontroller + FPGA + ergometer lever + frog plantaris.

Data flow of one 1 ms tick (docs/invitro/emulator.md):

    host command (12-bit) -> volts -> lever target -> FPGA 60 Hz Butterworth -> lever servo
        (speed limit, stops) -> muscle length and velocity
    stimulus pulses -> active state -> activation  -/
    muscle force (Hill) -> 1 V/N -> FPGA 100 Hz Butterworth -> attenuation + offset -> noise
        -> 12-bit ADC -> sample to the host

Modules: `params` (values and sources), `activation`, `muscle`, `lever`, `filters` (physics),
`device` (the microcontroller's tick), `realtime` (pacing on a file descriptor).
"""

from myotwin.invitro.emulator.activation import Activation, zajac_rate, zajac_step
from myotwin.invitro.emulator.device import (
    LOG_COLUMNS,
    DeviceCounters,
    DeviceLog,
    EmulatedDevice,
)
from myotwin.invitro.emulator.filters import Biquad, butterworth2_lowpass
from myotwin.invitro.emulator.lever import Lever, expm2, servo_zoh
from myotwin.invitro.emulator.muscle import (
    Muscle,
    active_force_length,
    eccentric_constant,
    force_velocity,
    passive_force_length,
)
from myotwin.invitro.emulator.params import (
    ActivationParams,
    DeviceParams,
    EmulatorParams,
    ForceSensorParams,
    LeverParams,
    MuscleParams,
)
from myotwin.invitro.emulator.realtime import CSV_COLUMNS, DeviceRunStats, run_device_realtime

__all__ = [
    "Activation", "zajac_rate", "zajac_step",
    "LOG_COLUMNS", "DeviceCounters", "DeviceLog", "EmulatedDevice",
    "Biquad", "butterworth2_lowpass",
    "Lever", "expm2", "servo_zoh",
    "Muscle", "active_force_length", "eccentric_constant", "force_velocity", "passive_force_length",
    "ActivationParams", "DeviceParams", "EmulatorParams", "ForceSensorParams", "LeverParams",
    "MuscleParams",
    "CSV_COLUMNS", "DeviceRunStats", "run_device_realtime",
]
