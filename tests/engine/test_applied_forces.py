"""Applied forces (MuJoCo qfrc_applied and xfrc_applied) vs MuJoCo 4.0, closed forms and
finite differences.

MuJoCo adds qfrc_applied and J^T xfrc_applied (mj_xfrcAccumulate: world force, then torque, at
each body's xipos) to qfrc_smooth before the constraint solve; its qfrc_inverse does not depend
on them (it is the total external force), so ours plus the applied force must equal it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine

from random_trees import random_state, random_tree_mjcf

REL_TOL = 1e-10  # same formulas in float64 on both sides: the residual is roundoff (~1e-15)


def _rel(ours, ref) -> float:
    ours, ref = np.asarray(ours), np.asarray(ref)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300))


def _mujoco_xfrc_qfrc(m, d) -> np.ndarray:
    """J^T xfrc_applied by MuJoCo's own mj_applyFT at every body's xipos (body 0 skipped)."""
    out = np.zeros(m.nv)
    for b in range(1, m.nbody):
        mujoco.mj_applyFT(m, d, d.xfrc_applied[b, :3].copy(), d.xfrc_applied[b, 3:].copy(),
                          d.xipos[b].copy(), b, out)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_forward_and_inverse_dynamics_with_applied_forces_match_mujoco(seed):
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(seed, n_bodies=10))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    model = engine.compile_model(m)
    zero = jnp.zeros(0)
    fns = jax.jit(lambda q, qd, qfrc, xfrc, qdd: (
        engine.forward_dynamics(model, q, qd, zero, qfrc_applied=qfrc, xfrc_applied=xfrc),
        engine.applied_forces(model, q, qfrc, xfrc),
        engine.inverse_dynamics(model, q, qd, qdd, qfrc_applied=qfrc, xfrc_applied=xfrc)))
    rng = np.random.default_rng(seed)
    for _ in range(3):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = random_state(m, rng)
        d.qfrc_applied[:] = rng.normal(size=m.nv) * 3.0
        d.xfrc_applied[:] = rng.normal(size=(m.nbody, 6)) * 3.0
        mujoco.mj_forward(m, d)
        qacc_free = d.qacc.copy()
        qacc, applied, _ = fns(d.qpos, d.qvel, d.qfrc_applied, d.xfrc_applied, d.qacc)
        expected = d.qfrc_applied + _mujoco_xfrc_qfrc(m, d)
        for name, ours, ref in (("qacc", qacc, qacc_free), ("applied force", applied, expected)):
            err = _rel(ours, ref)
            assert err <= REL_TOL, f"seed {seed} {name}: relative error {err:.2e} vs MuJoCo"
        qdd = rng.normal(size=m.nv)
        d.qacc[:] = qdd
        mujoco.mj_inverse(m, d)
        inverse = fns(d.qpos, d.qvel, d.qfrc_applied, d.xfrc_applied, qdd)[2]
        err = _rel(np.asarray(inverse) + expected, d.qfrc_inverse)
        assert err <= REL_TOL, f"seed {seed} qfrc_inverse: relative error {err:.2e}"
        # the applied forces matter: MuJoCo's qacc without them differs
        d.qfrc_applied[:], d.xfrc_applied[:] = 0.0, 0.0
        mujoco.mj_forward(m, d)
        assert _rel(d.qacc, qacc_free) > 1e-3


def test_default_none_is_no_force_and_public_signatures_unchanged():
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(0, n_bodies=3))
    model = engine.compile_model(m)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = random_state(m, np.random.default_rng(0))
    mujoco.mj_forward(m, d)
    import myotwin

    qacc = myotwin.forward_dynamics(model, d.qpos, d.qvel, jnp.zeros(0))
    zeros = engine.forward_dynamics(model, d.qpos, d.qvel, jnp.zeros(0),
                                    qfrc_applied=jnp.zeros(m.nv),
                                    xfrc_applied=jnp.zeros((m.nbody, 6)))
    assert _rel(qacc, d.qacc) <= REL_TOL and _rel(zeros, d.qacc) <= REL_TOL
    with pytest.raises(ValueError, match=r"xfrc_applied has shape \(3, 6\)"):
        engine.forward_dynamics(model, d.qpos, d.qvel, jnp.zeros(0), xfrc_applied=np.zeros((3, 6)))
    with pytest.raises(ValueError, match="qfrc_applied has shape"):
        engine.simulate(model, d.qpos, d.qvel, jnp.zeros(0), 0.01, 0.001,
                        qfrc_applied=np.zeros((5, m.nv)))


PUSHED = """<mujoco><option timestep="0.001" integrator="RK4" gravity="0 0 -9.81">
  <flag contact="disable"/></option><worldbody>
  <body pos="0 0 1"><joint name="ball" type="ball" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.04"/>
    <body pos="0.1 0.05 -0.4"><joint name="elbow" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/>
      <body pos="0 0 -0.3"><joint name="slider" type="slide" axis="0 0.6 0.8" stiffness="20"/>
        <geom type="sphere" size="0.05" pos="0.01 0 0"/></body></body></body>
  <body pos="1 0 1"><freejoint/><geom type="box" size="0.1 0.05 0.15" pos="0.02 0.01 0"/></body>
  </worldbody></mujoco>"""


def _pushed_inputs(m, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-step xfrc_applied (n, n_body, 6) (smooth in time, on every moving body) and a
    constant qfrc_applied (n_v,)."""
    rng = np.random.default_rng(9)
    amp, freq, phase = (rng.normal(size=(m.nbody, 6)), rng.uniform(1, 5, (m.nbody, 6)),
                        rng.uniform(0, 6, (m.nbody, 6)))
    t = np.arange(n)[:, None, None] * m.opt.timestep
    xfrc = amp * np.sin(2 * np.pi * freq * t + phase)
    xfrc[:, 0] = 0.0  # the world's row (MuJoCo ignores it; so do we)
    return xfrc, rng.normal(size=m.nv) * 0.5


