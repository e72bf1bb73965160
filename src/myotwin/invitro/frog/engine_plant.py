"""The JAX engine frog as a plant of the closed loop (see `myotwin.invitro.plant.Plant`).

Docs: docs/invitro/frog.md §16 "The engine as the plant".

`EngineFrogPlant(spec)` is `frog.plant.MujocoFrogPlant` with the JAX engine (docs/engine.md)
in place of MuJoCo: the same constructor argument, `dt_s`, `channel_names` and meanings, and the
same input sequence per `step()` (the seed's simulation loop, Methods):

* the muscle tension F >= 0 is the ctrl of the `plantaris` motor on the spatial tendon
  (gear -1, so qfrc = r F with r = -dL/dq the moment arms; engine/actuation.py);
* the knee and hip position servos get `targets.servo_controls(t_k)` and the forelimb support
  `targets.forelimb_support_N(t_k)` acts as a world +z force at the COM of the massless body
  `forelimb_support`, through the engine's `xfrc_applied` input (MuJoCo's mj_xfrcAccumulate);
  all inputs are held over the step, as MuJoCo holds ctrl and xfrc_applied over mj_step;
* the state is advanced by the engine's RK4 (`engine.integrators.rk4_step`, MuJoCo 4.0.0's
  Runge-Kutta-Munthe-Kaas form), and `mtu_length_m()` is the plantaris path length of the new
  state (`myotwin.muscle_lengths`, = MuJoCo ten_length).

Model: `engine_jump.engine_frog_mjcf(spec)` (the frog's smooth-contact parameters
`engine_jump.FROG_CONTACT`) with the plantaris motor of `mjcf.build_frog_mjcf(spec)` put back
(`engine_plant_mjcf`). The floor contact is the engine's smooth sphere-plane law, not MuJoCo's
soft constraint, so trajectories agree with MuJoCo's only while the contact forces do not
matter (§16).

Step. The frog's contact needs an RK4 step of <= 0.25 ms (`engine_jump.DEFAULT_DT_S`: the toe on
its Hertz spring sits at RK4's stability edge at 1 ms), so one plant step of `spec.timestep_s`
(1 ms, the loop period) is `substeps` engine RK4 steps with the same held inputs, all in ONE
jitted call that takes (q, qd, inputs) and returns (q', qd', every channel packed into one
float64 vector): one host-device round trip per tick.

Channels that MuJoCo computes differently: `floor_contacts` is "a contact sphere within
`metrics.TOUCH_TOLERANCE_M` of the floor" (engine_jump's definition, the same as MuJoCo's gap
contacts); `grf_*` is the sum of the smooth-contact forces on the frog at the new state (MuJoCo:
the constraint forces of its last RK4 stage); the servo torques are the servo forces at the new
state with the ctrl held over the step just taken (MuJoCo: its last RK4 stage, O(dt) apart).
"""

from __future__ import annotations

import functools
import math
import xml.etree.ElementTree as ET
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import engine
from myotwin.engine.contact import contact_forces_from_kinematics
from myotwin.engine.integrators import rk4_step
from myotwin.engine.kinematics import kinematics
from myotwin.paths.on_model import moment_arms, muscle_lengths

from .engine_jump import DEFAULT_DT_S, FROG_CONTACT, engine_frog_mjcf
from .metrics import TOUCH_TOLERANCE_M
from .mjcf import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, BODY_FOOT,
                   BODY_FORELIMB_SUPPORT, GEOM_SNOUT, HINGE_JOINTS, KEY_START, TENDON_PLANTARIS,
                   build_frog_mjcf)
from .plant import MAX_SPEED, TRACKED_POINTS, channel_names, overextension_fault
from .spec import FrogSpec
from .targets import forelimb_support_N, servo_controls, servo_targets_rad

__all__ = ["EngineFrogPlant", "engine_plant_mjcf"]

def engine_plant_mjcf(spec: FrogSpec = FrogSpec()) -> str:
    """`engine_jump.engine_frog_mjcf(spec)` (smooth-contact numerics FROG_CONTACT) with the
    plantaris motor of `build_frog_mjcf(spec)` restored at its place (first actuator)."""
    motor = ET.fromstring(build_frog_mjcf(spec)).find(
        f"actuator/motor[@name='{ACTUATOR_PLANTARIS}']")
    root = ET.fromstring(engine_frog_mjcf(spec, FROG_CONTACT))
    root.find("actuator").insert(0, motor)
    return ET.tostring(root, encoding="unicode")


class _Index(NamedTuple):
    """Static ids of the compiled frog (hashable: a jit static argument, so every plant of the
    same spec shares one compilation)."""

    plantaris: int                      # actuator ids
    knee: int
    hip: int
    support: int                        # body of the forelimb support
    root: int                           # the foot (free joint): subtree COM = whole frog
    path: int                           # plantaris row in the model's paths
    hinge_dof: tuple[int, ...]          # tmt, ankle, knee, hip
    points: tuple[int, ...]             # bodies of TRACKED_POINTS
    snout_body: int
    snout_local: tuple[float, float, float]


