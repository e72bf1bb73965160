"""arm26 rebuilt in Python (myotwin.models.arm26, with its ellipsoids) vs OpenSim 4.6 (issue 4,
acceptance 1).

Reference: /work/shared/reference/opensim/arm26_reference.json, computed with the pip package
opensim 4.6 from arm26.osim (its `notes` explain every number): per sampled state (11 poses of
r_shoulder_elev, r_elbow_flex) and muscle, the MTU length, `moment_arm` (OpenSim's
computeMomentArm), `moment_arm_fd` (central difference -dL/dq, h = 1e-6) and the number of points
of OpenSim's current path (2 more per active wrap).

What is compared, at all 66 (muscle, state) pairs, and why the tolerances:
* Lengths, 1e-9 m: our paths evaluate OpenSim's own construction in float64 (the same formulas
  in another order), so the residual is roundoff; observed <= 1.5e-15 m. This includes OpenSim
  4.6's stale ground locations of tangent points (`opensim_path.py`, step 5): without them
  TRIlong at (1.5, 1.5) would be 3.6 mm short.
* The number of points of the current path, exactly.
* -dL/dq (forward-mode autodiff) vs `moment_arm_fd`, 1e-9 m: the reference's central difference
  carries rounding eps L / h ~ 3e-11 m and truncation h^2 L''' / 6 ~ 1e-13 m; observed
  <= 1.7e-10 m. The same for -dL/dq by reverse mode (`jax.jacrev`), which goes through the
  transposed derivatives of the early-exit loops (`paths/loop_derivatives.py`: the cylinders'
  tangency adjustment, TRIlong having three wrap objects; the ellipsoids' Newton and
  Levenberg-Marquardt solves). No stencil straddles one of the ellipsoid's discontinuities (its
  polyline's segment count, its loops' trip counts), or the difference would read millimetres.
* OpenSim's computeMomentArm vs our `generalized_force_moment_arms` (tension along the current
  path, tangent points fixed on their bodies), 1e-9 m; observed <= 1.5e-15 m. Where a cylinder
  or an ellipsoid wraps, this differs from -dL/dq by up to 3.5 mm (their tangent points are a
  construction, not the geodesic), and the test checks that it does (> 1e-6 m somewhere).
* `lengths_force_arms_and_speeds` (what a forward simulation with OpenSim's coupling
  evaluates: the wraps solved once for the lengths, the point-force arms and OpenSim's
  lengthening speed) vs the same references, 1e-9 m; its speeds against OpenSim's in
  tests/osim/test_osim_muscle_state_vs_opensim.py.
* Which muscles wrap: TRIlat, TRImed, BRA over the cylinder TRI; TRIlong over TRI and
  TRIlongglen (quadrant x; with more than one wrap object OpenSim repeats the wraps and adjusts
  the cylinders' tangency) and at (1.5, 1.5) over the ellipsoid TRIlonghh; BIClong over the
  ellipsoid BIClonghh at 8 states. The ellipsoids wrap at exactly those 9 pairs
  (`ELLIPSOID_PAIRS`, read from our current paths).
The default, ellipsoid-free arm26 (`arm26.build()`) is checked against OpenSim where the
ellipsoids do not wrap in tests/osim/test_osim_arm26.py.
Skipped if the reference is absent.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin.engine.kinematics import kinematics
from myotwin.models import arm26
from myotwin.paths import opensim_path
from shared_reference import SHARED

REFERENCE = SHARED / "reference" / "opensim" / "arm26_reference.json"
pytestmark = pytest.mark.skipif(not REFERENCE.exists(),
                                reason=f"OpenSim reference {REFERENCE} is absent")
TOL_LENGTH_M = 1e-9
TOL_MOMENT_ARM_M = 1e-9
#: (muscle, (shoulder, elbow)) pairs where OpenSim's ellipsoid wrap is active.
ELLIPSOID_PAIRS = {("BIClong", s) for s in [(0.0, 0.0), (0.0, 0.5), (0.0, 1.0), (0.0, 1.5),
                                           (0.0, 2.0), (0.5, 0.3), (0.5, 1.2), (-0.5, 1.0)]}
ELLIPSOID_PAIRS |= {("TRIlong", (1.5, 1.5))}


def _evaluate(model, q):
    """Lengths, -dL/dq, OpenSim's computeMomentArm, current-path point counts and whether an
    ellipsoid's tangent points are in the current path, at q (2,)."""
    paths = model.paths
    ps = paths.opensim
    tab = opensim_path.path_tables(ps)
    n_pt = tab.pt_index.shape[1]
    cur = opensim_path.current_paths(ps, kinematics(model, q), q)
    counts, on_ellipsoid = [], []
    for kind, index, name in zip(paths.path_kind, paths.path_index, paths.path_names):
        if kind == 0:                      # an MJCF tendon: its points, no wrap
            counts.append(jnp.asarray(len(arm26.PATHS[name][0])))
            on_ellipsoid.append(jnp.asarray(False))
            continue
        counts.append(cur.count[index])
        slots = [n_pt + 2 * w for w in range(ps.path_wrap_num[index])
                 if ps.cyl_kind[tab.wrap_cyl[index, w]] == opensim_path.WRAP_ELLIPSOID]
        live = jnp.arange(cur.seq.shape[1]) < cur.count[index]
        on_ellipsoid.append(jnp.any(jnp.isin(cur.seq[index], jnp.array(slots or [-2])) & live))
    lengths, arms = paths.lengths_and_moment_arms(model, q)   # = myotwin.muscle_lengths/-
    # hinges only: velocity coordinates are q itself
    arms_rev = -jax.jacrev(lambda x: paths.muscle_lengths(model, x))(q).T
    return (lengths, arms, paths.generalized_force_moment_arms(model, q), jnp.stack(counts),
            arms_rev, jnp.stack(on_ellipsoid),
            *paths.lengths_force_arms_and_speeds(model, q, jnp.zeros(2))[:2])


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def results(reference):
    model = arm26.build(ellipsoids=True)
    states = np.array([[s["state"]["r_shoulder_elev"], s["state"]["r_elbow_flex"]]
                       for s in reference["samples"]])
    # one state per call: compiled alone (a scratch timing, not a repo command) the program
    # took 122 s against 153 s for its vmapped form (the early-exit loops batched); 11 calls
    # cost milliseconds
    evaluate = jax.jit(_evaluate)
    rows = [evaluate(model, jnp.asarray(state)) for state in states]
    return model, states, [np.stack([np.asarray(r[k]) for r in rows])
                           for k in range(len(rows[0]))]


