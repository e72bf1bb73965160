"""Smooth, differentiable sphere/capsule-plane contact with friction (issue 3).

The law is OpenSim's SmoothSphereHalfSpaceForce (Serrancoli et al. 2019, IEEE TNSRE 27(10):2065;
Falisse et al. 2019, J R Soc Interface 16:20190402), as implemented in Simbody's
`SmoothSphereHalfSpaceForceImpl::calcForce`. For a contact sphere of radius R, centre c, and a
plane through p with outward unit normal n (the plane geom's local z; solid below):
  indentation      delta = R - n.(c - p)                       (> 0 when penetrating)
  contact point    x = c - (R - delta/2) n       (midway between the surfaces, as OpenSim;
                                                   this is also MuJoCo's mjContact.pos)
  velocities       v = velocity of the sphere body's material point at x (plane is static),
                   delta_dot = -n.v,   v_t = v - (n.v) n
  Hertz            k = E^(2/3) / 2,   f_H = (4/3) k sqrt(R k) (delta^2 + cf)^(3/4)
                   * (1 + tanh(b_d delta)) / 2
  Hunt-Crossley    f_n = f_H (1 + (3/2) c delta_dot) * (1 + tanh(b_v (delta_dot + 2/(3c)))) / 2
  friction         s = sqrt(|v_t|^2 + cf),  r = s / v_tr,
                   mu = min(r, 1) (mu_d + 2 (mu_s - mu_d) / (1 + r^2)) + mu_v s
  force on the sphere's body at x:  F = f_n n - mu f_n v_t / s.
The generalized force is qfrc_contact = sum over contacts of J_p(x)^T F, with J_p the
translational point Jacobian of the sphere's body (mj_jac). cf > 0 keeps the force and the slip
direction smooth everywhere; the min(r, 1) kink in mu vanishes when mu_s = mu_d (the defaults).

Capsules: two contact spheres of the capsule's radius at the ends of its segment (local z =
-half_length, +half_length): exact for the deepest point unless the capsule is parallel to the
plane (then the line load is lumped at the ends), and the same two points as MuJoCo's
plane-capsule collision (mjc_PlaneCapsule). Planes are infinite (as in MuJoCo's collision)
and static (MuJoCo's compiler only allows planes in static bodies).

Which pairs: exactly MuJoCo's mj_collision filter, evaluated once at compile time -- nothing if
contact or constraints are disabled; explicit <pair>s always; other geom pairs of different
bodies when not welded together, not parent/child welds (unless filterparent is disabled; the
world is exempt), not in an <exclude>, and (contype1 & conaffinity2) || (contype2 &
conaffinity1). Pairs with a MuJoCo collision function that are not sphere/capsule-plane are
listed in `Model.dynamics_unsupported`. MuJoCo's friction, solref, solimp, margin and gap are
not used: the parameters below replace them.

Parameters (SI; OpenSim property in brackets), per contact, float64 leaves of `ContactModel`:
  stiffness_N_per_m2 [stiffness] E, dissipation_s_per_m [dissipation] c, static_friction mu_s,
  dynamic_friction mu_d, viscous_friction_s_per_m [viscous_friction] mu_v,
  transition_velocity_m_per_s [transition_velocity] v_tr, constant_contact_force
  [constant_contact_force] cf (added to delta^2 in m^2 and to |v_t|^2 in m^2/s^2; OpenSim's
  label "N" does not match this use), hertz_smoothing_per_m b_d,
  hunt_crossley_smoothing_s_per_m b_v.
Defaults: the gait models of Falisse et al. 2019 (PredSim: E = 1e6, c = 2, mu_s = mu_d = 0.8,
mu_v = 0.5, v_tr = 0.2) and OpenSim's defaults for cf = 1e-5, b_d = 300, b_v = 50.
Set them in MJCF with `<custom><numeric name="contact:<param>" data="..."/>` (model-wide) or
`contact:<param>:<geom name>` (one geom; the sphere/capsule's value wins over the plane's), or in
Python with `with_contact_params(model, **params)`.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.applied import wrench_generalized_forces
from myotwin.engine.arguments import model_of, real_array
from myotwin.engine.jacobian import body_reference_point, dof_motion
from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.model import Model
from myotwin.engine.rows import masked_sum, take
from myotwin.engine.spatial import cross, dot_last, quat_mul, quat_rotate
from myotwin.engine.twists import BodyMotion, body_motion_from_kinematics

#: name -> (default, lower bound, bound is strict). Sources in the module docstring.
CONTACT_PARAMS: dict[str, tuple[float, float, bool]] = {
    "stiffness_N_per_m2": (1e6, 0.0, True),
    "dissipation_s_per_m": (2.0, 0.0, False),
    "static_friction": (0.8, 0.0, False),
    "dynamic_friction": (0.8, 0.0, False),
    "viscous_friction_s_per_m": (0.5, 0.0, False),
    "transition_velocity_m_per_s": (0.2, 0.0, True),
    "constant_contact_force": (1e-5, 0.0, True),
    "hertz_smoothing_per_m": (300.0, 0.0, True),
    "hunt_crossley_smoothing_s_per_m": (50.0, 0.0, True),
}
_NUMERIC_PREFIX = "contact:"
_PLANE, _HFIELD, _SPHERE, _CAPSULE = 0, 1, 2, 3
_GEOM_TYPE_NAMES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box",
                    "mesh", "sdf")
_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class ContactModel:
    """Compiled contact data (a JAX pytree; `Model.contact`, None when there is no contact).

    Solids (sphere/capsule geoms in contact pairs), n_s of them: geom_pos (n_s, 3), geom_quat
    (n_s, 4) in the body frame; geom_radius (n_s,); geom_half_length (n_s,) (0 for spheres).
    Planes, n_p: plane_pos (n_p, 3), plane_quat (n_p, 4) in the body frame (normal = local z).
    Per contact sphere, n_c (a capsule pair gives two): the `CONTACT_PARAMS` arrays (n_c,).
    Static: MuJoCo geom ids and bodies of solids/planes; per contact its solid, plane, capsule
    end (-1, +1; 0 for a sphere) and a readable name.
    """

    geom_pos: jax.Array
    geom_quat: jax.Array
    geom_radius: jax.Array
    geom_half_length: jax.Array
    plane_pos: jax.Array
    plane_quat: jax.Array
    stiffness_N_per_m2: jax.Array
    dissipation_s_per_m: jax.Array
    static_friction: jax.Array
    dynamic_friction: jax.Array
    viscous_friction_s_per_m: jax.Array
    transition_velocity_m_per_s: jax.Array
    constant_contact_force: jax.Array
    hertz_smoothing_per_m: jax.Array
    hunt_crossley_smoothing_s_per_m: jax.Array
    n_contact: int = dataclasses.field(metadata=_STATIC)
    geom_id: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    geom_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    plane_id: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    plane_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    contact_geom: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    contact_plane: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    contact_end: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    contact_name: tuple[str, ...] = dataclasses.field(metadata=_STATIC)


jax.tree_util.register_dataclass(
    ContactModel,
    data_fields=[f.name for f in dataclasses.fields(ContactModel) if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(ContactModel) if f.metadata.get("static")],
)


# ----------------------------------------------------------------------------- compile time


def _geom_label(m, g: int) -> str:
    import mujoco

    b = int(m.geom_bodyid[g])
    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
    body = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"#{b}"
    kind = _GEOM_TYPE_NAMES[int(m.geom_type[g])]
    return f"geom #{g}" + (f" '{name}'" if name else "") + f" ({kind}, body '{body}')"


def _has_collision_function(t1: int, t2: int) -> bool:
    """MuJoCo's mjCOLLISIONFUNC table is empty only for plane/hfield against plane/hfield."""
    return not (t1 in (_PLANE, _HFIELD) and t2 in (_PLANE, _HFIELD))


