"""Tendon springs, dampers and limits (MuJoCo 4.0: mj_springdamper, mj_energyPos and the
tendon rows of mj_instantiateLimit), for spatial tendons (the model's `paths`) and fixed
(joint) tendons on hinge/slide joints.

Each tendon t has a length L_t(q) and a Jacobian J_t = dL_t/dqd (n_v,) (MuJoCo ten_length,
ten_J; L_t qd-rate = J_t qd):
  spatial:  the path length of `myotwin.paths` (metres) and its length Jacobian;
  fixed:    L_t = sum_i c_i q_(j_i) over its joints (absolute qpos, as MuJoCo), J_t = c on
            their dofs (units of the joints: rad or m, times the coefficients).
Spring with a dead band [s_lo, s_hi] (MuJoCo tendon_lengthspring; `springlength` in MJCF, one
value for both ends; -1 there means the length at qpos_spring), stiffness k, damping b:
  f_t = -k (L - s_hi) if L > s_hi,  -k (L - s_lo) if L < s_lo,  else 0;  minus b J_t qd,
  qfrc_passive += J_t^T f_t;   energy 0.5 k (L - clamp(L, s_lo, s_hi))^2 (in energy[0]).
Stiffness is zero when the file disables springs, damping when it disables dampers. The
damper is explicit in every integrator MuJoCo's Euler included (mj_Euler makes only dof
damping implicit: checked in MuJoCo 4.0, a tendon-damped step equals the explicit update).
Limits (range [lo, hi], margin, solreflimit, solimplimit, tendon_invweight0): two rows per
limited tendon, after the joints' rows (`limits.py`): lower r = L - lo, J = +J_t; upper
r = hi - L, J = -J_t; the same soft-constraint law as joint limits with the regulariser
scaled by tendon_invweight0.

Only tendons with a spring, a damper or a limit are kept here (`TendonModel`); the others
cost nothing. Listed in `Model.dynamics_unsupported` instead: nonlinear (poly) springs and
dampers and elasto-plastic springs (springyield) of a tendon. A tendon's armature is
`tendon_armature.py` (the mass matrix and the bias force), its frictionloss `friction.py` (a
constraint row solved with the limits).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.model import is_spatial_tendon

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class TendonModel:
    """The model's tendons with a spring, a damper or a limit (a JAX pytree; n of them).

    stiffness, damping (n,): k (N/m) and b (N s/m) (per unit of a fixed tendon's length).
    spring_length (n, 2): the dead band [s_lo, s_hi] (MuJoCo tendon_lengthspring).
    range (n, 2), margin (n,), solref (n, 2), solimp (n, 5): limit parameters (read where
      `limited`); invweight0 (n,): MuJoCo tendon_invweight0 (scales the limit regulariser).
    fixed_coef_q (n, n_q), fixed_coef_v (n, n_v): a fixed tendon's coefficients at its joints'
      qpos and dof addresses (zero rows for spatial tendons).
    Static: tendon_id (n,) MuJoCo tendon ids; spatial (n,) bools; limited (n,) bools (False
      when the file disables limits or constraints); names (n,) for messages.
    """

    stiffness: jax.Array
    damping: jax.Array
    spring_length: jax.Array
    range: jax.Array
    margin: jax.Array
    solref: jax.Array
    solimp: jax.Array
    invweight0: jax.Array
    fixed_coef_q: jax.Array
    fixed_coef_v: jax.Array
    tendon_id: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    spatial: tuple[bool, ...] = dataclasses.field(metadata=_STATIC)
    limited: tuple[bool, ...] = dataclasses.field(metadata=_STATIC)
    names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)


jax.tree_util.register_dataclass(
    TendonModel,
    data_fields=[f.name for f in dataclasses.fields(TendonModel)
                 if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(TendonModel) if f.metadata.get("static")])


def tendon_label(m, t: int) -> str:
    import mujoco

    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_TENDON, t)
    return f"tendon #{t}" + (f" '{name}'" if name else "")


def tendon_problems(m) -> list[str]:
    """Messages naming each tendon property of a compiled MjModel `m` that the engine's
    dynamics cannot represent (module docstring)."""
    out = []
    for t in range(m.ntendon):
        what = tendon_label(m, t)
        for field in ("tendon_springyield",):
            if hasattr(m, field) and np.any(np.asarray(getattr(m, field)[t]) != 0):
                out.append(f"{what}: nonzero {field}")
        for field in ("tendon_stiffnesspoly", "tendon_dampingpoly"):
            if hasattr(m, field) and np.any(np.asarray(getattr(m, field)[t]) != 0):
                out.append(f"{what}: nonzero {field} (nonlinear springs and dampers)")
    return out


def fixed_tendon_coefficients(m, tendon_ids) -> tuple[np.ndarray, np.ndarray]:
    """(coef_q (k, n_q), coef_v (k, n_v)): the coefficients of each fixed tendon of
    `tendon_ids` (k MuJoCo ids) at its joints' qpos and dof addresses; zero rows for spatial
    tendons and ids -1."""
    coef_q, coef_v = np.zeros((len(tendon_ids), m.nq)), np.zeros((len(tendon_ids), m.nv))
    for row, t in enumerate(tendon_ids):
        if t < 0 or is_spatial_tendon(m, t):
            continue
        for w in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
            j = int(m.wrap_objid[w])   # MuJoCo's compiler allows hinge/slide joints only
            coef_q[row, m.jnt_qposadr[j]] += m.wrap_prm[w]
            coef_v[row, m.jnt_dofadr[j]] += m.wrap_prm[w]
    return coef_q, coef_v


def compile_tendons(m, limits_enabled: bool) -> TendonModel | None:
    """The `TendonModel` of a compiled MjModel `m` (only read), or None if no tendon has a
    spring, a damper or an enforced limit. Raises ValueError for a limited tendon whose
    solreflimit mixes the standard and direct formats (MuJoCo would use its default)."""
    import mujoco

    dsbl = m.opt.disableflags
    stiffness = np.array(m.tendon_stiffness, dtype=np.float64).reshape(m.ntendon)
    if dsbl & mujoco.mjtDisableBit.mjDSBL_SPRING:
        stiffness = np.zeros_like(stiffness)
    damping = np.array(m.tendon_damping, dtype=np.float64).reshape(m.ntendon)
    if dsbl & mujoco.mjtDisableBit.mjDSBL_DAMPER:
        damping = np.zeros_like(damping)
    limited = np.asarray(m.tendon_limited, dtype=bool).reshape(m.ntendon) & limits_enabled
    keep = [t for t in range(m.ntendon) if stiffness[t] != 0 or damping[t] != 0 or limited[t]]
    if not keep:
        return None
    from myotwin.engine.limits import check_solref  # limits.py imports this module

    solref = np.array(m.tendon_solref_lim, dtype=np.float64).reshape(m.ntendon, 2)
    for t in keep:
        if limited[t]:
            check_solref(solref[t], tendon_label(m, t), "solreflimit")
    spatial = [is_spatial_tendon(m, t) for t in keep]
    coef_q, coef_v = fixed_tendon_coefficients(m, keep)
    f64 = lambda x: jnp.asarray(np.array(x, dtype=np.float64), dtype=jnp.float64)  # noqa: E731
    rows = np.array(keep, dtype=int)
    return TendonModel(
        stiffness=f64(stiffness[rows]),
        damping=f64(damping[rows]),
        spring_length=f64(np.asarray(m.tendon_lengthspring).reshape(m.ntendon, 2)[rows]),
        range=f64(np.asarray(m.tendon_range).reshape(m.ntendon, 2)[rows]),
        margin=f64(np.asarray(m.tendon_margin).reshape(m.ntendon)[rows]),
        solref=f64(solref[rows]),
        solimp=f64(np.asarray(m.tendon_solimp_lim).reshape(m.ntendon, 5)[rows]),
        invweight0=f64(np.asarray(m.tendon_invweight0).reshape(m.ntendon)[rows]),
        fixed_coef_q=f64(coef_q),
        fixed_coef_v=f64(coef_v),
        tendon_id=tuple(keep),
        spatial=tuple(bool(s) for s in spatial),
        limited=tuple(bool(limited[t]) for t in keep),
        names=tuple(tendon_label(m, t) for t in keep),
    )


def mjcf_paths(model):
    """The PathSet of the model's MJCF spatial tendons (a CompositePaths' `mjcf` part), or
    None."""
    from myotwin.paths.pathset import PathSet  # myotwin.paths imports the engine

    paths = model.paths
    if paths is not None and not isinstance(paths, PathSet):
        paths = paths.mjcf
    return paths


def path_rows_from_kinematics(model, kin) -> tuple[jax.Array, jax.Array]:
    """(ten_length (n_paths,), ten_J (n_paths, n_v)) of every MJCF path of the model at the
    kinematics `kin` (`engine.stages`)."""
    from myotwin.paths.length import path_geometry
    from myotwin.paths.moment_arms import length_jacobian_from_geometry

    paths = mjcf_paths(model)
    geo = path_geometry(paths, model, kin)
    return geo.path_length, length_jacobian_from_geometry(paths, model, kin, geo)


def spatial_tendon_rows(model, q: jax.Array, tendon_ids, what: str, stages=None):
    """(ten_length (k,), ten_J (k, n_v)) of the MJCF spatial tendons `tendon_ids` (k MuJoCo
    ids; an id -1 gives path 0's rows, to be masked by the caller). ValueError (naming `what`
    and the id) for a tendon that is not among the model's paths. stages: the evaluation's
    `engine.stages.Stages` (its path rows are used if it has them), or None to compute them
    from q."""
    from myotwin.engine.kinematics import kinematics
    from myotwin.engine.rows import take

    paths = mjcf_paths(model)
    if paths is None:
        raise ValueError(f"{what}: the model has no MJCF paths (Model.paths is None or has "
                         "no MJCF PathSet)")
    index = []
    for t in tendon_ids:
        if t >= 0 and t not in paths.path_tendon:
            raise ValueError(f"{what}: tendon #{t} is not among the model's paths (MuJoCo "
                             f"tendon ids {paths.path_tendon})")
        index.append(paths.path_tendon.index(t) if t >= 0 else 0)
    if stages is not None and stages.path_rows is not None:
        length, jac = stages.path_rows
    else:
        length, jac = path_rows_from_kinematics(model, kinematics(model, q))
    index = np.array(index, dtype=int)
    return take(length, index), take(jac, index)


def tendon_rows(model, q: jax.Array, tendon_ids, spatial, coef_q: jax.Array,
                coef_v: jax.Array, what: str, stages=None) -> tuple[jax.Array, jax.Array]:
    """(L (k,), J (k, n_v)) of k MuJoCo tendons `tendon_ids` at configuration q (n_q,): the
    spatial ones (static flags `spatial`) from the model's paths, the others from their fixed
    coefficients coef_q (k, n_q), coef_v (k, n_v) (zero rows give zeros, e.g. for id -1).
    `what` names the caller in the paths' error messages; stages as in `spatial_tendon_rows`."""
    length = coef_q.astype(q.dtype) @ q
    jac = coef_v.astype(q.dtype)
    spatial = np.asarray(spatial, dtype=bool)
    if spatial.any():
        ids = [t if s else -1 for t, s in zip(tendon_ids, spatial)]
        s_len, s_jac = spatial_tendon_rows(model, q, ids, what, stages)
        length = jnp.where(spatial, s_len, length)
        jac = jnp.where(spatial[:, None], s_jac, jac)
    return length, jac


