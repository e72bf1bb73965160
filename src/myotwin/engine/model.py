"""The skeleton model: an MJCF compiled once by MuJoCo, frozen into an immutable JAX pytree.

MuJoCo's own compiler reads the MJCF (so MJCF semantics -- defaults, `fullinertia`
diagonalisation, angle units, `ref` -- are exactly MuJoCo's); `compile_model` then copies the
compiled arrays it needs into a `Model`, validated in NumPy. Integer topology is static pytree
metadata (Python tuples and ints, hashed by `jax.jit`); physical parameters are float64
`jax.Array` leaves so gradients and `vmap` reach them.

Layout conventions are MuJoCo's: `q` in qpos layout (n_q,), quaternions w-first; `qd` in qvel
layout (n_v,), free joint = (linear velocity of the body origin in the world frame, angular
velocity in the body frame), ball joint = angular velocity in the body frame.

Dynamics parameters: joint springs (stiffness, springref; hinge, slide, ball and free), dof
damping, armature, joint limits (range, margin, solreflimit, solimplimit, dof_invweight0:
MuJoCo's soft constraints, solved in limits.py), joint actuator-force ranges, and actuators
with a joint transmission on a hinge/slide or a tendon transmission on a spatial tendon, no
activation dynamics, fixed gain and none/affine bias (MJCF `<motor>`, `<position>`,
`<velocity>`, `<general>` of that kind), with gear, ctrl and force clamping. Features the
dynamics cannot represent (other actuators, tendon springs, joint friction loss, which is a
MuJoCo constraint, fluid forces...) do not stop kinematics: they are listed in
`Model.dynamics_unsupported` and `require_dynamics_support` raises naming them when
passive/actuator forces or dynamics are asked for.
Contact: sphere/capsule-plane pairs that MuJoCo would collide compile into `Model.contact`
(contact.py, smooth OpenSim-style law); other colliding pairs are listed in
`dynamics_unsupported`; geoms that never collide are ignored. Rejected at load: equality
constraints on flexes (equality.py), mocap bodies, gravity compensation (`gravcomp`), a free
joint sharing its body.
Point masses (bodies with zero inertia, which MuJoCo's compiler refuses) compile from a
stand-in inertia and a `point_mass:<body>` custom numeric (point_mass.py).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.scalars import is_integer

if TYPE_CHECKING:  # contact.py and myotwin.paths import this module
    from myotwin.engine.contact import ContactModel
    from myotwin.engine.equality import EqualityModel
    from myotwin.engine.friction import FrictionModel
    from myotwin.engine.tendon_armature import TendonArmature
    from myotwin.engine.tendons import TendonModel
    from myotwin.inertia.muscle_mass import MuscleMass
    from myotwin.paths.pathset import PathSet


class JointType(enum.IntEnum):
    """MuJoCo's mjtJoint values."""

    FREE = 0
    BALL = 1
    SLIDE = 2
    HINGE = 3


