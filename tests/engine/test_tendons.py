"""Tendon springs, dampers and limits (engine/tendons.py) vs MuJoCo 4.0: qfrc_passive, the
spring energy (energy[0]), the limit rows (efc_*) after the joints' rows, qacc and
qfrc_inverse, and rollouts with tendon limits struck (MuJoCo's Euler, tendon damping explicit
and dof damping implicit; RK4); a rollout's gradient through them vs central differences; the
unsupported tendon properties named.

The model: a chain of three hinges, a slide and a ball, with a straight spatial tendon (spring
with a dead band, damper, limit with a margin), a cylinder-wrapped one with a side site and a
via site (spring at its qpos_spring length, damper, limit), a fixed tendon over three joints
(spring, damper, limit) and a plain tendon that the engine keeps out of `Model.tendons`; the
tendon limits are set so that about half the random states violate one.

MuJoCo runs with solver="Newton", tolerance=1e-15, iterations=200 and contact disabled, so its
solver stops at the optimum of the same convex problem we solve exactly (test_limits.py)."""

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

#: Closed-form quantities (passive forces, energies, rows): roundoff of path lengths and
#: Jacobians through a few products (observed worst ~1e-15).
ROW_TOL = 1e-12
#: Outputs of the constraint solve with A + R (test_limits.py SOLVE_TOL).
SOLVE_TOL = 1e-10

_XML = """<mujoco><option timestep="0.002" integrator="{integrator}" solver="Newton"
  tolerance="1e-15" iterations="200"><flag contact="disable" energy="enable"/></option>
  <compiler angle="radian"/><worldbody><site name="s0" pos="0.05 0.02 1.1"/>
  <body name="b1" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0" damping="0.3"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    <site name="s1" pos="0.15 0.01 0.04"/>
    <geom name="cyl" type="cylinder" pos="0.3 0 0" size="0.04 0.05" zaxis="0 1 0"
          contype="0" conaffinity="0"/>
    <site name="side" pos="0.3 0 0.08"/>
    <body name="b2" pos="0.3 0 0"><joint name="j2" type="hinge" axis="0 1 0" range="-1.2 1.0"/>
      <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025"/>
      <site name="s2" pos="0.12 -0.01 0.03"/>
      <body name="b3" pos="0.25 0 0"><joint name="j3" type="slide" axis="1 0 0"/>
        <geom type="box" size="0.03 0.02 0.02"/><site name="s3" pos="0.02 0 0.02"/>
        <body name="b4" pos="0.05 0 0"><joint name="j4" type="ball"/>
          <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.02"/>
          <site name="s4" pos="0.1 0.01 0"/></body></body></body></body></worldbody>
  <tendon>
    <spatial name="straight" stiffness="200" springlength="0.55 0.62" damping="2"
             limited="true" range="0 1" margin="0.01"><site site="s0"/><site site="s3"/>
    </spatial>
    <spatial name="wrapped" stiffness="100" damping="1" limited="true" range="0 1">
      <site site="s1"/><geom geom="cyl" sidesite="side"/><site site="s2"/><site site="s4"/>
    </spatial>
    <fixed name="fx" stiffness="50" damping="0.5" limited="true" range="-1 1">
      <joint joint="j1" coef="0.5"/><joint joint="j2" coef="-0.3"/><joint joint="j3" coef="1"/>
    </fixed>
    <spatial name="plain"><site site="s0"/><site site="s2"/></spatial>
  </tendon></mujoco>"""

_LIMITED = ("straight", "wrapped", "fx")


def _random_state(m, rng):
    q = np.array(m.qpos0)
    q[:3] = rng.uniform([-1.0, -1.1, -0.08], [1.0, 0.9, 0.08])
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    return q, rng.normal(size=m.nv) * 1.5


