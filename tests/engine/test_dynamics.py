"""Passive/actuator forces, forward/inverse dynamics and rollouts vs MuJoCo 4.0; integrator
invariants (energy drift and convergence order by regression); gradients of a rollout vs
central finite differences. All float64 (conftest)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine import kinetic_energy, potential_energy

from gradient_check import value_and_gradient
from random_trees import random_state, random_tree_mjcf

REL_TOL = 1e-10  # same formulas in float64 on both sides: roundoff is ~1e-14

PENDULUM = """<mujoco><option timestep="0.001" integrator="RK4" gravity="0 0 -9.81">
  <flag contact="disable" eulerdamp="disable"/></option><worldbody>
  <body pos="0 0 1"><joint name="h0" type="hinge" axis="0 1 0" {j0}/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>{inner}</body>
  </worldbody>{act}</mujoco>"""
_LINK = ('<body pos="0 0 -0.5"><joint name="h{k}" type="hinge" axis="{axis}" {j}/>'
         '<geom type="capsule" fromto="0 0 0 0.1 0 -0.5" size="0.05"/>{inner}</body>')


def chain_xml(n_links: int, joint_attrs: str = "", act: str = "") -> str:
    inner = ""
    for k in range(n_links - 1, 0, -1):
        axis = "0 1 0" if k % 2 else "1 0 0.3"
        inner = _LINK.format(k=k, axis=axis, j=joint_attrs, inner=inner)
    return PENDULUM.format(j0=joint_attrs, inner=inner, act=act)


TUMBLER = """<mujoco><option timestep="0.001" integrator="RK4"><flag contact="disable"/></option>
  <worldbody><body pos="0 0 1"><freejoint/>
  <geom type="box" size="0.1 0.2 0.3" pos="0.02 0.01 0"/></body></worldbody></mujoco>"""


def _close(name, ours, ref, tol=REL_TOL):
    ours, ref = np.asarray(ours), np.asarray(ref)
    err = np.abs(ours - ref).max(initial=0.0) / max(np.abs(ref).max(initial=0.0), 1e-300)
    assert err <= tol, f"{name}: relative error {err:.3e} > {tol:g} vs MuJoCo"


def _random_dynamics_model(seed: int) -> mujoco.MjModel:
    """Random tree plus motors/position servos on its hinges/slides, random springs/damping."""
    xml = random_tree_mjcf(seed)
    names = re.findall(r'name="(j\d+_\d+)" type="(?:hinge|slide)"', xml)
    rng = np.random.default_rng(100 + seed)
    acts = []
    for i, name in enumerate(names):
        if i % 2:
            acts.append(f'<motor joint="{name}" gear="{rng.uniform(0.5, 2):.6g}" '
                        'ctrllimited="true" ctrlrange="-0.5 0.7"/>')
        else:
            acts.append(f'<position joint="{name}" kp="{rng.uniform(1, 5):.6g}" '
                        f'kv="{rng.uniform(0, 1):.6g}" forcelimited="true" forcerange="-2 2"/>')
    xml = xml.replace("</mujoco>", f"<actuator>{''.join(acts)}</actuator></mujoco>")
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    for j in range(m.njnt):
        if m.jnt_type[j] in (2, 3):
            m.jnt_stiffness[j] = rng.uniform(0, 3)
            m.qpos_spring[m.jnt_qposadr[j]] = rng.uniform(-1, 1)
    m.dof_damping[:] = rng.uniform(0, 0.5, size=m.nv)
    return m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forces_and_dynamics_match_mujoco(seed):
    m = _random_dynamics_model(seed)
    assert m.nu > 0
    model = engine.compile_model(m)
    fns = jax.jit(lambda q, qd, u, qdd: (
        engine.passive_forces(model, q, qd), engine.actuator_forces(model, q, qd, u),
        engine.forward_dynamics(model, q, qd, u), engine.inverse_dynamics(model, q, qd, qdd)))
    rng = np.random.default_rng(seed)
    for _ in range(3):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = random_state(m, rng)
        d.ctrl[:] = rng.uniform(-1, 1, size=m.nu)  # some outside ctrlrange: clamped
        mujoco.mj_forward(m, d)
        passive, act, qacc, _ = fns(d.qpos, d.qvel, d.ctrl, d.qacc)
        _close(f"seed {seed} qfrc_passive", passive, d.qfrc_passive)
        _close(f"seed {seed} qfrc_actuator", act, d.qfrc_actuator)
        _close(f"seed {seed} qacc", qacc, d.qacc)
        qdd = rng.normal(size=m.nv)
        d.qacc[:] = qdd
        mujoco.mj_inverse(m, d)
        _close(f"seed {seed} qfrc_inverse", fns(d.qpos, d.qvel, d.ctrl, qdd)[3], d.qfrc_inverse)


def test_unsupported_dynamics_rejected_naming_element():
    m = mujoco.MjModel.from_xml_string(chain_xml(2, 'stiffness="1" springyield="0.5"'))
    model = engine.compile_model(m)  # kinematics still fine
    with pytest.raises(ValueError, match="joint #0 'h0': nonzero springyield"):
        engine.forward_dynamics(model, jnp.zeros(2), jnp.zeros(2), jnp.zeros(0))


def _mujoco_rollout(m, q0, qd0, ctrl, n):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    qs = [d.qpos.copy()]
    for _ in range(n):
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
    return np.array(qs), d.qvel.copy()


_ACT = ('<actuator><motor joint="h0" gear="2"/><position joint="h1" kp="4" kv="0.5"/>'
        '</actuator>')


BALL_PENDULUM = """<mujoco><option timestep="0.001" integrator="RK4">
  <flag contact="disable"/></option><worldbody><body pos="0 0 1"><joint type="ball"/>
  <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.04"/>
  <body pos="0.1 0.05 -0.4"><joint type="hinge" axis="1 0 0"/>
  <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/></body></body></worldbody></mujoco>"""


@pytest.mark.parametrize("case", ["pendulum", "chain", "chain_euler", "chain_eulerdamp",
                                  "chain_eulerdamp_limits", "tumbler", "ball"])
def test_rollout_matches_mujoco(case):
    """1 s at dt 1 ms, tolerance 1e-8 (issue 3). Observed: roundoff, 1e-13 (hinges) to 3e-13
    (free body). Quaternions: MuJoCo 4.0.0's RK4 is Runge-Kutta-Munthe-Kaas on the
    quaternions (rk4_step); the manifold form of older mj_RungeKutta would differ by ~1e-9
    per step here. MuJoCo's Euler: with `eulerdamp` disabled it is our semi-implicit Euler;
    enabled (its default) our "euler", damping 0.8 so that the implicit term matters
    (semi-implicit Euler differs by 1e-3 rad over the second), with and without joint limits
    struck (qacc then carries the constraint force). The eulerdamp cases are held to 1e-12
    relative (observed 5e-16 and 4e-16 rad over the second: the same operations in the same
    order as mj_Euler, so roundoff only; docs/engine.md quotes these)."""
    tol, integrator, ctrl = 1e-8, "rk4", np.zeros(0)
    if case == "pendulum":
        m = mujoco.MjModel.from_xml_string(chain_xml(1, 'stiffness="2" springref="0.2"'))
    elif case in ("tumbler", "ball"):
        m = mujoco.MjModel.from_xml_string(TUMBLER if case == "tumbler" else BALL_PENDULUM)
    elif case.startswith("chain_eulerdamp"):
        limits = ' limited="true" range="-0.3 0.3"' if case.endswith("limits") else ""
        xml = chain_xml(3, 'damping="0.8" armature="0.01"' + limits, _ACT)
        m = mujoco.MjModel.from_xml_string(xml.replace(' eulerdamp="disable"', ""))
        assert not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP
        m.opt.integrator, integrator = mujoco.mjtIntegrator.mjINT_EULER, "euler"
        m.opt.tolerance = 1e-15  # MuJoCo's limit solve exact (at 1e-8 it is off by 8e-8 rad)
        ctrl = np.array([0.3, 0.5])
        tol = 1e-12
    else:
        m = mujoco.MjModel.from_xml_string(chain_xml(3, 'damping="0.1" armature="0.01"', _ACT))
        ctrl = np.array([0.3, 0.5])
        if case == "chain_euler":
            m.opt.integrator, integrator = mujoco.mjtIntegrator.mjINT_EULER, "semi_implicit_euler"
    rng = np.random.default_rng(7)
    q0 = np.array(m.qpos0)
    q0[: min(m.nq, 3)] += rng.uniform(-1, 1, size=min(m.nq, 3))
    qd0 = rng.normal(size=m.nv) * 2
    ref_q, ref_qd = _mujoco_rollout(m, q0, qd0, ctrl, 1000)
    q, qd, t = engine.simulate(engine.compile_model(m), q0, qd0, ctrl, 1.0, 0.001, integrator)
    assert q.shape == ref_q.shape and t[-1] == pytest.approx(1.0)
    _close(f"{case} q over 1 s", q, ref_q, tol)
    _close(f"{case} final qd", qd[-1], ref_qd, tol)
    if integrator == "euler":  # the implicit damping is what makes the agreement
        q_explicit = engine.simulate(engine.compile_model(m), q0, qd0, ctrl, 1.0, 0.001,
                                     "semi_implicit_euler")[0]
        assert np.abs(np.asarray(q_explicit) - ref_q).max() > 1e-5


def _double_pendulum():
    m = mujoco.MjModel.from_xml_string(chain_xml(2))
    return engine.compile_model(m), jnp.array([1.0, -0.5]), jnp.array([0.5, 1.0])


def _order(dts, errs) -> float:
    return float(np.polyfit(np.log(dts), np.log(errs), 1)[0])


@pytest.mark.parametrize("integrator,order", [
    ("explicit_euler", 1), ("semi_implicit_euler", 1), ("rk4", 4)])
def test_convergence_order(integrator, order):
    """Max error over 0.4 s on the common time grid vs a reference (RK4 at dt 0.02/64); the
    regression slope of log error on log dt is the order (diffrax test_integrate style). The
    error at the final time alone can sit near a zero of the leading error term (it gave a
    spurious 4.6 for RK4), so the maximum over the trajectory is used."""
    model, q0, qd0 = _double_pendulum()
    ref_dt, dts = 0.02 / 64, [0.02, 0.01, 0.005]
    ref_q = engine.simulate(model, q0, qd0, jnp.zeros(0), 0.4, ref_dt, "rk4")[0]
    errs = []
    for dt in dts:
        q = engine.simulate(model, q0, qd0, jnp.zeros(0), 0.4, dt, integrator)[0]
        errs.append(float(jnp.abs(q - ref_q[:: round(dt / ref_dt)]).max()))
    measured = _order(dts, errs)
    assert abs(measured - order) < 0.2, f"{integrator}: order {measured:.2f}, expected {order}"


@pytest.mark.parametrize("integrator,order", [
    ("explicit_euler", 1), ("semi_implicit_euler", 1), ("rk4", 4)])
def test_energy_drift_order(integrator, order):
    """No damping: max |E(t) - E(0)| over 0.4 s scales as dt^order."""
    model, q0, qd0 = _double_pendulum()
    energy = jax.jit(jax.vmap(lambda q, qd: kinetic_energy(model, q, qd)
                              + potential_energy(model, q)))
    dts = [0.01, 0.005, 0.0025]
    drifts = []
    for dt in dts:
        q, qd, _ = engine.simulate(model, q0, qd0, jnp.zeros(0), 0.4, dt, integrator)
        e = energy(q, qd)
        drifts.append(float(jnp.abs(e - e[0]).max()))
    measured = _order(dts, drifts)
    assert abs(measured - order) < 0.3, f"{integrator}: energy drift order {measured:.2f}"


def test_energy_matches_mujoco():
    m = mujoco.MjModel.from_xml_string(chain_xml(3, 'stiffness="1.5" springref="0.3"'))
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.3, -0.2, 0.5], [1.0, -2.0, 0.5]
    mujoco.mj_forward(m, d)
    model = engine.compile_model(m)
    _close("potential energy", potential_energy(model, d.qpos), d.energy[0])
    _close("kinetic energy", kinetic_energy(model, d.qpos, d.qvel), d.energy[1])


def test_rollout_gradients_match_finite_differences():
    """d loss / d (q0, ctrl, a body mass) through 50 explicit-Euler steps vs central differences."""
    m = mujoco.MjModel.from_xml_string(chain_xml(2, 'damping="0.05"', _ACT))
    model0 = engine.compile_model(m)

    def loss(q0, ctrl, mass1):
        model = model0.__class__(**{**model0.__dict__,
                                    "body_mass": model0.body_mass.at[1].set(mass1)})
        q, qd, _ = engine.simulate(model, q0, jnp.array([0.5, -1.0]), ctrl, 0.05, 0.001,
                                   "explicit_euler")
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    args = (jnp.array([0.4, -0.3]), jnp.array([0.3, 0.5]), model0.body_mass[1])
    f, gradient = value_and_gradient(loss, argnums=(0, 1, 2))
    grads = gradient(*args)
    eps = 1e-6
    for i, (name, x, g) in enumerate(zip(("q0", "ctrl", "mass"), args, grads)):
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        fd = []
        for k in range(x.size):
            dx = np.zeros_like(x)
            dx[k] = eps
            plus, minus = list(args), list(args)
            plus[i] = jnp.asarray((x + dx).reshape(np.shape(args[i])))
            minus[i] = jnp.asarray((x - dx).reshape(np.shape(args[i])))
            fd.append((f(*plus) - f(*minus)) / (2 * eps))
        err = np.abs(np.atleast_1d(g) - np.array(fd)).max() / np.abs(np.array(fd)).max()
        assert err <= 1e-6, f"d loss / d {name}: relative error {err:.2e} vs central FD"


def test_divergence_raises_naming_step():
    model, q0, qd0 = _double_pendulum()
    # a non-finite initial state is the caller's, not a divergence: refused by name
    with pytest.raises(ValueError, match=r"simulate: q0 is not finite: entry \(0,\) is nan"):
        engine.simulate(model, q0.at[0].set(np.nan), qd0, jnp.zeros(0), 0.05, 0.01,
                        "explicit_euler")
    # finite but past MuJoCo's bound of an unstable simulation (mjMAXVAL): stopped there
    with pytest.raises(FloatingPointError, match=r"exceeds 1e\+10 at step 0 \(t = 0 s\)"):
        engine.simulate(model, q0, qd0 + 2e10, jnp.zeros(0), 0.05, 0.01, "explicit_euler")
    assert np.isfinite(engine.simulate(model, q0, qd0, jnp.zeros(0), 0.05, 0.01,
                                       "explicit_euler")[1]).all()
    with pytest.raises(ValueError, match="rollout: n_steps must be an integer >= 0, got -1"):
        engine.rollout(model, q0, qd0, jnp.zeros(0), 0.01, -1, "rk4")


@pytest.mark.parametrize("function, change, message", [
    # before: True became dt = 1 s, max_iter = 1 and tol = 1.0, 2.5 Newton iterations ran as
    # 3, a list of times failed in a multiplication inside the trace, [True, 0] was q0 [1, 0]
    ("rollout", dict(dt_s=True), "rollout: dt_s must be one real number, got bool"),
    ("rollout", dict(dt_s=[0.01, 0.02]), "rollout: dt_s must be one real number, got a list"),
    ("rollout", dict(dt_s=np.array([0.01])),
     "rollout: dt_s must be one real number, got float64 of shape (1,)"),
    ("rollout", dict(q0=[True, 0.0]), "rollout: q0 must be numbers, got [a traced bool array of "
     "shape (), a traced float64 array of shape ()]"),
    ("rollout", dict(ctrl=np.zeros(0, bool)),
     "rollout: ctrl must be numbers, got a traced bool array of shape (0,)"),
    # a string was jax.jit's own TypeError (about abstract arrays and static_argnums)
    ("rollout", dict(dt_s="0.01"), "rollout: dt_s must be numbers, got '0.01'"),
    ("rollout", dict(q0=["0", "0"]), "rollout: q0 must be numbers, got ['0', '0']"),
    ("implicit_rollout", dict(tol="1e-9"), "implicit_rollout: tol must be numbers, got '1e-9'"),
    ("implicit_rollout", dict(max_iter=True),
     "implicit_rollout: max_iter must be an integer, got bool"),
    ("implicit_rollout", dict(max_iter=2.5),
     "implicit_rollout: max_iter must be an integer, got float64"),
    ("implicit_rollout", dict(tol=True), "implicit_rollout: tol must be one real number, got bool"),
    ("implicit_rollout", dict(dt_s=True),
     "implicit_rollout: dt_s must be one real number, got bool"),
    ("implicit_rollout", dict(qd0=[0.0, False]),
     "implicit_rollout: qd0 must be numbers, got [a traced float64 array of shape (), a "
     "traced bool array of shape ()]"),
    # values: a NaN or infinite step ran to NaN states, a negative one ran backwards in time,
    # a zero one stood still; tol 0 or NaN and max_iter 0 made every Newton solve fail
    ("rollout", dict(dt_s=np.nan), "rollout: dt_s must be finite and > 0, got nan"),
    ("rollout", dict(dt_s=-1e-3), "rollout: dt_s must be finite and > 0, got -0.001"),
    ("rollout", dict(dt_s=np.float64(np.inf)),
     "rollout: dt_s must be finite and > 0, got np.float64(inf)"),
    ("rollout", dict(dt_s=0), "rollout: dt_s must be finite and > 0, got 0"),
    ("implicit_rollout", dict(dt_s=jnp.zeros(())),
     "implicit_rollout: dt_s must be finite and > 0, got Array(0., dtype=float64)"),
    ("implicit_rollout", dict(tol=0.0), "implicit_rollout: tol must be finite and > 0, got 0.0"),
    ("implicit_rollout", dict(tol=np.nan),
     "implicit_rollout: tol must be finite and > 0, got nan"),
    ("implicit_rollout", dict(max_iter=0),
     "implicit_rollout: max_iter must be >= 1, got 0"),
])
def test_rollout_settings_and_states_are_numbers(function, change, message):
    model, q0, qd0 = _double_pendulum()
    args = dict(q0=q0, qd0=qd0, ctrl=jnp.zeros(0), dt_s=0.01, n_steps=2) | change
    run = getattr(engine, function)
    with pytest.raises(ValueError, match=re.escape(message)):
        if function == "rollout":
            run(model, integrator="rk4", **args)
        else:
            run(model, integrator="bdf1", **args)


def test_a_traced_step_is_left_to_the_caller():
    """Under the caller's jit the step's value is unknown when the rollout is traced: it is
    not refused, and a NaN step shows in the states (`simulate` reports such a row as a
    divergence); a valid traced step runs as the concrete one."""
    model, q0, qd0 = _double_pendulum()
    run = jax.jit(lambda dt: engine.rollout(model, q0, qd0, jnp.zeros(0), dt, 3, "rk4")[0])
    assert np.isnan(np.asarray(run(np.nan))[1:]).all()
    concrete = engine.rollout(model, q0, qd0, jnp.zeros(0), 0.01, 3, "rk4")[0]
    np.testing.assert_array_equal(run(0.01), concrete)


@pytest.mark.parametrize("run", ["rollout", "simulate"])
def test_unknown_integrator_name_is_rejected_listing_the_choices(run):
    model, q0, qd0 = _double_pendulum()
    choices = r"\['explicit_euler', 'semi_implicit_euler', 'euler', 'rk4', 'bdf1', 'sdirk2'\]"
    with pytest.raises(ValueError, match=f"integrator 'rk45': expected one of {choices}"):
        if run == "rollout":
            engine.rollout(model, q0, qd0, jnp.zeros((5, 0)), 0.01, 5, "rk45")
        else:
            engine.simulate(model, q0, qd0, jnp.zeros(0), 0.05, 0.01, "rk45")
