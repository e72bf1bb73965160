"""MJCF models with MuJoCo `<muscle>` actuators loaded as a `MusculoskeletalModel`
(`musculoskeletal.mjcf.load_mjcf`) against MuJoCo itself, on MyoSuite's elbows
(shared/reference/mujoco/myosuite: six muscles on spatial tendons with via sites and wrapping
cylinders; 1 and 2 dofs, limited joints, ctrlrange [0.001, 1]).

* One evaluation, 12 random states per model (q up to 0.1 rad past each joint limit, so that
  MuJoCo's limit constraints act; qd in [-3, 3] rad/s; act in [0, 1]; ctrl in [-0.2, 1.2],
  so the control range clamps): our tendon tension against -actuator_force, the muscles'
  generalized force r F against qfrc_actuator, da/dt against act_dot and the accelerations
  against qacc (MuJoCo's Newton solver at tolerance 1e-12). Tolerances: forces 1e-9 N and
  qfrc 1e-9 N m (forces up to ~1 kN: ~1e-12 relative, roundoff of the same formulas in
  another order; observed <= 3e-12 N); da/dt 1e-10 1/s; qacc 1e-8 rad/s^2 (accelerations up
  to ~1e3; MuJoCo's limit solve converged to 1e-12; observed ~2e-12).
* A rollout: 0.4 s of RK4 at 1 ms from rest with piecewise-constant random controls, ours
  (`musculoskeletal.rollout`) against MuJoCo's RK4 (mj_step): q within 1e-9 rad and act
  within 1e-10 at every step (observed 2e-15 and 1e-16: the same integrator on the same
  right-hand side).
* Gradients: d(final elbow angle)/d(excitations) of a 0.1 s rollout by reverse mode against
  central differences (h = 1e-6 on each of the six constant excitations; the curves are
  piecewise quadratic, so the stencil is checked to stay on one piece by comparing h and h/2:
  1e-7 relative).
* A geared muscle (gear 2.5) over a via site: tension and qfrc_actuator against mj_forward.
* Muscles on a hinge, on a slide and on a fixed tendon (lengths linear in q) beside one on a
  spatial tendon: forces, da/dt and qacc against mj_forward, and an RK4 rollout against
  mj_step.
* An actlimited muscle: act clamped to actrange after each step, as MuJoCo (Euler and RK4,
  bounds inside [0, 1], a step where forward Euler overshoots 1), q and act against mj_step;
  the adaptive rollout as the limit of MuJoCo's clamped Euler when its step goes to zero.
* Bad input is refused naming the file or actuator, the field and the value.
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin.musculoskeletal import (MusculoskeletalState, adaptive_rollout, input_table,
                                     muscle_drive, rates, rollout, with_muscle_masses)
from myotwin.musculoskeletal.mjcf import load_mjcf, muscle_actuators
from gradient_check import value_and_gradient
from shared_reference import SHARED

MYOSUITE = SHARED / "reference" / "mujoco" / "myosuite"
ELBOWS = ["myoelbow_1dof6muscles_nomesh.xml", "myoelbow_2dof6muscles_nomesh.xml"]
TOL_FORCE_N = 1e-9
TOL_ACT_RATE = 1e-10
TOL_QACC = 1e-8
TOL_ROLLOUT_Q_RAD = 1e-9
TOL_ROLLOUT_ACT = 1e-10


def _mujoco(name: str, integrator=None, timestep=None):
    path = MYOSUITE / name
    if not path.exists():
        pytest.skip(f"MyoSuite reference model {path} is absent")
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    m.opt.tolerance = 1e-12
    m.opt.iterations = 200
    if integrator is not None:
        m.opt.integrator, m.opt.timestep = integrator, timestep
    return m


def _state(d):
    return MusculoskeletalState(jnp.array(d.qpos), jnp.array(d.qvel), jnp.array(d.act),
                                jnp.zeros(d.act.size))


@pytest.mark.parametrize("name", ELBOWS)
def test_one_evaluation_matches_mujoco(name):
    m = _mujoco(name)
    msm = load_mjcf(m)
    ids = list(muscle_actuators(m))
    assert ids == list(range(m.nu)) and msm.muscles.names == tuple(
        mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in ids)
    evaluate = jax.jit(lambda s, u, c: (muscle_drive(msm, s, u), rates(msm, s, u, ctrl=c)))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    errs, limited = np.zeros(4), 0
    for k in range(12):
        d.qpos[:] = rng.uniform(m.jnt_range[:, 0] - 0.1, m.jnt_range[:, 1] + 0.1)
        if k < 2:                                   # past the lower, then the upper limits
            d.qpos[:] = m.jnt_range[:, k] + (0.05 if k else -0.05)
        d.qvel[:] = rng.uniform(-3, 3, m.nv)
        d.act[:] = rng.uniform(0, 1, m.na)
        d.ctrl[:] = rng.uniform(-0.2, 1.2, m.nu)
        mujoco.mj_forward(m, d)
        limited += int(d.nefc > 0)
        (dyn, qfrc), (qdd, act_rate, _) = evaluate(_state(d), jnp.array(d.ctrl[ids]),
                                                   jnp.array(d.ctrl))
        errs = np.maximum(errs, [
            np.abs(-np.asarray(dyn.outputs.tendon_force_N) - d.actuator_force[ids]).max(),
            np.abs(np.asarray(qfrc) - d.qfrc_actuator).max(),
            np.abs(np.asarray(act_rate) - d.act_dot).max(),
            np.abs(np.asarray(qdd) - d.qacc).max()])
    print(f"{name}: force {errs[0]:.1e} N, qfrc {errs[1]:.1e}, da/dt {errs[2]:.1e}, "
          f"qacc {errs[3]:.1e} ({limited} states at a joint limit)")
    assert limited >= 2
    assert errs[0] <= TOL_FORCE_N and errs[1] <= TOL_FORCE_N
    assert errs[2] <= TOL_ACT_RATE and errs[3] <= TOL_QACC


def test_myofinger_muscles_match_mujoco_with_a_negative_slack_offset():
    """MyoSuite's finger (4 hinges, 5 muscles): adabR's lengthrange[0] - range[0] L0 is
    -0.034 m, which MuJoCo accepts (an offset); its forces must still be MuJoCo's. The finger's
    geom contacts (cylinders, an ellipsoid, capsule pairs) are outside the engine's dynamics,
    so forces only."""
    m = _mujoco("myofinger_v0.xml")
    msm = load_mjcf(m)
    offsets = dict(zip(msm.muscles.names, np.asarray(msm.muscles.tendon_slack_length_m)))
    assert offsets["adabR"] < -0.03
    drive = jax.jit(lambda s, u: muscle_drive(msm, s, u))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    err_f = err_q = 0.0
    for _ in range(12):
        d.qpos[:] = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1])
        d.qvel[:] = rng.uniform(-3, 3, m.nv)
        d.act[:] = rng.uniform(0, 1, m.na)
        d.ctrl[:] = rng.uniform(0, 1, m.nu)
        mujoco.mj_forward(m, d)
        dyn, qfrc = drive(_state(d), jnp.array(d.ctrl))
        err_f = max(err_f, np.abs(-np.asarray(dyn.outputs.tendon_force_N)
                                  - d.actuator_force).max())
        err_q = max(err_q, np.abs(np.asarray(qfrc) - d.qfrc_actuator).max())
    print(f"myofinger: force {err_f:.1e} N, qfrc {err_q:.1e} N m")
    assert err_f <= TOL_FORCE_N and err_q <= TOL_FORCE_N


def _mujoco_steps(m, d, ctrl):
    """(qpos, act) after each mj_step from d with ctrl (n_steps, n_u), each (n_steps, ...)."""
    q_ref, act_ref = [], []
    for row in ctrl:
        d.ctrl[:] = row
        mujoco.mj_step(m, d)
        q_ref.append(d.qpos.copy())
        act_ref.append(d.act.copy())
    return np.array(q_ref), np.array(act_ref)


def _controls(m, n_steps, rng):
    hold = 50
    return np.repeat(rng.uniform(0, 1, (n_steps // hold, m.nu)), hold, axis=0)


def _rollout_errors(m, msm, q0, seed):
    """(max |q - MuJoCo|, max |act - MuJoCo|, travel (n_q,)) of 0.4 s of `msm.rollout` at 1 ms
    from q0 at rest (act 0.05) under piecewise-constant random controls, against mj_step with
    the model's integrator (RK4 in these tests)."""
    d = mujoco.MjData(m)
    d.qpos[:] = q0
    d.act[:] = 0.05
    state0 = _state(d)
    ctrl = _controls(m, 400, np.random.default_rng(seed))
    q_ref, act_ref = _mujoco_steps(m, d, ctrl)
    states = rollout(msm, state0, jnp.asarray(ctrl), 1e-3, len(ctrl), ctrl=jnp.asarray(ctrl))
    err_q = np.abs(np.asarray(states.q[1:]) - q_ref).max()
    err_a = np.abs(np.asarray(states.activation[1:]) - act_ref).max()
    return err_q, err_a, np.ptp(q_ref, axis=0)


