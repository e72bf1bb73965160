"""Model markers (osim/markers.py) against OpenSim 4.6 run here, and their Jacobian against
finite differences.

* Positions in ground of gait10dof18musc_subject01's 39 markers at random poses (its knees'
  translations are splines of the knee angle) and of leg6dof9musc's 12 (a coupled patella,
  a welded toe merged into the foot) against OpenSim's Marker::getLocationInGround: 1e-12 m
  (the same frame compositions in float64 on O(1) m numbers).
* d positions / dq (the engine's point Jacobians times the coupling's dq_f/dq, as inverse
  kinematics uses them) against central differences of the positions, step 1e-6: 1e-8 (the
  differences' truncation error ~h^2 |x'''| and roundoff 1e-16 / h on O(1) m).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from myotwin.engine.coupling import full_jacobian, full_positions
from myotwin.jax_setup import configure_jax
from myotwin.osim.forward import dependent_coordinates
from myotwin.osim.loader import load
from myotwin.osim.markers import placement, positions, positions_and_jacobian, read_markers
from opensim_live import opensim_package, set_pose
from shared_reference import SHARED, needs

opensim = opensim_package()
configure_jax()

MODELS = SHARED / "reference" / "opensim" / "models"
CASES = ("gait10dof18musc_subject01.osim", "leg6dof9musc.osim")


def _ours(name):
    path = needs(MODELS / name)
    loaded = load(path, forces=False)
    markers = read_markers(path)
    return path, loaded, markers, placement(markers, loaded.body_names, str(path))


def _q_f(loaded, q):
    return jnp.asarray(q) if loaded.coupling is None else full_positions(loaded.coupling,
                                                                         jnp.asarray(q))


@pytest.mark.parametrize("name", CASES)
def test_positions_match_opensim(name):
    path, loaded, markers, place = _ours(name)
    model = opensim.Model(str(path))
    state = model.initSystem()
    names = [c.getName() for c in model.getCoordinateSet()]
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(4):
        q = rng.uniform(-0.6, 0.6, len(loaded.coordinates))
        value = dict(zip(loaded.coordinates, q))
        dependent = dependent_coordinates(loaded, q[None], np.zeros((1, q.size)))[0][0]
        value.update(zip(loaded.coupled_coordinates, dependent))   # the constraint holds
        ours = np.asarray(positions(loaded.model, place, _q_f(loaded, q)))
        set_pose(model, state, [value[n] for n in names], np.zeros(len(names)))
        model.realizePosition(state)
        theirs = np.array([[model.getMarkerSet().get(m.name).getLocationInGround(state)[k]
                            for k in range(3)] for m in markers])
        err = np.abs(ours - theirs).max()
        assert err <= 1e-12, (name, q, err)
        worst = max(worst, err)
    print(f"{name}: {len(markers)} markers within {worst:.1e} m of OpenSim's")


@pytest.mark.parametrize("name", CASES)
def test_jacobian_matches_finite_differences(name):
    _, loaded, _, place = _ours(name)
    q = np.random.default_rng(4).uniform(-0.5, 0.5, len(loaded.coordinates))
    x, jac = positions_and_jacobian(loaded.model, place, _q_f(loaded, q))
    if loaded.coupling is not None:
        jac = jac @ full_jacobian(loaded.coupling, jnp.asarray(q))
    h = 1e-6
    for k in range(q.size):
        step = np.zeros(q.size)
        step[k] = h
        diff = (np.asarray(positions(loaded.model, place, _q_f(loaded, q + step)))
                - np.asarray(positions(loaded.model, place, _q_f(loaded, q - step)))) / (2 * h)
        np.testing.assert_allclose(np.asarray(jac)[:, :, k], diff, rtol=0, atol=1e-8)
    np.testing.assert_allclose(np.asarray(x), np.asarray(
        positions(loaded.model, place, _q_f(loaded, q))), rtol=0, atol=0)
