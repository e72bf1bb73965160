"""The muscle-absent frog jump (control 1) on the engine vs the MuJoCo frog (issue 3, acc. 4).

References outside our code: MuJoCo 4.0.0 (the same MJCF, the same servo-target table and
forelimb support, RK4 at the same 0.25 ms step), Newton's second law for the whole body in
flight, and the closed-form Hertz indentation at rest. docs/invitro/frog.md §15.
"""

import mujoco
import numpy as np
import pytest

from myotwin.invitro.frog import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, GRAVITY_M_S2,
                                  FrogSpec, build_frog_mjcf, floor_force_world_N,
                                  floor_penetration_m, start_qpos)
from myotwin.invitro.frog.engine_jump import (DEFAULT_DT_S, FROG_CONTACT, com_acceleration,
                                              compare_with_mujoco, engine_frog_mjcf,
                                              frog_inputs, frog_samples, load_engine_frog,
                                              rollout_frog)
from myotwin.engine import compile_model

SPEC = FrogSpec()
DURATION_S = 0.3          # takeoff ~68 ms, first touchdown ~135 ms, trunk strike ~205 ms
N_STEPS = int(round(DURATION_S / DEFAULT_DT_S))


@pytest.fixture(scope="module")
def frog():
    return load_engine_frog(SPEC)


@pytest.fixture(scope="module")
def comparison(frog):
    return compare_with_mujoco(SPEC, DURATION_S, DEFAULT_DT_S, frog=frog)


def _weight(frog):
    return float(np.sum(frog.model.body_mass)) * GRAVITY_M_S2


def test_engine_variant_is_the_mujoco_frog_without_the_plantaris_motor(frog):
    # MuJoCo compiles the variant to the same bodies, joints, geoms and servos as the frog of
    # the in vitro-VR loop (bit-identical arrays); only the tendon-driven motor is gone (control
    # 1 has no muscle). The engine's dynamics now supports that motor too (spatial-tendon
    # transmission, tests/engine/test_tendon_actuators.py), so nothing is unsupported in either.
    original = mujoco.MjModel.from_xml_string(build_frog_mjcf(SPEC))
    variant = frog.mj_model
    for field in ("body_mass", "body_inertia", "body_ipos", "body_pos", "body_quat", "qpos0",
                  "jnt_range", "jnt_solref", "geom_size", "geom_pos", "geom_quat",
                  "pair_geom1", "pair_geom2", "dof_invweight0"):
        np.testing.assert_array_equal(getattr(variant, field), getattr(original, field), field)
    for name in (ACTUATOR_KNEE, ACTUATOR_HIP):
        for field in ("gainprm", "biasprm", "forcerange"):
            np.testing.assert_array_equal(getattr(variant.actuator(name), field),
                                          getattr(original.actuator(name), field))
    assert compile_model(original).dynamics_unsupported == ()
    assert ACTUATOR_PLANTARIS in [original.actuator(i).name for i in range(original.nu)]
    assert ACTUATOR_PLANTARIS not in [variant.actuator(i).name for i in range(variant.nu)]
    assert frog.model.dynamics_unsupported == ()
    assert float(frog.model.contact.stiffness_N_per_m2[0]) == FROG_CONTACT["stiffness_N_per_m2"]
    assert "contact:stiffness_N_per_m2" in engine_frog_mjcf(SPEC)


