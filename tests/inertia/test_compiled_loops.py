"""An inertial rollout and its reverse-mode gradient compile into XLA's whole-loop calls.

`myotwin.configure_jax` (conftest) lets XLA's CPU compiler run a small `while` loop as one
compiled call (jax_setup.py); a scatter or a LAPACK/YNNPACK call in the loop prevents it and
costs ~2x (benchmarks/RESULTS.md, session 9). The mass-point stage is written without them
(inertia/polyline.py `_piece_rows`, anchors.py, engine/cholesky.py). Checked on the compiled
HLO of a rollout and of its gradient w.r.t. the initial state and the point masses, not on
wall time."""

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import pytest

from inertia_models import PENDULUM_XML, WRAPPED_PENDULUM_XML
from myotwin import engine, inertia
from myotwin.engine.integrators import Integrator
from myotwin.jax_setup import small_loop_option_set


def _skip_without_small_loops():
    if not small_loop_option_set():
        pytest.skip("XLA's small-loop option is not in XLA_FLAGS (MYOTWIN_SMALL_LOOP_BYTES=0 "
                    "or the caller's own backend extra options): loops are not hoisted")


def _rollout_loss(model, n_steps=20):
    def loss(q0, masses):
        m = dataclasses.replace(model, muscle_mass=dataclasses.replace(model.muscle_mass,
                                                                      point_mass=masses))
        q, qd = engine.rollout(m, q0, jnp.zeros(m.n_v), jnp.zeros(m.n_u), 1e-3, n_steps,
                               Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + jnp.sum(qd[-1] ** 2)
    return loss


def _assert_compiled_whole(name, text):
    loops = text.count(" while(")
    assert loops > 0, name
    assert "custom-call" not in text and "__ynn_fusion" not in text, name
    # XLA wraps each hoisted loop (nested ones included) in a call carrying this attribute
    assert text.count("xla_cpu_small_call") == loops, f"{name}: a loop not compiled whole"
    assert " scatter(" not in text, f"{name}: a scatter is left in the program"


def test_inertial_rollout_and_gradient_loops_are_compiled_whole():
    _skip_without_small_loops()
    model = inertia.with_muscle_mass(
        engine.compile_model(mujoco.MjModel.from_xml_string(PENDULUM_XML)), "muscle", 0.1, 6)
    loss = _rollout_loss(model)
    args = (jnp.array([0.3, -0.4]), model.muscle_mass.point_mass)
    _assert_compiled_whole("rollout", jax.jit(loss).lower(*args).compile().as_text())
    _assert_compiled_whole(
        "gradient", jax.jit(jax.grad(loss, argnums=(0, 1))).lower(*args).compile().as_text())


def test_wrapped_mass_point_rollout_is_compiled_whole():
    """Mass points on a path that wraps a cylinder (arcs.py, path_fraction._positions): the
    arc points are placed without a scatter and summed without a library reduction, so the
    rollout's loop compiles whole. Before session 47 neither held (this test failed on the
    custom-call) and a wrapped myoelbow Euler step with mass points took 445 us against 14 us
    massless (benchmarks/RESULTS.md, "Session 47"). Only the rollout is checked: its
    gradient's backward loop is still not compiled whole (the transposed gathers are
    scatter-adds; docs/inertia.md)."""
    _skip_without_small_loops()
    mj_model = mujoco.MjModel.from_xml_string(WRAPPED_PENDULUM_XML)
    q0 = jnp.array([0.3, -0.5])
    _assert_wrap_active(mj_model, q0)
    model = inertia.with_muscle_mass(engine.compile_model(mj_model), "wrapped", 0.1, 6)
    args = (q0, model.muscle_mass.point_mass)
    text = jax.jit(_rollout_loss(model)).lower(*args).compile().as_text()
    _assert_compiled_whole("wrapped rollout", text)


def _assert_wrap_active(mj_model, q0):
    """The model's docstring, checked in MuJoCo: around q0 (elbow -1 to 0 rad, the 20 steps
    move it by far less) the tendon wraps the cylinder (ten_wrapnum 4: two sites and two
    tangent points) and dL/d(elbow) is minus the radius, 0.04 m (the tendon rolls on the
    cylinder; MuJoCo's ten_J to 1e-12 m/rad, roundoff of its tangent points)."""
    import numpy as np

    assert -1.0 < float(q0[1]) < 0.0, "the rollout must start inside the checked elbow range"
    data = mujoco.MjData(mj_model)
    for elbow in np.linspace(-1.0, 0.0, 5):
        data.qpos[:] = [float(q0[0]), elbow]
        mujoco.mj_forward(mj_model, data)
        assert data.ten_wrapnum[0] == 4, f"elbow {elbow}: the wrap is not active"
        ten_j = np.zeros((1, mj_model.nv))
        mujoco.mju_sparse2dense(ten_j, data.ten_J, mj_model.ten_J_rownnz,
                                mj_model.ten_J_rowadr, mj_model.ten_J_colind)
        np.testing.assert_allclose(ten_j[0], [0.0, -0.04], atol=1e-12)


def test_piece_rows_equal_numpy_indexing():
    """polyline._piece_rows (static slices, or a gather when a path's points are not
    consecutive) is NumPy's x[piece_points] with zeros in the padding."""
    import numpy as np

    from myotwin.inertia import polyline

    x = np.arange(1.0, 8.0)
    index = np.array([[2, 3, 4], [2, 3, 4], [0, 5, 0], [6, 1, 0]])
    valid = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 0]], dtype=bool)
    tables = polyline.PolylineTables(*([None] * (len(polyline.PolylineTables._fields) - 2)),
                                     index, valid)
    got = np.asarray(polyline._piece_rows(jnp.asarray(x), tables))
    np.testing.assert_array_equal(got, np.where(valid, x[index], 0.0))