#: qpos and qvel widths of each joint type.
JOINT_NQ = {JointType.FREE: 7, JointType.BALL: 4, JointType.SLIDE: 1, JointType.HINGE: 1}
JOINT_NV = {JointType.FREE: 6, JointType.BALL: 3, JointType.SLIDE: 1, JointType.HINGE: 1}

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class Model:
    """Immutable skeleton model (a JAX pytree). Body 0 is the world.

    Static topology (pytree metadata):
      n_body, n_joint, n_site, n_q, n_v: counts.
      body_parent (n_body,): parent body id (world's parent is 0).
      body_root (n_body,): id of the child-of-world ancestor (MuJoCo's body_rootid).
      body_joint_adr, body_joint_num (n_body,): first joint and number of joints.
      joint_type (n_joint,): `JointType` values; joint_body (n_joint,);
      joint_qpos_adr, joint_dof_adr (n_joint,): addresses in q and qd.
      dof_body (n_v,): body of each dof; site_body (n_site,).

    Physical parameters (float64 leaves):
      body_pos (n_body, 3), body_quat (n_body, 4): frame in the parent frame (w-first).
      body_mass (n_body,); body_ipos (n_body, 3), body_iquat (n_body, 4): COM frame in the
        body frame; body_inertia (n_body, 3): principal inertia about the COM.
      joint_pos (n_joint, 3), joint_axis (n_joint, 3): anchor and unit axis in the body frame.
      qpos0 (n_q,): reference configuration (hinge/slide `ref`; q - qpos0 is the joint motion).
      dof_armature (n_v,): added to the mass-matrix diagonal.
      site_pos (n_site, 3), site_quat (n_site, 4): site frame in its body frame.
      gravity (3,): world-frame gravity (zero when MuJoCo's gravity flag is disabled).
      joint_stiffness (n_joint,): spring stiffness (zero when springs are disabled);
      qpos_spring (n_q,): spring rest configuration (MJCF `springref`, qpos layout).
      dof_damping (n_v,): viscous damping per dof (zero when dampers are disabled).
      joint_range (n_joint, 2): MJCF range (enforced where `joint_limited`, see limits.py).
      joint_margin (n_joint,), joint_solref (n_joint, 2), joint_solimp (n_joint, 5): limit
        margin, solreflimit, solimplimit; dof_invweight0 (n_v,): MuJoCo's dof_invweight0
        (scales the limit regulariser); limit_min_timeconst_s (): refsafe floor 2 timestep.
      joint_actfrc_range (n_joint, 2): clamp of the actuator force on each joint's dofs.
      actuator_gear (n_u,): transmission gear (gear[0]); actuator_gain (n_u,): gainprm[0];
      actuator_bias (n_u, 3): biasprm[0:3] (force = gain ctrl + b0 + b1 length + b2 velocity);
      actuator_ctrl_range, actuator_force_range (n_u, 2): clamps.

    Static dynamics metadata:
      n_u: number of actuators (= controls). actuator_dof (n_u,): dof driven by each joint
        actuator (-1 for other or unsupported transmissions). actuator_tendon (n_u,): MuJoCo
        tendon id of each supported tendon actuator (a spatial tendon, one of `paths`), else
        -1. actuator_fixed_tendon (n_u,): MuJoCo tendon id of each fixed-tendon actuator, else
        -1. actuator_ctrl_limited, actuator_force_limited (n_u,) bools.
      joint_limited, joint_actfrc_limited (n_joint,) bools.
      limits_enabled: False when MuJoCo's limit or constraint flag is disabled.
      dynamics_unsupported: messages naming each element the dynamics cannot represent.

    Contact (a sub-pytree): contact: `contact.ContactModel` (geoms, planes, per-contact law
      parameters as float64 leaves), or None when no sphere/capsule-plane pair collides.

    Tendon springs, dampers and limits (a sub-pytree): tendons: `tendons.TendonModel` of the
      spatial and fixed tendons with a stiffness, a damping or an enforced limit, or None.
    Tendon armature (a sub-pytree): tendon_armature: `tendon_armature.TendonArmature` of the
      tendons with armature (MuJoCo tendon_armature; in the mass matrix and the bias force),
      or None.
    Dry friction (a sub-pytree): friction: `friction.FrictionModel` of the dofs and tendons
      with frictionloss (constraint rows solved with the limits, limits.py), or None.
    Equality constraints (a sub-pytree): equality: `equality.EqualityModel` of the active
      joint, tendon, connect and weld equalities (rows solved with the limits), or None.

    Fixed-tendon transmissions: actuator_fixed_coef_q (n_u, n_q), actuator_fixed_coef_v
      (n_u, n_v): each such actuator's tendon coefficients at its joints' qpos and dof
      addresses (zero rows elsewhere), or None when no actuator is on a fixed tendon.

    Musculotendon paths (a sub-pytree): paths: `myotwin.paths.PathSet` of every spatial tendon
      in file order (MuJoCo semantics, see docs/paths.md), or None when the MJCF has none.
      Fixed (joint) tendons are not paths and are left out.

    Muscle mass (a sub-pytree): muscle_mass: `myotwin.inertia.MuscleMass` (mass points on the
      paths, seed Eq. 7; MJCF numerics `muscle_mass:<tendon>`, or `inertia.with_muscle_mass`),
      or None: then the dynamics are those of massless muscles (docs/inertia.md).
    """

    body_pos: jax.Array
    body_quat: jax.Array
    body_mass: jax.Array
    body_ipos: jax.Array
    body_iquat: jax.Array
    body_inertia: jax.Array
    joint_pos: jax.Array
    joint_axis: jax.Array
    qpos0: jax.Array
    dof_armature: jax.Array
    site_pos: jax.Array
    site_quat: jax.Array
    gravity: jax.Array
    joint_stiffness: jax.Array
    qpos_spring: jax.Array
    dof_damping: jax.Array
    joint_range: jax.Array
    joint_actfrc_range: jax.Array
    actuator_gear: jax.Array
    actuator_gain: jax.Array
    actuator_bias: jax.Array
    actuator_ctrl_range: jax.Array
    actuator_force_range: jax.Array
    joint_margin: jax.Array
    joint_solref: jax.Array
    joint_solimp: jax.Array
    dof_invweight0: jax.Array
    limit_min_timeconst_s: jax.Array
    n_body: int = dataclasses.field(metadata=_STATIC)
    n_joint: int = dataclasses.field(metadata=_STATIC)
    n_site: int = dataclasses.field(metadata=_STATIC)
    n_q: int = dataclasses.field(metadata=_STATIC)
    n_v: int = dataclasses.field(metadata=_STATIC)
    body_parent: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    body_root: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    body_joint_adr: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    body_joint_num: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    joint_type: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    joint_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    joint_qpos_adr: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    joint_dof_adr: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    dof_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    site_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    n_u: int = dataclasses.field(default=0, metadata=_STATIC)
    actuator_dof: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    actuator_tendon: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    actuator_fixed_tendon: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    actuator_ctrl_limited: tuple[bool, ...] = dataclasses.field(default=(), metadata=_STATIC)
    actuator_force_limited: tuple[bool, ...] = dataclasses.field(default=(), metadata=_STATIC)
    joint_limited: tuple[bool, ...] = dataclasses.field(default=(), metadata=_STATIC)
    joint_actfrc_limited: tuple[bool, ...] = dataclasses.field(default=(), metadata=_STATIC)
    limits_enabled: bool = dataclasses.field(default=True, metadata=_STATIC)
    dynamics_unsupported: tuple[str, ...] = dataclasses.field(default=(), metadata=_STATIC)
    contact: ContactModel | None = None
    tendons: TendonModel | None = None
    tendon_armature: TendonArmature | None = None
    friction: FrictionModel | None = None
    equality: EqualityModel | None = None
    paths: PathSet | None = None
    muscle_mass: MuscleMass | None = None
    actuator_fixed_coef_q: jax.Array | None = None
    actuator_fixed_coef_v: jax.Array | None = None

    def dof_ancestor_mask(self) -> np.ndarray:
        """(n_body, n_v) bool: True where the dof moves the body (a dof of it or an ancestor)."""
        mask = np.zeros((self.n_body, self.n_v), dtype=bool)
        for b in range(1, self.n_body):
            mask[b] = mask[self.body_parent[b]]
            mask[b, [d for d in range(self.n_v) if self.dof_body[d] == b]] = True
        return mask


