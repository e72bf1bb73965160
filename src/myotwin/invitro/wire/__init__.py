"""Wire protocols of the in vitro-VR link: one small packet per tick each way.

`get_protocol('framed')` (default: sync, seq, flags, CRC-16) or `get_protocol('legacy')`
(the authors' 3-byte packet). Byte layouts, test vectors and the bandwidth budget are in
docs/protocol.md.
"""

from __future__ import annotations

from myotwin.invitro.wire.codes import (
    CODE_MAX,
    N_CODES,
    V_MIN,
    V_SPAN,
    VOLTS_PER_CODE,
    code_to_volts,
    volts_to_code,
)
from myotwin.invitro.wire.framed import (
    COMMAND_SYNC,
    SAMPLE_SYNC,
    FramedDecoder,
    FramedProtocol,
    crc16_ccitt_false,
)
from myotwin.invitro.wire.legacy import TERMINATOR, LegacyDecoder, LegacyProtocol
from myotwin.invitro.wire.seq import SeqStep, SeqUnwrapper
from myotwin.invitro.wire.types import (
    COMMAND_END,
    COMMAND_LOOPBACK,
    COMMAND_SAFE,
    COMMAND_STIM_GATE,
    SAMPLE_ARMED,
    SAMPLE_LATE,
    SAMPLE_STIM,
    SAMPLE_TRIPPED,
    SEQ_MODULUS,
    Command,
    CommandFlag,
    Sample,
    SampleFlag,
    StreamDecoder,
    WireProtocol,
)

PROTOCOLS = {"framed": FramedProtocol, "legacy": LegacyProtocol}
"""Wire protocols by name; 'framed' is the default."""
DEFAULT_PROTOCOL = "framed"


def get_protocol(name: str = DEFAULT_PROTOCOL) -> WireProtocol:
    """The wire protocol called `name` ('framed' or 'legacy')."""
    try:
        cls = PROTOCOLS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"get_protocol: unknown wire protocol {name!r}; choices: {sorted(PROTOCOLS)}"
        ) from None
    return cls()


__all__ = [
    "CODE_MAX", "N_CODES", "V_MIN", "V_SPAN", "VOLTS_PER_CODE", "code_to_volts",
    "volts_to_code",
    "COMMAND_SYNC", "SAMPLE_SYNC", "TERMINATOR", "FramedDecoder", "FramedProtocol",
    "LegacyDecoder", "LegacyProtocol", "crc16_ccitt_false",
    "SeqStep", "SeqUnwrapper",
    "COMMAND_END", "COMMAND_LOOPBACK", "COMMAND_SAFE", "COMMAND_STIM_GATE", "SAMPLE_ARMED",
    "SAMPLE_LATE", "SAMPLE_STIM", "SAMPLE_TRIPPED", "SEQ_MODULUS", "Command", "CommandFlag",
    "Sample", "SampleFlag", "StreamDecoder", "WireProtocol",
    "DEFAULT_PROTOCOL", "PROTOCOLS", "get_protocol",
]
