"""Serial-port transport (pyserial): real hardware, and the emulator's pseudo-terminal.

pyserial opens and configures the port (baud rate, raw 8N1, no flow control, exclusive lock
on POSIX). On POSIX the bytes then go through the port's file descriptor with select(), whose
timeout resolution is a microsecond: pyserial's own read(timeout) works too on Linux, but
each call re-arms select and wraps EOF into a SerialException, and its timeout must be set
per call. Where the port has no file descriptor (Windows), pyserial's read/write are used.
"""

from __future__ import annotations

import time

import serial

from myotwin.invitro.transport.base import LinkClosed
from myotwin.invitro.transport.fd import FdTransport


class SerialTransport:
    """Transport over a serial port path (e.g. /dev/ttyACM0, /dev/ttyUSB0, a pty slave, COM3)."""

    def __init__(self, port: str, baudrate: int = 115200, name: str | None = None, *,
                 write_timeout_s: float = 0.5, busy_poll_s: float = 0.0) -> None:
        self.name = name if name is not None else port
        self.port = port
        try:
            self._serial = serial.Serial(port, baudrate, timeout=0, write_timeout=write_timeout_s,
                                         exclusive=True)
        except ValueError as err:
            raise ValueError(f"cannot open serial port {port!r} at {baudrate!r} baud: {err}") \
                from err
        except OSError as err:  # serial.SerialException is an OSError
            raise OSError(f"cannot open serial port {port!r} at {baudrate!r} baud: {err}") \
                from err
        self.baudrate = baudrate
        self._fd_link: FdTransport | None = None
        try:
            fd = self._serial.fileno()
        except (AttributeError, OSError, NotImplementedError):
            fd = None
        if fd is not None:
            self._fd_link = FdTransport(fd, self.name, write_timeout_s=write_timeout_s,
                                        owns_fd=False, busy_poll_s=busy_poll_s)
        self._pyserial_timeout_s: float | None = 0.0

    def write(self, data: bytes) -> None:
        if self._fd_link is not None:
            self._fd_link.write(data)
            return
        try:
            self._serial.write(data)
        except serial.SerialTimeoutException as err:
            raise TimeoutError(f"{self.name}: write of {len(data)} bytes timed out") from err
        except (serial.SerialException, OSError) as err:
            raise LinkClosed(f"{self.name}: peer gone ({err})") from err

    def read(self, timeout_s: float) -> bytes:
        if self._fd_link is not None:
            return self._fd_link.read(timeout_s)
        return self._read_pyserial(timeout_s)

    def _read_pyserial(self, timeout_s: float) -> bytes:
        ser = self._serial
        try:
            timeout_s = max(0.0, timeout_s)
            if timeout_s != self._pyserial_timeout_s:
                ser.timeout = timeout_s
                self._pyserial_timeout_s = timeout_s
            data = ser.read(1)
            if data:
                waiting = ser.in_waiting
                if waiting:
                    data += ser.read(waiting)
            return data
        except (serial.SerialException, OSError) as err:
            raise LinkClosed(f"{self.name}: peer gone ({err})") from err

    def now_s(self) -> float:
        return time.perf_counter()

    def close(self) -> None:
        if self._fd_link is not None:
            self._fd_link.close()  # marks closed; the descriptor belongs to pyserial
        self._serial.close()

    def __enter__(self) -> "SerialTransport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SerialTransport(port={self.port!r}, baudrate={self.baudrate})"