_DATA_FIELDS = [f.name for f in dataclasses.fields(Model) if not f.metadata.get("static")]
_META_FIELDS = [f.name for f in dataclasses.fields(Model) if f.metadata.get("static")]
jax.tree_util.register_dataclass(Model, data_fields=_DATA_FIELDS, meta_fields=_META_FIELDS)


def _name(mj_model, objtype_name: str, i: int) -> str:
    import mujoco

    objtype = getattr(mujoco.mjtObj, objtype_name)
    name = mujoco.mj_id2name(mj_model, objtype, i)
    return f"#{i}" + (f" '{name}'" if name else "")


def _validate(mj_model) -> None:
    """Raise ValueError naming the first MJCF element the engine cannot represent."""
    from myotwin.engine.equality import equality_problems

    problems = equality_problems(mj_model)
    if problems:
        raise ValueError("unsupported MJCF element: " + "; ".join(problems))
    for b in range(mj_model.nbody):
        if mj_model.body_mocapid[b] >= 0:
            raise ValueError(
                f"unsupported MJCF element: mocap body {_name(mj_model, 'mjOBJ_BODY', b)}"
            )
        if mj_model.body_gravcomp[b] != 0.0:
            raise ValueError(
                f"unsupported MJCF attribute: body {_name(mj_model, 'mjOBJ_BODY', b)} has "
                f"gravcomp={mj_model.body_gravcomp[b]}, expected 0"
            )
    for j in range(mj_model.njnt):
        b = int(mj_model.jnt_bodyid[j])
        if mj_model.jnt_type[j] == JointType.FREE and mj_model.body_jntnum[b] != 1:
            raise ValueError(
                f"unsupported MJCF element: free joint {_name(mj_model, 'mjOBJ_JOINT', j)} shares "
                f"body {_name(mj_model, 'mjOBJ_BODY', b)} with other joints"
            )


