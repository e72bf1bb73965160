"""Our frog MJCF compiled by MuJoCo: names, pose, mass placement, contacts and the plantaris path."""

import math

import mujoco
import numpy as np
import pytest

from myotwin.invitro.frog import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, BODY_FOOT,
                                  BODY_FORELIMB_SUPPORT, GEOM_FLOOR, GEOM_FOOT, GEOM_SPHERES,
                                  HINGE_JOINTS, KEY_START, SITE_ANKLE_SIDE, SITE_TMT_SIDE,
                                  TENDON_PLANTARIS, FrogSpec, build_frog_mjcf, frog_geometry,
                                  load_frog_model, start_qpos)


@pytest.fixture(scope="module")
def model():
    return load_frog_model(FrogSpec())


def _at_start(model):
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(KEY_START).id)
    mujoco.mj_forward(model, data)
    return data


def _moment_arms_fd(model, data, qpos, h=1e-6):
    """r = -dL/dq of the plantaris for each hinge, by central differences (m)."""
    out = []
    for j in HINGE_JOINTS:
        adr = model.jnt_qposadr[model.joint(j).id]
        lengths = []
        for sign in (1, -1):
            data.qpos[:] = qpos
            data.qpos[adr] += sign * h
            mujoco.mj_fwdPosition(model, data)
            lengths.append(data.ten_length[0])
        out.append(-(lengths[0] - lengths[1]) / (2 * h))
    data.qpos[:] = qpos
    mujoco.mj_fwdPosition(model, data)
    return np.array(out)


def test_compiles_with_the_expected_structure(model):
    assert (model.nq, model.nv, model.nu, model.ntendon) == (11, 10, 3, 1)
    assert model.opt.timestep == 0.001
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    assert model.opt.jacobian == mujoco.mjtJacobian.mjJAC_DENSE
    assert model.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    for name in (ACTUATOR_PLANTARIS, ACTUATOR_KNEE, ACTUATOR_HIP):
        model.actuator(name)
    assert model.actuator_gear[model.actuator(ACTUATOR_PLANTARIS).id, 0] == -1.0
    assert model.body_mass[model.body(BODY_FORELIMB_SUPPORT).id] == 0.0
    # each servo has its own torque limit (docs/invitro/tuning.md: knee 30, hip 4.5 mN m)
    spec = FrogSpec()
    for name, cap in ((ACTUATOR_KNEE, spec.knee_max_torque_Nm),
                      (ACTUATOR_HIP, spec.hip_max_torque_Nm)):
        np.testing.assert_array_equal(model.actuator_forcerange[model.actuator(name).id],
                                      [-cap, cap])
    assert spec.hip_max_torque_Nm < spec.knee_max_torque_Nm


def test_build_is_pure_and_deterministic():
    assert build_frog_mjcf(FrogSpec()) == build_frog_mjcf(FrogSpec())
    assert build_frog_mjcf(FrogSpec(origin_offset_m=0.004)) != build_frog_mjcf(FrogSpec())


def test_mass_and_mass_placement(model):
    geom = frog_geometry(FrogSpec())
    assert mujoco.mj_getTotalmass(model) == pytest.approx(geom.total_mass_kg, rel=1e-12)
    for name, seg in geom.segments.items():
        b = model.body(name)
        # The fix of notes §3.7 item 3: each COM at mid-segment, not at the distal joint.
        np.testing.assert_allclose(b.ipos, [0, 0, seg.length_m / 2], atol=1e-12)
        assert b.mass[0] == pytest.approx(seg.mass_kg, rel=1e-12)


def test_qpos0_keyframe_and_start_qpos_agree(model):
    np.testing.assert_allclose(model.qpos0, start_qpos(FrogSpec()), atol=1e-12)
    np.testing.assert_allclose(model.key(KEY_START).qpos, model.qpos0, atol=1e-8)
    geom = frog_geometry(FrogSpec())
    for j in HINGE_JOINTS:
        adr = model.jnt_qposadr[model.joint(j).id]
        assert model.qpos0[adr] == pytest.approx(geom.start_rotations_rad[j], abs=1e-12)


