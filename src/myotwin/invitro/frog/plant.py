"""The MuJoCo frog as a plant of the closed loop (see `myotwin.invitro.plant.Plant`).

One `step()` is the seed's simulation-loop sequence (Methods): the muscle tension and the
hip/knee servo targets for the current time are set, the forelimb support is applied, and
MuJoCo advances exactly one step (RK4, 1 ms); the kinematics of the new state are then
computed, so `mtu_length_m()` is the plantaris path length *of the new state*: the length the
ergometer must impose before the next force sample.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from .metrics import TOUCH_TOLERANCE_M, whole_body_com
from .mjcf import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, BODY_FOOT,
                   BODY_FORELIMB_SUPPORT, BODY_SHANK, BODY_TARSUS, BODY_THIGH, BODY_TRUNK,
                   GEOM_FLOOR, GEOM_SNOUT, HINGE_JOINTS, KEY_START, TENDON_PLANTARIS, load_frog_model)
from .spec import FrogSpec
from .targets import forelimb_support_N, servo_controls, servo_targets_rad

#: Joint angle beyond the model's range (rad) at which the loop trips for overextension.
#: A MuJoCo joint stop is a critically damped spring in acceleration space with natural
#: frequency 1 / (dmax * tc) = 526 rad/s (tc = limit_timeconst_s = 2 ms, the stiffest the 1 ms
#: step allows; dmax = 0.95), so a segment that reaches it at speed v runs past it by up to
#: v * dmax * tc / e. After takeoff the nearly massless foot is swung into its hyperextension
#: stop at 150-500 rad/s (by the extending leg even with the muscle absent, and by the
#: still-active muscle once the lever is clamped at its shortening end), i.e. 0.1-0.35 rad past
#: it. The margin is the overshoot at MAX_SPEED (0.70 rad) plus a little: a joint beyond it is
#: not the stop's compliance at this time step but a stop that failed (docs/invitro/tuning.md).
OVEREXTENSION_MARGIN_RAD = 0.75
#: Joint speed (rad/s) or body speed (m/s) beyond which the simulation is taken as diverged.
MAX_SPEED = 1.0e3

TRACKED_POINTS = (("toe", BODY_FOOT), ("tmt", BODY_TARSUS), ("ankle", BODY_SHANK),
           ("knee", BODY_THIGH), ("hip", BODY_TRUNK))


def channel_names(nq: int, nv: int) -> tuple[str, ...]:
    """Names (with units) of the frog plants' state channels, in `channels()` order (shared by
    MujocoFrogPlant and engine_plant.EngineFrogPlant)."""
    return tuple(
        ["t_plant_s"]
        + [f"qpos_{i}" for i in range(nq)] + [f"qvel_{i}" for i in range(nv)]
        + [f"{j}_rad" for j in HINGE_JOINTS]
        + ["com_x_m", "com_y_m", "com_z_m", "floor_contacts", "grf_x_N", "grf_z_N",
           "knee_target_rad", "hip_target_rad", "knee_servo_Nm", "hip_servo_Nm",
           "forelimb_N"]
        + [f"{j}_moment_arm_m" for j in HINGE_JOINTS]
        + [f"{p}_{c}_m" for p, _ in TRACKED_POINTS for c in "xz"] + ["snout_x_m", "snout_z_m"])


def overextension_fault(angles, hinge_ranges) -> str | None:
    """A message if a hinge angle (rad, HINGE_JOINTS order) is beyond its range widened by
    OVEREXTENSION_MARGIN_RAD, else None (shared by both frog plants' `fault`)."""
    for name, qi, (lo, hi) in zip(HINGE_JOINTS, angles, hinge_ranges):
        if not lo - OVEREXTENSION_MARGIN_RAD <= qi <= hi + OVEREXTENSION_MARGIN_RAD:
            return (f"overextension: {name} angle {qi:.3f} rad is beyond its range "
                    f"[{lo:.2f}, {hi:.2f}] by more than {OVEREXTENSION_MARGIN_RAD} rad")
    return None


class MujocoFrogPlant:
    """Our frog (`frog.mjcf`) driven by one muscle tension per step."""

    def __init__(self, spec: FrogSpec = FrogSpec()) -> None:
        self.spec = spec
        self.model = load_frog_model(spec)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.dt_s = float(m.opt.timestep)
        self._a_pl, self._a_kn, self._a_hp = (m.actuator(a).id for a in
                                              (ACTUATOR_PLANTARIS, ACTUATOR_KNEE, ACTUATOR_HIP))
        self._b_sup = m.body(BODY_FORELIMB_SUPPORT).id
        self._ten = m.tendon(TENDON_PLANTARIS).id
        self._key = m.key(KEY_START).id
        self._hinge_qadr = [int(m.jnt_qposadr[m.joint(j).id]) for j in HINGE_JOINTS]
        self._hinge_dadr = [int(m.jnt_dofadr[m.joint(j).id]) for j in HINGE_JOINTS]
        self._hinge_range = [tuple(m.jnt_range[m.joint(j).id]) for j in HINGE_JOINTS]
        self._bodies = [m.body(b).id for _, b in TRACKED_POINTS]
        self._snout = m.geom(GEOM_SNOUT).id
        self._floor = m.geom(GEOM_FLOOR).id
        self._warn_badqacc = self.data.warning[mujoco.mjtWarning.mjWARN_BADQACC]
        self._table: list = []        # inputs depend on time only: kept across resets
        self._extend_table(4096)
        self._f6 = np.zeros(6)
        self.channel_names = channel_names(m.nq, m.nv)
        self.reset()

    # -- Plant interface -----------------------------------------------------------------
    def reset(self) -> None:
        mujoco.mj_resetDataKeyframe(self.model, self.data, self._key)
        self._tension = 0.0
        self._bad_qacc = self._warnings()
        self._apply_inputs()
        mujoco.mj_forward(self.model, self.data)

    def set_muscle_tension(self, tension_N: float) -> None:
        self._tension = float(tension_N)

    def step(self) -> None:
        self._apply_inputs()
        mujoco.mj_step(self.model, self.data)
        mujoco.mj_fwdPosition(self.model, self.data)   # kinematics + path of the new state

    def time_s(self) -> float:
        return float(self.data.time)

    def mtu_length_m(self) -> float:
        return float(self.data.ten_length[self._ten])

    def fault(self) -> str | None:
        d = self.data
        if self._warnings() != self._bad_qacc:
            return (f"divergence: MuJoCo reported bad accelerations at t = {d.time:.4f} s "
                    "(the simulation became unstable)")
        vmax = float(np.abs(d.qvel).max())
        if not (vmax <= MAX_SPEED and math.isfinite(float(d.qpos.sum()))):
            return (f"divergence: non-finite state or speed {vmax:.3g} (rad/s or m/s) above "
                    f"{MAX_SPEED:g} at t = {d.time:.4f} s")
        return overextension_fault(d.qpos[self._hinge_qadr], self._hinge_range)

    def channels(self) -> tuple[float, ...]:
        m, d = self.model, self.data
        k = int(round(d.time / self.dt_s))
        if k >= len(self._table):
            self._extend_table(k + 1)
        com = whole_body_com(m, d)
        touching, grf = self._floor_contact_and_force()
        xpos = d.xpos[self._bodies][:, (0, 2)].ravel()
        snout = d.geom_xpos[self._snout]
        tail = [com[0], com[1], com[2], float(touching),
                grf[0], grf[2], *self._targets[k], d.actuator_force[self._a_kn],
                d.actuator_force[self._a_hp], d.xfrc_applied[self._b_sup, 2],
                *self.moment_arms_m(), *xpos, snout[0], snout[2]]
        return (float(d.time), *d.qpos.tolist(), *d.qvel.tolist(),
                *d.qpos[self._hinge_qadr].tolist(), *map(float, tail))

    def _floor_contact_and_force(self) -> tuple[bool, np.ndarray]:
        """(any frog geom within TOUCH_TOLERANCE_M of the floor, total floor force on the frog
        in world coordinates): the definitions of metrics.floor_in_contact and
        metrics.floor_force_world_N, vectorised over MuJoCo's contact arrays."""
        m, d = self.model, self.data
        grf = np.zeros(3)
        if d.ncon == 0:
            return False, grf
        con = d.contact
        geom = con.geom
        on_floor = (geom[:, 0] == self._floor) | (geom[:, 1] == self._floor)
        near = on_floor & (con.dist < TOUCH_TOLERANCE_M)
        f6 = self._f6
        for i in np.flatnonzero(on_floor & (con.dist < 0) & (con.efc_address >= 0)):
            mujoco.mj_contactForce(m, d, int(i), f6)
            f_world = con.frame[i].reshape(3, 3).T @ f6[:3]
            grf += f_world if geom[i, 0] == self._floor else -f_world
        return bool(near.any()), grf

    def moment_arms_m(self) -> list[float]:
        """Plantaris moment arms about the hinges (tmt, ankle, knee, hip), r = -dL/dq (m).

        MuJoCo 4 stores the tendon Jacobian sparse (pattern in the model: ten_J_rownnz,
        ten_J_rowadr, ten_J_colind)."""
        m, d = self.model, self.data
        row = np.zeros(m.nv)
        adr, nnz = m.ten_J_rowadr[self._ten], m.ten_J_rownnz[self._ten]
        row[m.ten_J_colind[adr:adr + nnz]] = d.ten_J[adr:adr + nnz]
        return [-row[i] for i in self._hinge_dadr]

    # -- internals -----------------------------------------------------------------------
    def _apply_inputs(self) -> None:
        d = self.data
        k = int(round(d.time / self.dt_s))
        if k >= len(self._table):
            self._extend_table(k + 1)
        d.ctrl[self._a_pl] = self._tension
        d.ctrl[self._a_kn], d.ctrl[self._a_hp], d.xfrc_applied[self._b_sup, 2] = self._table[k]

    def _extend_table(self, n: int) -> None:
        """Servo controls and forelimb support at t = k dt, tabulated ahead (the closed forms
        cost ~0.1 ms per call; a table lookup keeps the loop's turnaround short)."""
        n = max(n, 2 * len(self._table), 1024)
        t = np.arange(n) * self.dt_s
        knee, hip = servo_controls(t, self.spec)
        self._table = list(zip(knee.tolist(), hip.tolist(),
                               np.asarray(forelimb_support_N(t, self.spec)).tolist()))
        knee_t, hip_t = servo_targets_rad(t, self.spec)
        self._targets = list(zip(np.asarray(knee_t).tolist(), np.asarray(hip_t).tolist()))

    def _warnings(self) -> int:
        return self._warn_badqacc.number

