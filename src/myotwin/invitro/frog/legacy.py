"""The authors' 2017 model (5SegRM.xml, MuJoCo 1.40): migration to MuJoCo 4 and open-loop replay.

docs/invitro/legacy.md explains each step; notes/invitro-vr.md §6 is the source. We never ship
the authors' files (they carry no licence): these functions read them from a directory the user
points to, e.g. ../shared/reference/invitro-vr.

Replay recipe (notes §6, followed exactly): build the migrated model, take one mj_step from the
straight XML pose (rsim's pre-step), overwrite model.qpos0 with qposInit and data.qpos[:7] with
its first 7 values, then for loop step c = 0..N-2: if c > 0 set ctrl = [F[c], inforces[c,1],
inforces[c,2]] and xfrc_applied[s_com, z] = inforces[c,3]; mj_step; read xpos of every body and
geom_xpos of the last geom (as the RK4 stage leaves them, like rsim). F[c] = savedData[c, 3], the
force rsim applied at loop step c.
"""

from __future__ import annotations

import csv
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

# The authors' file names (rsim loads them by name from its working directory).
FILE_MODEL = "5SegRM.xml"
FILE_QPOS_INIT = "qposInit.dat"
FILE_INFORCES = "inforces.dat"
FILE_SAVED = "savedData.txt"
FILE_KINEMATICS = "savedData_kinematics.txt"
FILE_FORCE_SCALE = "forceScale.dat"
FILE_LREST = "lrest_m.dat"

# Names inside 5SegRM.xml that the replay needs.
LEGACY_FLOOR = "floor"
LEGACY_TENDON = "tend_ank"
LEGACY_SUPPORT_BODY = "s_com"
LEGACY_ANKLE_JOINT = "j_ank"

SIDE_SITE_FACTOR = 1.01
"""Side-sites found on a wrap sphere's surface are moved out to this multiple of its radius."""
MIN_FLIGHT_STEPS = 5

# rsim's lever command (notes §3.4-3.5): posOut = 2.0 + 6.875 (L - L_i) / lrest, V.
POSOUT_OFFSET_V = 2.0
POSOUT_GAIN_V = 2.2 / 0.32
POSOUT_MIN_V = 0.0
POSOUT_MAX_V = 2.2
OVEREXTENSION_LIMIT_RAD = -3.0
"""rsim freezes the output when qpos[ankle] + qpos0[ankle] < -3 (after loop step 10)."""
SAFETY_START_COUNTER = 10


# --- migration ----------------------------------------------------------------------------------

def _parse(xml_text: str, source: str) -> ET.Element:
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    try:
        return ET.fromstring(xml_text, parser=parser)
    except ET.ParseError as exc:
        raise ValueError(f"{source}: not well-formed XML: {exc}") from exc


def _geom_default(root: ET.Element) -> ET.Element:
    """The top-level <default><geom .../> element, created if absent."""
    default = root.find("default")
    if default is None:
        default = ET.Element("default")
        root.insert(0, default)
    geom = default.find("geom")
    if geom is None:
        geom = ET.SubElement(default, "geom")
    return geom


def _migrate_collision(root: ET.Element, source: str, changes: list[str]) -> None:
    for option in root.iter("option"):
        mode = option.attrib.pop("collision", None)
        if mode is None:
            continue
        changes.append(f"option: removed collision=\"{mode}\" (a MuJoCo 1.x attribute; 4.0 rejects it)")
        if mode == "predefined":
            geom = _geom_default(root)
            geom.set("contype", "0")
            geom.set("conaffinity", "0")
            changes.append("default geom: contype=\"0\" conaffinity=\"0\" so that only the <pair>s "
                           "collide, as with collision=\"predefined\"")
            for g in root.iter("geom"):
                if g is not geom and ("contype" in g.attrib or "conaffinity" in g.attrib):
                    g.set("contype", "0")
                    g.set("conaffinity", "0")
                    changes.append(f"geom {g.get('name', '(unnamed)')}: contype/conaffinity set to 0")
        elif mode == "dynamic":
            for contact in root.iter("contact"):
                for pair in list(contact.findall("pair")):
                    contact.remove(pair)
                    changes.append(f"contact: removed pair {pair.get('geom1')}-{pair.get('geom2')} "
                                   "(collision=\"dynamic\" ignored pairs)")
        elif mode != "all":
            raise ValueError(f"{source}: <option collision=\"{mode}\">: expected all, predefined or dynamic")