def tendon_lengths_and_jacobians(model, q: jax.Array,
                                 stages=None) -> tuple[jax.Array, jax.Array]:
    """(L (n,), J (n, n_v)) of the tendons of `model.tendons` (those with a spring, damper or
    limit) at configuration q (n_q,); empty (n = 0) for a model without such tendons."""
    ten = model.tendons
    if ten is None:
        dtype = jnp.result_type(q.dtype, float)
        return jnp.zeros(0, dtype), jnp.zeros((0, model.n_v), dtype)
    return tendon_rows(model, q, ten.tendon_id, ten.spatial, ten.fixed_coef_q,
                       ten.fixed_coef_v, "tendon spring/damper/limit", stages)


def _spring_stretch(ten: TendonModel, length: jax.Array) -> jax.Array:
    """L - clamp(L, s_lo, s_hi): the spring's extension beyond its dead band (n,)."""
    lo, hi = ten.spring_length[:, 0], ten.spring_length[:, 1]
    return length - jnp.clip(length, lo, hi)


def tendon_passive_forces(model, q: jax.Array, qd: jax.Array, stages=None) -> jax.Array:
    """(n_v,) tendon spring and damper forces (their part of MuJoCo qfrc_passive)."""
    ten = model.tendons
    if ten is None:
        return jnp.zeros(model.n_v, dtype=jnp.result_type(q, qd))
    length, jac = tendon_lengths_and_jacobians(model, q, stages)
    force = -ten.stiffness * _spring_stretch(ten, length) - ten.damping * jnp.sum(jac * qd, 1)
    return jnp.sum(force[:, None] * jac, axis=0)


