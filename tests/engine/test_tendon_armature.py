"""Tendon armature (engine/tendon_armature.py) vs MuJoCo 4.0: the mass matrix qM, the bias
force qfrc_bias, qacc, qfrc_inverse, the kinetic energy energy[1] and dof_invweight0 at random
states; rollouts against mj_step (Euler, whose implicit dof damping solves with M including the
armature, and RK4); a rollout's gradient with respect to the armature vs central differences;
the refusals.

The model: a free-floating base carrying a hinge, a slide and a ball joint, with a spatial
tendon through five sites on four bodies and the world, whose second branch after a pulley
(divisor 2) runs over two more sites, a fixed tendon over the hinge and the slide, both with
armature; the spatial tendon also has a spring, a damper, a limit and a motor, so the armature
meets every other tendon term. The armatures (0.8 kg, 0.3) are large enough to change qM by
> 10 % and qfrc_bias by > 1 % (asserted, from MuJoCo with the armature set to zero).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine import limits

from gradient_check import value_and_gradient
from mujoco_compare import close_to_mujoco

#: Closed-form quantities (qM, qfrc_bias, energy): roundoff through a few products (observed
#: worst ~1e-15 relative).
ROW_TOL = 1e-12
#: Outputs of a Cholesky solve and of the limit QP (test_limits.py SOLVE_TOL).
SOLVE_TOL = 1e-10

_XML = """<mujoco><option timestep="0.002" integrator="{integrator}" solver="Newton"
  tolerance="1e-15" iterations="200"><flag contact="disable" energy="enable"/></option>
  <compiler angle="radian"/><worldbody><site name="w0" pos="0.1 0.05 0.4"/>
  <body name="base" pos="0 0 0.2"><freejoint/><geom type="box" size="0.05 0.04 0.03"/>
    <site name="b0" pos="0.04 0.02 0.03"/>
    <body name="b1" pos="0.05 0 0"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      <site name="s1" pos="0.1 0.01 0.03"/>
      <body name="b2" pos="0.2 0 0"><joint name="slide" type="slide" axis="1 0 0"
                                           damping="0.5"/>
        <geom type="box" size="0.03 0.02 0.02"/><site name="s2" pos="0.02 -0.01 0.02"/>
        <body name="b3" pos="0.04 0 0">
          <joint name="ball" type="ball" damping="0.002" armature="0.001"/>
          <geom type="capsule" fromto="0 0 0 0.12 0 0" size="0.015"/>
          <site name="s3" pos="0.12 0.01 0"/><site name="s4" pos="0.06 -0.02 0.01"/>
        </body></body></body></body></worldbody>
  <tendon>
    <spatial name="cable" armature="0.8" stiffness="30" damping="0.4" limited="true"
             range="0 0.8"><site site="w0"/><site site="b0"/><site site="s1"/>
      <site site="s2"/><site site="s3"/><pulley divisor="2"/><site site="s1"/>
      <site site="s4"/></spatial>
    <fixed name="coupler" armature="0.3"><joint joint="hinge" coef="0.4"/>
      <joint joint="slide" coef="-2"/></fixed>
  </tendon>
  <actuator><motor tendon="cable" gear="1"/></actuator></mujoco>"""


def _model(integrator="Euler", armature=True):
    m = mujoco.MjModel.from_xml_string(_XML.format(integrator=integrator))
    if not armature:
        m.tendon_armature[:] = 0.0
    return m


def _random_state(m, rng):
    q = np.array(m.qpos0)
    q[:3] += rng.normal(size=3) * 0.1
    for adr in (3, 9):          # the free joint's and the ball's quaternions
        quat = rng.normal(size=4)
        q[adr:adr + 4] = quat / np.linalg.norm(quat)
    q[7], q[8] = rng.uniform(-1.0, 1.0), rng.uniform(-0.05, 0.05)
    return q, rng.normal(size=m.nv) * 2.0


def _mujoco(m, q, qd, ctrl, qdd=None):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
    mujoco.mj_forward(m, d)
    mass = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, mass)
    out = {"qM": mass, "qfrc_bias": d.qfrc_bias.copy(), "qacc": d.qacc.copy(),
           "energy1": d.energy[1], "nefc": d.nefc}
    if qdd is not None:
        d.qacc[:] = qdd
        mujoco.mj_inverse(m, d)
        out["qfrc_inverse"] = d.qfrc_inverse.copy()
    return out


def test_model_keeps_the_tendons_with_armature():
    model = engine.compile_model(_model())
    assert not model.dynamics_unsupported
    arm = model.tendon_armature
    assert arm.tendon_id == (0, 1) and arm.names == ("tendon #0 'cable'", "tendon #1 'coupler'")
    np.testing.assert_array_equal(np.asarray(arm.armature), [0.8, 0.3])
    # four segments before the pulley, one after it (divisor 2)
    assert arm.segment_tendon == (0,) * 5
    np.testing.assert_array_equal(np.asarray(arm.segment_divisor), [1, 1, 1, 1, 2])
    assert engine.compile_model(_model(armature=False)).tendon_armature is None


def test_mass_bias_dynamics_and_energy_match_mujoco():
    """Twelve states: qM, qfrc_bias, qacc (motor on, limit struck in some), qfrc_inverse at a
    random qacc, energy[1], and dof_invweight0 recomputed from the model."""
    m = _model()
    model = engine.compile_model(m)
    bare = _model(armature=False)

    def evaluate(q, qd, ctrl, qdd):
        return (engine.mass_matrix(model, q), engine.bias_forces(model, q, qd),
                engine.forward_dynamics(model, q, qd, ctrl),
                engine.inverse_dynamics(model, q, qd, qdd), engine.kinetic_energy(model, q, qd))

    rng = np.random.default_rng(2)
    states = [_random_state(m, rng) for _ in range(12)]
    q, qd = (np.stack(x) for x in zip(*states))
    ctrl = rng.normal(size=(12, 1)) * 3.0
    qdd = rng.normal(size=(12, m.nv)) * 5.0
    out = jax.jit(jax.vmap(evaluate))(*(jnp.array(x) for x in (q, qd, ctrl, qdd)))
    mass, bias, qacc, inverse, kinetic = (np.asarray(x) for x in out)
    share_m, share_c, worst, struck = [], [], {}, 0
    for s in range(12):
        ref = _mujoco(m, q[s], qd[s], ctrl[s], qdd[s])
        without = _mujoco(bare, q[s], qd[s], ctrl[s])
        tag = f"state {s}"
        struck += ref["nefc"] > 0
        for key, ours, tol in (("qM", mass[s], ROW_TOL), ("qfrc_bias", bias[s], ROW_TOL),
                               ("energy1", kinetic[s], ROW_TOL), ("qacc", qacc[s], SOLVE_TOL),
                               ("qfrc_inverse", inverse[s], SOLVE_TOL)):
            err = close_to_mujoco(f"{tag} {key}", ours, ref[key], tol)
            worst[key] = max(worst.get(key, 0.0), err)
        share_m.append(np.abs(ref["qM"] - without["qM"]).max() / np.abs(ref["qM"]).max())
        share_c.append(np.abs(ref["qfrc_bias"] - without["qfrc_bias"]).max()
                       / np.abs(ref["qfrc_bias"]).max())
    # the armature terms are not negligible, so the comparison discriminates
    assert min(share_m) > 0.1 and min(share_c) > 0.01, (min(share_m), min(share_c))
    assert 0 < struck < 12, f"the tendon limit is struck in {struck} of 12 states"
    close_to_mujoco("dof_invweight0", jax.jit(lambda: limits.invweight0(model))(), m.dof_invweight0,
           ROW_TOL)
    print("worst relative errors", {k: f"{v:.1e}" for k, v in worst.items()},
          f"armature share of qM >= {min(share_m):.2f}, of qfrc_bias >= {min(share_c):.3f}")


@pytest.mark.parametrize("integrator, name", [("Euler", "euler"), ("RK4", "rk4")])
def test_rollout_with_tendon_armature_matches_mj_step(integrator, name):
    """300 steps (0.6 s) under a constant motor force; MuJoCo's Euler makes the dof damping
    implicit with M + dt D, M including the armature. Tolerance 1e-9 (m, quaternion units):
    over the rollout roundoff and the QP's 1e-15 tolerance grow to ~1e-12; without the armature
    the trajectories part by > 1e-2 (asserted)."""
    m = _model(integrator)
    model = engine.compile_model(m)
    q0, qd0 = _random_state(m, np.random.default_rng(7))
    ctrl = np.array([2.0])
    states = engine.rollout(model, jnp.array(q0), jnp.array(qd0),
                            jnp.tile(jnp.array(ctrl), (300, 1)), 2e-3, 300, name)
    runs = {}
    for armature in (True, False):
        mm = _model(integrator, armature)
        d = mujoco.MjData(mm)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
        qpos = []
        for _ in range(300):
            mujoco.mj_step(mm, d)
            qpos.append(d.qpos.copy())
        runs[armature] = np.array(qpos)
    worst = np.abs(np.asarray(states[0][1:]) - runs[True]).max()
    apart = np.abs(runs[False] - runs[True]).max()
    print(f"{integrator}: max |qpos - MuJoCo| {worst:.1e}; without armature {apart:.1e}")
    assert apart > 1e-2, f"the armature moves the trajectory only {apart:.1e}: not a test"
    assert worst <= 1e-9, f"{integrator}: max |qpos - MuJoCo| {worst:.2e}"


def test_rollout_gradient_with_respect_to_the_armature():
    """d loss / d (armature, qd0) through 40 RK4 steps (2 ms) vs central differences
    (eps 1e-6 relative). The dynamics are smooth here (limit not struck; asserted by MuJoCo's
    nefc = 0 along the rollout), so the residual is FD truncation O(eps^2) and roundoff
    O(1e-16 |loss| / eps): tolerance 1e-6 relative."""
    m = _model("RK4")
    m.tendon_limited[:] = 0
    model0 = engine.compile_model(m)
    q0, qd0 = _random_state(m, np.random.default_rng(11))
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    for _ in range(40):
        mujoco.mj_step(m, d)
        assert d.nefc == 0
    q0 = jnp.array(q0)

    def loss(armature, qd0):
        model = dataclasses.replace(model0, tendon_armature=dataclasses.replace(
            model0.tendon_armature, armature=armature))
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros((40, 1)), 2e-3, 40, "rk4")
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    args = (model0.tendon_armature.armature, jnp.array(qd0))
    f, gradient = value_and_gradient(loss, argnums=(0, 1))
    grads = gradient(*args)
    for i, name in enumerate(("armature", "qd0")):
        x, g = np.asarray(args[i]), np.asarray(grads[i])
        fd = []
        for k in range(x.size):
            dx = np.zeros_like(x)
            dx[k] = 1e-6 * max(1.0, abs(x[k]))
            plus, minus = list(args), list(args)
            plus[i], minus[i] = jnp.asarray(x + dx), jnp.asarray(x - dx)
            fd.append((f(*plus) - f(*minus)) / (2 * dx[k]))
        fd = np.array(fd)
        err = np.abs(g - fd).max() / np.abs(fd).max()
        print(f"d loss / d {name}: relative error {err:.1e} vs central differences")
        assert err <= 1e-6, f"d loss / d {name}: relative error {err:.2e}"


def test_armature_on_a_wrapping_tendon_is_refused():
    """MuJoCo's compiler refuses it; an MjModel edited after compilation reaches the engine,
    which names the tendon."""
    xml = _XML.format(integrator="Euler")
    wrapped = xml.replace('<site name="s1" pos="0.1 0.01 0.03"/>',
                          '<site name="s1" pos="0.1 0.01 0.03"/><geom name="cyl" '
                          'type="cylinder" pos="0.15 0 0" size="0.02 0.03" zaxis="0 1 0" '
                          'contype="0" conaffinity="0"/>').replace(
        '<site site="s1"/>\n      <site site="s2"/>', '<site site="s1"/><geom geom="cyl"/>\n'
        '      <site site="s2"/>')
    assert wrapped.count('geom="cyl"') == 1
    with pytest.raises(ValueError, match="geom wrapping not supported by tendon armature"):
        mujoco.MjModel.from_xml_string(wrapped)
    m = mujoco.MjModel.from_xml_string(wrapped.replace('armature="0.8"', ""))
    m.tendon_armature[0] = 0.5
    with pytest.raises(ValueError, match="tendon #0 'cable': armature 0.5 on a tendon that "
                                         "wraps a geom"):
        engine.compile_model(m)
    m = _model()
    m.tendon_armature[1] = -0.1
    with pytest.raises(ValueError, match="tendon #1 'coupler': negative armature -0.1"):
        engine.compile_model(m)