@functools.partial(jax.jit, static_argnames=("ix",))
def _observe(model, q, qd, ctrl, *, ix: _Index):
    """Channel tail and MTU length at the state (q, qd) with the held ctrl (n_u,): one flat
    float64 vector [mtu_length, com (3), floor_contacts, grf_x, grf_z, knee servo, hip servo,
    moment arms (4), point x/z (10), snout x/z]."""
    kin = kinematics(model, q)
    cf = contact_forces_from_kinematics(model, kin, qd)
    touching = jnp.any(cf.points.indentation > -TOUCH_TOLERANCE_M).astype(q.dtype)
    grf = jnp.sum(cf.force_world, axis=0)
    servo = engine.actuator_force(model, q, qd, ctrl)
    arms = moment_arms(model, q)[np.array(ix.hinge_dof), ix.path]
    points = kin.body_pos_world[np.array(ix.points)][:, (0, 2)].ravel()
    snout = (kin.body_pos_world[ix.snout_body]
             + kin.body_rot_world[ix.snout_body] @ jnp.asarray(ix.snout_local))
    return jnp.concatenate([
        muscle_lengths(model, q)[ix.path][None], kin.subtree_com_world[ix.root],
        touching[None], grf[0:1], grf[2:3], servo[ix.knee][None], servo[ix.hip][None],
        arms, points, snout[0:1], snout[2:3]])


@functools.partial(jax.jit, static_argnames=("ix", "n_sub"))
def _advance(model, q, qd, inputs, dt_sub, *, ix: _Index, n_sub: int):
    """`n_sub` RK4 steps of dt_sub with inputs = (tension N, knee ctrl, hip ctrl, support N)
    held, then `_observe` of the new state: (q', qd', observation)."""
    ctrl = jnp.zeros(model.n_u, dtype=q.dtype)
    ctrl = ctrl.at[ix.plantaris].set(inputs[0]).at[ix.knee].set(inputs[1])
    ctrl = ctrl.at[ix.hip].set(inputs[2])
    xfrc = jnp.zeros((model.n_body, 6), dtype=q.dtype).at[ix.support, 2].set(inputs[3])

    def one(state, _):
        return rk4_step(model, *state, ctrl, dt_sub, xfrc_applied=xfrc), None

    (q, qd), _ = jax.lax.scan(one, (q, qd), None, length=n_sub)
    return q, qd, _observe(model, q, qd, ctrl, ix=ix)