def tendon_spring_energy(model, q: jax.Array) -> jax.Array:
    """Scalar energy of the tendon springs, sum of 0.5 k (L - clamp(L, s_lo, s_hi))^2."""
    ten = model.tendons
    if ten is None:
        return jnp.zeros((), dtype=q.dtype)
    stretch = _spring_stretch(ten, tendon_lengths_and_jacobians(model, q)[0])
    return 0.5 * jnp.sum(ten.stiffness * stretch * stretch)


def tendon_limit_layout(model) -> tuple[np.ndarray, np.ndarray]:
    """Static layout of the tendon limit rows: each row's index into `model.tendons` and side
    (-1 lower, +1 upper), two rows per limited tendon (empty without any)."""
    ten = model.tendons
    rows = [] if ten is None else [i for i, lim in enumerate(ten.limited) if lim]
    return np.repeat(np.array(rows, dtype=int), 2), np.tile([-1, 1], len(rows))


def tendon_limit_geometry(model, q: jax.Array, stages=None):
    """(dist (k,), jac (k, n_v), margin, solref (k, 2), solimp (k, 5), invweight0 (k,)) of
    the k tendon limit rows (`tendon_limit_layout`; module docstring)."""
    ten = model.tendons
    index, side = tendon_limit_layout(model)
    length, jac = tendon_lengths_and_jacobians(model, q, stages)
    from myotwin.engine.rows import take, take_pairs

    sgn = side.astype(np.float64)
    bound = take_pairs(ten.range, index, (side > 0).astype(int))
    dist = sgn * (bound - take(length, index))
    return (dist, -sgn[:, None] * take(jac, index), take(ten.margin, index),
            take(ten.solref, index), take(ten.solimp, index), take(ten.invweight0, index))
