"""Equality constraints (engine/equality.py: joint, tendon and connect, solved with the limits
in limits.py) vs MuJoCo 4.0: the constraint rows (efc_*) in MuJoCo's order, qacc and
qfrc_inverse at random states; rollouts of a closed-loop linkage against mj_step (Euler and
RK4); a rollout's gradient vs central differences; inactive equalities, the disable flags and
the refusals.

The model: a four-bar linkage closed by a connect between two sites (crank, coupler and rocker
on hinges, the rocker's tip pinned to the world), a pendulum with a ball joint whose tip is
connected to a free-floating box by a body anchor, a hinge whose angle follows the crank's by a
quadratic polynomial (joint equality), a slide held at an offset (one-joint equality), and a
spatial tendon whose length follows another's (tendon equality), plus a fixed tendon held at a
length; a joint limit and dry friction on the crank. MuJoCo runs with solver="Newton",
tolerance=1e-15, iterations=200 and contact disabled (test_limits.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine import limits

from gradient_check import value_and_gradient
from mujoco_compare import close_to_mujoco

#: Rows (r, J, vel, aref, R): closed forms, roundoff only (test_limits.py ROW_TOL).
ROW_TOL = 1e-12
#: Outputs of the QP solve with A + R (test_limits.py SOLVE_TOL).
SOLVE_TOL = 1e-10

#: The four-bar linkage's moving links (crank, coupler, rocker; the rocker's tip is `tip`),
#: CRANK standing for the crank joint's extra attributes.
_FOUR_BAR = """
    <body name="crank"><joint name="crank" type="hinge" axis="0 1 0" CRANK/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
      <body name="coupler" pos="0.1 0 0"><joint name="coupler" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.35 0 0.1" size="0.01"/>
        <body name="rocker" pos="0.35 0 0.1"><joint name="rocker" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.01"/>
          <site name="tip" pos="0 0 -0.2"/></body></body></body>"""

_XML = """<mujoco><option timestep="0.002" integrator="{integrator}" solver="Newton"
  tolerance="1e-15" iterations="200"><flag contact="disable" {flags}/></option>
  <compiler angle="radian"/>
  <worldbody><site name="ground" pos="0.4 0 0.1"/><site name="w1" pos="-0.1 0.1 0.5"/>"""
_XML += _FOUR_BAR.replace("CRANK", 'range="-2 2" frictionloss="0.05"') + """
    <body name="arm" pos="-0.3 0 0.6"><joint name="ball" type="ball" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.25" size="0.02"/>
      <site name="s1" pos="0.02 0 -0.1"/>
      <body name="follower" pos="0 0 -0.25"><joint name="follower" type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.015"/>
        <site name="s2" pos="0.15 0 0"/>
        <body name="slider" pos="0.15 0 0"><joint name="slide" type="slide" axis="1 0 0"/>
          <geom type="box" size="0.02 0.02 0.02"/></body></body></body>
    <body name="box" pos="-0.3 0.2 0.35"><freejoint/><geom type="box" size="0.04 0.03 0.02"/>
      <site name="s3" pos="0.03 0 0"/></body></worldbody>
  <tendon><spatial name="long"><site site="w1"/><site site="s1"/><site site="s2"/></spatial>
    <spatial name="short"><site site="w1"/><site site="s3"/></spatial>
    <fixed name="pair"><joint joint="follower" coef="1"/><joint joint="slide" coef="2"/></fixed>
  </tendon>
  <equality>
    <connect name="loop" site1="tip" site2="ground" solref="0.01 1"/>
    <connect name="hook" body1="arm" body2="box" anchor="0 0.02 -0.3"/>
    <joint name="gear" joint1="follower" joint2="crank" polycoef="0.1 0.5 0.3 0 0"
           solimp="0.8 0.95 0.01 0.5 2"/>
    <joint name="hold" joint1="slide" polycoef="0.01 0 0 0 0"/>
    <tendon name="lengths" tendon1="long" tendon2="short" polycoef="0.05 0.8 0 0 0"/>
    <tendon name="fixed" tendon1="pair" polycoef="0 0 0 0 0" active="{active}"/>
  </equality></mujoco>"""


def _model(integrator="Euler", flags="", active="true"):
    return mujoco.MjModel.from_xml_string(_XML.format(integrator=integrator, flags=flags,
                                                      active=active))


def _settled(m):
    """A state near the constraints' manifold: 300 steps of MuJoCo from qpos0."""
    d = mujoco.MjData(m)
    for _ in range(300):
        mujoco.mj_step(m, d)
    return d.qpos.copy()