def _model(integrator="Euler", rng=None):
    """The MjModel with each limited tendon's range set around the middle of its lengths over
    random states (so that about half of them violate a side)."""
    m = mujoco.MjModel.from_xml_string(_XML.format(integrator=integrator))
    rng = np.random.default_rng(0) if rng is None else rng
    d = mujoco.MjData(m)
    lengths = []
    for _ in range(200):
        d.qpos[:], _ = _random_state(m, rng)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_tendon(m, d)
        lengths.append(d.ten_length.copy())
    lengths = np.array(lengths)
    for name in _LIMITED:
        t = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_TENDON, name)
        m.tendon_range[t] = np.percentile(lengths[:, t], [25, 75])
    return m


def _close(name, ours, ref, tol, scale=0.0):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} vs MuJoCo {ref.shape}"
    err = np.abs(ours - ref).max(initial=0.0) / max(np.abs(ref).max(initial=0.0), scale, 1e-300)
    assert err <= tol, f"{name}: relative error {err:.3e} > {tol:g} vs MuJoCo"
    return err


def test_model_keeps_the_tendons_with_springs_dampers_or_limits():
    model = engine.compile_model(_model())
    assert not model.dynamics_unsupported
    ten = model.tendons
    assert ten.tendon_id == (0, 1, 2) and ten.spatial == (True, True, False)
    assert ten.limited == (True, True, True)
    np.testing.assert_array_equal(np.asarray(ten.fixed_coef_v[2]), [0.5, -0.3, 1, 0, 0, 0])


def test_passive_forces_energy_rows_and_dynamics_match_mujoco():
    """Twelve states: qfrc_passive, energy[0] (gravity + joint and tendon springs), the
    instantiated limit rows in MuJoCo's order (joint j2, then the tendons), qacc, and
    qfrc_inverse at a random qacc."""
    m = _model()
    model = engine.compile_model(m)

    def evaluate(q, qd, qdd):
        return (engine.passive_forces(model, q, qd), engine.potential_energy(model, q),
                limits.limit_rows(model, q, qd), engine.forward_dynamics(model, q, qd,
                                                                        jnp.zeros(0)),
                engine.inverse_dynamics(model, q, qd, qdd))

    rng = np.random.default_rng(1)
    states = [_random_state(m, rng) for _ in range(12)]
    q, qd = (jnp.array(np.stack(x)) for x in zip(*states))
    qdd = jnp.array(rng.normal(size=(len(states), m.nv)) * 5.0)
    passive, energy, rows, qacc, inverse = jax.jit(jax.vmap(evaluate))(q, qd, qdd)
    tendon_rows = 0
    for s in range(len(states)):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q[s], qd[s]
        mujoco.mj_forward(m, d)
        tag = f"state {s}"
        _close(f"{tag} qfrc_passive", passive[s], d.qfrc_passive, ROW_TOL)
        assert np.abs(d.qfrc_passive).max() > 1.0   # the tendon forces are not negligible
        _close(f"{tag} energy[0]", energy[s], d.energy[0], ROW_TOL)
        on = np.asarray(rows.instantiated[s])
        assert on.sum() == d.nefc, f"{tag}: {on.sum()} rows vs MuJoCo nefc {d.nefc}"
        tendon_rows += int(np.sum(d.efc_type == mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON))
        _close(f"{tag} efc_pos", rows.dist[s][on], d.efc_pos, ROW_TOL)
        _close(f"{tag} efc_J", rows.jac[s][on], d.efc_J.reshape(d.nefc, m.nv), ROW_TOL)
        _close(f"{tag} efc_aref", rows.aref[s][on], d.efc_aref, ROW_TOL)
        _close(f"{tag} efc_R", rows.regularizer[s][on], d.efc_R, ROW_TOL)
        _close(f"{tag} qacc", qacc[s], d.qacc, SOLVE_TOL)
        d.qacc[:] = qdd[s]
        mujoco.mj_inverse(m, d)
        _close(f"{tag} qfrc_inverse", inverse[s], d.qfrc_inverse, SOLVE_TOL)
    assert tendon_rows >= 8, f"only {tendon_rows} tendon limit rows over the states"


