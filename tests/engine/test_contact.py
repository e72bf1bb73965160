"""Smooth sphere/capsule-plane contact (contact.py) against analytic solutions, the Hunt-Crossley
restitution relation, and MuJoCo 4.0 (pair filtering, contact geometry, point Jacobians, the
wiring into forward/inverse dynamics). All float64 (conftest).

Notation: E stiffness (N/m^2), c dissipation (s/m), R radius, delta indentation. With
hertz_smoothing b_d large and constant_contact_force cf tiny the normal law is plain Hertz,
f = (sqrt(2)/3) E sqrt(R) delta^1.5 (OpenSim's k = E^(2/3)/2, f = (4/3) k sqrt(R k) delta^1.5).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from scipy.optimize import brentq

from myotwin import engine
from myotwin.engine.contact import (
    CONTACT_PARAMS,
    contact_forces,
    contact_jacobians,
    contact_points,
    with_contact_params,
)

G = 9.81
# Plain Hertz: tanh(b_d delta) = 1 to roundoff for delta > 4e-6 m; cf changes delta^2 + cf by
# < 1e-10 relative at the ~1 mm indentations used here.
PLAIN_HERTZ = {"hertz_smoothing_per_m": 1e7, "constant_contact_force": 1e-16}


def _hertz_k(stiffness, radius):
    """f = K delta^1.5: (4/3) k sqrt(R k) with k = E^(2/3) / 2 (Simbody calcForce)."""
    k = 0.5 * stiffness ** (2.0 / 3.0)
    return 4.0 / 3.0 * k * np.sqrt(radius * k)


def _compile(xml: str) -> engine.Model:
    return engine.compile_model(mujoco.MjModel.from_xml_string(xml))


# A sphere on a vertical slide over the floor (q = height of the centre).
SLIDER = """<mujoco><option gravity="0 0 {gz}"/><worldbody>
  <geom name="floor" type="plane" size="1 1 1"/>
  <body name="ball"><joint name="z" type="slide" axis="0 0 1"/>
    <geom name="s" type="sphere" size="{r}"/>
    <inertial pos="0 0 0" mass="{m}" diaginertia="1 1 1"/></body>
