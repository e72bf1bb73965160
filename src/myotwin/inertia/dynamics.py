"""Muscle mass points in the skeleton's equations of motion (Wang et al. 2022 §3, Eqs. 1-7).

With x_alpha(q) (n_points, 3) the mass-point positions (`path_fraction.py`), masses m_k and
gravity g, the seed's Eq. 7 adds to the skeleton's M(q) qdd = f:

  M_total = M + J_ar^T M_a J_ar          = M + sum_k m_k J_k^T J_k                    (7b)
  f_total = f + J_ar^T (f_a - M_a Jdot_ar qd)
                                         = f + sum_k m_k J_k^T (g - Jdot_k qd)         (7c)

J_k (3, n_v) = d x_k / d qd is the mass point's Jacobian in velocity coordinates (Eq. 1, 4:
J_ar = J_am J_mr) and Jdot_k qd (3,) its quadratic velocity term (Eq. 5), the acceleration of
the point when qdd = 0. The engine's sign convention is kept: `muscle_bias_forces` returns
c_mus = sum_k m_k J_k^T (Jdot_k qd - g), which is *subtracted* like `engine.bias_forces`.

How J_k and Jdot_k qd are computed (the seed's chain, Eqs. 2-5). The points depend on the
skeleton through the path anchors y (site positions, wrap frames; `anchors.py`):
x = F(y) (`path_fraction`), and y moves with the bodies (J_mr, Jdot_mr of the engine: dof
motion vectors, RNEA bias accelerations). The kinematics are never differentiated (their
second-order graph made XLA compile times grow to minutes). Then
  * points on site-only paths (Types I, II): J_am and its rate in closed form, seed Eqs. 10,
    12-16 (`polyline.py`), from the sites' tangents, velocities and bias accelerations;
  * points on wrapped paths and network points (Type III): forward-mode autodiff of F only,
      J_k[:, d]  = DF(y)[dy/dqd_d]                    (one jvp per dof, vmapped: J_am J_mr)
      Jdot_k qd  = d^2/dt^2 F(y + t ydot + t^2/2 yddot_0) at t = 0
                 = DF(y)[yddot_0] + D^2F(y)[ydot, ydot] (nested jvp: J_am Jdot_mr + Jdot_am J_mr)
    with ydot = J_y qd and yddot_0 the anchors' acceleration at qdd = 0;
  * points on OpenSim-semantics paths (a model from `paths.builder`): the same forward-mode
    derivatives of their F (`opensim_points.py`: OpenSim's anchors, its current path); the
    model's MJCF paths as above (`composite.py` splits the points by path kind).
tests/inertia prove that both equal (i) autodiff through the whole kinematics with the
quaternion tangent map, `jacobians_by_autodiff` (retraction q (+) v = q + qpos_derivative(q, v),
which the kinematics normalise; 2 atan(|v|/2) = |v| + O(|v|^3), so second derivatives along
t -> q (+) t qd are those of constant qvel), (ii) central differences of x_alpha(q) with
mj_integratePos, and (iii) the seed's explicit Type I Eq. 10, Type II Eqs. 12-16 and Type III
Eqs. 20-27 built from the engine's point Jacobians. J_k is continuous along an active wrap and
between path points (C^1 geometry), so Jdot_k qd exists there.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.integrators import qpos_derivative
from myotwin.engine.kinematics import kinematics
from myotwin.engine.rows import take
from myotwin.inertia import composite, opensim_points
from myotwin.inertia.anchors import AnchorMotion, PathAnchors, anchor_motion, path_anchors
from myotwin.inertia.muscle_mass import PositionModel
from myotwin.inertia.path_fraction import (mass_point_layout, mass_point_positions_from_anchors,
                                           mass_point_positions_from_kinematics)
from myotwin.inertia.polyline import polyline_mass_terms, polyline_point_motion, polyline_tables
from myotwin.paths.opensim_path import opensim_anchors


def _require(model):
    if getattr(model, "muscle_mass", None) is None:
        raise ValueError("the model has no muscle mass (see myotwin.inertia.with_muscle_mass or "
                         "the MJCF numeric 'muscle_mass:<tendon>')")
    return model.muscle_mass


def retract(model, q: jax.Array, v: jax.Array) -> jax.Array:
    """(n_q,) q (+) v = q + qpos_derivative(q, v) for v (n_v,): hinge/slide/free translation
    q + v, quaternions q (x) (1, v/2) (normalised by the kinematics)."""
    return q + qpos_derivative(model, q, v)


def _point_sets(model) -> tuple[np.ndarray, np.ndarray]:
    """(points on site-only library paths, the other points): static index arrays. The first
    get J and Jdot qd in closed form (`polyline.py`), the others (wraps, the wrap network) by
    forward-mode derivatives of F."""
    paths, mm = model.paths, model.muscle_mass
    wrapped = {paths.unit_path[u] for u in range(paths.n_units) if paths.unit_wrap[u] >= 0}
    poly = np.array([p not in wrapped and mm.path_position_model[p] == PositionModel.LIBRARY
                     for p in mm.point_path], dtype=bool)
    return np.flatnonzero(poly), np.flatnonzero(~poly)


def _jacobians(f, y, tangents) -> jax.Array:
    """(n_points, 3, n_v): one jvp of F per dof column of the anchors' tangents."""
    cols = jax.vmap(lambda t: jax.jvp(f, (y,), (t,))[1])(tangents)   # (n_v, n_points, 3)
    return jnp.moveaxis(cols, 0, -1)


