"""Report of a set of in vitro-VR trials (docs/invitro/report.md).

`write_report(out, names)` reads `out/summary.json` and, per condition, `out/<name>/`
(`ticks.csv`, `trial.json`, `events.jsonl`), and writes into `out/`:

* `figures/jumps.png`        COM trajectories and stick figures (seed Fig. 2E)
* `figures/force_length.png` force and MTU strain up to takeoff (seed Fig. 3A, 3B)
* `figures/timing.png`       t_real - t_sim and host turnaround per tick (seed Fig. 1D)
* `videos/<name>.gif`        side-view replay of each trial (`video.py`, own process)
* `report.md`                summary table, the seed's findings checked on the numbers,
                             links to the figures and videos, safety events per trial.

Time bases (host.py): a row of tick k holds the force sampled at t_sim = k dt and the plant
state *after* the step, at t_plant = (k + 1) dt. Force is drawn against t_sim, kinematics and
MTU strain against t_plant; takeoff is `trial.json` takeoff_time_s, a t_plant time.
Only closed-loop rows (state 0) are used: ramp rows carry no simulation.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory

from .experiment import load_ticks
from .video import GL_BACKENDS, SLOWDOWN, STICK_POINTS, VideoJob, VideoResult

STICK_EARLY_S = 0.020
"""Time of the grey stick figure (seed Fig. 2E: "at 20ms (grey) and at the time of takeoff")."""
DEFAULT_PERIOD_S = 0.001
"""Loop period assumed for trials whose trial.json predates the `period_s` field (1 kHz)."""
PANEL_A = ("nominal", "control1", "delayed")
PANEL_B = ("nominal", "origin_shifted")
STYLES: dict[str, dict] = {                  # seed Fig. 3: nominal black, control1 black dashed,
    "nominal": {"color": "k", "ls": "-"},    # delayed grey dashed; the rest ours
    "control1": {"color": "k", "ls": "--"},
    "control2": {"color": "k", "ls": ":"},
    "delayed": {"color": "0.55", "ls": "--"},
    "origin_shifted": {"color": "#b2182b", "ls": "-."},
}
_EXTRA_STYLES = [{"color": c, "ls": "-"} for c in ("#2166ac", "#1b7837", "#762a83", "#e08214")]
FIGURES = {"jumps": "figures/jumps.png", "force_length": "figures/force_length.png",
           "timing": "figures/timing.png"}


# -- data ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrialData:
    """One trial as the report sees it."""

    name: str
    metrics: dict
    """trial.json, overridden by the trial's summary.json entry (the numbers of the table)."""
    ticks: dict[str, np.ndarray]
    """Closed-loop rows only (state == 0), every column of ticks.csv."""
    events: tuple[dict, ...]

    @property
    def n_rows(self) -> int:
        return len(self.ticks.get("tick", ()))

    def row_at(self, t_plant_s: float | None) -> int | None:
        """Row whose plant time is nearest `t_plant_s` (None without rows or time)."""
        if t_plant_s is None or self.n_rows == 0:
            return None
        return int(np.argmin(np.abs(self.ticks["t_plant_s"] - t_plant_s)))

    @property
    def takeoff_row(self) -> int | None:
        return self.row_at(self.metrics.get("takeoff_time_s"))

    @property
    def stance_end(self) -> int:
        """Rows [0, stance_end) are shown "prior to takeoff" (all rows without takeoff)."""
        i = self.takeoff_row
        return self.n_rows if i is None else i + 1


def load_trial(out: Path, name: str, summary_entry: dict | None = None) -> TrialData:
    """Read `out/<name>/`; missing files give empty metrics, rows or events (never raise)."""
    d = Path(out) / name
    metrics = json.loads((d / "trial.json").read_text()) if (d / "trial.json").exists() else {}
    metrics = {**metrics, **(summary_entry or {})}
    ticks: dict[str, np.ndarray] = {}
    if (d / "ticks.csv").exists():
        rows = load_ticks(d / "ticks.csv")
        if "state" in rows:
            run = rows["state"] == 0
            ticks = {k: v[run] for k, v in rows.items()}
    events = []
    if (d / "events.jsonl").exists():
        events = [json.loads(ln) for ln in (d / "events.jsonl").read_text().splitlines()
                  if ln.strip()]
    return TrialData(name, metrics, ticks, tuple(events))