</worldbody>{extra}</mujoco>"""


def test_sphere_at_rest_settles_at_the_hertz_indentation():
    # Static equilibrium f(delta*) = m g. Plain Hertz: delta* = (m g / K)^(2/3) in closed form;
    # OpenSim's default smoothing (b_d = 300, cf = 1e-5): the root of the published smoothed law
    # (Simbody calcForce) by brentq. Dropped from delta = 0 at rest, Hunt-Crossley damping
    # (c = 2 s/m, damping ratio ~0.17) settles it: after 1 s the oscillation is < 1e-6 delta*.
    r, m = 0.05, 1.0
    model = _compile(SLIDER.format(gz=-G, r=r, m=m, extra=""))
    k_h = _hertz_k(1e6, r)
    plain = (m * G / k_h) ** (2.0 / 3.0)

    def smoothed(d):
        return k_h * (d * d + 1e-5) ** 0.75 * 0.5 * (1 + np.tanh(300 * d)) - m * G

    cases = [(with_contact_params(model, **PLAIN_HERTZ), plain),
             (model, brentq(smoothed, -0.05, 0.05, xtol=1e-16))]
    forward = jax.jit(engine.forward_dynamics)
    for mod, depth in cases:
        qdd = forward(mod, jnp.array([r - depth]), jnp.zeros(1), jnp.zeros(0))
        assert abs(float(qdd[0])) < 1e-9 * G, f"acceleration at delta*={depth:.6g}: {qdd}"
        q, qd, _ = engine.simulate(mod, jnp.array([r]), jnp.zeros(1), jnp.zeros(0), 1.0, 1e-3)
        settled = r - float(q[-1, 0])
        assert abs(settled - depth) < 1e-6 * depth, f"settled {settled:.9g} vs {depth:.9g} m"
        assert abs(float(qd[-1, 0])) < 1e-5, f"still moving: {float(qd[-1, 0])} m/s"


def test_restitution_matches_hunt_crossley():
    # Hunt & Crossley (1975, J Appl Mech 42:440) chose f = K delta^1.5 (1 + (3/2) alpha
    # delta_dot) so that the coefficient of restitution is e = 1 - alpha v_in to first order in
    # alpha v_in; here alpha = c (OpenSim's dissipation). The neglected terms are O((c v)^2):
    # the tolerance is 1.5 (c v)^2 (observed 0.99 (c v)^2). No gravity; contact lasts ~55 ms.
    r, m, c = 0.05, 1.0, 0.2
    model = with_contact_params(_compile(SLIDER.format(gz=0, r=r, m=m, extra="")),
                                dissipation_s_per_m=c, **PLAIN_HERTZ)
    for v_in in (0.05, 0.1):
        q, qd, _ = engine.simulate(model, jnp.array([r]), jnp.array([-v_in]), jnp.zeros(0),
                                   0.1, 1e-4)
        assert float(q[-1, 0]) > r, "the sphere must have left the plane"
        e = float(qd[-1, 0]) / v_in
        assert abs(e - (1 - c * v_in)) < 1.5 * (c * v_in) ** 2, f"v_in={v_in}: e={e:.8f}"


# Free bodies resting on the floor (slid along +x); explicit inertia for the analytic solution.
FREE = """<mujoco><option gravity="0 0 {gz}"/><worldbody>
  <geom name="floor" type="plane" size="1 1 1"/>
  <body name="b"><freejoint/>{geom}
    <inertial pos="0 0 0" mass="{m}" diaginertia="{ixx} {iyy} {izz}"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("shape", ["sphere", "capsule"])
def test_sliding_decelerates_at_mu_g_and_spins_up(shape):
    # Slip speed >> v_tr and mu_s = mu_d, mu_v = 0: friction is exactly mu_d f_n opposite the
    # slip, f_n = m g (started at the vertical equilibrium, which sliding does not disturb).
    # Hence v_x(t) = v0 - mu g t and, with lever arm a = R - delta*/2 (OpenSim's contact point
    # midway between the surfaces), omega_y(t) = mu m g a t / I_yy (bowling-ball start). The
    # capsule lies along y and rolls about its own axis on its two end spheres (m g / 2 each).
    # Semi-implicit Euler is exact for these constant accelerations: residuals are roundoff.
    r, m, mu, v0 = 0.05, 1.0, 0.5, 2.0
    if shape == "sphere":
        geom, iyy, n_sph = f'<geom type="sphere" size="{r}"/>', 0.4 * m * r * r, 1
    else:
        geom, iyy, n_sph = f'<geom type="capsule" fromto="0 -0.1 0 0 0.1 0" size="{r}"/>', 2e-3, 2
    model = _compile(FREE.format(gz=-G, geom=geom, m=m, ixx=0.01, iyy=iyy, izz=0.01))
    model = with_contact_params(model, static_friction=mu, dynamic_friction=mu,
                                viscous_friction_s_per_m=0.0, transition_velocity_m_per_s=0.01,
                                **PLAIN_HERTZ)
    depth = (m * G / n_sph / _hertz_k(1e6, r)) ** (2.0 / 3.0)
    q0 = jnp.array([0, 0, r - depth, 1, 0, 0, 0], dtype=float)
    qd0 = jnp.array([v0, 0, 0, 0, 0, 0], dtype=float)
    q, qd, t = engine.simulate(model, q0, qd0, jnp.zeros(0), 0.08, 1e-3, "semi_implicit_euler")
    t = np.asarray(t)
    lever = r - depth / 2
    np.testing.assert_allclose(qd[:, 0], v0 - mu * G * t, rtol=0, atol=1e-9, err_msg="v_x")
    np.testing.assert_allclose(qd[:, 4], mu * m * G * lever * t / iyy, rtol=0, atol=1e-8,
                               err_msg="omega_y")
    np.testing.assert_allclose(q[:, 2], r - depth, rtol=0, atol=1e-12, err_msg="height")
    slip = np.asarray(qd[:, 0]) - np.asarray(qd[:, 4]) * lever
    assert slip.min() > 10 * 0.01, "slip must stay well above the transition velocity"