@pytest.mark.parametrize("integrator, name", [("Euler", "euler"), ("RK4", "rk4")])
def test_rollout_with_tendon_limits_struck_matches_mj_step(integrator, name):
    """400 steps (0.8 s) from a state that drives the tendons into their limits; MuJoCo's
    Euler makes the dof damping implicit and the tendon damping explicit. Tolerance 1e-9
    (rad, m): over the rollout the solver's 1e-15 tolerance and roundoff grow to ~1e-12."""
    m = _model(integrator)
    model = engine.compile_model(m)
    rng = np.random.default_rng(5)
    q0, qd0 = _random_state(m, rng)
    qd0 = qd0 * 2.0
    states = engine.rollout(model, jnp.array(q0), jnp.array(qd0), jnp.zeros((400, 0)), 2e-3,
                            400, name)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    worst, struck = 0.0, 0
    for k in range(400):
        mujoco.mj_step(m, d)
        struck += int(np.sum(d.efc_type == mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON))
        worst = max(worst, np.abs(np.asarray(states[0][k + 1]) - d.qpos).max())
    assert struck >= 20, f"tendon limits active in only {struck} row-steps"
    assert worst <= 1e-9, f"{integrator}: max |qpos - MuJoCo| {worst:.2e}"


def test_euler_step_keeps_tendon_damping_explicit_as_mujoco():
    """One 2 ms step of MuJoCo's Euler: dof damping implicit, tendon damping explicit. The
    case discriminates: MuJoCo's implicitfast, which also makes the tendon dampers implicit,
    lands 0.09 m/s away in qvel (|qvel| ~5); ours is within SOLVE_TOL of Euler (observed
    2e-14 relative)."""
    m = _model("Euler")
    model = engine.compile_model(m)
    q0, qd0 = _random_state(m, np.random.default_rng(3))
    q, qd = engine.rollout(model, jnp.array(q0), jnp.array(qd0), jnp.zeros((1, 0)), 2e-3, 1,
                           "euler")
    qvel = {}
    for integrator in (mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_IMPLICITFAST):
        m.opt.integrator = integrator
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q0, qd0
        mujoco.mj_step(m, d)
        qvel[integrator] = d.qvel.copy()
    euler, implicit = qvel[mujoco.mjtIntegrator.mjINT_EULER], qvel[
        mujoco.mjtIntegrator.mjINT_IMPLICITFAST]
    gap = np.abs(implicit - euler).max() / np.abs(euler).max()
    assert gap >= 1e-3, f"implicit tendon damping moves qvel only {gap:.1e}: not a test"
    err = _close("qvel after one Euler step", qd[1], euler, SOLVE_TOL)
    print(f"qvel vs Euler {err:.1e}, Euler vs implicitfast {gap:.1e} (relative)")


def test_forward_dynamics_evaluates_each_tendon_path_once():
    """Passive forces, limit rows and tendon-transmission actuators each ask for the spatial
    tendons' lengths and Jacobians; XLA's common-subexpression pass must merge them. Counted
    on the optimised HLO by the cylinder wrap's atan2 ops: the forward dynamics with springs,
    dampers, limits and a motor on each spatial tendon has those of one
    `tendon_lengths_and_jacobians` plus those of the same skeleton with no tendon properties
    (the ball joint's spring term), not three times as many."""
    motors = '<actuator><motor tendon="straight"/><motor tendon="wrapped"/></actuator>'
    xml = _XML.format(integrator="Euler").replace("</tendon></mujoco>",
                                                  f"</tendon>{motors}</mujoco>")
    full = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    bare_m = mujoco.MjModel.from_xml_string(_XML.format(integrator="Euler"))
    bare_m.tendon_stiffness[:] = bare_m.tendon_damping[:] = 0.0
    bare_m.tendon_limited[:] = 0
    bare = engine.compile_model(bare_m)
    assert full.tendons is not None and bare.tendons is None

    def atan2_ops(fn, *args):
        return jax.jit(fn).lower(*args).compile().as_text().count(" atan2(")

    q, qd = jnp.array(bare_m.qpos0), jnp.zeros(bare_m.nv)
    path = atan2_ops(lambda q: engine.tendon_lengths_and_jacobians(full, q), q)
    skeleton = atan2_ops(lambda q, qd: engine.forward_dynamics(bare, q, qd, jnp.zeros(0)), q,
                         qd)
    whole = atan2_ops(lambda q, qd: engine.forward_dynamics(full, q, qd, jnp.ones(2)), q, qd)
    assert path > 0
    assert whole == path + skeleton, (whole, path, skeleton)


