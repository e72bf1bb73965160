"""Benchmark of the in vitro-VR loop: highest sustained closed-loop rate and host turnaround.

Runs, in one process and one run:
1. the peer: a bare `mujoco.mj_step` on our frog model (RK4), and our plant's `step()`
   (mj_step + inputs + the new state's kinematics), timed over many steps; and one tick of
   the emulated device (`EmulatedDevice.tick()`, 10 sub-steps of its 10 kHz physics, and the
   decoding of the host's command), which must stay well below the period for the emulator
   to run in real time;
2. for each rate: the real closed loop (the nominal condition: frog plant with its time step
   set to the period, emulated muscle in its own process over a pty, framed protocol, real
   time) and a loopback test at the same rate.
A rate is *sustained* when the trial completes with 0 missed ticks and |t_sim - t_real| never
exceeds one period. Prints a table with the ratios to the bare mj_step and writes JSON.

    .venv/bin/python benchmarks/invitro_loop.py [--rates 1000 2000 2500 5000 10000] [--out DIR]

Not a test: nothing here passes or fails; numbers go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.config import ExperimentConfig, LinkConfig, TrialConfig
from myotwin.invitro.emulator import EmulatedDevice
from myotwin.invitro.experiment import run_condition
from myotwin.invitro.frog.mjcf import KEY_START, load_frog_model
from myotwin.invitro.frog.plant import MujocoFrogPlant
from myotwin.invitro.frog.spec import FrogSpec
from myotwin.invitro.links import open_device_link, send_trigger
from myotwin.invitro.loopback import loopback_verdict, run_loopback
from myotwin.invitro.sched import realtime_section
from myotwin.invitro.wire import COMMAND_STIM_GATE, get_protocol, volts_to_code


def time_steps(step, n: int, repeats: int = 5) -> float:
    """Median over `repeats` of the mean time of one call over `n` calls (s)."""
    means = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        means.append((time.perf_counter() - t0) / n)
    return statistics.median(means)


def bare_mj_step_s(n: int) -> float:
    m = load_frog_model(FrogSpec())
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key(KEY_START).id)

    def step():
        if d.time > 0.3:
            mujoco.mj_resetDataKeyframe(m, d, m.key(KEY_START).id)
        mujoco.mj_step(m, d)
    return time_steps(step, n)


def plant_step_s(n: int) -> float:
    plant = MujocoFrogPlant(FrogSpec())

    def step():
        if plant.time_s() > 0.3:
            plant.reset()
        plant.step()
    return time_steps(step, n)


def emulator_tick_s(n: int) -> float:
    """One tick of the emulated device with the host's answer (rest length, stimulation
    gate on after 100 ticks: the muscle contracts), as in a trial; a fresh device every
    `n` ticks of each repeat."""
    rest = volts_to_code(Calibration().length_offset_V)
    state = {"dev": None, "k": 0}

    def tick():
        if state["k"] % n == 0:
            state["dev"] = EmulatedDevice()
        dev, k = state["dev"], state["k"]
        dev.tick()
        gate = COMMAND_STIM_GATE if k % n > 100 else 0
        dev.receive(dev.protocol.encode_command(k & 255, rest, gate))
        state["k"] += 1
    return time_steps(tick, n)


def pty_round_trip_s(n: int = 3000) -> dict:
    """The platform's floor: a 6-byte echo through a raw pty between two processes (blocking
    reads, one round trip per ms), i.e. two wake-ups and two kernel pty transfers."""
    import os
    import select
    from myotwin.invitro.transport import open_pty_pair
    master, slave_path = open_pty_pair()
    pid = os.fork()
    if pid == 0:                                   # the echo peer
        s = os.open(slave_path, os.O_RDWR | os.O_NOCTTY)
        while True:
            select.select([s], [], [])
            d = os.read(s, 64)
            if d == b"q":
                os._exit(0)
            os.write(s, d)
    time.sleep(0.2)
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        os.write(master, b"abcdef")
        got = b""
        while len(got) < 6:
            select.select([master], [], [])
            got += os.read(master, 64)
        lat.append(time.perf_counter() - t)
        while time.perf_counter() - t < 1e-3:
            pass
    os.write(master, b"q")
    os.waitpid(pid, 0)
    os.close(master)
    a = np.asarray(lat)
    return {"p50_s": float(np.percentile(a, 50)), "p99_s": float(np.percentile(a, 99)),
            "p999_s": float(np.percentile(a, 99.9)), "max_s": float(a.max()),
            "over_500us": int((a > 500e-6).sum()), "n": n}


def closed_loop(rate_hz: float, out: Path) -> dict:
    period = 1.0 / rate_hz
    cfg = ExperimentConfig(link=LinkConfig(period_s=period), trial=TrialConfig(duration_s=0.35))
    plant = MujocoFrogPlant(FrogSpec(timestep_s=period))
    s = run_condition("nominal", out, cfg, plant=plant)
    return {k: s[k] for k in ("ticks", "missed_ticks", "max_abs_tsim_minus_treal_s",
                              "turnaround_p50_s", "turnaround_p99_s", "ended", "message",
                              "realtime_priority")}


def loopback(rate_hz: float, ticks: int, out: Path) -> dict:
    cfg = ExperimentConfig(link=LinkConfig(period_s=1.0 / rate_hz))
    with open_device_link(cfg, out, loopback=True) as link:
        with realtime_section():
            send_trigger(link, "framed", cfg.calibration)
            host = run_loopback(link.transport, get_protocol("framed"), ticks, 1.0 / rate_hz)
    v = loopback_verdict(host, link.stats.get("device", link.stats), ticks, rate_hz)
    return {k: v[k] for k in ("passed", "max_error_lsb", "lost", "reordered", "ticks",
                              "missed_ticks", "turnaround_p50_s", "turnaround_p99_s")}


def conditions_record(reps: int, out: Path) -> dict:
    """The five conditions, `reps` times, real time at 1 kHz with the default settings."""
    from myotwin.invitro.conditions import CONDITIONS
    cfg = ExperimentConfig()
    rows = [run_condition(c, out / f"{c}_{r}", cfg) for r in range(reps) for c in CONDITIONS]
    return {"trials": len(rows), "ticks": sum(r["ticks"] for r in rows),
            "missed_ticks": sum(r["missed_ticks"] for r in rows),
            "trials_with_miss": sum(1 for r in rows if r["missed_ticks"]),
            "worst_abs_tsim_minus_treal_s": max(r["max_abs_tsim_minus_treal_s"] for r in rows),
            "turnaround_p99_median_s": float(np.median([r["turnaround_p99_s"] for r in rows]))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[1000, 2000, 2500, 5000, 10000])
    ap.add_argument("--loopback-seconds", type=float, default=2.0)
    ap.add_argument("--steps", type=int, default=20000, help="steps for the mj_step timing")
    ap.add_argument("--out", default=None, help="directory for the trial data and JSON")
    ap.add_argument("--conditions-reps", type=int, default=0,
                    help="also run the five conditions this many times at 1 kHz and count "
                         "missed ticks (the demo's real-time record)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="invitro_loop_"))
    bare = bare_mj_step_s(args.steps)
    ours = plant_step_s(args.steps)
    print(f"machine: {platform.machine()} {platform.processor() or ''} python "
          f"{platform.python_version()} mujoco {mujoco.__version__}")
    print(f"bare mj_step (frog, RK4):     {bare * 1e6:7.1f} us")
    print(f"plant.step (ours, same model): {ours * 1e6:7.1f} us  ({ours / bare:.2f} x mj_step)")
    device = emulator_tick_s(min(args.steps, 2000))
    print(f"emulated device tick:         {device * 1e6:7.1f} us  ({device / bare:.2f} x "
          f"mj_step; {device * 1e3 * 100:.1f} % of a 1 ms period)")
    pty = pty_round_trip_s()
    print(f"raw pty echo round trip:      p50 {pty['p50_s'] * 1e6:6.1f} us, p99 "
          f"{pty['p99_s'] * 1e6:6.1f} us, p99.9 {pty['p999_s'] * 1e6:6.1f} us, max "
          f"{pty['max_s'] * 1e6:6.0f} us, {pty['over_500us']} of {pty['n']} over 500 us")
    rows, best_loop, best_lb = [], None, None
    for rate in args.rates:
        tag = f"{rate:g}Hz"
        cl = closed_loop(rate, out / f"loop_{tag}")
        lb = loopback(rate, int(args.loopback_seconds * rate), out / f"loopback_{tag}")
        ok = (cl["ended"] == "completed" and cl["missed_ticks"] == 0
              and cl["max_abs_tsim_minus_treal_s"] <= 1.0 / rate)
        best_loop = rate if ok else best_loop
        best_lb = rate if lb["passed"] and lb["missed_ticks"] == 0 else best_lb
        rows.append({"rate_hz": rate, "closed_loop": cl, "closed_loop_sustained": ok,
                     "loopback": lb})
        print(f"{tag:>8}: loop ticks {cl['ticks']:5d} missed {cl['missed_ticks']:3d} "
              f"max|tsim-treal| {cl['max_abs_tsim_minus_treal_s'] * rate:5.2f} ticks "
              f"turnaround p50 {cl['turnaround_p50_s'] * 1e6:6.1f} us "
              f"({cl['turnaround_p50_s'] / bare:4.1f} x mj_step) p99 "
              f"{cl['turnaround_p99_s'] * 1e6:6.1f} us {'SUSTAINED' if ok else cl['ended']} | "
              f"loopback {lb['ticks']} ticks passed={lb['passed']} missed {lb['missed_ticks']} "
              f"p99 {lb['turnaround_p99_s'] * 1e6:5.1f} us", flush=True)
        time.sleep(0.3)
    reps = conditions_record(args.conditions_reps, out / "conditions") \
        if args.conditions_reps else None
    if reps:
        print(f"five conditions x {args.conditions_reps} at 1 kHz: {reps['trials']} trials, "
              f"{reps['ticks']} ticks, {reps['missed_ticks']} missed ({reps['trials_with_miss']} "
              f"trials with a miss), worst |t_sim - t_real| "
              f"{reps['worst_abs_tsim_minus_treal_s'] * 1e3:.3f} ms, turnaround p99 median "
              f"{reps['turnaround_p99_median_s'] * 1e6:.0f} us")
    result = {"conditions_record": reps, "bare_mj_step_s": bare, "plant_step_s": ours,
              "emulator_tick_s": device, "pty_round_trip": pty,
              "highest_sustained_closed_loop_hz": best_loop,
              "highest_passing_loopback_hz": best_lb, "rates": rows,
              "command": " ".join(sys.argv)}
    (out / "invitro_loop.json").write_text(json.dumps(result, indent=2, default=float))
    print(f"highest sustained closed-loop rate: {best_loop} Hz; loopback: {best_lb} Hz")
    print(f"data: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