def _style(name: str, names: list[str]) -> dict:
    if name in STYLES:
        return STYLES[name]
    extra = [n for n in names if n not in STYLES]
    return _EXTRA_STYLES[extra.index(name) % len(_EXTRA_STYLES)] if name in extra else {}


# -- findings -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One finding of the seed (Results) tested on our numbers."""

    finding: str
    evidence: str
    holds: bool | None
    """None when a condition it needs is missing."""
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return {True: "holds", False: "does not hold", None: "not evaluated"}[self.holds]


def _height_caveat(name: str, m: dict) -> list[str]:
    """Why a jump height may understate the jump: no takeoff, or the trial ended (tripped,
    disconnected) while the COM was still rising (apex at the last closed-loop tick)."""
    if m.get("takeoff_time_s") is None:
        return [f"{name}: no takeoff before the trial ended ({m.get('ended', '?')}); "
                "height counted as 0"]
    period = m.get("period_s") or DEFAULT_PERIOD_S
    t_end = (m.get("ticks") or 0) * period                 # t_plant of the last closed-loop row
    apex = m.get("apex_time_s")
    if m.get("ended", "completed") != "completed" and apex is not None \
            and apex >= t_end - 1.5 * period:
        return [f"{name}: {m.get('ended')} at tick {m.get('ticks')} while the COM was still "
                "rising; its height is a lower bound"]
    return []


def check_findings(metrics: dict[str, dict]) -> list[Check]:
    """The seed's findings (Results), each evaluated on `metrics` (name -> trial metrics with
    jump_height_m, mtu_strain_range, takeoff_time_s, ended, ticks)."""
    checks = []
    h = {n: m.get("jump_height_m") for n, m in metrics.items()}
    for stim in ("nominal", "delayed"):
        finding = f"{stim} jumps at least twice as high as control1 (\"at least twice the height\")"
        if h.get(stim) is None or h.get("control1") is None:
            checks.append(Check(finding, "missing condition", None))
            continue
        checks.append(Check(
            finding, f"{h[stim] * 1e3:.1f} mm vs 2 x {h['control1'] * 1e3:.1f} = "
                     f"{2 * h['control1'] * 1e3:.1f} mm",
            bool(h[stim] >= 2 * h["control1"]),
            tuple(_height_caveat(stim, metrics[stim]) + _height_caveat("control1",
                                                                       metrics["control1"]))))
    finding = "control2 (passive muscle) jumps higher than control1 (muscle absent)"
    if h.get("control2") is None or h.get("control1") is None:
        checks.append(Check(finding, "missing condition", None))
    else:
        checks.append(Check(
            finding, f"{h['control2'] * 1e3:.1f} mm vs {h['control1'] * 1e3:.1f} mm",
            bool(h["control2"] > h["control1"]),
            tuple(_height_caveat("control2", metrics["control2"])
                  + _height_caveat("control1", metrics["control1"]))))
    checks.append(_strain_check(metrics))
    return checks


def _strain_check(metrics: dict[str, dict]) -> Check:
    finding = ("origin_shifted stays nearly isometric in stance: MTU strain range below half "
               "of nominal's")
    s = {n: metrics.get(n, {}).get("mtu_strain_range") for n in ("origin_shifted", "nominal")}
    if None in s.values():
        return Check(finding, "missing condition", None)
    notes = tuple(f"{n}: no takeoff, range over the whole closed loop"
                  for n in s if metrics[n].get("takeoff_time_s") is None)
    return Check(finding, f"{s['origin_shifted']:.3f} vs 0.5 x {s['nominal']:.3f} = "
                          f"{0.5 * s['nominal']:.3f}",
                 bool(s["origin_shifted"] < 0.5 * s["nominal"]), notes)


# -- figures ------------------------------------------------------------------------------
def _save(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)