# A translating sphere (three slides, no rotation) on a plane tilted by theta about x.
INCLINE = """<mujoco><option gravity="0 0 {gz}"/><worldbody>
  <geom name="ramp" type="plane" size="1 1 1" axisangle="1 0 0 {theta}"/>
  <body name="b"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
    <joint type="slide" axis="0 0 1"/><geom type="sphere" size="{r}"/>
    <inertial pos="0 0 0" mass="{m}" diaginertia="1 1 1"/></body>
</worldbody><compiler angle="radian"/></mujoco>"""


@pytest.mark.parametrize("tan_theta, mu, v0", [(0.3, 0.8, 0.0), (0.5, 0.3, 0.5)])
def test_incline_creeps_below_the_friction_angle_and_slides_above(tan_theta, mu, v0):
    # Normal n = (0, -sin, cos), downhill u = (0, -cos, -sin); f_n = m g cos(theta).
    # tan(theta) < mu (no true stiction in a smooth law): for slip < v_tr and mu_s = mu_d,
    # mu_v = 0 the friction is exactly f_n mu v / v_tr, so the downhill speed obeys
    # v' = g sin - (g cos mu / v_tr) v: v(t) = v*(1 - exp(-t/tau)), v* = v_tr tan / mu
    # (3.75 mm/s here: the sphere "holds", creeping), tau = v_tr / (mu g cos).
    # tan(theta) > mu, started at v0 >> v_tr: constant mu, v(t) = v0 + g (sin - mu cos) t.
    # Started at the normal equilibrium; RK4 at dt = 1e-4 s = tau / 13: error < 1e-7 v*.
    r, m, v_tr = 0.05, 1.0, 0.01
    theta = float(np.arctan(tan_theta))
    model = _compile(INCLINE.format(gz=-G, theta=theta, r=r, m=m))
    model = with_contact_params(model, static_friction=mu, dynamic_friction=mu,
                                viscous_friction_s_per_m=0.0, transition_velocity_m_per_s=v_tr,
                                **PLAIN_HERTZ)
    s, c = np.sin(theta), np.cos(theta)
    normal, downhill = np.array([0, -s, c]), np.array([0, -c, -s])
    depth = (m * G * c / _hertz_k(1e6, r)) ** (2.0 / 3.0)
    q0 = jnp.asarray((r - depth) * normal)
    _, qd, t = engine.simulate(model, q0, jnp.asarray(v0 * downhill), jnp.zeros(0), 0.05, 1e-4)
    t, qd = np.asarray(t), np.asarray(qd)
    speed = qd @ downhill
    if tan_theta < mu:
        v_star, tau = v_tr * tan_theta / mu, v_tr / (mu * G * c)
        expected = v_star * (1 - np.exp(-t / tau))
    else:
        expected = v0 + G * (s - mu * c) * t
    scale = np.abs(expected).max()
    np.testing.assert_allclose(speed, expected, rtol=0, atol=1e-6 * scale, err_msg="speed")
    np.testing.assert_allclose(qd @ normal, 0.0, atol=1e-9 * scale, err_msg="normal velocity")
    np.testing.assert_allclose(qd[:, 0], 0.0, atol=1e-12, err_msg="cross-slope velocity")


