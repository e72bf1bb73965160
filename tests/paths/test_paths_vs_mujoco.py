"""Muscle paths vs MuJoCo 4.0.0 spatial tendons, and the path identities.

References outside our code: MuJoCo 4.0.0's `ten_length`, `ten_J` (always sparse in 4.0;
densified with the model's ten_J_rowadr/rownnz/colind) and `wrap_xpos`, at seeded random
states of the frog (plantaris over two spheres with side sites, free root), the MyoSuite
elbows and finger (cylinders, spheres, side sites, pulleys; skipped if the folder is absent)
and seeded random chains (`random_path_models.py`: every wrap kind, inside wraps, pulleys,
hinge/slide/ball joints, free roots); single-wrap models sampled over 1800 end-point and
side-site placements; closed forms; central finite differences of our own lengths.

Tolerances and where the residual error comes from:
  * lengths and wrap points 1e-9 m, ten_J 1e-9 relative to its largest entry: both sides are
    float64 evaluations of the same formulas (a few dozen operations; observed <= 5e-15);
  * -dL/dq by central differences of the length with step h = 1e-6 (rad or m, along each
    velocity direction, quaternions moved by the exponential map): truncation h^2 L''' / 6
    ~ 1e-13 and rounding eps L / h ~ 1e-10, so 1e-8 absolute (m per rad). For inside wraps the
    contact point is a Newton iterate stopped at |f| <= 1e-6 (as MuJoCo), so ten_J (which keeps
    that point fixed) differs from the exact derivative of the iterate's length by the residual
    times the point's sensitivity: 1e-6 absolute there.
  * dL/dt by central differences in time along q(t) = q (+) t qd: the same 1e-8.
Configurations where a wrap switches on or off (or the inside Newton changes its iteration
count) between q - h and q + h are excluded from the difference checks (counted, few).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine, paths
from myotwin.invitro.frog.mjcf import build_frog_mjcf
from myotwin.paths.circle import inside_wrap
from random_path_models import random_configuration, random_path_mjcf
from shared_reference import SHARED

LENGTH_TOL_M = 1e-9
JAC_REL_TOL = 1e-9
FD_TOL = 1e-8
FD_TOL_INSIDE = 1e-6
FD_STEP = 1e-6
N_STATES = 8          # states compared with MuJoCo per model
N_FD_BASES = 2        # of which the first two also get finite differences
N_SPEED_DIRECTIONS = 3
MYOSUITE = SHARED / "reference" / "mujoco" / "myosuite"
# myofinger_v0.xml includes finger_v0.xml (same tendons, plus muscles): finger_v0 covers it.
MYOSUITE_FILES = [
    "myoelbow_1dof6muscles_nomesh.xml",
    "myoelbow_2dof6muscles_nomesh.xml",
    "finger_v0.xml",
]
# name: (seed, free root, wraps); the site-only chain takes the site-tangent route of
# paths.length_jacobian_from_geometry (no wrap in its path set), the others the wrench route
RANDOM_MODELS = {"random_paths_0": (0, False, True), "random_paths_1": (1, True, True),
                 "random_sites_2": (2, True, False)}
MODEL_NAMES = ["frog", *MYOSUITE_FILES, *RANDOM_MODELS]


def _mj_model(name: str) -> mujoco.MjModel:
    if name == "frog":
        return mujoco.MjModel.from_xml_string(build_frog_mjcf())
    if name in RANDOM_MODELS:
        seed, free, wraps = RANDOM_MODELS[name]
        return mujoco.MjModel.from_xml_string(random_path_mjcf(seed, n_bodies=4, free_root=free,
                                                               wraps=wraps))
    path = MYOSUITE / name
    if not path.exists():
        pytest.skip(f"MyoSuite reference model {path} is absent")
    return mujoco.MjModel.from_xml_path(str(path))


def _mujoco_tendons(m, q):
    """(ten_length (n_t,), dense ten_J (n_t, n_v), wrap points per tendon) from MuJoCo."""
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_fwdPosition(m, d)
    jac = np.zeros((m.ntendon, m.nv))
    for t in range(m.ntendon):
        adr, nnz = m.ten_J_rowadr[t], m.ten_J_rownnz[t]
        jac[t, m.ten_J_colind[adr:adr + nnz]] = d.ten_J[adr:adr + nnz]
    xpos, obj = d.wrap_xpos.reshape(-1, 3), d.wrap_obj.reshape(-1)
    points = []
    for t in range(m.ntendon):
        a, n = d.ten_wrapadr[t], d.ten_wrapnum[t]
        points.append(xpos[a:a + n][obj[a:a + n] != -2])  # drop pulley markers
    return d.ten_length.copy(), jac, points


@jax.jit
def _position_stage(ps, model, qs):
    """Lengths, ten_J, path points and wrap activity at a batch of configurations (B, n_q)."""
    def one(q):
        kin = engine.kinematics(model, q)
        geo = paths.path_geometry(ps, model, kin)
        jac = paths.length_jacobian_from_geometry(ps, model, kin, geo)
        pts = paths.path_points_from_geometry(ps, geo)
        return geo.path_length, jac, pts.pos_world, pts.valid, geo.wrap_active

    return jax.vmap(one)(qs)


@dataclasses.dataclass
class Evaluation:
    """Everything the per-model tests check, from one batched (one-compile) evaluation."""

    m: mujoco.MjModel
    model: engine.Model
    ps: paths.PathSet
    qs: np.ndarray          # (N_STATES, n_q) seeded random configurations
    speeds_qd: np.ndarray   # (N_FD_BASES, N_SPEED_DIRECTIONS, n_v) random velocities
    length: np.ndarray      # (N_STATES, n_paths)
    jac: np.ndarray         # (N_STATES, n_paths, n_v)
    points: np.ndarray
    valid: np.ndarray
    active: np.ndarray      # (N_STATES, n_wraps)
    fd_length: np.ndarray   # (N_FD_BASES, 2, n_v + N_SPEED_DIRECTIONS, n_paths): q (+) +-h d
    fd_active: np.ndarray   # (N_FD_BASES, 2, n_v + N_SPEED_DIRECTIONS, n_wraps)


_EVALS: dict[str, Evaluation] = {}


def _evaluate(name: str) -> Evaluation:
    """Configurations: N_STATES seeded random states; then, for the first N_FD_BASES, the
    perturbations q (+) +-h d along every velocity unit vector and N_SPEED_DIRECTIONS random
    velocities, made with MuJoCo's own mj_integratePos (exponential map for quaternions)."""
    if name in _EVALS:
        return _EVALS[name]
    m = _mj_model(name)
    model, ps = engine.compile_model(m), paths.compile_paths(m)
    rng = np.random.default_rng(sum(map(ord, name)))
    qs = np.stack([random_configuration(m, rng) for _ in range(N_STATES)])
    qd = rng.normal(size=(N_FD_BASES, N_SPEED_DIRECTIONS, m.nv))
    perturbed = []
    for b in range(N_FD_BASES):
        directions = np.concatenate([np.eye(m.nv), qd[b]])
        for sign in (1.0, -1.0):
            for v in directions:
                q = qs[b].copy()
                mujoco.mj_integratePos(m, q, sign * v, FD_STEP)
                perturbed.append(q)
    out = [np.asarray(x) for x in _position_stage(ps, model, np.concatenate([qs, perturbed]))]
    n_dir = m.nv + N_SPEED_DIRECTIONS
    fd_shape = (N_FD_BASES, 2, n_dir)
    _EVALS[name] = Evaluation(
        m, model, ps, qs, qd, out[0][:N_STATES], out[1][:N_STATES], out[2][:N_STATES],
        out[3][:N_STATES], out[4][:N_STATES],
        out[0][N_STATES:].reshape(*fd_shape, -1), out[4][N_STATES:].reshape(*fd_shape, -1))
    return _EVALS[name]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_lengths_jacobians_and_points_vs_mujoco(name):
    e = _evaluate(name)
    for k, q in enumerate(e.qs):
        ref_len, ref_jac, ref_pts = _mujoco_tendons(e.m, q)
        err = np.abs(e.length[k] - ref_len).max()
        assert err <= LENGTH_TOL_M, f"{name} state {k}: ten_length error {err:.3e} m"
        scale = max(np.abs(ref_jac).max(), 1e-300)
        err = np.abs(e.jac[k] - ref_jac).max() / scale
        assert err <= JAC_REL_TOL, f"{name} state {k}: ten_J relative error {err:.3e}"
        for t in range(e.m.ntendon):
            ours = e.points[k, t][e.valid[k, t]]
            assert ours.shape == ref_pts[t].shape, (
                f"{name} state {k} tendon {t}: {len(ours)} path points, MuJoCo {len(ref_pts[t])}")
            err = np.abs(ours - ref_pts[t]).max(initial=0.0)
            assert err <= LENGTH_TOL_M, f"{name} state {k} tendon {t}: wrap point error {err:.3e} m"