def _colliding_pairs(m) -> list[tuple[int, int, bool]]:
    """(g1, g2, explicit) for every geom pair MuJoCo's mj_collision may collide (see docstring)."""
    import mujoco

    dsbl = m.opt.disableflags
    if dsbl & (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT):
        return []
    pairs = {tuple(sorted((int(a), int(b)))): True for a, b in zip(m.pair_geom1, m.pair_geom2)}
    excluded = {int(s) for s in m.exclude_signature}
    filterparent = not dsbl & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT
    weld, parent = m.body_weldid, m.body_parentid
    for g1 in range(m.ngeom):
        for g2 in range(g1 + 1, m.ngeom):
            b1, b2 = sorted((int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])))
            w1, w2 = int(weld[b1]), int(weld[b2])
            if (g1, g2) in pairs or w1 == w2 or ((b1 << 16) + b2) in excluded:
                continue
            if filterparent and w1 and w2 and (w1 == weld[parent[w2]] or w2 == weld[parent[w1]]):
                continue
            if not (m.geom_contype[g1] & m.geom_conaffinity[g2]
                    or m.geom_contype[g2] & m.geom_conaffinity[g1]):
                continue
            pairs[(g1, g2)] = False
    return [(g1, g2, ex) for (g1, g2), ex in sorted(pairs.items())
            if _has_collision_function(int(m.geom_type[g1]), int(m.geom_type[g2]))]


