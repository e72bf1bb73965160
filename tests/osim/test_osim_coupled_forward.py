"""Forward dynamics of the gait skeleton (planar pelvis, spline-coupled knees) against
OpenSim 4.6's own accelerations.

At random states (knee angles also beyond the splines' knots) and random generalized forces on
the coordinates, OpenSim's udot (muscles off; the generalized force applied through
`Model.realizeAcceleration` with a mobility force) against
`engine.coupled_dynamics.coupled_forward_dynamics`. Tolerance 1e-9 relative to the largest
acceleration: both solve the same 10 x 10 system in float64 (roundoff ~1e-13).
"""

import jax.numpy as jnp
import numpy as np

from myotwin import osim
from myotwin.engine import coupled_forward_dynamics
from opensim_live import opensim_package
from shared_reference import SHARED, needs

opensim = opensim_package()

MODEL = SHARED / "reference/opensim/models/gait10dof18musc_subject01.osim"


def test_gait_skeleton_accelerations_match_opensim():
    loaded = osim.load(needs(MODEL), forces=False)
    names = loaded.coordinates
    model = opensim.Model(str(MODEL))
    for i in range(model.getMuscles().getSize()):
        model.getMuscles().get(i).set_appliesForce(False)
    actuators = {}
    for name in names:   # an ideal actuator on each coordinate carries the generalized force
        act = opensim.CoordinateActuator(name)
        act.setName(f"{name}_drive")
        act.setOptimalForce(1.0)
        model.addForce(act)
        actuators[name] = act
    state = model.initSystem()
    coords = model.getCoordinateSet()
    rng = np.random.default_rng(11)
    knees = [names.index("knee_angle_r"), names.index("knee_angle_l")]
    for knee in (-2.5, -0.9, 0.05, 0.5):
        q = rng.uniform(-0.7, 0.7, len(names))
        q[knees] = knee
        qd = rng.uniform(-2.0, 2.0, len(names))
        tau = rng.uniform(-50.0, 50.0, len(names))
        for k, name in enumerate(names):
            coords.get(name).setValue(state, float(q[k]), False)
            coords.get(name).setSpeedValue(state, float(qd[k]))
        model.realizeVelocity(state)
        controls = opensim.Vector(model.getNumControls(), 0.0)
        for k, name in enumerate(names):
            actuators[name].addInControls(opensim.Vector(1, float(tau[k])), controls)
        model.setControls(state, controls)
        model.realizeAcceleration(state)
        theirs = np.array([coords.get(name).getAccelerationValue(state) for name in names])
        ours = np.asarray(coupled_forward_dynamics(
            loaded.model, loaded.coupling, jnp.asarray(q), jnp.asarray(qd),
            jnp.zeros(loaded.model.n_u), qfrc=jnp.asarray(tau)))
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * np.abs(theirs).max(),
                                   err_msg=f"qdd at knee angles {knee} rad")
