"""Mass points on paths: specification, positions x_alpha(q), Jacobians J_ar and Jdot_ar qd.

References outside the code under test:
  * MuJoCo 4.0.0: ten_length and wrap points (mj_forward) of the same MJCF;
  * central differences of x_alpha(q) with MuJoCo's own position integrator
    (engine.integrate_pos = mj_integratePos) for J, second differences along qd for Jdot qd;
  * the seed's chained Jacobians J_am J_mr built from the engine's point Jacobians (mj_jac):
    Type I Eq. 10, Type II the EOL Eqs. 12-16 with equal strain, Type III Eqs. 20-27 with the
    wrapping library's own Jacobians (autodiff through paths.obstacle_wrap, a different code
    path from our closed-form wrap derivatives);
  * closed forms: points on the obstacle surface, the symmetric cylinder wrap.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from inertia_models import CHAIN_XML, chain_states
from myotwin import engine, inertia
from myotwin.inertia import path_anchors, path_pieces, piece_layout
from myotwin.models import arm26
from myotwin.paths import obstacle_wrap

#: Mass points per path in the chain model (straight, via, cyl, sph).
N_POINTS = {"straight": 3, "via": 7, "cyl": 40, "sph": 40, "ins": 6}
#: Relative agreement of inside-wrap Jacobians with autodiff through MuJoCo's Newton iterate.
INSIDE_TOL = 1e-5
MASS = {"straight": 0.05, "via": 0.2, "cyl": 0.1, "sph": 0.15, "ins": 0.1}


@pytest.fixture(scope="module")
def chain():
    mj = mujoco.MjModel.from_xml_string(CHAIN_XML)
    model = engine.compile_model(mj)
    for name, n in N_POINTS.items():
        model = inertia.with_muscle_mass(model, name, MASS[name], n)
    return mj, model


@pytest.fixture(scope="module")
def chain_eval(chain):
    """Positions, Jacobians and Jdot qd at 4 seeded states (one jitted, vmapped evaluation),
    plus the positions at every central-difference state."""
    _, model = chain
    qs = jnp.asarray(np.stack(chain_states(4, seed=1)))
    qds = jnp.asarray(np.random.default_rng(2).normal(size=(4, model.n_v)))

    @jax.jit
    def evaluate(q, qd):
        jac, acc = inertia.dynamics.jacobians_and_bias(model, q, qd)
        return inertia.mass_point_positions(model, q), jac, acc + model.gravity

    x, jac, acc = jax.vmap(evaluate)(qs, qds)
    return qs, qds, x, jac, acc


pos_batch = jax.jit(jax.vmap(inertia.mass_point_positions, in_axes=(None, 0)))


@jax.jit
def _path_eval(model, q):
    """For every path at q: its pieces, its points at alpha = 0, 1 and at 11 alphas spanning
    the piece after the first one (the arc of a wrap unit), and the piece ends / L."""
    kin = engine.kinematics(model, q)
    out = []
    for p in range(model.paths.n_paths):
        layout = piece_layout(model.paths, (p,))
        pieces = path_pieces(model.paths, path_anchors(model.paths, kin, layout.wraps), layout)
        ends = pieces.row_end[0] / pieces.path_length[0]
        alphas = jnp.concatenate([jnp.array([0.0, 1.0]),
                                  jnp.linspace(ends[0], ends[min(1, ends.shape[0] - 1)], 11)])
        out.append((pieces, inertia.points_along_path(model.paths, model, q, p, alphas), ends))
    return out


def test_paths_match_mujoco(chain, chain_eval):
    """Piece lengths sum to ten_length, tangent points are MuJoCo's wrap_xpos, points at
    alpha = 0 and 1 are the end sites, every wrap is active at the test states, points on the
    arcs lie on the obstacle (sphere |x - c| = r, cylinder distance to the axis = r) -- all to
    roundoff (tol 1e-12 m; the inside wrap's contact point 1e-7 m, see INSIDE_TOL) -- and at
    least two mass points lie on each arc."""
    mj, model = chain
    qs = chain_eval[0]
    data = mujoco.MjData(mj)
    mass_alpha = np.asarray(model.muscle_mass.point_alpha)
    mass_path = np.asarray(model.muscle_mass.point_path)
    for q in np.asarray(qs):
        data.qpos[:] = q
        mujoco.mj_forward(mj, data)
        assert list(data.ten_wrapnum) == [2, 4, 4, 4, 4], "a wrap is off at a test state"
        for p, (name, (pieces, pts, ends)) in enumerate(
                zip(model.paths.path_names, _path_eval(model, jnp.asarray(q)))):
            layout = piece_layout(model.paths, (p,))
            adr, num = data.ten_wrapadr[p], data.ten_wrapnum[p]
            wrap_pts = data.wrap_xpos.reshape(-1, 3)[adr:adr + num]
            np.testing.assert_allclose(pts[:2], wrap_pts[[0, -1]], atol=1e-12, err_msg=name)
            np.testing.assert_allclose(pieces.path_length[0], data.ten_length[p], atol=1e-12,
                                       err_msg=f"{name}: length vs ten_length")
            if num == 4:  # tangent points as MuJoCo's (inside wrap: t0 = t1)
                tol = 1e-7 if name == "ins" else 1e-12
                np.testing.assert_allclose(pieces.point_world[layout.start[1]], wrap_pts[1],
                                           atol=tol, err_msg=f"{name}: tangent point 0")
                np.testing.assert_allclose(pieces.point_world[layout.end[1]], wrap_pts[2],
                                           atol=tol, err_msg=f"{name}: tangent point 1")
            if name in ("cyl", "sph"):  # arc points on the obstacle; mass points on the arc
                gid = mj.geom(name).id
                local = (np.asarray(pts[2:]) - data.geom_xpos[gid]) @ \
                    data.geom_xmat[gid].reshape(3, 3)
                dist = np.linalg.norm(local[:, :2] if name == "cyl" else local, axis=1)
                np.testing.assert_allclose(dist, mj.geom_size[gid, 0], atol=1e-12,
                                           err_msg=f"{name}: arc points off the obstacle")
                mine = mass_alpha[mass_path == p]
                on_arc = (mine > float(ends[0])) & (mine < float(ends[1]))
                assert on_arc.sum() >= 2, f"{name}: fewer than 2 mass points on the arc"


def test_symmetric_cylinder_wrap_closed_form():
    """A path symmetric about a cylinder (ends at (+-a, -h) around a radius-r cylinder on the
    z axis, wrapping over y > 0): the midpoint alpha = 0.5 is the apex (0, r, 0); the length
    is 2 sqrt(a^2 + h^2 - r^2) + r (pi - 2 atan2(...)) in closed form. Tolerance 1e-14 m."""
    a, h, r = 0.3, 0.2, 0.05
    xml = f"""<mujoco><worldbody><site name="s0" pos="{-a} {-h} 0"/><site name="s1" pos="{a} {-h} 0"/>
      <site name="side" pos="0 0.2 0"/>
      <geom name="c" type="cylinder" size="{r} 0.1" contype="0" conaffinity="0"/>
      <body name="b"><joint type="slide" axis="0 0 1"/><inertial pos="0 0 0" mass="1"
        diaginertia="1 1 1"/></body></worldbody>
      <tendon><spatial name="t"><site site="s0"/><geom geom="c" sidesite="side"/><site site="s1"/>
      </spatial></tendon></mujoco>"""
    model = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    (pieces, pts, _), = _path_eval(model, jnp.zeros(1))
    mid = inertia.points_along_path(model.paths, model, jnp.zeros(1), 0, jnp.array([0.5]))
    np.testing.assert_allclose(mid[0], [0.0, r, 0.0], atol=1e-14)
    np.testing.assert_allclose(pts[:2], [[-a, -h, 0.0], [a, -h, 0.0]], atol=1e-15)
    d = np.hypot(a, h)
    tangent = np.sqrt(d * d - r * r)
    # angle of the tangent point from +y: the end point is at angle pi/2 + atan2(h, a) from +y
    # (measured towards -x); the tangent point is acos(r / d) back from it
    arc = 2.0 * (np.pi / 2 + np.arctan2(h, a) - np.arccos(r / d)) * r
    np.testing.assert_allclose(pieces.path_length[0], 2 * tangent + arc, rtol=1e-14)


def test_wrap_arc_matches_library():
    """wrap_arc (library values, closed-form derivatives) returns exactly obstacle_wrap's
    tangent points, length and activity over 400 random sphere/cylinder placements with and
    without side sites: tolerance 1e-14 (same floating-point operations; the arc uses atan2
    only in its derivative), except the inside wrap's contact point, which we refine from
    MuJoCo's Newton iterate (|f| <= 1e-6) to the exact root: 1e-6 r."""
    rng = np.random.default_rng(7)
    for is_cyl in (False, True):
        for has_side in (False, True):
            n = 100
            x0 = rng.normal(size=(n, 3)) * 0.3
            x1 = -x0 + rng.normal(size=(n, 3)) * 0.15   # segments passing near the centre
            side = rng.normal(size=(n, 3)) * 0.1  # often inside the radius: inside wraps
            radius = rng.uniform(0.02, 0.15, size=n)
            c, rot = np.zeros(3), np.eye(3)
            arc = jax.jit(jax.vmap(lambda a, b, s, r: inertia.wrap_arc(
                a, b, c, rot, r, s, has_side, is_cyl)))(x0, x1, side, radius)
            lib = jax.jit(jax.vmap(lambda a, b, s, r: obstacle_wrap(
                a, b, c, rot, r, s, has_side, is_cyl)))(x0, x1, side, radius)
            assert np.array_equal(arc.active, lib.wrapped)
            on = np.asarray(lib.wrapped)
            assert on.sum() > 10 and (~on).sum() > 10
            inside = has_side & (np.linalg.norm(side, axis=1) < radius)
            for mine, ref in ((arc.t0_world, lib.t0_world), (arc.t1_world, lib.t1_world),
                              (arc.length, lib.length)):
                mine, ref = np.asarray(mine), np.asarray(ref)
                np.testing.assert_allclose(mine[on & ~inside], ref[on & ~inside], atol=1e-14)
                np.testing.assert_allclose(mine[on & inside], ref[on & inside],
                                           atol=1e-6 * radius.max())


def test_jacobians_vs_central_differences(chain, chain_eval):
    """J (jacfwd on the retraction q + qpos_derivative(q, v)) vs central differences of
    x_alpha(q (+) h e_d) with mj_integratePos, h = 1e-6, all path types and a ball joint.
    Residual: truncation h^2 x'''/6 ~ 1e-13 plus rounding eps |x| / h ~ 1e-10 m; tolerance
    1e-8 relative to max |J| (observed ~3e-10)."""
    _, model = chain
    qs, _, _, jac, _ = chain_eval
    h = 1e-6
    eye = np.eye(model.n_v)
    plus = jnp.stack([jnp.stack([engine.integrate_pos(model, q, h * e, 1.0) for e in eye])
                      for q in qs])
    minus = jnp.stack([jnp.stack([engine.integrate_pos(model, q, -h * e, 1.0) for e in eye])
                       for q in qs])
    xp = pos_batch(model, plus.reshape(-1, model.n_q)).reshape(4, model.n_v, -1, 3)
    xm = pos_batch(model, minus.reshape(-1, model.n_q)).reshape(4, model.n_v, -1, 3)
    fd = jnp.moveaxis((xp - xm) / (2 * h), 1, -1)                 # (4, n_points, 3, n_v)
    err = float(jnp.max(jnp.abs(fd - jac)) / jnp.max(jnp.abs(jac)))
    assert err < 1e-8, f"J_ar vs central differences: relative error {err:.2e}"


@pytest.fixture(scope="module")
def chain_second_differences(chain, chain_eval):
    """(x(q (+) h qd) - 2 x(q) + x(q (+) -h qd)) / h^2 at the chain_eval states, h = 1e-4,
    along MuJoCo's exact constant-velocity curve (mj_integratePos)."""
    _, model = chain
    qs, qds, x, _, _ = chain_eval
    h = 1e-4
    qp = jnp.stack([engine.integrate_pos(model, q, qd, h) for q, qd in zip(qs, qds)])
    qm = jnp.stack([engine.integrate_pos(model, q, qd, -h) for q, qd in zip(qs, qds)])
    return (pos_batch(model, qp) - 2 * x + pos_batch(model, qm)) / h**2


def test_qvv_vs_second_differences(chain_eval, chain_second_differences):
    """Jdot qd (second forward derivative along t -> q (+) t qd) vs the second difference
    (x(q (+) h qd) - 2 x(q) + x(q (+) -h qd)) / h^2 along MuJoCo's exact constant-velocity
    curve (mj_integratePos), h = 1e-4. Residual: truncation h^2 x''''/12 ~ 1e-9, rounding
    4 eps |x| / h^2 ~ 1e-7; tolerance 1e-6 relative to max |Jdot qd| (observed ~1e-7)."""
    acc, fd = chain_eval[4], chain_second_differences
    err = float(jnp.max(jnp.abs(fd - acc)) / jnp.max(jnp.abs(acc)))
    assert err < 1e-6, f"Jdot_ar qd vs second differences: relative error {err:.2e}"


def _point_jac(model, kin, point, body):
    return engine.point_jacobian(model, kin, point, body)[0]


def _eol_jacobians(model, kin, p, alphas):
    """Seed Eq. 10 / Eqs. 12-16 (EOL, equal strain) for the points at `alphas` (n,) of the
    site-only path p, from the engine's point Jacobians: s_i = C_i / L (Eulerian coordinates),
    sdot_i = d/dt (C_i / L) (J_sx), F = dx/ds on the segment, and
    J = (1 - beta) (J_i - F sdot_i) + beta (J_{i+1} - F sdot_{i+1}).  Returns (n, 3, n_v)."""
    paths = model.paths
    units = [u for u in range(paths.n_units) if paths.unit_path[u] == p]
    sites = [paths.unit_site0[u] for u in units] + [paths.unit_site1[units[-1]]]
    xs = jnp.stack([kin.site_pos_world[s] for s in sites])
    js = jnp.stack([_point_jac(model, kin, kin.site_pos_world[s], model.site_body[s])
                    for s in sites])                                   # (n_pts, 3, n_v)
    seg = xs[1:] - xs[:-1]
    ln = jnp.linalg.norm(seg, axis=1)
    dl = jnp.einsum("ki,kia->ka", seg / ln[:, None], js[1:] - js[:-1])
    total, dtotal = jnp.sum(ln), jnp.sum(dl, axis=0)
    cum = jnp.concatenate([jnp.zeros(1), jnp.cumsum(ln)])
    dcum = jnp.concatenate([jnp.zeros((1, model.n_v)), jnp.cumsum(dl, axis=0)])
    s_e = cum / total
    sdot = (dcum * total - cum[:, None] * dtotal) / total**2
    i = jnp.clip(jnp.searchsorted(s_e, alphas, side="right") - 1, 0, len(sites) - 2)
    beta = (alphas - s_e[i]) / (s_e[i + 1] - s_e[i])
    f = seg[i] / (s_e[i + 1] - s_e[i])[:, None]
    b = beta[:, None, None]
    return ((1 - b) * (js[i] - f[:, :, None] * sdot[i][:, None, :])
            + b * (js[i + 1] - f[:, :, None] * sdot[i + 1][:, None, :]))


def _library_point_S(x0, x1, side, radius, alpha, is_cyl):
    """Point at fraction alpha along origin -> obstacle -> insertion in the obstacle's frame S
    from the wrapping library (paths.obstacle_wrap: tangent points, arc/helix length),
    assembled independently of path_fraction: straight piece, the arc (sphere: rotation of t0
    about the wrap-plane normal; cylinder: xy rotation about the axis, z linear), straight."""
    w = obstacle_wrap(x0, x1, jnp.zeros(3), jnp.eye(3), radius, side, True, is_cyl)
    t0, t1 = w.t0_world, w.t1_world
    l0, l1 = jnp.linalg.norm(t0 - x0), jnp.linalg.norm(x1 - t1)
    s = alpha * (l0 + w.length + l1)
    f = (s - l0) / w.length
    if is_cyl:
        dz = t1[2] - t0[2]
        theta = jnp.sqrt(w.length**2 - dz**2) / radius
        phi = jnp.arctan2(t0[0] * t1[1] - t0[1] * t1[0], t0[:2] @ t1[:2])
        ang = f * jnp.where(theta > np.pi, phi - 2 * np.pi * jnp.sign(phi), phi)
        c, sn = jnp.cos(ang), jnp.sin(ang)
        on_arc = jnp.array([c * t0[0] - sn * t0[1], sn * t0[0] + c * t0[1], t0[2] + f * dz])
    else:
        theta = w.length / radius
        n = jnp.cross(t0, t1)
        n = jnp.where(theta > np.pi, -1.0, 1.0) * n / jnp.linalg.norm(n)
        on_arc = jnp.cos(f * theta) * t0 + jnp.sin(f * theta) * jnp.cross(n, t0)
    first = x0 + s / l0 * (t0 - x0)
    last = t1 + (s - l0 - w.length) / l1 * (x1 - t1)
    return jnp.where(s <= l0, first, jnp.where(s <= l0 + w.length, on_arc, last))


def _wrap_jacobians(model, kin, p, alphas, x_alpha):
    """Seed Eqs. 20-27 for the points at `alphas` (n,) of the one-wrap path p (origin on A,
    surface on B, insertion on C): J = J_base + J_ori + J_ins with the library's S-frame
    Jacobians G_o, G_i (jax.jacfwd through paths.obstacle_wrap) and the engine's point
    Jacobians: J_base = Jp_B(x_alpha), J_ori = R G_o R^T (J_o - Jp_B(x_o)) (Eqs. 23-24),
    J_ins likewise. Also returns the library's positions (to check that x_alpha is the same
    point). Shapes (n, 3, n_v), (n, 3)."""
    from myotwin.paths.length import wrap_frames

    paths = model.paths
    u = paths.unit_path.index(p)
    w = paths.unit_wrap[u]
    body_b, radius = paths.wrap_body[w], paths.wrap_radius[w]
    is_cyl = paths.wrap_type[w] == 5
    s_o, s_i, s_side = paths.unit_site0[u], paths.unit_site1[u], paths.wrap_side_site[w]
    centre, rot = (f[w] for f in wrap_frames(paths, kin))
    to_s = lambda v: rot.T @ (v - centre)  # noqa: E731
    x_o, x_i = kin.site_pos_world[s_o], kin.site_pos_world[s_i]
    side_s = to_s(kin.site_pos_world[s_side])
    rel_o = _point_jac(model, kin, x_o, model.site_body[s_o]) - _point_jac(model, kin, x_o, body_b)
    rel_i = _point_jac(model, kin, x_i, model.site_body[s_i]) - _point_jac(model, kin, x_i, body_b)

    def one(a, xa):
        args = (to_s(x_o), to_s(x_i), side_s, radius, a, is_cyl)
        g_o, g_i = jax.jacfwd(_library_point_S, argnums=(0, 1))(*args)
        jac = (_point_jac(model, kin, xa, body_b) + rot @ g_o @ rot.T @ rel_o
               + rot @ g_i @ rot.T @ rel_i)
        return jac, rot @ _library_point_S(*args) + centre

    return jax.vmap(one)(alphas, x_alpha)


@jax.jit
def _independent_jacobians(model, q, x_alpha):
    """The seed's chained Jacobians of every mass point at q (n_points, 3, n_v) and the
    library's positions (wrapped paths; ours elsewhere) (n_points, 3)."""
    kin = engine.kinematics(model, q)
    mm = model.muscle_mass
    path = np.asarray(mm.point_path)
    jac, pts = [], []
    for p in mm.inertial_paths():
        idx = np.flatnonzero(path == p)
        if model.paths.unit_wrap[model.paths.unit_path.index(p)] >= 0:
            j, x = _wrap_jacobians(model, kin, p, mm.point_alpha[idx], x_alpha[idx])
        else:
            j, x = _eol_jacobians(model, kin, p, mm.point_alpha[idx]), x_alpha[idx]
        jac.append(j)
        pts.append(x)
    return jnp.concatenate(jac), jnp.concatenate(pts)


@pytest.fixture(scope="module")
def chain_explicit(chain, chain_eval):
    """The seed's explicit chained Jacobians and the library's points at the chain_eval
    states (`_independent_jacobians`)."""
    _, model = chain
    qs, _, x, _, _ = chain_eval
    return jax.vmap(_independent_jacobians, in_axes=(None, 0, 0))(model, qs, x)


def test_chained_jacobians(chain, chain_eval, chain_explicit):
    """J_ar = J_am J_mr as the seed builds it, from the engine's point Jacobians (mj_jac):
    Type I Eq. 10, Type II the EOL Eqs. 12-16, Type III Eqs. 20-27 (cylinder: A = b1,
    B = b2, C = b3; sphere: A = world, B = b1, C = b2) with the library's own S-frame
    Jacobians. Tolerance 1e-10 relative (exact chains of the same derivatives; observed
    ~1e-15 for Types I/II and ~1e-13 for Type III). The inside wrap ('ins'): the library
    differentiates MuJoCo's Newton iterate (|f| <= 1e-6), we the exact stationary point it is
    refined to (module wrap_derivatives), so positions agree to 1e-7 m and J to INSIDE_TOL."""
    _, model = chain
    qs, _, x, jac, _ = chain_eval
    mm = model.muscle_mass
    alpha, path = np.asarray(mm.point_alpha), np.asarray(mm.point_path)
    kin0 = engine.kinematics(model, qs[0])
    u = model.paths.unit_path.index(0)
    so, si = model.paths.unit_site0[u], model.paths.unit_site1[u]
    jo = _point_jac(model, kin0, kin0.site_pos_world[so], model.site_body[so])
    ji = _point_jac(model, kin0, kin0.site_pos_world[si], model.site_body[si])
    expect, pts = chain_explicit
    idx0 = np.flatnonzero(path == 0)
    for a, e in zip(alpha[idx0], expect[0, idx0]):  # Eq. 10 = EOL on one segment
        np.testing.assert_allclose((1 - a) * jo + a * ji, e, atol=1e-14)
    for name in N_POINTS:
        idx = np.flatnonzero(path == model.paths.path_names.index(name))
        np.testing.assert_allclose(pts[:, idx], x[:, idx], err_msg=f"{name}: library point",
                                   atol=1e-12 if name != "ins" else 1e-7)
        err = float(jnp.max(jnp.abs(expect[:, idx] - jac[:, idx]))
                    / jnp.max(jnp.abs(expect[:, idx])))
        tol = 1e-10 if name != "ins" else INSIDE_TOL
        assert err < tol, f"{name}: chained J vs ours {err:.2e}"


def test_chain_equals_autodiff_through_kinematics(chain, chain_eval):
    """The seed's chain J_am J_mr (ours: jvp of F along the anchors' motion from the engine's
    dof motion vectors) equals jax.jacfwd through the whole kinematics on the retraction
    q (+) v = q + qpos_derivative(q, v) (ball joint included). Tolerance 1e-12 relative (two
    evaluations of the same derivative; observed ~1e-15)."""
    _, model = chain
    qs, _, _, jac, _ = chain_eval
    auto = jax.jit(jax.vmap(inertia.jacobians_by_autodiff, in_axes=(None, 0)))(model, qs[:2])
    err = float(jnp.max(jnp.abs(auto - jac[:2])) / jnp.max(jnp.abs(jac)))
    assert err < 1e-12, f"chain vs autodiff Jacobians: relative error {err:.2e}"


def test_mass_terms_by_piece_moments(chain, chain_eval, chain_explicit,
                                     chain_second_differences):
    """Eq. 7's sums as the dynamics evaluate them (points on site-only paths through their
    pieces' mass moments, `polyline.polyline_mass_terms`; wrapped paths through per-point
    Jacobians) against sum_k m_k J_k^T J_k and sum_k m_k J_k^T (a_k - g) with J_k the seed's
    explicit chain (Eq. 10, Eqs. 12-16, Eqs. 20-27 from the engine's point Jacobians) and a_k
    the second difference of x_alpha along MuJoCo's constant-velocity curve, on every path of the chain except the inside wrap (its mass set to 0: the library
    differentiates MuJoCo's Newton iterate there, see test_chained_jacobians). Tolerances:
    M_mus 1e-10 relative (the same derivatives, regrouped); c_mus 1e-6 relative (the second
    difference's truncation and rounding, as in test_qvv_vs_second_differences)."""
    _, model = chain
    qs, qds = chain_eval[:2]
    jac, acc = chain_explicit[0], chain_second_differences
    mm = model.muscle_mass
    ins = np.asarray(mm.point_path) == model.paths.path_names.index("ins")
    mass = jnp.where(jnp.asarray(ins), 0.0, mm.point_mass)
    w = mass[None, :, None, None] * jac
    m_ref = jnp.einsum("skia,skib->sab", w, jac)
    mod = dataclasses.replace(model, muscle_mass=dataclasses.replace(mm, point_mass=mass))
    m_mus, c_mus = jax.jit(jax.vmap(inertia.muscle_mass_terms, in_axes=(None, 0, 0)))(
        mod, qs, qds)
    c_ref = jnp.einsum("skia,ski->sa", w, acc - mod.gravity)
    err_m = float(jnp.max(jnp.abs(m_mus - m_ref)) / jnp.max(jnp.abs(m_ref)))
    err_c = float(jnp.max(jnp.abs(c_mus - c_ref)) / jnp.max(jnp.abs(c_ref)))
    assert err_m < 1e-10, f"M_mus by piece moments: relative error {err_m:.2e}"
    assert err_c < 1e-6, f"c_mus by piece moments: relative error {err_c:.2e}"


def test_polyline_lines_place_the_points_as_path_fraction(chain, chain_eval):
    """`polyline.piece_motion`'s per-piece lines g0 + alpha g1, on the piece `point_on_piece`
    picks, are the points `path_fraction` places by its own piece search (its points are
    checked against MuJoCo in test_chained_jacobians), on the site-only paths at every
    evaluated state, and on the via path at its piece ends alpha = E_j / L, where the piece
    choice changes. Tolerance 1e-14 m: the same point by two formulas (observed ~1e-17)."""
    from myotwin.inertia import polyline

    _, model = chain
    qs, _, x = chain_eval[:3]
    mm = model.muscle_mass
    point_path = np.asarray(mm.point_path)
    paths = [model.paths.path_names.index(n) for n in ("straight", "via")]
    idx = np.flatnonzero(np.isin(point_path, paths))
    tables = polyline.polyline_tables(model.paths, tuple(point_path[idx]))
    via_pieces = np.asarray(tables.point_piece)[np.flatnonzero(point_path[idx] == paths[1])[0]]
    alpha = jnp.asarray(mm.point_alpha)[idx]
    for k in range(qs.shape[0]):
        kin = engine.kinematics(model, qs[k])
        pm = polyline.piece_motion(tables, kin.site_pos_world,
                                   engine.jacobian.site_tangents(model, kin))
        on = np.asarray(polyline.point_on_piece(tables, pm, alpha), dtype=float)
        assert np.all(on.sum(axis=1) == 1), "every point on exactly one piece"
        lines = on @ pm.g0 + alpha[:, None] * (on @ pm.g1)
        np.testing.assert_allclose(lines, x[k, idx], atol=1e-14, rtol=0)

        ends = np.asarray(pm.end)[via_pieces] / np.asarray(pm.total)[via_pieces][0]
        holds = np.asarray(polyline._holds(tables, pm, jnp.asarray(ends)[:, None], 1))
        on_end = (via_pieces[None, :] & holds).astype(float)
        assert np.all(on_end.sum(axis=1) == 1), "every piece end on exactly one piece"
        at_end = on_end @ pm.g0 + ends[:, None] * (on_end @ pm.g1)
        ref = inertia.points_along_path(model.paths, model, qs[k], paths[1], jnp.asarray(ends))
        np.testing.assert_allclose(at_end, ref, atol=1e-14, rtol=0)


def test_specification_and_validation(chain):
    """Distributions, MJCF numerics and every validation error (acceptance 5)."""
    mj, model = chain
    a, w = inertia.distribution(4)
    np.testing.assert_allclose(a, [0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(w, 0.25)
    a, w = inertia.distribution(2, rule="gauss", belly=(0.2, 0.6))
    np.testing.assert_allclose(a, 0.4 + 0.2 * np.array([-1, 1]) / np.sqrt(3))
    np.testing.assert_allclose(w, 0.5)
    m2 = inertia.with_muscle_mass(model, "via", 0.5, alphas=[0.1, 0.9], weights=[1, 3])
    np.testing.assert_allclose(inertia.path_masses(m2), [0.05, 0.5, 0.1, 0.15, 0.1])
    sel = np.asarray(m2.muscle_mass.point_path) == 1
    np.testing.assert_allclose(m2.muscle_mass.point_mass[sel], [0.125, 0.375])
    # MJCF numerics: belly form
    xml = CHAIN_XML.replace("</mujoco>", '<custom><numeric name="muscle_mass:via" '
                            'data="0.3 4 0.25 0.75"/></custom></mujoco>')
    loaded = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    np.testing.assert_allclose(loaded.muscle_mass.point_alpha, 0.25 + 0.5 * (np.arange(4) + 0.5) / 4)
    np.testing.assert_allclose(loaded.muscle_mass.point_mass, 0.075)
    assert loaded.muscle_mass.point_path == (1, 1, 1, 1)

    bad = [
        (dict(path="nope", mass_kg=1.0, n_points=3), "unknown path 'nope'"),
        (dict(path=9, mass_kg=1.0, n_points=3), "outside [0, 4]"),
        (dict(path=1.5, mass_kg=1.0, n_points=3),             # int(1.5): path 1 before
         "path 1.5: expected a tendon name or an integer index"),
        (dict(path="via", mass_kg=-0.1, n_points=3), "mass_kg must be a finite scalar >= 0"),
        (dict(path="via", mass_kg=float("nan"), n_points=3), "finite scalar"),
        # taken as 1 kg and 0.1 kg before
        (dict(path="via", mass_kg=True, n_points=3),
         "muscle mass of path #1 'via': mass_kg must be a finite scalar >= 0, got True"),
        (dict(path="via", mass_kg="0.1", n_points=3), "mass_kg must be a finite scalar >= 0, "
         "got '0.1'"),
        (dict(path="via", mass_kg=1.0, n_points=3, belly=(0, True)),   # (0.0, 1.0) before
         "muscle mass of path #1 'via': belly must be two numbers (a, b), got (0, True)"),
        (dict(path="via", mass_kg=1.0, n_points=3, belly=("0", "1")),
         "belly must be two numbers (a, b), got ('0', '1')"),
        (dict(path="via", mass_kg=1.0, n_points=0), "n_points must be a positive integer"),
        (dict(path="via", mass_kg=1.0, n_points=2.5), "positive integer"),
        (dict(path="via", mass_kg=1.0, n_points=3.0),       # int(3.0) == 3.0 passed
         "n_points must be a positive integer, got 3.0"),
        (dict(path="via", mass_kg=1.0, alphas=[0.2, True]),  # np.asarray made it 1.0
         "alphas must be numbers, got [0.2, True]"),
        (dict(path="via", mass_kg=1.0, alphas=[0.2, 0.4], weights=["1", "1"]),
         "weights must be numbers, got ['1', '1']"),
        (dict(path="via", mass_kg=1.0, alphas=[0.2, 1.2]), "alpha 1.2 outside [0, 1]"),
        (dict(path="via", mass_kg=1.0, alphas=[-0.1]), "alpha -0.1 outside [0, 1]"),
        (dict(path="via", mass_kg=1.0, alphas=[0.2], weights=[-1.0]), "weights must be"),
        (dict(path="via", mass_kg=1.0, n_points=3, belly=(0.6, 0.4)), "0 <= a < b <= 1"),
        (dict(path="via", mass_kg=1.0, n_points=3, rule="simpson"),
         "muscle mass of path #1 'via': rule 'simpson' is not one of ['midpoint', 'gauss']"),
        (dict(path="via", mass_kg=1.0, n_points=3, position_model="magic"),
         "unknown position_model"),
        # PositionModel is an IntEnum: True was NETWORK (1)
        (dict(path="via", mass_kg=1.0, n_points=3, position_model=True),
         "unknown position_model True, expected 'library' or 'network'"),
        (dict(path="via", mass_kg=1.0, n_points=3, position_model="network"),
         "network position model needs a path of one site-cylinder-site unit"),
    ]
    for kwargs, msg in bad:
        with pytest.raises(ValueError, match=_re(msg)):
            inertia.with_muscle_mass(model, **kwargs)
    for data, msg in (("-1 3", "mass_kg must be finite and >= 0"),
                      ("1 0", "n_points must be a positive integer"),
                      ("1 3 0.5 1.5", "0 <= a < b <= 1"), ("1", "expected data=")):
        xml = CHAIN_XML.replace("</mujoco>", f'<custom><numeric name="muscle_mass:via" '
                                f'data="{data}"/></custom></mujoco>')
        with pytest.raises(ValueError, match=_re(msg)):
            engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    xml = CHAIN_XML.replace("</mujoco>", '<custom><numeric name="muscle_mass:nope" '
                            'data="1 3"/></custom></mujoco>')
    with pytest.raises(ValueError, match="no spatial tendon named 'nope'"):
        engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    no_paths = dataclasses.replace(model, paths=None, muscle_mass=None)
    with pytest.raises(ValueError, match="no musculotendon paths"):
        inertia.with_muscle_mass(no_paths, 0, 1.0, 3)
    pulley = CHAIN_XML.replace('<site site="v1"/><site site="v2"/>',
                               '<site site="v1"/><pulley divisor="2"/><site site="v1"/>'
                               '<site site="v2"/>')
    pm = engine.compile_model(mujoco.MjModel.from_xml_string(pulley))
    with pytest.raises(ValueError, match="has pulleys"):
        inertia.with_muscle_mass(pm, "via", 1.0, 3)
    # the compiled exports (inertia/api.py) name the problem at trace time on a massless model
    for fn in (inertia.muscle_mass_matrix, inertia.mass_point_positions):
        with pytest.raises(ValueError, match="the model has no muscle mass"):
            fn(pm, jnp.asarray(pm.qpos0))
    # ... and a configuration of the wrong shape (engine/arguments.py)
    heavy = inertia.with_muscle_mass(pm, "straight", 0.2, 3)
    with pytest.raises(ValueError, match=r"mass_point_jacobians: q has shape \(7,\), expected "
                                         rf"\({pm.n_q},\) \(the model's n_q = {pm.n_q}\)"):
        inertia.mass_point_jacobians(heavy, jnp.zeros(7))
    with pytest.raises(ValueError, match=r"muscle_bias_forces: qd has shape \(1,\)"):
        inertia.muscle_bias_forces(heavy, jnp.asarray(pm.qpos0), jnp.zeros(1))
    # OpenSim-semantics paths (arm26, built in Python) take library positions only
    arm = arm26.build(ellipsoids=False)
    with pytest.raises(ValueError, match="'TRIlong': the network position model needs a "
                                         "MuJoCo cylinder wrap"):
        inertia.with_muscle_mass(arm, "TRIlong", 0.1, 5, position_model="network")


def _re(text: str) -> str:
    import re

    return re.escape(text)
