"""Handlers of `myotwin invitro ...` (argument parsing is in `main.py`)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path


def _config(args):
    from myotwin.invitro.config import PERIOD_RANGE_S, load_config
    cfg = load_config(getattr(args, "config", None))
    link = cfg.link
    if getattr(args, "port", None):
        link = dataclasses.replace(link, port=args.port)
    if getattr(args, "protocol", None):
        link = dataclasses.replace(link, protocol=args.protocol)
    rate = getattr(args, "rate_hz", None)
    if rate is not None:
        lo, hi = PERIOD_RANGE_S      # link.period_s's range, stated as a rate
        if not 1.0 / hi <= rate <= 1.0 / lo:
            raise ValueError(f"--rate-hz = {rate}: expected a rate from {1.0 / hi:g} to "
                             f"{1.0 / lo:g} Hz (a period of {lo:g} to {hi:g} s)")
        link = dataclasses.replace(link, period_s=1.0 / rate)
    return dataclasses.replace(cfg, link=link)


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def cmd_show_config(args) -> int:
    from myotwin.invitro.config import config_to_toml
    print(config_to_toml(_config(args)))
    return 0


def _check_emulate_options(args) -> None:
    """The emulator's own options, refused before the port opens (any failure later would
    come only once a host has connected and the trial started). A spin as long as the tick
    period or longer busy-waits through every tick, which is allowed. --cpu is checked against
    the machine's CPUs, not this process's affinity: a host that pinned itself to one CPU
    starts the emulator with that mask, and the emulator may still move to another CPU."""
    if args.max_ticks is not None and args.max_ticks < 1:
        raise ValueError(f"--max-ticks = {args.max_ticks}: expected >= 1")
    if not (math.isfinite(args.spin_s) and args.spin_s >= 0.0):
        raise ValueError(f"--spin-s = {args.spin_s}: expected a time >= 0 s")
    n_cpus = os.cpu_count()
    if args.cpu is not None and n_cpus is not None and not 0 <= args.cpu < n_cpus:
        raise ValueError(f"--cpu = {args.cpu}: this machine has CPUs 0 to {n_cpus - 1}")
    if args.stim_onset_s is not None and args.protocol != "legacy":
        raise ValueError(f"--stim-onset-s with --protocol {args.protocol}: the device's own "
                         "stimulation schedule is for the legacy protocol (the framed "
                         "protocol's stimulation comes from the host's commands)")


def cmd_emulate(args) -> int:
    """An emulated rig on a new pty: prints `PORT <path>`, waits for the host's first command
    (the trigger), then ticks in real time until the host ends the trial or goes away."""
    from myotwin.invitro.emulator import EmulatedDevice, run_device_realtime
    from myotwin.invitro.sched import realtime_section
    from myotwin.invitro.stimulation import StimulationSchedule
    from myotwin.invitro.transport import open_pty_pair, pty_slave_is_open
    cfg = _config(args)
    _check_emulate_options(args)
    stim = None
    if args.stim_onset_s is not None:
        stim = StimulationSchedule(onset_s=args.stim_onset_s, duration_s=args.stim_duration_s)
    device = EmulatedDevice(protocol=args.protocol, calibration=cfg.calibration,
                            stimulation=stim, seed=args.seed, period_s=cfg.link.period_s,
                            loopback_mode=args.loopback)
    master, slave = open_pty_pair()
    print(f"PORT {slave}", flush=True)
    deadline = time.monotonic() + 60.0
    while not pty_slave_is_open(master):          # wait for the host to open the port
        if time.monotonic() > deadline:
            print("myotwin emulate: nobody opened the port within 60 s", file=sys.stderr)
            return 1
        time.sleep(0.001)
    with realtime_section(fifo=False):       # the runner asks for SCHED_FIFO itself
        stats = run_device_realtime(device, master, n_ticks=args.max_ticks, log_path=args.log,
                                    wait_for_command=True, start_timeout_s=60.0,
                                    realtime_priority=args.realtime_priority,
                                    cpu=args.cpu, spin_s=args.spin_s)
    out = {"device": device.stats(), "realtime": stats.to_dict()}
    if args.stats:
        tmp = Path(args.stats + ".tmp")
        tmp.write_text(json.dumps(out, indent=2, default=float) + "\n")
        os.replace(tmp, args.stats)
    else:
        print(json.dumps(out, default=float))
    os.close(master)
    return 0


def cmd_loopback(args) -> int:
    from myotwin.invitro.links import open_device_link, send_trigger
    from myotwin.invitro.experiment import host_cpu
    from myotwin.invitro.loopback import loopback_verdict, run_loopback
    from myotwin.invitro.sched import realtime_section
    from myotwin.invitro.wire import get_protocol
    cfg = _config(args)
    out = Path(args.out)
    if args.ticks <= 0:
        raise ValueError(f"--ticks = {args.ticks}: expected > 0")
    proto = get_protocol(cfg.link.protocol)
    with open_device_link(cfg, out, config_path=args.config, inprocess=args.inprocess,
                          loopback=True) as link:
        with realtime_section(cfg.link.realtime_priority, host_cpu(cfg)):
            send_trigger(link, cfg.link.protocol, cfg.calibration)
            host = run_loopback(link.transport, proto, args.ticks, cfg.link.period_s)
    device = link.stats.get("device", link.stats)
    result = loopback_verdict(host, device, args.ticks, 1.0 / cfg.link.period_s)
    _write_json(out / "summary.json", result)
    print(json.dumps({k: result[k] for k in ("passed", "max_error_lsb", "lost", "reordered",
                                             "ticks", "missed_ticks", "turnaround_p99_s")}))
    return 0 if result["passed"] else 3


def cmd_run(args) -> int:
    from myotwin.invitro.experiment import run_condition
    cfg = _config(args)
    summary = run_condition(args.condition, Path(args.out), cfg, config_path=args.config,
                            inprocess=args.inprocess)
    print(json.dumps(summary, indent=2))
    return 0 if summary["ended"] == "completed" else 3


def cmd_conditions(args) -> int:
    from myotwin.invitro.experiment import run_conditions
    cfg = _config(args)
    summary = run_conditions(Path(args.out), cfg, config_path=args.config,
                             inprocess=args.inprocess, only=args.only,
                             video=not args.no_video)
    for c in summary["conditions"]:
        to = "none" if c["takeoff_time_s"] is None else f"{c['takeoff_time_s'] * 1e3:.0f} ms"
        print(f"{c['name']:>15}: jump {c['jump_height_m'] * 1e3:6.1f} mm, takeoff "
              f"{to}, peak force {c['peak_force_N']:.3f} N, strain range "
              f"{c['mtu_strain_range']:.3f}, ticks {c['ticks']}, missed {c['missed_ticks']}, "
              f"|t_sim - t_real| <= {c['max_abs_tsim_minus_treal_s'] * 1e3:.3f} ms, "
              f"turnaround p99 {c['turnaround_p99_s'] * 1e6:.0f} us")
    print(f"report: {Path(args.out) / 'report.md'}")
    return 0 if all(c["ended"] == "completed" for c in summary["conditions"]) else 3


def cmd_replay_legacy(args) -> int:
    from myotwin.invitro.frog.legacy import replay_legacy_command
    result = replay_legacy_command(args.directory, args.out)
    print(json.dumps(result, indent=2, default=float))
    return 0

