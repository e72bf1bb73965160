"""Opening the link to a device: a real rig, the emulator over a pty, or in-process.

* real rig (`port` set): the host opens the serial port; the microcontroller paces the loop.
* emulated over a pty (default): a separate process runs the emulated muscle behind a
  pseudo-terminal (`myotwin invitro emulate --pty`), and the host opens the pty's slave path
  with exactly the code it uses for a real serial port.
* in-process: the emulated device runs inside the host process on a virtual clock (fast,
  deterministic, for tests and parameter sweeps; not real time).

Start of a trial: the device waits for a trigger before its clock starts (the seed's rig
waited for a hardware trigger). The host sends one command holding the start length; the
emulator treats that first valid command as its trigger.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .calibration import Calibration
from .config import ExperimentConfig
from .safety import command_code
from .sched import loop_cpus
from .stimulation import StimulationSchedule
from .transport import InProcessLink, SerialTransport, Transport
from .wire import get_protocol


@dataclass
class DeviceLink:
    """An open link plus what the device reported about itself (emulated devices only)."""

    transport: Transport
    kind: str                                   # serial | pty-emulator | inprocess
    stats: dict = field(default_factory=dict)   # filled when the link closes
    device: object | None = None                # the in-process device


def send_trigger(link: DeviceLink, protocol_name: str, calibration: Calibration) -> None:
    """The start command: lever at the start length, no flags. Starts an emulated device."""
    proto = get_protocol(protocol_name)
    code = command_code(calibration.length_offset_V, calibration.length_min_V,
                        calibration.length_max_V)
    link.transport.write(proto.encode_command(0, code, 0))


def _emulator_command(cfg: ExperimentConfig, config_path: str | None, out_dir: Path,
                      stimulation: StimulationSchedule | None, loopback: bool,
                      rate_hz: float) -> list[str]:
    cmd = [sys.executable, "-m", "myotwin", "invitro", "emulate", "--pty",
           "--protocol", cfg.link.protocol, "--rate-hz", repr(rate_hz),
           "--seed", str(cfg.trial.seed),
           "--log", str(out_dir / "device.csv"), "--stats", str(out_dir / "device_stats.json")]
    if config_path:
        cmd += ["--config", str(config_path)]
    if cfg.link.realtime_priority:
        cmd += ["--realtime-priority"]
    cmd += ["--spin-s", repr(cfg.link.device_spin_s)]
    if cfg.link.pin_cpus and loop_cpus()[1] is not None:
        cmd += ["--cpu", str(loop_cpus()[1])]
    if cfg.link.protocol == "legacy" and stimulation is not None:
        cmd += ["--stim-onset-s", repr(stimulation.onset_s),
                "--stim-duration-s", repr(stimulation.duration_s)]
    if loopback and cfg.link.protocol == "legacy":   # framed echoes carry the LOOPBACK flag
        cmd += ["--loopback"]
    return cmd


@contextmanager
def open_device_link(cfg: ExperimentConfig, out_dir: Path, *, config_path: str | None = None,
                     inprocess: bool = False, stimulation: StimulationSchedule | None = None,
                     loopback: bool = False, faults=None) -> Iterator[DeviceLink]:
    """Open the link to the device chosen by `cfg.link` (see the module docstring)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rate_hz = 1.0 / cfg.link.period_s
    if cfg.link.port:
        try:
            t = SerialTransport(cfg.link.port, cfg.link.baudrate,
                                busy_poll_s=cfg.link.busy_poll_s)
        except OSError as e:                  # no such port, busy, no permission
            raise ValueError(f"link.port: {e}") from None
        try:
            yield DeviceLink(t, "serial")
        finally:
            t.close()
        return
    if inprocess:
        from .emulator import EmulatedDevice
        dev = EmulatedDevice(protocol=cfg.link.protocol, calibration=cfg.calibration,
                             stimulation=stimulation if cfg.link.protocol == "legacy" else None,
                             seed=cfg.trial.seed, period_s=cfg.link.period_s,
                             loopback_mode=loopback and cfg.link.protocol == "legacy")
        link = DeviceLink(InProcessLink(dev, faults=faults), "inprocess", device=dev)
        try:
            yield link
        finally:
            link.stats = dev.stats() if hasattr(dev, "stats") else {}
        return
    proc = subprocess.Popen(_emulator_command(cfg, config_path, out_dir, stimulation, loopback,
                                              rate_hz),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        if not line.startswith("PORT "):
            err = proc.stderr.read() if proc.poll() is not None else ""
            raise RuntimeError(f"emulator did not report its port (got {line!r}) {err}")
        t = SerialTransport(line[5:], cfg.link.baudrate, busy_poll_s=cfg.link.busy_poll_s)
        link = DeviceLink(t, "pty-emulator")
        try:
            yield link
        finally:
            t.close()
        link.stats = _collect_emulator(proc, out_dir / "device_stats.json")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _collect_emulator(proc: subprocess.Popen, stats_path: Path, timeout_s: float = 10.0) -> dict:
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return {"error": f"emulator did not exit within {timeout_s} s; killed"}
    deadline = time.monotonic() + 1.0
    while not stats_path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not stats_path.exists():
        return {"error": f"emulator exited with status {proc.returncode} without writing "
                         f"{stats_path.name}: {proc.stderr.read().strip()[-500:]}"}
    return json.loads(stats_path.read_text())
