"""`myotwin osim forward` on leg6dof9musc.osim against OpenSim 4.6's forward simulation.

The model's CoordinateCouplerConstraint `pat_angle_r` (knee_angle_pat_r = knee_angle_r) is
eliminated by `osim.load` (the patella's spline axes follow knee_angle_r; OpenSim keeps the
coordinate and a constraint force), its welded toes body is merged into calcn_r (OpenSim keeps
it apart), and its nine Thelen2003Muscles run with compliant tendons (fiber length as the
state, as OpenSim's: the default `--tendon opensim`) and OpenSim's force coupling. All muscles
excited at 0.3 from the default pose at rest, activations = excitation, muscles equilibrated; no ground, so
the leg falls and swings. Ours error-controlled (`--integrator rk45` at accuracy 1e-8),
OpenSim's Runge-Kutta-Merson at 1e-11, compared at 0.1 s: every coordinate, the eliminated
knee_angle_pat_r included (`states.sto` writes it from knee_angle_r, as OpenSim's states
table has it), and every fiber length.

Tolerances 1e-6 rad (or m) and 1e-7 m, as for the gait model's rk45 comparison
(tests/osim/test_osim_forward_gait.py: observed there 3.5e-9 rad and 2.3e-10 m; here 1.7e-8
rad and 8.9e-10 m): far above
both integrators' errors at these accuracies, far below what a wrong coupling, merged inertia
or moment arm gives (1e-3 and more). The observed differences are printed.
"""

from __future__ import annotations

import json

import numpy as np

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import forward_final_state, opensim_package
from shared_reference import SHARED, needs

opensim_package()   # skips this module when OpenSim is absent

MODEL = SHARED / "reference/opensim/models/leg6dof9musc.osim"
EXCITATION, T_END_S, ACCURACY, OPENSIM_ACCURACY = 0.3, 0.1, 1e-8, 1e-11
TOL_Q, TOL_FIBER_M = 1e-6, 1e-7


def _opensim_final_state():
    return forward_final_state(needs(MODEL), EXCITATION, T_END_S, OPENSIM_ACCURACY)


def test_leg_forward_with_an_eliminated_coupler_matches_opensim(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(["osim", "forward", str(needs(MODEL)), "--out", str(out), "--excitation",
                   str(EXCITATION), "--duration-s", str(T_END_S),
                   "--record-every-s", str(T_END_S), "--integrator", "rk45", "--accuracy",
                   str(ACCURACY)])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    ours = read_storage(out / "states.sto")
    q_ref, fiber_ref = _opensim_final_state()
    assert "knee_angle_pat_r" in q_ref and set(summary["final_q"]) == set(q_ref)
    assert ours.time_s[-1] == T_END_S
    worst_q = worst_fiber = 0.0
    for name, value in q_ref.items():
        label = next(label for label in ours.labels if label.endswith(f"/{name}/value"))
        assert abs(ours.column(label)[-1] - value) <= TOL_Q, (name, ours.column(label)[-1],
                                                              value)
        assert summary["final_q"][name] == ours.column(label)[-1]
        worst_q = max(worst_q, abs(ours.column(label)[-1] - value))
    for name, value in fiber_ref.items():
        ours_m = ours.column(f"/forceset/{name}/fiber_length")[-1]
        assert abs(ours_m - value) <= TOL_FIBER_M, (name, ours_m, value)
        worst_fiber = max(worst_fiber, abs(ours_m - value))
    print(f"leg6dof9musc rk45 at {T_END_S} s: q within {worst_q:.2e}, fiber lengths within "
          f"{worst_fiber:.2e} m of OpenSim's")
    # the eliminated coordinate follows its independent one, and the leg has moved
    knee = ours.column(next(x for x in ours.labels if x.endswith("/knee_angle_r/value")))
    patella = ours.column(next(x for x in ours.labels if x.endswith("/knee_angle_pat_r/value")))
    np.testing.assert_array_equal(patella, knee)
    assert abs(summary["final_qd"]["knee_angle_r"]) > 0.01


def test_an_initial_value_for_the_eliminated_coordinate_is_refused(tmp_path, capsys):
    """knee_angle_pat_r has no value of its own: the constraint gives it from knee_angle_r."""
    status = main(["osim", "forward", str(needs(MODEL)), "--out", str(tmp_path / "run"),
                   "--excitation", "0.3", "--initial-q", "knee_angle_pat_r=0.1"])
    assert status == 2
    err = capsys.readouterr().err
    assert ("'knee_angle_pat_r' follows 'knee_angle_r' through 'pat_angle_r'" in err
            and "give 'knee_angle_r' instead" in err and err.count("\n") == 1), err