def test_rk4_rollout_with_applied_forces_matches_mujoco():
    """1 s at 1 ms with a time-varying xfrc_applied on every body and a constant qfrc_applied
    (ball + hinge + slide chain and a free box), our RK4 vs MuJoCo's RK4, both holding the
    forces over each step. Tolerance 1e-8 (issue 3); observed ~1e-13 (roundoff)."""
    m = mujoco.MjModel.from_xml_string(PUSHED)
    n = 1000
    xfrc, qfrc = _pushed_inputs(m, n)
    rng = np.random.default_rng(3)
    q0 = m.qpos0.copy()
    q0[0:4] = np.array([0.9, 0.2, -0.3, 0.1]) / np.linalg.norm([0.9, 0.2, -0.3, 0.1])
    q0[4] = 0.4
    qd0 = rng.normal(size=m.nv)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    d.qfrc_applied[:] = qfrc
    ref = [d.qpos.copy()]
    for k in range(n):
        d.xfrc_applied[:] = xfrc[k]
        mujoco.mj_step(m, d)
        ref.append(d.qpos.copy())
    ref = np.array(ref)
    model = engine.compile_model(m)
    q, qd, _ = engine.simulate(model, q0, qd0, np.zeros(0), 1.0, 0.001, "rk4",
                               qfrc_applied=qfrc, xfrc_applied=xfrc)
    err_q, err_qd = _rel(q, ref), _rel(qd[-1], d.qvel)
    assert err_q <= 1e-8 and err_qd <= 1e-8, f"q {err_q:.2e}, final qd {err_qd:.2e}"
    free = engine.simulate(model, q0, qd0, np.zeros(0), 1.0, 0.001, "rk4")[0]
    assert _rel(free, ref) > 1e-3  # the forces change the motion


PENDULUM = """<mujoco><option gravity="0 0 -9.81"><flag contact="disable"/></option><worldbody>
  <body pos="0 0 1"><joint name="ball" type="ball" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.04"/>
    <body name="forearm" pos="0.1 0.05 -0.4"><joint name="elbow" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/></body></body>
  </worldbody></mujoco>"""