def _migrate_compiler(root: ET.Element, source: str, changes: list[str]) -> None:
    for compiler in root.iter("compiler"):
        coord = compiler.attrib.pop("coordinate", None)
        if coord is None:
            continue
        if coord != "local":
            raise ValueError(f"{source}: <compiler coordinate=\"{coord}\">: only \"local\" can be "
                             "migrated (current MuJoCo has local coordinates only)")
        changes.append("compiler: removed coordinate=\"local\" (a MuJoCo 1.x attribute; local is "
                       "the only mode now)")


def _fix_side_sites(root: ET.Element, source: str, changes: list[str]) -> None:
    """Move side-sites that sit on (or just inside) their wrap sphere's surface outwards."""
    import mujoco

    try:
        model = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    except Exception as exc:  # mujoco raises ValueError with the XML error text
        raise ValueError(f"{source}: does not compile in MuJoCo {mujoco.__version__} after "
                         f"migration: {exc}") from exc
    sites = {s.get("name"): s for s in root.iter("site") if s.get("name")}
    for spatial in root.iter("spatial"):
        for wrap in spatial.findall("geom"):
            side_name = wrap.get("sidesite")
            if not side_name:
                continue
            g = model.geom(wrap.get("geom"))
            s = model.site(side_name)
            if g.type[0] != mujoco.mjtGeom.mjGEOM_SPHERE:
                continue
            if model.site_bodyid[s.id] != model.geom_bodyid[g.id]:
                changes.append(f"side-site {side_name}: not on the body of {wrap.get('geom')}; "
                               "not checked")
                continue
            r = float(g.size[0])
            offset = np.asarray(s.pos) - np.asarray(g.pos)
            dist = float(np.linalg.norm(offset))
            if dist > r * (1 + 1e-9) or dist < 0.99 * r:
                continue  # clearly outside (fine) or deliberately inside (through-wrapping)
            if dist == 0.0:
                raise ValueError(f"{source}: side-site {side_name} is at the centre of {wrap.get('geom')}")
            new = np.asarray(g.pos) + offset / dist * SIDE_SITE_FACTOR * r
            sites[side_name].set("pos", " ".join(f"{x:.9g}" for x in new))
            changes.append(f"side-site {side_name}: moved from {dist * 1e3:.4g} mm to "
                           f"{SIDE_SITE_FACTOR} x {r * 1e3:.4g} mm from the centre of "
                           f"{wrap.get('geom')} (on the surface MuJoCo 4 may take it for inside-wrapping "
                           "and the path flips between steps)")


def migrate_legacy_mjcf(xml_text: str, source: str) -> tuple[str, list[str]]:
    """Migrate a MuJoCo 1.40 MJCF (the authors' 5SegRM) to MuJoCo 4.0.

    Returns the new XML text and the list of changes made (for the log). Pure: the input string
    and any file are left untouched. `source` names the input in error messages.
    Changes (notes §6): remove <option collision>; for "predefined", default geom
    contype = conaffinity = 0 so only <pair>s collide; drop <compiler coordinate="local">; move
    wrap side-sites that lie on their sphere's surface out to 1.01 r.
    """
    root = _parse(xml_text, source)
    changes: list[str] = []
    _migrate_collision(root, source, changes)
    _migrate_compiler(root, source, changes)
    _fix_side_sites(root, source, changes)
    return ET.tostring(root, encoding="unicode"), changes


# --- data files -------------------------------------------------------------------------------