@pytest.mark.parametrize("name", ELBOWS)
def test_rk4_rollout_matches_mujoco(name):
    m = _mujoco(name, mujoco.mjtIntegrator.mjINT_RK4, 1e-3)
    msm = load_mjcf(m)
    err_q, err_a, travel = _rollout_errors(m, msm, np.clip(0.6, m.jnt_range[:, 0],
                                                           m.jnt_range[:, 1]), seed=1)
    travel = travel.max()
    print(f"{name}: q {err_q:.1e} rad, act {err_a:.1e} over 0.4 s (travel {travel:.2f} rad)")
    assert travel > 0.3          # the muscles moved the arm
    assert err_q <= TOL_ROLLOUT_Q_RAD and err_a <= TOL_ROLLOUT_ACT


def test_gradient_of_a_rollout_matches_central_differences():
    m = _mujoco(ELBOWS[0])
    msm = load_mjcf(m)
    state0 = MusculoskeletalState(jnp.array([1.0]), jnp.zeros(1), jnp.full(6, 0.05),
                                  jnp.zeros(6))

    final_angle, gradient = value_and_gradient(
        lambda u: rollout(msm, state0, u, 1e-3, 100).q[-1, 0])
    u0 = jnp.array([0.3, 0.1, 0.2, 0.6, 0.4, 0.5])
    grad = np.asarray(gradient(u0))

    def central(h):
        e = np.eye(6) * h
        return np.array([(final_angle(u0 + e[i]) - final_angle(u0 - e[i])) / (2 * h)
                         for i in range(6)])

    fd, fd_half = central(1e-6), central(5e-7)
    scale = np.abs(fd).max()
    assert np.abs(fd - fd_half).max() <= 1e-7 * scale      # one smooth piece
    err = np.abs(grad - fd).max() / scale
    print(f"gradient vs central differences: {err:.1e} relative (max |grad| {scale:.2e})")
    assert err <= 1e-6


