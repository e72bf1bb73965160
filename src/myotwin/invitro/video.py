"""Side-view videos of recorded trials, rendered offscreen by MuJoCo (docs/invitro/report.md).

Each trial is replayed from its recorded `qpos_*` columns (closed-loop rows only): the frog
model is rebuilt for the trial's muscle origin, `qpos` is set and `mj_forward` places the
bodies, and MuJoCo's offscreen `Renderer` draws a side view (camera looking along world +y,
fixed, framing every recorded point of the trial) every `FRAME_STEP_S` of simulated time.
The frames go to `out/videos/<name>.gif` with Pillow, `SLOWDOWN` times slower than real time.

MuJoCo picks its OpenGL backend from `MUJOCO_GL` when it is first imported, once per process.
Rendering therefore runs in a child process, `python -m myotwin.invitro.video OUT NAME ...`,
whose environment names the backend: the caller's process (which has usually imported
mujoco already, for the simulation) is never touched. The parent tries the backends in order
(`GL_BACKENDS`) and, when none can create a context, gives up with one line:
"video skipped: no OpenGL backend (tried egl, osmesa): <error>".

Child protocol: one JSON line on stdout per trial, {"name", "gif", "frames"} or
{"name", "error"}; exit status `EXIT_NO_GL` when the backend cannot render at all.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

GL_BACKENDS: tuple[str, ...] = ("egl", "osmesa")
"""Backends tried in order: EGL (headless GPU or Mesa), then OSMesa (software)."""
FRAME_STEP_S = 0.005
"""Simulated time between frames (s)."""
WIDTH_PX, HEIGHT_PX = 320, 240
SLOWDOWN = 8
"""Playback is this many times slower than real time (5 ms per frame -> 40 ms per frame)."""
HOLD_LAST_FRAME_S = 1.0
EXIT_NO_GL = 3
"""Exit status of the child when the backend cannot create an OpenGL context."""
TIMEOUT_BASE_S, TIMEOUT_PER_TRIAL_S = 60.0, 30.0
STICK_POINTS: tuple[str, ...] = ("toe", "tmt", "ankle", "knee", "hip", "snout")
"""Recorded points (`<point>_x_m`, `<point>_z_m`, frog/plant.py), distal to proximal: the
report's stick figure, and what the camera frames."""


# -- parent side --------------------------------------------------------------------------
@dataclass
class VideoResult:
    """What the renderer produced: gif path and frame count per trial, or why not."""

    gifs: dict[str, Path] = field(default_factory=dict)
    frames: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    """Per-trial failures (bad data), the other trials are still rendered."""
    skipped: str | None = None
    """One-line reason when no video could be rendered at all."""
    backend: str | None = None


