"""The engine's exported state functions are compiled once per model structure
(engine/api.py, docs/engine.md "Public functions are compiled"): the model is an argument, so
new parameter values reuse the compiled program, and the values are MuJoCo's for each."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import mujoco
import numpy as np

from myotwin import engine
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