def _numeric_params(m) -> dict[tuple[str, int], float]:
    """{(param, geom id or -1): value} from `contact:<param>[:<geom>]` custom numerics."""
    import mujoco

    out = {}
    for i in range(m.nnumeric):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_NUMERIC, i) or ""
        if not name.startswith(_NUMERIC_PREFIX):
            continue
        param, _, geom = name[len(_NUMERIC_PREFIX):].partition(":")
        if param not in CONTACT_PARAMS:
            raise ValueError(f"custom numeric '{name}': unknown contact parameter '{param}', "
                             f"expected one of {sorted(CONTACT_PARAMS)}")
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, geom) if geom else -1
        if geom and g < 0:
            raise ValueError(f"custom numeric '{name}': no geom named '{geom}'")
        adr, size = int(m.numeric_adr[i]), int(m.numeric_size[i])
        if size != 1:
            raise ValueError(f"custom numeric '{name}': expected 1 value, got {size}")
        value = float(m.numeric_data[adr])
        _check_value(f"custom numeric '{name}'", param, np.array([value]))
        out[(param, g)] = value
    return out


def _check_value(where: str, param: str, value: np.ndarray) -> None:
    _, low, strict = CONTACT_PARAMS[param]
    bad = ~np.isfinite(value) | ((value <= low) if strict else (value < low))
    if np.any(bad):
        rel = ">" if strict else ">="
        raise ValueError(f"{where}: contact parameter {param} = {value[bad][0]!r}, expected a "
                         f"finite value {rel} {low:g}")


def _outside_pairs(labels: list[str], explicit: bool) -> str:
    """One message for the colliding pairs (`labels`) the engine has no contact for, with the
    way out once (a model such as MyoSuite's finger has nine such pairs)."""
    one = len(labels) == 1
    if explicit:
        how = "remove the <pair>" if one else "remove the <pair>s"
    else:
        how = (f"set contype=conaffinity=0 on one geom of {'the' if one else 'each'} pair, add "
               f'an <exclude> of their bodies, or <flag contact="disable"/>')
    return (f"contact pair{'' if one else 's'} {', '.join(labels)}: MuJoCo collides "
            f"{'it' if one else 'them'} but the engine only has sphere/capsule-plane contact; "
            f"to run without {'it' if one else 'them'}, {how}")