@dataclass(frozen=True)
class LegacyRunFiles:
    """The authors' input and output files of one closed-loop run, parsed and checked."""

    directory: str
    model_xml: str
    qpos_init: np.ndarray      # (11,)
    inforces: np.ndarray       # (N, 4): ankle force N, knee target rad, hip target rad, forelimb N
    saved: np.ndarray          # (N-1, 15): time, wall time, posOut V, force N, unused
    kinematics: np.ndarray     # (N-1, 27): xpos of 8 bodies, snout geom_xpos
    force_scale: float
    lrest_m: float


def _path(directory: str, name: str) -> str:
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"legacy run: {path}: file not found (expected the authors' "
                                f"'{name}' in {directory})")
    return path


def _table(directory: str, name: str, n_cols: int, what: str) -> np.ndarray:
    path = _path(directory, name)
    try:
        data = np.loadtxt(path, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"legacy run: {path}: not a numeric table ({exc}); expected {what}") from exc
    if data.shape[1] != n_cols:
        raise ValueError(f"legacy run: {path}: {data.shape[1]} columns; expected {n_cols} ({what})")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"legacy run: {path}: contains NaN or inf; expected {what}")
    return data


def _scalar(directory: str, name: str, what: str) -> float:
    values = _table(directory, name, 1, what).ravel()
    if values.size != 1 or not values[0] > 0:
        raise ValueError(f"legacy run: {os.path.join(directory, name)}: {values.tolist()}; "
                         f"expected one positive number ({what})")
    return float(values[0])


def read_legacy_run(directory: str) -> LegacyRunFiles:
    """Read and check the authors' files in `directory` (names as in their repository)."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"legacy run: {directory}: not a directory")
    with open(_path(directory, FILE_MODEL), encoding="utf-8") as fh:
        xml = fh.read()
    qpos = _table(directory, FILE_QPOS_INIT, 11, "one row of 11 initial qpos values").ravel()
    if qpos.size != 11:
        raise ValueError(f"legacy run: {os.path.join(directory, FILE_QPOS_INIT)}: {qpos.size} "
                         "values; expected one row of 11")
    inforces = _table(directory, FILE_INFORCES, 4, "ankle force, knee target, hip target, forelimb force")
    saved = _table(directory, FILE_SAVED, 15, "rsim's 15-column savedData")
    kin = _table(directory, FILE_KINEMATICS, 27, "xyz of the 8 bodies and the snout geom")
    n = inforces.shape[0]
    for name, arr in ((FILE_SAVED, saved), (FILE_KINEMATICS, kin)):
        if arr.shape[0] != n - 1:
            raise ValueError(f"legacy run: {os.path.join(directory, name)}: {arr.shape[0]} rows; "
                             f"expected {n - 1} (one per loop step, {FILE_INFORCES} has {n} rows)")
    return LegacyRunFiles(
        directory=directory, model_xml=xml, qpos_init=qpos, inforces=inforces, saved=saved,
        kinematics=kin,
        force_scale=_scalar(directory, FILE_FORCE_SCALE, "the force attenuation, e.g. 0.5"),
        lrest_m=_scalar(directory, FILE_LREST, "the muscle rest length in m"))


# --- replay -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LegacyReplayResult:
    """Replay of the recorded run in MuJoCo 4 versus the authors' recording (MuJoCo 1.40)."""

    max_position_error_m: float
    """Max |replay - recording| over all 27 kinematics columns and all steps."""
    position_error_m: np.ndarray = field(repr=False)
    """(n_steps,) max over the 27 columns at each step."""
    time_s: np.ndarray = field(repr=False)
    """(n_steps,) simulation time after each loop step (0.002 ... as in savedData col 0)."""
    takeoff_time_s: float | None
    """First loop step (its time after mj_step) that starts >= 5 steps without floor contact."""
    floor_contact: np.ndarray = field(repr=False)
    tendon_length_m: np.ndarray = field(repr=False)
    posout_V: np.ndarray = field(repr=False)
    """Lever command reconstructed from the replayed tendon length with rsim's hold logic."""
    recorded_posout_V: np.ndarray = field(repr=False)
    """savedData col 2, the command rsim sent."""
    max_posout_error_V: float
    """Max |posout_V - savedData col 2|."""
    n_steps: int
    migration_changes: tuple[str, ...]


