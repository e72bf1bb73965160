"""Muscle mass in the engine's dynamics (seed Eq. 7): forward/inverse dynamics, energies,
every integrator, gradients.

References outside the code under test:
  * Pai 2010's two-bone, one-muscle model in closed form (Lagrange by hand, notes §2.2; its
    numbers checked against the notes' table) -- `repro.pai2010` holds the closed form, which
    shares no code with the engine;
  * energy balance (no damping, no actuation: d(T + V)/dt = 0 along the dynamics) and its
    failure without the quadratic velocity vector (seed §4.3);
  * central differences of rollout losses w.r.t. a muscle mass (float64).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from gradient_check import value_and_gradient
from inertia_models import PENDULUM_XML
from myotwin import engine, inertia
from myotwin.engine.implicit import SDIRK2_GAMMA, bdf1_solve, sdirk2_solve
from myotwin.repro import pai2010 as pai

#: A Pai model with unequal lengths and masses (the closed form holds for any).
PARAMS = pai.PaiParams(length_m=0.7, ratio_l=1.3, ratio_r=0.15, mass1_kg=1.1, mass2_kg=0.9,
                       muscle_kg=0.6)
NO_CTRL = jnp.zeros(0)


@pytest.fixture(scope="module")
def pai_model():
    return pai.engine_model(PARAMS)


@pytest.fixture(scope="module")
def pendulum():
    model = engine.compile_model(mujoco.MjModel.from_xml_string(PENDULUM_XML))
    return inertia.with_muscle_mass(model, "muscle", 0.9, 10)


fd_jit = jax.jit(engine.forward_dynamics)
inv_jit = jax.jit(engine.inverse_dynamics)


def _states(n, seed):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-3, 3, 2), rng.normal(size=2) * 2.0) for _ in range(n)]


def test_closed_form_matches_notes():
    """Our closed form vs the notes' §2.2 numbers (unit M, L, l = 1, r = 0.1): bones and
    muscle parts at phi2 = 0 and 1 rad. Tolerance 1e-6 (the notes give 6 decimals)."""
    p = pai.PaiParams()
    for phi2, bones, muscle in (
            (0.0, [[2.666667, 0.833333], [0.833333, 0.333333]],
             [[0.403333, 0.036667], [0.036667, 0.003333]]),
            (1.0, [[2.206969, 0.603484], [0.603484, 0.333333]],
             [[0.372687, 0.021343], [0.021343, 0.003333]])):
        np.testing.assert_allclose(pai.closed_form_mass_matrix(p, phi2, False), bones, atol=1e-6)
        np.testing.assert_allclose(pai.closed_form_muscle_matrix(p, phi2), muscle, atol=1e-6)


def test_pai_dynamics_closed_form(pai_model):
    """Forward dynamics, the total mass matrix (columns of inverse dynamics), the muscle's
    mass matrix (uniform straight muscle, 2 Gauss points: exact) and T + V against the closed
    form at 6 random states. Tolerance 1e-12 relative (float64 evaluations of the same
    mechanics; observed <~ 1e-15)."""
    mus = jax.jit(inertia.muscle_mass_matrix)
    energy = jax.jit(lambda m, q, qd: engine.kinetic_energy(m, q, qd)
                     + engine.potential_energy(m, q))
    zero = jnp.zeros(2)
    for phi, phid in _states(6, 0):
        q, qd = jnp.asarray(phi), jnp.asarray(phid)
        acc = np.asarray(fd_jit(pai_model, q, qd, NO_CTRL))
        ref = pai.closed_form_acceleration(PARAMS, phi, phid)
        assert np.max(np.abs(acc - ref)) <= 1e-12 * np.max(np.abs(ref)), "forward dynamics"
        base = inv_jit(pai_model, q, zero, zero)
        m_total = np.stack([inv_jit(pai_model, q, zero, e) - base for e in jnp.eye(2)], axis=1)
        m_ref = pai.closed_form_mass_matrix(PARAMS, phi[1])
        np.testing.assert_allclose(m_total, m_ref, rtol=0, atol=1e-12 * np.max(m_ref))
        m_mus = pai.closed_form_muscle_matrix(PARAMS, phi[1])
        np.testing.assert_allclose(mus(pai_model, q), m_mus, rtol=0, atol=1e-13 * np.max(m_mus))
        e_ref = pai.closed_form_energy(PARAMS, phi, phid)
        assert abs(float(energy(pai_model, q, qd)) - e_ref) <= 1e-12 * max(1.0, abs(e_ref))


def test_midpoint_rule_converges_as_predicted():
    """n midpoint points on the Pai muscle (origin fixed, M_mus = m sum_k w_k alpha_k^2 Ji'Ji):
    relative error of M_mus = 1/(4 n^2) exactly (sum of squared midpoints = n/3 - 1/(12 n)).
    Tolerance 1e-12 absolute on the relative error."""
    mus = jax.jit(inertia.muscle_mass_matrix)
    exact = pai.closed_form_muscle_matrix(PARAMS, 0.4)
    for n in (1, 3, 10):
        got = np.asarray(mus(pai.engine_model(PARAMS, n, "midpoint"), jnp.array([0.2, 0.4])))
        rel = np.max(np.abs(got - exact)) / np.max(np.abs(exact))
        assert abs(rel - 1.0 / (4 * n * n)) < 1e-12, f"n={n}: {rel} vs {1 / (4 * n * n)}"


def test_massless_limit(pai_model):
    """Muscle mass 1e-30 kg reproduces the massless model (relative difference <= 1e-15,
    i.e. roundoff); the difference grows linearly in the mass (ratio of the differences at
    1e-4 and 1e-7 kg = 1000 to 1 %)."""
    bones = dataclasses.replace(pai_model, muscle_mass=None)
    q, qd = jnp.array([0.7, -0.4]), jnp.array([1.1, 0.3])
    ref = np.asarray(fd_jit(bones, q, qd, NO_CTRL))
    diffs = []
    for m in (1e-30, 1e-7, 1e-4):
        tiny = inertia.with_muscle_mass(pai_model, "muscle", m, 2, rule="gauss")
        diffs.append(np.max(np.abs(np.asarray(fd_jit(tiny, q, qd, NO_CTRL)) - ref))
                     / np.max(np.abs(ref)))
    assert diffs[0] <= 1e-15, f"mass 1e-30: relative difference {diffs[0]:.2e}"
    assert abs(diffs[2] / diffs[1] / 1000.0 - 1.0) < 0.01, diffs


def test_inverse_of_forward_with_muscle_mass(pendulum):
    """inverse_dynamics(q, qd, forward_dynamics(q, qd, ctrl)) = the actuator forces (motors,
    gear 1: ctrl) with a Type II muscle's mass. Tolerance 1e-10 relative to |ctrl| (observed
    ~1e-15)."""
    rng = np.random.default_rng(3)
    for _ in range(4):
        q, qd = jnp.asarray(rng.uniform(-1, 1, 2)), jnp.asarray(rng.normal(size=2))
        ctrl = jnp.asarray(rng.normal(size=2) * 3.0)
        tau = inv_jit(pendulum, q, qd, fd_jit(pendulum, q, qd, ctrl))
        np.testing.assert_allclose(tau, ctrl, rtol=0, atol=1e-10 * float(jnp.max(jnp.abs(ctrl))))


def _power_imbalance(model, q, qd):
    """d(T + V)/dt along the unforced dynamics (jax.grad of the engine's energies) and the
    scale |dT/dqd . qdd| it is measured against."""
    def energy(q, qd):
        return engine.kinetic_energy(model, q, qd) + engine.potential_energy(model, q)

    dq, dqd = jax.grad(energy, argnums=(0, 1))(q, qd)
    qdd = engine.forward_dynamics(model, q, qd, jnp.zeros(model.n_u))
    return dq @ qd + dqd @ qdd, jnp.abs(dqd @ qdd)


@pytest.mark.parametrize("which", ["pai", "pendulum"])
def test_power_balance_needs_qvv(which, pai_model, pendulum):
    """With no damping or actuation, d(T + V)/dt = 0 exactly along the dynamics (tolerance
    1e-11 of the power scale; observed ~1e-15); dropping the muscle points' QVV (seed §4.3
    ablation) breaks it (imbalance > 1e-3 of the scale at some state)."""
    model = pai_model if which == "pai" else pendulum
    check = jax.jit(_power_imbalance)
    ablated = inertia.without_qvv(model)
    worst_without = 0.0
    for phi, phid in _states(5, 1):
        q, qd = jnp.asarray(phi), jnp.asarray(phid)
        imbalance, scale = check(model, q, qd)
        assert abs(float(imbalance)) <= 1e-11 * float(scale), f"{which}: dE/dt = {imbalance}"
        imb, scale = check(ablated, q, qd)
        worst_without = max(worst_without, abs(float(imb)) / float(scale))
    assert worst_without > 1e-3, f"{which}: without QVV the imbalance is only {worst_without}"


def test_energy_rk4_with_and_without_qvv(pendulum):
    """RK4, dt = 1 ms, 1 s, no damping: with the QVV the relative energy drift
    max|E - E0| / (E0 - E_rest) is <= 1e-8 (RK4's own error, observed ~1e-10); without it the
    drift is more than 1000 times larger."""
    q0, qd0 = jnp.array([0.9, 0.3]), jnp.zeros(2)
    energy = jax.jit(jax.vmap(lambda m, q, qd: engine.kinetic_energy(m, q, qd)
                              + engine.potential_energy(m, q), in_axes=(None, 0, 0)))
    rest = float(engine.potential_energy(pendulum, jnp.zeros(2)))
    drifts = []
    for model in (pendulum, inertia.without_qvv(pendulum)):
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros(2), 1e-3, 1000, engine.Integrator.RK4)
        e = np.asarray(energy(pendulum, q, qd))  # the true energy of the system
        drifts.append(np.max(np.abs(e - e[0])) / (e[0] - rest))
    assert drifts[0] <= 1e-8, f"with QVV: relative drift {drifts[0]:.2e}"
    assert drifts[1] > 1000 * drifts[0], f"without QVV: {drifts[1]:.2e} vs {drifts[0]:.2e}"


def test_every_integrator_uses_the_total_dynamics(pai_model):
    """One step of each integrator from the same state, against the same step computed with
    the closed-form accelerations (explicit/semi-implicit Euler, RK4 with its tableau, MuJoCo's
    Euler with dof damping added and the closed-form mass matrix), or
    the residual of the implicit equations with the closed form (BDF1:
    v - qd - h a(q + h v, v) = 0; SDIRK2's two stage equations) -- so the implicit solves see
    the q-dependent total mass matrix. Tolerance 1e-11 relative (Newton tol 1e-12)."""
    h = 0.01
    q0, qd0 = np.array([0.8, -0.5]), np.array([0.6, 1.2])

    def a(q, qd):
        return pai.closed_form_acceleration(PARAMS, q, qd)

    expect = {
        "explicit_euler": (q0 + h * qd0, qd0 + h * a(q0, qd0)),
        "semi_implicit_euler": (q0 + h * (qd0 + h * a(q0, qd0)), qd0 + h * a(q0, qd0)),
    }
    k = [(qd0, a(q0, qd0))]
    for c in (0.5, 0.5, 1.0):
        qs, vs = q0 + c * h * k[-1][0], qd0 + c * h * k[-1][1]
        k.append((vs, a(qs, vs)))
    w = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
    expect["rk4"] = (q0 + h * sum(wi * ki[0] for wi, ki in zip(w, k)),
                     qd0 + h * sum(wi * ki[1] for wi, ki in zip(w, k)))
    for name, (q_ref, qd_ref) in expect.items():
        q1, qd1 = engine.integrators.STEPS[engine.Integrator(name)](
            pai_model, jnp.asarray(q0), jnp.asarray(qd0), NO_CTRL, h)
        np.testing.assert_allclose(q1, q_ref, rtol=1e-11, err_msg=name)
        np.testing.assert_allclose(qd1, qd_ref, rtol=1e-11, err_msg=name)
    # MuJoCo's Euler with dof damping D: (M + h D) (qd1 - qd0) = h (M a - D qd0), with the
    # closed-form total mass matrix M (bones and muscle) and the undamped acceleration a
    damping = np.array([0.7, 0.3])
    damped = dataclasses.replace(pai_model, dof_damping=jnp.asarray(damping))
    mass = pai.closed_form_mass_matrix(PARAMS, q0[1])
    dv = np.linalg.solve(mass + h * np.diag(damping), h * (mass @ a(q0, qd0) - damping * qd0))
    q1, qd1 = engine.integrators.euler_step(damped, jnp.asarray(q0), jnp.asarray(qd0), NO_CTRL,
                                            h)
    np.testing.assert_allclose(qd1, qd0 + dv, rtol=1e-11, err_msg="euler")
    np.testing.assert_allclose(q1, q0 + h * (qd0 + dv), rtol=1e-11, err_msg="euler")
    _, v, status = jax.jit(bdf1_solve)(pai_model, jnp.asarray(q0), jnp.asarray(qd0), NO_CTRL, h)
    assert bool(status.converged)
    v = np.asarray(v)
    res = v - qd0 - h * a(q0 + h * v, v)
    assert np.max(np.abs(res)) <= 1e-11 * np.max(np.abs(v)), f"BDF1 residual {res}"
    q2, v2, status = jax.jit(sdirk2_solve)(pai_model, jnp.asarray(q0), jnp.asarray(qd0),
                                           NO_CTRL, h)
    assert bool(status.converged)
    g = SDIRK2_GAMMA
    v2 = np.asarray(v2)
    # stage velocity V1 from the final position: q2 = q0 + h ((1 - g) V1 + g V2)
    v1 = ((np.asarray(q2) - q0) / h - g * v2) / (1 - g)
    r1 = v1 - qd0 - g * h * a(q0 + g * h * v1, v1)
    r2 = v2 - qd0 - h * ((1 - g) * a(q0 + g * h * v1, v1) + g * a(np.asarray(q2), v2))
    assert max(np.max(np.abs(r1)), np.max(np.abs(r2))) <= 1e-11 * np.max(np.abs(v2))


@pytest.mark.parametrize("integrator,n_steps,dt", [("explicit_euler", 50, 2e-3),
                                                    ("bdf1", 8, 1e-2)])
def test_rollout_gradient_wrt_muscle_mass(pai_model, integrator, n_steps, dt):
    """jax.grad of a rollout loss w.r.t. the muscle mass (through with_muscle_mass, masses as
    leaves) vs central differences (h = 1e-6 kg). Tolerance 1e-6 relative (difference
    truncation ~h^2, rounding ~eps / h ~ 1e-10)."""
    q0, qd0 = jnp.array([0.8, -0.3]), jnp.array([0.2, 0.5])
    target = jnp.array([0.3, 0.4])
    integ = engine.Integrator(integrator)

    def loss(mass):
        model = inertia.with_muscle_mass(pai_model, "muscle", mass, 2, rule="gauss")
        if integ is engine.Integrator.BDF1:
            q, qd, _ = engine.implicit_rollout(model, q0, qd0, NO_CTRL, dt, n_steps, integ)
        else:
            q, qd = engine.rollout(model, q0, qd0, NO_CTRL, dt, n_steps, integ)
        return jnp.sum((q[-1] - target) ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    m0, h = PARAMS.muscle_kg, 1e-6
    value, gradient = value_and_gradient(loss)
    grad = gradient(m0)
    # the differences use the loss values of the same compiled function (its forward pass;
    # a second compilation of the rollout alone cost ~20 s of CI time)
    fd = (value(m0 + h) - value(m0 - h)) / (2 * h)
    assert abs(float(grad) - float(fd)) <= 1e-6 * abs(float(fd)), f"{grad} vs {fd}"
    assert abs(float(fd)) > 1e-3, "loss insensitive to the muscle mass"


def test_reverse_mode_through_wrapped_mass_points():
    """Reverse mode (`jax.value_and_grad`) through the forward dynamics of a Type III muscle's
    mass points, whose Jdot qd is already a second derivative of the wrap geometry (reverse
    mode takes a third): the wrap-smoothness double pendulum (a cylinder with a side site,
    library positions, 5 points, wrapped at q0) vs central differences of the same compiled
    function (h = 1e-6). Tolerance 1e-6 of the largest entry: truncation h^2 |f'''| / 6 is
    ~1e-12 relative and rounding eps |f| / h ~ 1e-7 of the gradient here (observed 4e-10 for
    q, 1.4e-8 for qd). The reaching reproduction's arm (six such muscles) takes the same
    reverse pass in `benchmarks/reaching_gradients.py`. ~75 s, nearly all compilation."""
    from myotwin.repro import wrap_smoothness as ws

    p = ws.build_pendulum()
    skeleton = engine.compile_model(mujoco.MjModel.from_xml_string(ws.pendulum_mjcf(p)))
    model = inertia.with_muscle_mass(skeleton, "muscle", 0.2, 5)
    q0, qd0 = jnp.array([0.5, 0.6]), jnp.array([0.3, -0.2])

    def loss(q, qd):
        qdd = engine.forward_dynamics(model, q, qd, jnp.zeros(model.n_u))
        return jnp.sum(qdd ** 2)

    value, gradient = value_and_gradient(loss, argnums=(0, 1))
    grads = gradient(q0, qd0)
    h = 1e-6
    for k, grad in enumerate(grads):
        fd = np.zeros(2)
        for i in range(2):
            step = [q0, qd0]
            plus, minus = list(step), list(step)
            plus[k], minus[k] = step[k].at[i].add(h), step[k].at[i].add(-h)
            fd[i] = (value(*plus) - value(*minus)) / (2 * h)
        err = np.abs(np.asarray(grad) - fd).max()
        assert err <= 1e-6 * np.abs(fd).max(), f"argument {k}: {np.asarray(grad)} vs {fd}"