_BASE = """<mujoco><compiler angle="radian"/>
  <worldbody><site name="o" pos="0 0 0.3"/>
    <body name="b"><joint name="j" type="hinge" axis="0 1 0" range="-1 1" limited="{limited}"
      {frc}/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
      <site name="i" pos="0.2 0 0.02"/></body></worldbody>
  <tendon><spatial name="t"><site site="o"/><site site="i"/></spatial>
    <fixed name="f"><joint joint="j" coef="1"/></fixed></tendon>
  <actuator>{actuator}</actuator></mujoco>"""
_MUSCLE = '<muscle name="mus" tendon="t" lengthrange="0.2 0.45" {extra}/>'
#: A <general> actuator that is a MuJoCo muscle (the <muscle> defaults spelled out).
_PRM = "0.75 1.05 -1 200 0.5 1.6 1.5 1.3 1.2"
_MUSCLE_TYPES = (f'dyntype="muscle" gaintype="muscle" biastype="muscle" gainprm="{_PRM}" '
                 f'biasprm="{_PRM}" dynprm="0.01 0.04" lengthrange="0.2 0.45"')


def _model(actuator=_MUSCLE.format(extra=""), limited="true", frc=""):
    return mujoco.MjModel.from_xml_string(_BASE.format(actuator=actuator, limited=limited,
                                                       frc=frc))


