"""A welded point mass (mass > 0, inertia 0: OpenSim accepts it, MuJoCo's compiler refuses a
body with mass and no inertia) is merged into its parent (`to_builders.merge_welded`, the
parallel-axis theorem; unit-checked against point clouds in test_osim_coupler_constraint.py);
a point mass on a moving joint is built as one (engine/point_mass.py).

End to end against OpenSim 4.6, run here: `osim_synthetic.TINY` (a hinged link) with a 0.2 kg
point mass welded to the link at an offset and a rotation, muscles left out (the skeleton
alone): the angular acceleration under gravity at random angles and speeds against OpenSim's
udot. Tolerance 1e-12 relative: both solve the same one-degree-of-freedom rigid-body equation
in float64; a point mass dropped, or placed at the weld frame's origin instead of its
mass_center, moves the acceleration by percents. The same with TINY's hinged link itself made
a point mass (no weld).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import osim
from myotwin.engine.dynamics import forward_dynamics
from opensim_live import opensim_package
from osim_synthetic import TINY, welded_tip, write_osim

opensim = opensim_package()

POINT = "0 0 0 0 0 0"


def _no_muscles(root):
    welded_tip(root, POINT)
    objects = root.find(".//ForceSet/objects")
    for child in list(objects):
        objects.remove(child)


def _acceleration_error(path, loaded) -> float:
    """Largest relative difference of the hinge's angular acceleration from OpenSim's udot
    at 5 random angles and speeds."""
    model = opensim.Model(str(path))
    state = model.initSystem()
    coordinate = model.getCoordinateSet().get(0)
    acceleration = jax.jit(lambda q, qd: forward_dynamics(
        loaded.model, q, qd, jnp.zeros(loaded.model.n_u)))
    rng = np.random.default_rng(5)
    worst = 0.0
    for q, qd in rng.uniform(-2.0, 2.0, (5, 2)):
        coordinate.setValue(state, float(q))
        coordinate.setSpeedValue(state, float(qd))
        model.realizeAcceleration(state)
        theirs = coordinate.getAccelerationValue(state)
        ours = float(acceleration(jnp.array([q]), jnp.array([qd]))[0])
        err = abs(ours - theirs) / abs(theirs)
        assert err <= 1e-12, (q, qd, ours, theirs)
        worst = max(worst, err)
    return worst


def test_a_welded_point_mass_is_merged_and_moves_as_in_opensim(tmp_path):
    path = write_osim(tmp_path, TINY, _no_muscles)
    loaded = osim.load(path)
    assert dict(loaded.merged_bodies) == {"tip": "link"}
    worst = _acceleration_error(path, loaded)
    print(f"welded point mass: angular acceleration within {worst:.1e} (relative) of OpenSim's")


def test_a_hinged_point_mass_moves_as_in_opensim(tmp_path):
    def point_link(root):
        root.find(".//Body[@name='link']/inertia").text = POINT
        objects = root.find(".//ForceSet/objects")
        for child in list(objects):
            objects.remove(child)

    path = write_osim(tmp_path, TINY, point_link)
    loaded = osim.load(path)
    np.testing.assert_array_equal(np.asarray(loaded.model.body_inertia), 0.0)
    worst = _acceleration_error(path, loaded)
    print(f"hinged point mass: angular acceleration within {worst:.1e} (relative) of OpenSim's")