def _stick(tr: TrialData, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Polyline toe-tmt-ankle-knee-hip-snout of row i, (x, z) in mm."""
    return (np.array([tr.ticks[f"{p}_x_m"][i] for p in STICK_POINTS]) * 1e3,
            np.array([tr.ticks[f"{p}_z_m"][i] for p in STICK_POINTS]) * 1e3)


def _jump_limits(trials: list[TrialData]) -> tuple[tuple[float, float], tuple[float, float]]:
    xs = [tr.ticks[f"{p}_x_m"] for tr in trials for p in STICK_POINTS + ("com",)]
    zs = [tr.ticks[f"{p}_z_m"] for tr in trials for p in STICK_POINTS + ("com",)]
    x, z = np.concatenate(xs) * 1e3, np.concatenate(zs) * 1e3
    pad = 0.05 * max(np.nanmax(x) - np.nanmin(x), np.nanmax(z), 1.0)
    return (np.nanmin(x) - pad, np.nanmax(x) + pad), (min(np.nanmin(z), 0.0) - pad,
                                                       np.nanmax(z) + pad)


def jumps_figure(trials: list[TrialData], path: Path) -> None:
    """Seed Fig. 2E: COM trajectories of all conditions, then one panel per condition with
    its trajectory and stick figures at 20 ms (grey) and at takeoff (black)."""
    trials = [tr for tr in trials if tr.n_rows]
    names = [tr.name for tr in trials]
    n_cols = 3
    n_rows = max(1, -(-(len(trials) + 1) // n_cols))
    xlim, zlim = _jump_limits(trials) if trials else ((0, 1), (0, 1))
    panel_h = 4.1 * (zlim[1] - zlim[0]) / (xlim[1] - xlim[0]) + 0.75   # equal axes + titles
    fig = Figure(figsize=(13, 0.5 + panel_h * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, sharex=True, sharey=True, squeeze=False).ravel()
    for ax in axes:
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlim(xlim), ax.set_ylim(zlim)
    ax0 = axes[0]
    for tr in trials:
        ax0.plot(tr.ticks["com_x_m"] * 1e3, tr.ticks["com_z_m"] * 1e3, lw=1.5,
                 label=tr.name, **_style(tr.name, names))
    ax0.set_title("COM trajectories, all conditions", fontsize=10)
    if trials:
        ax0.legend(fontsize=8, loc="upper right")
    for ax, tr in zip(axes[1:], trials):
        _jump_panel(ax, tr, names)
    for ax in axes[len(trials) + 1:]:
        ax.set_visible(False)
    for ax in axes[::n_cols]:
        ax.set_ylabel("z (mm)")
    for ax in axes[-n_cols:]:
        ax.set_xlabel("x (mm)")
    fig.suptitle("Jump trajectories (COM) and stick figures at 20 ms (grey) and at takeoff "
                 "(black)", fontsize=11)
    _save(fig, path)


def _jump_panel(ax, tr: TrialData, names: list[str]) -> None:
    st = _style(tr.name, names)
    ax.plot(tr.ticks["com_x_m"] * 1e3, tr.ticks["com_z_m"] * 1e3, lw=1.2, **st)
    early, to = tr.row_at(STICK_EARLY_S), tr.takeoff_row
    for i, color in ((early, "0.6"), (to, "k")):
        if i is not None:
            x, z = _stick(tr, i)
            ax.plot(x, z, "-o", color=color, lw=1.6, ms=2.5)
            ax.plot(tr.ticks["com_x_m"][i] * 1e3, tr.ticks["com_z_m"][i] * 1e3, "o",
                    mfc="white", mec=color, ms=5)
    m = tr.metrics
    h = m.get("jump_height_m")
    head = f"{tr.name}: height {h * 1e3:.1f} mm" if h is not None else tr.name
    head += f", takeoff {m['takeoff_time_s'] * 1e3:.0f} ms" if to is not None else ", no takeoff"
    if m.get("ended", "completed") != "completed":
        ax.plot(tr.ticks["com_x_m"][-1] * 1e3, tr.ticks["com_z_m"][-1] * 1e3, "x", color="r",
                ms=7, mew=1.5)
        head += f"\n{m.get('ended')} at tick {m.get('ticks')} (x)"
    ax.set_title(head, fontsize=9)


def force_length_figure(trials: dict[str, TrialData], path: Path) -> None:
    """Seed Fig. 3: force (top) and MTU strain (bottom) up to takeoff; A stimulation timing
    (nominal, control1, delayed), B moment arm (nominal, origin_shifted)."""
    fig = Figure(figsize=(12, 6.5), layout="constrained")
    axes = fig.subplots(2, 2, sharex="col", height_ratios=(1.2, 1))
    names = list(trials)
    for col, (label, group) in enumerate((("A  stimulation timing", PANEL_A),
                                          ("B  muscle origin (knee moment arm)", PANEL_B))):
        ax_f, ax_s = axes[0, col], axes[1, col]
        present = [trials[n] for n in group if n in trials and trials[n].n_rows]
        for tr in present:
            _force_length_traces(ax_f, ax_s, tr, names)
        _stimulation_bars(ax_f, present, names)
        missing = [n for n in group if n not in trials or not trials[n].n_rows]
        ax_f.set_title(label + (f"   (missing: {', '.join(missing)})" if missing else ""),
                       loc="left", fontsize=10)
        ax_f.set_ylabel("force (N)")
        ax_s.set_ylabel("MTU strain (%)")
        ax_s.set_xlabel("time (ms)")
        ax_s.axhline(0.0, color="0.8", lw=0.8)
        if present:
            ax_s.legend(fontsize=8, loc="lower left")
        ax_f.margins(y=0.2)
    fig.suptitle("Muscle force and MTU strain, shown up to takeoff (arrows); bars: stimulation",
                 fontsize=11)
    _save(fig, path)


def _force_length_traces(ax_f, ax_s, tr: TrialData, names: list[str]) -> None:
    st, end = _style(tr.name, names), tr.stance_end
    t_f = tr.ticks["t_sim_s"][:end] * 1e3
    t_s = tr.ticks["t_plant_s"][:end] * 1e3
    force = tr.ticks["measured_tension_N"][:end]
    stim = tr.metrics.get("condition", {}).get("stimulation")
    label = tr.name + (f", stim {stim['onset_s'] * 1e3:.0f}-"
                       f"{(stim['onset_s'] + stim['duration_s']) * 1e3:.0f} ms" if stim else "")
    m = tr.metrics
    label += (f", takeoff {m['takeoff_time_s'] * 1e3:.0f} ms" if tr.takeoff_row is not None
              else ", no takeoff")
    ax_f.plot(t_f, force, lw=1.4, **st)
    ax_s.plot(t_s, tr.ticks["mtu_strain"][:end] * 100, lw=1.4, label=label, **st)
    if tr.takeoff_row is not None:                # arrow down onto the force at takeoff
        ax_f.annotate("", xy=(t_f[-1], force[-1]), xytext=(0, 28), textcoords="offset points",
                      arrowprops={"arrowstyle": "-|>", "color": st.get("color", "k"), "lw": 1.3})
    else:
        ax_f.plot(t_f[-1:], force[-1:], "x", color="r", ms=7, mew=1.5)
        ax_f.annotate(f"{tr.name}: no takeoff", (t_f[-1], force[-1]), xytext=(4, -10),
                      textcoords="offset points", fontsize=7, color="r")


def _stimulation_bars(ax, trials: list[TrialData], names: list[str]) -> None:
    """One bar per stimulated condition (onset to onset + duration) along the top edge."""
    stimulated = [(tr, tr.metrics.get("condition", {}).get("stimulation")) for tr in trials]
    stimulated = [(tr, s) for tr, s in stimulated if s]
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for k, (tr, s) in enumerate(stimulated):
        y = 0.96 - 0.05 * k
        t0, t1 = s["onset_s"] * 1e3, (s["onset_s"] + s["duration_s"]) * 1e3
        st = _style(tr.name, names)
        ax.plot([t0, t1], [y, y], transform=trans, color=st.get("color", "k"), lw=4,
                solid_capstyle="butt", alpha=0.8)
        if k == 0:
            ax.text(t0 - 1, y, "stim", transform=trans, fontsize=8, va="center", ha="right")


def timing_figure(trials: list[TrialData], path: Path) -> None:
    """Seed Fig. 1D: t_real - t_sim and host turnaround per tick (us), with the 1-tick bound."""
    fig = Figure(figsize=(11, 6), layout="constrained")
    ax_d, ax_t = fig.subplots(2, 1, sharex=True)
    names = [tr.name for tr in trials]
    bound_us = max((tr.metrics.get("period_s") or DEFAULT_PERIOD_S) for tr in trials) * 1e6
    for tr in [tr for tr in trials if tr.n_rows]:
        st = _style(tr.name, names)
        dt_us = (tr.ticks["t_real_s"] - tr.ticks["t_sim_s"]) * 1e6
        ta_us = tr.ticks["turnaround_s"] * 1e6
        ax_d.plot(tr.ticks["tick"], dt_us, lw=1, label=f"{tr.name} (max |.| "
                  f"{np.nanmax(np.abs(dt_us)):.1f} us)", **st)
        ax_t.plot(tr.ticks["tick"], ta_us, lw=1, label=f"{tr.name} (p99 "
                  f"{np.nanpercentile(ta_us, 99):.1f} us)", **st)
    lo, hi = ax_d.get_ylim()
    ax_d.set_ylim(min(lo, -0.1 * bound_us), max(hi, 1.15 * bound_us))
    ax_t.set_ylim(0, max(1.15 * bound_us, ax_t.get_ylim()[1]))
    for ax in (ax_d, ax_t):
        for b in (bound_us, -bound_us):
            if ax.get_ylim()[0] < b < ax.get_ylim()[1]:
                ax.axhline(b, color="r", lw=1, ls="--")
        ax.text(0.995, bound_us, f"1 tick ({bound_us / 1e3:g} ms)", color="r", fontsize=8, ha="right",
                va="bottom", transform=blended_transform_factory(ax.transAxes, ax.transData))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax_d.set_ylabel("t_real - t_sim (us)")
    ax_t.set_ylabel("host turnaround (us)")
    ax_t.set_xlabel("tick (closed loop)")
    fig.suptitle("Real-time validation: each sample arrives on its tick, the host answers "
                 "within the tick", fontsize=11)
    _save(fig, path)


# -- report.md ----------------------------------------------------------------------------
TABLE_COLUMNS = ("condition", "jump height (mm)", "takeoff (ms)", "peak force (N)",
                 "MTU strain range", "ticks", "missed ticks", "max \\|t_sim - t_real\\| (ms)",
                 "turnaround p99 (us)", "ended")


def _num(v, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if v is None else f"{v * scale:.{digits}f}"


def table_row(m: dict) -> list[str]:
    """The summary table's cells for one trial's metrics (units and digits of TABLE_COLUMNS)."""
    return [m.get("name", "?"), _num(m.get("jump_height_m"), 1e3, 1),
            _num(m.get("takeoff_time_s"), 1e3, 0), _num(m.get("peak_force_N"), 1, 3),
            _num(m.get("mtu_strain_range"), 1, 3), str(m.get("ticks", "-")),
            str(m.get("missed_ticks", "-")), _num(m.get("max_abs_tsim_minus_treal_s"), 1e3, 3),
            _num(m.get("turnaround_p99_s"), 1e6, 1), str(m.get("ended", "-"))]


def _md_table(header, rows) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(r) + " |" for r in rows]


def _events_md(tr: TrialData) -> list[str]:
    lines = [f"### {tr.name}", ""]
    if tr.metrics.get("message"):
        lines += [f"Trial ended **{tr.metrics.get('ended')}**: {tr.metrics['message']}", ""]
    if not tr.events:
        return lines + ["No safety events.", ""]
    for e in tr.events:
        lines.append(f"- tick {e.get('tick', '?')} `{e.get('kind', '?')}`: {e.get('message', '')}")
    return lines + [""]


def report_markdown(trials: list[TrialData], checks: list[Check], figure_errors: dict[str, str],
                    video: VideoResult | None) -> str:
    L = ["# In vitro-VR: report of the trials", "",
         "Numbers from `summary.json`; figures from each trial's `ticks.csv` (closed-loop rows).",
         "", "## Summary", ""]
    L += _md_table(TABLE_COLUMNS, [table_row({"name": tr.name, **tr.metrics}) for tr in trials])
    L += ["", "Conditions:", ""]
    L += [f"- **{tr.name}**: {tr.metrics.get('condition', {}).get('description', '-')}"
          for tr in trials]
    L += ["", "## Findings of the seed, checked on these numbers", ""]
    L += _md_table(("finding (seed, Results)", "numbers", "verdict"),
                   [(c.finding, c.evidence, f"**{c.verdict}**") for c in checks])
    notes = [n for c in checks for n in c.notes]
    if notes:
        L += ["", "Caveats:", ""] + [f"- {n}" for n in dict.fromkeys(notes)]
    L += ["", "## Figures", ""]
    captions = {
        "jumps": "COM trajectories (x, z in mm, equal axes) and stick figures "
                 "(toe-tmt-ankle-knee-hip-snout) at 20 ms (grey) and at takeoff (black); "
                 "red x: last closed-loop tick of a trial that did not complete (seed Fig. 2E).",
        "force_length": "Measured muscle force and MTU strain, shown up to takeoff (arrows); "
                        "A: nominal, control1, delayed; B: nominal, origin_shifted; bars: "
                        "stimulation trains (seed Fig. 3).",
        "timing": "t_real - t_sim and host turnaround per closed-loop tick (us), dashed: the "
                  "1-tick bound (seed Fig. 1D).",
    }
    for key, rel in FIGURES.items():
        if key in figure_errors:
            L += [f"- {key}: figure failed: {figure_errors[key]}"]
        else:
            L += [f"![{key}]({rel})", "", f"*{captions[key]}*", ""]
    L += ["", "## Videos", ""] + _videos_md(trials, video)
    L += ["", "## Safety events", ""]
    for tr in trials:
        L += _events_md(tr)
    return "\n".join(L).rstrip() + "\n"


def _videos_md(trials: list[TrialData], video: VideoResult | None) -> list[str]:
    if video is None:
        return ["Videos not rendered (disabled)."]
    if video.skipped:
        return [video.skipped]
    lines = []
    for tr in trials:
        if tr.name in video.gifs:
            lines.append(f"- [{tr.name}](videos/{tr.name}.gif) ({video.frames[tr.name]} frames, "
                         f"side view, {SLOWDOWN}x slower than real time)")
        else:
            lines.append(f"- {tr.name}: video failed: {video.errors.get(tr.name, 'not rendered')}")
    return lines


# -- entry --------------------------------------------------------------------------------
def write_report(out: Path, names: list[str], *, video: bool = True,
                 gl_backends: tuple[str, ...] = GL_BACKENDS) -> Path:
    """Figures, videos and `out/report.md` for the trials `out/<name>/`; returns the report path.

    `video=False` skips the videos; `gl_backends` are the OpenGL backends tried in order.
    A figure or video that fails is reported in report.md and on stderr; the report is still
    written."""
    out = Path(out)
    job = VideoJob(out, names, gl_backends) if video and names else None
    try:
        trials, errors = _figures(out, names)
        result = job.wait() if job else None
    except BaseException:
        if job:
            job.cancel()
        raise
    if result and result.skipped:
        print(result.skipped, file=sys.stderr)
    checks = check_findings({tr.name: tr.metrics for tr in trials})
    path = out / "report.md"
    path.write_text(report_markdown(trials, checks, errors, result))
    return path


def _figures(out: Path, names: list[str]) -> tuple[list[TrialData], dict[str, str]]:
    """Load the trials and draw the figures; returns the trials and the figures that failed."""
    summary = {}
    if (out / "summary.json").exists():
        summary = {e["name"]: e for e in json.loads((out / "summary.json").read_text())
                   .get("conditions", [])}
    trials = [load_trial(out, n, summary.get(n)) for n in names]
    by_name = {tr.name: tr for tr in trials}
    errors: dict[str, str] = {}
    for key, draw in (("jumps", lambda p: jumps_figure(trials, p)),
                      ("force_length", lambda p: force_length_figure(by_name, p)),
                      ("timing", lambda p: timing_figure(trials, p))):
        try:
            draw(out / FIGURES[key])
        except Exception as e:                    # noqa: BLE001 - the report must still appear
            errors[key] = " ".join(f"{type(e).__name__}: {e}".split())
            print(f"report: figure {key} failed: {errors[key]}", file=sys.stderr)
    return trials, errors