def test_rollout_gradients_wrt_height_and_stiffness_match_central_differences():
    # A 5 mm drop onto the floor, 60 ms (impact at ~32 ms), semi-implicit Euler at 0.2 ms with
    # OpenSim's default smoothing (smooth law). Loss: final height and velocity. Central
    # differences in float64 (step 1e-6 of each value): truncation O(h^2) ~1e-10 relative,
    # roundoff ~1e-16 / 1e-6; tolerance 1e-6 relative.
    r, m = 0.05, 1.0
    model = _compile(SLIDER.format(gz=-G, r=r, m=m, extra=""))

    def loss(h0, stiffness):
        mod = with_contact_params(model, stiffness_N_per_m2=stiffness)
        q, qd = engine.rollout(mod, jnp.array([r + h0]), jnp.zeros(1), jnp.zeros(0), 2e-4, 300,
                               engine.Integrator.SEMI_IMPLICIT_EULER)
        return q[-1, 0] + 0.1 * qd[-1, 0]

    h0, stiff = 0.005, 1e6
    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))(h0, stiff)
    f = loss  # the rollout inside is jitted
    for i, (x, step) in enumerate(((h0, 1e-6 * h0), (stiff, 1e-6 * stiff))):
        args_p, args_m = [h0, stiff], [h0, stiff]
        args_p[i], args_m[i] = x + step, x - step
        fd = (float(f(*args_p)) - float(f(*args_m))) / (2 * step)
        assert abs(float(grad[i]) - fd) <= 1e-6 * abs(fd), f"arg {i}: {float(grad[i])} vs {fd}"
        assert fd != 0.0


# Free base, hinge, ball and slide; spheres and capsules against a floor and a tilted ramp.
# Solids have contype 1 / conaffinity 2 and planes 2 / 1: only solid-plane pairs collide.
# margin="10" makes MuJoCo report every contact (its margin is not used by our law).
CHAIN = """<mujoco><option gravity="0 0 -9.81"/>
<default><geom contype="1" conaffinity="2" margin="10"/></default><worldbody>
  <geom name="floor" type="plane" size="0 0 1" contype="2" conaffinity="1"/>
  <geom name="ramp" type="plane" size="1 1 1" pos="0 0 -0.2" zaxis="0.3 -0.2 1" contype="2"
        conaffinity="1"/>
  <body name="base" pos="0 0 0.4"><freejoint/>
    <inertial pos="0.02 0 0" mass="2" diaginertia="0.02 0.03 0.04"/>
    <geom name="base_ball" type="sphere" size="0.07" pos="0.05 0 0"/>
    <body name="thigh" pos="0.1 0 -0.1"><joint type="hinge" axis="0 1 0" pos="0 0 0.05"/>
      <inertial pos="0 0 -0.15" mass="1" diaginertia="0.01 0.01 0.002"/>
      <geom name="thigh_cap" type="capsule" fromto="0 0 0 0.1 0.05 -0.3" size="0.03"/>
      <body name="shank" pos="0.1 0.05 -0.3"><joint type="ball"/>
        <inertial pos="0.05 0 0" mass="0.5" diaginertia="0.004 0.005 0.001"/>
        <geom name="foot" type="capsule" fromto="0 0 0 0.15 0 -0.02" size="0.02"/>
        <body name="toe" pos="0.15 0 0"><joint type="slide" axis="1 0.2 0"/>
          <inertial pos="0 0 0" mass="0.1" diaginertia="1e-4 1e-4 1e-4"/>
          <geom name="toe_ball" type="sphere" size="0.015"/></body></body></body></body>
</worldbody></mujoco>"""


def _random_chain_state(m, rng):
    q = np.array(m.qpos0)
    q[0:3] = [0.0, 0.0, 0.3] + rng.normal(size=3) * 0.05
    q[3:7] = [1, 0, 0, 0] + rng.normal(size=4) * 0.3
    q[3:7] /= np.linalg.norm(q[3:7])
    q[7] = rng.uniform(-1, 1)
    q[8:12] = [1, 0, 0, 0] + rng.normal(size=4) * 0.3
    q[8:12] /= np.linalg.norm(q[8:12])
    q[12] = rng.uniform(-0.05, 0.05)
    return q, rng.normal(size=m.nv)


