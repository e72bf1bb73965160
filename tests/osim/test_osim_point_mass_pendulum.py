"""double_pendulum.osim as it is: two PinJoints whose rods are point masses (mass 1 kg, inertia
0; engine/point_mass.py), two CoordinateActuators, against OpenSim 4.6 run here.

* Accelerations at random angles and speeds, with the actuators' controls set (a
  PrescribedController of Constants, as OpenSim's forward tool does) against OpenSim's udot:
  1e-12 relative (both solve the same 2-dof rigid-body equations in float64; giving the rods
  MuJoCo's stand-in inertia 1e-14 kg m^2 would not show, dropping a mass or misplacing it by
  the pin offset would by tens of percent).
* A 2 s swing from the file's default pose (q = -45 deg, -60 deg at rest) under gravity and
  the constant torques: the engine's Dormand-Prince at rtol 1e-12 against OpenSim's Manager at
  accuracy 1e-10. Tolerance 2e-9 rad on the final angles, 10x the observed 1.9e-10:
  OpenSim's error control holds its local error near 1e-10, and the double pendulum amplifies
  early differences over the swing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import osim
from myotwin.engine.adaptive import dormand_prince
from myotwin.engine.dynamics import forward_dynamics
from opensim_live import opensim_package, set_pose
from shared_reference import SHARED, needs

opensim = opensim_package()

MODEL = SHARED / "reference" / "opensim" / "models" / "double_pendulum.osim"
CONTROLS = {"Torq1": 0.3, "Torq2": -0.2}     # N m (optimal_force 1)
TOL_ACCELERATION = 1e-12
SWING_S = 2.0
TOL_SWING_RAD = 2e-9


def _opensim_model():
    model = opensim.Model(str(needs(MODEL)))
    controller = opensim.PrescribedController()
    actuators = model.getActuators()
    for i in range(actuators.getSize()):
        name = actuators.get(i).getName()
        controller.addActuator(actuators.get(i))
        controller.prescribeControlForActuator(name, opensim.Constant(CONTROLS[name]))
    model.addController(controller)
    return model, model.initSystem()


def _loaded():
    pend = osim.load(needs(MODEL))
    assert pend.coordinates == ("q1", "q2") and pend.actuator_names == ("Torq1", "Torq2")
    ctrl = jnp.array([CONTROLS[name] for name in pend.actuator_names])
    return pend, ctrl


def test_accelerations_match_opensim():
    pend, ctrl = _loaded()
    model, state = _opensim_model()
    accel = jax.jit(lambda q, qd: forward_dynamics(pend.model, q, qd, ctrl))
    rng = np.random.default_rng(11)
    worst = 0.0
    for q, qd in zip(rng.uniform(-2.5, 2.5, (8, 2)), rng.uniform(-5.0, 5.0, (8, 2))):
        set_pose(model, state, q, qd)
        model.realizeAcceleration(state)
        theirs = np.array([state.getUDot().get(i) for i in range(2)])
        ours = np.asarray(accel(jnp.asarray(q), jnp.asarray(qd)))
        err = np.abs(ours - theirs).max() / np.abs(theirs).max()
        assert err <= TOL_ACCELERATION, (q, qd, ours, theirs)
        worst = max(worst, err)
    print(f"double_pendulum.osim accelerations within {worst:.1e} (relative) of OpenSim's")


def test_swing_matches_opensim():
    pend, ctrl = _loaded()
    model, state = _opensim_model()
    q0 = np.array([c.getValue(state) for c in model.getCoordinateSet()])
    manager = opensim.Manager(model)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    state = manager.integrate(SWING_S)
    theirs = np.array([c.getValue(state) for c in model.getCoordinateSet()])

    def rhs(t, y, args):
        q, qd = y
        return qd, forward_dynamics(pend.model, q, qd, ctrl)

    result = jax.jit(lambda y0: dormand_prince(rhs, y0, 0.0, jnp.array([SWING_S]),
                                               rtol=1e-12, atol=1e-12))(
        (jnp.asarray(q0), jnp.zeros(2)))
    assert int(result.n_done) == 1
    ours = np.asarray(result.ys[0][-1])
    err = np.abs(ours - theirs).max()
    print(f"double_pendulum.osim after {SWING_S} s: q {ours} vs OpenSim {theirs}, "
          f"max difference {err:.1e} rad")
    assert np.abs(theirs - q0).max() > 0.5      # it swung
    assert err <= TOL_SWING_RAD
