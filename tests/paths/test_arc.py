"""The point at a fraction of the path length along a single-obstacle path (paths/arc.py).

References outside our code: MuJoCo 4.0.0's tendon lengths and tangent points (ten_length,
wrap_xpos) on random single-wrap placements; closed forms of the symmetric cylinder wrap
(tangent angle acos(r / rho), straight pieces sqrt(rho^2 - r^2), helix by unrolling) and of
the great-circle arc; the definition of alpha (|dx/dalpha| = L everywhere, polyline length).
Tolerances: both sides are float64 evaluations of a few dozen operations (~1e-15 relative);
1e-12 m on lengths and points for MuJoCo (observed ~1e-16) and the closed forms, unless stated.
"""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin.paths import arc

TOL_M = 1e-12

MJCF = """
<mujoco>
  <worldbody>
    <body name="cyl_b" mocap="true"><geom name="cyl" type="cylinder" size="0.5 0.3"
      contype="0" conaffinity="0"/></body>
    <body name="sph_b" mocap="true"><geom name="sph" type="sphere" size="0.5"
      contype="0" conaffinity="0"/></body>
    <body name="a" mocap="true"><site name="s0"/></body>
    <body name="b" mocap="true"><site name="s1"/></body>
    <body name="c" mocap="true"><site name="side"/></body>
  </worldbody>
  <tendon>
    <spatial name="cyl_side"><site site="s0"/><geom geom="cyl" sidesite="side"/>
      <site site="s1"/></spatial>
    <spatial name="sph_side"><site site="s0"/><geom geom="sph" sidesite="side"/>
      <site site="s1"/></spatial>
    <spatial name="cyl"><site site="s0"/><geom geom="cyl"/><site site="s1"/></spatial>
    <spatial name="sph"><site site="s0"/><geom geom="sph"/><site site="s1"/></spatial>
  </tendon>
</mujoco>
"""
# tendon -> (is_cylinder, has_side)
TENDONS = {0: (True, True), 1: (False, True), 2: (True, False), 3: (False, False)}


def _random_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _quat_to_mat(q):
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, q)
    return m.reshape(3, 3)


@pytest.fixture(scope="module")
def mujoco_cases():
    """200 random placements: end points, side site, obstacle pose and radius, with MuJoCo's
    tendon length and wrap points for each of the four tendons."""
    model = mujoco.MjModel.from_xml_string(MJCF)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(200):
        radius = rng.uniform(0.2, 0.8)
        model.geom_size[0, 0] = radius
        model.geom_size[1, 0] = radius
        center, quat = rng.normal(size=3) * 0.3, _random_quat(rng)
        data.mocap_pos[:2] = center
        data.mocap_quat[:2] = quat
        data.mocap_pos[2] = center + rng.normal(size=3) * 1.5
        data.mocap_pos[3] = center + rng.normal(size=3) * 1.5
        data.mocap_pos[4] = center + rng.normal(size=3) * 1.5   # some inside (inside wrap)
        mujoco.mj_forward(model, data)
        per = {}
        for t in TENDONS:
            adr, num = data.ten_wrapadr[t], data.ten_wrapnum[t]
            per[t] = (float(data.ten_length[t]),
                      data.wrap_xpos.reshape(-1, 3)[adr:adr + num].copy())
        cases.append(dict(radius=radius, center=center, rot=_quat_to_mat(quat),
                          x0=data.site_xpos[0].copy(), x1=data.site_xpos[1].copy(),
                          side=data.site_xpos[2].copy(), tendons=per))
    return cases


#: path_point over a batch of (case, alpha) rows; has_side and is_cylinder traced.
_points = jax.jit(jax.vmap(arc.path_point))


