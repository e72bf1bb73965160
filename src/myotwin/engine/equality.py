"""Equality constraints (MuJoCo `<equality>`: joint, tendon, connect and weld), as MuJoCo
4.0's constraint rows (mjCNSTR_EQUALITY), solved with the friction and limit rows (limits.py).

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
         invweight = body_invweight0[body1, 0] + body_invweight0[body2, 0];
  weld   (body1/body2, or site1/site2): the connect's 3 rows (body semantic: body1's point
         is relpose's position, body2's the anchor), then 3 orientation rows
         r = ts imag(conj(B) A), A = q_body1 f1, B = q_body2 f2 (frames f: relpose's
         quaternion and identity, or the two sites' quaternions; ts = torquescale),
         J column d = ts/2 imag(conj(B) (0, w1_d - w2_d) A) with w_d the bodies' angular
         Jacobian columns; invweight body_invweight0[., 0] (position rows), [., 1] (orientation
         rows) summed over both bodies.
The soft law is the limits' (limits.py) with margin 0, except that the impedance of a
connect's or weld's rows is taken at the norm of its whole residual |r| (one value for the
block) and that their reference acceleration also removes the residual's acceleration at
qdd = 0, aref = -B J qd - K d r - rdd_0. MuJoCo 4.0 does this for connect and weld rows only:
measured, its aref departs from -B J qd - K d r quadratically in qd, by exactly the second
time derivative of r along qd at qdd = 0 (central differences of MuJoCo's own efc_pos); joint
and tendon rows have no such term. Here rdd_0 is a1 - a2 for positions (the anchors' bias
accelerations from the velocity stage, `inertia.anchors.point_rates`) and, for a weld's
orientation, ts imag(Q'') with Q = conj(B) A, Q' = 1/2 conj(B) (0, w1 - w2) A,
Q'' = 1/2 conj(B) [-1/2 (0, w2)(0, dw) + (0, al1 - al2) + 1/2 (0, dw)(0, w1)] A, dw = w1 - w2,
w and al the bodies' world angular velocities and bias accelerations.
The force is unbounded: a row of the dual QP with bounds (-inf, inf). solref and solimp are
the equality's. An equality that is inactive at load (`active="false"`, MuJoCo eq_active0)
makes no rows (MuJoCo's runtime switch, MjData.eq_active, has no counterpart here). The
equality and constraint disable flags remove all rows, as in MuJoCo. Flex equalities (the
engine has no flexes) are refused at load, naming the equality (`model.compile_model`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

_STATIC = {"static": True}
#: Row kinds (static): joint or tendon (scalar, polynomial), connect (three rows), weld (six).
JOINT, TENDON, CONNECT, WELD = 0, 1, 2, 3
#: Rows per kind.
_ROWS = {JOINT: 1, TENDON: 1, CONNECT: 3, WELD: 6}


@dataclasses.dataclass(frozen=True)
class EqualityModel:
    """The model's active joint, tendon, connect and weld equalities (a JAX pytree; k of them).

    polycoef (k, 5): c0..c4 of joint/tendon equalities (zero otherwise).
    anchor1, anchor2 (k, 3): a connect's or weld's anchor points in its bodies' frames (zero
      otherwise; for site semantics, the sites' positions in their bodies).
    frame1, frame2 (k, 4): a weld's frames in its bodies (w-first quaternions): relpose's
      quaternion and identity, or the two sites' quaternions; identity otherwise.
    torquescale (k,): a weld's torquescale (0 otherwise); invweight_rot (k,): the regulariser
      scale of a weld's rotation rows (body_invweight0[., 1] of both bodies).
    solref (k, 2), solimp (k, 5), invweight (k,): the soft-constraint parameters and MuJoCo's
      regulariser scale (module docstring).
    ref1, ref2 (k,): qpos0 of the joints or tendon_length0 of the tendons (0 otherwise).
    fixed1_q, fixed2_q (k, n_q), fixed1_v, fixed2_v (k, n_v): the coefficients of tendon1 and
      tendon2 where they are fixed tendons (zero rows otherwise).
    Static: kind (k,) JOINT/TENDON/CONNECT/WELD; obj1, obj2 (k,): joints (qpos/dof addresses in
      `adr1`/`adr2`), tendons (MuJoCo ids) or bodies; -1 where there is no second object;
      adr1, adr2 (k,): (qpos address, dof address) pairs of the joints ((-1, -1) otherwise);
      spatial1, spatial2 (k,): whether tendon1 / tendon2 is a spatial tendon; names (k,).
    """

    polycoef: jax.Array
    anchor1: jax.Array
    anchor2: jax.Array
    frame1: jax.Array
    frame2: jax.Array
    torquescale: jax.Array
    invweight_rot: jax.Array
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
        return sum(_ROWS[k] for k in self.kind)


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
    supported = (int(eq.mjEQ_JOINT), int(eq.mjEQ_TENDON), int(eq.mjEQ_CONNECT),
                 int(eq.mjEQ_WELD))
    return [f"{_label(m, e)}: type {mujoco.mjtEq(int(m.eq_type[e])).name} (only joint, tendon, "
            "connect and weld equalities are supported)"
            for e in range(m.neq) if int(m.eq_type[e]) not in supported]


def compile_equality(m) -> EqualityModel | None:
    """The `EqualityModel` of a compiled MjModel `m` (only read), or None if it has no active
    equality or the equality or constraint flag is disabled. Raises ValueError naming the
    equality for an unsupported type (`equality_problems`) or a solref that mixes the
    standard and direct formats."""
    import mujoco

    from myotwin.engine.limits import check_solref  # limits.py imports this module

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
        check_solref(solref, _label(m, e), "solref")
        o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        data = np.asarray(m.eq_data[e], dtype=np.float64)
        row = dict(polycoef=np.zeros(5), anchor1=np.zeros(3), anchor2=np.zeros(3),
                   frame1=np.array([1.0, 0, 0, 0]), frame2=np.array([1.0, 0, 0, 0]),
                   torquescale=0.0, invweight_rot=0.0, ref1=0.0, ref2=0.0, adr1=(-1, -1),
                   adr2=(-1, -1), obj1=o1, obj2=o2,
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
        else:  # connect or weld: anchors (and a weld's frames) in the two bodies' frames
            weld = kind == int(eq.mjEQ_WELD)
            if int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE):
                row.update(obj1=int(m.site_bodyid[o1]), obj2=int(m.site_bodyid[o2]),
                           anchor1=np.asarray(m.site_pos[o1]), anchor2=np.asarray(m.site_pos[o2]))
                if weld:
                    row.update(frame1=np.asarray(m.site_quat[o1]),
                               frame2=np.asarray(m.site_quat[o2]))
            elif weld:   # body1's point is relpose's position, body2's the anchor
                row.update(anchor1=data[3:6], anchor2=data[0:3], frame1=data[6:10])
            else:
                row.update(anchor1=data[0:3], anchor2=data[3:6])
            w1, w2 = m.body_invweight0[row["obj1"]], m.body_invweight0[row["obj2"]]
            row.update(kind=WELD if weld else CONNECT, invweight=float(w1[0] + w2[0]),
                       invweight_rot=float(w1[1] + w2[1]),
                       torquescale=float(data[10]) if weld else 0.0)
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
        frame1=f64("frame1"), frame2=f64("frame2"), torquescale=f64("torquescale"),
        invweight_rot=f64("invweight_rot"), solref=f64("solref"), solimp=f64("solimp"),
        invweight=f64("invweight"),
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


def _scalar_rows(model, q: jax.Array, stages=None) -> tuple[jax.Array, jax.Array]:
    """(r (k,), J (k, n_v)) of every equality as a joint/tendon row (connect and weld rows:
    garbage, masked by the caller)."""
    from myotwin.engine.rows import take
    from myotwin.engine.tendons import tendon_rows

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
        l1, tj1 = tendon_rows(model, q, t1, eq.spatial1, eq.fixed1_q, eq.fixed1_v,
                              "tendon equality", stages)
        l2, tj2 = tendon_rows(model, q, t2, eq.spatial2, eq.fixed2_q, eq.fixed2_v,
                              "tendon equality", stages)
        v1, v2 = jnp.where(tendon, l1, v1), jnp.where(tendon, l2, v2)
        j1 = jnp.where(tendon[:, None], tj1, j1)
        j2 = jnp.where(tendon[:, None], tj2, j2)
    has2 = np.array([o >= 0 for o in eq.obj2]) & ((kind == JOINT) | (kind == TENDON))
    x = jnp.where(has2, v2 - eq.ref2, 0.0)
    value, slope = _polynomial(eq.polycoef, x)     # x = 0 without a second object: c0, c1
    return v1 - eq.ref1 - value, j1 - jnp.where(has2, slope, 0.0)[:, None] * j2


def _pair_rows(model, q: jax.Array, qd: jax.Array, pairs: np.ndarray, rotation: bool,
               stages=None):
    """(r (n, k), J (n, k, n_v), Jdot qd (n, k)) of the connects or welds `pairs` (static
    indices; k = 3, or 6 with `rotation`): residual, Jacobian and the residual's acceleration
    at qdd = 0 (module docstring)."""
    from myotwin.engine.jacobian import dof_motion, point_tangents
    from myotwin.engine.kinematics import kinematics
    from myotwin.engine.rows import take
    from myotwin.engine.spatial import quat_mul
    from myotwin.engine.twists import body_motion_from_kinematics
    from myotwin.inertia.anchors import point_rates

    eq = model.equality
    kin = kinematics(model, q) if stages is None else stages.kin
    b1, b2 = np.array(eq.obj1)[pairs], np.array(eq.obj2)[pairs]

    def world(body, anchor):
        return take(kin.body_pos_world, body) + jnp.einsum(
            "nij,nj->ni", take(kin.body_rot_world, body), take(anchor, pairs))

    p1, p2 = world(b1, eq.anchor1), world(b2, eq.anchor2)
    jp = point_tangents(model, kin, p1, b1) - point_tangents(model, kin, p2, b2)  # (n_v, n, 3)
    bodies = (body_motion_from_kinematics(model, kin, qd)   # the engine's velocity stage
              if stages is None else stages.bodies)
    _, a1 = point_rates(model, kin, bodies, p1, b1)
    _, a2 = point_rates(model, kin, bodies, p2, b2)
    r, jac, bias = [p1 - p2], [jnp.moveaxis(jp, 0, -1)], [a1 - a2]
    if rotation:
        # Q = conj(B) A with A, B the two frames' world quaternions: r = ts imag(Q);
        # Q' = 1/2 conj(B) (0, w1 - w2) A; Q'' at qdd = 0 as in the module docstring
        a = quat_mul(take(kin.body_quat_world, b1), take(eq.frame1, pairs))
        b = quat_mul(take(kin.body_quat_world, b2), take(eq.frame2, pairs))
        conj_b = b * jnp.array([1.0, -1.0, -1.0, -1.0])
        ts = take(eq.torquescale, pairs)[:, None]

        def pure(v):                     # (..., 3) -> (..., 4) quaternion (0, v)
            return jnp.concatenate([jnp.zeros_like(v[..., :1]), v], axis=-1)

        def sandwich(v):                 # imag(conj(B) (0, v) A) for v (n, 3)
            return quat_mul(quat_mul(conj_b, pure(v)), a)[..., 1:]

        r.append(ts * quat_mul(conj_b, a)[..., 1:])
        moves = np.asarray(model.dof_ancestor_mask())
        s_ang = dof_motion(model, kin)[:, :3]                          # (n_v, 3)
        jw = (s_ang[:, None, :] * jnp.asarray(moves[b1].T[:, :, None], s_ang.dtype)
              - s_ang[:, None, :] * jnp.asarray(moves[b2].T[:, :, None], s_ang.dtype))
        cols = jax.vmap(sandwich)(jw)                                  # (n_v, n, 3)
        jac.append(jnp.moveaxis(0.5 * ts[None] * cols, 0, -1))        # (n, 3, n_v)
        w1, w2 = take(bodies.velocity, b1)[:, :3], take(bodies.velocity, b2)[:, :3]
        al1 = take(bodies.bias_acceleration, b1)[:, :3]
        al2 = take(bodies.bias_acceleration, b2)[:, :3]
        dw = w1 - w2
        inner = (-0.5 * quat_mul(pure(w2), pure(dw)) + pure(al1 - al2)
                 + 0.5 * quat_mul(pure(dw), pure(w1)))
        bias.append(ts * 0.5 * quat_mul(quat_mul(conj_b, inner), a)[..., 1:])
    return (jnp.concatenate(r, axis=-1), jnp.concatenate(jac, axis=-2),
            jnp.concatenate(bias, axis=-1))


def equality_rows(model, q: jax.Array, qd: jax.Array, stages=None):
    """(dist (n,), jac (n, n_v), imp_dist (n,), bias (n,), solref (n, 2), solimp (n, 5),
    invweight (n,)) of the n equality rows at configuration q and velocity qd, in MuJoCo's
    order (module docstring): imp_dist is the distance at which each row's impedance is taken
    (|r|, the block's norm for a connect or weld); bias is the residual's acceleration at
    qdd = 0 where MuJoCo puts it in aref (connect and weld rows), 0 elsewhere. stages: the
    evaluation's `engine.stages.Stages` at (q, qd), or None to compute them."""
    from myotwin.engine.rows import take
    from myotwin.paths.safe import norm

    eq = model.equality
    kind = np.asarray(eq.kind)
    # every kind's rows into one pool, then one static gather into MuJoCo's (file) order
    pool, start, offset = [], {}, 0
    if np.any((kind == JOINT) | (kind == TENDON)):
        s_dist, s_jac = _scalar_rows(model, q, stages)    # one row per equality (others: unused)
        pool.append((s_dist, s_jac, jnp.abs(s_dist), jnp.zeros_like(s_dist)))
        start["scalar"], offset = 0, kind.size
    for kd, rotation in ((CONNECT, False), (WELD, True)):
        idx = np.flatnonzero(kind == kd)
        if idx.size:
            b_dist, b_jac, b_bias = _pair_rows(model, q, qd, idx, rotation, stages)
            n = _ROWS[kd]
            # one impedance for the block (`norm`: a finite derivative where it holds exactly)
            b_imp = jnp.repeat(norm(b_dist)[:, None], n, axis=1)
            pool.append((b_dist.reshape(-1), b_jac.reshape(-1, model.n_v),
                         b_imp.reshape(-1), b_bias.reshape(-1)))
            start[kd], offset = offset, offset + idx.size * n
    order, index, rot = [], [], []
    for k, kd in enumerate(kind):
        if kd in (JOINT, TENDON):
            order.append(start["scalar"] + k)
            index.append(k)
            rot.append(False)
        else:
            n = _ROWS[kd]
            c = int(np.flatnonzero(np.flatnonzero(kind == kd) == k)[0])
            order += [start[kd] + c * n + i for i in range(n)]
            index += [k] * n
            rot += [i >= 3 for i in range(n)]
    dist, jac, imp, bias = (take(jnp.concatenate(x), np.array(order)) for x in zip(*pool))
    index = np.array(index, dtype=np.int64)
    weight = jnp.where(np.array(rot), take(eq.invweight_rot, index), take(eq.invweight, index))
    return (dist, jac, imp, bias, take(eq.solref, index), take(eq.solimp, index), weight)
