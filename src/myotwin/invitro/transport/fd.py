"""Raw file-descriptor transport and pseudo-terminal pairs (for the device emulator).

Timeouts use select.select, whose timeout has microsecond resolution; poll and epoll round
up to whole milliseconds, a full tick at 1 kHz. (Descriptors >= FD_SETSIZE fall back to poll.)
"""

from __future__ import annotations

import errno
import os
import select
import termios
import time

from myotwin.invitro.transport.base import LinkClosed

READ_CHUNK = 4096
_GONE_ERRNOS = {errno.EIO, errno.EPIPE, errno.ENXIO, errno.ENODEV, errno.ECONNRESET}


def _wait(fd: int, for_write: bool, timeout_s: float) -> bool:
    """True when `fd` is ready (readable or writable) within `timeout_s`."""
    timeout_s = max(0.0, timeout_s)
    try:
        if for_write:
            return bool(select.select([], [fd], [], timeout_s)[1])
        return bool(select.select([fd], [], [], timeout_s)[0])
    except ValueError:  # fd >= FD_SETSIZE: poll, with millisecond resolution
        poller = select.poll()
        poller.register(fd, select.POLLOUT if for_write else select.POLLIN)
        return bool(poller.poll(timeout_s * 1e3))


class FdTransport:
    """Transport over a raw file descriptor (pty master/slave, tty, pipe, socket).

    The descriptor is switched to non-blocking mode. EOF or EIO on read, and EIO/EPIPE on
    write, raise LinkClosed. A write that cannot complete within `write_timeout_s` (peer not
    reading, output buffer full) raises TimeoutError. With `owns_fd` (default) close() closes
    the descriptor.
    """

    def __init__(self, fd: int, name: str, *, write_timeout_s: float = 0.5,
                 owns_fd: bool = True, busy_poll_s: float = 0.0) -> None:
        if not isinstance(fd, int) or fd < 0:
            raise ValueError(f"FdTransport {name!r}: fd = {fd!r}: expected a non-negative int")
        if not write_timeout_s > 0:
            raise ValueError(f"FdTransport {name!r}: write_timeout_s = {write_timeout_s!r}: "
                             "expected > 0")
        os.set_blocking(fd, False)
        self.fd = fd
        self.name = name
        self.write_timeout_s = write_timeout_s
        self.busy_poll_s = float(busy_poll_s)
        """Spin on non-blocking reads this long before sleeping in select (0: never spin)."""
        self._owns_fd = owns_fd
        self._closed = False

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise LinkClosed(f"{self.name}: {what} after close()")

    def _gone(self, what: str, err: OSError | None) -> LinkClosed:
        why = "end of file" if err is None else f"{errno.errorcode.get(err.errno, err.errno)}"
        return LinkClosed(f"{self.name}: peer gone ({why} on {what})")

    def write(self, data: bytes) -> None:
        """Write all of `data`, waiting for buffer space up to `write_timeout_s` in total."""
        self._check_open("write")
        try:
            n = os.write(self.fd, data)  # usual case: a few bytes, all accepted at once
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as err:
            if err.errno in _GONE_ERRNOS:
                raise self._gone("write", err) from err
            raise
        if n == len(data):
            return
        view = memoryview(data)[n:]
        deadline = None
        while view:
            try:
                n = os.write(self.fd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            except OSError as err:
                if err.errno in _GONE_ERRNOS:
                    raise self._gone("write", err) from err
                raise
            now = time.perf_counter()
            if deadline is None:
                deadline = now + self.write_timeout_s
            if now >= deadline:
                raise TimeoutError(f"{self.name}: write of {len(data)} bytes timed out after "
                                   f"{self.write_timeout_s} s ({len(view)} bytes unsent)")
            _wait(self.fd, True, deadline - now)

    def read(self, timeout_s: float) -> bytes:
        """Bytes available now, or the first ones arriving within `timeout_s`; b"" on timeout.

        A zero-byte read means end of file only after select() reported the descriptor
        readable: a tty in non-blocking mode with VMIN = 0 (as pyserial configures ports)
        also returns zero bytes when there is simply no data yet.
        """
        self._check_open("read")
        data = self._read_once()
        if data:
            return data
        if self.busy_poll_s > 0:               # spin: no sleep/wake-up latency
            end = time.perf_counter() + min(timeout_s, self.busy_poll_s)
            # A tty with VMIN = 0 returns b"" when empty: that is "no data yet" here; end of
            # file (readable and empty) is told apart by select() below.
            while time.perf_counter() < end:
                data = self._read_once()
                if data:
                    return data
            timeout_s = max(0.0, timeout_s - self.busy_poll_s)
        if not _wait(self.fd, False, timeout_s):
            return b""
        data = self._read_once()
        if data is None:  # spurious wake-up
            return b""
        if not data:
            raise self._gone("read", None)
        return data

    def _read_once(self) -> bytes | None:
        """os.read without blocking: None when nothing is there (EAGAIN)."""
        try:
            return os.read(self.fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as err:
            if err.errno in _GONE_ERRNOS:
                raise self._gone("read", err) from err
            raise

    def now_s(self) -> float:
        return time.perf_counter()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owns_fd:
                os.close(self.fd)

    def __enter__(self) -> "FdTransport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FdTransport(fd={self.fd}, name={self.name!r})"


def set_raw(fd: int) -> None:
    """Put the terminal `fd` in raw mode, like cfmakeraw(3): every byte value passes unchanged
    (no echo, no canonical lines, no CR/NL translation, no XON/XOFF, no signal characters),
    8 data bits, read returns as soon as one byte is there."""
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(fd)
    iflag &= ~(termios.IGNBRK | termios.BRKINT | termios.PARMRK | termios.ISTRIP | termios.INLCR
               | termios.IGNCR | termios.ICRNL | termios.IXON | termios.IXOFF | termios.IXANY
               | termios.INPCK | getattr(termios, "IUCLC", 0) | getattr(termios, "IMAXBEL", 0))
    oflag &= ~termios.OPOST
    lflag &= ~(termios.ECHO | termios.ECHONL | termios.ECHOE | termios.ECHOK | termios.ICANON
               | termios.ISIG | termios.IEXTEN)
    cflag &= ~(termios.CSIZE | termios.PARENB)
    cflag |= termios.CS8 | termios.CREAD | termios.CLOCAL
    cc = list(cc)
    cc[termios.VMIN] = 1
    cc[termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, [iflag, oflag, cflag, lflag, ispeed, ospeed, cc])


def open_pty_pair() -> tuple[int, str]:
    """A pseudo-terminal in raw mode: (master_fd, slave_path).

    The device side (emulator) keeps `master_fd` (e.g. FdTransport(master_fd, ...)); the host
    opens `slave_path` like a serial port (SerialTransport). Our own slave descriptor is closed
    before returning, so the master sees the host open and close the slave. On Linux, while no
    process has the slave open (not yet, or no longer), reads on the master fail with EIO
    (LinkClosed) and bytes written to the master wait in the slave's input queue (up to ~4 kB);
    use `pty_slave_is_open(master_fd)` to wait for the host. Raw settings persist across
    re-opens of the slave.
    """
    master_fd, slave_fd = os.openpty()
    try:
        slave_path = os.ttyname(slave_fd)
        set_raw(slave_fd)
        set_raw(master_fd)  # on Linux this sets the same (slave-side) termios; harmless
    except BaseException:
        os.close(master_fd)
        raise
    finally:
        os.close(slave_fd)
    return master_fd, slave_path


def pty_slave_is_open(master_fd: int) -> bool:
    """Whether some process has the slave of this pty master open (no hang-up on the master)."""
    poller = select.poll()
    poller.register(master_fd, select.POLLHUP)
    return not any(ev & select.POLLHUP for _, ev in poller.poll(0))