def _random_state(m, q_base, rng):
    q = q_base.copy()
    q[:3] += rng.normal(size=3) * 0.05            # crank, coupler, rocker: off the loop
    quat = q[3:7] + rng.normal(size=4) * 0.1
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:9] += rng.normal(size=2) * 0.05
    return q, rng.normal(size=m.nv)


def test_model_keeps_the_active_equalities():
    m = _model()
    model = engine.compile_model(m)
    eq = model.equality
    assert eq.names[0] == "equality #0 'loop'" and eq.kind == (2, 2, 0, 0, 1, 1)
    assert eq.n_rows == 10
    assert engine.compile_model(_model(active="false")).equality.n_rows == 9
    for flag in ("equality", "constraint"):
        assert engine.compile_model(_model(flags=f'{flag}="disable"')).equality is None


def _compare_with_mujoco(m, d, s, rows, qacc, inverse, qdd, worst):
    """State s of vmapped outputs against mj_forward's `d` (after it) and mj_inverse at qdd[s]:
    the instantiated rows, qacc and qfrc_inverse; the worst errors are kept in `worst`."""
    tag = f"state {s}"
    on = np.asarray(rows.instantiated[s])
    assert on.sum() == d.nefc, f"{tag}: {on.sum()} rows vs MuJoCo nefc {d.nefc}"
    for name, ours, ref, tol in (
            ("efc_pos", rows.dist[s][on], d.efc_pos, ROW_TOL),
            ("efc_J", rows.jac[s][on], d.efc_J.reshape(d.nefc, m.nv), ROW_TOL),
            ("efc_vel", rows.vel[s][on], d.efc_vel, ROW_TOL),
            ("efc_aref", rows.aref[s][on], d.efc_aref, ROW_TOL),
            ("efc_R", rows.regularizer[s][on], d.efc_R, ROW_TOL),
            ("qacc", qacc[s], d.qacc, SOLVE_TOL)):
        worst[name] = max(worst.get(name, 0.0), close_to_mujoco(f"{tag} {name}", ours, ref,
                                                                 tol))
    d.qacc[:] = qdd[s]
    mujoco.mj_inverse(m, d)
    worst["qfrc_inverse"] = max(worst.get("qfrc_inverse", 0.0), close_to_mujoco(
        f"{tag} qfrc_inverse", inverse[s], d.qfrc_inverse, SOLVE_TOL))