_TRN_JOINT, _TRN_TENDON, _DYN_NONE, _GAIN_FIXED, _BIAS_NONE, _BIAS_AFFINE = 0, 3, 0, 0, 0, 1
_DYN_MUSCLE, _GAIN_MUSCLE, _BIAS_MUSCLE, _WRAP_JOINT = 4, 2, 2, 1


def is_spatial_tendon(m, t: int) -> bool:
    """Whether tendon t of the compiled MjModel m is spatial (not fixed: joint coefficients)."""
    return m.tendon_num[t] > 0 and int(m.wrap_type[m.tendon_adr[t]]) != _WRAP_JOINT


def _actuator_problems(m, a: int) -> list[str]:
    """Why actuator a is outside the supported subset (empty list if it is supported)."""
    what = f"actuator {_name(m, 'mjOBJ_ACTUATOR', a)}"
    out = []
    if (m.actuator_dyntype[a] == _DYN_MUSCLE or m.actuator_gaintype[a] == _GAIN_MUSCLE
            or m.actuator_biastype[a] == _BIAS_MUSCLE):
        # one clear message instead of three (dyntype, gaintype, biastype)
        return [f"{what}: MuJoCo muscle actuator (dyntype/gaintype/biastype muscle) is not "
                "supported by the engine (only dyntype none with fixed gain and none/affine "
                "bias; Hill-type muscle models are in myotwin.muscle)"]
    trn = int(m.actuator_trntype[a])
    if trn == _TRN_TENDON:
        t = int(m.actuator_trnid[a, 0])
        tendon = f"tendon {_name(m, 'mjOBJ_TENDON', t)}"
        if hasattr(m, "tendon_actfrclimited") and m.tendon_actfrclimited[t]:
            out.append(f"{what}: {tendon} has actuatorfrcrange (tendon-level actuator force "
                       "limits are not supported)")
    elif trn != _TRN_JOINT:
        out.append(f"{what}: transmission type {trn} (only joint and spatial-tendon "
                   "transmissions are supported, not site/body/slider-crank)")
    elif m.jnt_type[m.actuator_trnid[a, 0]] not in (JointType.HINGE, JointType.SLIDE):
        out.append(f"{what}: joint transmission on a ball/free joint (only hinge/slide)")
    if m.actuator_dyntype[a] != _DYN_NONE:
        out.append(f"{what}: activation dynamics (dyntype {int(m.actuator_dyntype[a])}, "
                   "e.g. a muscle); only dyntype none is supported")
    if m.actuator_gaintype[a] != _GAIN_FIXED:
        out.append(f"{what}: gaintype {int(m.actuator_gaintype[a])}, expected fixed (0)")
    if m.actuator_biastype[a] not in (_BIAS_NONE, _BIAS_AFFINE):
        out.append(f"{what}: biastype {int(m.actuator_biastype[a])}, expected none/affine")
    for field in ("actuator_damping", "actuator_armature", "actuator_delay"):
        if hasattr(m, field) and np.any(np.asarray(getattr(m, field)[a]) != 0):
            out.append(f"{what}: nonzero {field}")
    return out