def _jacobians_and_bias(f, y, motion) -> tuple[jax.Array, jax.Array]:
    """(J (n_points, 3, n_v), Jdot qd (n_points, 3)) with Jdot qd = d^2/dt^2 F(y + t ydot +
    t^2/2 yddot_0) at t = 0 = D^2F(y)[ydot, ydot] + DF(y)[yddot_0]. One pass traces F once:
    a jvp along ydot of the vmapped jvps DF(y)[c] over the columns c = (the dofs' tangents,
    yddot_0, ydot); its primal holds J and DF[yddot_0], its tangent's last column
    D^2F[ydot, ydot]. Tracing F twice (a vmapped jvp, then a jvp of a jvp) gave a larger
    program (arm26's OpenSim points: 51k against 36k StableHLO ops, compile 43-47 against
    32-38 s); the unused second-order columns cost no step time measurable on this machine
    (benchmarks/RESULTS.md, "MuJoCo muscles", session 43)."""
    ydot, yddot = motion.velocity, motion.bias_acceleration
    columns = jax.tree_util.tree_map(lambda t, a, v: jnp.concatenate([t, a[None], v[None]]),
                                     motion.tangents, yddot, ydot)

    def directional(anchors):
        return jax.vmap(lambda t: jax.jvp(f, (anchors,), (t,))[1])(columns)

    cols, second = jax.jvp(directional, (y,), (ydot,))   # (n_v + 2, n_points, 3) each
    return jnp.moveaxis(cols[:-2], 0, -1), cols[-2] + second[-1]


class _Stage(NamedTuple):
    """Anchors and their motion at (q, qd), the two point sets and whether Jdot qd is wanted."""

    anchors: PathAnchors
    motion: AnchorMotion
    poly: np.ndarray
    other: np.ndarray
    with_bias: bool


def _stage(model, q, qd=None, kin=None, with_bias=True, bodies=None) -> _Stage:
    """The anchors at q (from `kin` if given) and their motion (velocity and bias acceleration
    only if qd is given and with_bias; from the engine's velocity stage `bodies` if given)."""
    layout = mass_point_layout(model)
    kin = kinematics(model, q) if kin is None else kin
    y = path_anchors(model.paths, kin, layout.wraps)
    with_bias = with_bias and qd is not None
    motion = anchor_motion(model, model.paths, kin, y, layout.wraps, qd if with_bias else None,
                           bodies if with_bias else None)
    return _Stage(y, motion, *_point_sets(model), with_bias)


