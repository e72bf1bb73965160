"""`musculoskeletal.path_state` with OpenSim's coupling: v_MT from one forward-mode pass.

With coupling "opensim" path_state takes dL/dt as one jvp of the path lengths along the dofs'
velocity (J qd for coupled coordinates) and never forms -dL/dq. The oracle is the way it was
computed before: v_MT = -(qd . r) with r = J^T (-dL/dq_f) from `lengths_and_moment_arms` (the
full Jacobian, n_v tangents). On arm26 with its two wrap ellipsoids (OpenSim paths: cylinders,
ellipsoids) and on gait10dof18musc (spline-coupled knees, conditional and moving points).

Tolerance 1e-12 of the speed's scale sum_j |qd_j r_ji| per muscle: the two are the same
derivative, linear in the tangent (jacfwd is jvp over the n_v unit tangents), and differ only
in where the products with qd are summed, so by roundoff (observed up to 3e-16 m/s, a
relative 2e-14 at worst, on speeds of 0.01..0.1 m/s). The scale, not |v_MT|, because a muscle
can sit near v_MT = 0 where the summed terms cancel. A wrong tangent (qd instead of J qd, a
missing dof) or the point-force arms in place of -dL/dq moves v_MT by 1e-5..5e-2 m/s here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import musculoskeletal as ms
from myotwin import osim
from myotwin.engine.coupling import full_jacobian, full_positions
from myotwin.engine.rows import take
from myotwin.models import arm26
from myotwin.osim.forward import initial_q
from myotwin.paths.on_model import lengths_and_moment_arms
from shared_reference import SHARED, needs

GAIT = SHARED / "reference/opensim/models/gait10dof18musc.osim"
RTOL = 1e-12


@jax.jit
def _by_length_gradient(msm, q, qd):
    """(l_MT, v_MT = -(qd . r), r = -dL/dq) as path_state formed them before the jvp."""
    c = msm.coordinates
    lengths, arms = lengths_and_moment_arms(msm.skeleton,
                                            q if c is None else full_positions(c, q))
    index = np.asarray(msm.muscle_path, dtype=np.int64)
    lengths, arms = take(lengths, index), take(arms, index, axis=1)
    if c is not None:
        arms = full_jacobian(c, q).T @ arms
    return lengths, -(qd @ arms), arms


@jax.jit
def _length_and_speed(msm, q, qd):
    """path_state's (l_MT, v_MT); its arms are the point-force ones, from the same call as
    before the change, so not compared here."""
    return ms.path_state(msm, q, qd)[:2]


def _check(msm, qs, seed):
    rng = np.random.default_rng(seed)
    for q in qs:
        q = jnp.asarray(q, dtype=jnp.float64)
        qd = jnp.asarray(rng.normal(size=q.shape))
        length, speed = _length_and_speed(msm, q, qd)
        length_ref, speed_ref, gradient_arms = _by_length_gradient(msm, q, qd)
        scale = np.abs(np.asarray(qd)) @ np.abs(np.asarray(gradient_arms))
        np.testing.assert_allclose(length, length_ref, rtol=1e-15, atol=0.0)
        assert np.all(scale > 0.0)
        err = np.abs(np.asarray(speed) - np.asarray(speed_ref))
        assert np.all(err <= RTOL * scale), (np.asarray(q), err / scale)


def test_opensim_speed_is_the_length_gradients_on_arm26_with_ellipsoids():
    msm = ms.musculoskeletal_model(arm26.build(ellipsoids=True), arm26.muscles(),
                                   coupling="opensim")
    # q = (0, 1) is the forward tests' start; (1.2, 0.05) wraps the ellipsoids differently
    _check(msm, [(0.0, 1.0), (0.3, 0.2), (-0.5, 2.0), (1.2, 0.05)], seed=0)


def test_opensim_speed_is_the_length_gradients_on_coupled_gait10dof18musc():
    loaded = osim.load(needs(GAIT))
    assert loaded.coupling is not None
    msm = ms.musculoskeletal_model(loaded.model,
                                   osim.build_muscles(loaded, tendon="damped_fiber_length"),
                                   coupling="opensim", coordinates=loaded.coupling)
    q0 = initial_q(loaded)
    rng = np.random.default_rng(1)
    _check(msm, [q0, q0 + 0.3 * rng.normal(size=q0.shape),
                 q0 + 0.5 * rng.normal(size=q0.shape)], seed=2)