def test_total_length_and_tangent_points_match_mujoco(mujoco_cases):
    """L = ten_length; the points at alpha = L0/L and (L0 + l)/L are MuJoCo's tangent points
    (wrap_xpos); alpha = 0, 1 give the sites; wrapped iff MuJoCo lists tangent points, and
    l = 0 otherwise. Tolerance 1e-10 m at the tangent points: alpha = L0/L is formed from
    MuJoCo's rounded points and length (observed < 1e-15 m)."""
    rows, refs = [], []
    for c in mujoco_cases:
        for t, (is_cyl, has_side) in TENDONS.items():
            length, pts = c["tendons"][t]
            wrapped = len(pts) == 4       # s0, t0, t1, s1 (t0 = t1: inside wrap), else s0, s1
            alphas = [0.0, 1.0]
            targets = [c["x0"], c["x1"]]
            if wrapped:
                alphas += [np.linalg.norm(pts[1] - c["x0"]) / length,
                           1.0 - np.linalg.norm(c["x1"] - pts[2]) / length]
                targets += [pts[1], pts[2]]
            for a, x in zip(alphas, targets):
                rows.append((c["x0"], c["x1"], c["center"], c["rot"], c["radius"], c["side"],
                             has_side, is_cyl, a))
                refs.append((t, length, wrapped, x))
    cols = [np.array([r[i] for r in rows]) for i in range(9)]
    pp = _points(*cols)
    x, wrap_len, total, wrapped = (np.asarray(v) for v in pp)
    ref_len = np.array([r[1] for r in refs])
    ref_wrapped = np.array([r[2] for r in refs])
    ref_x = np.array([r[3] for r in refs])
    assert np.abs(total - ref_len).max() < TOL_M, "ten_length"
    assert (wrapped == ref_wrapped).all(), "wrap on/off"
    assert (wrap_len[~ref_wrapped] == 0.0).all()
    assert np.abs(x - ref_x).max() < 1e-10, "sites and tangent points (wrap_xpos)"
    kinds = np.array([r[0] for r in refs])
    counts = {t: int(np.sum(ref_wrapped & (kinds == t))) // 4 for t in TENDONS}
    assert min(counts.values()) >= 10, counts   # every kind wraps often enough to matter


def test_side_outside_shortcut_is_the_general_wrap():
    """plane_wrap(side_outside=True) skips MuJoCo's inside-wrap Newton; with the side site
    outside the obstacle it must give the general wrap's tangent points, length and on/off
    (the general wrap is obstacle_wrap's, checked against MuJoCo in test_paths_vs_mujoco.py)."""
    rng = np.random.default_rng(3)
    n = 400
    p0, p1 = rng.normal(size=(n, 3)) * 2, rng.normal(size=(n, 3)) * 2
    side = rng.normal(size=(n, 3))
    side = side / np.linalg.norm(side, axis=1, keepdims=True) * 1.5   # outside: radius <= 1
    radius = rng.uniform(0.3, 1.0, n)
    cyl = rng.random(n) < 0.5

    def both(a, b, s, r, c):
        pw = arc.plane_wrap(a, b, s, r, True, c)
        po = arc.plane_wrap(a, b, s, r, True, c, side_outside=True)
        return (jnp.stack([po.t0 - pw.t0, po.t1 - pw.t1]), po.length - pw.length, pw.wrapped,
                po.wrapped)

    dt, dl, w, wout = jax.jit(jax.vmap(both))(p0, p1, side, radius, cyl)
    w = np.asarray(w)
    assert (w == np.asarray(wout)).all()
    assert w.sum() > 50
    assert np.abs(np.asarray(dt))[w].max() < 1e-13
    assert np.abs(np.asarray(dl))[w].max() < 1e-13


def test_symmetric_cylinder_wrap_closed_form():
    """End points at equal distance rho from the axis, polar angles +-phi about the side
    direction (+y), heights z0, z1. Closed form: tangent points at polar angle
    90 deg +- (phi - acos(r/rho)), straight pieces sqrt(rho^2 - r^2), arc
    a = r (2 phi - 2 acos(r/rho)), L_xy = 2 sqrt(rho^2 - r^2) + a, L = sqrt(L_xy^2 + dz^2),
    l = a L / L_xy, and the point at fraction alpha: the cross-section point at xy-length
    alpha L_xy, height z0 + alpha dz (the unrolled path is straight)."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        r, rho = rng.uniform(0.01, 0.1), 0.0
        rho = r * rng.uniform(1.2, 8.0)
        tang = np.arccos(r / rho)
        phi = rng.uniform(tang + 0.05, np.pi - 0.05)            # wraps (but not all round)
        z0, z1 = rng.uniform(-0.2, 0.2, 2)
        th0, th1 = np.pi / 2 - phi, np.pi / 2 + phi
        p0 = np.array([rho * np.cos(th0), rho * np.sin(th0), z0])
        p1 = np.array([rho * np.cos(th1), rho * np.sin(th1), z1])
        straight = np.sqrt(rho ** 2 - r ** 2)
        a = r * (2 * phi - 2 * tang)
        l_xy = 2 * straight + a
        total = np.hypot(l_xy, z1 - z0)
        side = np.array([0.0, 2.0 * r, 0.0])
        alphas = np.linspace(0.0, 1.0, 41)
        pp = jax.jit(arc.path_points_local, static_argnums=(4, 5))(
            p0, p1, r, side, True, True, alphas)
        assert bool(pp.wrapped)
        assert abs(float(pp.total_length) - total) < TOL_M
        assert abs(float(pp.wrap_length) - a * total / l_xy) < TOL_M
        for alpha, x in zip(alphas, np.asarray(pp.x_alpha)):
            s = alpha * l_xy
            if s <= straight:
                t0 = r * np.array([np.cos(th0 + tang), np.sin(th0 + tang)])
                xy = p0[:2] + (t0 - p0[:2]) * s / straight
            elif s <= straight + a:
                ang = th0 + tang + (s - straight) / r
                xy = r * np.array([np.cos(ang), np.sin(ang)])
            else:
                t1 = r * np.array([np.cos(th1 - tang), np.sin(th1 - tang)])
                xy = t1 + (p1[:2] - t1) * (s - straight - a) / straight
            ref = np.array([xy[0], xy[1], z0 + alpha * (z1 - z0)])
            assert np.max(np.abs(x - ref)) < TOL_M, (alpha, x, ref)


def test_sphere_arc_is_the_great_circle():
    """Sphere: points on the wrapped part lie on the sphere (|x| = r) and in the plane of the
    centre and both end points; for end points at equal distance the mid point (alpha = 1/2)
    is r (p0/|p0| + p1/|p1|) / |...| and L = 2 sqrt(rho^2 - r^2) + r (gamma - 2 acos(r/rho))."""
    rng = np.random.default_rng(12)
    checked = 0
    for _ in range(60):
        r = rng.uniform(0.2, 1.0)
        rho = r * rng.uniform(1.2, 2.5)
        u0, u1 = rng.normal(size=3), rng.normal(size=3)
        u0, u1 = u0 / np.linalg.norm(u0), u1 / np.linalg.norm(u1)
        gamma = np.arccos(np.dot(u0, u1))
        if gamma < 2 * np.arccos(r / rho) + 0.05:
            continue                                     # the segment misses the sphere
        p0, p1 = rho * u0, rho * u1
        alphas = np.linspace(0.0, 1.0, 101)
        pp = jax.jit(arc.path_points_local, static_argnums=(4, 5))(
            p0, p1, r, np.zeros(3), False, False, alphas)
        assert bool(pp.wrapped)
        total = 2 * np.sqrt(rho ** 2 - r ** 2) + r * (gamma - 2 * np.arccos(r / rho))
        assert abs(float(pp.total_length) - total) < TOL_M
        x = np.asarray(pp.x_alpha)
        normal = np.cross(u0, u1) / np.linalg.norm(np.cross(u0, u1))
        assert np.abs(x @ normal).max() < TOL_M
        frac = np.linspace(0, 1, 101) * total
        on_arc = (frac > np.sqrt(rho ** 2 - r ** 2) + 1e-9) & (
            frac < total - np.sqrt(rho ** 2 - r ** 2) - 1e-9)
        assert np.abs(np.linalg.norm(x[on_arc], axis=1) - r).max() < TOL_M
        mid = r * (u0 + u1) / np.linalg.norm(u0 + u1)
        assert np.max(np.abs(x[50] - mid)) < TOL_M
        checked += 1
    assert checked >= 10


def test_alpha_is_the_arc_length_fraction():
    """|dx/dalpha| = L at every alpha (autodiff; 1e-10 relative), and the polyline through
    2001 points has length L up to its chord error (<= L * (h / r)^2 / 24 per unit, below
    1e-6 relative here), on random wrapped sphere and cylinder paths with side sites."""
    rng = np.random.default_rng(5)
    speed = jax.jit(jax.vmap(jax.jacfwd(
        lambda a, p0, p1, s, r, c: arc.path_point_local(p0, p1, r, s, True, c, a).x_alpha),
        in_axes=(0, None, None, None, None, None)))
    points = jax.jit(arc.path_points_local)
    seen = {True: 0, False: 0}
    while min(seen.values()) < 5:
        is_cyl = bool(rng.random() < 0.5)
        p0, p1 = rng.normal(size=3) * 2, rng.normal(size=3) * 2
        side = rng.normal(size=3)
        side = 1.5 * side / np.linalg.norm(side)
        pp = points(p0, p1, 1.0, side, True, is_cyl, np.zeros(1))
        if not bool(pp.wrapped) or float(pp.wrap_length) < 0.1:
            continue
        seen[is_cyl] += 1
        alphas = np.linspace(0.0, 1.0, 2001)
        v = np.asarray(speed(alphas, p0, p1, side, 1.0, is_cyl))
        total = float(pp.total_length)
        assert np.abs(np.linalg.norm(v, axis=1) / total - 1.0).max() < 1e-10
        x = np.asarray(points(p0, p1, 1.0, side, True, is_cyl, alphas).x_alpha)
        poly = np.linalg.norm(np.diff(x, axis=0), axis=1).sum()
        assert 0.0 <= total - poly < 1e-6 * total


def test_continuous_at_wrap_on_off_with_a_jacobian_jump():
    """Moving the insertion through the wrap onset (cylinder, side +y) by its polar angle th:
    across the switch the point moves by O(h) (continuity: at most a few times the insertion's
    own motion 4 h), while dx/dth differs by O(1) on the two sides (the seed's Jacobian
    discontinuity, §3.3)."""
    r = 1.0
    p0 = np.array([6.0, 1.0, 0.3])
    side = np.array([0.0, 2.0, 0.0])

    def point(th):
        p1 = jnp.stack([4.0 * jnp.cos(th), 4.0 * jnp.sin(th), -0.2])
        return arc.path_point_local(p0, p1, r, side, True, True, 0.6)

    jac = jax.jit(jax.jacfwd(lambda th: point(th).x_alpha))
    lo, hi = 2.5, 3.2                                  # bisection on the wrap state
    assert not bool(point(lo).wrapped) and bool(point(hi).wrapped)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if not bool(point(mid).wrapped) else (lo, mid)
    for h in (1e-4, 1e-6, 1e-8):
        dx = np.asarray(point(hi + h).x_alpha - point(lo - h).x_alpha)
        assert np.linalg.norm(dx) < 10.0 * h + 1e-12      # |dp1/dth| = 4, alpha = 0.6
    jump = np.linalg.norm(np.asarray(jac(hi + 1e-9)) - np.asarray(jac(lo - 1e-9)))
    assert jump > 0.05, jump


def test_straight_when_not_wrapped():
    """A segment that misses the cylinder on the side-site side: the chord, l = 0, L = |p1 - p0|."""
    p0, p1 = np.array([3.0, 2.0, 0.0]), np.array([-3.0, 2.5, 1.0])
    for a in (0.0, 0.3, 1.0):
        pp = arc.path_point_local(p0, p1, 1.0, np.array([0.0, 2.0, 0.0]), True, True, a)
        assert not bool(pp.wrapped) and float(pp.wrap_length) == 0.0
        assert abs(float(pp.total_length) - np.linalg.norm(p1 - p0)) < TOL_M
        assert np.max(np.abs(np.asarray(pp.x_alpha) - (p0 + a * (p1 - p0)))) < TOL_M