@pytest.mark.parametrize("make, message", [
    (lambda: _model(_MUSCLE.format(extra='gear="-1"')), "actuator 'mus': gear -1.0"),
    (lambda: _model(_MUSCLE.format(extra='forcelimited="true" forcerange="-5 0"')),
     "actuator 'mus': forcelimited is set"),
    (lambda: _model(f'<general name="mus" tendon="t" {_MUSCLE_TYPES} actearly="true"/>'),
     "actuator 'mus': actearly"),
    (lambda: _model(f'<general name="mus" tendon="t" {_MUSCLE_TYPES.replace("-1 200", "10 200", 1)}'
                    '/>'), "gainprm[2] = 10.0 but biasprm[2] = -1.0"),
    (lambda: mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint name="j" type="ball"/><geom size="0.05"/></body>'
        '</worldbody><actuator><muscle name="mus" joint="j" lengthrange="0 1"/></actuator>'
        '</mujoco>'), "actuator 'mus': its joint 'j' is a ball or free joint (type 1)"),
    (lambda: _model(f'<general name="mus" site="i" {_MUSCLE_TYPES}/>'),
     "actuator 'mus': transmission type 4"),
    (lambda: _model('<general name="mus" tendon="t" dyntype="muscle" gainprm="1" '
                    'dynprm="0.01 0.04"/>'), "dyntype/gaintype/biastype are 4/0/0"),
    (lambda: _model(frc='actuatorfrcrange="-1 1"'), "joint 'j' has a limited actuatorfrcrange"),
    (lambda: _model(_MUSCLE.format(extra='timeconst="0 0"')),   # the file was not named
     "muscle 'mus' activation: tau_act_s must be > 0, got 0.0 (from the <muscle> actuator's "
     "attributes)"),
])
def test_bad_models_are_refused(make, message):
    with pytest.raises(ValueError) as err:
        load_mjcf(make())
    assert message in str(err.value)
    assert "MJCF model" in str(err.value)


def _paired(**keywords):
    from myotwin.musculoskeletal import musculoskeletal_model

    msm = load_mjcf(_model())
    args = {"skeleton": msm.skeleton, "muscles": msm.muscles,
            "paths": list(msm.muscle_path), **keywords}
    return musculoskeletal_model(args.pop("skeleton"), args.pop("muscles"), **args)


@pytest.mark.parametrize("call, message", [
    # AttributeError: 'str' object has no attribute 'names' before
    (lambda: _paired(muscles="mus"), "musculoskeletal_model: muscles must be a Muscle "
                                     "(muscle.build_muscles or osim.build_muscles), got str"),
    (lambda: _paired(skeleton="model.xml"), "musculoskeletal_model: expected an engine Model"),
    # tuple("tt"): two paths 't' and 't' for one muscle, "2 paths for 1 muscles"
    (lambda: _paired(paths="tt"), "musculoskeletal_model: paths must be a sequence of path "
                                  "names or indices, got the string 'tt' (for one muscle: "
                                  "['tt'])"),
    # converted by float() before: True as 1, "0" as 0
    (lambda: _paired(activation_range=[[False, True]]),
     "activation_range of 'mus': [lo, hi] must be two numbers, got [False, True]"),
    (lambda: _paired(activation_range=[["0", "1"]]),
     "activation_range of 'mus': [lo, hi] must be two numbers, got ['0', '1']"),
    (lambda: with_muscle_masses(load_mjcf(_model()), True, 3),
     "muscle mass of 'mus' must be a number, got True"),
    (lambda: with_muscle_masses(load_mjcf(_model()), "0.1", 3),
     "muscle mass of 'mus' must be a number, got '0.1'"),
    (lambda: with_muscle_masses("model.xml", 0.1, 3),      # AttributeError ('n_muscles')
     "with_muscle_masses: expected a MusculoskeletalModel (musculoskeletal_model or "
     "load_mjcf), got str"),
    # n_points was checked only where a muscle had mass
    (lambda: with_muscle_masses(load_mjcf(_model()), 0.0, 0),
     "n_points must be a positive integer, got 0"),
])
def test_bad_pairings_and_masses_are_refused(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value)


@pytest.mark.parametrize("integrator, dt_s, actrange", [
    (mujoco.mjtIntegrator.mjINT_EULER, 2e-3, "0 0.6"),
    (mujoco.mjtIntegrator.mjINT_RK4, 2e-3, "0.1 0.6"),
    (mujoco.mjtIntegrator.mjINT_EULER, 8e-3, "0 1")])
