"""Byte transports between the host loop and a device: serial port, pty, in-process.

A transport moves bytes and keeps a clock; packets are `myotwin.invitro.wire`'s business.
"""

from __future__ import annotations

from myotwin.invitro.transport.base import LinkClosed, Transport
from myotwin.invitro.transport.fd import FdTransport, open_pty_pair, pty_slave_is_open, set_raw
from myotwin.invitro.transport.faults import FaultKind, FaultPlan
from myotwin.invitro.transport.inprocess import InProcessLink, TickPeer
from myotwin.invitro.transport.serial_port import SerialTransport

__all__ = [
    "LinkClosed", "Transport", "FdTransport", "open_pty_pair", "pty_slave_is_open", "set_raw",
    "FaultKind", "FaultPlan", "InProcessLink", "TickPeer", "SerialTransport",
]