def _dynamics_problems(m, external=frozenset()) -> list[str]:
    """Messages naming each element that forces/dynamics cannot represent (kinematics can);
    the `external` actuators are not the engine's (`compile_model`)."""
    out = [p for a in range(m.nu) if a not in external for p in _actuator_problems(m, a)]
    for j in range(m.njnt):
        what = f"joint {_name(m, 'mjOBJ_JOINT', j)}"
        if (m.jnt_stiffness[j] != 0 and hasattr(m, "jnt_springyield")
                and m.jnt_springyield[j] != 0):
            out.append(f"{what}: nonzero springyield (elasto-plastic spring)")
        if np.any(m.jnt_stiffnesspoly[j] != 0):
            out.append(f"{what}: nonzero stiffnesspoly (nonlinear springs)")
        if m.jnt_actgravcomp[j]:
            out.append(f"{what}: actuatorgravcomp")
    for d in range(m.nv):
        what = f"dof {d} of joint {_name(m, 'mjOBJ_JOINT', int(m.dof_jntid[d]))}"
        if np.any(m.dof_dampingpoly[d] != 0):
            out.append(f"{what}: nonzero dampingpoly (nonlinear damping)")
    from myotwin.engine.tendons import tendon_problems

    out += tendon_problems(m)
    if m.opt.density != 0 or m.opt.viscosity != 0:
        out.append("option: fluid forces (density/viscosity nonzero)")
    return out


def _f64(x) -> jax.Array:
    return jnp.asarray(np.array(x, dtype=np.float64), dtype=jnp.float64)


