"""Equality constraints (MuJoCo `<equality>`: joint, tendon and connect), as MuJoCo 4.0's
constraint rows (mjCNSTR_EQUALITY), solved with the friction and limit rows (limits.py).

Rows per active equality (MuJoCo's order: all equality rows first, in file order), with the
residual r (efc_pos), the Jacobian J (dr/dqd) and the `invweight` that scales the regulariser:
  joint  (joint1 = a, joint2 = b, polycoef c0..c4; hinge/slide joints):
         x = q_b - qpos0_b,  r = (q_a - qpos0_a) - (c0 + c1 x + c2 x^2 + c3 x^3 + c4 x^4),
         J = e_a - p'(x) e_b;  without joint2: r = (q_a - qpos0_a) - c0, J = e_a;
         invweight = dof_invweight0[a] (+ dof_invweight0[b]);
  tendon (tendon1, tendon2, polycoef): the same with tendon lengths L - tendon_length0 and
         their Jacobians (`tendons.py`); invweight = tendon_invweight0[1] (+ [2]);
  connect (body1/body2 with anchors, or site1/site2): 3 rows r = p1 - p2 (world positions
         of the two anchor points, each fixed to its body), J = J_p1 - J_p2;
         invweight = body_invweight0[body1, 0] + body_invweight0[body2, 0].
The soft law is the limits' (limits.py) with margin 0, except that the impedance of a
connect's three rows is taken at the norm of its residual |r| (one value for the block) and
that a connect's reference acceleration also removes the residual's acceleration at qdd = 0,
aref = -B J qd - K d r - Jdot qd (MuJoCo 4.0 does, for connect rows only: measured, its aref
departs from -B J qd - K d r quadratically in qd by exactly the anchors' relative bias
acceleration; joint and tendon rows have no such term), and the force is unbounded: a row
of the dual QP with bounds (-inf, inf). solref and solimp are the equality's. An equality that is inactive at load (`active="false"`, MuJoCo eq_active0) makes
no rows (MuJoCo's runtime switch, MjData.eq_active, has no counterpart here). The equality and
constraint disable flags remove all rows, as in MuJoCo. Weld, flex and other equality types are
refused at load, naming the equality (`model.compile_model`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

_STATIC = {"static": True}
#: Row kinds (static): joint or tendon (scalar, polynomial), connect (three rows).
JOINT, TENDON, CONNECT = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class EqualityModel:
    """The model's active joint, tendon and connect equalities (a JAX pytree; k of them).

    polycoef (k, 5): c0..c4 of joint/tendon equalities (zero for connect).
    anchor1, anchor2 (k, 3): a connect's anchor points in its bodies' frames (zero otherwise;
      for a site connect, the sites' positions in their bodies).
    solref (k, 2), solimp (k, 5), invweight (k,): the soft-constraint parameters and MuJoCo's
      regulariser scale (module docstring).
    ref1, ref2 (k,): qpos0 of the joints or tendon_length0 of the tendons (0 for connect).
    fixed1_q, fixed2_q (k, n_q), fixed1_v, fixed2_v (k, n_v): the coefficients of tendon1 and
      tendon2 where they are fixed tendons (zero rows otherwise).
    Static: kind (k,) JOINT/TENDON/CONNECT; obj1, obj2 (k,): joints (qpos/dof addresses in
      `adr1`/`adr2`), tendons (MuJoCo ids) or bodies; -1 where there is no second object;
      adr1, adr2 (k,): (qpos address, dof address) pairs of the joints ((-1, -1) otherwise);
      spatial1, spatial2 (k,): whether tendon1 / tendon2 is a spatial tendon; names (k,).
    """

    polycoef: jax.Array
    anchor1: jax.Array
    anchor2: jax.Array
    solref: jax.Array
    solimp: jax.Array
    invweight: jax.Array
    ref1: jax.Array
    ref2: jax.Array
    fixed1_q: jax.Array
    fixed2_q: jax.Array
    fixed1_v: jax.Array
    fixed2_v: jax.Array
    kind: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    obj1: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    obj2: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    adr1: tuple[tuple[int, int], ...] = dataclasses.field(metadata=_STATIC)
    adr2: tuple[tuple[int, int], ...] = dataclasses.field(metadata=_STATIC)
    spatial1: tuple[bool, ...] = dataclasses.field(metadata=_STATIC)
    spatial2: tuple[bool, ...] = dataclasses.field(metadata=_STATIC)
    names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)

    @property
    def n_rows(self) -> int:
        return sum(3 if k == CONNECT else 1 for k in self.kind)


jax.tree_util.register_dataclass(
    EqualityModel,
    data_fields=[f.name for f in dataclasses.fields(EqualityModel)
                 if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(EqualityModel)
                 if f.metadata.get("static")])


def _label(m, e: int) -> str:
    import mujoco

    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e)
    return f"equality #{e}" + (f" '{name}'" if name else "")


def equality_problems(m) -> list[str]:
    """Messages naming each equality of MjModel `m` whose type the engine cannot represent."""
    import mujoco

    eq = mujoco.mjtEq
    supported = (int(eq.mjEQ_JOINT), int(eq.mjEQ_TENDON), int(eq.mjEQ_CONNECT))
    return [f"{_label(m, e)}: type {mujoco.mjtEq(int(m.eq_type[e])).name} (only joint, tendon "
            "and connect equalities are supported)"
            for e in range(m.neq) if int(m.eq_type[e]) not in supported]


def compile_equality(m) -> EqualityModel | None:
    """The `EqualityModel` of a compiled MjModel `m` (only read), or None if it has no active
    equality or the equality or constraint flag is disabled. Raises ValueError naming the
    equality for an unsupported type (`equality_problems`) or a solref that mixes the
    standard and direct formats."""
    import mujoco

    problems = equality_problems(m)
    if problems:
        raise ValueError("unsupported MJCF element: " + "; ".join(problems))
    dsbl = m.opt.disableflags
    if dsbl & (mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT):
        return None
    keep = [e for e in range(m.neq) if m.eq_active0[e]]
    if not keep:
        return None
    eq = mujoco.mjtEq
    rows = []
    for e in keep:
        solref = np.asarray(m.eq_solref[e], dtype=np.float64)
        if (solref[0] > 0) != (solref[1] > 0):
            raise ValueError(
                f"{_label(m, e)}: solref ({solref[0]:g}, {solref[1]:g}) mixes the standard "
                "(timeconst, dampratio > 0) and direct (-stiffness, -damping <= 0) formats; use "
                "two positive or two non-positive values (MuJoCo would warn and use its "
                "default (0.02, 1))")
        o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        data = np.asarray(m.eq_data[e], dtype=np.float64)
        row = dict(polycoef=np.zeros(5), anchor1=np.zeros(3), anchor2=np.zeros(3),
                   ref1=0.0, ref2=0.0, adr1=(-1, -1), adr2=(-1, -1), obj1=o1, obj2=o2,
                   solref=solref, solimp=np.asarray(m.eq_solimp[e], dtype=np.float64),
                   name=_label(m, e))
        kind = int(m.eq_type[e])
        if kind == int(eq.mjEQ_JOINT):
            row.update(kind=JOINT, polycoef=data[:5], ref1=float(m.qpos0[m.jnt_qposadr[o1]]),
                       adr1=(int(m.jnt_qposadr[o1]), int(m.jnt_dofadr[o1])),
                       invweight=float(m.dof_invweight0[m.jnt_dofadr[o1]]))
            if o2 >= 0:
                row.update(ref2=float(m.qpos0[m.jnt_qposadr[o2]]),
                           adr2=(int(m.jnt_qposadr[o2]), int(m.jnt_dofadr[o2])))
                row["invweight"] += float(m.dof_invweight0[m.jnt_dofadr[o2]])
        elif kind == int(eq.mjEQ_TENDON):
            row.update(kind=TENDON, polycoef=data[:5], ref1=float(m.tendon_length0[o1]),
                       invweight=float(m.tendon_invweight0[o1]))
            if o2 >= 0:
                row["ref2"] = float(m.tendon_length0[o2])
                row["invweight"] += float(m.tendon_invweight0[o2])
        else:  # connect: anchors in the two bodies' frames
            if int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE):
                row.update(obj1=int(m.site_bodyid[o1]), obj2=int(m.site_bodyid[o2]),
                           anchor1=np.asarray(m.site_pos[o1]), anchor2=np.asarray(m.site_pos[o2]))
            else:
                row.update(anchor1=data[0:3], anchor2=data[3:6])
            row.update(kind=CONNECT, invweight=float(m.body_invweight0[row["obj1"], 0]
                                                     + m.body_invweight0[row["obj2"], 0]))
        rows.append(row)
    from myotwin.engine.model import is_spatial_tendon
    from myotwin.engine.tendons import fixed_tendon_coefficients

    f64 = lambda k: jnp.asarray(np.array([r[k] for r in rows], dtype=np.float64))  # noqa: E731
    tendon = {1: [], 2: []}
    for r in rows:
        tendon[1].append(r["obj1"] if r["kind"] == TENDON else -1)
        tendon[2].append(r["obj2"] if r["kind"] == TENDON else -1)
    fixed = {i: fixed_tendon_coefficients(m, tendon[i]) for i in (1, 2)}
    spatial = {i: tuple(t >= 0 and bool(is_spatial_tendon(m, t)) for t in tendon[i])
               for i in (1, 2)}
    as_jnp = lambda x: jnp.asarray(x, dtype=jnp.float64)  # noqa: E731
    return EqualityModel(
        polycoef=f64("polycoef"), anchor1=f64("anchor1"), anchor2=f64("anchor2"),
        solref=f64("solref"), solimp=f64("solimp"), invweight=f64("invweight"),
        ref1=f64("ref1"), ref2=f64("ref2"),
        fixed1_q=as_jnp(fixed[1][0]), fixed2_q=as_jnp(fixed[2][0]),
        fixed1_v=as_jnp(fixed[1][1]), fixed2_v=as_jnp(fixed[2][1]),
        kind=tuple(r["kind"] for r in rows), obj1=tuple(r["obj1"] for r in rows),
        obj2=tuple(r["obj2"] for r in rows), adr1=tuple(r["adr1"] for r in rows),
        adr2=tuple(r["adr2"] for r in rows), spatial1=spatial[1], spatial2=spatial[2],
        names=tuple(r["name"] for r in rows))


def _polynomial(c: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(p(x), p'(x)) of p = c0 + c1 x + ... + c4 x^4 (c (k, 5), x (k,)), by Horner's rule."""
    value, slope = c[:, 4], 4.0 * c[:, 4]
    for i in (3, 2, 1):
        value = value * x + c[:, i]
        slope = slope * x + i * c[:, i]
    return value * x + c[:, 0], slope


def _tendon_rows(model, q: jax.Array, coef_q: jax.Array, coef_v: jax.Array,
                 tendon_ids, spatial) -> tuple[jax.Array, jax.Array]:
    """(L (k,), J (k, n_v)) of MuJoCo tendons `tendon_ids` (-1: zeros): spatial ones (static
    flags `spatial`) from the paths, fixed ones from their coefficients coef_q, coef_v."""
    from myotwin.engine.tendons import spatial_tendon_rows

    length = coef_q.astype(q.dtype) @ q
    jac = coef_v.astype(q.dtype)
    spatial = np.asarray(spatial, dtype=bool)
    if spatial.any():
        ids = [t if s else -1 for t, s in zip(tendon_ids, spatial)]
        s_len, s_jac = spatial_tendon_rows(model, q, ids, "tendon equality")
        length = jnp.where(spatial, s_len, length)
        jac = jnp.where(spatial[:, None], s_jac, jac)
    return length, jac


def _scalar_rows(model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(r (k,), J (k, n_v)) of every equality as a joint/tendon row (connect rows: garbage,
    masked by the caller)."""
    from myotwin.engine.rows import take

    eq = model.equality
    kind = np.asarray(eq.kind)
    dtype = q.dtype
    joint, tendon = kind == JOINT, kind == TENDON
    q1, d1 = (np.array([a[i] for a in eq.adr1]) for i in (0, 1))
    q2, d2 = (np.array([a[i] for a in eq.adr2]) for i in (0, 1))
    v1 = jnp.where(joint, take(q, np.maximum(q1, 0)), 0.0)
    v2 = jnp.where(joint & (q2 >= 0), take(q, np.maximum(q2, 0)), 0.0)
    eye = np.eye(model.n_v)
    j1 = jnp.asarray(np.where((joint & (d1 >= 0))[:, None], eye[np.maximum(d1, 0)], 0.0), dtype)
    j2 = jnp.asarray(np.where((joint & (d2 >= 0))[:, None], eye[np.maximum(d2, 0)], 0.0), dtype)
    if tendon.any():
        t1 = [o if k == TENDON else -1 for k, o in zip(eq.kind, eq.obj1)]
        t2 = [o if k == TENDON else -1 for k, o in zip(eq.kind, eq.obj2)]
        l1, tj1 = _tendon_rows(model, q, eq.fixed1_q, eq.fixed1_v, t1, eq.spatial1)
        l2, tj2 = _tendon_rows(model, q, eq.fixed2_q, eq.fixed2_v, t2, eq.spatial2)
        v1, v2 = jnp.where(tendon, l1, v1), jnp.where(tendon, l2, v2)
        j1 = jnp.where(tendon[:, None], tj1, j1)
        j2 = jnp.where(tendon[:, None], tj2, j2)
    has2 = np.array([o >= 0 for o in eq.obj2]) & (kind != CONNECT)
    x = jnp.where(has2, v2 - eq.ref2, 0.0)
    value, slope = _polynomial(eq.polycoef, x)     # x = 0 without a second object: c0, c1
    return v1 - eq.ref1 - value, j1 - jnp.where(has2, slope, 0.0)[:, None] * j2


def _connect_rows(model, q: jax.Array, qd: jax.Array, connect: np.ndarray):
    """(r (n_c, 3), J (n_c, 3, n_v), Jdot qd (n_c, 3)) of the connect equalities `connect`
    (static indices): residual, Jacobian and the residual's acceleration at qdd = 0."""
    from myotwin.engine.jacobian import point_tangents
    from myotwin.engine.kinematics import kinematics
    from myotwin.engine.rows import take
    from myotwin.engine.twists import body_motion_from_kinematics
    from myotwin.inertia.anchors import point_rates

    eq = model.equality
    kin = kinematics(model, q)
    b1, b2 = np.array(eq.obj1)[connect], np.array(eq.obj2)[connect]

    def world(body, anchor):
        return take(kin.body_pos_world, body) + jnp.einsum(
            "nij,nj->ni", take(kin.body_rot_world, body), take(anchor, connect))

    p1, p2 = world(b1, eq.anchor1), world(b2, eq.anchor2)
    jp = point_tangents(model, kin, p1, b1) - point_tangents(model, kin, p2, b2)  # (n_v, n_c, 3)
    bodies = body_motion_from_kinematics(model, kin, qd)   # the engine's velocity stage
    _, a1 = point_rates(model, kin, bodies, p1, b1)
    _, a2 = point_rates(model, kin, bodies, p2, b2)
    return p1 - p2, jnp.moveaxis(jp, 0, -1), a1 - a2


def equality_rows(model, q: jax.Array, qd: jax.Array):
    """(dist (n,), jac (n, n_v), imp_dist (n,), bias (n,), solref (n, 2), solimp (n, 5),
    invweight (n,)) of the n equality rows at configuration q and velocity qd, in MuJoCo's
    order (module docstring): imp_dist is the distance at which each row's impedance is taken
    (|r|, the block's norm for a connect); bias is the row's Jdot qd where MuJoCo puts it in
    aref (connect rows), 0 elsewhere."""
    from myotwin.engine.rows import take
    from myotwin.paths.safe import norm

    eq = model.equality
    kind = np.asarray(eq.kind)
    if np.any(kind != CONNECT):
        s_dist, s_jac = _scalar_rows(model, q)
    connect = np.flatnonzero(kind == CONNECT)
    if connect.size:
        c_dist, c_jac, c_bias = _connect_rows(model, q, qd, connect)
        c_norm = norm(c_dist)        # a finite derivative where the connect holds exactly
    dist, jac, imp, bias, index = [], [], [], [], []
    for k, kd in enumerate(kind):
        if kd == CONNECT:
            c = int(np.flatnonzero(connect == k)[0])
            dist += [c_dist[c, i] for i in range(3)]
            jac += [c_jac[c, i] for i in range(3)]
            imp += [c_norm[c]] * 3
            bias += [c_bias[c, i] for i in range(3)]
            index += [k] * 3
        else:
            dist.append(s_dist[k])
            jac.append(s_jac[k])
            imp.append(jnp.abs(s_dist[k]))
            bias.append(jnp.zeros((), q.dtype))
            index.append(k)
    index = np.array(index, dtype=np.int64)
    return (jnp.stack(dist), jnp.stack(jac), jnp.stack(imp), jnp.stack(bias),
            take(eq.solref, index), take(eq.solimp, index), take(eq.invweight, index))
