"""The muscle-absent frog jump (control 1) on the JAX engine, compared with the MuJoCo frog.

Issue 3, acceptance 4; docs/invitro/frog.md §15 "Frog jump on the engine".

Model. The MJCF of `mjcf.build_frog_mjcf(spec)` with two changes (`engine_frog_mjcf`):
* the `plantaris` motor is dropped (control 1 has no muscle; in MuJoCo it is present with zero
  tension, so both engines run the same trial); the tendon itself stays. This variant predates
  the engine's spatial-tendon actuators, which now compile this motor too
  (engine/actuation.py);
* the smooth-contact law (engine/contact.py, OpenSim SmoothSphereHalfSpaceForce) gets
  parameters for a 15 g frog as MJCF custom numerics `contact:<param>` (`FROG_CONTACT`; the
  engine defaults are human-foot values). MuJoCo ignores them; the engine ignores the pairs'
  solref/solimp/friction/gap. Derivation in the docs.
Everything else (bodies, inertias, joint limits as soft constraints, the knee and hip position
servos, the 7 explicit floor `<pair>`s) is read by the engine from the same MjModel.

Forelimb support. The MuJoCo plant applies F(t) = `targets.forelimb_support_N(t)` (world +z)
through `xfrc_applied` on the massless body `forelimb_support`, i.e. at its `xipos`; the engine
rollout gets the same per-step `xfrc_applied` (engine/applied.py, MuJoCo's mj_xfrcAccumulate),
so the right-hand side is the engine's `forward_dynamics`:
  a0 = M^-1 (tau_act + tau_passive + tau_contact - c + J_p^T F),   qacc = limit QP(a0)
(Wang et al. 2022 Eq. 7 with an external force), and the step is the engine's own
(`engine.rollout`: explicit Euler, semi-implicit Euler, or RK4 in MuJoCo 4.0.0's
Runge-Kutta-Munthe-Kaas form), ctrl and F held over each step as MuJoCo holds ctrl and
xfrc_applied. The accelerations reported per sample are `forward_dynamics` at that sample's
state with that step's inputs (MuJoCo's qacc after mj_forward).

Metrics (metrics.py, docs/invitro/metrics.md): COM = subtree COM of the root (the whole frog);
floor contact = any contact sphere (capsules: their two end spheres, which is where a capsule
is closest to a plane) within `metrics.TOUCH_TOLERANCE_M` of the floor; takeoff = start of the
first run of >= MIN_FLIGHT_S (10 ms) without floor contact, counted in samples of the step in
use (the muscle-absent frog grazes the floor for ~2 ms just after it first leaves it, see
frog.md §13); landing, height, forward distance as in `metrics.jump_metrics`.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import xml.etree.ElementTree as ET
from types import MappingProxyType
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import engine
from myotwin.engine.contact import contact_forces_from_kinematics
from myotwin.engine.kinematics import kinematics
from myotwin.engine.simulate import n_steps_for

from .metrics import TOUCH_TOLERANCE_M, JumpMetrics, Rollout, jump_metrics, rollout_open_loop
from .mjcf import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, BODY_FOOT,
                   BODY_FORELIMB_SUPPORT, HINGE_JOINTS, build_frog_mjcf, start_qpos)
from .spec import FrogSpec
from .targets import forelimb_support_N, servo_controls

__all__ = ["DEFAULT_DT_S", "FROG_CONTACT", "INTEGRATORS", "MIN_FLIGHT_S", "EngineFrog",
           "EngineJump", "JumpComparison", "com_acceleration", "compare_with_mujoco",
           "engine_frog_mjcf", "frog_inputs", "frog_samples", "support_xfrc",
           "jump_summary", "load_engine_frog", "min_flight_steps", "rollout_frog",
           "run_engine_jump", "run_mujoco_control1"]

FROG_CONTACT: Mapping[str, float] = MappingProxyType({
    "stiffness_N_per_m2": 3.0e6,
    "dissipation_s_per_m": 2.0,
    "viscous_friction_s_per_m": 0.0,
    "transition_velocity_m_per_s": 0.05,
    "constant_contact_force": 1.0e-12,
    "hertz_smoothing_per_m": 1.0e5,
    "hunt_crossley_smoothing_s_per_m": 50.0,
})
"""Smooth-contact parameters of the engine frog (SI; names as engine.CONTACT_PARAMS). Static
and dynamic friction are `spec.friction` (MuJoCo's sliding friction, 1). Static Hertz
indentation 0.10 mm for half the weight on the toe (R = 2.88 mm), toe contact period 2.3 ms:
resolved by RK4 at DEFAULT_DT_S (derivation: docs/invitro/frog.md §15)."""
DEFAULT_DT_S = 0.25e-3
"""Engine step: the 0.145 g effective mass of the toe on its Hertz spring has omega ~ 2.8 rad/ms,
at the RK4 stability edge (2.83) with 1 ms; 0.25 ms gives omega dt = 0.7."""
MIN_FLIGHT_S = 0.010
"""Shortest flight counted as takeoff (s); as frog.md §13, independent of the step."""
INTEGRATORS = ("rk4", "semi_implicit_euler", "explicit_euler")


def engine_frog_mjcf(spec: FrogSpec = FrogSpec(),
                     contact: Mapping[str, float] = FROG_CONTACT) -> str:
    """`build_frog_mjcf(spec)` without the plantaris motor and with `contact:<param>` numerics
    (`contact` plus static/dynamic friction = spec.friction). Pure; comments are dropped."""
    root = ET.fromstring(build_frog_mjcf(spec))
    actuators = root.find("actuator")
    motor = actuators.find(f"motor[@name='{ACTUATOR_PLANTARIS}']")
    actuators.remove(motor)
    params = {**contact, "static_friction": spec.friction, "dynamic_friction": spec.friction}
    unknown = sorted(set(params) - set(engine.CONTACT_PARAMS))
    if unknown:
        raise ValueError(f"engine_frog_mjcf: unknown contact parameter(s) {unknown}; expected "
                         f"names from engine.CONTACT_PARAMS {sorted(engine.CONTACT_PARAMS)}")
    custom = ET.Element("custom")
    for name, value in params.items():
        ET.SubElement(custom, "numeric", name=f"contact:{name}", data=repr(float(value)))
    root.insert(list(root).index(root.find("worldbody")), custom)
    return ET.tostring(root, encoding="unicode")


@dataclasses.dataclass(frozen=True)
class EngineFrog:
    """The compiled engine frog: `model` (engine.Model pytree) and the ids the jump needs."""

    model: engine.Model
    spec: FrogSpec
    mj_model: object                       # mujoco.MjModel of engine_frog_mjcf(spec)
    support_body: int                      # body of the forelimb support (xfrc_applied target)
    root_body: int                         # the foot (free joint): subtree COM = whole frog
    hinge_qpos_adr: tuple[int, ...]        # tmt, ankle, knee, hip
    contact_names: tuple[str, ...]         # rows of the contact arrays
    contact_body: tuple[int, ...]          # body of each contact sphere


def load_engine_frog(spec: FrogSpec = FrogSpec(),
                     contact: Mapping[str, float] = FROG_CONTACT) -> EngineFrog:
    """Compile `engine_frog_mjcf(spec, contact)` (needs jax_enable_x64, else RuntimeError)."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(engine_frog_mjcf(spec, contact))
    model = engine.compile_model(m)
    if model.dynamics_unsupported:
        raise ValueError("engine frog: elements the engine cannot simulate remain after dropping "
                         f"the plantaris motor: {'; '.join(model.dynamics_unsupported)}")
    names = tuple(m.actuator(i).name for i in range(m.nu))
    if names != (ACTUATOR_KNEE, ACTUATOR_HIP):
        raise ValueError(f"engine frog: actuators {names}, expected ({ACTUATOR_KNEE!r}, "
                         f"{ACTUATOR_HIP!r}) (the ctrl columns of frog_inputs)")
    return EngineFrog(model, spec, m, m.body(BODY_FORELIMB_SUPPORT).id, m.body(BODY_FOOT).id,
                      tuple(int(m.jnt_qposadr[m.joint(j).id]) for j in HINGE_JOINTS),
                      model.contact.contact_name,
                      tuple(model.contact.geom_body[g] for g in model.contact.contact_geom))


def frog_inputs(spec: FrogSpec, n_steps: int, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-step inputs at t_k = k dt, k < n_steps: ctrl (n_steps, 2) = (knee, hip) servo
    controls (targets.servo_controls) and the forelimb support force (n_steps,) in N."""
    t = np.arange(n_steps) * dt_s
    knee, hip = servo_controls(t, spec)
    return np.stack([knee, hip], axis=1), np.asarray(forelimb_support_N(t, spec), dtype=float)


# ----------------------------------------------------------------------------- dynamics


def support_xfrc(model: engine.Model, support_N, support_body: int) -> jax.Array:
    """(n, n_body, 6) MuJoCo xfrc_applied rows (force, torque) with the world +z force
    support_N (n,) (N) on `support_body` (at its COM, as MuJoCo applies xfrc_applied)."""
    support_N = jnp.asarray(support_N, dtype=float)
    xfrc = jnp.zeros(support_N.shape + (model.n_body, 6), dtype=support_N.dtype)
    return xfrc.at[..., support_body, 2].set(support_N)


@functools.partial(jax.jit, static_argnames=("n_steps", "support_body", "integrator"))
def _rollout(model, q0, qd0, ctrl, support_N, dt_s, n_steps: int, support_body: int,
             integrator: engine.Integrator):
    xfrc = support_xfrc(model, support_N, support_body)
    q, qd = engine.rollout(model, q0, qd0, ctrl, dt_s, n_steps, integrator, xfrc_applied=xfrc)
    qacc = jax.vmap(lambda q, qd, c, f: engine.forward_dynamics(model, q, qd, c, xfrc_applied=f))(
        q[:-1], qd[:-1], ctrl, xfrc)
    return q, qd, qacc


def rollout_frog(frog: EngineFrog, q0, qd0, ctrl, support_N, dt_s: float,
                 integrator: str = "rk4") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q (n+1, n_q), qd (n+1, n_v), qacc (n, n_v)) from (q0, qd0) with ctrl (n, 2) and
    support_N (n,) held over each step; qacc[k] is the acceleration at (q[k], qd[k]) with the
    inputs of step k. FloatingPointError names the first non-finite step."""
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator {integrator!r}: expected one of {INTEGRATORS} (for "
                         "bdf1/sdirk2 use engine.simulate with xfrc_applied)")
    if not (np.isfinite(dt_s) and dt_s > 0):
        raise ValueError(f"dt_s = {dt_s!r}: expected a positive step in s")
    ctrl, support_N = np.asarray(ctrl, dtype=float), np.asarray(support_N, dtype=float)
    if ctrl.ndim != 2 or ctrl.shape[1] != frog.model.n_u or support_N.shape != ctrl.shape[:1]:
        raise ValueError(f"ctrl {ctrl.shape} / support_N {support_N.shape}: expected "
                         f"(n, {frog.model.n_u}) and (n,)")
    q, qd, qdd = (np.asarray(a) for a in _rollout(
        frog.model, jnp.asarray(q0, dtype=float), jnp.asarray(qd0, dtype=float),
        jnp.asarray(ctrl), jnp.asarray(support_N), dt_s, len(ctrl), frog.support_body,
        engine.Integrator(integrator)))
    bad = ~(np.isfinite(q).all(axis=1) & np.isfinite(qd).all(axis=1))
    if bad.any():
        k = int(np.argmax(bad))
        raise FloatingPointError(f"engine frog diverged: non-finite state at step {k} "
                                 f"(t = {k * dt_s:g} s) with {integrator} at dt_s = {dt_s:g}")
    return q, qd, qdd


@functools.partial(jax.jit, static_argnames=("root_body",))
def _samples(model, q, qd, root_body: int):
    def one(q, qd):
        kin = kinematics(model, q)
        cf = contact_forces_from_kinematics(model, kin, qd)
        return (kin.subtree_com_world[root_body], cf.points.indentation, cf.force_world,
                cf.points.point_world)

    return jax.vmap(one)(q, qd)


def frog_samples(frog: EngineFrog, q, qd) -> tuple[np.ndarray, ...]:
    """Per-sample outputs for states q (n, n_q), qd (n, n_v): whole-body COM (n, 3), contact
    indentation (n, n_c) (> 0 penetrating), contact force on the frog (n, n_c, 3) and its
    point (n, n_c, 3), world frame."""
    return tuple(np.asarray(a) for a in _samples(frog.model, jnp.asarray(q, dtype=float),
                                                 jnp.asarray(qd, dtype=float), frog.root_body))


@functools.partial(jax.jit, static_argnames=("root_body",))
def _com_velocity_on_curve(model, q, qd, qacc, t, root_body: int):
    """(3,) whole-body COM velocity sum_b m_b J_b qd(t) / m at q(t) = q (+) (t qd + t^2/2 qacc),
    qd(t) = qd + t qacc; J_b is the point Jacobian of body b's COM (mj_jac); every body of the
    frog is in the root's subtree."""
    qd_t = qd + t * qacc
    kin = kinematics(model, engine.integrate_pos(model, q, qd + 0.5 * t * qacc, t))
    moment = sum(model.body_mass[b] * engine.point_jacobian(model, kin, kin.body_com_world[b],
                                                            b)[0]
                 for b in range(root_body, model.n_body))
    return moment @ qd_t / jnp.sum(model.body_mass)


def com_acceleration(frog: EngineFrog, q, qd, qacc, h_s: float = 3e-6) -> np.ndarray:
    """(n, 3) whole-body COM acceleration at states q (n, n_q), qd (n, n_v) with joint
    accelerations qacc (n, n_v) (e.g. `rollout_frog`'s): the time derivative at t = 0 of the COM
    velocity along q(t) = q (+) (t qd + t^2/2 qacc), qd(t) = qd + t qacc (a curve with the
    state's velocity and acceleration), by the 4th-order central stencil
    (8 (v(h) - v(-h)) - (v(2h) - v(-2h))) / (12 h). Measured on the frog's flight: < 3e-10 g at
    h = 3 us (2nd-order differences: 8e-8 g at 0.1 us)."""
    out = []
    for qk, vk, ak in zip(*(jnp.asarray(np.asarray(a), dtype=float) for a in (q, qd, qacc))):
        v = {i: np.asarray(_com_velocity_on_curve(frog.model, qk, vk, ak, i * h_s,
                                                  frog.root_body)) for i in (-2, -1, 1, 2)}
        out.append((8.0 * (v[1] - v[-1]) - (v[2] - v[-2])) / (12.0 * h_s))
    return np.array(out).reshape(-1, 3)


# ----------------------------------------------------------------------------- the jump


@dataclasses.dataclass(frozen=True)
class EngineJump:
    """Samples of the engine jump, index 0 = start state, then one per step (as `Rollout`)."""

    time_s: np.ndarray              # (n+1,)
    qpos: np.ndarray                # (n+1, 11)
    qvel: np.ndarray                # (n+1, 10)
    hinge_angles_rad: np.ndarray    # (n+1, 4) tmt, ankle, knee, hip
    com_world_m: np.ndarray         # (n+1, 3)
    floor_contact: np.ndarray       # (n+1,) bool: a contact sphere within TOUCH_TOLERANCE_M
    penetration_m: np.ndarray       # (n+1,) deepest indentation (>= 0)
    floor_force_N: np.ndarray       # (n+1, 3) total floor force on the frog (world)
    contact_force_N: np.ndarray     # (n+1, n_c, 3) per contact sphere, on the frog
    contact_point_m: np.ndarray     # (n+1, n_c, 3) where it acts (world)
    indentation_m: np.ndarray       # (n+1, n_c) > 0 penetrating
    qacc: np.ndarray                # (n, 10) at sample k with the inputs of step k
    ctrl: np.ndarray                # (n, 2) knee, hip servo ctrl held over each step
    support_N: np.ndarray           # (n,) forelimb support held over each step
    dt_s: float
    integrator: str
    wall_s: float                   # rollout wall time including compilation

    def metrics(self) -> JumpMetrics:
        return jump_metrics(self.time_s, self.com_world_m, self.floor_contact,
                            min_flight_steps(self.dt_s))


def min_flight_steps(dt_s: float) -> int:
    """Samples in MIN_FLIGHT_S at step dt_s (10 at 1 ms, as frog.md §13; 40 at 0.25 ms)."""
    return max(1, int(round(MIN_FLIGHT_S / dt_s)))


def run_engine_jump(spec: FrogSpec = FrogSpec(), duration_s: float = 0.3,
                    dt_s: float = DEFAULT_DT_S, integrator: str = "rk4",
                    frog: EngineFrog | None = None) -> EngineJump:
    """Control 1 on the engine: start pose at rest, servo targets and forelimb support of
    `targets.py` at t_k, no plantaris. `frog` (from load_engine_frog(spec)) may be reused."""
    frog = load_engine_frog(spec) if frog is None else frog
    n = n_steps_for(duration_s, dt_s)
    ctrl, support = frog_inputs(spec, n, dt_s)
    t0 = time.perf_counter()
    q, qd, qacc = rollout_frog(frog, start_qpos(spec), np.zeros(frog.model.n_v), ctrl, support,
                               dt_s, integrator)
    wall = time.perf_counter() - t0
    com, depth, force, point = frog_samples(frog, q, qd)
    return EngineJump(np.arange(n + 1) * dt_s, q, qd, q[:, list(frog.hinge_qpos_adr)], com,
                      (depth > -TOUCH_TOLERANCE_M).any(axis=1), np.maximum(depth.max(axis=1), 0.0),
                      force.sum(axis=1), force, point, depth, qacc, ctrl, support, dt_s,
                      integrator, wall)


def jump_summary(roll: Rollout | EngineJump, dt_s: float) -> dict:
    """JSON-ready metrics of an engine or MuJoCo control-1 rollout (SI units; None if absent)."""
    m = jump_metrics(roll.time_s, roll.com_world_m, roll.floor_contact, min_flight_steps(dt_s))
    fz = roll.floor_force_N[:, 2]
    i_to = (int(round(m.takeoff_time_s / dt_s)) if m.takeoff_time_s is not None
            else len(roll.time_s))
    return {**dataclasses.asdict(m), "dt_s": dt_s,
            "peak_floor_force_N": float(fz.max()), "peak_floor_force_time_s":
            float(roll.time_s[int(np.argmax(fz))]),
            "stance_peak_floor_force_N": float(fz[:i_to].max()),
            "max_penetration_m": float(roll.penetration_m.max()),
            "stance_max_penetration_m": float(roll.penetration_m[:i_to].max()),
            "final_com_m": [float(x) for x in roll.com_world_m[-1]]}


@dataclasses.dataclass(frozen=True)
class JumpComparison:
    """Control 1 on both engines with the same servo-target table and forelimb support."""

    engine: EngineJump
    mujoco: Rollout                 # MujocoFrogPlant's model at mujoco_dt_s, tension 0
    mujoco_dt_s: float

    def summary(self) -> dict:
        e, mj = jump_summary(self.engine, self.engine.dt_s), jump_summary(self.mujoco,
                                                                          self.mujoco_dt_s)
        e.update(integrator=self.engine.integrator, contact=dict(FROG_CONTACT))
        diff = (e["takeoff_time_s"] - mj["takeoff_time_s"]
                if None not in (e["takeoff_time_s"], mj["takeoff_time_s"]) else None)
        ratio = (e["jump_height_m"] / mj["jump_height_m"]
                 if None not in (e["jump_height_m"], mj["jump_height_m"]) else None)
        return {"engine": e, "mujoco": mj, "takeoff_time_diff_s": diff,
                "jump_height_ratio": ratio}


def run_mujoco_control1(spec: FrogSpec = FrogSpec(), duration_s: float = 0.3,
                        dt_s: float | None = None) -> Rollout:
    """The MuJoCo frog's control-1 trial open loop: `MujocoFrogPlant(spec)` (timestep dt_s if
    given) with zero tension, driven by its own input sequence (servo ctrl, forelimb support,
    mj_step) and sampled after mj_forward by `metrics.rollout_open_loop`; no loop, no device."""
    from .plant import MujocoFrogPlant

    if dt_s is not None:
        spec = dataclasses.replace(spec, timestep_s=dt_s)
    plant = MujocoFrogPlant(spec)
    plant.set_muscle_tension(0.0)
    return rollout_open_loop(plant.model, spec, lambda t: 0.0, duration_s, data=plant.data)


def compare_with_mujoco(spec: FrogSpec = FrogSpec(), duration_s: float = 0.3,
                        dt_s: float = DEFAULT_DT_S, integrator: str = "rk4",
                        mujoco_dt_s: float | None = None,
                        frog: EngineFrog | None = None) -> JumpComparison:
    """Control 1 on the engine (dt_s, integrator) and in MuJoCo (RK4 at mujoco_dt_s, default
    dt_s: the like-for-like comparison; spec.timestep_s = 1 ms is the loop's step)."""
    eng = run_engine_jump(spec, duration_s, dt_s, integrator, frog)
    mj_dt = dt_s if mujoco_dt_s is None else mujoco_dt_s
    return JumpComparison(eng, run_mujoco_control1(spec, duration_s, mj_dt), mj_dt)
