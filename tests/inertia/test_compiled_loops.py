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

from inertia_models import PENDULUM_XML
from myotwin import engine, inertia
from myotwin.engine.integrators import Integrator
from myotwin.jax_setup import small_loop_option_set


def test_inertial_rollout_and_gradient_loops_are_compiled_whole():
    if not small_loop_option_set():
        pytest.skip("XLA's small-loop option is not in XLA_FLAGS (MYOTWIN_SMALL_LOOP_BYTES=0 "
                    "or the caller's own backend extra options): loops are not hoisted")
    model = inertia.with_muscle_mass(
        engine.compile_model(mujoco.MjModel.from_xml_string(PENDULUM_XML)), "muscle", 0.1, 6)

    def loss(q0, masses):
        m = dataclasses.replace(model, muscle_mass=dataclasses.replace(model.muscle_mass,
                                                                      point_mass=masses))
        q, qd = engine.rollout(m, q0, jnp.zeros(m.n_v), jnp.zeros(m.n_u), 1e-3, 20,
                               Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + jnp.sum(qd[-1] ** 2)

    args = (jnp.array([0.3, -0.4]), model.muscle_mass.point_mass)
    forward = jax.jit(loss).lower(*args).compile().as_text()
    gradient = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(*args).compile().as_text()
    for name, text in (("rollout", forward), ("gradient", gradient)):
        loops = text.count(" while(")
        assert loops > 0, name
        assert "custom-call" not in text and "__ynn_fusion" not in text, name
        # XLA wraps each hoisted loop (nested ones included) in a call carrying this attribute
        assert text.count("xla_cpu_small_call") == loops, f"{name}: a loop not compiled whole"
        assert " scatter(" not in text, f"{name}: a scatter is left in the program"


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