def _poly_sites(model, st: _Stage):
    """(tables, site arguments of `polyline.piece_motion`) of the polyline points."""
    mm = model.muscle_mass
    tables = polyline_tables(model.paths, tuple(np.asarray(mm.point_path)[st.poly].tolist()))
    m = st.motion
    sites = (st.anchors.site_pos_world, m.tangents.site_pos_world)
    if st.with_bias:
        sites += (m.velocity.site_pos_world, m.bias_acceleration.site_pos_world)
    return tables, sites


def _other_motion(model, st: _Stage):
    """(J, Jdot qd or None) of the other points by forward-mode derivatives of F."""
    def f(anchors):
        return mass_point_positions_from_anchors(model, anchors, st.other)

    if st.with_bias:
        return _jacobians_and_bias(f, st.anchors, st.motion)
    return _jacobians(f, st.anchors, st.motion.tangents), None


def _opensim_motion(model, sp: composite.CompositeSplit, q, qd, kin, with_bias, bodies=None):
    """(J, Jdot qd or None) of the points on OpenSim paths (`composite.split`) by forward-mode
    derivatives of F (`opensim_points.point_positions`) along the anchors' motion."""
    ps = model.paths.opensim
    kin = kinematics(model, q) if kin is None else kin
    y = opensim_anchors(ps, kin)
    with_bias = with_bias and qd is not None
    motion = opensim_points.anchor_motion(model, ps, kin, y, qd if with_bias else None,
                                          bodies if with_bias else None)
    alpha = take(model.muscle_mass.point_alpha, sp.opensim_points)

    def f(anchors):
        return opensim_points.point_positions(ps, anchors, q, sp.opensim_path, alpha)

    if with_bias:
        return _jacobians_and_bias(f, y, motion)
    return _jacobians(f, y, motion.tangents), None


def _composite_point_motion(model, q, qd, kin, with_bias):
    """`_point_motion` of a model with MJCF and OpenSim paths (`inertia.composite`)."""
    sp = composite.split(model)
    kin = kinematics(model, q) if kin is None else kin
    jacs, accs = [], []
    if sp.mjcf_model is not None:
        j, a = _point_motion(sp.mjcf_model, q, qd, kin, with_bias)
        jacs.append((sp.mjcf_points, j))
        accs.append((sp.mjcf_points, a))
    if sp.opensim_points.size:
        j, a = _opensim_motion(model, sp, q, qd, kin, with_bias)
        jacs.append((sp.opensim_points, j))
        accs.append((sp.opensim_points, a))
    acc = None if accs[0][1] is None else composite.merge_points(accs)
    return composite.merge_points(jacs), acc


def _point_motion(model, q, qd=None, kin=None, with_bias=True):
    """(J (n_points, 3, n_v), Jdot qd (n_points, 3) or None): closed form on site-only paths,
    forward-mode derivatives of F on the others; Jdot qd only if qd is given and with_bias."""
    if composite.is_composite(model):
        return _composite_point_motion(model, q, qd, kin, with_bias)
    mm = model.muscle_mass
    st = _stage(model, q, qd, kin, with_bias)
    parts = []
    if st.poly.size:
        tables, sites = _poly_sites(model, st)
        alpha = take(mm.point_alpha, st.poly)
        parts.append((st.poly, *polyline_point_motion(tables, alpha, *sites)))
    if st.other.size:
        parts.append((st.other, *_other_motion(model, st)))
    if len(parts) == 1:
        return parts[0][1], parts[0][2]
    dtype = st.anchors.site_pos_world.dtype
    jac = jnp.zeros((mm.n_points, 3, model.n_v), dtype=dtype)
    acc = jnp.zeros((mm.n_points, 3), dtype=dtype)
    for idx, j, a in parts:
        jac = jac.at[idx].set(j)
        if st.with_bias:
            acc = acc.at[idx].set(a)
    return jac, (acc if st.with_bias else None)


