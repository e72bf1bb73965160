"""Dry friction (engine/friction.py: dof and tendon `frictionloss`, solved with the limits in
limits.py) vs MuJoCo 4.0 and Coulomb's law: the constraint rows (efc_*) in MuJoCo's order,
efc_force, qacc and qfrc_inverse at random states (sticking and sliding); rollouts against
mj_step (Euler and RK4); a block sliding on a slide joint against the closed form of Coulomb
friction; the derivative of qacc with respect to the frictionloss values vs central differences;
the disable flags and the refusals.

The model: a hinge (frictionloss, a limit, custom solreffriction/solimpfriction), a slide
(frictionloss), a ball (frictionloss on its three dofs, a limit), a spatial tendon wrapping a
cylinder and a fixed tendon, each with frictionloss (the fixed one also limited), and a motor on
the spatial tendon. MuJoCo runs with solver="Newton", tolerance=1e-15, iterations=200 and
contact disabled, so its solver stops at the optimum of the same convex problem we solve exactly
(test_limits.py).
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

from mujoco_compare import close_to_mujoco

#: Rows (dist, J, vel, aref, R): closed forms, roundoff only (test_limits.py ROW_TOL).
ROW_TOL = 1e-12
#: Outputs of the QP solve with A + R (test_limits.py SOLVE_TOL).
SOLVE_TOL = 1e-10

_XML = """<mujoco><option timestep="0.002" integrator="{integrator}" solver="Newton"
  tolerance="1e-15" iterations="200"><flag contact="disable" {flags}/></option>
  <compiler angle="radian"/><worldbody><site name="s0" pos="0.05 0.02 1.1"/>
  <body name="b1" pos="0 0 1">
    <joint name="hinge" type="hinge" axis="0 1 0" frictionloss="0.4" range="-1.2 1.2"
           solreffriction="0.03 1.2" solimpfriction="0.8 0.95 0.01 0.5 2"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    <site name="s1" pos="0.15 0.01 0.04"/>
    <geom name="cyl" type="cylinder" pos="0.3 0 0" size="0.04 0.05" zaxis="0 1 0"
          contype="0" conaffinity="0"/>
    <site name="side" pos="0.3 0 0.08"/>
    <body name="b2" pos="0.3 0 0">
      <joint name="slide" type="slide" axis="1 0 0" frictionloss="0.6"/>
      <geom type="box" size="0.05 0.03 0.03"/><site name="s2" pos="0.04 0 0.02"/>
      <body name="b3" pos="0.06 0 0">
        <joint name="ball" type="ball" frictionloss="0.02" range="0 0.9" damping="0.01"/>
        <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02"/>
        <site name="s3" pos="0.15 0.01 0"/></body></body></body></worldbody>
  <tendon>
    <spatial name="cable" frictionloss="0.5"><site site="s1"/><geom geom="cyl" sidesite="side"/>
      <site site="s2"/><site site="s3"/></spatial>
    <fixed name="coupler" frictionloss="0.2" limited="true" range="-0.6 0.6">
      <joint joint="hinge" coef="0.5"/><joint joint="slide" coef="-2"/></fixed>
  </tendon>
  <actuator><motor tendon="cable"/></actuator></mujoco>"""

_FRICTION = (mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF,
             mujoco.mjtConstraint.mjCNSTR_FRICTION_TENDON)


def _model(integrator="Euler", flags=""):
    return mujoco.MjModel.from_xml_string(_XML.format(integrator=integrator, flags=flags))


def _random_state(m, rng, speed):
    q = np.array(m.qpos0)
    q[0], q[1] = rng.uniform(-1.4, 1.4), rng.uniform(-0.1, 0.1)
    quat = rng.normal(size=4)
    q[2:6] = quat / np.linalg.norm(quat)
    return q, rng.normal(size=m.nv) * speed


def test_model_keeps_the_friction_rows():
    model = engine.compile_model(_model())
    assert not model.dynamics_unsupported
    fr = model.friction
    assert fr.dof == (0, 1, 2, 3, 4, -1, -1) and fr.tendon_id == (-1,) * 5 + (0, 1)
    assert fr.spatial == (False,) * 5 + (True, False)
    np.testing.assert_array_equal(np.asarray(fr.frictionloss), [0.4, 0.6, 0.02, 0.02, 0.02,
                                                               0.5, 0.2])
    np.testing.assert_array_equal(np.asarray(fr.coef_v[6]), [0.5, -2, 0, 0, 0])
    for flag in ("frictionloss", "constraint"):
        assert engine.compile_model(_model(flags=f'{flag}="disable"')).friction is None


def test_rows_forward_and_inverse_match_mujoco():
    """24 states, half nearly at rest (friction may hold: forces inside their bounds; observed
    10 rows) and half moving (forces at +-frictionloss; 158 rows at a bound in all), with a
    random motor force: the instantiated rows vs MuJoCo's efc_* in its order (friction rows
    first), efc_force, qacc, and qfrc_inverse at a random qacc and at MuJoCo's own."""
    m = _model()
    model = engine.compile_model(m)

    def evaluate(q, qd, ctrl, qdd):
        rows = limits.limit_rows(model, q, qd)
        qacc = engine.forward_dynamics(model, q, qd, ctrl)
        inverse = jax.vmap(lambda a: engine.inverse_dynamics(model, q, qd, a))(
            jnp.stack([qdd, qacc]))
        return rows, qacc, inverse

    rng = np.random.default_rng(4)
    states = [_random_state(m, rng, 1e-3 if s % 2 else 2.0) for s in range(24)]
    q, qd = (np.stack(x) for x in zip(*states))
    ctrl = rng.normal(size=(24, 1))
    qdd = rng.normal(size=(24, m.nv)) * 5.0
    rows, qacc, inverse = jax.jit(jax.vmap(evaluate))(*(jnp.array(x) for x in
                                                         (q, qd, ctrl, qdd)))
    held = {"inside": 0, "at a bound": 0}
    for s in range(24):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q[s], qd[s], ctrl[s]
        mujoco.mj_forward(m, d)
        tag = f"state {s}"
        on = np.asarray(rows.instantiated[s])
        assert on.sum() == d.nefc, f"{tag}: {on.sum()} rows vs MuJoCo nefc {d.nefc}"
        assert np.all(np.isin(d.efc_type[:7], _FRICTION)), f"{tag}: {d.efc_type}"
        for name, ours, ref in (("efc_pos", rows.dist, d.efc_pos),
                                ("efc_J", rows.jac, d.efc_J.reshape(d.nefc, m.nv)),
                                ("efc_vel", rows.vel, d.efc_vel),
                                ("efc_aref", rows.aref, d.efc_aref),
                                ("efc_R", rows.regularizer, d.efc_R),
                                ("efc_frictionloss", rows.upper[:, :7], d.efc_frictionloss[:7])):
            ours = ours[s][on] if name != "efc_frictionloss" else ours[s]
            close_to_mujoco(f"{tag} {name}", ours, ref, ROW_TOL)
        close_to_mujoco(f"{tag} qacc", qacc[s], d.qacc, SOLVE_TOL)
        force, mu = d.efc_force[:7], d.efc_frictionloss[:7]
        held["at a bound"] += int(np.sum(np.isclose(np.abs(force), mu, rtol=1e-9)))
        held["inside"] += int(np.sum(np.abs(force) < mu * (1 - 1e-6)))
        scale = max(np.abs(d.qfrc_bias).max(), np.abs(d.qfrc_constraint).max(), 1.0)
        for k, a in enumerate((np.asarray(qdd[s]), d.qacc.copy())):
            d.qacc[:] = a
            mujoco.mj_inverse(m, d)
            err = np.abs(np.asarray(inverse[s][k]) - d.qfrc_inverse).max() / scale
            assert err <= SOLVE_TOL, f"{tag} qfrc_inverse ({k}): {err:.2e}"
    print(f"friction rows over the states: {held}")
    assert held["inside"] >= 8 and held["at a bound"] >= 30, held