class VideoJob:
    """Renders in a child process started at construction; `wait()` collects the result.

    Runs in the background so that the report's figures are drawn meanwhile."""

    def __init__(self, out: Path, names: list[str], backends: tuple[str, ...] = GL_BACKENDS,
                 timeout_s: float | None = None) -> None:
        self.out, self.names, self.backends = Path(out), list(names), tuple(backends)
        self.timeout_s = timeout_s or TIMEOUT_BASE_S + TIMEOUT_PER_TRIAL_S * len(self.names)
        self._next = 0
        self._start_next()

    def _start_next(self) -> None:
        backend = self.backends[self._next]
        self._next += 1
        src = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend,
               "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
        self.backend = backend
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "myotwin.invitro.video", str(self.out), *self.names],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait(self) -> VideoResult:
        errors: dict[str, str] = {}
        while True:
            left = max(1.0, self.timeout_s - (time.monotonic() - self.started))
            try:
                stdout, stderr = self.proc.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
                return VideoResult(skipped=f"video skipped: rendering with {self.backend} took "
                                           f"longer than {self.timeout_s:.0f} s")
            if self.proc.returncode == 0:
                return _parse_child(stdout, self.backend)
            error = _last_line(stderr) or f"exit status {self.proc.returncode}"
            if self.proc.returncode != EXIT_NO_GL:
                return VideoResult(skipped=f"video skipped: renderer failed ({self.backend}): "
                                           f"{error}")
            errors[self.backend] = error
            if self._next >= len(self.backends):
                detail = "; ".join(f"{b}: {e}" for b, e in errors.items())
                return VideoResult(skipped=f"video skipped: no OpenGL backend (tried "
                                           f"{', '.join(errors)}): {detail}")
            self._start_next()


    def cancel(self) -> None:
        """Stop the child (the caller failed and will not wait)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def render_videos(out: Path, names: list[str], backends: tuple[str, ...] = GL_BACKENDS
                  ) -> VideoResult:
    """Render `out/videos/<name>.gif` for each trial directory `out/<name>/` (blocking)."""
    return VideoJob(out, names, backends).wait()


def _parse_child(stdout: str, backend: str) -> VideoResult:
    res = VideoResult(backend=backend)
    for line in stdout.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue                       # a library printing to stdout: not ours
        if "gif" in rec:
            res.gifs[rec["name"]] = Path(rec["gif"])
            res.frames[rec["name"]] = int(rec["frames"])
        elif "error" in rec:
            res.errors[rec["name"]] = rec["error"]
    return res


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# -- what to draw (pure) ------------------------------------------------------------------
def frame_rows(t_s: np.ndarray, frame_step_s: float = FRAME_STEP_S) -> np.ndarray:
    """Indices of the rows drawn: every k-th row, k = frame step / tick period (>= 1).

    n rows give ceil(n / k) frames; the first row is always drawn."""
    t = np.asarray(t_s, dtype=float)
    if t.size < 2:
        return np.arange(t.size)
    k = max(1, int(round(frame_step_s / float(np.median(np.diff(t))))))
    return np.arange(0, t.size, k)


def camera_fit(ticks: dict[str, np.ndarray], fovy_deg: float, aspect: float,
               margin_m: float = 0.015) -> tuple[np.ndarray, float]:
    """Look-at point (3,) and distance of a camera looking along +y that frames every
    recorded point of the trial (and the floor), with `margin_m` around them."""
    xs = np.concatenate([ticks[f"{p}_x_m"] for p in STICK_POINTS])
    zs = np.concatenate([ticks[f"{p}_z_m"] for p in STICK_POINTS])
    x0, x1 = float(np.nanmin(xs)) - margin_m, float(np.nanmax(xs)) + margin_m
    z0, z1 = 0.0 - margin_m / 2, max(float(np.nanmax(zs)), 0.0) + margin_m
    tan_half = math.tan(math.radians(fovy_deg) / 2)
    dist = max((z1 - z0) / 2 / tan_half, (x1 - x0) / 2 / (tan_half * aspect))
    return np.array([(x0 + x1) / 2, 0.0, (z0 + z1) / 2]), dist


# -- child side ---------------------------------------------------------------------------
def _open_renderer(model):
    """A Renderer for `model`, or SystemExit(EXIT_NO_GL) when no context can be made."""
    import mujoco

    try:
        renderer = mujoco.Renderer(model, HEIGHT_PX, WIDTH_PX)
    except Exception as e:                       # noqa: BLE001 - any failure means no GL
        _no_gl(e)
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False      # 5x faster, same picture
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
    return renderer


def _no_gl(e: BaseException):
    msg = " ".join(f"{type(e).__name__}: {e}".split())
    print(msg, file=sys.stderr)
    raise SystemExit(EXIT_NO_GL)


def _add_path(scene, points: np.ndarray, rgba=(0.9, 0.2, 0.2, 1.0), width_px: float = 2.0):
    """Append the polyline `points` (n, 3) to the scene as line connectors."""
    import mujoco

    for a, b in zip(points[:-1], points[1:]):
        if scene.ngeom >= scene.maxgeom:
            return
        g = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINE, np.zeros(3), np.zeros(3),
                            np.eye(3).ravel(), np.asarray(rgba, dtype=np.float32))
        mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_LINE, width_px, a, b)
        scene.ngeom += 1


def _sky(rgb: np.ndarray, color=(225, 232, 240)) -> np.ndarray:
    """Paint the empty background (exactly black: the model has no skybox) a light sky."""
    rgb = rgb.copy()
    rgb[(rgb == 0).all(axis=-1)] = color
    return rgb


def _side_camera(model, ticks: dict[str, np.ndarray]):
    """Free camera looking along +y (+x to the right, 8 deg from above), fixed, framing the
    trial (`camera_fit`)."""
    import mujoco

    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.azimuth, cam.elevation = 90.0, -8.0
    cam.lookat[:], cam.distance = camera_fit(ticks, model.vis.global_.fovy, WIDTH_PX / HEIGHT_PX)
    return cam


def render_trial(trial_dir: Path, gif_path: Path) -> int:
    """Render one trial directory to `gif_path`; returns the number of frames."""
    import mujoco
    from PIL import Image, ImageDraw

    from .experiment import load_ticks
    from .frog.mjcf import load_frog_model
    from .frog.spec import FrogSpec

    meta = json.loads((trial_dir / "trial.json").read_text())
    offset = float(meta.get("condition", {}).get("origin_offset_m", 0.0) or 0.0)
    all_rows = load_ticks(trial_dir / "ticks.csv")
    run = all_rows["state"] == 0
    ticks = {k: v[run] for k, v in all_rows.items()}
    if not run.any():
        raise ValueError("no closed-loop rows to render")
    model = load_frog_model(FrogSpec(origin_offset_m=offset))
    data = mujoco.MjData(model)
    qpos = np.column_stack([ticks[f"qpos_{i}"] for i in range(model.nq)])
    renderer = _open_renderer(model)
    cam = _side_camera(model, ticks)
    com = np.column_stack([ticks["com_x_m"], ticks["com_y_m"], ticks["com_z_m"]])
    t = ticks["t_plant_s"]
    rows = frame_rows(t)
    step = int(rows[1] - rows[0]) if len(rows) > 1 else 1
    frames = []
    try:
        for i in rows:
            data.qpos[:] = qpos[i]
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera=cam)
            _add_path(renderer.scene, np.vstack([com[: i : step], com[i]]))   # COM path so far
            img = Image.fromarray(_sky(renderer.render()))
            ImageDraw.Draw(img).text((6, 4), f"{trial_dir.name}   t = {t[i] * 1e3:5.0f} ms   "
                                              f"(x{SLOWDOWN} slower)", fill=(0, 0, 0))
            frames.append(img)
    finally:
        renderer.close()
    frame_ms = int(round(FRAME_STEP_S * 1e3 * SLOWDOWN))
    durations = [frame_ms] * (len(frames) - 1) + [int(HOLD_LAST_FRAME_S * 1e3)]
    gif_path.parent.mkdir(parents=True, exist_ok=True)
    frames[0].save(gif_path, save_all=True, append_images=frames[1:], duration=durations,
                   loop=0, optimize=False, disposal=1)
    return len(frames)


def main(argv: list[str] | None = None) -> int:
    """Child entry: `python -m myotwin.invitro.video OUT NAME ...` (backend from MUJOCO_GL)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 1:
        print("usage: python -m myotwin.invitro.video OUT NAME ...", file=sys.stderr)
        return 2
    out, names = Path(args[0]), args[1:]
    try:
        import mujoco  # noqa: F401 - fails here for an unknown or broken MUJOCO_GL
    except Exception as e:                       # noqa: BLE001
        _no_gl(e)
    for name in names:
        gif = out / "videos" / f"{name}.gif"
        try:
            n = render_trial(out / name, gif)
            rec = {"name": name, "gif": str(gif), "frames": n}
        except SystemExit:
            raise
        except Exception as e:                   # noqa: BLE001 - one bad trial, not all
            rec = {"name": name, "error": " ".join(f"{type(e).__name__}: {e}".split())}
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MUJOCO_GL", "egl")    # before mujoco is first imported (in main)
    sys.exit(main())