def test_contact_geometry_and_jacobians_match_mujoco():
    # MuJoCo's collision (mjc_PlaneSphere, mjc_PlaneCapsule: one contact per capsule end)
    # gives dist = -indentation and pos = midway point; mj_jac at our contact point gives the
    # Jacobian; sum J^T F must equal qfrc_contact. Same formulas: roundoff ~1e-15.
    m = mujoco.MjModel.from_xml_string(CHAIN)
    d = mujoco.MjData(m)
    # b_d = 2 / m: every contact carries a generic nonzero force (not only penetrating ones).
    model = with_contact_params(engine.compile_model(m), hertz_smoothing_per_m=2.0)
    assert model.contact.n_contact == 12 and model.dynamics_unsupported == ()
    solid = np.asarray(model.contact.geom_id)[list(model.contact.contact_geom)]
    plane = np.asarray(model.contact.plane_id)[list(model.contact.contact_plane)]
    body = m.geom_bodyid[solid]
    rng = np.random.default_rng(11)

    @jax.jit
    def evaluate(q, qd):
        pts = contact_points(model, q)
        jac = contact_jacobians(model, engine.kinematics(model, q), pts)
        return pts, contact_forces(model, q, qd), jac

    for _ in range(3):
        q, qd = _random_chain_state(m, rng)
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        pts, forces, jac = evaluate(jnp.asarray(q), jnp.asarray(qd))
        jac = np.asarray(jac)
        mj_con = [(tuple(sorted(c.geom)), c.pos.copy(), c.dist) for c in d.contact[:d.ncon]]
        assert len(mj_con) == 12, "MuJoCo reports one contact per sphere, two per capsule"
        qfrc = np.zeros(m.nv)
        for i in range(12):
            point = np.asarray(pts.point_world[i])
            cands = [c for c in mj_con if c[0] == tuple(sorted((solid[i], plane[i])))]
            pos, dist = min(((c[1], c[2]) for c in cands),
                            key=lambda pc: np.linalg.norm(pc[0] - point))
            np.testing.assert_allclose(point, pos, atol=1e-13, err_msg=f"contact {i} point")
            assert abs(float(pts.indentation[i]) + dist) < 1e-13, f"contact {i} indentation"
            jacp = np.zeros((3, m.nv))
            mujoco.mj_jac(m, d, jacp, None, point, int(body[i]))
            np.testing.assert_allclose(jac[i].T, jacp, atol=1e-13, err_msg=f"contact {i} jac")
            qfrc += jacp.T @ np.asarray(forces.force_world[i])
        scale = np.abs(qfrc).max()
        assert scale > 1.0, "forces must be generic, not zero"
        np.testing.assert_allclose(forces.qfrc_contact, qfrc, rtol=0, atol=1e-12 * scale)


def test_forward_and_inverse_dynamics_add_contact_as_an_applied_force():
    # MuJoCo with contact disabled and qfrc_applied = our qfrc_contact must give our qacc;
    # its qfrc_inverse (which does not subtract qfrc_applied) equals ours + qfrc_contact.
    m = mujoco.MjModel.from_xml_string(CHAIN)
    model = with_contact_params(engine.compile_model(m), hertz_smoothing_per_m=2.0)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    d = mujoco.MjData(m)
    q, qd = _random_chain_state(m, np.random.default_rng(5))
    q, qd = jnp.asarray(q), jnp.asarray(qd)
    qfrc = np.asarray(jax.jit(contact_forces)(model, q, qd).qfrc_contact)
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, qd, qfrc
    mujoco.mj_forward(m, d)
    qacc = np.asarray(jax.jit(engine.forward_dynamics)(model, q, qd, jnp.zeros(0)))
    np.testing.assert_allclose(qacc, d.qacc, rtol=0, atol=1e-10 * np.abs(d.qacc).max())
    mujoco.mj_inverse(m, d)
    tau = np.asarray(jax.jit(engine.inverse_dynamics)(model, q, qd, jnp.asarray(d.qacc)))
    ref = d.qfrc_inverse
    np.testing.assert_allclose(tau + qfrc, ref, rtol=0, atol=1e-10 * np.abs(ref).max())