def _ref(sample, muscle, key):
    o = sample["outputs"][muscle]
    if key == "mtu_length":
        return o[key]
    return np.array([o[key]["r_shoulder_elev"], o[key]["r_elbow_flex"]])


def test_model_structure(results):
    model, _, _ = results
    assert model.paths.path_names == arm26.MUSCLE_NAMES
    assert (model.n_q, model.n_v) == (2, 2)
    # an MJCF tendon for the via-point muscle, OpenSim paths for the wrapping ones
    kinds = dict(zip(model.paths.path_names, model.paths.path_kind))
    assert kinds == {"TRIlong": 1, "TRIlat": 1, "TRImed": 1, "BIClong": 1, "BICshort": 0,
                     "BRA": 1}
    ps = model.paths.opensim
    assert dict(zip(ps.cyl_names, ps.cyl_kind)) == {
        "BIClonghh": opensim_path.WRAP_ELLIPSOID, "TRI": opensim_path.WRAP_CYLINDER,
        "TRIlongglen": opensim_path.WRAP_CYLINDER, "TRIlonghh": opensim_path.WRAP_ELLIPSOID}


def test_lengths_and_moment_arms_vs_opensim(results, reference):
    _, states, (length, arm, arm_gf, count, arm_rev, _, *fused) = results
    fused_length, fused_gf = fused
    compared, worst = 0, {"length": 0.0, "fd": 0.0, "fd_reverse": 0.0, "gf": 0.0,
                          "fused_length": 0.0, "fused_gf": 0.0}
    for i, sample in enumerate(reference["samples"]):
        pose = (float(states[i, 0]), float(states[i, 1]))
        for k, muscle in enumerate(arm26.MUSCLE_NAMES):
            points = sample["outputs"][muscle]["n_current_path_points"]
            assert count[i, k] == points, f"{muscle} at {pose}: {count[i, k]} path points"
            # arm: (n_states, n_v, n_muscles); the reference lists (shoulder, elbow) = qvel order
            errs = {"length": abs(length[i, k] - _ref(sample, muscle, "mtu_length")),
                    "fd": np.abs(arm[i, :, k] - _ref(sample, muscle, "moment_arm_fd")).max(),
                    "fd_reverse": np.abs(arm_rev[i, :, k]
                                         - _ref(sample, muscle, "moment_arm_fd")).max(),
                    "gf": np.abs(arm_gf[i, :, k] - _ref(sample, muscle, "moment_arm")).max(),
                    # the one-pass lengths and point-force arms (the forward simulation's
                    # path state)
                    "fused_length": abs(fused_length[i, k]
                                        - _ref(sample, muscle, "mtu_length")),
                    "fused_gf": np.abs(fused_gf[i, :, k]
                                       - _ref(sample, muscle, "moment_arm")).max()}
            for key, tol in (("length", TOL_LENGTH_M), ("fd", TOL_MOMENT_ARM_M),
                             ("fd_reverse", TOL_MOMENT_ARM_M), ("gf", TOL_MOMENT_ARM_M),
                             ("fused_length", TOL_LENGTH_M), ("fused_gf", TOL_MOMENT_ARM_M)):
                assert errs[key] <= tol, (f"{muscle} at {pose}: {key} error {errs[key]:.3e} m "
                                          f"> {tol:g}")
                worst[key] = max(worst[key], errs[key])
            compared += 1
    assert compared == 66
    print(f"worst errors: {worst}")


def test_wrapped_states_are_covered(results, reference):
    """The comparison includes wrapped paths: every wrapping muscle wraps at some state, and
    there the two moment-arm definitions differ (so both were really tested); the ellipsoids
    wrap at exactly the 9 pairs where OpenSim's do."""
    _, states, (_, arm, arm_gf, count, _, on_ellipsoid, *_) = results
    pairs = {(muscle, (float(states[i, 0]), float(states[i, 1])))
             for i in range(len(states)) for k, muscle in enumerate(arm26.MUSCLE_NAMES)
             if on_ellipsoid[i, k]}
    assert pairs == ELLIPSOID_PAIRS, sorted(pairs ^ ELLIPSOID_PAIRS)
    for k, muscle in enumerate(arm26.MUSCLE_NAMES):
        n_points = len(arm26.PATHS[muscle][0])
        wrapped = [i for i in range(len(states)) if count[i, k] > n_points]
        if muscle == "BICshort":
            assert not wrapped
            continue
        assert wrapped, f"{muscle} never wraps"
        gap = max(np.abs(arm[i, :, k] - arm_gf[i, :, k]).max() for i in wrapped)
        assert gap > 1e-6, f"{muscle}: -dL/dq equals computeMomentArm where wrapped ({gap:.1e})"


def test_build_takes_true_or_false_only():
    """A string such as "no" is true in Python, so it would have switched the ellipsoids on."""
    with pytest.raises(ValueError, match="arm26.build: ellipsoids must be True or False, got 'no'"):
        arm26.build(ellipsoids="no")
