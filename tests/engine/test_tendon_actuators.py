"""Actuators with a spatial- or fixed-tendon transmission vs MuJoCo 4.0: actuator_length, the
dense actuator_moment, actuator_force, qfrc_actuator and qacc.

MuJoCo (mj_transmission): actuator_length = gear * ten_length, actuator_moment = gear * ten_J,
velocity = moment . qvel, qfrc_actuator = moment^T force. Models: the in vitro-VR frog
(`plantaris` motor on its spatial tendon over two sphere wraps with side sites, gear -1; plus
the knee and hip position servos on joints) and MyoSuite's myoelbow (6 tendons over wrapping
cylinders) with its muscle actuators turned into fixed-gain/affine-bias `<general>` actuators
on the same tendons (MuJoCo muscles themselves stay unsupported by the engine; the muscle
package simulates them, `musculoskeletal.mjcf`)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.invitro.frog.mjcf import (ACTUATOR_PLANTARIS, TENDON_PLANTARIS, build_frog_mjcf)
from shared_reference import SHARED

MYOSUITE = SHARED / "reference" / "mujoco" / "myosuite"
ELBOW = MYOSUITE / "myoelbow_2dof6muscles_nomesh.xml"

# Path lengths/Jacobians are MuJoCo's formulas (myotwin.paths, tested there); the wraps'
# tangent points are closed forms on both sides, so the residual is roundoff (~1e-15). qacc
# adds the joint-limit QP (MuJoCo Newton at tolerance 1e-12 on the frog).
REL_TOL = 1e-10


def _rel(ours, ref) -> float:
    ours, ref = np.asarray(ours), np.asarray(ref)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300))


def _dense_moment(m, d) -> np.ndarray:
    moment = np.zeros((m.nu, m.nv))
    mujoco.mju_sparse2dense(moment, d.actuator_moment, d.moment_rownnz, d.moment_rowadr,
                            d.moment_colind)
    return moment


def _outputs(model):
    """One jitted function of (q, qd, ctrl) returning every compared quantity."""
    return jax.jit(lambda q, qd, u: (
        engine.actuator_length(model, q), engine.actuator_moment(model, q),
        engine.actuator_force(model, q, qd, u), engine.actuator_forces(model, q, qd, u),
        engine.forward_dynamics(model, q, qd, u)))


def _check_against_mujoco(m, fns, d, label: str):
    mujoco.mj_forward(m, d)
    length, moment, force, qfrc, qacc = fns(d.qpos, d.qvel, d.ctrl)
    for name, ours, ref in (("actuator_length", length, d.actuator_length),
                            ("actuator_moment", moment, _dense_moment(m, d)),
                            ("actuator_force", force, d.actuator_force),
                            ("qfrc_actuator", qfrc, d.qfrc_actuator),
                            ("qacc", qacc, d.qacc)):
        err = _rel(ours, ref)
        assert err <= REL_TOL, f"{label} {name}: relative error {err:.2e} vs MuJoCo"


def _frog_model():
    m = mujoco.MjModel.from_xml_string(build_frog_mjcf())
    # MuJoCo's floor contacts are constraints, the engine's are a smooth law: compare without
    # contact. Tight solver so MuJoCo's joint-limit forces are converged.
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    m.opt.tolerance = 1e-12
    m.opt.iterations = 200
    return m


def test_frog_plantaris_motor_matches_mujoco():
    m = _frog_model()
    model = engine.compile_model(m)
    assert model.dynamics_unsupported == ()  # the tendon motor is supported now
    a = m.actuator(ACTUATOR_PLANTARIS).id
    assert model.actuator_tendon[a] == m.tendon(TENDON_PLANTARIS).id
    assert m.actuator_gear[a, 0] == -1.0
    fns = _outputs(model)
    rng = np.random.default_rng(0)
    wrap_counts = set()
    for k in range(8):
        d = mujoco.MjData(m)
        d.qpos[:] = m.qpos0
        for j in range(1, m.njnt):  # the four hinges anywhere in their ranges
            d.qpos[m.jnt_qposadr[j]] = rng.uniform(*m.jnt_range[j])
        quat = np.array([1.0, *rng.normal(size=3) * 0.2])
        d.qpos[3:7] = quat / np.linalg.norm(quat)
        d.qvel[:] = rng.normal(size=m.nv)
        d.ctrl[:] = rng.uniform(-1, 1, size=m.nu)
        d.ctrl[a] = rng.uniform(0.0, 2.0)  # tension in N
        mujoco.mj_forward(m, d)
        wrap_counts.add(int(d.ten_wrapnum[0]))
        _check_against_mujoco(m, fns, d, f"frog state {k}")
        assert abs(d.actuator_force[a]) > 1e-3  # the plantaris pulls
    # both wraps active (7 path points), one (5), none (3): at least two of these seen
    assert len(wrap_counts) >= 2, f"wrap configurations seen: {wrap_counts}"


def test_frog_tension_is_moment_arms_times_force():
    """The plantaris' generalized force is r F with the paths' moment arms r = -ten_J^T
    (myotwin.moment_arms) and tension F = ctrl (motor gear -1), i.e. qfrc = -gear J_L^T F."""
    m = _frog_model()
    model = engine.compile_model(m)
    a = m.actuator(ACTUATOR_PLANTARIS).id
    path = model.paths.path_names.index(TENDON_PLANTARIS)
    ctrl = np.zeros(m.nu)
    ctrl[a] = 0.8
    import myotwin

    fns = jax.jit(lambda q: (engine.actuator_forces(model, q, jnp.zeros(m.nv), ctrl),
                             myotwin.moment_arms(model, q)[:, path]))
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0
    d.ctrl[:] = ctrl
    mujoco.mj_forward(m, d)
    qfrc, r = (np.asarray(x) for x in fns(jnp.asarray(d.qpos)))
    # the servos add their bias kp (0 - gear q) at ctrl 0: compare on the dofs they do not drive
    servo_dofs = [int(m.jnt_dofadr[m.actuator_trnid[i, 0]]) for i in range(m.nu) if i != a]
    rest = np.setdiff1d(np.arange(m.nv), servo_dofs)
    err = _rel(qfrc[rest], 0.8 * r[rest])
    assert err <= REL_TOL, f"qfrc vs r F: relative error {err:.2e}"
    assert _rel(qfrc, d.qfrc_actuator) <= REL_TOL  # and MuJoCo agrees on the whole vector


def _elbow_with_general_actuators():
    """myoelbow with each muscle replaced by a <general> actuator on the same tendon: fixed
    gain (a negative gain pulls for ctrl > 0), affine bias (b1 length, b2 velocity)."""
    spec = mujoco.MjSpec.from_file(str(ELBOW))
    rng = np.random.default_rng(5)
    for act in spec.actuators:
        act.dyntype = mujoco.mjtDyn.mjDYN_NONE
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        gain, bias = np.zeros(10), np.zeros(10)
        gain[0] = -rng.uniform(50, 300)
        bias[:3] = [rng.uniform(-5, 5), rng.uniform(-50, 50), rng.uniform(-5, 0)]
        act.gainprm, act.biasprm = gain, bias
        act.gear = [rng.uniform(0.5, 2.0), 0, 0, 0, 0, 0]
    m = spec.compile()
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    return m


@pytest.mark.skipif(not ELBOW.exists(), reason="MyoSuite reference models absent")
def test_myosuite_elbow_tendon_actuators_match_mujoco():
    original = engine.compile_model(mujoco.MjModel.from_xml_path(str(ELBOW)))
    assert len(original.dynamics_unsupported) == 6
    assert all("MuJoCo muscle actuator" in p for p in original.dynamics_unsupported)
    m = _elbow_with_general_actuators()
    model = engine.compile_model(m)
    assert model.dynamics_unsupported == ()
    assert model.actuator_tendon == tuple(int(t) for t in m.actuator_trnid[:, 0])
    fns = _outputs(model)
    rng = np.random.default_rng(1)
    for k in range(4):
        d = mujoco.MjData(m)
        for j in range(m.njnt):
            lo, hi = m.jnt_range[j]
            d.qpos[m.jnt_qposadr[j]] = rng.uniform(lo, hi)
        d.qvel[:] = rng.normal(size=m.nv)
        d.ctrl[:] = rng.uniform(0, 1, size=m.nu)
        _check_against_mujoco(m, fns, d, f"elbow state {k}")


def test_fixed_tendon_actuators_match_mujoco():
    """Actuators on fixed (joint) tendons: a motor (gear 2) and a position servo (kp, kv) on
    tendons coupling three hinges and a slide, next to a spatial-tendon motor and a joint
    motor, a ball joint in the chain (its dofs outside the fixed tendons). MuJoCo: length
    g sum_i c_i qpos_i, moment g c, velocity moment . qvel; 8 random states."""
    xml = """<mujoco><option><flag contact="disable"/></option><compiler angle="radian"/>
      <worldbody><site name="s0" pos="0.1 0.05 1.1"/>
      <body pos="0 0 1"><joint name="h1" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body pos="0.3 0 0"><joint name="b" type="ball"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
          <body pos="0.2 0 0"><joint name="h2" type="hinge" axis="1 0 0"/>
            <geom type="box" size="0.05 0.03 0.02"/><site name="s1" pos="0.05 0 0.02"/>
            <body pos="0.1 0 0"><joint name="sl" type="slide" axis="1 0 0"/>
              <geom type="sphere" size="0.03"/></body></body></body></body></worldbody>
      <tendon><fixed name="fx"><joint joint="h1" coef="0.5"/><joint joint="h2" coef="-1.5"/>
          <joint joint="sl" coef="2"/></fixed>
        <fixed name="fy"><joint joint="h2" coef="1"/><joint joint="h1" coef="0.25"/></fixed>
        <spatial name="sp"><site site="s0"/><site site="s1"/></spatial></tendon>
      <actuator><motor name="m_fx" tendon="fx" gear="2"/>
        <position name="p_fy" tendon="fy" kp="30" kv="2"/>
        <motor name="m_sp" tendon="sp" gear="-1"/><motor name="m_h1" joint="h1"/></actuator>
      </mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model = engine.compile_model(m)
    assert model.dynamics_unsupported == ()
    assert model.actuator_fixed_tendon == (0, 1, -1, -1) and model.actuator_tendon[2] == 2
    fns = _outputs(model)
    rng = np.random.default_rng(3)
    for k in range(8):
        d = mujoco.MjData(m)
        d.qpos[:] = m.qpos0
        d.qpos[[0, 5, 6]] = rng.uniform(-1, 1, 3)
        quat = rng.normal(size=4)
        d.qpos[1:5] = quat / np.linalg.norm(quat)
        d.qvel[:] = rng.normal(size=m.nv)
        d.ctrl[:] = rng.uniform(-1, 1, size=m.nu)
        _check_against_mujoco(m, fns, d, f"fixed-tendon state {k}")
        assert np.abs(d.actuator_force[:2]).min() > 1e-3