def compile_contact(m) -> tuple[ContactModel | None, list[str]]:
    """(ContactModel or None, unsupported-pair messages) for a compiled `mujoco.MjModel`."""
    numeric = _numeric_params(m)
    solids: list[int] = []
    planes: list[int] = []
    rows: list[tuple[int, int, int, str]] = []  # (solid index, plane index, end, name)
    outside = {False: [], True: []}    # explicit <pair> or not -> the pairs' labels
    for g1, g2, explicit in _colliding_pairs(m):
        t1, t2 = int(m.geom_type[g1]), int(m.geom_type[g2])
        if {t1, t2} not in ({_PLANE, _SPHERE}, {_PLANE, _CAPSULE}):
            outside[explicit].append(f"{_geom_label(m, g1)} / {_geom_label(m, g2)}")
            continue
        solid, plane = (g2, g1) if t1 == _PLANE else (g1, g2)
        if solid not in solids:
            solids.append(solid)
        if plane not in planes:
            planes.append(plane)
        label = f"{_geom_label(m, solid)} / {_geom_label(m, plane)}"
        ends = (-1, 1) if m.geom_type[solid] == _CAPSULE else (0,)
        for end in ends:
            suffix = {0: "", -1: " end -half_length", 1: " end +half_length"}[end]
            rows.append((solids.index(solid), planes.index(plane), end, label + suffix))
    problems = [_outside_pairs(labels, explicit) for explicit, labels in outside.items()
                if labels]
    if not rows:
        return None, problems
    params = {}
    for param, (default, _, _) in CONTACT_PARAMS.items():
        values = []
        for s, p, _, _ in rows:
            keys = [(param, solids[s]), (param, planes[p]), (param, -1)]
            values.append(next((numeric[k] for k in keys if k in numeric), default))
        params[param] = _f64(values)
    sid, pid = np.array(solids), np.array(planes)
    size = np.asarray(m.geom_size)
    half = np.where(np.asarray(m.geom_type)[sid] == _CAPSULE, size[sid, 1], 0.0)
    contact = ContactModel(
        geom_pos=_f64(m.geom_pos[sid]), geom_quat=_f64(m.geom_quat[sid]),
        geom_radius=_f64(size[sid, 0]), geom_half_length=_f64(half),
        plane_pos=_f64(m.geom_pos[pid]), plane_quat=_f64(m.geom_quat[pid]),
        **params,
        n_contact=len(rows),
        geom_id=tuple(solids), geom_body=tuple(int(m.geom_bodyid[g]) for g in solids),
        plane_id=tuple(planes), plane_body=tuple(int(m.geom_bodyid[g]) for g in planes),
        contact_geom=tuple(r[0] for r in rows), contact_plane=tuple(r[1] for r in rows),
        contact_end=tuple(r[2] for r in rows), contact_name=tuple(r[3] for r in rows),
    )
    return contact, problems


def _f64(x) -> jax.Array:
    return jnp.asarray(np.array(x, dtype=np.float64), dtype=jnp.float64)


def with_contact_params(model: Model, **params) -> Model:
    """A new Model whose contact parameters are replaced (each a scalar or an (n_c,) array).

    Names are the keys of `CONTACT_PARAMS` (e.g. stiffness_N_per_m2=2e6). The values become
    float64 leaves, so `jax.grad` / `vmap` reach them; concrete values are range-checked. A
    value of bools or strings is refused (`arguments.real_array`), not converted.
    """
    contact = model_of("with_contact_params", model).contact
    if contact is None:
        raise ValueError("with_contact_params: the model has no sphere/capsule-plane contact")
    new = {}
    for name, value in params.items():
        if name not in CONTACT_PARAMS:
            raise ValueError(f"with_contact_params: unknown contact parameter '{name}', "
                             f"expected one of {sorted(CONTACT_PARAMS)}")
        # numbers only (True is not 1.0, "2e6" not 2e6); a tracer passes, checked by dtype
        value = real_array("with_contact_params", name, value).astype(jnp.float64)
        if value.shape not in ((), (contact.n_contact,)):
            raise ValueError(f"with_contact_params: {name} has shape {value.shape}, expected () "
                             f"or ({contact.n_contact},) (one value per contact sphere)")
        if not isinstance(value, jax.core.Tracer):
            _check_value("with_contact_params", name, np.atleast_1d(np.asarray(value)))
        new[name] = jnp.broadcast_to(value, (contact.n_contact,))
    return dataclasses.replace(model, contact=dataclasses.replace(contact, **new))


# ----------------------------------------------------------------------------- position stage


class ContactPoints(NamedTuple):
    """Contact geometry, world frame, one row per contact sphere (n_c).

    center_world (n_c, 3): sphere centre; normal_world (n_c, 3): the plane's outward unit
    normal; indentation (n_c,): R - distance of the centre from the plane (> 0 penetrating);
    point_world (n_c, 3): contact point, midway between the two surfaces.
    """

    center_world: jax.Array
    normal_world: jax.Array
    indentation: jax.Array
    point_world: jax.Array


