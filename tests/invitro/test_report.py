"""The report of a trial set (myotwin.invitro.report, .video) on synthetic trials.

Each synthetic trial is a jump whose numbers are known in closed form: the COM accelerates
uniformly in stance and flies a ballistic parabola after takeoff, so the apex height above the
start is h = z_to - z0 + vz^2 / (2 g); the stance MTU strain is a half cosine of range R; the
force a sin^2 burst of peak F. The trial metrics are computed from the rows by
`experiment.trial_metrics`, as in a real run, and the report must show those numbers.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from myotwin.invitro.experiment import trial_metrics
from myotwin.invitro.frog.mjcf import start_qpos
from myotwin.invitro.frog.plant import MujocoFrogPlant
from myotwin.invitro.host import LOOP_COLUMNS
from myotwin.invitro.report import (FIGURES, TABLE_COLUMNS, check_findings, load_trial,
                                    write_report)
from myotwin.invitro.video import camera_fit, frame_rows, render_videos

G = 9.81
DT = 1e-3
Z0 = 0.015                       # COM height at t = 0 (m)
NAMES = ("nominal", "control1", "control2", "delayed", "origin_shifted")
STIM = {"nominal": 0.020, "delayed": 0.060, "origin_shifted": 0.020}
# Stick points relative to the COM (m): a crouched frog, toe first, snout last.
STICK_OFFSETS = {"toe": (-0.005, -0.012), "tmt": (-0.012, -0.010), "ankle": (0.015, -0.003),
                 "knee": (-0.012, 0.0), "hip": (0.017, 0.001), "snout": (0.030, 0.002)}

HOLD = {"nominal": (0.060, 0.25), "control1": (0.020, 0.10), "control2": (0.030, 0.20),
        "delayed": (0.050, 0.30), "origin_shifted": (0.045, 0.08)}
"""(jump height m, stance strain range) per condition: every finding of the seed holds."""
FAIL = {"nominal": (0.030, 0.25), "control1": (0.020, 0.10), "control2": (0.015, 0.20),
        "delayed": (0.039, 0.30), "origin_shifted": (0.045, 0.20)}
"""Every finding fails: stimulated < 2 x control1, control2 < control1, shifted strain large."""


@pytest.fixture(scope="module")
def channel_names() -> tuple[str, ...]:
    return tuple(MujocoFrogPlant().channel_names)


def _takeoff_speed(h: float, t_to: float) -> float:
    """vz at takeoff for apex height h: h = vz t_to / 2 (stance) + vz^2 / (2 g) (flight)."""
    a, b, c = 1 / (2 * G), t_to / 2, -h
    return (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)


def _rows(name: str, h: float, strain_range: float, channels, n: int, t_to: float,
          peak_N: float = 1.2, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    k = np.arange(n)
    t_sim, t = k * DT, (k + 1) * DT               # force at t_sim, state after the step at t
    vz, vx = _takeoff_speed(h, t_to), 0.4
    stance = t < t_to
    z_to = Z0 + 0.5 * vz * t_to
    com_z = np.where(stance, Z0 + 0.5 * (vz / t_to) * t**2,
                     z_to + vz * (t - t_to) - 0.5 * G * (t - t_to) ** 2)
    com_x = vx * t
    cols = {c: np.zeros(n) for c in (*LOOP_COLUMNS, *channels)}
    cols.update(tick=k.astype(float), device_tick=k.astype(float), t_sim_s=t_sim,
                t_real_s=t_sim + rng.uniform(-50e-6, 80e-6, n), turnaround_s=rng.uniform(1e-4, 3e-4, n),
                t_plant_s=t, com_x_m=com_x, com_z_m=com_z, floor_contacts=stance.astype(float))
    on = STIM.get(name)
    burst = ((t_sim >= on) & (t_sim < on + 0.08)) if on is not None else np.zeros(n, bool)
    cols["measured_tension_N"] = np.where(burst, peak_N * np.sin(np.pi * (t_sim - (on or 0)) / 0.08) ** 2,
                                          0.02)
    cols["mtu_strain"] = np.where(stance, -strain_range * 0.5 * (1 - np.cos(np.pi * t / t_to)),
                                  -strain_range)
    for p, (dx, dz) in STICK_OFFSETS.items():
        cols[f"{p}_x_m"], cols[f"{p}_z_m"] = com_x + dx, com_z + dz
    q0 = start_qpos()
    for i, q in enumerate(q0):
        cols[f"qpos_{i}"] = np.full(n, q)
    cols["qpos_0"], cols["qpos_2"] = com_x, q0[2] + (com_z - Z0)
    return cols


def _write_trial(d, name, cols, metrics_extra, channels, ramp_rows: int = 3) -> dict:
    d.mkdir(parents=True)
    header = (*LOOP_COLUMNS, *channels)
    data = np.column_stack([cols[c] for c in header])
    ramp = np.full((ramp_rows, len(header)), np.nan)
    ramp[:, header.index("state")] = 1
    ramp[:, header.index("tick")] = data[-1, 0] + 1 + np.arange(ramp_rows)
    np.savetxt(d / "ticks.csv", np.vstack([data, ramp]), delimiter=",",
               header=",".join(header), comments="")
    ticks = {c: cols[c] for c in header}
    ta = cols["turnaround_s"]
    m = {"name": name, **trial_metrics(ticks), "ticks": len(ta), "missed_ticks": 0,
         "max_abs_tsim_minus_treal_s": float(np.max(np.abs(cols["t_real_s"] - cols["t_sim_s"]))),
         "turnaround_p50_s": float(np.percentile(ta, 50)),
         "turnaround_p99_s": float(np.percentile(ta, 99)), "clamped_ticks": 0,
         "ended": "completed", "trip": None, "message": "", **metrics_extra}
    on = STIM.get(name)
    m["condition"] = {"description": f"synthetic {name}", "muscle_present": name != "control1",
                      "origin_offset_m": 0.008 if name == "origin_shifted" else 0.0,
                      "stimulation": None if on is None else
                      {"onset_s": on, "duration_s": 0.08, "frequency_hz": 250.0}}
    (d / "trial.json").write_text(json.dumps(m))
    (d / "events.jsonl").write_text(json.dumps({"tick": 7, "kind": "clamp_start",
                                                "message": f"synthetic event of {name}"}) + "\n")
    return m


def make_trial_set(out, cases, channels, n: int = 200, t_to: float = 0.06, extra=None):
    """Write out/<name>/ and out/summary.json for `cases` (name -> (height, strain range))."""
    entries = []
    for i, (name, (h, r)) in enumerate(cases.items()):
        cols = _rows(name, h, r, channels, n, t_to, seed=i)
        entries.append(_write_trial(out / name, name, cols, (extra or {}).get(name, {}), channels))
    summary = [{k: v for k, v in e.items() if k != "condition"} for e in entries]
    (out / "summary.json").write_text(json.dumps({"conditions": summary}))
    return {e["name"]: e for e in entries}


def _table(md: str, first_header: str) -> list[list[str]]:
    lines = md.splitlines()
    i = next(j for j, ln in enumerate(lines) if ln.startswith(f"| {first_header}"))
    rows = []
    for ln in lines[i + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]])
    return rows


def test_report_files_and_table_match_inputs(tmp_path, channel_names):
    metrics = make_trial_set(tmp_path, HOLD, channel_names)
    path = write_report(tmp_path, list(NAMES), video=False)
    assert path == tmp_path / "report.md" and path.exists()
    for rel in FIGURES.values():
        png = (tmp_path / rel).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, f"figure {rel} missing or empty"
    rows = {r[0]: dict(zip(TABLE_COLUMNS, r)) for r in _table(path.read_text(), "condition")}
    assert list(rows) == list(NAMES)
    for name, (h, r) in HOLD.items():
        row, m = rows[name], metrics[name]
        # Against the closed form: the apex falls between 1 ms samples, so the sampled height is
        # low by at most g (dt/2)^2 / 2 = 1.2 um; the table rounds to 0.1 mm.
        assert abs(float(row["jump height (mm)"]) - h * 1e3) <= 0.05 + 2e-3, f"{name} height"
        assert float(row["takeoff (ms)"]) == pytest.approx(60.0), f"{name} takeoff"
        # Strain range over stance: the first row is 1 ms in, R (1 - cos(pi/60)) / 2 short.
        assert abs(float(row["MTU strain range"]) - r) <= 5e-4 + r * 2e-3, f"{name} strain range"
        assert float(row["peak force (N)"]) == pytest.approx(m["peak_force_N"], abs=5e-4)
        assert int(row["ticks"]) == m["ticks"] == 200 and int(row["missed ticks"]) == 0
        assert float(row["max \\|t_sim - t_real\\| (ms)"]) == pytest.approx(
            m["max_abs_tsim_minus_treal_s"] * 1e3, abs=5e-4), f"{name} max |t_sim - t_real|"
        assert float(row["turnaround p99 (us)"]) == pytest.approx(m["turnaround_p99_s"] * 1e6,
                                                                  abs=0.05), f"{name} p99"
        assert row["ended"] == "completed"
    text = path.read_text()
    assert "synthetic event of origin_shifted" in text and "Videos not rendered" in text
    for rel in FIGURES.values():
        assert f"]({rel})" in text


def _verdicts(md: str) -> list[str]:
    return [r[-1].strip("*") for r in _table(md, "finding")]


def test_findings_hold(tmp_path, channel_names):
    make_trial_set(tmp_path, HOLD, channel_names)
    md = write_report(tmp_path, list(NAMES), video=False).read_text()
    assert _verdicts(md) == ["holds"] * 4


def test_findings_do_not_hold_and_caveats(tmp_path, channel_names):
    extra = {"nominal": {"ended": "tripped", "message": "tick 199: instability: synthetic"}}
    make_trial_set(tmp_path, FAIL, channel_names, extra=extra)
    md = write_report(tmp_path, list(NAMES), video=False).read_text()
    assert _verdicts(md) == ["does not hold"] * 4
    assert "tick 199: instability: synthetic" in md


def test_check_findings_boundaries():
    def m(h, r=0.2, takeoff=0.06, ended="completed", apex=0.15):
        return {"jump_height_m": h, "mtu_strain_range": r, "takeoff_time_s": takeoff,
                "ended": ended, "ticks": 300 if ended == "completed" else 107, "apex_time_s": apex}

    # Exactly twice the control is "at least twice"; equal heights are not "higher".
    checks = check_findings({"nominal": m(0.04, 0.2), "delayed": m(0.04), "control1": m(0.02),
                             "control2": m(0.02), "origin_shifted": m(0.03, 0.1)})
    assert [c.holds for c in checks] == [True, True, False, False]
    # A missing condition is not evaluated; a trial without takeoff is flagged.
    checks = check_findings({"nominal": m(0.04), "origin_shifted": m(0.0, 0.05, takeoff=None)})
    assert [c.verdict for c in checks] == ["not evaluated"] * 3 + ["holds"]
    assert "origin_shifted: no takeoff" in checks[3].notes[0]
    # A trial that tripped with its apex at its last tick (still rising): a lower bound; one
    # that tripped after the apex: no caveat.
    rising = check_findings({"nominal": m(0.05, ended="tripped", apex=0.107),
                             "control1": m(0.02)})[0]
    assert rising.holds and rising.notes == ("nominal: tripped at tick 107 while the COM was "
                                             "still rising; its height is a lower bound",)
    fallen = check_findings({"nominal": m(0.05, ended="tripped", apex=0.09),
                             "control1": m(0.02)})[0]
    assert fallen.notes == ()


def test_report_survives_missing_trial_data(tmp_path, channel_names):
    make_trial_set(tmp_path, HOLD, channel_names)
    (tmp_path / "origin_shifted" / "ticks.csv").unlink()
    path = write_report(tmp_path, list(NAMES), video=False)
    assert all((tmp_path / rel).exists() for rel in FIGURES.values())
    text = path.read_text()
    assert "figure failed" not in text and "| origin_shifted |" in text
    tr = load_trial(tmp_path, "origin_shifted")
    assert tr.n_rows == 0 and tr.takeoff_row is None


def test_video_skipped_without_gl(tmp_path, channel_names, capsys):
    make_trial_set(tmp_path, {"nominal": HOLD["nominal"]}, channel_names, n=40)
    path = write_report(tmp_path, ["nominal"], gl_backends=("no-such-gl", "no-such-gl-2"))
    line = next(ln for ln in path.read_text().splitlines() if ln.startswith("video skipped"))
    assert line.startswith("video skipped: no OpenGL backend (tried no-such-gl, no-such-gl-2): ")
    assert "invalid value for environment variable MUJOCO_GL" in line
    assert line in capsys.readouterr().err
    assert not (tmp_path / "videos" / "nominal.gif").exists()


def test_video_gif_frames(tmp_path, channel_names):
    n = 120
    make_trial_set(tmp_path, {"nominal": HOLD["nominal"]}, channel_names, n=n)
    res = render_videos(tmp_path, ["nominal"])
    if res.skipped:
        pytest.skip(res.skipped)
    from PIL import Image

    expected = math.ceil(n / 5)                   # one frame per 5 ms of 1 ms ticks
    assert res.errors == {} and res.frames == {"nominal": expected}
    with Image.open(tmp_path / "videos" / "nominal.gif") as im:
        assert im.n_frames == expected and im.size == (320, 240)


def test_frame_rows_and_camera_fit():
    assert frame_rows(np.arange(1, 121) * 1e-3).tolist() == list(range(0, 120, 5))
    assert frame_rows(np.arange(1, 11) * 2e-3, 0.005).tolist() == [0, 2, 4, 6, 8]   # k = 2.5 -> 2
    ticks = {f"{p}_{c}_m": np.array(v) for p in STICK_OFFSETS
             for c, v in (("x", [0.0, 0.2]), ("z", [0.0, 0.1]))}
    lookat, dist = camera_fit(ticks, fovy_deg=45.0, aspect=4 / 3, margin_m=0.0)
    half_h = dist * math.tan(math.radians(22.5))
    # Every point is inside the view rectangle at the look-at depth.
    assert lookat[0] - 4 / 3 * half_h <= 0.0 and lookat[0] + 4 / 3 * half_h >= 0.2
    assert lookat[2] - half_h <= 0.0 and lookat[2] + half_h >= 0.1