def _takeoff_index(contact: np.ndarray, min_steps: int = MIN_FLIGHT_STEPS) -> int | None:
    seen, run = False, 0
    for i, c in enumerate(contact):
        if c:
            seen, run = True, 0
        elif seen:
            run += 1
            if run >= min_steps:
                return i - run + 1
    return None


def reconstruct_posout(tendon_length_m: np.ndarray, ankle_rotation_rad: np.ndarray,
                       lrest_m: float) -> np.ndarray:
    """rsim's lever command per loop step (notes §3.4-3.5).

    candidate = 2.0 + 6.875 (L - L[0]) / lrest; a candidate outside [0, 2.2] V is replaced by the
    previous output (held, not clamped). From loop counter 11 on, an overextended ankle
    (qpos + qpos0 < -3 rad, i.e. `ankle_rotation_rad` = qpos + qpos0) freezes the output for the
    rest of the run (the latch: any trip and recovery sets it). The 0.2 V instability check is
    dead code in rsim (it compares the output with itself) and is not emulated.
    """
    L = np.asarray(tendon_length_m, dtype=float)
    out = np.empty_like(L)
    prev = POSOUT_OFFSET_V
    frozen = False
    for c in range(L.size):
        counter = c + 1  # rsim increments the counter before the safety logic
        if counter > SAFETY_START_COUNTER and ankle_rotation_rad[c] < OVEREXTENSION_LIMIT_RAD:
            frozen = True
        if not frozen:
            cand = POSOUT_OFFSET_V + POSOUT_GAIN_V * (L[c] - L[0]) / lrest_m
            if POSOUT_MIN_V <= cand <= POSOUT_MAX_V:
                prev = cand
        out[c] = prev
    return out


def replay_legacy(directory: str) -> LegacyReplayResult:
    """Replay the authors' recorded run from `directory` in MuJoCo 4 (see the module docstring)."""
    import mujoco

    run = read_legacy_run(directory)
    xml, changes = migrate_legacy_mjcf(run.model_xml, os.path.join(directory, FILE_MODEL))
    model = mujoco.MjModel.from_xml_string(xml)
    if model.nq != run.qpos_init.size:
        raise ValueError(f"legacy run: {FILE_QPOS_INIT} has {run.qpos_init.size} values; the model "
                         f"has nq = {model.nq}")
    if 3 * model.nbody + 3 != run.kinematics.shape[1]:
        raise ValueError(f"legacy run: {FILE_KINEMATICS} has {run.kinematics.shape[1]} columns; "
                         f"the model needs 3 x {model.nbody} bodies + 3 = {3 * model.nbody + 3}")
    try:
        floor = model.geom(LEGACY_FLOOR).id
        tendon = model.tendon(LEGACY_TENDON).id
        support = model.body(LEGACY_SUPPORT_BODY).id
        ankle_adr = model.jnt_qposadr[model.joint(LEGACY_ANKLE_JOINT).id]
    except KeyError as exc:
        raise ValueError(f"legacy run: {FILE_MODEL}: missing element {exc}; expected the authors' "
                         "5SegRM names (floor, tend_ank, s_com, j_ank)") from exc
    if model.nu != 3:
        raise ValueError(f"legacy run: {FILE_MODEL}: {model.nu} actuators; expected 3 "
                         "(tendon motor, knee servo, hip servo)")
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data)                 # rsim's pre-step from the straight pose
    model.qpos0[:] = run.qpos_init              # rsim's qpos0 overwrite
    data.qpos[:7] = run.qpos_init[:7]
    n = run.saved.shape[0]
    force = run.saved[:, 3]
    recorded = np.empty((n, 3 * model.nbody + 3))
    contact = np.zeros(n, dtype=bool)
    length = np.empty(n)
    ankle_rot = np.empty(n)
    time = np.empty(n)
    for c in range(n):
        if c > 0:
            data.ctrl[:] = (force[c], run.inforces[c, 1], run.inforces[c, 2])
            data.xfrc_applied[support, 2] = run.inforces[c, 3]
        mujoco.mj_step(model, data)
        recorded[c, :-3] = data.xpos.ravel()
        recorded[c, -3:] = data.geom_xpos[model.ngeom - 1]
        contact[c] = any(floor in (data.contact[i].geom[0], data.contact[i].geom[1])
                         for i in range(data.ncon))
        length[c] = data.ten_length[tendon]
        ankle_rot[c] = data.qpos[ankle_adr] + model.qpos0[ankle_adr]
        time[c] = data.time
    err = np.abs(recorded - run.kinematics).max(axis=1)
    posout = reconstruct_posout(length, ankle_rot, run.lrest_m)
    i_to = _takeoff_index(contact)
    return LegacyReplayResult(
        max_position_error_m=float(err.max()), position_error_m=err, time_s=time,
        takeoff_time_s=None if i_to is None else float(time[i_to]), floor_contact=contact,
        tendon_length_m=length, posout_V=posout, recorded_posout_V=run.saved[:, 2].copy(),
        max_posout_error_V=float(np.abs(posout - run.saved[:, 2]).max()), n_steps=n,
        migration_changes=tuple(changes))