def _contact_bodies(contact: ContactModel) -> np.ndarray:
    return np.asarray(contact.geom_body, dtype=int)[np.asarray(contact.contact_geom, dtype=int)]


def _empty_points(dtype) -> ContactPoints:
    z3, z = jnp.zeros((0, 3), dtype), jnp.zeros((0,), dtype)
    return ContactPoints(z3, z3, z, z3)


def contact_points_from_kinematics(model: Model, kin: Kinematics) -> ContactPoints:
    """`ContactPoints` from the position stage `kin` (empty arrays when there is no contact)."""
    c = model.contact
    if c is None:
        return _empty_points(kin.body_pos_world.dtype)
    gi, pi = np.asarray(c.contact_geom, dtype=int), np.asarray(c.contact_plane, dtype=int)
    body = _contact_bodies(c)
    pbody = np.asarray(c.plane_body, dtype=int)[pi]
    e_z = jnp.array([0.0, 0.0, 1.0])
    end = jnp.asarray(np.asarray(c.contact_end, dtype=np.float64))
    local = c.geom_pos[gi] + (end * c.geom_half_length[gi])[:, None] * quat_rotate(
        c.geom_quat[gi], e_z)
    center = take(kin.body_pos_world, body) + quat_rotate(take(kin.body_quat_world, body), local)
    plane_body_quat = take(kin.body_quat_world, pbody)
    plane_quat = quat_mul(plane_body_quat, c.plane_quat[pi])
    normal = quat_rotate(plane_quat, e_z)
    origin = take(kin.body_pos_world, pbody) + quat_rotate(plane_body_quat, c.plane_pos[pi])
    radius = c.geom_radius[gi]
    depth = radius - dot_last(normal, center - origin)
    point = center - (radius - 0.5 * depth)[:, None] * normal
    return ContactPoints(center, normal, depth, point)


def contact_points(model: Model, q: jax.Array) -> ContactPoints:
    """Contact geometry at configuration q (n_q,) (n_c = 0 rows when there is no contact)."""
    return contact_points_from_kinematics(model, kinematics(model, q))


def contact_jacobians(model: Model, kin: Kinematics, points: ContactPoints) -> jax.Array:
    """(n_c, n_v, 3) translational Jacobians of the contact points on the spheres' bodies
    (mj_jac at point_world; column d is lin_d + ang_d x (x - reference point))."""
    body = _contact_bodies(model.contact)
    s = dof_motion(model, kin)  # (n_v, 6)
    mask = jnp.asarray(model.dof_ancestor_mask()[body], dtype=s.dtype)  # (n_c, n_v)
    offset = points.point_world - body_reference_point(model, kin)[body]  # (n_c, 3)
    jac = s[None, :, 3:] + cross(s[None, :, :3], offset[:, None, :])
    return jac * mask[..., None]


# ----------------------------------------------------------------------------- force stage


class ContactForces(NamedTuple):
    """Output of the contact force stage.

    qfrc_contact (n_v,): generalized contact force, sum_c J_c^T force_world[c].
    force_world (n_c, 3): force on each sphere's body at points.point_world (normal + friction).
    normal_force (n_c,): f_n (N); slip_speed (n_c,): s = sqrt(|v_t|^2 + cf) (m/s).
    points: the `ContactPoints` used.
    """

    qfrc_contact: jax.Array
    force_world: jax.Array
    normal_force: jax.Array
    slip_speed: jax.Array
    points: ContactPoints