def test_start_pose_is_the_authors_z_fold(model):
    # notes §2 "Start pose" (5SegRM, length factor 1.592), mm: ankle (-14.90, 12.75),
    # knee (17.68, 12.44), hip (-10.64, 12.75), snout (20.79, 13.09). Above the tarsus our chain
    # has the same orientation, so offsets from the ankle scale by 1.3852 / 1.592. Tolerance
    # 0.05 mm: the notes round to 0.01 mm, and qposInit tilts the authors' foot by -89.955 deg
    # instead of our -90 deg (0.0008 rad over 28 mm = 0.02 mm).
    data = _at_start(model)
    scale = FrogSpec().length_factor / 1.592
    ankle = data.xpos[model.body("shank").id][[0, 2]] * 1e3
    points = {"thigh": (17.68, 12.44), "trunk": (-10.64, 12.75)}
    for body, (x, z) in points.items():
        got = data.xpos[model.body(body).id][[0, 2]] * 1e3 - ankle
        np.testing.assert_allclose(got, (np.array([x, z]) - [-14.90, 12.75]) * scale, atol=0.05)
    snout = data.geom_xpos[model.geom("snout").id][[0, 2]] * 1e3 - ankle
    np.testing.assert_allclose(snout, (np.array([20.79, 13.09]) - [-14.90, 12.75]) * scale, atol=0.05)


def test_start_rests_on_the_floor_without_penetration(model):
    data = _at_start(model)
    floor = model.geom(GEOM_FLOOR).id
    touching = {model.geom(int(c.geom[1])).name for c in data.contact[:data.ncon] if c.dist < 1e-9}
    assert touching == {GEOM_FOOT, GEOM_SPHERES["tmt"]}
    for c in data.contact[:data.ncon]:
        assert floor == c.geom[0]
        assert c.dist > -1e-9, "initial penetration"
    # every other contact geom is at least 4 mm above the floor
    for name in (GEOM_SPHERES["ankle"], GEOM_SPHERES["knee"], GEOM_SPHERES["hip"], "snout",
                 "trunk_contact"):
        g = model.geom(name).id
        dist = mujoco.mj_geomDistance(model, data, floor, g, 0.1, None)
        assert dist > 0.004, name


def test_only_the_floor_pairs_collide(model):
    # In the crouch the thigh, shank and trunk capsules overlap in the plane; none may collide.
    data = _at_start(model)
    assert model.npair == 7
    assert np.all(model.geom_contype == 0) and np.all(model.geom_conaffinity == 0)
    floor = model.geom(GEOM_FLOOR).id
    assert all(floor in (c.geom[0], c.geom[1]) for c in data.contact[:data.ncon])


def test_side_sites_are_outside_their_spheres(model):
    data = _at_start(model)
    for site, joint in ((SITE_ANKLE_SIDE, "ankle"), (SITE_TMT_SIDE, "tmt")):
        g = model.geom(GEOM_SPHERES[joint])
        d = np.linalg.norm(data.site_xpos[model.site(site).id] - data.geom_xpos[g.id])
        assert d == pytest.approx(FrogSpec().side_site_factor * g.size[0], rel=1e-9)


def test_moment_arms_at_the_start_pose(model):
    # r = -dL/dq (STYLE 8). Tension extends ankle and TMT, which extend as q decreases, so
    # r = -(sphere radius) there while the path wraps; the nominal origin gives no knee or hip
    # moment. MuJoCo's ten_J must agree with finite differences (error O(h^2) ~ 1e-12 m).
    data = _at_start(model)
    r_fd = _moment_arms_fd(model, data, model.qpos0.copy())
    r_sphere = frog_geometry(FrogSpec()).joint_sphere_radius_m
    np.testing.assert_allclose(r_fd, [-r_sphere, -r_sphere, 0.0, 0.0], atol=1e-9)
    ten_j = np.zeros(model.nv)
    mujoco.mju_sparse2dense(ten_j.reshape(1, -1), data.ten_J, model.ten_J_rownnz,
                            model.ten_J_rowadr, model.ten_J_colind)
    np.testing.assert_allclose(-ten_j[6:], r_fd, atol=1e-9)


def test_mtu_length_at_start_and_origin_shift(model):
    data = _at_start(model)
    length0 = data.ten_length[model.tendon(TENDON_PLANTARIS).id]
    assert length0 * 1e3 == pytest.approx(58.18, abs=0.01)
    # The femur lies along the tibia in the crouch, so moving the origin d along the femur
    # towards the hip moves it about d closer to the ankle wrap point: L0 drops by d (to 2 %,
    # the path is inclined by the sphere radius over the tibia length).
    shifted = load_frog_model(FrogSpec(origin_offset_m=0.004))
    d2 = _at_start(shifted)
    assert (length0 - d2.ten_length[0]) == pytest.approx(0.004, rel=0.02)