def compile_model(mj_model, external_actuators: Sequence[int] = ()) -> Model:
    """Freeze a compiled `mujoco.MjModel` into a `Model` (the MjModel is only read).

    `external_actuators`: ids of actuators whose force another part of myotwin produces (the
    MuJoCo muscles that `musculoskeletal.mjcf` turns into a `muscle.Muscle` group): the engine
    keeps their ctrl slot (n_u is MuJoCo's) but gives them no force and does not list them as
    unsupported.

    Raises ValueError for unsupported features (see module docstring) and RuntimeError if
    JAX's float64 mode is off (call `jax.config.update("jax_enable_x64", True)` first: the
    engine is validated against MuJoCo to 1e-10 and float32 cannot meet that).
    """
    import mujoco

    if not jax.config.jax_enable_x64:
        raise RuntimeError(
            'myotwin.engine needs float64: call jax.config.update("jax_enable_x64", True) '
            "before compiling a model"
        )
    from myotwin.engine.limits import limit_parameters  # limits.py imports this module

    if not isinstance(mj_model, mujoco.MjModel):
        text = repr(mj_model)
        text = text if len(text) <= 300 else text[:300] + "..."
        raise TypeError(f"compile_model: expected a mujoco.MjModel, got "
                        f"{type(mj_model).__name__} {text}; for an MJCF file use "
                        "engine.load(path)")
    _validate(mj_model)
    m = mj_model
    gravity = np.array(m.opt.gravity, dtype=np.float64)
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY:
        gravity = np.zeros(3)
    ints = lambda a: tuple(int(v) for v in a)  # noqa: E731
    bools = lambda a: tuple(bool(v) for v in a)  # noqa: E731
    dsbl = m.opt.disableflags
    stiffness = np.array(m.jnt_stiffness, dtype=np.float64)
    if dsbl & mujoco.mjtDisableBit.mjDSBL_SPRING:
        stiffness = np.zeros_like(stiffness)
    damping = np.array(m.dof_damping, dtype=np.float64)
    if dsbl & mujoco.mjtDisableBit.mjDSBL_DAMPER:
        damping = np.zeros_like(damping)
    from myotwin.engine.contact import compile_contact  # contact.py imports this module

    contact, contact_problems = compile_contact(m)
    if (not isinstance(external_actuators, (list, tuple, set, frozenset, np.ndarray))
            or not all(is_integer(a) for a in external_actuators)):   # int() made 0.5 id 0
        raise ValueError(f"compile_model: external_actuators must be a list of actuator ids "
                         f"(integers), got {external_actuators!r}")
    external = {int(a) for a in external_actuators}
    if not external <= set(range(m.nu)):
        raise ValueError(f"external_actuators {sorted(external)}: the model has {m.nu} "
                         "actuators")
    problems = _dynamics_problems(m, external) + contact_problems
    supported = [a not in external and not _actuator_problems(m, a) for a in range(m.nu)]
    act_dof = tuple(int(m.jnt_dofadr[m.actuator_trnid[a, 0]])
                    if supported[a] and m.actuator_trntype[a] == _TRN_JOINT else -1
                    for a in range(m.nu))
    on_tendon = [int(m.actuator_trnid[a, 0])
                 if supported[a] and m.actuator_trntype[a] == _TRN_TENDON else -1
                 for a in range(m.nu)]
    act_tendon = tuple(t if t >= 0 and is_spatial_tendon(m, t) else -1 for t in on_tendon)
    act_fixed = tuple(t if t >= 0 and not is_spatial_tendon(m, t) else -1 for t in on_tendon)
    gain = np.array(m.actuator_gainprm[:, 0], dtype=np.float64)
    bias = np.array(m.actuator_biasprm[:, :3], dtype=np.float64).reshape(m.nu, 3)
    if dsbl & mujoco.mjtDisableBit.mjDSBL_ACTUATION:
        gain, bias = np.zeros_like(gain), np.zeros_like(bias)
    for a in external:
        gain[a], bias[a] = 0.0, 0.0
    ctrl_limited = np.asarray(m.actuator_ctrllimited, dtype=bool)
    if dsbl & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL:
        ctrl_limited = np.zeros_like(ctrl_limited)
    from myotwin.engine.equality import compile_equality
    from myotwin.engine.friction import compile_friction
    from myotwin.engine.point_mass import point_mass_bodies, with_point_masses
    from myotwin.engine.tendon_armature import compile_tendon_armature
    from myotwin.engine.tendons import compile_tendons

    point_masses = point_mass_bodies(m)
    limits = limit_parameters(m)
    model = Model(
        body_pos=_f64(m.body_pos),
        body_quat=_f64(m.body_quat),
        body_mass=_f64(m.body_mass),
        body_ipos=_f64(m.body_ipos),
        body_iquat=_f64(m.body_iquat),
        body_inertia=_f64(m.body_inertia),
        joint_pos=_f64(m.jnt_pos).reshape(m.njnt, 3),
        joint_axis=_f64(m.jnt_axis).reshape(m.njnt, 3),
        qpos0=_f64(m.qpos0),
        dof_armature=_f64(m.dof_armature),
        site_pos=_f64(m.site_pos).reshape(m.nsite, 3),
        site_quat=_f64(m.site_quat).reshape(m.nsite, 4),
        gravity=_f64(gravity),
        joint_stiffness=_f64(stiffness),
        qpos_spring=_f64(m.qpos_spring),
        dof_damping=_f64(damping),
        joint_range=_f64(m.jnt_range).reshape(m.njnt, 2),
        joint_actfrc_range=_f64(m.jnt_actfrcrange).reshape(m.njnt, 2),
        actuator_gear=_f64(np.asarray(m.actuator_gear).reshape(m.nu, 6)[:, 0]),
        actuator_gain=_f64(gain),
        actuator_bias=_f64(bias),
        actuator_ctrl_range=_f64(m.actuator_ctrlrange).reshape(m.nu, 2),
        actuator_force_range=_f64(m.actuator_forcerange).reshape(m.nu, 2),
        **limits,
        n_body=int(m.nbody),
        n_joint=int(m.njnt),
        n_site=int(m.nsite),
        n_q=int(m.nq),
        n_v=int(m.nv),
        body_parent=ints(m.body_parentid),
        body_root=ints(m.body_rootid),
        body_joint_adr=ints(m.body_jntadr),
        body_joint_num=ints(m.body_jntnum),
        joint_type=ints(m.jnt_type),
        joint_body=ints(m.jnt_bodyid),
        joint_qpos_adr=ints(m.jnt_qposadr),
        joint_dof_adr=ints(m.jnt_dofadr),
        dof_body=ints(m.dof_bodyid),
        site_body=ints(m.site_bodyid),
        n_u=int(m.nu),
        actuator_dof=act_dof,
        actuator_tendon=act_tendon,
        actuator_fixed_tendon=act_fixed,
        **_fixed_tendon_coefficients(m, act_fixed),
        actuator_ctrl_limited=bools(ctrl_limited),
        actuator_force_limited=bools(m.actuator_forcelimited),
        joint_limited=bools(m.jnt_limited),
        joint_actfrc_limited=bools(m.jnt_actfrclimited),
        dynamics_unsupported=tuple(problems),
        contact=contact,
        tendons=compile_tendons(m, limits["limits_enabled"]),
        tendon_armature=compile_tendon_armature(m),
        friction=compile_friction(m),
        equality=compile_equality(m),
        paths=(paths := _compile_spatial_paths(m)),
        muscle_mass=_compile_muscle_mass(m, paths),
    )
    return with_point_masses(model, m, point_masses)