@pytest.mark.parametrize("integrator, name", [("Euler", "euler"), ("RK4", "rk4")])
def test_rollout_with_stick_slip_matches_mj_step(integrator, name):
    """500 steps (1 s) under gravity and a motor force switching sign every 0.25 s, so the
    joints stick and slip; tolerance 1e-9 (the solver's 1e-15 tolerance and roundoff grow along
    the rollout; the QP's solution is continuous in its data, so switches do not amplify them
    beyond that). The frictionless model ends > 1e-2 away (asserted)."""
    rng = np.random.default_rng(9)
    m = _model(integrator)
    q0, qd0 = _random_state(m, rng, 0.5)
    ctrl = np.where((np.arange(500) // 125) % 2 == 0, 1.5, -1.5)[:, None]
    model = engine.compile_model(m)
    states = engine.rollout(model, jnp.array(q0), jnp.array(qd0), jnp.array(ctrl), 2e-3, 500,
                            name)
    runs, stuck = {}, 0
    for frictionless in (False, True):
        mm = _model(integrator, 'frictionloss="disable"' if frictionless else "")
        d = mujoco.MjData(mm)
        d.qpos[:], d.qvel[:] = q0, qd0
        qpos = []
        for k in range(500):
            d.ctrl[:] = ctrl[k]
            mujoco.mj_step(mm, d)
            qpos.append(d.qpos.copy())
            if not frictionless:
                mu = d.efc_frictionloss[:7]
                stuck += int(np.sum(np.abs(d.efc_force[:7]) < mu * (1 - 1e-6)))
        runs[frictionless] = np.array(qpos)
    worst = np.abs(np.asarray(states[0][1:]) - runs[False]).max()
    apart = np.abs(runs[True] - runs[False]).max()
    print(f"{integrator}: max |qpos - MuJoCo| {worst:.1e}; frictionless {apart:.1e}; "
          f"{stuck} row-steps sticking")
    assert apart > 1e-2 and stuck >= 100, (apart, stuck)
    assert worst <= 1e-9, f"{integrator}: max |qpos - MuJoCo| {worst:.2e}"


def test_sliding_block_follows_coulombs_law():
    """A 2 kg block on a horizontal slide joint (frictionloss 3 N) pushed by 5 N from 0.4 m/s:
    while it slides the friction force is the bound, so qacc = (5 - 3) / 2 = 1 m/s^2 exactly
    and the semi-implicit Euler velocity after n steps is 0.4 + n dt (roundoff only: 1e-12).
    Pushed by 2 N < 3 N from rest it is held, up to MuJoCo's soft-constraint creep: the row's
    force is -qacc / R, so qacc = F / (m + 1/R) with R = (1 - d0)/d0 dof_invweight0 = (0.1/0.9)
    (1/2 kg) for the default solimp d0 = 0.9: qacc = 2 / (2 + 18) = 0.1 m/s^2 (10 % of the
    frictionless 1 m/s^2), also exactly."""
    xml = """<mujoco><option timestep="0.001"><flag contact="disable" gravity="disable"/>
      </option><worldbody><body><joint name="x" type="slide" axis="1 0 0" frictionloss="3"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/></body></worldbody>
      <actuator><motor joint="x"/></actuator></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model = engine.compile_model(m)
    q, qd = engine.rollout(model, jnp.zeros(1), jnp.array([0.4]), jnp.full((200, 1), 5.0),
                           1e-3, 200, engine.Integrator.SEMI_IMPLICIT_EULER)
    expected = 0.4 + 1.0 * 1e-3 * np.arange(201)
    assert np.abs(np.asarray(qd[:, 0]) - expected).max() <= 1e-12
    qacc = engine.forward_dynamics(model, jnp.zeros(1), jnp.zeros(1), jnp.array([2.0]))
    assert abs(float(qacc[0]) - 0.1) <= 1e-12


def test_qacc_derivative_with_respect_to_frictionloss():
    """d qacc / d (frictionloss of the 7 rows, qd) by forward mode at a sliding state (rows at
    their bounds: d f / d mu = +-1 through the held bound) and at a sticking one (rows inside:
    through the free set), vs central differences (step 1e-7 relative to max(1, |x|)):
    tolerance 1e-6 relative. Both states keep their active set within the step (asserted:
    the forward solution's free set is the same at both ends)."""
    m = _model()
    model0 = engine.compile_model(m)
    rng = np.random.default_rng(6)

    def qacc(mu, q, qd):
        model = dataclasses.replace(model0, friction=dataclasses.replace(
            model0.friction, frictionloss=mu))
        return engine.forward_dynamics(model, q, qd, jnp.array([0.7]))

    mu0 = np.asarray(model0.friction.frictionloss)
    jac = jax.jit(jax.jacfwd(qacc, argnums=(0, 2)))
    f = jax.jit(qacc)
    for speed in (2.0, 1e-3):
        q, qd = (jnp.array(x) for x in _random_state(m, rng, speed))
        for i, x0 in enumerate((mu0, np.asarray(qd))):
            g = np.asarray(jac(jnp.array(mu0), q, qd)[i])
            fd = np.zeros_like(g)
            for k in range(x0.size):
                dx = np.zeros_like(x0)
                dx[k] = 1e-7 * max(1.0, abs(x0[k]))
                args = [jnp.array(mu0), q, qd]
                plus, minus = list(args), list(args)
                slot = 0 if i == 0 else 2
                plus[slot], minus[slot] = jnp.array(x0 + dx), jnp.array(x0 - dx)
                fd[:, k] = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * dx[k])
            err = np.abs(g - fd).max() / np.abs(fd).max()
            name = ("d qacc / d frictionloss", "d qacc / d qd")[i]
            print(f"speed {speed:g}: {name} relative error {err:.1e} vs central differences")
            assert err <= 1e-6, f"speed {speed:g}: {name}: relative error {err:.2e}"


def test_bad_friction_parameters_are_refused():
    m = _model()
    m.dof_frictionloss[1] = -0.5
    with pytest.raises(ValueError, match="dof 1 of joint #1 'slide': negative frictionloss"):
        engine.compile_model(m)
    m = _model()
    m.tendon_solref_fri[1] = [0.02, -1.0]
    with pytest.raises(ValueError, match="tendon #1 'coupler': solreffriction \\(0.02, -1\\) "
                                         "mixes"):
        engine.compile_model(m)