@pytest.mark.parametrize("joint", ["tmt", "ankle"])
def test_path_is_continuous_over_the_joint_range(model, joint):
    # Sweep one hinge over its whole range (others at the start pose): no wrap flips. A flip
    # makes L jump by millimetres (notes §6: 8-19 mm per step with on-surface side-sites); a
    # continuous path changes by at most |r| dq with |r| <= 6 mm here.
    spec = FrogSpec()
    data = mujoco.MjData(model)
    adr = model.jnt_qposadr[model.joint(joint).id]
    lo, hi = spec.range_rad(joint)
    qs = np.linspace(lo, hi, 2001)
    lengths = []
    for q in qs:
        data.qpos[:] = model.qpos0
        data.qpos[adr] = q
        mujoco.mj_fwdPosition(model, data)
        lengths.append(data.ten_length[0])
    dl = np.abs(np.diff(lengths))
    assert dl.max() <= 0.006 * (qs[1] - qs[0]) * 1.01
    # while flexed the path wraps the sphere: |r| = sphere radius
    r = -np.gradient(lengths, qs)
    flexed = qs > 0.0
    r_sphere = frog_geometry(spec).joint_sphere_radius_m
    np.testing.assert_allclose(r[flexed][1:-1], -r_sphere, atol=1e-6)


def test_insertion_on_the_foot_crosses_both_ankle_and_tmt(model):
    # Seed Eqs. 5-6: the muscle force makes ankle AND TMT torque, so the path must end distal of
    # the TMT (on the foot), not on the proximal tarsals.
    site = model.site("plantaris_insertion")
    assert model.site_bodyid[site.id] == model.body(BODY_FOOT).id


def _knee_moment_arm(spec, qpos):
    m = load_frog_model(spec)
    d = mujoco.MjData(m)
    return _moment_arms_fd(m, d, qpos)[2]


def test_shifted_origin_is_a_knee_flexor_once_the_knee_opens():
    # Knee extension is +q, so a flexor has r = -dL/dq < 0. Postures from a muscle-absent jump
    # (origin does not matter without tension).
    from myotwin.invitro.frog import rollout_open_loop

    spec0 = FrogSpec()
    roll = rollout_open_loop(load_frog_model(spec0), spec0, duration_s=0.12)
    for k in (0, 30, 60, 90, 110):
        assert abs(_knee_moment_arm(spec0, roll.qpos[k])) < 1e-9
    from myotwin.invitro.conditions import SHIFTED_ORIGIN_OFFSET_M

    for offset in (SHIFTED_ORIGIN_OFFSET_M, 0.004, 0.008, 0.012):
        spec = FrogSpec(origin_offset_m=offset)
        r = [_knee_moment_arm(spec, roll.qpos[k]) for k in (45, 60, 90, 110)]
        assert all(x < 0 for x in r), (offset, r)
        # In the crouch (knee folded to 0.002 rad) the on-axis origin lies just below the line to
        # the top of the ankle sphere: a small extensor arm, 0 < r < 0.3 offset (see frog.md).
        assert 0 < _knee_moment_arm(spec, roll.qpos[0]) < 0.3 * offset


def test_servo_targets_of_the_whole_jump_lie_inside_the_ranges():
    from myotwin.invitro.frog import servo_targets_rad

    spec = FrogSpec()
    for t in np.linspace(0.0, 0.3, 301):
        knee, hip = servo_targets_rad(float(t), spec)
        lo, hi = spec.range_knee_rad
        assert lo < knee < hi
        lo, hi = spec.range_hip_rad
        assert lo < hip < hi


def test_range_not_containing_the_start_is_rejected():
    with pytest.raises(ValueError, match="range_ankle_rad"):
        build_frog_mjcf(FrogSpec(range_ankle_rad=(-0.6, 1.2)))


def test_tilt_angle_is_small():
    assert math.degrees(frog_geometry(FrogSpec()).foot_tilt_rad) == pytest.approx(5.3, abs=0.1)


def test_forelimb_force_acts_at_the_support_body_origin(model):
    # xfrc_applied acts at xipos; the support body's explicit zero-mass inertial puts that at its
    # origin (without it MuJoCo 4.0 used the body's pos offset, twice as far along the trunk).
    data = _at_start(model)
    body = model.body(BODY_FORELIMB_SUPPORT).id
    np.testing.assert_allclose(data.xipos[body], data.xpos[body], atol=1e-15)
    base = data.qfrc_smooth.copy()
    data.xfrc_applied[body, 2] = 1.0
    mujoco.mj_forward(model, data)
    expected = np.zeros(model.nv)
    mujoco.mj_applyFT(model, data, np.array([0.0, 0.0, 1.0]), np.zeros(3), data.xpos[body], body,
                      expected)
    np.testing.assert_allclose(data.qfrc_smooth - base, expected, atol=1e-12)