def test_actrange_clamps_act_after_each_step_as_mujoco(integrator, dt_s, actrange):
    """An actlimited muscle: MuJoCo clamps act to actrange after every step
    (mj_nextActivation), not inside RK4's stages. Full excitation for 0.4 s, then none:
    act saturates at the upper bound and, with a lower bound above 0, stops there on the way
    down; at 8 ms forward Euler overshoots 1 (the step exceeds 0.5 tau_act = 5 ms) and the
    clamp holds it. q and act against mj_step at every step: 1e-9 rad and 1e-10 (roundoff,
    as the RK4 rollout test above)."""
    xml = _BASE.format(actuator=f'<general name="mus" tendon="t" {_MUSCLE_TYPES} '
                                f'actlimited="true" actrange="{actrange}"/>',
                       limited="true", frc="")
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.integrator, m.opt.timestep = integrator, dt_s
    m.opt.solver, m.opt.tolerance, m.opt.iterations = mujoco.mjtSolver.mjSOL_NEWTON, 1e-12, 200
    lo, hi = m.actuator_actrange[0]
    msm = load_mjcf(m)
    np.testing.assert_array_equal(np.asarray(msm.activation_range), [[lo, hi]])
    n = int(round(0.8 / dt_s))
    ctrl = np.where(np.arange(n)[:, None] < n // 2, 1.0, 0.0)
    d = mujoco.MjData(m)
    d.act[:] = lo
    state0 = _state(d)
    q_ref, act_ref = _mujoco_steps(m, d, ctrl)
    assert act_ref.max() == hi                 # MuJoCo's clamp holds act at the top
    if lo > 0:
        assert act_ref[-1, 0] == lo            # and at the bottom
    integrator = {mujoco.mjtIntegrator.mjINT_EULER: "euler",
                  mujoco.mjtIntegrator.mjINT_RK4: "rk4"}[integrator]
    states = rollout(msm, state0, jnp.asarray(ctrl), dt_s, n, integrator)
    err_q = np.abs(np.asarray(states.q[1:]) - q_ref).max()
    err_a = np.abs(np.asarray(states.activation[1:]) - act_ref).max()
    assert err_q <= TOL_ROLLOUT_Q_RAD, f"q: {err_q:.1e} rad vs mj_step"
    assert err_a <= TOL_ROLLOUT_ACT, f"act: {err_a:.1e} vs mj_step"
    kept = with_muscle_masses(msm, 0.1, 3).activation_range   # the bounds survive mass
    np.testing.assert_array_equal(np.asarray(kept), np.asarray(msm.activation_range))
    unclamped = rollout(dataclasses.replace(msm, activation_range=None), state0,
                        jnp.asarray(ctrl), dt_s, n, integrator)
    assert np.abs(np.asarray(unclamped.activation[1:]) - act_ref).max() > 1e-3


def test_adaptive_rollout_is_the_small_step_limit_of_mujocos_clamped_euler():
    """The adaptive rollout integrates the projected activation dynamics (no rate out of
    actrange at a bound; an initial act outside starts clamped), the limit of MuJoCo's clamped
    Euler as dt -> 0. Full excitation for 0.2 s, then none, from act 0 below actrange
    [0.1, 0.6]; q and act at four times against mj_step (Euler) at 1e-4 s and 5e-5 s.
    MuJoCo's error halves with its step (first order towards our solution: ratio 0.45-0.55,
    observed 0.500), and its Richardson extrapolation 2 x(dt/2) - x(dt) lands within 2e-6
    (observed 3e-7: its O(dt^2) rest; ours runs at tolerances 1e-10). Without
    the projection act climbs to 1 and q ends 0.28 rad off."""
    xml = _BASE.format(actuator=f'<general name="mus" tendon="t" {_MUSCLE_TYPES} '
                                'actlimited="true" actrange="0.1 0.6"/>', limited="true",
                       frc="")
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.solver, m.opt.tolerance, m.opt.iterations = mujoco.mjtSolver.mjSOL_NEWTON, 1e-12, 200
    t_out = np.array([0.1, 0.2, 0.3, 0.4])

    def mujoco_states(dt_s):
        m.opt.timestep = dt_s
        d = mujoco.MjData(m)
        steps = np.rint(t_out / dt_s).astype(int)
        ctrl = np.where(np.arange(steps[-1])[:, None] < steps[1], 1.0, 0.0)
        q, act = _mujoco_steps(m, d, ctrl)
        return q[steps - 1], act[steps - 1]

    msm = load_mjcf(m)
    table = input_table(np.array([0.0, 0.2, 0.2 + 1e-12, 0.4]),
                        np.array([[1.0], [1.0], [0.0], [0.0]]), np.zeros((4, 1)))
    result = adaptive_rollout(msm, _state(mujoco.MjData(m)), 0.0, jnp.asarray(t_out), table,
                              rtol=1e-10, atol=1e-10)
    ours = np.hstack([np.asarray(result.ys.q), np.asarray(result.ys.activation)])
    assert np.asarray(result.ys.activation).max() == 0.6
    coarse, fine = (np.hstack(mujoco_states(dt)) for dt in (1e-4, 5e-5))
    err_coarse, err_fine = np.abs(coarse - ours).max(), np.abs(fine - ours).max()
    assert 0.45 <= err_fine / err_coarse <= 0.55, (err_coarse, err_fine)
    richardson = np.abs(2.0 * fine - coarse - ours).max()
    assert richardson <= 2e-6, richardson
    print(f"MuJoCo Euler error ratio {err_fine / err_coarse:.4f}, Richardson {richardson:.1e}")
    free = adaptive_rollout(dataclasses.replace(msm, activation_range=None),
                            _state(mujoco.MjData(m)), 0.0, jnp.asarray(t_out), table,
                            rtol=1e-10, atol=1e-10)
    assert np.abs(np.asarray(free.ys.q) - fine[:, :1]).max() > 0.1


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="no_such.xml: no such MJCF file"):
        load_mjcf(tmp_path / "no_such.xml")
    with pytest.raises(ValueError, match="is a directory, not an MJCF file"):
        load_mjcf(tmp_path)
    with pytest.raises(ValueError, match="muscle_actuators: expected a mujoco.MjModel, got str"):
        muscle_actuators("arm.xml")
    with pytest.raises(ValueError, match="MJCF source: expected a file's path or a "
                                         "mujoco.MjModel, got NoneType"):
        load_mjcf(None)