def mass_point_jacobians(model, q: jax.Array) -> jax.Array:
    """(n_points, 3, n_v) Jacobians J_k = d x_k / d qd of the mass points at q (n_q,)."""
    _require(model)
    return _point_motion(model, q)[0]


def jacobians_by_autodiff(model, q: jax.Array) -> jax.Array:
    """(n_points, 3, n_v) the same J_k by jax.jacfwd through the whole kinematics on the
    retraction q (+) v (a reference: slower to compile; tests/inertia prove the equality)."""
    _require(model)

    def positions(v):
        qv = retract(model, q, v)
        return mass_point_positions_from_kinematics(model, kinematics(model, qv), qv)

    return jax.jacfwd(positions)(jnp.zeros(model.n_v, dtype=q.dtype))


def mass_point_velocities(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_points, 3) world velocities J_k qd (m/s)."""
    _require(model)
    return jnp.einsum("kia,a->ki", _point_motion(model, q)[0], qd)


def mass_point_bias_accelerations(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_points, 3) Jdot_k qd (m/s^2): the points' accelerations when qdd = 0 (Eq. 5)."""
    _require(model)
    return _point_motion(model, q, qd)[1]


def jacobians_and_bias(model, q: jax.Array, qd: jax.Array,
                       kin=None) -> tuple[jax.Array, jax.Array]:
    """(J (n_points, 3, n_v), Jdot qd - g (n_points, 3)): the acceleration each point's mass
    resists at qdd = 0, from one anchor evaluation (`kin`: the kinematics at q if the caller
    has them). With `include_qvv=False` (the seed's §4.3 ablation) Jdot qd is left out."""
    mm = _require(model)
    grav = jnp.broadcast_to(model.gravity, (mm.n_points, 3))
    jac, acc = _point_motion(model, q, qd, kin, with_bias=mm.include_qvv)
    if not mm.include_qvv:  # seed §4.3 ablation: the QVV of the muscle points dropped
        return jac, -grav
    return jac, acc - grav


def _mass_terms(model, q, qd, kin, with_bias, bodies=None) -> tuple[jax.Array, jax.Array]:
    """(sum_k m_k J_k^T J_k, sum_k m_k J_k^T (Jdot_k qd - g)), Jdot qd left out unless qd is
    given and with_bias. Points on site-only paths enter through their pieces' mass moments
    (`polyline.polyline_mass_terms`), the others through their Jacobians."""
    mm = _require(model)
    if composite.is_composite(model):
        return _composite_mass_terms(model, q, qd, kin, with_bias, bodies)
    st = _stage(model, q, qd, kin, with_bias, bodies)
    m_mus = jnp.zeros((model.n_v, model.n_v), dtype=st.anchors.site_pos_world.dtype)
    c_mus = jnp.zeros(model.n_v, dtype=m_mus.dtype)
    if st.poly.size:
        tables, sites = _poly_sites(model, st)
        m_mus, c_mus = polyline_mass_terms(tables, take(mm.point_alpha, st.poly),
                                           take(mm.point_mass, st.poly), *sites[:2],
                                           model.gravity, *sites[2:])
    if st.other.size:
        jac, acc = _other_motion(model, st)
        m_mus, c_mus = _add_point_terms(model, m_mus, c_mus, take(mm.point_mass, st.other),
                                        jac, acc)
    return m_mus, c_mus


def _add_point_terms(model, m_mus, c_mus, mass, jac, acc):
    """Eq. 7's sums over points with masses (n,), Jacobians (n, 3, n_v) and Jdot qd (n, 3)
    (or None: left out) added to (m_mus, c_mus)."""
    acc = -model.gravity if acc is None else acc - model.gravity
    weighted = mass[:, None, None] * jac
    # sums, not einsum's dots: XLA's CPU compiler makes a dot a library (YNNPACK) fusion,
    # which keeps a rollout's loop from being compiled whole (jax_setup.py)
    acc = jnp.broadcast_to(acc, jac.shape[:2])
    return (m_mus + jnp.sum(weighted[..., :, None] * jac[..., None, :], axis=(0, 1)),
            c_mus + jnp.sum(weighted * acc[..., None], axis=(0, 1)))


