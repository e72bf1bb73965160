"""BDF1 and SDIRK2 (implicit.py): convergence order by regression against a fine RK4
reference, stability on a stiff damped spring vs its closed form, the Newton non-convergence
error, and adjoint (implicit-function) gradients of rollouts vs central finite differences.
All float64 (conftest)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine

from gradient_check import value_and_gradient

# Double pendulum of test_dynamics (hinges about y and (1, 0, 0.3)), optional joint attributes
# and actuators.
DOUBLE_PENDULUM = """<mujoco><option gravity="0 0 -9.81"><flag contact="disable"/></option>
  <worldbody><body pos="0 0 1"><joint name="h0" type="hinge" axis="0 1 0" {j}/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
    <body pos="0 0 -0.5"><joint name="h1" type="hinge" axis="1 0 0.3" {j}/>
      <geom type="capsule" fromto="0 0 0 0.1 0 -0.5" size="0.05"/></body></body>
  </worldbody>{act}</mujoco>"""
# One-link pendulum with damping and a motor (gradient tests: smallest nonlinear model, to keep
# the implicit rollout's compile time down).
PENDULUM = """<mujoco><option gravity="0 0 -9.81"><flag contact="disable"/></option>
  <worldbody><body pos="0 0 1"><joint name="h0" type="hinge" axis="0 1 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.1 0 -0.5" size="0.05"/></body></worldbody>
  <actuator><motor joint="h0" gear="2"/></actuator></mujoco>"""
ACT = ('<actuator><motor joint="h0" gear="2"/><position joint="h1" kp="4" kv="0.5"/>'
       '</actuator>')

# Stiff overdamped spring: m x'' = -k x - b x', eigenvalues (-b +- sqrt(b^2 - 4 m k)) / 2m
# = -0.1 and -999.9 per s: explicit Euler needs dt < 2 / 999.9 s.
SPRING_M, SPRING_K, SPRING_B = 1.0, 100.0, 1000.0
SPRING = f"""<mujoco><option gravity="0 0 0"><flag contact="disable"/></option><worldbody>
  <body><joint type="slide" axis="1 0 0" stiffness="{SPRING_K}" damping="{SPRING_B}"/>
  <geom type="sphere" size="0.1" mass="{SPRING_M}"/></body></worldbody></mujoco>"""


def _model(xml):
    return engine.compile_model(mujoco.MjModel.from_xml_string(xml))


def _order(dts, errs) -> float:
    return float(np.polyfit(np.log(dts), np.log(errs), 1)[0])


@pytest.fixture(scope="module")
def pendulum_reference():
    """Double pendulum, its initial state, and q on a 0.4 s RK4 reference at dt 0.02/64."""
    model = _model(DOUBLE_PENDULUM.format(j="", act=""))
    q0, qd0 = jnp.array([1.0, -0.5]), jnp.array([0.5, 1.0])
    ref_dt = 0.02 / 64
    ref_q = engine.simulate(model, q0, qd0, jnp.zeros(0), 0.4, ref_dt, "rk4")[0]
    return model, q0, qd0, ref_dt, np.asarray(ref_q)


@pytest.mark.parametrize("integrator,order", [("bdf1", 1), ("sdirk2", 2)])
def test_convergence_order(integrator, order, pendulum_reference):
    """Max q error over 0.4 s vs RK4 at dt 0.02/64 (its error ~1e-13 is far below ours);
    regression slope of log error on log dt is the order, as in test_dynamics. The step is
    jitted once with dt traced (one compile instead of one per step count)."""
    model, q0, qd0, ref_dt, ref_q = pendulum_reference
    step = jax.jit(engine.integrators.STEPS[engine.Integrator(integrator)])
    dts, errs = [0.02, 0.01, 0.005], []
    for dt in dts:
        q, qd, err = q0, qd0, 0.0
        for k in range(1, round(0.4 / dt) + 1):
            q, qd = step(model, q, qd, jnp.zeros(0), dt)
            err = max(err, float(np.abs(np.asarray(q) - ref_q[k * round(dt / ref_dt)]).max()))
        errs.append(err)
    measured = _order(dts, errs)
    assert abs(measured - order) < 0.2, f"{integrator}: order {measured:.2f}, expected {order}"


def _spring_exact(t, x0, v0):
    disc = np.sqrt(SPRING_B**2 - 4 * SPRING_M * SPRING_K)
    s1, s2 = (-SPRING_B + disc) / (2 * SPRING_M), (-SPRING_B - disc) / (2 * SPRING_M)
    c1 = (v0 - s2 * x0) / (s1 - s2)
    c2 = x0 - c1
    return c1 * np.exp(s1 * t) + c2 * np.exp(s2 * t)


@pytest.mark.parametrize("integrator,late_tol", [("bdf1", 3e-4), ("sdirk2", 1e-7)])
def test_stiff_spring_stable_where_explicit_euler_blows_up(integrator, late_tol):
    """dt = 0.01 s is 5x explicit Euler's stability limit (h lambda_fast = -10). The implicit
    methods follow the closed form: the fast mode (amplitude |c2| = 0.005) is damped by the
    stability function (R(-10) = 1/11 for BDF1, -0.20 for SDIRK2), so the error never exceeds
    |c2|; after 0.2 s only the slow mode's global error remains (observed 1.3e-4 for BDF1,
    1.1e-8 for SDIRK2)."""
    model = _model(SPRING)
    x0, v0, dt = 1.0, 5.0, 0.01
    with pytest.raises(FloatingPointError, match=r"not finite or exceeds 1e\+10 at step"):
        engine.simulate(model, jnp.array([x0]), jnp.array([v0]), jnp.zeros(0), 4.0, dt,
                        "explicit_euler")
    q, _, t = engine.simulate(model, jnp.array([x0]), jnp.array([v0]), jnp.zeros(0), 4.0, dt,
                              integrator)
    err = np.abs(np.asarray(q[:, 0]) - _spring_exact(np.asarray(t), x0, v0))
    assert err.max() <= 0.005, f"{integrator} stiff spring: max error {err.max():.2e} > |c2|"
    late = float(err[np.asarray(t) >= 0.2].max())
    assert late <= late_tol, f"{integrator} stiff spring: error after 0.2 s {late:.2e}"


# The error path is shared by both methods (SDIRK2's combined status is exercised by its
# rollouts above, where a non-converged step would be a NaN state); BDF1 only, to save a compile.
@pytest.mark.parametrize("integrator", ["bdf1"])
def test_newton_non_convergence_raises_naming_step(integrator):
    """One Newton iteration cannot reach a 1e-30 scaled residual on the nonlinear pendulum;
    the default settings converge on the same rollout (same compiled function)."""
    model = _model(PENDULUM)
    args = (model, jnp.array([1.0]), jnp.array([0.5]), jnp.zeros(1), 0.05, 0.01, integrator)
    with pytest.raises(engine.NewtonConvergenceError,
                       match=rf"Newton did not converge in step 1 \(t = 0.01 s\).*{integrator}"):
        engine.simulate_implicit(*args, max_iter=1, tol=1e-30)
    q, _, _ = engine.simulate_implicit(*args)
    assert bool(jnp.all(jnp.isfinite(q)))
    traced = jax.jit(lambda q0: engine.simulate_implicit(model, q0, *args[2:], max_iter=1,
                                                         tol=1e-30)[0])(args[1])
    assert bool(jnp.all(jnp.isfinite(traced[0]))) and bool(jnp.all(jnp.isnan(traced[1:]))), (
        "inside jit, rows from the first failed Newton step must be NaN")
    status = engine.implicit_rollout(model, *args[1:4], 0.01, 5, engine.Integrator(integrator))[2]
    assert bool(jnp.all(status.converged)), "default Newton settings should converge"
    assert int(status.n_iter.max()) <= 10, f"Newton iterations {status.n_iter}"


@pytest.mark.parametrize("integrator", ["bdf1", "sdirk2"])
def test_rollout_gradients_match_finite_differences(integrator):
    """d loss / d (q0, body mass) through 20 implicit steps (adjoint of each Newton solve via
    lax.custom_root) vs central differences with eps 1e-6 (truncation ~1e-12, Newton residual
    ~1e-14 / eps ~1e-8 relative)."""
    model0 = _model(PENDULUM)
    qd0, ctrl = jnp.array([-1.0]), jnp.array([0.3])

    def loss(q0, mass1):
        model = model0.__class__(**{**model0.__dict__,
                                    "body_mass": model0.body_mass.at[1].set(mass1)})
        q, qd, _ = engine.simulate(model, q0, qd0, ctrl, 0.1, 0.005, integrator)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2)

    args = (jnp.array([0.4]), model0.body_mass[1])
    value, gradient = value_and_gradient(loss, argnums=(0, 1))  # one compile for both
    grads = gradient(*args)
    eps = 1e-6
    for i, (name, x, g) in enumerate(zip(("q0", "mass"), args, grads)):
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        fd = []
        for k in range(x.size):
            dx = np.zeros_like(x)
            dx[k] = eps
            plus, minus = list(args), list(args)
            plus[i] = jnp.asarray((x + dx).reshape(np.shape(args[i])))
            minus[i] = jnp.asarray((x - dx).reshape(np.shape(args[i])))
            fd.append((value(*plus) - value(*minus)) / (2 * eps))
        err = np.abs(np.atleast_1d(g) - np.array(fd)).max() / np.abs(np.array(fd)).max()
        assert err <= 1e-6, f"{integrator}: d loss / d {name}: relative error {err:.2e} vs FD"
