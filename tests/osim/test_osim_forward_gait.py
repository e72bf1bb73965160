"""`myotwin osim forward` on gait10dof18musc.osim against OpenSim 4.6's forward simulation.

The whole gait model: planar pelvis, spline-coupled knees (engine.coupling, coupled forward
dynamics), 18 Millard2012EquilibriumMuscles with damped compliant tendons (fiber length as
the state, `--tendon damped_fiber_length`), conditional and moving path points, OpenSim's
force coupling. All muscles excited at 0.3 from the default pose at rest (no ground: the
model falls), activations = excitation, muscles equilibrated; OpenSim integrates with its
Runge-Kutta-Merson at accuracy 1e-9, we with RK4 at 0.1 ms.

Compared at t = 0.01 s. Observed (printed by this test): 1.9e-7 rad, fiber lengths
1.6e-8 m. Scratch runs (session 20, docs/osim.md): RK4 at 25 us gives 1.3e-6 rad here; later
the two drift apart (1.7e-5 rad at 0.03 s, 1.4e-4 rad at 0.05 s) and our result moves with
the step size: the damped fiber velocity is not smooth where it crosses zero, and a fixed RK4
step loses its order there (OpenSim's error-controlled step does not).
Tolerances 5e-6 rad and 1e-6 m: above both step sizes' errors at 0.01 s, far below what a
wrong coupling, moment arm or curve gives (1e-3 rad and more).
"""

from __future__ import annotations

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package
from shared_reference import SHARED, needs

opensim = opensim_package()

MODEL = SHARED / "reference/opensim/models/gait10dof18musc.osim"
EXCITATION, T_END_S = 0.3, 0.01
TOL_Q_RAD, TOL_FIBER_M = 5e-6, 1e-6


def _opensim_final_state():
    model = opensim.Model(str(needs(MODEL)))
    controller = opensim.PrescribedController()
    muscles = model.getMuscles()
    for i in range(muscles.getSize()):
        controller.addActuator(muscles.get(i))
        controller.prescribeControlForActuator(muscles.get(i).getName(),
                                               opensim.Constant(EXCITATION))
    model.addController(controller)
    state = model.initSystem()
    for i in range(muscles.getSize()):
        muscles.get(i).setActivation(state, EXCITATION)
    model.equilibrateMuscles(state)
    manager = opensim.Manager(model)
    manager.setIntegratorAccuracy(1e-9)
    state.setTime(0.0)
    manager.initialize(state)
    state = manager.integrate(T_END_S)
    model.realizePosition(state)
    q = {c.getName(): c.getValue(state) for c in model.getCoordinateSet()}
    fiber = {m.getName(): m.getFiberLength(state) for m in muscles}
    return q, fiber


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    out = tmp_path_factory.mktemp("gait_forward")
    status = main(["osim", "forward", str(needs(MODEL)), "--out", str(out), "--excitation",
                   str(EXCITATION), "--tendon", "damped_fiber_length", "--duration-s",
                   str(T_END_S), "--dt-s", "1e-4", "--record-every-s", "0.01"])
    assert status == 0
    return read_storage(out / "states.sto")


def test_gait_forward_matches_opensim(ours):
    q_ref, fiber_ref = _opensim_final_state()
    assert ours.time_s[-1] == pytest.approx(T_END_S)
    worst_q = worst_fiber = 0.0
    for name, value in q_ref.items():
        label = next(label for label in ours.labels if label.endswith(f"/{name}/value"))
        assert abs(ours.column(label)[-1] - value) <= TOL_Q_RAD, (name, ours.column(label)[-1],
                                                                  value)
        worst_q = max(worst_q, abs(ours.column(label)[-1] - value))
    for name, value in fiber_ref.items():
        ours_m = ours.column(f"/forceset/{name}/fiber_length")[-1]
        assert abs(ours_m - value) <= TOL_FIBER_M, (name, ours_m, value)
        worst_fiber = max(worst_fiber, abs(ours_m - value))
    print(f"at {T_END_S} s: q within {worst_q:.2e} rad, fiber lengths within "
          f"{worst_fiber:.2e} m of OpenSim's")
    # the pelvis has fallen and the limbs have moved: the comparison is not of a model at rest
    assert np.abs(ours.column("/jointset/ground_pelvis/pelvis_ty/speed")[-1]) > 0.01