def smooth_contact_force(contact: ContactModel, indentation, indentation_rate, normal,
                         tangential_velocity):
    """(force (n_c, 3), normal force (n_c,), slip speed (n_c,)) of the smooth law (module
    docstring; Simbody SmoothSphereHalfSpaceForceImpl::calcForce), one row per contact sphere."""
    c = contact
    radius = c.geom_radius[np.asarray(c.contact_geom, dtype=int)]
    cf = c.constant_contact_force
    k = 0.5 * c.stiffness_N_per_m2 ** (2.0 / 3.0)
    root = jnp.sqrt(indentation**2 + cf)
    hertz = (4.0 / 3.0) * k * jnp.sqrt(radius * k) * root * jnp.sqrt(root)  # root^1.5, no pow
    hertz = hertz * (0.5 + 0.5 * jnp.tanh(c.hertz_smoothing_per_m * indentation))
    diss = c.dissipation_s_per_m
    has_diss = diss > 0.0
    safe_diss = jnp.where(has_diss, diss, 1.0)
    gate = jnp.tanh(c.hunt_crossley_smoothing_s_per_m
                    * (indentation_rate + 2.0 / (3.0 * safe_diss)))
    f_n = hertz * (1.0 + 1.5 * diss * indentation_rate) * jnp.where(has_diss, 0.5 + 0.5 * gate,
                                                                     1.0)
    slip = jnp.sqrt(dot_last(tangential_velocity, tangential_velocity) + cf)
    ratio = slip / c.transition_velocity_m_per_s
    mu_s, mu_d = c.static_friction, c.dynamic_friction
    mu = (jnp.minimum(ratio, 1.0) * (mu_d + 2.0 * (mu_s - mu_d) / (1.0 + ratio**2))
          + c.viscous_friction_s_per_m * slip)
    force = f_n[:, None] * normal - (mu * f_n / slip)[:, None] * tangential_velocity
    return force, f_n, slip


def _empty_forces(model: Model, dtype) -> ContactForces:
    z3, z = jnp.zeros((0, 3), dtype), jnp.zeros((0,), dtype)
    return ContactForces(jnp.zeros(model.n_v, dtype), z3, z, z, _empty_points(dtype))


def contact_forces_from_kinematics(model: Model, kin: Kinematics, qd: jax.Array,
                                   bodies: BodyMotion | None = None) -> ContactForces:
    """`ContactForces` from the position stage `kin` and velocity qd (n_v,) (`bodies`: the
    velocity stage at qd, if the caller has it); zero generalized force (and empty per-contact
    arrays) when the model has no contact.

    Without forming the (n_c, n_v, 3) point Jacobians (`contact_jacobians`): the point velocity
    is the twist of the sphere's body (twists.py, MuJoCo cvel) shifted to the point
    (v = V_lin + V_ang x offset), and J^T F is the generalized force of the wrenches
    (offset x F, F) on the bodies (applied.wrench_generalized_forces, as for xfrc_applied) --
    the same sums as J_p^T F term by term (mj_jac), in fewer and smaller operations."""
    if model.contact is None:
        return _empty_forces(model, qd.dtype)
    points = contact_points_from_kinematics(model, kin)
    body = _contact_bodies(model.contact)
    offset = points.point_world - take(body_reference_point(model, kin), body)  # (n_c, 3)
    if bodies is None:
        bodies = body_motion_from_kinematics(model, kin, qd)
    twist = take(bodies.velocity, body)  # (n_c, 6)
    velocity = twist[:, 3:] + cross(twist[:, :3], offset)
    v_n = dot_last(velocity, points.normal_world)
    v_t = velocity - v_n[:, None] * points.normal_world
    force, f_n, slip = smooth_contact_force(model.contact, points.indentation, -v_n,
                                            points.normal_world, v_t)
    wrench = jnp.concatenate([cross(offset, force), force], axis=-1)  # (n_c, 6)
    on_body = np.arange(model.n_body)[:, None] == body[None, :]  # (n_body, n_c)
    # each contact on one body: a masked sum (a few fused additions); as a product with the
    # (n_body, n_c) table the frog's single-trajectory RK4 step took 29 us instead of 23, and
    # its batch (a GEMM there) was no faster (session 12, benchmarks/RESULTS.md)
    qfrc = wrench_generalized_forces(model, kin, masked_sum(on_body, wrench))
    return ContactForces(qfrc, force, f_n, slip, points)


def contact_forces(model: Model, q: jax.Array, qd: jax.Array) -> ContactForces:
    """Contact forces at state (q (n_q,), qd (n_v,)): `ContactForces` whose qfrc_contact (n_v,)
    is the generalized force added to the equations of motion."""
    return contact_forces_from_kinematics(model, kinematics(model, q), qd)
