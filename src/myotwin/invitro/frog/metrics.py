"""Whole-body COM, floor contact, takeoff/landing and jump metrics of a frog rollout.

Definitions (docs/invitro/frog.md "Jump metrics"; takeoff as in notes/invitro-vr.md §6):

* COM: whole-body centre of mass, MuJoCo's `subtree_com` of the root body (mass-weighted).
* Floor contact at a sample: any frog geom closer than TOUCH_TOLERANCE_M (0.1 mm) to the floor,
  penetrating or not (our model lists near contacts through the contact `gap`, without force).
* Takeoff: the first sample, after at least one sample with floor contact, that starts a run of
  >= `min_flight_steps` (5) consecutive samples without floor contact.
* Landing: the first sample with floor contact after takeoff (None if the rollout ends first).
* Jump height: max COM z from takeoff to landing (or to the end) minus COM z at t = 0.
* Forward distance: COM x at landing minus COM x at t = 0 (None without landing).

`rollout_open_loop` produces the arrays these functions read: it drives the model with the servo
targets, the forelimb support and a plantaris tension given as a function of time (the in vitro-VR
plant does the same with a real or emulated muscle in the loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .mjcf import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, BODY_FOOT,
                   BODY_FORELIMB_SUPPORT, GEOM_FLOOR, HINGE_JOINTS, KEY_START, TENDON_PLANTARIS)
from .spec import FrogSpec
from .targets import forelimb_support_N, servo_controls, servo_targets_rad

MIN_FLIGHT_STEPS = 5
TOUCH_TOLERANCE_M = 1e-4
"""A frog geom closer than this to the floor counts as touching it (0.1 mm, 3 % of the foot
radius): a passive, nearly weightless foot can hover micrometres above the floor for a few ms
while the leg pushes off, which is not flight. Needs the model's contact `gap` >= this."""


def whole_body_com(model, data) -> np.ndarray:
    """World COM of the whole frog, shape (3,) (m). Needs positions computed (mj_forward)."""
    root = model.body(BODY_FOOT).id
    return np.array(data.subtree_com[root])


def floor_contacts(model, data, touch_tolerance_m: float = 0.0) -> list[int]:
    """Indices into data.contact of the floor contacts whose surfaces are closer than
    `touch_tolerance_m` (0 = penetrating, i.e. force-carrying, contacts only)."""
    floor = model.geom(GEOM_FLOOR).id
    return [i for i in range(data.ncon)
            if floor in (data.contact[i].geom[0], data.contact[i].geom[1])
            and data.contact[i].dist < touch_tolerance_m]


def floor_in_contact(model, data, touch_tolerance_m: float = TOUCH_TOLERANCE_M) -> bool:
    """True when any frog geom is within `touch_tolerance_m` of the floor (or in it)."""
    return len(floor_contacts(model, data, touch_tolerance_m)) > 0


def floor_penetration_m(model, data) -> float:
    """Deepest penetration into the floor over the active contacts (m, >= 0)."""
    depths = [-data.contact[i].dist for i in floor_contacts(model, data)]
    return max([0.0, *depths])


def floor_force_world_N(model, data) -> np.ndarray:
    """Sum of the floor contact forces on the frog, world frame, shape (3,) (N)."""
    import mujoco

    total = np.zeros(3)
    f6 = np.zeros(6)
    floor = model.geom(GEOM_FLOOR).id
    for i in floor_contacts(model, data):
        c = data.contact[i]
        if c.efc_address < 0:
            continue
        mujoco.mj_contactForce(model, data, i, f6)
        # f6[:3] is in the contact frame (normal first), acting on geom[1] from geom[0].
        f_world = np.asarray(c.frame).reshape(3, 3).T @ f6[:3]
        total += f_world if c.geom[0] == floor else -f_world
    return total


@dataclass(frozen=True)
class JumpMetrics:
    """Summary of one jump. Times in s, lengths in m; None when the event did not happen."""

    takeoff_time_s: float | None
    landing_time_s: float | None
    jump_height_m: float | None
    """Max COM z in flight minus COM z at t = 0."""
    apex_time_s: float | None
    forward_distance_m: float | None
    """COM x at landing minus COM x at t = 0."""
    takeoff_velocity_m_s: tuple[float, float] | None
    """COM (vx, vz) at takeoff, by finite differences of the COM samples."""


def takeoff_index(floor_contact: np.ndarray, min_flight_steps: int = MIN_FLIGHT_STEPS) -> int | None:
    """Index of takeoff in a boolean contact series (see the module docstring), or None."""
    c = np.asarray(floor_contact, dtype=bool)
    if min_flight_steps < 1:
        raise ValueError(f"takeoff_index: min_flight_steps = {min_flight_steps}: expected >= 1")
    seen_contact = False
    run = 0
    for i, touching in enumerate(c):
        if touching:
            seen_contact, run = True, 0
            continue
        if seen_contact:
            run += 1
            if run >= min_flight_steps:
                return i - run + 1
    return None