def test_unsupported_tendon_properties_are_named():
    xml = _XML.format(integrator="Euler").replace(
        '<spatial name="plain">', '<spatial name="plain" stiffness="5" springyield="0.2">')
    model = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    assert "tendon #3 'plain': nonzero tendon_springyield" in model.dynamics_unsupported
    with pytest.raises(ValueError, match="tendon #3 'plain': nonzero tendon_springyield"):
        engine.forward_dynamics(model, jnp.array(model.qpos0), jnp.zeros(6), jnp.zeros(0))
    xml = _XML.format(integrator="Euler").replace(
        '<fixed name="fx"', '<fixed name="fx" solreflimit="0.02 -1"')
    with pytest.raises(ValueError, match="tendon #2 'fx': solreflimit \\(0.02, -1\\) mixes"):
        engine.compile_model(mujoco.MjModel.from_xml_string(xml))


def test_rollout_gradient_through_tendon_springs_dampers_and_limits():
    """d loss / d (qd0, tendon stiffness, tendon damping) through 30 semi-implicit Euler steps
    (2 ms) from a state where tendon limits push, vs central differences (steps eps max(1,
    |x|), eps 1e-6: the stiffnesses are 50-200 N/m). The
    dynamics are piecewise smooth (limit rows switching on or off, the wrap touching, a
    spring leaving its dead band); each derivative is checked at two step sizes (1e-6, 2e-6),
    which a switch inside the difference window would set apart. Residual: FD truncation
    O(eps^2) and roundoff O(1e-16 |loss| / eps): tolerance 1e-6 relative (observed 3e-9 to
    1e-7)."""
    m = _model("Euler")
    model0 = engine.compile_model(m)
    rng = np.random.default_rng(5)
    q0, qd0 = _random_state(m, rng)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    mujoco.mj_forward(m, d)
    assert np.sum(d.efc_type == mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON) >= 1
    q0 = jnp.array(q0)

    def loss(qd0, stiffness, damping):
        tendons = model0.tendons
        model = dataclasses.replace(model0, tendons=dataclasses.replace(
            tendons, stiffness=stiffness, damping=damping))
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros(0), 2e-3, 30,
                               engine.Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    args = (jnp.array(qd0), model0.tendons.stiffness, model0.tendons.damping)
    f, gradient = value_and_gradient(loss, argnums=(0, 1, 2))
    grads = gradient(*args)
    for i, name in enumerate(("qd0", "stiffness", "damping")):
        x = np.asarray(args[i])
        g = np.asarray(grads[i])
        assert np.all(np.isfinite(g)), f"d loss / d {name} is not finite"
        for eps in (1e-6, 2e-6):
            fd = []
            for k in range(x.size):
                dx = np.zeros_like(x)
                dx[k] = eps * max(1.0, abs(x[k]))   # relative steps for the stiffnesses
                plus, minus = list(args), list(args)
                plus[i], minus[i] = jnp.asarray(x + dx), jnp.asarray(x - dx)
                fd.append((f(*plus) - f(*minus)) / (2 * dx[k]))
            fd = np.array(fd)
            err = np.abs(g - fd).max() / np.abs(fd).max()
            assert err <= 1e-6, f"d loss / d {name} (eps {eps:g}): relative error {err:.2e}"
