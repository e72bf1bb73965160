"""12-bit converter codes <-> volts, shared by both wire protocols.

The authors' Arduino Due link compresses a voltage into a 12-bit code over a fixed window
(notes/invitro-vr.md §3.3): code k = round((v - V_MIN) / V_SPAN * 4096), with V_MIN = -0.05 V
and V_SPAN = 3.38 V, so one code is 0.825 mV. We keep that window so an existing rig works
unchanged, and fix the 2017 overflow: the top code is clamped to 4095 instead of wrapping to 0.
"""

from __future__ import annotations

N_BITS = 12
N_CODES = 1 << N_BITS  # 4096
CODE_MAX = N_CODES - 1
V_MIN = -0.05
V_SPAN = 3.38
VOLTS_PER_CODE = V_SPAN / N_CODES  # 0.825 mV


def volts_to_code(volts: float) -> int:
    """Nearest 12-bit code for `volts`, clamped to [0, 4095] (never wraps)."""
    if volts != volts:  # NaN
        raise ValueError("volts_to_code: voltage is NaN")
    k = int(round((volts - V_MIN) / VOLTS_PER_CODE))
    return 0 if k < 0 else (CODE_MAX if k > CODE_MAX else k)


def code_to_volts(code: int) -> float:
    """Voltage represented by a 12-bit code."""
    if not 0 <= code <= CODE_MAX:
        raise ValueError(f"code_to_volts: code {code} outside [0, {CODE_MAX}]")
    return code * VOLTS_PER_CODE + V_MIN
