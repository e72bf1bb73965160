"""`musculoskeletal.path_state` with OpenSim's coupling against OpenSim 4.6's GeometryPath.

With coupling "opensim" path_state returns l_MT, OpenSim's point-force moment arms r (its
computeMomentArm, reduced by J^T through coupled coordinates) and v_MT = -r^T qd, which is
OpenSim's `getLengtheningSpeed` (the speeds of the current path's points, each as if fixed on
its body, along the segments). On gait10dof18musc (knees whose translations follow the knee
angle through splines, conditional and moving path points; no wrap objects), at
random poses and speeds, OpenSim run in the test; arm26's ellipsoids and leg6dof9musc's
coupler constraint: tests/osim/test_osim_muscle_state_vs_opensim.py and
test_osim_coupler_constraint.py.

Tolerances: lengths 1e-12 m (the same construction, roundoff on ~0.1-0.5 m paths); moment
arms 1e-10 m (OpenSim's MomentArmSolver; tests/osim/test_osim_gait_muscles.py); speeds 1e-10 m
times |qd|_1 (the arms' tolerance carried through the dot product). A wrong tangent (qd
instead of J qd through the knee splines, a missing moving-point term) moves v_MT by 1e-4 m/s
and more.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import musculoskeletal as ms
from myotwin import osim
from myotwin.osim.forward_start import initial_q
from opensim_live import opensim_package
from shared_reference import SHARED, needs

opensim = opensim_package()

GAIT = SHARED / "reference/opensim/models/gait10dof18musc.osim"
TOL_LENGTH_M, TOL_ARM_M = 1e-12, 1e-10


def test_path_state_matches_opensims_geometry_paths_on_gait10dof18musc():
    loaded = osim.load(needs(GAIT))
    assert loaded.coupling is not None
    msm = ms.musculoskeletal_model(loaded.model, osim.build_muscles(loaded, tendon="opensim"),
                                   coupling="opensim", coordinates=loaded.coupling)
    state_fn = jax.jit(lambda q, qd: ms.path_state(msm, q, qd))
    model = opensim.Model(str(GAIT))
    state = model.initSystem()
    coords = [model.getCoordinateSet().get(c) for c in loaded.coordinates]
    muscles = [model.getMuscles().get(n) for n in loaded.muscle_names]
    rng = np.random.default_rng(4)
    q0 = initial_q(loaded)
    worst = {"length": 0.0, "arm": 0.0, "speed": 0.0}
    for q in (q0, q0 + 0.3 * rng.normal(size=q0.shape), q0 + 0.5 * rng.normal(size=q0.shape)):
        qd = rng.uniform(-2.0, 2.0, q.shape)
        for c, value, speed in zip(coords, q, qd):
            c.setValue(state, float(value), False)
            c.setSpeedValue(state, float(speed))
        model.realizeVelocity(state)
        length, speed, arms = (np.asarray(x) for x in state_fn(jnp.asarray(q),
                                                                jnp.asarray(qd)))
        ref_length = np.array([m.getLength(state) for m in muscles])
        ref_speed = np.array([m.getGeometryPath().getLengtheningSpeed(state) for m in muscles])
        ref_arms = np.array([[m.getGeometryPath().computeMomentArm(state, c) for m in muscles]
                             for c in coords])
        errs = {"length": np.abs(length - ref_length).max(),
                "arm": np.abs(arms - ref_arms).max(),
                "speed": np.abs(speed - ref_speed).max()}
        tols = {"length": TOL_LENGTH_M, "arm": TOL_ARM_M,
                "speed": TOL_ARM_M * np.abs(qd).sum()}
        for key, err in errs.items():
            assert err <= tols[key], f"{key} differs by {err:.3e} at q = {q}"
            worst[key] = max(worst[key], err)
        # the speeds are not trivially small: the check has something to fail on
        assert np.abs(ref_speed).max() > 1e-2
    print(f"worst: length {worst['length']:.1e} m, arms {worst['arm']:.1e} m, speeds "
          f"{worst['speed']:.1e} m/s")