def test_accelerations_along_the_jump_match_mujoco(comparison, frog):
    # Our composition (engine stages + J^T F of the forelimb support before the joint-limit QP)
    # vs MuJoCo's qacc at the engine's own states, every 1 ms of the jump (stance with contact
    # and the knee strike, joint-stop impacts of the swinging foot in flight, touchdown):
    # MuJoCo with xfrc_applied on the support body, the servo ctrl of that step, its contacts
    # disabled and the engine's smooth contact forces applied as qfrc_applied = sum J^T F with
    # MuJoCo's own mj_jac at the engine's contact points. Tolerance 1e-10 of the largest |qacc|
    # (MuJoCo Newton at tolerance 1e-12; observed 9e-12 relative to |qacc| up to 6e5, at a
    # state with active limits: MuJoCo's solver tolerance).
    eng = comparison.engine
    m = mujoco.MjModel.from_xml_string(engine_frog_mjcf(SPEC))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    m.opt.tolerance, m.opt.iterations = 1e-12, 200
    d = mujoco.MjData(m)
    jacp = np.zeros((3, m.nv))
    worst, n_limits = 0.0, 0
    for k in range(0, len(eng.qacc), 4):
        d.qpos[:], d.qvel[:], d.ctrl[:] = eng.qpos[k], eng.qvel[k], eng.ctrl[k]
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        qfrc = np.zeros(m.nv)
        for body, point, force in zip(frog.contact_body, eng.contact_point_m[k],
                                      eng.contact_force_N[k]):
            mujoco.mj_jac(m, d, jacp, None, point, body)
            qfrc += jacp.T @ force
        d.qfrc_applied[:] = qfrc
        d.xfrc_applied[frog.support_body, 2] = eng.support_N[k]
        mujoco.mj_forward(m, d)
        n_limits += int(d.nefc > 0)
        worst = max(worst, np.abs(eng.qacc[k] - d.qacc).max() / np.abs(d.qacc).max())
    assert worst < 1e-10, f"qacc of the engine frog vs MuJoCo: {worst:.2e} relative"
    assert n_limits > 20          # the limit QP was exercised


def test_airborne_rollout_matches_mujoco_rk4(frog):
    # The step: our RK4 with the support force and servo ctrl held over each step vs MuJoCo's
    # RK4 (mj_step, xfrc_applied), the frog released 1 m above the floor with seeded random
    # velocities, 0.3 s at 0.25 ms (the jump's shapes: no recompilation); the extending leg
    # drives the joints into their stops. Tolerance 1e-6 (rad, m). Observed 4e-11 after 10 ms
    # and ~3e-8 after the stop impacts from ~0.1 s; the engine's own `simulate` (RK4, without
    # the support) gives our trajectory to 5e-13, so the growth is the engine's limit model vs
    # MuJoCo's iterative solution (tolerance 1e-12) at the impacts, bounded per state by the
    # qacc test above.
    rng = np.random.default_rng(1)
    q0 = start_qpos(SPEC).copy()
    q0[2] += 1.0
    qd0 = np.concatenate([rng.normal(0, 0.2, 3), rng.normal(0, 3, 3), rng.normal(0, 20, 4)])
    ctrl, support = frog_inputs(SPEC, N_STEPS, DEFAULT_DT_S)
    q, _, _ = rollout_frog(frog, q0, qd0, ctrl, support, DEFAULT_DT_S)
    m = mujoco.MjModel.from_xml_string(build_frog_mjcf(FrogSpec(timestep_s=DEFAULT_DT_S)))
    m.opt.tolerance, m.opt.iterations = 1e-12, 200
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    plantaris, limited = m.actuator(ACTUATOR_PLANTARIS).id, 0
    for k in range(N_STEPS):
        d.ctrl[:] = np.insert(ctrl[k], plantaris, 0.0)
        d.xfrc_applied[frog.support_body, 2] = support[k]
        mujoco.mj_step(m, d)
        limited += int(d.nefc > 0)
        assert d.ncon == 0
        np.testing.assert_allclose(q[k + 1], d.qpos, rtol=0, atol=1e-6,
                                   err_msg=f"qpos at step {k + 1}")
    assert limited > 50