class EngineFrogPlant:
    """Our frog (`frog.mjcf`) on the JAX engine, driven by one muscle tension per step.

    Needs `jax_enable_x64` (set by the entry point; RuntimeError from the engine otherwise).
    `substeps` engine RK4 steps make one plant step of dt_s = spec.timestep_s; default:
    the fewest with a step <= engine_jump.DEFAULT_DT_S (4 at 1 ms).
    """

    def __init__(self, spec: FrogSpec = FrogSpec(), substeps: int | None = None) -> None:
        import mujoco

        self.spec = spec
        self.dt_s = float(spec.timestep_s)
        if substeps is None:
            substeps = max(1, math.ceil(self.dt_s / DEFAULT_DT_S - 1e-9))
        if not (isinstance(substeps, int) and substeps >= 1):
            raise ValueError(f"EngineFrogPlant: substeps = {substeps!r}: expected an int >= 1")
        self.substeps = substeps
        m = mujoco.MjModel.from_xml_string(engine_plant_mjcf(spec))
        self.mj_model = m
        self.model = engine.compile_model(m)
        if self.model.dynamics_unsupported:
            raise ValueError("EngineFrogPlant: elements the engine cannot simulate: "
                             + "; ".join(self.model.dynamics_unsupported))
        paths = self.model.paths
        ten = m.tendon(TENDON_PLANTARIS).id
        if paths is None or ten not in getattr(paths, "path_tendon", ()):
            raise ValueError(f"EngineFrogPlant: tendon {TENDON_PLANTARIS!r} (#{ten}) is not "
                             "among the engine model's paths")
        hinge = [m.joint(j).id for j in HINGE_JOINTS]
        snout = m.geom(GEOM_SNOUT).id
        ix = _Index(m.actuator(ACTUATOR_PLANTARIS).id, m.actuator(ACTUATOR_KNEE).id,
                    m.actuator(ACTUATOR_HIP).id, m.body(BODY_FORELIMB_SUPPORT).id,
                    m.body(BODY_FOOT).id, paths.path_tendon.index(ten),
                    tuple(int(m.jnt_dofadr[j]) for j in hinge),
                    tuple(m.body(b).id for _, b in TRACKED_POINTS), int(m.geom_bodyid[snout]),
                    tuple(float(x) for x in m.geom_pos[snout]))
        self._hinge_qadr = np.array([m.jnt_qposadr[j] for j in hinge])
        self._hinge_range = [tuple(map(float, m.jnt_range[j])) for j in hinge]
        key = m.key(KEY_START).id
        self._q0 = np.array(m.key_qpos[key], dtype=float)
        self._qd0 = np.array(m.key_qvel[key], dtype=float)
        self._dt_sub = self.dt_s / substeps
        self._advance = functools.partial(_advance, ix=ix, n_sub=substeps)
        self._observe = functools.partial(_observe, ix=ix)
        self._table = np.zeros((0, 4))
        self._extend_table(4096)
        self.channel_names = channel_names(m.nq, m.nv)
        self.reset()

    # -- Plant interface -----------------------------------------------------------------
    def reset(self) -> None:
        self._k = 0
        self._tension = 0.0
        self._set(jnp.asarray(self._q0), jnp.asarray(self._qd0), self._inputs(0))
        self._obs = np.asarray(self._observe(self.model, self._q, self._qd, self._ctrl(
            self._last_inputs)))

    def set_muscle_tension(self, tension_N: float) -> None:
        self._tension = float(tension_N)

    def step(self) -> None:
        inputs = self._inputs(self._k)
        q, qd, obs = self._advance(self.model, self._q, self._qd, inputs, self._dt_sub)
        self._set(q, qd, inputs)
        self._obs = np.asarray(obs)
        self._k += 1

    def time_s(self) -> float:
        return self._k * self.dt_s

    def mtu_length_m(self) -> float:
        return float(self._obs[0])

    def fault(self) -> str | None:
        q, qd, t = self._q_np, self._qd_np, self.time_s()
        if not (np.isfinite(q).all() and np.isfinite(qd).all()):
            return f"divergence: non-finite state at t = {t:.4f} s (the simulation became unstable)"
        vmax = float(np.abs(qd).max())
        if vmax > MAX_SPEED:
            return (f"divergence: speed {vmax:.3g} (rad/s or m/s) above {MAX_SPEED:g} at "
                    f"t = {t:.4f} s")
        return overextension_fault(q[self._hinge_qadr], self._hinge_range)

    def channels(self) -> tuple[float, ...]:
        k = self._k
        if k >= len(self._targets):
            self._extend_table(k + 1)
        o = self._obs
        tail = [*o[1:5], o[5], o[6], *self._targets[k], o[7], o[8], self._last_inputs[3],
                *o[9:]]
        return (self.time_s(), *self._q_np.tolist(), *self._qd_np.tolist(),
                *self._q_np[self._hinge_qadr].tolist(), *map(float, tail))

    # -- state access (tests, diagnostics) -------------------------------------------------
    @property
    def qpos(self) -> np.ndarray:
        """(n_q,) current generalized positions (MuJoCo qpos order)."""
        return self._q_np.copy()

    @property
    def qvel(self) -> np.ndarray:
        """(n_v,) current generalized velocities."""
        return self._qd_np.copy()

    def set_state(self, qpos, qvel) -> None:
        """Replace the state (as writing MuJoCo's qpos/qvel); values are taken as they are
        (`fault()` judges them), shapes must be (n_q,) and (n_v,). Observations are updated."""
        qpos, qvel = np.asarray(qpos, dtype=float), np.asarray(qvel, dtype=float)
        for name, v, n in (("qpos", qpos, self.model.n_q), ("qvel", qvel, self.model.n_v)):
            if v.shape != (n,):
                raise ValueError(f"EngineFrogPlant.set_state: {name} shape {v.shape}, "
                                 f"expected ({n},)")
        self._set(jnp.asarray(qpos), jnp.asarray(qvel), self._last_inputs)
        self._obs = np.asarray(self._observe(self.model, self._q, self._qd,
                                             self._ctrl(self._last_inputs)))

    # -- internals -----------------------------------------------------------------------
    def _set(self, q, qd, inputs) -> None:
        self._q, self._qd, self._last_inputs = q, qd, inputs
        self._q_np, self._qd_np = np.asarray(q), np.asarray(qd)

    def _ctrl(self, inputs) -> jnp.ndarray:
        m = self.mj_model
        ctrl = np.zeros(m.nu)
        ctrl[[m.actuator(a).id for a in (ACTUATOR_PLANTARIS, ACTUATOR_KNEE, ACTUATOR_HIP)]] = \
            inputs[:3]
        return jnp.asarray(ctrl)

    def _inputs(self, k: int) -> np.ndarray:
        """(tension, knee ctrl, hip ctrl, support N) for the step from t_k."""
        if k >= len(self._table):
            self._extend_table(k + 1)
        row = self._table[k].copy()
        row[0] = self._tension
        return row

    def _extend_table(self, n: int) -> None:
        """Servo controls, forelimb support and servo targets at t = k dt, tabulated ahead
        (the inputs depend on time only), as MujocoFrogPlant does."""
        n = max(n, 2 * len(self._table), 1024)
        t = np.arange(n) * self.dt_s
        knee, hip = servo_controls(t, self.spec)
        self._table = np.stack([np.zeros(n), knee, hip,
                                np.asarray(forelimb_support_N(t, self.spec), dtype=float)], 1)
        knee_t, hip_t = servo_targets_rad(t, self.spec)
        self._targets = np.stack([np.asarray(knee_t), np.asarray(hip_t)], 1).tolist()
