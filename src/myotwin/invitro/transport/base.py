"""The byte-pipe interface between the host loop and a device (real, emulated or in-process).

A transport moves bytes only; packet boundaries are the business of `myotwin.invitro.wire`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class LinkClosed(Exception):
    """The peer went away (EOF, EIO, serial disconnect). The message names the port or path."""


@runtime_checkable
class Transport(Protocol):
    """A bidirectional byte link with its own clock."""

    name: str
    """Port, path or label, used in error messages."""

    def write(self, data: bytes) -> None:
        """Send all of `data`; raises LinkClosed if the peer is gone."""
        ...

    def read(self, timeout_s: float) -> bytes:
        """At least one byte available now or within `timeout_s`, else b"" (timeout).

        Raises LinkClosed if the peer is gone."""
        ...

    def now_s(self) -> float:
        """This link's clock in seconds: perf_counter for real links, virtual in-process."""
        ...

    def close(self) -> None:
        """Release the link; idempotent."""
        ...