def test_random_models_exercise_every_wrap_case():
    """The random models must reach each wrap kind both wrapped and unwrapped (else the MuJoCo
    comparison above would not test the switching rules)."""
    seen: dict[tuple[int, str], set[bool]] = {}
    for name in (n for n, (_, _, wraps) in RANDOM_MODELS.items() if wraps):
        e = _evaluate(name)
        for w in range(e.ps.n_wraps):
            side = e.ps.wrap_side_site[w]
            name_ = mujoco.mj_id2name(e.m, mujoco.mjtObj.mjOBJ_SITE, side) if side >= 0 else ""
            kind = name_[:2] if side >= 0 else "none"  # side sites are named out<i> / in<i>
            seen.setdefault((e.ps.wrap_type[w], kind), set()).update(map(bool, e.active[:, w]))
    for wtype in (paths.WrapType.SPHERE, paths.WrapType.CYLINDER):
        for kind in ("none", "ou", "in"):
            assert seen.get((wtype, kind)) == {True, False}, (
                f"{wtype.name.lower()} wrap, side '{kind}': states seen {seen.get((wtype, kind))}")


def _inside_paths(e: Evaluation, q) -> np.ndarray:
    """(n_paths,) bool: the path has a wrap whose side site is inside its obstacle at q."""
    flags = np.zeros(e.ps.n_paths, dtype=bool)
    d = mujoco.MjData(e.m)
    d.qpos[:] = q
    mujoco.mj_fwdPosition(e.m, d)
    for w, side in enumerate(e.ps.wrap_side_site):
        if side >= 0:
            g = e.ps.wrap_geom[w]
            local = d.geom_xmat[g].reshape(3, 3).T @ (d.site_xpos[side] - d.geom_xpos[g])
            if np.linalg.norm(local) < e.m.geom_size[g, 0]:
                flags[e.ps.unit_path[e.ps.wrap_unit[w]]] = True
    return flags