# Pair filtering: explicit pair, exclude, bitmask, parent/child, static body, unsupported types.
FILTERS = """<mujoco><default><geom contype="2" conaffinity="2" margin="100"/></default>
<worldbody>
  <geom name="floor" type="plane" size="0 0 1" contype="3" conaffinity="3"/>
  <body name="fixed" pos="0 0 1"><geom name="fixed_ball" type="sphere" size="0.1" contype="1"
      conaffinity="1"/></body>
  <body name="a" pos="0 0 1"><freejoint/><geom name="a_ball" type="sphere" size="0.1"/>
    <body name="b" pos="0 0 0.3"><joint type="hinge"/><geom name="b_cap" type="capsule"
        size="0.05 0.1"/>
      <body name="c" pos="0 0 0.3"><joint type="hinge"/><geom name="c_ball" type="sphere"
          size="0.05" contype="4" conaffinity="4"/></body></body></body>
  <body name="e" pos="1 0 1"><joint type="slide"/><geom name="e_box" type="box" size="0.1 0.1 0.1"/>
    <geom name="e_ball" type="sphere" size="0.05" pos="0 0 0.3" contype="0" conaffinity="0"/>
  </body>
</worldbody><contact><exclude body1="a" body2="e"/>
  <pair geom1="e_ball" geom2="floor" margin="100"/></contact></mujoco>"""


def _our_pairs(model):
    c = model.contact
    ours = {tuple(sorted((c.geom_id[g], c.plane_id[p])))
            for g, p in zip(c.contact_geom, c.contact_plane)}
    bad = {tuple(sorted(int(x) for x in pair)) for msg in model.dynamics_unsupported
           for pair in re.findall(r"geom #(\d+)[^/]* / geom #(\d+)", msg)}
    return ours, bad


def test_pairs_follow_mujoco_filtering_and_unsupported_pairs_are_named():
    # With margin 100 MuJoCo reports every pair its filters let through; ours must be the same
    # set, split into sphere/capsule-plane contacts and named unsupported pairs. Filtered here:
    # the static ball (welded to the world, like the floor), c_ball (bitmask), a-b (parent and
    # child), a-e (<exclude>); e_ball (contype 0) only through its explicit <pair>.
    m = mujoco.MjModel.from_xml_string(FILTERS)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    mj_pairs = {tuple(sorted(int(g) for g in c.geom)) for c in d.contact[:d.ncon]}
    model = engine.compile_model(m)
    ours, bad = _our_pairs(model)
    assert ours | bad == mj_pairs and not ours & bad
    names = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for p in ours for g in p}
    assert names == {"floor", "a_ball", "b_cap", "e_ball"}
    assert bad == {(0, 5), (3, 5)}  # box-plane, capsule-box
    # one message for the two pairs, with the way out once
    assert model.dynamics_unsupported == (
        "contact pairs geom #0 'floor' (plane, body 'world') / geom #5 'e_box' (box, body 'e'), "
        "geom #3 'b_cap' (capsule, body 'b') / geom #5 'e_box' (box, body 'e'): MuJoCo collides "
        "them but the engine only has sphere/capsule-plane contact; to run without them, set "
        "contype=conaffinity=0 on one geom of each pair, add an <exclude> of their bodies, or "
        '<flag contact="disable"/>',)
    with pytest.raises(ValueError, match="geom #5 'e_box' \\(box, body 'e'\\)"):
        engine.forward_dynamics(model, jnp.asarray(m.qpos0), jnp.zeros(m.nv), jnp.zeros(0))
    off = engine.compile_model(mujoco.MjModel.from_xml_string(
        FILTERS.replace("<worldbody>", '<option><flag contact="disable"/></option><worldbody>')))
    assert off.contact is None and off.dynamics_unsupported == ()
    none = contact_forces(off, jnp.asarray(m.qpos0), jnp.zeros(m.nv))
    assert none.force_world.shape == (0, 3) and np.all(np.asarray(none.qfrc_contact) == 0.0)


