"""Running the seed's conditions: one trial per condition, data and summary on disk.

Per trial directory (`DIR/<condition>/`): `ticks.csv` (every tick, all channels, written as
produced), `events.jsonl` (safety actions and link events with their ticks), `config.toml`
(the settings used), `trial.json` (the metrics of docs/invitro/metrics.md), and for the
emulated rig `device.csv` + `device_stats.json` (the device's own per-tick record).
`run_conditions` adds `DIR/summary.json` (the contract of the issue) and the report.
"""

from __future__ import annotations

import dataclasses
import json
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from .conditions import CONDITIONS, get_condition
from .config import ExperimentConfig, config_to_toml
from .frog.metrics import takeoff_index
from .frog.plant import MujocoFrogPlant
from .frog.spec import FrogSpec
from .host import HostLoop, TrialSpec
from .links import open_device_link, send_trigger
from .recorder import Recorder
from .sched import loop_cpus, realtime_section
from .wire import get_protocol

SUMMARY_FIELDS = ("name", "jump_height_m", "takeoff_time_s", "peak_force_N", "mtu_strain_range",
                  "ticks", "missed_ticks", "max_abs_tsim_minus_treal_s", "turnaround_p99_s")


def load_ticks(path: Path) -> dict[str, np.ndarray]:
    """Columns of a `ticks.csv` as float arrays."""
    with open(path) as f:
        names = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {n: data[:, i] for i, n in enumerate(names)} if data.size else \
        {n: np.empty(0) for n in names}


def trial_metrics(ticks: dict[str, np.ndarray]) -> dict:
    """Jump and muscle metrics of one trial from its closed-loop rows (docs/invitro/metrics.md)."""
    run = ticks["state"] == 0
    if not run.any():
        return {"jump_height_m": 0.0, "takeoff_time_s": None, "peak_force_N": 0.0,
                "mtu_strain_range": 0.0, "apex_time_s": None}
    t = ticks["t_sim_s"][run]
    t_state = ticks["t_plant_s"][run]            # the state after each step
    com_z = ticks["com_z_m"][run]
    i_to = takeoff_index(ticks["floor_contacts"][run] > 0)
    end = len(t) if i_to is None else i_to + 1
    strain = ticks["mtu_strain"][run][:end]
    i_apex = None if i_to is None else i_to + int(np.argmax(com_z[i_to:]))
    return {
        "jump_height_m": 0.0 if i_to is None else float(com_z[i_apex] - com_z[0]),
        "takeoff_time_s": None if i_to is None else round(float(t_state[i_to]), 9),
        "apex_time_s": None if i_apex is None else round(float(t_state[i_apex]), 9),
        "peak_force_N": float(np.max(ticks["measured_tension_N"][run])),
        "mtu_strain_range": float(np.ptp(strain)),
        "forward_distance_m": float(ticks["com_x_m"][run][-1] - ticks["com_x_m"][run][0]),
    }


def run_condition(name: str, out: Path, cfg: ExperimentConfig, *, config_path: str | None = None,
                  inprocess: bool = False, faults=None, plant=None) -> dict:
    """Run one condition into `out`; returns its summary entry (see SUMMARY_FIELDS)."""
    cfg.check_closed_loop()
    cond = get_condition(name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.toml").write_text(config_to_toml(cfg))
    export_stimulation(cond.stimulation, out)
    if plant is None:
        plant = MujocoFrogPlant(FrogSpec(origin_offset_m=cond.origin_offset_m))
    n_ticks = int(round(cfg.trial.duration_s / cfg.link.period_s))
    trial = TrialSpec(cond.name, n_ticks, cond.muscle_present, cond.stimulation)
    proto = get_protocol(cfg.link.protocol)
    with open_device_link(cfg, out, config_path=config_path, inprocess=inprocess,
                          stimulation=cond.stimulation, faults=faults) as link:
        loop = HostLoop(plant, link.transport, proto, cfg.calibration, cfg.safety,
                        cfg.link.period_s)
        with Recorder(out, loop.columns) as rec, \
                realtime_section(cfg.link.realtime_priority, host_cpu(cfg)) if not inprocess \
                else nullcontext(False) as fifo:
            _warm_up(plant)
            result = loop.run(trial, rec, start=lambda: send_trigger(
                link, cfg.link.protocol, cfg.calibration))
    metrics = trial_metrics(load_ticks(out / "ticks.csv"))
    ta = np.asarray(result.turnaround_s)
    device = link.stats.get("device", link.stats)
    summary = {
        "name": cond.name,
        **metrics,
        "ticks": result.ticks,
        "missed_ticks": int(max(result.missed_ticks + result.lost_samples,
                                device.get("missed_ticks", 0))),
        "max_abs_tsim_minus_treal_s": result.max_abs_tsim_minus_treal_s,
        "turnaround_p50_s": float(np.percentile(ta, 50)) if ta.size else None,
        "turnaround_p99_s": float(np.percentile(ta, 99)) if ta.size else None,
        "clamped_ticks": result.clamped_ticks,
        "ended": result.ended,
        "trip": dataclasses.asdict(result.trip) if result.trip else None,
        "message": result.message,
        "period_s": cfg.link.period_s,
        "frog_spec": dataclasses.asdict(getattr(plant, "spec", None))
        if dataclasses.is_dataclass(getattr(plant, "spec", None)) else None,
        "link": link.kind,
        "protocol": cfg.link.protocol,
        "realtime_priority": bool(fifo),
        "device": device,
        "condition": {"description": cond.description, "muscle_present": cond.muscle_present,
                      "origin_offset_m": cond.origin_offset_m,
                      "stimulation": cond.stimulation.to_dict() if cond.stimulation else None},
    }
    (out / "trial.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    return summary


def run_conditions(out: Path, cfg: ExperimentConfig, *, config_path: str | None = None,
                   inprocess: bool = False, only: list[str] | None = None,
                   video: bool = True) -> dict:
    """All five conditions (or `only` these), then `summary.json` and the report."""
    names = only or list(CONDITIONS)
    for n in names:
        get_condition(n)                      # reject unknown names before running any
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for n in names:
        entries.append(run_condition(n, out / n, cfg, config_path=config_path,
                                     inprocess=inprocess))
        time.sleep(0.2)                       # let the emulator process of the trial exit
    summary = {"conditions": [{k: e[k] for k in SUMMARY_FIELDS} | {
        k: e[k] for k in e if k not in SUMMARY_FIELDS
        and k not in ("device", "condition", "frog_spec")}
        for e in entries]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    from .report import write_report
    write_report(out, [e["name"] for e in entries], video=video)
    return summary


def export_stimulation(stim, out: Path) -> None:
    """The trial's stimulation for a real rig's stimulator: `stimulation.json` (the schedule)
    and `stimulation_pulses.csv` (one pulse start time per line, s from t_sim = 0). With the
    framed protocol the host also carries the train's gate bit in every command."""
    (out / "stimulation.json").write_text(json.dumps(
        stim.to_dict() if stim else None, indent=2) + "\n")
    with open(out / "stimulation_pulses.csv", "w") as f:
        f.write("pulse_start_s\n")
        for t in (stim.pulse_times_s() if stim else []):
            f.write(f"{t:.6f}\n")


def host_cpu(cfg: ExperimentConfig) -> int | None:
    """The CPU the host pins itself to during a trial (None: no pinning)."""
    return loop_cpus()[0] if cfg.link.pin_cpus else None


def _warm_up(plant) -> None:
    """Run every code path of a tick once before the clock starts, then reset the plant."""
    plant.set_muscle_tension(0.0)
    plant.step()
    plant.fault()
    plant.channels()
    plant.reset()

