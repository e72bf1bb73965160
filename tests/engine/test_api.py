"""The engine's exported state functions are compiled once per model structure
(engine/api.py, docs/engine.md "Public functions are compiled"): the model is an argument, so
new parameter values reuse the compiled program, and the values are MuJoCo's for each. Their
arrays are checked against the model (engine/arguments.py): a wrong shape is a ValueError
naming the function, the argument and both shapes."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import myotwin
from myotwin import engine
from myotwin import musculoskeletal as ms
from myotwin.muscle import build_muscles
from myotwin.musculoskeletal import musculoskeletal_model
from myotwin.models import chain


def test_one_compilation_serves_new_parameter_values():
    """mass_matrix and forward_dynamics of the chain with its body masses scaled by 1, 1.5 and
    2: each a single compiled program (JAX's cache of the exported function holds one entry),
    each result MuJoCo's (mj_fullM, qacc) for the MjModel with those masses (1e-12 of the
    largest entry: the same recursions in another order, roundoff only)."""
    mj = mujoco.MjModel.from_xml_string(chain.mjcf())
    model = engine.compile_model(mj)
    q, qd = np.array([0.3, -0.4, 0.5]), np.array([0.2, 0.1, -0.3])
    ctrl = np.full(mj.nu, 0.5)
    engine.mass_matrix.clear_cache()
    engine.forward_dynamics.clear_cache()
    for scale in (1.0, 1.5, 2.0):
        scaled = dataclasses.replace(model, body_mass=model.body_mass * scale,
                                     body_inertia=model.body_inertia * scale)
        m = mujoco.MjModel.from_xml_string(chain.mjcf())
        m.body_mass[:] *= scale
        m.body_inertia[:] *= scale
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        ours = engine.mass_matrix(scaled, jnp.asarray(q))
        np.testing.assert_allclose(ours, full, rtol=0, atol=1e-12 * np.abs(full).max(),
                                   err_msg=f"scale {scale}")
        qacc = engine.forward_dynamics(scaled, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(ctrl))
        np.testing.assert_allclose(qacc, d.qacc, rtol=0, atol=1e-12 * np.abs(d.qacc).max(),
                                   err_msg=f"scale {scale}")
    assert engine.mass_matrix._cache_size() == 1
    assert engine.forward_dynamics._cache_size() == 1


def test_arrays_of_the_wrong_shape_are_named():
    """engine/arguments.py: each exported function and the rollout check their arrays against
    the model at trace time. Before, a q of 5 numbers for the 3-hinge chain gave accelerations,
    a q of 2 an IndexError from inside a gather, a ctrl of 9 rows for 10 steps a broadcasting
    error naming no argument, and a negative dt_s "duration_s 0.1 must be a whole number of
    steps of dt_s -0.001"."""
    mj = mujoco.MjModel.from_xml_string(chain.mjcf())    # n_q = n_v = 3, n_u = 4, n_body = 4
    model = engine.compile_model(mj)
    msm = musculoskeletal_model(model, build_muscles(
        chain.MUSCLES, curves="degroote2016", tendon="rigid", max_isometric_force_N=100.0,
        optimal_fiber_length_m=0.3, tendon_slack_length_m=0.3))   # a pytree, not a Model
    q, qd, ctrl = jnp.zeros(3), jnp.zeros(3), jnp.zeros(4)
    cases = [
        (lambda: engine.forward_dynamics(model, jnp.zeros(5), qd, ctrl),
         "forward_dynamics: q has shape (5,), expected (3,) (the model's n_q = 3)"),
        (lambda: engine.mass_matrix(model, jnp.zeros(2)),
         "mass_matrix: q has shape (2,), expected (3,) (the model's n_q = 3)"),
        (lambda: engine.forward_dynamics(model, q, qd, jnp.zeros(3)),
         "forward_dynamics: ctrl has shape (3,), expected (4,) or a scalar (the model's n_u = 4)"),
        (lambda: engine.inverse_dynamics(model, q, qd, jnp.zeros((3, 1))),
         "inverse_dynamics: qdd has shape (3, 1), expected (3,) (the model's n_v = 3)"),
        (lambda: engine.forward_dynamics(model, q, qd, ctrl, xfrc_applied=jnp.zeros((4, 3))),
         "forward_dynamics: xfrc_applied has shape (4, 3), expected (4, 6) (the model's n_body "
         "= 4, world body included)"),
        (lambda: engine.rollout(model, q, qd, ctrl, 1e-3, 10, "rk4",
                                qfrc_applied=jnp.zeros((9, 3))),
         "rollout: qfrc_applied has shape (9, 3), expected (3,) or (10, 3) (the model's n_v = "
         "3)"),
        (lambda: engine.rollout(model, jnp.zeros(2), qd, ctrl, 1e-3, 10, "rk4"),
         "rollout: q0 has shape (2,), expected (3,) (the model's n_q = 3)"),
        (lambda: engine.rollout(model, q, qd, jnp.zeros((9, 4)), 1e-3, 10, "rk4"),
         "rollout: ctrl has shape (9, 4), expected (4,) or a scalar (the model's n_u = 4; or "
         "(10, 4), one per step)"),
        (lambda: engine.simulate(model, jnp.zeros(4), qd, ctrl, 0.01, 1e-3, "bdf1"),
         "implicit_rollout: q0 has shape (4,), expected (3,) (the model's n_q = 3)"),
        (lambda: engine.simulate(model, q, qd, ctrl, 0.1, -1e-3),
         "dt_s must be a positive number of seconds, got -0.001"),
        (lambda: engine.kinetic_energy(msm, q, qd),
         "kinetic_energy: expected an engine Model (engine.load or engine.compile_model), got "
         "MusculoskeletalModel"),
        # a bool was made 1.0 at trace time (a bool tracer converted to float)
        (lambda: engine.forward_dynamics(model, q, qd, True),
         "forward_dynamics: ctrl must be numbers, got a traced bool array of shape ()"),
        (lambda: engine.mass_matrix(model, [0.0, True, 0.0]),
         "mass_matrix: q must be numbers, got [a traced float64 array of shape (), a traced "
         "bool array of shape (), a traced float64 array of shape ()]"),
        # None for a required array was an AttributeError ('dtype') from inside the check
        (lambda: engine.mass_matrix(model, None), "mass_matrix: q must be an array, got None"),
        # a string was jax.jit's own TypeError (about abstract arrays and static_argnums)
        (lambda: engine.mass_matrix(model, ["0", "1", "2"]),
         "mass_matrix: q must be numbers, got ['0', '1', '2']"),
        (lambda: engine.forward_dynamics(model, q, qd, "0.5"),
         "forward_dynamics: ctrl must be numbers, got '0.5'"),
        (lambda: myotwin.muscle_lengths(model, "0.1"),
         "muscle_lengths: q must be numbers, got '0.1'"),
        (lambda: ms.state_derivative(msm, ms.MusculoskeletalState(
            q, ["0", "0", "0"], jnp.zeros(4), jnp.zeros(4)), 0.5),
         "state_derivative: state.qd must be numbers, got ['0', '0', '0']"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == message
    # a model without tendon springs, dampers or limits has no such tendons: empty rows (this
    # was an AttributeError from inside the function)
    lengths, jac = engine.tendon_lengths_and_jacobians(model, q)
    assert lengths.shape == (0,) and jac.shape == (0, 3)


def test_simulation_inputs_are_converted_and_checked():
    """engine.simulate and the rollouts take lists as NumPy users expect (a list reached the
    jitted rollout as a list of scalars: TracerArrayConversionError), refuse a non-finite
    initial state or input by name (it was reported as the simulation diverging at step 0,
    with advice to reduce dt_s), an MjModel (an AttributeError from inside) and Newton settings
    that cannot converge (tol inf: every step 'converged' with the pendulum not moving)."""
    mj = mujoco.MjModel.from_xml_string(chain.mjcf())    # n_q = n_v = 3, n_u = 4, n_body = 4
    model = engine.compile_model(mj)
    q, qd, ctrl = [0.3, -0.2, 0.1], [0.0, 0.5, 0.0], [0.0] * 4
    # lists give what arrays give (the same compiled rollout: a comparison of two inputs)
    listed = engine.simulate(model, q, qd, ctrl, 0.01, 1e-3, "rk4",
                             qfrc_applied=[0.1, 0.0, -0.1], xfrc_applied=[[0.0] * 6] * 4)
    arrays = engine.simulate(model, jnp.array(q), jnp.array(qd), jnp.array(ctrl), 0.01, 1e-3,
                             "rk4", qfrc_applied=jnp.array([0.1, 0.0, -0.1]),
                             xfrc_applied=jnp.zeros((4, 6)))
    for a, b in zip(listed, arrays):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    q_list, _ = engine.rollout(model, q, qd, ctrl, 1e-3, 3, "rk4")
    assert q_list.shape == (4, 3)
    cases = [
        (lambda: engine.simulate(model, [0.3, np.nan, 0.1], qd, ctrl, 0.01, 1e-3),
         "simulate: q0 is not finite: entry (1,) is nan"),
        (lambda: engine.simulate(model, q, qd, ctrl, 0.01, 1e-3, "bdf1",
                                 qfrc_applied=[0.0, np.inf, 0.0]),
         "simulate_implicit: qfrc_applied is not finite: entry (1,) is inf"),
        (lambda: engine.simulate(model, q, qd, "on", 0.01, 1e-3),
         "simulate: ctrl must be numbers, got 'on'"),
        # np.asarray(float) took True as 1.0 and "0.1" as 0.1
        (lambda: engine.simulate(model, [0.3, True, 0.1], qd, ctrl, 0.01, 1e-3),
         "simulate: q0 must be numbers, got [0.3, True, 0.1]"),
        (lambda: engine.simulate(model, q, ["0", "0", "0"], ctrl, 0.01, 1e-3),
         "simulate: qd0 must be numbers, got ['0', '0', '0']"),
        (lambda: engine.simulate(mj, q, qd, ctrl, 0.01, 1e-3),
         "simulate: expected an engine Model (engine.load or engine.compile_model), got "
         "MjModel"),
        (lambda: engine.simulate_implicit(model, q, qd, ctrl, 0.01, 1e-3, "bdf1", tol=np.inf),
         "simulate_implicit: tol must be a finite number > 0, got inf"),
        (lambda: engine.simulate_implicit(model, q, qd, ctrl, 0.01, 1e-3, "bdf1", max_iter=2.5),
         "simulate_implicit: max_iter must be an integer >= 1, got 2.5"),
        (lambda: engine.simulate_implicit(model, q, qd, ctrl, 0.01, 1e-3, "rk4"),
         "integrator 'rk4' is not implicit; expected one of ['bdf1', 'sdirk2']"),
        (lambda: engine.implicit_rollout(model, jnp.array(q), jnp.array(qd), jnp.zeros(4),
                                         1e-3, 3, "BDF1"),
         "integrator 'BDF1': expected one of"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value).startswith(message), str(err.value)
    # a name works in implicit_rollout as in rollout (a KeyError before)
    q_imp, _, status = engine.implicit_rollout(model, jnp.array(q), jnp.array(qd),
                                               jnp.zeros(4), 1e-3, 3, "bdf1")
    assert q_imp.shape == (4, 3) and bool(jnp.all(status.converged))


def test_scalar_ctrl_and_batched_states_pass_the_checks():
    """A scalar ctrl drives every actuator (MuJoCo's qacc with every ctrl 0.5), and under vmap
    the checks see one state's shape (MuJoCo's qacc at each of two states); 1e-12 of the
    largest entry, as above."""
    mj = mujoco.MjModel.from_xml_string(chain.mjcf())
    model = engine.compile_model(mj)
    qs = np.array([[0.3, -0.4, 0.5], [-0.2, 0.6, 0.1]])
    qds = np.array([[0.2, 0.1, -0.3], [0.0, -0.5, 0.4]])
    batched = jax.vmap(engine.forward_dynamics, in_axes=(None, 0, 0, None))(
        model, jnp.asarray(qs), jnp.asarray(qds), 0.5)
    d = mujoco.MjData(mj)
    for q, qd, ours in zip(qs, qds, np.asarray(batched)):
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, 0.5
        mujoco.mj_forward(mj, d)
        np.testing.assert_allclose(ours, d.qacc, rtol=0, atol=1e-12 * np.abs(d.qacc).max())