def _composite_mass_terms(model, q, qd, kin, with_bias, bodies):
    """`_mass_terms` of a model with MJCF and OpenSim paths (`inertia.composite`): the MJCF
    points as on an all-MJCF model, the OpenSim points through their Jacobians."""
    sp = composite.split(model)
    kin = kinematics(model, q) if kin is None else kin
    dtype = kin.body_pos_world.dtype
    m_mus = jnp.zeros((model.n_v, model.n_v), dtype=dtype)
    c_mus = jnp.zeros(model.n_v, dtype=dtype)
    if sp.mjcf_model is not None:
        m_mus, c_mus = _mass_terms(sp.mjcf_model, q, qd, kin, with_bias, bodies)
    if sp.opensim_points.size:
        jac, acc = _opensim_motion(model, sp, q, qd, kin, with_bias, bodies)
        m_mus, c_mus = _add_point_terms(model, m_mus, c_mus,
                                        take(model.muscle_mass.point_mass, sp.opensim_points),
                                        jac, acc)
    return m_mus, c_mus


def muscle_mass_matrix(model, q: jax.Array) -> jax.Array:
    """(n_v, n_v) muscle contribution J_ar^T M_a J_ar = sum_k m_k J_k^T J_k (Eq. 7b), as the
    dynamics compute it."""
    return _mass_terms(model, q, None, None, with_bias=False)[0]


def muscle_bias_forces(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_v,) c_mus = sum_k m_k J_k^T (Jdot_k qd - g) (Eq. 7c with the engine's bias sign:
    subtracted from the applied forces, like `engine.bias_forces`)."""
    return muscle_mass_terms(model, q, qd)[1]


def muscle_mass_terms(model, q: jax.Array, qd: jax.Array, kin=None,
                      bodies=None) -> tuple[jax.Array, jax.Array]:
    """(M_mus (n_v, n_v), c_mus (n_v,)) of Eq. 7: forward dynamics solves
    (M + M_mus) qdd = f - c_mus (`kin`: the kinematics at q, `bodies`: the engine's velocity
    stage at (q, qd), if already computed). With `include_qvv=False` (the seed's §4.3
    ablation) c_mus leaves out Jdot qd."""
    return _mass_terms(model, q, qd, kin, with_bias=_require(model).include_qvv, bodies=bodies)


def muscle_inverse_forces(model, q: jax.Array, qd: jax.Array, qdd: jax.Array,
                          kin=None, bodies=None) -> jax.Array:
    """(n_v,) M_mus qdd + c_mus = sum_k m_k J_k^T (J_k qdd + Jdot_k qd - g): the generalized
    force the mass points add to inverse dynamics (`kin`, `bodies`: the kinematics at q and
    the velocity stage at (q, qd), if computed)."""
    m_mus, c_mus = muscle_mass_terms(model, q, qd, kin, bodies)
    return m_mus @ qdd + c_mus


def muscle_kinetic_energy(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """Scalar 0.5 sum_k m_k |J_k qd|^2 (J)."""
    mm = _require(model)
    v = mass_point_velocities(model, q, qd)
    return 0.5 * jnp.sum(mm.point_mass * jnp.sum(v * v, axis=-1))


def muscle_potential_energy(model, q: jax.Array) -> jax.Array:
    """Scalar gravitational energy -sum_k m_k g . x_k (J), same reference as the engine's."""
    mm = _require(model)
    x = mass_point_positions_from_kinematics(model, kinematics(model, q), q)
    return -jnp.sum(mm.point_mass * (x @ model.gravity))