def test_the_muscle_actuator_keeps_its_ctrl_slot_and_gives_the_skeleton_no_force():
    m = _model(_MUSCLE.format(extra="") + '<motor name="mot" joint="j" gear="2"/>')
    msm = load_mjcf(m)
    assert msm.skeleton.n_u == 2 and muscle_actuators(m) == (0,)
    from myotwin.engine.actuation import actuator_forces

    qfrc = actuator_forces(msm.skeleton, jnp.array([0.3]), jnp.zeros(1), jnp.array([1.0, 0.5]))
    assert float(qfrc[0]) == pytest.approx(1.0)       # only the motor: gear 2 x ctrl 0.5


def test_a_geared_muscle_is_mujocos():
    """gear 2.5 on a muscle over a via site: MuJoCo's actuator length is gear x tendon length
    and its force acts through gear; `mujoco_muscles` folds the gear into F_iso, l_opt and
    l_ts. Against mj_forward at 20 random states: the tendon tension = -gear actuator_force
    and r F = qfrc_actuator, both to 1e-9 N (forces ~100 N)."""
    xml = """<mujoco><compiler angle="radian"/><option gravity="0 0 0"/>
      <worldbody><site name="o" pos="0 0 0.3"/>
        <body name="b"><joint name="j" type="hinge" axis="0 1 0" range="-1 1"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
          <site name="v" pos="0.1 0 0.06"/><site name="i" pos="0.25 0 0.02"/></body></worldbody>
      <tendon><spatial name="t"><site site="o"/><site site="v"/><site site="i"/></spatial>
      </tendon>
      <actuator><muscle name="mus" tendon="t" gear="2.5" force="40" lengthrange="0.75 1.05"
        ctrlrange="0 1"/></actuator></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    msm = load_mjcf(m)
    drive = jax.jit(lambda s, u: muscle_drive(msm, s, u))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    err_t = err_q = 0.0
    lengths = []
    for _ in range(20):
        d.qpos[:] = rng.uniform(-1, 1, 1)
        d.qvel[:] = rng.uniform(-3, 3, 1)
        d.act[:] = rng.uniform(0, 1, 1)
        mujoco.mj_forward(m, d)
        lengths.append(d.actuator_length[0])
        dyn, qfrc = drive(_state(d), jnp.array(d.act))
        err_t = max(err_t, abs(float(dyn.outputs.tendon_force_N[0]) + 2.5 * d.actuator_force[0]))
        err_q = max(err_q, np.abs(np.asarray(qfrc) - d.qfrc_actuator).max())
    print(f"geared muscle: tension {err_t:.1e} N, qfrc {err_q:.1e} N m; actuator length "
          f"{min(lengths):.3f}-{max(lengths):.3f} m (range 0.75-1.05)")
    assert min(lengths) < 0.9 < max(lengths)        # the normalized length sweeps its range
    assert err_t <= TOL_FORCE_N and err_q <= TOL_FORCE_N


_LINEAR = """<mujoco><compiler angle="radian"/><option timestep="1e-3" integrator="RK4"
    solver="Newton" tolerance="1e-12" iterations="200"/>
  <worldbody><site name="o" pos="0 0 0.3"/>
    <body name="b"><joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/><site name="i" pos="0.2 0 0.02"/>
      <body name="c" pos="0.3 0 0"><joint name="slide" type="slide" axis="1 0 0"
                                          range="-0.05 0.1" damping="1"/>
        <geom type="box" size="0.03 0.03 0.03"/></body></body></worldbody>
  <tendon><spatial name="t"><site site="o"/><site site="i"/></spatial>
    <fixed name="f"><joint joint="hinge" coef="0.5"/><joint joint="slide" coef="-3"/></fixed>
  </tendon>
  <actuator><muscle name="spatial" tendon="t"/><muscle name="on_hinge" joint="hinge" gear="0.05"
      force="20"/><muscle name="on_slide" jointinparent="slide" force="30"/>
    <muscle name="on_fixed" tendon="f" gear="0.2" force="40"/></actuator></mujoco>"""


def test_muscles_on_joints_and_fixed_tendons_match_mujoco():
    """MuJoCo muscles whose length is linear in q (linear_paths.py): on a hinge (gear 0.05),
    on a slide (jointinparent) and on a fixed tendon over both (gear 0.2), beside one on a
    spatial tendon; MuJoCo's compiler gives their lengthranges from the joint ranges. At 12
    random states (joint limits struck in some): tendon tension, qfrc_actuator, da/dt and
    qacc against mj_forward (the tolerances above); then 0.4 s of RK4 at 1 ms with
    piecewise-constant random controls against mj_step (q 1e-9, act 1e-10)."""
    m = mujoco.MjModel.from_xml_string(_LINEAR)
    msm = load_mjcf(m)
    assert msm.muscle_path == (0, -1, -1, -1) and msm.muscle_linear == (-1, 0, 1, 2)
    evaluate = jax.jit(lambda s, u: (muscle_drive(msm, s, u), rates(msm, s, u, ctrl=u)))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(8)
    errs, limited = np.zeros(4), 0
    gear = m.actuator_gear[:, 0]
    for _ in range(12):
        d.qpos[:] = rng.uniform(m.jnt_range[:, 0] - 0.02, m.jnt_range[:, 1] + 0.02)
        d.qvel[:] = rng.uniform(-2, 2, m.nv)
        d.act[:] = rng.uniform(0, 1, m.na)
        d.ctrl[:] = rng.uniform(0, 1, m.nu)
        mujoco.mj_forward(m, d)
        limited += int(d.nefc > 0)
        (dyn, qfrc), (qdd, act_rate, _) = evaluate(_state(d), jnp.array(d.ctrl))
        errs = np.maximum(errs, [
            np.abs(-np.asarray(dyn.outputs.tendon_force_N) - gear * d.actuator_force).max(),
            np.abs(np.asarray(qfrc) - d.qfrc_actuator).max(),
            np.abs(np.asarray(act_rate) - d.act_dot).max(),
            np.abs(np.asarray(qdd) - d.qacc).max()])
    assert limited >= 2
    assert errs[0] <= TOL_FORCE_N and errs[1] <= TOL_FORCE_N
    assert errs[2] <= TOL_ACT_RATE and errs[3] <= TOL_QACC
    err_q, err_a, travel = _rollout_errors(m, msm, m.qpos0, seed=9)
    print(f"linear muscles: force {errs[0]:.1e} N, qfrc {errs[1]:.1e}, da/dt {errs[2]:.1e}, "
          f"qacc {errs[3]:.1e}; rollout q {err_q:.1e}, act {err_a:.1e} (travel {travel})")
    assert travel.min() > 0.01           # the muscles moved both joints
    assert err_q <= TOL_ROLLOUT_Q_RAD and err_a <= TOL_ROLLOUT_ACT


def test_linear_paths_are_validated_and_carry_no_mass_points():
    """A joint muscle refuses mass points; two muscles on one linear path, an unknown path
    and the "opensim" coupling with linear paths are refused naming them."""
    from myotwin.musculoskeletal import musculoskeletal_model

    msm = load_mjcf(mujoco.MjModel.from_xml_string(_LINEAR))
    with pytest.raises(ValueError, match="muscle 'on_hinge' acts on a joint or a fixed tendon"):
        with_muscle_masses(msm, [0.1, 0.1, 0.0, 0.0], 5)
    heavy = with_muscle_masses(msm, [0.1, 0.0, 0.0, 0.0], 5)
    assert heavy.muscle_linear == msm.muscle_linear and heavy.skeleton.muscle_mass is not None
    build = lambda paths, **kw: musculoskeletal_model(  # noqa: E731
        msm.skeleton, msm.muscles, paths=paths, linear_paths=msm.linear_paths, **kw)
    names = ["t", "actuator 'on_hinge'", "actuator 'on_slide'", "actuator 'on_fixed'"]
    assert build(names).muscle_linear == (-1, 0, 1, 2)
    with pytest.raises(ValueError, match="muscles 'on_slide' and 'on_fixed' both pull on path "
                                         "'actuator 'on_slide''"):
        build(names[:3] + [names[2]])
    with pytest.raises(ValueError, match="muscle 'on_fixed': unknown path 'nope'"):
        build(names[:3] + ["nope"])
    with pytest.raises(ValueError, match="linear paths present"):
        build(names, coupling="opensim")
    # checked: a wrong width failed inside a JAX dot at the first evaluation, a dict with
    # AttributeError ('names'); the builder took a string as names, bools and unequal rows
    from myotwin.musculoskeletal.linear_paths import linear_paths

    narrow = linear_paths(np.asarray(msm.linear_paths.coef_q)[:, :1],
                          np.asarray(msm.linear_paths.coef_v), msm.linear_paths.names)
    with pytest.raises(ValueError, match=re.escape(
            "musculoskeletal_model: linear_paths.coef_q has shape (3, 1), expected (3, 2) (the "
            "skeleton's n_q = 2)")):
        musculoskeletal_model(msm.skeleton, msm.muscles, paths=names, linear_paths=narrow)
    with pytest.raises(ValueError, match="linear_paths must be a LinearPaths"):
        musculoskeletal_model(msm.skeleton, msm.muscles, paths=names, linear_paths={"a": 1})
    for args, message in (
            ((np.zeros((2, 3)), np.zeros((2, 3)), "ab"),
             "linear_paths: names must be a sequence of strings, got 'ab'"),
            (([[True]], [[1.0]], ["a"]), "linear_paths: coef_q must be numbers, got [[True]]"),
            ((np.zeros((2, 3)), np.zeros((1, 3)), ["a", "b"]),
             "linear_paths: coef_v has shape (1, 3), expected (2, n), one row per name")):
        with pytest.raises(ValueError, match=re.escape(message)):
            linear_paths(*args)
    # the checks let traced coefficients through (a moment arm may be fitted by gradients):
    # d/dc of the sum of c * ones((1, 2)) is 2
    grad = jax.grad(lambda c: jnp.sum(linear_paths(c * jnp.ones((1, 2)), jnp.ones((1, 2)),
                                                   ["a"]).coef_q))(0.5)
    assert float(grad) == 2.0