def test_mujoco_puts_the_residual_acceleration_in_connect_and_weld_aref():
    """What equality.py reproduces, checked on MuJoCo alone: its aref departs from the limits'
    law -B vel - K d r by -rdd_0, the residual's second time derivative along qd at qdd = 0
    (central second differences of MuJoCo's own efc_pos along mj_integratePos, h = 1e-4:
    truncation ~h^2, roundoff ~1e-16 |r| / h^2; tolerance 1e-5 relative to the largest), on
    connect and weld rows, and not at all on joint and tendon rows (1e-12 of |aref|). The
    term is not small here (asserted > 1e-3 of the largest aref)."""
    for m in (_model(), _welds()):
        q, qd = _settled(m), np.random.default_rng(12).normal(size=m.nv) * 2.0
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        k, b, imp = (d.efc_KBIP[:, i] for i in range(3))
        departure = d.efc_aref + b * d.efc_vel + k * imp * (d.efc_pos - d.efc_margin)

        def efc_pos(t):
            e = mujoco.MjData(m)
            e.qpos[:] = q
            mujoco.mj_integratePos(m, e.qpos, qd, t)
            mujoco.mj_fwdPosition(m, e)
            return e.efc_pos.copy()

        h = 1e-4
        rdd = (efc_pos(h) - 2 * efc_pos(0.0) + efc_pos(-h)) / h**2
        eq_rows = np.flatnonzero(d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        kinds = np.repeat(m.eq_type[m.eq_active0.astype(bool)],
                          [{0: 3, 1: 6}.get(int(t), 1) for t in m.eq_type[m.eq_active0]])
        pair = eq_rows[np.isin(kinds, [mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD])]
        scalar = eq_rows[~np.isin(kinds, [mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD])]
        scale = np.abs(d.efc_aref).max()
        err = np.abs(departure[pair] + rdd[pair]).max() / np.abs(rdd[pair]).max()
        print(f"{m.neq} equalities: connect/weld departure vs -rdd {err:.1e}; largest "
              f"{np.abs(rdd[pair]).max() / scale:.1e} of |aref|")
        assert np.abs(rdd[pair]).max() > 1e-3 * scale
        assert err <= 1e-5
        assert np.abs(departure[scalar]).max(initial=0.0) <= 1e-12 * scale


def test_rows_forward_and_inverse_match_mujoco():
    """12 states near the constraint manifold (off it by a few cm and 0.1 rad): the
    instantiated rows vs MuJoCo's efc_* in its order (equality rows first; connect rows with
    MuJoCo's Jdot qd in aref), qacc, and qfrc_inverse at a random qacc."""
    m = _model()
    model = engine.compile_model(m)
    base = _settled(m)

    def evaluate(q, qd, qdd):
        rows = limits.limit_rows(model, q, qd)
        return (rows, engine.forward_dynamics(model, q, qd, jnp.zeros(0)),
                engine.inverse_dynamics(model, q, qd, qdd))

    rng = np.random.default_rng(3)
    states = [_random_state(m, base, rng) for _ in range(12)]
    q, qd = (np.stack(x) for x in zip(*states))
    qdd = rng.normal(size=(12, m.nv)) * 5.0
    rows, qacc, inverse = jax.jit(jax.vmap(evaluate))(*(jnp.array(x) for x in (q, qd, qdd)))
    worst = {}
    for s in range(12):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q[s], qd[s]
        mujoco.mj_forward(m, d)
        assert np.all(d.efc_type[:10] == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        _compare_with_mujoco(m, d, s, rows, qacc, inverse, qdd, worst)
    print("worst relative errors", {k: f"{v:.1e}" for k, v in worst.items()})


def _rollout_errors(model, make, qd0, n, integrator):
    """(max |qpos - MuJoCo|, max |qpos - MuJoCo without equalities|) over n 2 ms steps of our
    `rollout` and mj_step from qpos0 and qd0; make(flags) builds the MjModel."""
    q0 = np.array(make("").qpos0)
    states = engine.rollout(model, jnp.array(q0), jnp.array(qd0), jnp.zeros((n, 0)), 2e-3,
                            n, integrator)
    runs = {}
    for flags in ("", 'equality="disable"'):
        mm = make(flags)
        d = mujoco.MjData(mm)
        d.qpos[:], d.qvel[:] = q0, qd0
        qpos = []
        for _ in range(n):
            mujoco.mj_step(mm, d)
            qpos.append(d.qpos.copy())
        runs[flags] = np.array(qpos)
    return (np.abs(np.asarray(states[0][1:]) - runs[""]).max(),
            np.abs(runs['equality="disable"'] - runs[""]).max())


@pytest.mark.parametrize("integrator, name", [("Euler", "euler"), ("RK4", "rk4")])
def test_rollout_of_the_linkage_matches_mj_step(integrator, name):
    """400 steps (0.8 s) from qpos0 (the compiler's anchors make the connects hold there; the
    polynomial ones start violated by their c0) with a random velocity: the loop closes, the
    box swings on its hook. Tolerance 1e-9 (roundoff and the solver's 1e-15 grow along the
    rollout); without the equalities the trajectory ends > 0.1 away (asserted)."""
    m = _model(integrator)
    model = engine.compile_model(m)
    rng = np.random.default_rng(4)
    worst, apart = _rollout_errors(model, lambda flags: _model(integrator, flags),
                                   rng.normal(size=m.nv), 400, name)
    print(f"{integrator}: max |qpos - MuJoCo| {worst:.1e}; without equalities {apart:.1e}")
    assert apart > 0.1, f"the equalities move the trajectory only {apart:.1e}: not a test"
    assert worst <= 1e-9, f"{integrator}: max |qpos - MuJoCo| {worst:.2e}"


_LINKAGE = """<mujoco><option timestep="0.002"><flag contact="disable"/></option>
  <compiler angle="radian"/>
  <worldbody><site name="ground" pos="0.4 0 0.1"/>""" + _FOUR_BAR.replace("CRANK", "") + """
    <body name="follower" pos="0 0.2 0"><joint name="follower" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.015"/></body></worldbody>
  <equality><connect site1="tip" site2="ground" solref="0.01 1"/>
    <joint joint1="follower" joint2="crank" polycoef="0.1 0.5 0.3 0 0"/></equality></mujoco>"""


@pytest.mark.parametrize("name", ["linkage", "full", "welds"])
def test_rollout_gradient_through_the_equalities(name):
    """d loss / d qd0 through 30 semi-implicit Euler steps (2 ms) vs central differences
    (eps 1e-6): the four-bar linkage with a follower geared to its crank (a connect and a joint
    equality), the full test model above (connects, joint and tendon equalities, a joint limit
    and dry friction; 14 dofs, 13 rows) and the welds' model below (16 dofs, 12 rows). The
    last two are above cholesky.GRAD_SMALL_N, so their derivative is LAPACK's (through the
    unrolled loops the full model's RK4 reverse pass had compiled for minutes, docs/engine.md
    "Performance", thirty-sixth session). The
    equality rows are always instantiated and unbounded, so the dynamics are smooth there (the
    full model's friction and limit rows are piecewise: a bound reached within the FD step
    would show as a disagreement); the residual is FD truncation and roundoff, tolerance 1e-6
    relative."""
    m = {"linkage": lambda: mujoco.MjModel.from_xml_string(_LINKAGE), "full": _model,
         "welds": _welds}[name]()
    model = engine.compile_model(m)
    q0 = jnp.array(m.qpos0)

    def loss(qd0):
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros((30, 0)), 2e-3, 30,
                               engine.Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    x = np.random.default_rng(6).normal(size=m.nv)
    f, gradient = value_and_gradient(loss)
    g = np.asarray(gradient(jnp.array(x)))
    fd = np.array([(f(jnp.array(x + 1e-6 * e)) - f(jnp.array(x - 1e-6 * e))) / 2e-6
                   for e in np.eye(m.nv)])
    err = np.abs(g - fd).max() / np.abs(fd).max()
    print(f"{name}: d loss / d qd0: relative error {err:.1e} vs central differences")
    assert err <= 1e-6, f"relative error {err:.2e}"


_WELDS = """<mujoco><option timestep="0.002" integrator="{integrator}" solver="Newton"
  tolerance="1e-15" iterations="200"><flag contact="disable" {flags}/></option>
  <worldbody><body name="a" pos="0 0 1"><joint name="j1" type="ball" damping="0.02"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
      <body name="b" pos="0.3 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
        <site name="sb" pos="0.3 0 0" euler="5 0 40"/></body></body>
    <body name="c" pos="0.7 0.1 1.1"><freejoint/><geom type="box" size="0.05 0.04 0.03"/></body>
    <body name="d" pos="0.3 -0.2 0.8"><freejoint/><geom type="box" size="0.03 0.03 0.03"/>
      <site name="sd" pos="0.01 0.02 0" euler="10 20 30"/></body></worldbody>
  <equality>
    <weld name="body" body1="b" body2="c" anchor="0.02 0.01 0" torquescale="2"
          relpose="0.42 0.11 0.1 0.9 0.1 0.3 0.2" solimp="0.8 0.95 0.5 0.5 2"/>
    <weld name="sites" site1="sb" site2="sd" solref="0.05 0.8"/>
  </equality></mujoco>"""


def _welds(integrator="Euler", flags=""):
    return mujoco.MjModel.from_xml_string(_WELDS.format(integrator=integrator, flags=flags))


def test_welds_match_mujoco():
    """Two welds (body semantic with an anchor, relpose and torquescale 2; site semantic with
    rotated sites) on a ball-jointed arm and two free boxes, 12 random states: the rows vs
    MuJoCo's efc_* (3 position and 3 orientation rows each; aref with MuJoCo 4.0's Jdot qd),
    qacc and qfrc_inverse; then 300 RK4 steps from qpos0 (the body weld starts violated by
    its relpose) against mj_step (1e-9; the equalities move the trajectory by > 0.1)."""
    m = _welds("RK4")
    model = engine.compile_model(m)
    assert model.equality.kind == (3, 3) and model.equality.n_rows == 12

    def evaluate(q, qd, qdd):
        return (limits.limit_rows(model, q, qd),
                engine.forward_dynamics(model, q, qd, jnp.zeros(0)),
                engine.inverse_dynamics(model, q, qd, qdd))

    rng = np.random.default_rng(8)
    q = np.tile(m.qpos0, (12, 1))
    for adr in (0, 8, 15):             # the ball's and the boxes' quaternions
        quat = q[:, adr:adr + 4] + rng.normal(size=(12, 4)) * 0.2
        q[:, adr:adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    q[:, 4] = rng.normal(size=12) * 0.3
    qd, qdd = rng.normal(size=(12, m.nv)), rng.normal(size=(12, m.nv)) * 5.0
    rows, qacc, inverse = jax.jit(jax.vmap(evaluate))(*(jnp.array(x) for x in (q, qd, qdd)))
    worst = {}
    for s in range(12):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q[s], qd[s]
        mujoco.mj_forward(m, d)
        assert d.nefc == 12
        _compare_with_mujoco(m, d, s, rows, qacc, inverse, qdd, worst)
    rollout_err, apart = _rollout_errors(model, lambda flags: _welds("RK4", flags),
                                         rng.normal(size=m.nv), 300, "rk4")
    print("worst relative errors", {k: f"{v:.1e}" for k, v in worst.items()},
          f"rollout {rollout_err:.1e} (without the welds {apart:.1e})")
    assert apart > 0.1
    assert rollout_err <= 1e-9, f"RK4 rollout: max |qpos - MuJoCo| {rollout_err:.2e}"


def test_unsupported_equalities_are_refused_at_load():
    """MJCF's flex equalities need a flex, which the engine does not model: refused naming the
    equality (here an MjModel edited to that type); a mixed solref format too."""
    m = _model()
    m.eq_type[1] = mujoco.mjtEq.mjEQ_FLEX
    with pytest.raises(ValueError, match="equality #1 'hook': type mjEQ_FLEX"):
        engine.compile_model(m)
    m = _model()
    m.eq_solref[2] = [0.02, -1.0]
    with pytest.raises(ValueError, match="equality #2 'gear': solref \\(0.02, -1\\) mixes"):
        engine.compile_model(m)