def _fixed_tendon_coefficients(m, act_fixed: tuple[int, ...]) -> dict:
    """actuator_fixed_coef_q (n_u, n_q) and actuator_fixed_coef_v (n_u, n_v): the coefficients
    of each fixed-tendon actuator's tendon at its joints' qpos and dof addresses (zero rows for
    other actuators); none of them (the fields stay None) without fixed-tendon actuators."""
    if all(t < 0 for t in act_fixed):
        return {}
    from myotwin.engine.tendons import fixed_tendon_coefficients

    coef_q, coef_v = fixed_tendon_coefficients(m, act_fixed)
    return dict(actuator_fixed_coef_q=_f64(coef_q), actuator_fixed_coef_v=_f64(coef_v))


def _compile_muscle_mass(m, paths: PathSet | None) -> MuscleMass | None:
    """Mass points from the `muscle_mass:<tendon>` custom numerics (docs/inertia.md)."""
    from myotwin.inertia.muscle_mass import muscle_mass_from_mjcf  # it imports the engine

    return muscle_mass_from_mjcf(m, paths)


def _compile_spatial_paths(m) -> PathSet | None:
    """The spatial tendons of `m` as a PathSet (None if there are none)."""
    from myotwin.paths.pathset import compile_paths  # myotwin.paths imports the engine

    spatial = [t for t in range(m.ntendon) if is_spatial_tendon(m, t)]
    return compile_paths(m, spatial) if spatial else None


def require_dynamics_support(model: Model) -> None:
    """Raise ValueError listing the model's elements that forces/dynamics cannot represent."""
    if model.dynamics_unsupported:
        raise ValueError(
            "model not supported by the engine's dynamics (kinematics, mass matrix and bias "
            "forces still work):\n  " + "\n  ".join(model.dynamics_unsupported)
        )


def read_mjcf(source):
    """(compiled `mujoco.MjModel`, the name messages give it) of an MJCF file (path) or of an
    MjModel (returned as is, named "MJCF model"). ValueError naming a missing file or one
    MuJoCo cannot compile, with MuJoCo's message."""
    import mujoco

    if isinstance(source, mujoco.MjModel):
        return source, "MJCF model"
    if not isinstance(source, (str, Path)):
        raise ValueError(f"MJCF source: expected a file's path or a mujoco.MjModel, got "
                         f"{type(source).__name__}")
    where = str(source)
    if Path(where).is_dir():
        raise ValueError(f"{where}: is a directory, not an MJCF file")
    if not Path(where).is_file():
        raise ValueError(f"{where}: no such MJCF file")
    try:
        return mujoco.MjModel.from_xml_path(where), where
    except ValueError as err:
        message = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
        raise ValueError(f"{where}: MuJoCo cannot compile it: {message}") from None


def load(path: str) -> Model:
    """Compile the MJCF file at `path` with MuJoCo's compiler, then `compile_model` it.
    ValueError naming a path that is no file, a directory, or a file MuJoCo cannot compile,
    and a `path` that is not a path (None was read as the file 'None'): `read_mjcf`."""
    if not isinstance(path, (str, Path)):       # read_mjcf would return an MjModel as is
        raise ValueError(f"engine.load: expected an MJCF file's path, got "
                         f"{type(path).__name__}")
    return compile_model(read_mjcf(path)[0])
