"""`myotwin osim forward` through a slack musculotendon, against OpenSim 4.6's own forward
simulation, live.

The model: `osim_synthetic.TINY` (a pendulum on a hinge, one unpennated Thelen2003Muscle from
the ground to the link) with the tendon slack length 0.28 m, released at rest from
theta = 0.6 rad with the excitation at the minimum activation 0.01. The path (0.273 m) is
shorter than the tendon's slack length, so OpenSim's equilibrateMuscles leaves the fiber at
its minimum length, 0 for an unpennated fiber (Warning_FiberAtLowerBound), and while the
musculotendon stays slack its fiber is clamped there (isFiberStateClamped: the velocity law
would shorten it; OpenSim holds it, no fiber force). Near t = 0.125 s the swing makes the
path longer than the tendon and the fiber leaves its bound, lengthening under tendon force.
Ours must start the fiber at that bound (`musculoskeletal.equilibrium_state`, named in the
summary's `muscles_starting_at_min_fiber_length`), hold it (`muscle.tendon`'s clamp; with the
clamp switched off, seen when written, theta ends 4.2e-4 rad from OpenSim's) and follow
OpenSim through the release.

Both integrate at accuracy 1e-9 (OpenSim's Runge-Kutta-Merson, our Dormand-Prince); rows every
10 ms to 0.5 s. Observed when written: theta within 1e-8 rad, fiber length within 3.3e-9 m (at
the row right after the release, 2.6e-5 m long). Tolerances 1e-7 rad and 1e-7 m: about ten
and thirty times that, far below the fiber's 2.6e-5 m one row after the release or its
0.047 m at the end, so a release one row early or late fails.
"""

from __future__ import annotations

import json

import numpy as np

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package
from osim_synthetic import TINY, set_muscle_property, write_osim

opensim = opensim_package()

TENDON_SLACK_M = 0.28
THETA0_RAD = 0.6
EXCITATION = 0.01
T_END_S = 0.5
ROW_S = 0.01
ACCURACY = 1e-9
TOL_Q_RAD = 1e-7
TOL_FIBER_M = 1e-7


def _model(tmp_path):
    def edit(root):
        set_muscle_property(root, "Thelen2003Muscle", "tendon_slack_length",
                            repr(TENDON_SLACK_M))
    return write_osim(tmp_path, TINY, edit, "tiny_slack.osim")


def _opensims(path):
    """OpenSim's rows (t, theta, fiber length) every ROW_S, from t = 0."""
    model = opensim.Model(str(path))
    controller = opensim.PrescribedController()
    muscle = model.getMuscles().get(0)
    controller.addActuator(muscle)
    controller.prescribeControlForActuator(muscle.getName(), opensim.Constant(EXCITATION))
    model.addController(controller)
    state = model.initSystem()
    theta = model.getCoordinateSet().get(0)
    theta.setValue(state, THETA0_RAD)
    muscle.setActivation(state, EXCITATION)
    model.equilibrateMuscles(state)
    rows = [(0.0, theta.getValue(state), muscle.getFiberLength(state))]
    manager = opensim.Manager(model)
    manager.setIntegratorAccuracy(ACCURACY)
    state.setTime(0.0)
    manager.initialize(state)
    for k in range(1, int(round(T_END_S / ROW_S)) + 1):
        state = manager.integrate(k * ROW_S)
        model.realizePosition(state)
        rows.append((state.getTime(), theta.getValue(state), muscle.getFiberLength(state)))
    return np.array(rows)


def test_a_slack_fiber_is_held_at_its_minimum_and_released_as_in_opensim(tmp_path):
    path = _model(tmp_path)
    theirs = _opensims(path)
    out = tmp_path / "ours"
    status = main(["osim", "forward", str(path), "--out", str(out), "--excitation",
                   str(EXCITATION), "--initial-q", f"theta={THETA0_RAD}", "--duration-s",
                   str(T_END_S), "--dt-s", str(ROW_S), "--record-every-s", str(ROW_S),
                   "--accuracy", str(ACCURACY)])
    assert status == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["muscles_starting_at_min_fiber_length"] == ["m"]
    table = read_storage(out / "states.sto")
    column = {label: k for k, label in enumerate(table.labels)}
    ours = table.data[:, [0, column["/jointset/hinge/theta/value"],
                          column["/forceset/m/fiber_length"]]]
    assert ours.shape == theirs.shape and np.abs(ours[:, 0] - theirs[:, 0]).max() < 1e-12
    held = theirs[:, 2] == 0.0
    # the regime: held at 0 for the first rows, then released and lengthening
    assert held[:10].all() and not held[-20:].any() and theirs[-1, 2] > 0.04, theirs[:, 2]
    err_q = np.abs(ours[:, 1] - theirs[:, 1]).max()
    err_fiber = np.abs(ours[:, 2] - theirs[:, 2])
    released = int(np.argmin(held))
    print(f"slack pendulum: theta within {err_q:.1e} rad, fiber within {err_fiber.max():.1e} "
          f"m of OpenSim's; held for {released} rows, then {theirs[released, 2]:.2e} m")
    assert (ours[held, 2] == 0.0).all(), ours[held, 2]
    assert err_q <= TOL_Q_RAD and err_fiber.max() <= TOL_FIBER_M, (err_q, err_fiber)
