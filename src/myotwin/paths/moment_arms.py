"""Length Jacobians, moment arms and lengthening speeds of the paths (velocity level).

Convention: the length Jacobian J_L (n_paths, n_v) maps the generalized velocity qd (MuJoCo's
qvel layout: body-frame angular velocity for ball and free joints) to dL/dt, exactly MuJoCo's
`ten_J`; the moment arms are r = -J_L^T (n_v, n_paths), so r > 0 where lengthening the joint
coordinate shortens the muscle, and a tension F >= 0 gives the generalized force r F.

Computed by chaining point Jacobians, as MuJoCo mj_tendon does (not by autodiff):
  J_L = sum over straight pieces k of u_k^T (J(b_end, p_end) - J(b_start, p_start)) / divisor,
with u_k the piece's unit direction and J(b, p) the translational Jacobian (engine, mj_jac) of
the world point p moving with body b. The pieces are a straight unit or inactive wrap
(site -> site), or for an active wrap site -> t0 and t1 -> site, the tangent points moving with
the wrap geom's body; the arc/helix piece is rigid with that body and contributes nothing, and
pieces whose ends are on one body are skipped (as MuJoCo does; their contribution is zero).
Because the tangent points make the path locally shortest (envelope theorem), this equals
-dL/dq for outside wraps; for the inside wrap, whose contact point MuJoCo finds by Newton to
|f| <= 1e-6, it is MuJoCo's value and agrees with dL/dq to the residual of that iteration.

Two evaluations of the same sum:
  * no wrap in the path set: J(b, p) of every site at once (`engine.jacobian.site_tangents`,
    the expression the muscle mass points use too, so a model with both computes it once per
    dynamics evaluation) and u_k^T (J_end - J_start) per unit;
  * with wraps: each piece's end forces +-u_k / divisor are collected as spatial wrenches
    (torque about the body's tree reference point, force) and projected on the dof motion
    vectors S_d of the engine: J_L[p, d] = sum over ends on bodies moved by d of S_d . (r x f, f).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.jacobian import body_reference_point, dof_motion, site_tangents
from myotwin.engine.kinematics import Kinematics, kinematics
from myotwin.engine.rows import masked_sum, take
from myotwin.engine.spatial import cross, dot_last
from myotwin.paths.length import PathGeometry, path_geometry
from myotwin.paths.pathset import PathSet
from myotwin.paths.straight import segment_direction

# Activity condition of a straight piece: always, only if its wrap is inactive, only if active.
_ALWAYS, _INACTIVE, _ACTIVE = 0, 1, 2


def _pieces(paths: PathSet):
    """Static description of every straight piece whose ends lie on different bodies:
    (start source, start index, start body, end source, end index, end body, unit, condition),
    sources as in length._point_layout (0/1 unit start/end site, 2/3 tangent point 0/1)."""
    out = []
    for u in range(paths.n_units):
        b0, b1, w = paths.unit_body0[u], paths.unit_body1[u], paths.unit_wrap[u]
        cands = [((0, u, b0), (1, u, b1), _ALWAYS if w < 0 else _INACTIVE)]
        if w >= 0:
            bg = paths.wrap_body[w]
            cands += [((0, u, b0), (2, w, bg), _ACTIVE), ((3, w, bg), (1, u, b1), _ACTIVE)]
        out += [(*s, *e, u, c) for s, e, c in cands if s[2] != e[2]]
    return out


def _site_only_length_jacobian(paths: PathSet, model, kin: Kinematics,
                               geo: PathGeometry) -> jax.Array:
    """J_L of paths without wraps from the sites' tangents (`engine.jacobian.site_tangents`,
    which the muscle mass points share): per unit u^T (J_x1 - J_x0) / divisor, summed per path;
    units whose sites are on one body contribute exactly 0, as in MuJoCo."""
    tangents = site_tangents(model, kin)                                 # (n_v, n_site, 3)
    s0 = np.asarray(paths.unit_site0, dtype=np.int64).reshape(-1)
    s1 = np.asarray(paths.unit_site1, dtype=np.int64).reshape(-1)
    u = segment_direction(geo.unit_start_world, geo.unit_end_world) / paths.unit_divisor[:, None]
    dd = take(tangents, s1, axis=1) - take(tangents, s0, axis=1)          # (n_v, n_units, 3)
    per_unit = jnp.sum(u[None] * dd, axis=-1)                            # (n_v, n_units)
    same = np.asarray(paths.unit_body0) == np.asarray(paths.unit_body1)
    per_unit = jnp.where(same[None, :], 0.0, per_unit)
    # sum per path as a masked, fusible reduction (a dot would be a separate library call)
    on_path = (np.asarray(paths.unit_path, dtype=np.int64)[None, :]
               == np.arange(paths.n_paths)[:, None])                     # (n_paths, n_units)
    return jnp.sum(jnp.where(on_path[:, None, :], per_unit[None], 0.0), axis=-1)


def length_jacobian_from_geometry(
    paths: PathSet, model, kin: Kinematics, geo: PathGeometry
) -> jax.Array:
    """(n_paths, n_v) length Jacobian J_L (MuJoCo ten_J) from the position stage: from the
    sites' tangents if no path wraps, else by the piece wrenches (module docstring)."""
    if paths.n_wraps == 0 and model.n_v and paths.n_units:
        return _site_only_length_jacobian(paths, model, kin, geo)
    pieces = _pieces(paths)
    dtype = kin.body_pos_world.dtype
    if not pieces or model.n_v == 0:
        return jnp.zeros((paths.n_paths, model.n_v), dtype)
    offsets = np.cumsum([0, paths.n_units, paths.n_units, paths.n_wraps])
    table = jnp.concatenate([geo.unit_start_world, geo.unit_end_world,
                             geo.wrap_tangent0_world, geo.wrap_tangent1_world])
    pc = np.array(pieces, dtype=np.int64)
    start, end = offsets[pc[:, 0]] + pc[:, 1], offsets[pc[:, 3]] + pc[:, 4]
    unit, cond = pc[:, 6], pc[:, 7]

    # static gathers (rows.take), products written out (spatial.dot_last, cross) and a masked
    # per-path sum: no scatter or library dot, which would keep a rollout's loop from being
    # compiled whole (engine/cholesky.py)
    active = jnp.ones(len(pieces), dtype)
    if paths.n_wraps:
        w_of = np.maximum(np.asarray(paths.unit_wrap, dtype=np.int64)[unit], 0)
        on = take(geo.wrap_active, w_of).astype(dtype)
        active = jnp.where(cond == _ACTIVE, on, jnp.where(cond == _INACTIVE, 1.0 - on, 1.0))
    weight = active / take(paths.unit_divisor, unit)
    p_start, p_end = take(table, start), take(table, end)
    f = segment_direction(p_start, p_end) * weight[:, None]              # (n_pieces, 3)

    points = jnp.concatenate([p_start, p_end])
    bodies = np.concatenate([pc[:, 2], pc[:, 5]])
    forces = jnp.concatenate([-f, f])
    lever = points - take(body_reference_point(model, kin), bodies)
    wrench = jnp.concatenate([cross(lever, forces), forces], axis=1)     # (n_ends, 6)
    mask = jnp.asarray(model.dof_ancestor_mask()[bodies], dtype=dtype)  # (n_ends, n_v)
    per_end = dot_last(wrench[:, None, :], dof_motion(model, kin)[None]) * mask
    path_of_end = np.tile(np.asarray(paths.unit_path, dtype=np.int64)[unit], 2)
    return masked_sum(path_of_end[None, :] == np.arange(paths.n_paths)[:, None], per_end)


def length_jacobian(paths: PathSet, model, q: jax.Array) -> jax.Array:
    """(n_paths, n_v) J_L = dL/d(qd) at configuration q (n_q,) (MuJoCo ten_J)."""
    kin = kinematics(model, q)
    return length_jacobian_from_geometry(paths, model, kin, path_geometry(paths, model, kin))


def moment_arms(paths: PathSet, model, q: jax.Array) -> jax.Array:
    """(n_v, n_paths) moment arms r = -dL/dq in velocity coordinates (= -ten_J^T), metres for
    hinge and ball dofs (m per rad), dimensionless for slide and free-translation dofs."""
    return -length_jacobian(paths, model, q).T


def lengthening_speeds(paths: PathSet, model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_paths,) dL/dt (m/s) at configuration q (n_q,) and velocity qd (n_v,): J_L qd = -r^T qd
    (MuJoCo ten_velocity)."""
    return length_jacobian(paths, model, q) @ qd
