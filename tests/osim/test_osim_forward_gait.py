"""`myotwin osim forward` on gait10dof18musc.osim against OpenSim 4.6's forward simulation.

The whole gait model: planar pelvis, spline-coupled knees (engine.coupling, coupled forward
dynamics), 18 Millard2012EquilibriumMuscles with damped compliant tendons (fiber length as
the state, `--tendon damped_fiber_length`), conditional and moving path points, OpenSim's
force coupling. All muscles excited at 0.3 from the default pose at rest (no ground: the
model falls), activations = excitation, muscles equilibrated; OpenSim integrates with its
Runge-Kutta-Merson at accuracy 1e-9, we with RK4 at 0.1 ms.

Fixed-step RK4 compared at t = 0.05 s. Observed (printed by this test): 1.2e-9 rad, fiber
lengths 5.0e-11 m. Tolerances 3e-8 rad and 1.5e-9 m: twenty-five to thirty times those, the
size of OpenSim's own spread across its accuracies (3e-8 rad at 0.1 s, below), and far below
what a wrong coupling, moment arm or curve gives (1e-3 rad at 0.01 s). Until session 63 RK4 was
1.2e-5 rad from OpenSim at 0.05 s (1.4e-4 in session 20; 1.9e-7 or 6.0e-6 rad at 0.01 s,
depending on the machine): the damped fiber velocity's root finder sometimes returned a
bisection midpoint instead of the root it had reached (`muscle.solve`,
tests/muscle/test_muscle_solve.py), an error of up to 2e-2 m/s in a fiber's velocity at one
stage, so a change of 1e-12 in the excitation moved RK4's coordinates by 5e-6 rad. Since the
fix that change moves the state at 0.05 s by 7.6e-12 (scratch).

Error-controlled (`--integrator rk45`, Dormand-Prince at accuracy 1e-8) compared at 0.1 s with
OpenSim at accuracy 1e-11: observed 3.9e-9 rad and 1.8e-10 m (session 63; 3.5e-9 rad and 2.3e-10 m
before the root finder's fix, session 21; at accuracy 1e-10,
2.0e-8 rad: both within OpenSim's own convergence, 3e-8 rad across its accuracies 1e-7..1e-11).
Tolerances 1e-6 rad and 1e-7 m: thirty times the observed differences, a thousand times below
what a wrong coupling, moment arm or curve gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import forward_final_state, opensim_package
from shared_reference import SHARED, needs

opensim_package()   # skips this module when OpenSim is absent

MODEL = SHARED / "reference/opensim/models/gait10dof18musc.osim"
EXCITATION, T_END_S = 0.3, 0.05
TOL_Q_RAD, TOL_FIBER_M = 3e-8, 1.5e-9
RK45_T_END_S, RK45_ACCURACY, OPENSIM_ACCURACY = 0.1, 1e-8, 1e-11
RK45_TOL_Q_RAD, RK45_TOL_FIBER_M = 1e-6, 1e-7


def _opensim_final_state(t_end_s=T_END_S, accuracy=1e-9):
    return forward_final_state(needs(MODEL), EXCITATION, t_end_s, accuracy)


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("gait_forward"), T_END_S)


def _run(out, t_end_s, *extra):
    status = main(["osim", "forward", str(needs(MODEL)), "--out", str(out), "--excitation",
                   str(EXCITATION), "--tendon", "damped_fiber_length", "--duration-s",
                   str(t_end_s), "--dt-s", "1e-4", "--record-every-s", str(t_end_s),
                   *(extra or ("--integrator", "rk4"))])
    assert status == 0
    return read_storage(out / "states.sto")


def _worst_differences(ours, t_end_s, q_ref, fiber_ref, tol_q, tol_fiber):
    """(max |q - q_ref| rad, max |fiber - fiber_ref| m) at t_end_s, asserting each within tol."""
    assert ours.time_s[-1] == pytest.approx(t_end_s)
    worst_q = worst_fiber = 0.0
    for name, value in q_ref.items():
        label = next(label for label in ours.labels if label.endswith(f"/{name}/value"))
        assert abs(ours.column(label)[-1] - value) <= tol_q, (name, ours.column(label)[-1],
                                                              value)
        worst_q = max(worst_q, abs(ours.column(label)[-1] - value))
    for name, value in fiber_ref.items():
        ours_m = ours.column(f"/forceset/{name}/fiber_length")[-1]
        assert abs(ours_m - value) <= tol_fiber, (name, ours_m, value)
        worst_fiber = max(worst_fiber, abs(ours_m - value))
    return worst_q, worst_fiber


def test_gait_forward_matches_opensim(ours):
    q_ref, fiber_ref = _opensim_final_state()
    worst_q, worst_fiber = _worst_differences(ours, T_END_S, q_ref, fiber_ref, TOL_Q_RAD,
                                              TOL_FIBER_M)
    print(f"RK4 at {T_END_S} s: q within {worst_q:.2e} rad, fiber lengths within "
          f"{worst_fiber:.2e} m of OpenSim's")
    # the pelvis has fallen and the limbs have moved: the comparison is not of a model at rest
    assert np.abs(ours.column("/jointset/ground_pelvis/pelvis_ty/speed")[-1]) > 0.01


def test_gait_forward_error_controlled_matches_opensim_over_0_1_s(tmp_path):
    ours = _run(tmp_path, RK45_T_END_S, "--integrator", "rk45", "--accuracy",
                str(RK45_ACCURACY))
    q_ref, fiber_ref = _opensim_final_state(RK45_T_END_S, OPENSIM_ACCURACY)
    worst_q, worst_fiber = _worst_differences(ours, RK45_T_END_S, q_ref, fiber_ref,
                                              RK45_TOL_Q_RAD, RK45_TOL_FIBER_M)
    print(f"rk45 at {RK45_T_END_S} s: q within {worst_q:.2e} rad, fiber lengths within "
          f"{worst_fiber:.2e} m of OpenSim's")
    assert np.abs(ours.column("/jointset/ground_pelvis/pelvis_ty/speed")[-1]) > 0.1
