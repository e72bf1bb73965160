"""Locked coordinates (<locked>true</locked>) in the loader and `osim forward`, against OpenSim
4.6 holding the same lock (the tools: test_osim_inverse_kinematics, _inverse_dynamics and
_static_optimization, each `locked`).

OpenSim locks a coordinate at its value in the state, which starts at its default_value; the
loader eliminates it (its dofs follow a constant through `OsimModel.coupling`). Models: arm26
with r_shoulder_elev locked at 0.3 rad (`osim_synthetic.locked_copy`), its two ellipsoids
inactive in the file both codes read (they are not what this file tests, and compiling them
would be most of its time; tests/paths/test_arm26.py and test_osim_forward_arm26 cover them).
* Muscle lengths and moment arms about the elbow with the shoulder held, against OpenSim's
  getLength and computeMomentArm (ours: `generalized_force_moment_arms`, which is OpenSim's
  construction where paths wrap, reduced by the coupling's J^T) at four elbow angles: 1e-12 m
  (the arm26 loader's own agreement, docs/osim.md; observed printed).
* Forward simulation, all muscles at 0.5 from the default pose, against OpenSim's Manager at
  accuracy 1e-9 at 0.1 s (as test_osim_forward_arm26), ours (rk45) at accuracy 1e-9 too: the elbow within 1.5e-6 rad and fiber lengths within
  1e-7 m, that test's tolerances (observed printed; 1.3e-6 rad and 9.7e-8 m with ours at the
  default accuracy 1e-7); the
  shoulder stays at 0.3 rad with speed 0 in every written row.
* Errors: an initial value for the locked coordinate, every coordinate locked (also in
  test_osim_errors), a coupler on a locked coordinate (test_osim_errors).
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import osim
from myotwin.cli.main import main
from myotwin.engine.coupling import full_jacobian, full_positions
from myotwin.osim.forward_start import initial_q
from myotwin.osim.storage import read_storage
from opensim_live import forward_final_state, opensim_package
from osim_synthetic import ARM26_ELLIPSOIDS, locked_copy
from shared_reference import SHARED, needs

opensim = opensim_package()

ARM = SHARED / "reference" / "opensim" / "models" / "arm26.osim"
SHOULDER, ELBOW = "r_shoulder_elev", "r_elbow_flex"
LOCKED_RAD = 0.3


@pytest.fixture
def model(tmp_path):
    return locked_copy(needs(ARM), tmp_path, SHOULDER, LOCKED_RAD, inactive=ARM26_ELLIPSOIDS)


def test_lengths_and_moment_arms_with_the_shoulder_held_match_opensim(model):
    loaded = osim.load(model)
    assert loaded.coordinates == (ELBOW,)
    assert loaded.all_coordinates == (SHOULDER, ELBOW)
    assert loaded.locked_coordinates[SHOULDER] == (LOCKED_RAD, "r_shoulder", "rotational")
    theirs = opensim.Model(str(model))
    state = theirs.initSystem()
    coords = theirs.getCoordinateSet()
    assert coords.get(SHOULDER).getLocked(state)
    worst_length = worst_arm = 0.0

    @jax.jit
    def ours(q):
        q_f = full_positions(loaded.coupling, q)
        arms = full_jacobian(loaded.coupling, q).T @ (   # OpenSim's computeMomentArm
            loaded.model.paths.generalized_force_moment_arms(loaded.model, q_f))
        return q_f, myotwin.muscle_lengths(loaded.model, q_f), arms

    for elbow in (0.1, 0.8, 1.5, 2.2):
        coords.get(ELBOW).setValue(state, elbow)
        assert coords.get(SHOULDER).getValue(state) == LOCKED_RAD      # the lock holds it
        q_f, lengths, arms = ours(jnp.array([elbow]))
        assert float(q_f[loaded.engine_joints.index(SHOULDER)]) == LOCKED_RAD
        for k, name in enumerate(loaded.muscle_names):
            muscle = theirs.getMuscles().get(name)
            worst_length = max(worst_length, abs(float(lengths[k]) - muscle.getLength(state)))
            worst_arm = max(worst_arm, abs(float(arms[0, k])
                                           - muscle.computeMomentArm(state, coords.get(ELBOW))))
    print(f"shoulder locked: lengths within {worst_length:.1e} m, elbow moment arms within "
          f"{worst_arm:.1e} m of OpenSim's")
    assert worst_length <= 1e-12 and worst_arm <= 1e-12


def test_forward_simulation_holds_the_locked_coordinate_as_opensim(model, tmp_path, capsys):
    their_q, their_fiber = forward_final_state(model, excitation=0.5, t_end_s=0.1,
                                               accuracy=1e-9)
    out = tmp_path / "ours"
    assert main(["osim", "forward", str(model), "--out", str(out), "--excitation", "0.5",
                 "--duration-s", "0.1", "--record-every-s", "0.01", "--accuracy", "1e-9"]) == 0
    summary = json.loads(capsys.readouterr().out)
    states = read_storage(out / "states.sto")
    shoulder = "/jointset/r_shoulder/r_shoulder_elev"
    np.testing.assert_array_equal(states.column(f"{shoulder}/value"), LOCKED_RAD)
    np.testing.assert_array_equal(states.column(f"{shoulder}/speed"), 0.0)
    assert summary["final_q"][SHOULDER] == their_q[SHOULDER] == LOCKED_RAD
    d_elbow = abs(summary["final_q"][ELBOW] - their_q[ELBOW])
    d_fiber = max(abs(states.column(f"/forceset/{m}/fiber_length")[-1] - their_fiber[m])
                  for m in their_fiber)
    print(f"shoulder locked, 0.1 s: elbow within {d_elbow:.1e} rad, fiber lengths within "
          f"{d_fiber:.1e} m of OpenSim's")
    assert np.ptp(states.column("/jointset/r_elbow/r_elbow_flex/value")) > 1e-2   # it moved
    assert d_elbow <= 1.5e-6 and d_fiber <= 1e-7


def test_an_initial_value_for_a_locked_coordinate_is_refused(model):
    loaded = osim.load(model)
    with pytest.raises(ValueError, match=r"arm26_r_shoulder_elev_locked.osim: "
                       r"'r_shoulder_elev' is locked at 0\.3 \(its default_value\); unlock it"):
        initial_q(loaded, {SHOULDER: 0.5})


def test_check_lists_the_locked_coordinate(model, capsys):
    assert main(["osim", "check", str(model)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["locked_coordinates"] == {SHOULDER: {"value": LOCKED_RAD,
                                                       "joint": "r_shoulder"}}
    assert list(report["coordinates"]) == [ELBOW]