def test_parameters_from_mjcf_numerics_and_with_contact_params():
    extra = """<custom><numeric name="contact:stiffness_N_per_m2" data="2e6"/>
      <numeric name="contact:dissipation_s_per_m:floor" data="1.5"/>
      <numeric name="contact:dissipation_s_per_m:s" data="0.7"/>
      <numeric name="contact:static_friction:floor" data="0.9"/></custom>"""
    model = _compile(SLIDER.format(gz=-G, r=0.05, m=1, extra=extra))
    c = model.contact
    assert float(c.stiffness_N_per_m2[0]) == 2e6  # model-wide
    assert float(c.dissipation_s_per_m[0]) == 0.7  # the sphere's value beats the plane's
    assert float(c.static_friction[0]) == 0.9  # the plane's value
    assert float(c.dynamic_friction[0]) == CONTACT_PARAMS["dynamic_friction"][0]  # default
    for bad, match in [('name="contact:stiffnes" data="1"', "unknown contact parameter"),
                       ('name="contact:stiffness_N_per_m2:nope" data="1"', "no geom named"),
                       ('name="contact:transition_velocity_m_per_s" data="0"', "expected a fin")]:
        with pytest.raises(ValueError, match=match):
            _compile(SLIDER.format(gz=-G, r=0.05, m=1, extra=f"<custom><numeric {bad}/></custom>"))
    new = with_contact_params(model, viscous_friction_s_per_m=jnp.array([0.25]))
    assert float(new.contact.viscous_friction_s_per_m[0]) == 0.25 and new.contact.n_contact == 1
    with pytest.raises(ValueError, match="unknown contact parameter 'mu'"):
        with_contact_params(model, mu=1.0)
    with pytest.raises(ValueError, match="expected a finite value > 0"):
        with_contact_params(model, stiffness_N_per_m2=-1.0)
    with pytest.raises(ValueError, match="has shape"):
        with_contact_params(model, static_friction=jnp.ones(3))
    # numbers only: before, True became 1.0 and "0.5" failed inside jnp.asarray
    for bad in (True, "0.5", [True], np.array([True])):
        with pytest.raises(ValueError, match="with_contact_params: static_friction must be "
                           "numbers, got "):
            with_contact_params(model, static_friction=bad)
    with pytest.raises(ValueError, match="with_contact_params: expected an engine Model "
                       r"\(engine.load or engine.compile_model\), got NoneType"):
        with_contact_params(None, static_friction=0.5)
    # a traced value passes (its range is not checked)
    grad = jax.grad(lambda mu: with_contact_params(model, static_friction=mu)
                    .contact.static_friction[0])(0.5)
    assert float(grad) == 1.0


def test_an_explicit_unsupported_pair_is_named_with_its_own_way_out():
    """An explicit <pair> collides whatever the bitmasks say: the way out is to remove it."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody>
      <geom name="floor" type="plane" size="0 0 1" contype="0" conaffinity="0"/>
      <body name="e" pos="0 0 1"><joint type="slide"/>
        <geom name="e_box" type="box" size="0.1 0.1 0.1" contype="0" conaffinity="0"/></body>
    </worldbody><contact><pair geom1="e_box" geom2="floor"/></contact></mujoco>""")
    assert engine.compile_model(m).dynamics_unsupported == (
        "contact pair geom #0 'floor' (plane, body 'world') / geom #1 'e_box' (box, body 'e'): "
        "MuJoCo collides it but the engine only has sphere/capsule-plane contact; to run "
        "without it, remove the <pair>",)