def test_engine_frog_takes_off_with_the_mujoco_frog(comparison):
    # Takeoff = start of the first >= 10 ms flight (no contact sphere within 0.1 mm of the
    # floor). Different contact laws (MuJoCo's soft constraints vs Hertz/Hunt-Crossley), same
    # 0.25 ms RK4 step. Tolerance 3 ms: the takeoff is the last graze of the 0.43 g passive foot;
    # MuJoCo's own takeoff moves 62 -> 66.5 -> 68 ms from dt 1 to 0.5 to 0.25 ms, and the
    # engine's moves within 63.5-72 ms for E 1e6-1e7, c 0.5-5 s/m, v_tr 0.01-0.1 m/s
    # (docs/invitro/frog.md §15). Observed 69.0 vs 68.0 ms.
    s = comparison.summary()
    eng, mj = s["engine"], s["mujoco"]
    assert mj["takeoff_time_s"] == pytest.approx(0.068, abs=1e-3)   # the reference run itself
    assert abs(s["takeoff_time_diff_s"]) <= 3e-3, s["takeoff_time_diff_s"]
    # Rises: COM above its start by >= 0.75 x MuJoCo's control-1 height (23.2 mm at 0.25 ms,
    # 20.8 mm at its 1 ms loop step, i.e. X = 17.4 mm); the margin covers MuJoCo's own
    # step dependence (13 %) and the engine's over the contact parameters above (18.5-20.7 mm).
    # Not more than 1.25 x either: a servo-only hop stays weak. Observed ratio 0.89.
    assert 0.75 <= s["jump_height_ratio"] <= 1.25, s["jump_height_ratio"]
    assert eng["jump_height_m"] >= 0.75 * mj["jump_height_m"]


def test_engine_frog_lands_without_deep_penetration(comparison, frog):
    # After the flight the frog touches down (foot ~137 ms) and then falls onto its trunk
    # (~205 ms): the floor force returns and exceeds the weight (an impact). No sphere goes
    # deeper than 1 mm (a third of the smallest contact radius, 2.88 mm) at any time; observed
    # 0.76 mm at the trunk strike and 0.31 mm in stance (MuJoCo at the same step: 2.7 mm when
    # the foot whips into the floor at 136 ms). The rollout itself raises on a non-finite state.
    eng = comparison.engine
    m = eng.metrics()
    assert m.landing_time_s is not None and m.landing_time_s - m.takeoff_time_s > 0.05
    after = eng.time_s >= m.landing_time_s
    assert eng.floor_force_N[after, 2].max() > _weight(frog)
    assert eng.penetration_m.max() < 1e-3
    assert np.isfinite(eng.qpos).all() and np.isfinite(eng.qvel).all()


def test_flight_is_ballistic(comparison, frog):
    # In flight the only external forces are gravity and the forelimb support F(t) (still ~48 %
    # of the weight at takeoff, < 0.2 % at touchdown), so Newton for the whole body gives
    # a_com = (0, 0, -g + F / m). The COM acceleration implied by the engine's qacc (servos,
    # joint-limit impacts of the swinging foot and all internal forces included; computed by a
    # 4th-order stencil along the exact flow, error < 3e-10 g) must equal it to 1e-6 g; the
    # residual contact force in flight is 3e-14 N. Observed 3e-10 g (the stencil's error).
    eng = comparison.engine
    m = eng.metrics()
    flight = np.arange(int(round(m.takeoff_time_s / eng.dt_s)),
                       int(round(m.landing_time_s / eng.dt_s)))
    assert flight.size > 200
    assert np.all(eng.indentation_m[flight] < -1e-4)       # flight: every sphere > 0.1 mm up
    acc = com_acceleration(frog, eng.qpos[flight], eng.qvel[flight], eng.qacc[flight])
    mass = float(np.sum(frog.model.body_mass))
    expected = np.zeros_like(acc)
    expected[:, 2] = -GRAVITY_M_S2 + eng.support_N[flight] / mass
    err = np.abs(acc - expected).max() / GRAVITY_M_S2
    assert err < 1e-6, f"COM acceleration in flight off Newton by {err:.2e} g"
    # Momentum over the whole flight: with the support force held over each step, the exact
    # COM path is z_k = z0 + v0 t_k + sum_{j<k} a_j dt (t_k - t_j - dt/2), x_k = x0 + vx0 t_k.
    # After removing the forced part, a straight-line fit (z0, v0 unknown) must leave residuals
    # < 1e-6 m vertically and < 3e-5 m horizontally (observed 1.8e-7 and 2.7e-6 m: RK4
    # truncation when the foot strikes its hyperextension stop at ~290 rad/s; 1e-4 of the
    # 30 mm forward travel in flight).
    t = eng.time_s[flight] - eng.time_s[flight[0]]
    impulse = expected[:, 2] * eng.dt_s                       # a_j dt, held over step j
    before = np.concatenate([[0.0], np.cumsum(impulse)[:-1]])   # sum_{j<k} a_j dt
    moment = np.concatenate([[0.0], np.cumsum(impulse * (t + eng.dt_s / 2))[:-1]])
    forced = t * before - moment
    for axis, path, tol in ((2, forced, 1e-6), (0, np.zeros_like(t), 3e-5)):
        free = eng.com_world_m[flight, axis] - path
        residual = free - np.polyval(np.polyfit(t, free, 1), t)
        assert np.abs(residual).max() < tol, (axis, np.abs(residual).max())


