"""`myotwin osim forward` on arm26.osim against OpenSim 4.6's own forward simulation.

Reference: `arm26_reference.json`, "forward_1s" / "all_0.5_from_q=(0,1)" / "accuracy_1e_9": all
six Thelen2003 muscles excited at 0.5 from q = (0, 1) rad at rest, activations = excitation,
muscles equilibrated, integrated by OpenSim's Runge-Kutta-Merson at accuracy 1e-9 (its
converged solution; the file's notes). The whole chain is compared: the .osim loader, the
paths with OpenSim's cylinders and ellipsoids, the Thelen muscles with compliant tendons and
OpenSim's fiber-length state (`--tendon opensim`, the default), OpenSim's force coupling
(`--coupling opensim`, the default: forces through the point-force moment arms, v_MT OpenSim's
lengthening speed), the skeleton's dynamics, the equilibrium start
and the command's default integrator (error-controlled Dormand-Prince, `--integrator rk45`
at accuracy 1e-7).

Compared at t = 0.1 s, before TRIlong briefly wraps the ellipsoid TRIlonghh near t = 0.128 s:
OpenSim's own solutions at accuracies 1e-3..1e-6 and 1e-7..1e-9 differ by ~1e-2 rad at 0.2 s
because of that event (the reference's notes), and so does ours (1e-2 rad at 0.2 s; the full
second: `benchmarks/arm26_vs_opensim.py`). Observed at 0.1 s (printed by this test): 3.2e-7 rad,
fiber lengths 1.4e-8 m (3.0e-6 rad and 2.4e-7 m at any step with the tendon force as the
state, before session 23: docs/osim.md). Tolerances 1.5e-6 rad and 1e-7 m: about five times
the observed (rk45's error at accuracy 1e-7), below what the tendon-force state gave, and far
below what the power-consistent coupling gives (`--coupling length_gradient`: 1.1e-3 rad at
0.1 s, seen when this test was written), so the test fails if the coupling is lost.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import excited_model, integrate_to, opensim_package
from shared_reference import SHARED

REFERENCE = SHARED / "reference" / "opensim" / "arm26_reference.json"
ARM26 = SHARED / "reference" / "opensim" / "models" / "arm26.osim"
COORDS = {"r_shoulder_elev": "/jointset/r_shoulder/r_shoulder_elev/value",
          "r_elbow_flex": "/jointset/r_elbow/r_elbow_flex/value"}


T_END_S = 0.1
TOL_Q_RAD = 1.5e-6
TOL_FIBER_M = 1e-7


def _forward(out, coupling):
    status = main(["osim", "forward", str(ARM26), "--out", str(out), "--excitation", "0.5",
                   "--initial-q", "r_shoulder_elev=0", "r_elbow_flex=1", "--coupling", coupling,
                   "--duration-s", str(T_END_S), "--dt-s", "1e-4", "--record-every-s", "0.01"])
    assert status == 0
    return read_storage(out / "states.sto")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not (REFERENCE.exists() and ARM26.exists()):
        pytest.skip(f"{REFERENCE} or {ARM26} is absent (shared/reference not mounted)")
    ref = json.loads(REFERENCE.read_text())["forward_1s"]["all_0.5_from_q=(0,1)"]
    trajectory = [r for r in ref["accuracy_1e_9"]["trajectory"] if r["t"] <= T_END_S + 1e-9]
    return _forward(tmp_path_factory.mktemp("arm26_forward"), "opensim"), trajectory


def _row(states, t):
    k = int(np.argmin(np.abs(states.time_s - t)))
    assert abs(states.time_s[k] - t) < 1e-9
    return k


def _q_errors(states, trajectory):
    errors = []
    for ref in trajectory:
        k = _row(states, ref["t"])
        errors += [abs(states.column(label)[k] - ref["q"][c]) for c, label in COORDS.items()]
    assert len(errors) == 2
    return errors


def test_coordinates_follow_opensims_trajectory(run):
    states, trajectory = run
    errors = _q_errors(states, trajectory)
    assert max(errors) < TOL_Q_RAD, errors
    print(f"arm26 at 0.1 s: q within {max(errors):.2e} rad of OpenSim's")


def test_fiber_lengths_follow_opensims_trajectory(run):
    states, trajectory = run
    errors = []
    for ref in trajectory:
        k = _row(states, ref["t"])
        errors += [abs(states.column(f"/forceset/{m}/fiber_length")[k] - lm)
                   for m, lm in ref["fiber_length"].items()]
    assert len(errors) == 6
    assert max(errors) < TOL_FIBER_M, errors
    print(f"arm26 at 0.1 s: fiber lengths within {max(errors):.2e} m of OpenSim's")


CMC_STATES = SHARED / "reference" / "opensim" / "data" / "arm26" / "arm26_CMC_states.sto"
START_S, CMC_ROW_S = 0.0534, 0.05099992   # CMC's rows at 0.05099992 and 0.05349971 s


def _opensim_from_row(row_s, excitation, t_end_s, accuracy, equilibrate=False):
    """OpenSim's Manager from the CMC states file's row at row_s (coordinates, speeds,
    activations and fiber lengths set as the file has them, muscles not equilibrated unless
    `equilibrate`), every muscle at a constant excitation; ({coordinate: value}, {muscle:
    fiber length}) at t_end_s."""
    osim, model, state = excited_model(ARM26, excitation)
    table = read_storage(CMC_STATES)
    k = int(np.flatnonzero(table.time_s == row_s)[0])
    value = dict(zip(table.labels[1:], table.data[k, 1:].tolist()))
    for c in model.getCoordinateSet():
        c.setValue(state, value[c.getName()], False)
        c.setSpeedValue(state, value[f"{c.getName()}_u"])
    for m in model.getMuscles():
        m.setActivation(state, value[f"{m.getName()}.activation"])
        osim.ActivationFiberLengthMuscle.safeDownCast(m).setFiberLength(
            state, value[f"{m.getName()}.fiber_length"])
    if equilibrate:
        model.equilibrateMuscles(state)
    state.setTime(row_s)
    return integrate_to(osim, model, state, t_end_s, accuracy)


def _run_from_cmc(tmp_path, capsys, *extra):
    """`osim forward` of arm26 from CMC's states file at --start-s START_S, all muscles at 0.5
    for T_END_S, rk45 at accuracy 1e-9: (summary, states.sto, CMC's row at CMC_ROW_S as a
    label -> value dict)."""
    opensim_package()
    out = tmp_path / "run"
    status = main(["osim", "forward", str(ARM26), "--out", str(out), "--excitation", "0.5",
                   "--initial-states", str(CMC_STATES), "--start-s", str(START_S), *extra,
                   "--duration-s", str(T_END_S), "--dt-s", "1e-4", "--record-every-s", "0.01",
                   "--accuracy", "1e-9"])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    cmc = read_storage(CMC_STATES)
    row = cmc.data[int(np.flatnonzero(cmc.time_s == CMC_ROW_S)[0])]
    return summary, read_storage(out / "states.sto"), dict(zip(cmc.labels, row.tolist()))


def _final_errors(states, q_ref, fiber_ref):
    """(max |q - q_OpenSim| rad, max |fiber length - OpenSim's| m) at the last row."""
    error_q = max(abs(states.column(COORDS[c])[-1] - v) for c, v in q_ref.items())
    error_fiber = max(abs(states.column(f"/forceset/{m}/fiber_length")[-1] - v)
                      for m, v in fiber_ref.items())
    return error_q, error_fiber


def test_starting_from_cmc_states_follows_opensim(tmp_path, capsys):
    """`--initial-states` with CMC's states file (OpenSim 3 names: r_elbow_flex,
    r_elbow_flex_u, BIClong.activation, BIClong.fiber_length) and --start-s between two of its
    rows: the run starts at the earlier row's time, from its coordinates, speeds, activations
    and fiber lengths as written (no equilibrium), as OpenSim's ForwardTool starts from a
    states file (it moves the initial time to that row's). All muscles at 0.5 for 0.1 s, rk45
    at accuracy 1e-9, against OpenSim's Manager from the same row at 1e-9: observed 3.5e-8 rad
    and 1.2e-9 m (printed); tolerances 3e-7 rad and 1e-8 m. Equilibrated fiber lengths instead
    of the file's would start BIClong 1e-4 m away."""
    summary, states, row = _run_from_cmc(tmp_path, capsys)
    assert summary["start_s"] == CMC_ROW_S and summary["initial_states"]["defaulted"] == []
    assert states.time_s[0] == CMC_ROW_S
    assert states.time_s[-1] == pytest.approx(CMC_ROW_S + T_END_S, abs=1e-12)
    for label, old in [(COORDS["r_elbow_flex"], "r_elbow_flex"),
                       ("/jointset/r_elbow/r_elbow_flex/speed", "r_elbow_flex_u"),
                       ("/forceset/BIClong/activation", "BIClong.activation"),
                       ("/forceset/BIClong/fiber_length", "BIClong.fiber_length")]:
        assert states.column(label)[0] == row[old]
    error_q, error_fiber = _final_errors(
        states, *_opensim_from_row(CMC_ROW_S, 0.5, states.time_s[-1], 1e-9))
    print(f"arm26 from CMC's states: q within {error_q:.2e} rad, fiber lengths within "
          f"{error_fiber:.2e} m of OpenSim's")
    assert error_q < 3e-7 and error_fiber < 1e-8


def test_starting_from_cmc_states_in_equilibrium_follows_opensim(tmp_path, capsys):
    """The same start with `--solve-for-equilibrium` (OpenSim's ForwardTool property
    solve_for_equilibrium_for_auxiliary_states): the file's coordinates, speeds and
    activations, the fibers in equilibrium there (BIClong 1e-4 m from the file's) as OpenSim's
    Thelen2003Muscle finds it (the lengthening speed shared between fiber and tendon by
    stiffness, `osim.muscle_equilibrium`), against OpenSim's Manager after equilibrateMuscles
    at that state; the same tolerances (observed 6.4e-8 rad, 1.4e-9 m; the equilibrium at zero
    tendon velocity of `musculoskeletal.equilibrium_state` instead: 4e-6 rad)."""
    summary, states, row = _run_from_cmc(tmp_path, capsys, "--solve-for-equilibrium")
    assert summary["initial_states"]["solve_for_equilibrium"] is True
    fiber = states.column("/forceset/BIClong/fiber_length")[0]
    assert abs(fiber - row["BIClong.fiber_length"]) > 5e-5
    error_q, error_fiber = _final_errors(
        states, *_opensim_from_row(CMC_ROW_S, 0.5, states.time_s[-1], 1e-9, equilibrate=True))
    print(f"arm26 from CMC's states, equilibrated: q within {error_q:.2e} rad, fiber lengths "
          f"within {error_fiber:.2e} m of OpenSim's")
    assert error_q < 3e-7 and error_fiber < 1e-8