# --- command --------------------------------------------------------------------------------------

def replay_legacy_command(directory: str, out: str) -> dict:
    """Replay the run in `directory`, write the summary JSON and a per-step CSV, return the summary.

    `out` ending in '.json' is the summary file (the CSV goes next to it as <stem>_steps.csv);
    otherwise `out` is a directory (created if needed) receiving summary.json and steps.csv.
    """
    result = replay_legacy(directory)
    if out.lower().endswith(".json"):
        summary_path = out
        parent = os.path.dirname(os.path.abspath(out))
        os.makedirs(parent, exist_ok=True)
        csv_path = os.path.splitext(out)[0] + "_steps.csv"
    else:
        os.makedirs(out, exist_ok=True)
        summary_path = os.path.join(out, "summary.json")
        csv_path = os.path.join(out, "steps.csv")
    summary = {
        "directory": os.path.abspath(directory),
        "max_position_error_m": result.max_position_error_m,
        "takeoff_time_s": None if result.takeoff_time_s is None else round(result.takeoff_time_s, 9),
        "max_posout_error_V": result.max_posout_error_V,
        "n_steps": result.n_steps,
        "mujoco_version": _mujoco_version(),
        "migration_changes": list(result.migration_changes),
        "steps_csv": os.path.abspath(csv_path),
    }
    with open(summary_path, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
        fh.write("\n")
    with open(csv_path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["time_s", "position_error_m", "floor_contact", "tendon_length_m",
                    "posout_replay_V", "posout_recorded_V"])
        for c in range(result.n_steps):
            w.writerow([f"{result.time_s[c]:.6f}", f"{result.position_error_m[c]:.9g}",
                        int(result.floor_contact[c]), f"{result.tendon_length_m[c]:.9g}",
                        f"{result.posout_V[c]:.6f}", f"{result.recorded_posout_V[c]:.6f}"])
    return summary


def _mujoco_version() -> str:
    import mujoco

    return str(mujoco.__version__)


__all__ = [
    "FILE_FORCE_SCALE", "FILE_INFORCES", "FILE_KINEMATICS", "FILE_LREST", "FILE_MODEL",
    "FILE_QPOS_INIT", "FILE_SAVED", "LegacyReplayResult", "LegacyRunFiles", "migrate_legacy_mjcf",
    "read_legacy_run", "reconstruct_posout", "replay_legacy", "replay_legacy_command",
]