def jump_metrics(time_s: np.ndarray, com_world: np.ndarray, floor_contact: np.ndarray,
                 min_flight_steps: int = MIN_FLIGHT_STEPS) -> JumpMetrics:
    """Jump metrics from a rollout: time (n,), COM (n, 3) and floor contact (n,) samples."""
    t = np.asarray(time_s, dtype=float)
    com = np.asarray(com_world, dtype=float)
    c = np.asarray(floor_contact, dtype=bool)
    if not (t.ndim == 1 and com.shape == (t.size, 3) and c.shape == t.shape):
        raise ValueError(f"jump_metrics: expected time (n,), com (n, 3), contact (n,); got "
                         f"{t.shape}, {com.shape}, {c.shape}")
    i_to = takeoff_index(c, min_flight_steps)
    if i_to is None:
        return JumpMetrics(None, None, None, None, None, None)
    after = np.nonzero(c[i_to:])[0]
    i_land = i_to + int(after[0]) if after.size else None
    end = i_land if i_land is not None else t.size
    i_apex = i_to + int(np.argmax(com[i_to:end, 2]))
    lo, hi = max(i_to - 1, 0), min(i_to + 1, t.size - 1)
    v = (com[hi] - com[lo]) / (t[hi] - t[lo])
    return JumpMetrics(
        takeoff_time_s=float(t[i_to]),
        landing_time_s=float(t[i_land]) if i_land is not None else None,
        jump_height_m=float(com[i_apex, 2] - com[0, 2]),
        apex_time_s=float(t[i_apex]),
        forward_distance_m=float(com[i_land, 0] - com[0, 0]) if i_land is not None else None,
        takeoff_velocity_m_s=(float(v[0]), float(v[2])))


@dataclass(frozen=True)
class Rollout:
    """Samples of a rollout, index 0 = the start state (t = 0), then one per step."""

    time_s: np.ndarray            # (n,)
    com_world_m: np.ndarray       # (n, 3)
    floor_contact: np.ndarray     # (n,) bool
    penetration_m: np.ndarray     # (n,) deepest floor penetration
    tendon_length_m: np.ndarray   # (n,) plantaris MTU length
    qpos: np.ndarray              # (n, nq)
    qvel: np.ndarray              # (n, nv)
    hinge_angles_rad: np.ndarray  # (n, 4) tmt, ankle, knee, hip (rotation from straight)
    servo_targets_rad: np.ndarray # (n, 2) knee, hip targets applied over the step that follows
    servo_torque_Nm: np.ndarray   # (n, 2) knee, hip actuator torque over the step that follows
    floor_force_N: np.ndarray     # (n, 3) floor force on the frog (world)

    def metrics(self, min_flight_steps: int = MIN_FLIGHT_STEPS) -> JumpMetrics:
        return jump_metrics(self.time_s, self.com_world_m, self.floor_contact, min_flight_steps)


def rollout_open_loop(model, spec: FrogSpec = FrogSpec(),
                      tension_N: Callable[[float], float] = lambda t: 0.0,
                      duration_s: float = 0.3, data=None) -> Rollout:
    """Run the frog from its start pose with servos, forelimb support and a given tension.

    At each step k (t = k dt) the controls for t are set (plantaris ctrl = tension_N(t), servo
    ctrl = targets.servo_controls(t), forelimb support on its body), then mj_step. Samples are
    taken on the state at each t after mj_forward, so every recorded quantity belongs to the
    same state (not to the last RK4 stage). `model` must be built from `spec`.
    """
    import mujoco

    d = mujoco.MjData(model) if data is None else data
    mujoco.mj_resetDataKeyframe(model, d, model.key(KEY_START).id)
    n_steps = int(round(duration_s / model.opt.timestep))
    a_pl, a_kn, a_hp = (model.actuator(a).id for a in (ACTUATOR_PLANTARIS, ACTUATOR_KNEE, ACTUATOR_HIP))
    b_sup = model.body(BODY_FORELIMB_SUPPORT).id
    ten = model.tendon(TENDON_PLANTARIS).id
    hinge_adr = [model.jnt_qposadr[model.joint(j).id] for j in HINGE_JOINTS]
    rows: dict[str, list] = {k: [] for k in Rollout.__dataclass_fields__}
    for k in range(n_steps + 1):
        t = k * model.opt.timestep
        d.ctrl[a_pl] = tension_N(t)
        d.ctrl[a_kn], d.ctrl[a_hp] = servo_controls(t, spec)
        d.xfrc_applied[b_sup, 2] = forelimb_support_N(t, spec)
        mujoco.mj_forward(model, d)
        rows["time_s"].append(d.time)
        rows["com_world_m"].append(whole_body_com(model, d))
        rows["floor_contact"].append(floor_in_contact(model, d))
        rows["penetration_m"].append(floor_penetration_m(model, d))
        rows["tendon_length_m"].append(d.ten_length[ten])
        rows["qpos"].append(d.qpos.copy())
        rows["qvel"].append(d.qvel.copy())
        rows["hinge_angles_rad"].append(d.qpos[hinge_adr].copy())
        rows["servo_targets_rad"].append(servo_targets_rad(t, spec))
        rows["servo_torque_Nm"].append((d.actuator_force[a_kn], d.actuator_force[a_hp]))
        rows["floor_force_N"].append(floor_force_world_N(model, d))
        if k < n_steps:
            mujoco.mj_step(model, d)
    return Rollout(**{k: np.asarray(v) for k, v in rows.items()})