def test_resting_frog_sinks_a_tenth_of_a_millimetre(frog):
    # Servos holding the crouch, no forelimb support, 0.6 s (two 0.3 s rollouts, one
    # compilation): the frog tips onto foot and snout and rests. Newton: the floor carries the
    # weight (to 1 %; residual creep on the soft joint stops). Each loaded sphere sits at the
    # closed-form Hertz indentation of its own normal force, d = (3 f / (sqrt(2) E sqrt(R)))^(2/3),
    # for depths > 50 um (there OpenSim's smoothing changes the force by < 4e-4: the cf term
    # 3/4 cf / d^2 and the gate (1 - tanh(b_d d)) / 2 = 5e-5; the shallower toe, at 28 um, is
    # 0.4 % off the pure Hertz law through the gate); tolerance 1e-3. The
    # deepest is sub-millimetre and comparable to MuJoCo's rest sink (same test in MuJoCo:
    # 0.116 mm; within a factor 2; observed 0.077 mm).
    q0 = start_qpos(SPEC)
    ctrl = np.tile(q0[[9, 10]], (N_STEPS, 1))
    q, qd, _ = rollout_frog(frog, q0, np.zeros(frog.model.n_v), ctrl, np.zeros(N_STEPS),
                            DEFAULT_DT_S)
    q, qd, _ = rollout_frog(frog, q[-1], qd[-1], ctrl, np.zeros(N_STEPS), DEFAULT_DT_S)
    _, depths, forces, _ = frog_samples(frog, q, qd)  # same shapes as the jump: no recompile
    depth, force = depths[-1], forces[-1]             # (n_c,), (n_c, 3)
    total = force.sum(axis=0)
    assert total[2] == pytest.approx(_weight(frog), rel=0.01)
    assert abs(total[0]) < 0.01 * _weight(frog)
    f_n = force[:, 2]                          # the floor's normal is +z; friction is in x-y
    radius = np.asarray(frog.model.contact.geom_radius)[list(frog.model.contact.contact_geom)]
    loaded = depth > 5e-5
    assert loaded.sum() >= 2
    hertz = (3 * f_n[loaded] / (np.sqrt(2) * FROG_CONTACT["stiffness_N_per_m2"]
                                * np.sqrt(radius[loaded]))) ** (2 / 3)
    np.testing.assert_allclose(depth[loaded], hertz, rtol=1e-3)
    m = mujoco.MjModel.from_xml_string(build_frog_mjcf(SPEC))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("start").id)
    d.ctrl[m.actuator(ACTUATOR_KNEE).id], d.ctrl[m.actuator(ACTUATOR_HIP).id] = q0[9], q0[10]
    for _ in range(600):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    assert floor_force_world_N(m, d)[2] == pytest.approx(_weight(frog), rel=0.01)
    sink_mj = floor_penetration_m(m, d)
    assert depth.max() < 1e-3
    assert 0.5 <= depth.max() / sink_mj <= 2.0, (depth.max(), sink_mj)