def test_rollout_gradient_wrt_applied_force_matches_finite_differences():
    """d loss / d (constant xfrc_applied on the forearm body, constant qfrc_applied) through
    40 semi-implicit Euler steps vs central differences (step 1e-6); 1e-6 relative (truncation
    of the central difference, O(eps^2) ~ 1e-12, and roundoff ~1e-16 / eps = 1e-10)."""
    m = mujoco.MjModel.from_xml_string(PENDULUM)
    model = engine.compile_model(m)
    q0 = m.qpos0.copy()
    q0[0:4] = np.array([0.9, 0.2, -0.3, 0.1]) / np.linalg.norm([0.9, 0.2, -0.3, 0.1])
    q0[4] = 0.4
    qd0 = np.random.default_rng(4).normal(size=m.nv)
    forearm = m.body("forearm").id

    def loss(wrench, qfrc):
        xfrc = jnp.zeros((m.nbody, 6)).at[forearm].set(wrench)
        q, qd, _ = engine.simulate(model, q0, qd0, jnp.zeros(0), 0.04, 0.001,
                                   "semi_implicit_euler", qfrc_applied=qfrc, xfrc_applied=xfrc)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    args = (jnp.array([0.5, -1.0, 2.0, 0.1, 0.3, -0.2]), jnp.full(m.nv, 0.2))
    grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(*args)
    f = jax.jit(loss)
    eps = 1e-6
    for i, name in enumerate(("xfrc_applied", "qfrc_applied")):
        x = np.asarray(args[i])
        fd = np.empty(x.size)
        for k in range(x.size):
            dx = np.zeros_like(x)
            dx[k] = eps
            plus, minus = list(args), list(args)
            plus[i], minus[i] = jnp.asarray(x + dx), jnp.asarray(x - dx)
            fd[k] = (f(*plus) - f(*minus)) / (2 * eps)
        err = np.abs(np.asarray(grads[i]) - fd).max() / np.abs(fd).max()
        assert err <= 1e-6, f"d loss / d {name}: relative error {err:.2e} vs central FD"


@pytest.mark.parametrize("integrator", ["bdf1", "sdirk2"])
def test_implicit_integrators_with_applied_force_match_closed_form(integrator):
    """A free box in zero gravity pushed by a constant world force F at its COM, starting
    without rotation: the COM accelerates at F/m and the box never turns. Implicit Euler gives
    x_n = x_0 + v_0 t_n + (F/m) h^2 n (n + 1) / 2 exactly; SDIRK2 with gamma = 1 - 1/sqrt(2)
    is exact for a constant acceleration (its weights give h^2 (2 gamma - gamma^2) = h^2 / 2).
    Newton converges in one iteration (the residual is linear); tolerance 1e-10 relative."""
    xml = """<mujoco><option gravity="0 0 0"><flag contact="disable"/></option><worldbody>
      <body pos="0.3 -0.2 1"><freejoint/><geom type="box" size="0.1 0.05 0.15"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model = engine.compile_model(m)
    force = np.array([1.5, -0.7, 2.0])
    xfrc = np.zeros((m.nbody, 6))
    xfrc[1, :3] = force
    h, n = 0.01, 20
    v0 = np.array([0.2, 0.1, -0.3, 0.0, 0.0, 0.0])
    q, qd, t = engine.simulate(model, m.qpos0, v0, np.zeros(0), n * h, h, integrator,
                               xfrc_applied=xfrc)
    acc = force / m.body_mass[1]
    steps = np.arange(n + 1)[:, None]
    if integrator == "bdf1":
        x = m.qpos0[:3] + v0[:3] * t[:, None] + acc * h * h * steps * (steps + 1) / 2
    else:
        x = m.qpos0[:3] + v0[:3] * t[:, None] + 0.5 * acc * t[:, None] ** 2
    err = _rel(np.asarray(q)[:, :3] - m.qpos0[:3], x - m.qpos0[:3])
    assert err <= 1e-10, f"{integrator}: COM path relative error {err:.2e}"
    assert _rel(np.asarray(qd)[-1, :3], v0[:3] + acc * t[-1]) <= 1e-10
    assert np.abs(np.asarray(q)[:, 3:] - m.qpos0[3:]).max() <= 1e-14  # no rotation