def _check_fd(name, e, b, rows, analytic, what):
    """Central differences of L at base state b along direction rows `rows` vs `analytic`
    (len(rows), n_paths); returns the worst errors (ordinary paths, inside-wrap paths)."""
    fd = (e.fd_length[b, 0, rows] - e.fd_length[b, 1, rows]) / (2 * FD_STEP)
    switching = np.any(e.fd_active[b, 0, rows] != e.fd_active[b, 1, rows], axis=1)
    inside = _inside_paths(e, e.qs[b])
    err = np.abs(fd - analytic)[~switching]
    worst = err[:, ~inside].max(initial=0.0)
    worst_inside = err[:, inside].max(initial=0.0)
    assert switching.sum() <= max(1, len(rows) // 4), f"{name}: {switching.sum()} {what} switch"
    assert worst <= FD_TOL, f"{name}: {what} vs central differences, error {worst:.3e}"
    assert worst_inside <= FD_TOL_INSIDE, (
        f"{name}: {what} vs central differences on inside-wrap paths, error {worst_inside:.3e}")
    return worst, worst_inside


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_moment_arms_are_minus_dL_dq(name):
    e = _evaluate(name)
    for b in range(N_FD_BASES):
        arms = -e.jac[b].T  # (n_v, n_paths): r = -ten_J^T, so dL/dq_i = -r_i
        _check_fd(name, e, b, np.arange(e.m.nv), -arms, "moment arms")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_lengthening_speed_is_moment_arm_identity(name):
    e = _evaluate(name)
    for b in range(N_FD_BASES):
        speeds = e.speeds_qd[b] @ e.jac[b].T  # dL/dt = J qd = -r^T qd
        rows = e.m.nv + np.arange(N_SPEED_DIRECTIONS)
        _check_fd(name, e, b, rows, speeds, "lengthening speeds")


def _single_wrap_xml(gtype: str, with_side: bool) -> str:
    side = ' sidesite="side"' if with_side else ""
    size = "0.5" if gtype == "sphere" else "0.5 0.2"
    return f"""<mujoco><worldbody>
  <site name="a" pos="1 0 0"/><site name="b" pos="0 1 0"/><site name="side" pos="0 0 1"/>
  <body pos="0.1 -0.2 0.3" quat="0.9 0.2 -0.3 0.1">
    <joint type="hinge" axis="0.3 0.4 1"/>
    <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
    <geom name="g" type="{gtype}" size="{size}" pos="0.05 0 -0.02" quat="0.8 0.1 0.5 -0.3"/>
  </body></worldbody>
  <tendon><spatial><site site="a"/><geom geom="g"{side}/><site site="b"/></spatial></tendon>
</mujoco>"""


@jax.jit
def _single_wrap_stage(ps, model, site_pos, qs):
    """(B,) lengths, (B, n_v) ten_J rows, activity and tangent points of the single wrap, for
    a batch of site placements (B, n_site, 3) and configurations (B, n_q)."""
    def one(sp, q):
        mdl = dataclasses.replace(model, site_pos=sp)
        kin = engine.kinematics(mdl, q)
        geo = paths.path_geometry(ps, mdl, kin)
        jac = paths.length_jacobian_from_geometry(ps, mdl, kin, geo)
        return (geo.path_length[0], jac[0], geo.wrap_active[0],
                geo.wrap_tangent0_world[0], geo.wrap_tangent1_world[0])

    return jax.vmap(one)(site_pos, qs)


@pytest.mark.parametrize("gtype", ["sphere", "cylinder"])
@pytest.mark.parametrize("side_kind", ["none", "outside", "inside"])
def test_single_wrap_rules_vs_mujoco(gtype, side_kind):
    """Wrap on/off, the choice between the two tangent solutions, side sites (the far-side
    rule, the inside wrap, a cylinder side site inside the cross-section but axially far) and
    the helix, over 300 seeded placements of the two sites and the side site around one
    obstacle on a moving body: ten_length, ten_J and the tangent points vs MuJoCo."""
    m = mujoco.MjModel.from_xml_string(_single_wrap_xml(gtype, side_kind != "none"))
    d = mujoco.MjData(m)
    model, ps = engine.compile_model(m), paths.compile_paths(m)
    rng = np.random.default_rng(["sphere", "cylinder"].index(gtype) * 10
                                + ["none", "outside", "inside"].index(side_kind))
    n, radius = 300, 0.5
    qs = rng.uniform(-3.0, 3.0, size=(n, 1))
    local = np.zeros((n, 3, 3))  # site positions in the geom frame: two ends, side site
    sites = np.zeros((n, 3, 3))  # the same in the world frame at qs[k] (sites are on the world)
    for k in range(n):
        local[k, :2] = rng.normal(size=(2, 3)) * rng.uniform(0.4, 1.5)
        side = rng.normal(size=3)
        span = (0.55, 2.0) if side_kind == "outside" else (0.0, 0.45)
        local[k, 2] = side * rng.uniform(*span) / np.linalg.norm(side)
        d.qpos[:] = qs[k]
        mujoco.mj_kinematics(m, d)
        sites[k] = d.geom_xpos[0] + local[k] @ d.geom_xmat[0].reshape(3, 3).T
    length, jac, active, t0, t1 = map(np.asarray, _single_wrap_stage(ps, model, sites, qs))
    for k in range(n):
        m.site_pos[:] = sites[k]
        ref_len, ref_jac, ref_pts = _mujoco_tendons(m, qs[k])
        what = f"{gtype}/{side_kind} sample {k}"
        assert abs(length[k] - ref_len[0]) <= LENGTH_TOL_M, f"{what}: L {length[k]} vs {ref_len[0]}"
        assert active[k] == (len(ref_pts[0]) == 4), f"{what}: wrap on/off differs from MuJoCo"
        scale = max(np.abs(ref_jac).max(), 1e-300)
        assert np.abs(jac[k] - ref_jac[0]).max() / scale <= JAC_REL_TOL, f"{what}: ten_J"
        if active[k]:
            err = max(np.abs(t0[k] - ref_pts[0][1]).max(), np.abs(t1[k] - ref_pts[0][2]).max())
            assert err <= LENGTH_TOL_M, f"{what}: tangent points off by {err:.3e} m"
    n_wrapped = int(active.sum())
    assert 30 <= n_wrapped <= n - 30, f"{gtype}/{side_kind}: {n_wrapped} of {n} samples wrapped"
    if gtype == "cylinder" and side_kind == "outside":
        axial = np.hypot(local[:, 2, 0], local[:, 2, 1]) < radius
        assert axial.sum() >= 10, f"only {axial.sum()} side sites inside the cross-section"


def test_inside_wrap_contact_is_the_stationary_point():
    """The inside-wrap contact makes |p - d0| + |p - d1| stationary on the circle (checked by
    the tangential derivative of that length, an independent formula)."""
    rng = np.random.default_rng(11)
    fn = jax.jit(inside_wrap)
    checked = 0
    for _ in range(200):
        d0, d1 = rng.normal(size=(2, 2)) * 1.5
        res = fn(jnp.asarray(d0), jnp.asarray(d1), 0.5)
        if not bool(res.wrapped):
            continue
        p = np.asarray(res.t0)
        tangent = np.array([-p[1], p[0]]) / np.linalg.norm(p)
        slope = tangent @ ((p - d0) / np.linalg.norm(p - d0) + (p - d1) / np.linalg.norm(p - d1))
        assert abs(np.linalg.norm(p) - 0.5) <= 1e-12
        # Newton stops at |f| <= 1e-6 in the angle equation; the slope follows at that order.
        assert abs(slope) <= 1e-5, f"inside contact not stationary: dL/ds = {slope:.3e}"
        checked += 1
    assert checked >= 30


def _single_wrap_model(gtype: str, with_side: bool):
    m = mujoco.MjModel.from_xml_string(_single_wrap_xml(gtype, with_side))
    return m, engine.compile_model(m), paths.compile_paths(m)


@jax.jit
def _length_and_gradients(ps, model, site_pos, q):
    """Length of the single-wrap path and its gradients w.r.t. the site positions, the
    configuration (autodiff through kinematics and wrap) and the PathSet leaves."""
    def length(ps_, sp, q_):
        return paths.muscle_lengths(ps_, dataclasses.replace(model, site_pos=sp), q_)[0]

    return jax.value_and_grad(length, argnums=(0, 1, 2))(ps, site_pos, q)


def test_public_functions_vs_mujoco():
    """The public API (muscle_lengths, moment_arms, lengthening_speeds, path_points) on a
    wrapping path: ten_length, -ten_J^T, ten_velocity and wrap_xpos of MuJoCo."""
    m, model, ps = _single_wrap_model("cylinder", True)
    m.site_pos[:] = [[0.9, 0.4, -0.6], [-0.8, 0.5, 0.7], [0.1, 1.5, 0.2]]
    model = engine.compile_model(m)

    @jax.jit
    def public(ps_, model_, q, qd):
        return (paths.muscle_lengths(ps_, model_, q), paths.moment_arms(ps_, model_, q),
                paths.lengthening_speeds(ps_, model_, q, qd), paths.path_points(ps_, model_, q))

    d = mujoco.MjData(m)
    wrapped = 0
    for q, qd in ((0.3, 1.7), (2.0, -0.4), (-1.2, 0.9), (-2.7, 2.2)):
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_fwdPosition(m, d)
        mujoco.mj_fwdVelocity(m, d)
        ref_len, ref_jac, ref_pts = _mujoco_tendons(m, np.array([q]))
        length, arms, speed, pts = public(ps, model, jnp.array([q]), jnp.array([qd]))
        np.testing.assert_allclose(length, ref_len, rtol=0, atol=LENGTH_TOL_M)
        np.testing.assert_allclose(arms, -ref_jac.T, rtol=0, atol=JAC_REL_TOL)
        np.testing.assert_allclose(speed, d.ten_velocity, rtol=0, atol=1e-12)
        valid = np.asarray(pts.valid)[0]
        np.testing.assert_allclose(np.asarray(pts.pos_world)[0][valid], ref_pts[0],
                                   rtol=0, atol=LENGTH_TOL_M)
        assert list(pts.branch[0][valid]) == [0] * len(ref_pts[0])
        wrapped += len(ref_pts[0]) == 4
    assert 0 < wrapped < 4, f"{wrapped} of 4 states wrap: both kinds wanted"


def test_autodiff_gradients_vs_mujoco_and_differences():
    """jax.grad of the length through the kinematics and every wrap branch (outside wrap with
    a side site, and the inside wrap through its Newton iterations) vs MuJoCo's ten_J; and the
    gradient w.r.t. the wrap radius (a PathSet leaf) vs central differences in the radius."""
    m, model, ps = _single_wrap_model("cylinder", True)
    rng = np.random.default_rng(5)
    for span, tol in (((0.55, 2.0), 1e-10), ((0.0, 0.45), FD_TOL_INSIDE)):
        checked = 0
        for _ in range(40):
            q = rng.uniform(-3, 3, size=1)
            sp = np.array(m.site_pos)
            sp[:2] = rng.normal(size=(2, 3)) * 1.2
            side = rng.normal(size=3)
            sp[2] = side * rng.uniform(*span) / np.linalg.norm(side)
            m.site_pos[:] = sp
            ref_len, ref_jac, ref_pts = _mujoco_tendons(m, q)
            if len(ref_pts[0]) != 4:
                continue
            sp_j, q_j = jnp.asarray(sp), jnp.asarray(q)
            value, (g_ps, _, g_q) = _length_and_gradients(ps, model, sp_j, q_j)
            assert abs(float(value) - ref_len[0]) <= LENGTH_TOL_M
            err = abs(float(g_q[0]) - ref_jac[0, 0])
            assert err <= tol, f"side {span}: autodiff dL/dq {float(g_q[0])}, ten_J {ref_jac[0, 0]}"
            h = 1e-6
            shifted = [_length_and_gradients(
                dataclasses.replace(ps, wrap_radius=ps.wrap_radius + dr), model, sp_j, q_j)[0]
                for dr in (h, -h)]
            fd = (float(shifted[0]) - float(shifted[1])) / (2 * h)
            assert abs(float(g_ps.wrap_radius[0]) - fd) <= max(FD_TOL, tol), (
                f"side {span}: dL/dradius {float(g_ps.wrap_radius[0])} vs central differences {fd}")
            checked += 1
        assert checked >= 10, f"side {span}: only {checked} wrapped samples"


def test_gradients_finite_at_degenerate_configurations():
    """A site on the wrap geom's centre, coincident sites, a side site on the cylinder axis, a
    segment tangent to the obstacle: lengths and gradients stay finite."""
    m, model, ps = _single_wrap_model("cylinder", True)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    centre, rot = d.geom_xpos[0], d.geom_xmat[0].reshape(3, 3)
    base = np.array(m.site_pos)
    cases = {k: base.copy() for k in ("site at geom centre", "coincident sites",
                                      "side site on the axis", "tangent segment")}
    cases["site at geom centre"][0] = centre
    cases["coincident sites"][1] = cases["coincident sites"][0]
    cases["side site on the axis"][2] = centre + rot @ np.array([0.0, 0.0, 0.7])
    cases["tangent segment"][0] = centre + rot @ np.array([-1.0, 0.5, 0.0])
    cases["tangent segment"][1] = centre + rot @ np.array([1.0, 0.5, 0.0])
    for what, sp in cases.items():
        value, grads = _length_and_gradients(ps, model, jnp.asarray(sp), jnp.zeros(1))
        flat = jax.tree_util.tree_leaves(grads)
        assert np.isfinite(float(value)), f"{what}: length {float(value)}"
        assert all(np.all(np.isfinite(np.asarray(g))) for g in flat), f"{what}: gradients {grads}"


def test_compile_rejects_fixed_tendons_and_selects_by_name():
    xml = """<mujoco><worldbody><site name="a" pos="0 0 1"/>
      <body><joint name="j" type="hinge"/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
        <site name="b" pos="1 0 0"/></body></worldbody>
      <tendon><spatial name="muscle"><site site="a"/><site site="b"/></spatial>
        <fixed name="coupler"><joint joint="j" coef="2"/></fixed></tendon></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ValueError, match=r"tendon #1 'coupler' is a fixed tendon.*joint 'j'"):
        paths.compile_paths(m)
    ps = paths.compile_paths(m, tendons=["muscle"])
    assert ps.path_names == ("muscle",) and ps.n_paths == 1
    with pytest.raises(ValueError, match="no tendon 'nope'"):
        paths.compile_paths(m, tendons=["nope"])
    model = engine.compile_model(m)
    # straight path a = (0, 0, 1) -> b(q) = (cos q, sin q, 0) (hinge about z): L = |b - a| and
    # r = -dL/dq = -u . (z x b), u = (b - a) / L (closed form)
    q = np.array([0.4])
    a, b = np.array([0.0, 0.0, 1.0]), np.array([np.cos(0.4), np.sin(0.4), 0.0])
    u = (b - a) / np.linalg.norm(b - a)
    length, arms = jax.jit(lambda p, mdl, x: (paths.muscle_lengths(p, mdl, x),
                                              paths.moment_arms(p, mdl, x)))(ps, model, q)
    np.testing.assert_allclose(length, [np.linalg.norm(b - a)], rtol=0, atol=1e-15)
    np.testing.assert_allclose(arms, [[-u @ np.cross([0, 0, 1], b)]], rtol=0, atol=1e-15)


def test_pathset_model_mismatch_and_pytree():
    e = _evaluate("frog")
    _, other, _ = _single_wrap_model("sphere", False)
    with pytest.raises(ValueError, match="compile both from one MjModel"):
        paths.muscle_lengths(e.ps, other, np.zeros(other.n_q))
    leaves = jax.tree_util.tree_leaves(e.ps)
    assert len(leaves) == 4 and all(x.dtype == jnp.float64 for x in leaves)
    assert e.ps.path_names == ("plantaris",) and e.ps.n_wraps == 2