def test_unsupported_tendon_transmissions_named():
    """Tendon-level actuatorfrcrange and MuJoCo muscles stay unsupported, each with a message
    naming the actuator and the reason; a fixed-tendon motor is supported."""
    xml = """<mujoco><worldbody>
      <site name="s0" pos="0.2 0.1 1.1"/>
      <body pos="0 0 1"><joint name="h" type="hinge" axis="0 1 0"/><geom size="0.1"/>
        <site name="s1" pos="0.1 0.05 -0.4"/></body></worldbody>
      <tendon><fixed name="fx"><joint joint="h" coef="0.5"/></fixed>
        <spatial name="sp" actuatorfrclimited="true" actuatorfrcrange="-1 1">
          <site site="s0"/><site site="s1"/></spatial>
        <spatial name="sp2"><site site="s0"/><site site="s1"/></spatial></tendon>
      <actuator><motor name="on_fixed" tendon="fx"/><motor name="on_limited" tendon="sp"/>
        <muscle name="mus" tendon="sp2"/></actuator></mujoco>"""
    model = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    msgs = "\n".join(model.dynamics_unsupported)
    assert "'on_fixed'" not in msgs
    assert "'on_limited'" in msgs and "actuatorfrcrange" in msgs
    assert "'mus': MuJoCo muscle actuator" in msgs
    with pytest.raises(ValueError, match="on_limited"):
        engine.actuator_forces(model, jnp.zeros(1), jnp.zeros(1), jnp.zeros(3))
    # an external actuator (the muscle package's) is not listed; an id beyond n_u is refused
    external = engine.compile_model(mujoco.MjModel.from_xml_string(xml), external_actuators=[2])
    assert "'mus'" not in "\n".join(external.dynamics_unsupported)
    with pytest.raises(ValueError, match=r"external_actuators \[3\]: the model has 3 actuators"):
        engine.compile_model(mujoco.MjModel.from_xml_string(xml), external_actuators=[3])
    for bad in ([0.5], [True], ["1"], 1):     # ids 0, 1 and 1 before; 1: a bare TypeError
        with pytest.raises(ValueError, match=re.escape(
                "compile_model: external_actuators must be a list of actuator ids (integers), "
                f"got {bad!r}")):
            engine.compile_model(mujoco.MjModel.from_xml_string(xml), external_actuators=bad)
