"""The conventions of docs/conventions.md, each checked against MuJoCo or a closed form."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from myotwin.invitro.calibration import Calibration
from myotwin.invitro.frog.mjcf import HINGE_JOINTS, JOINT_ROOT, load_frog_model, start_qpos
from myotwin.invitro.frog.plant import MujocoFrogPlant
from myotwin.invitro.frog.spec import FrogSpec
from myotwin.invitro.inertial_load import InertialLoadPlant


def test_quaternions_are_w_first():
    # A rotation by a about +y is (cos a/2, 0, sin a/2, 0) in (w, x, y, z): MuJoCo's own
    # converter is the reference.
    a = 0.3
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, np.array([0.0, 1.0, 0.0]), a)
    assert q == pytest.approx([math.cos(a / 2), 0.0, math.sin(a / 2), 0.0], abs=1e-15)
    # and the frog's start root quaternion is stored in that order (a pure pitch about y)
    qs = start_qpos(FrogSpec())[3:7]
    assert qs[1] == 0.0 and qs[3] == 0.0, "root quaternion: x and z parts of a pitch about y"
    assert qs[0] == pytest.approx(math.sqrt(1 - qs[2] ** 2), abs=1e-15), "w is first"


def test_moment_arm_is_minus_dL_dq():
    # r = -dL/dq: compare the plant's moment arms with central differences of MuJoCo's
    # tendon length. Step 1e-6 rad: truncation O(h^2 L''') ~ 1e-14 m, rounding ~1e-11 m.
    plant = MujocoFrogPlant(FrogSpec(origin_offset_m=0.006))
    m, d = plant.model, plant.data
    plant.reset()
    d.qpos[m.jnt_qposadr[m.joint("knee").id]] += 0.8     # open the knee: flexor arm < 0
    mujoco.mj_fwdPosition(m, d)
    r = plant.moment_arms_m()
    h = 1e-6
    for i, name in enumerate(HINGE_JOINTS):
        adr = m.jnt_qposadr[m.joint(name).id]
        lengths = []
        for s in (+1, -1):
            d2 = mujoco.MjData(m)
            d2.qpos[:] = d.qpos
            d2.qpos[adr] += s * h
            mujoco.mj_fwdPosition(m, d2)
            lengths.append(d2.ten_length[0])
        dL_dq = (lengths[0] - lengths[1]) / (2 * h)
        assert r[i] == pytest.approx(-dL_dq, abs=1e-9), f"moment arm of {name}"
    assert r[0] < 0 and r[1] < 0, "the plantaris extends the TMT and ankle: r < 0 there"
    assert r[2] < 0, "a shifted origin flexes the opened knee: r < 0"


def test_positive_tension_shortens_a_free_load_and_extends_the_ankle():
    load = InertialLoadPlant()
    load.set_muscle_tension(1.0)
    load.step()
    assert load.mtu_length_m() < load.length0_m, "tension shortens the MTU of a free load"
    plant = MujocoFrogPlant()
    m, d = plant.model, plant.data
    plant.set_muscle_tension(1.0)
    plant.step()
    ankle_dof = m.jnt_dofadr[m.joint("ankle").id]
    assert d.qfrc_actuator[ankle_dof] < 0, "tension: extension torque (q decreases) at the ankle"
    assert d.qfrc_actuator[ankle_dof] == pytest.approx(plant.moment_arms_m()[1] * 1.0, rel=1e-2)


def test_lever_and_force_voltages_grow_with_length_and_tension():
    cal = Calibration()
    assert cal.length_change_to_volts(1e-3) > cal.length_change_to_volts(0.0) == \
        cal.length_offset_V
    assert cal.newtons_to_force_volts(1.0) > cal.newtons_to_force_volts(0.0) == cal.force_zero_V


def test_gravity_is_minus_z():
    m = load_frog_model(FrogSpec())
    assert list(m.opt.gravity) == [0.0, 0.0, -9.81]
    assert m.joint(JOINT_ROOT).type == mujoco.mjtJoint.mjJNT_FREE
