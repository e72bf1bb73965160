"""arm26 rebuilt in Python (myotwin.models.arm26) vs OpenSim 4.6 (issue 4, acceptance 1).

Reference: /work/shared/reference/opensim/arm26_reference.json, computed with the pip package
opensim 4.6 from arm26.osim (its `notes` explain every number): per sampled state (11 poses of
r_shoulder_elev, r_elbow_flex) and muscle, the MTU length, `moment_arm` (OpenSim's
computeMomentArm), `moment_arm_fd` (central difference -dL/dq, h = 1e-6) and the number of points
of OpenSim's current path (2 more per active wrap).

What is compared, and why the tolerances:
* Lengths, 1e-9 m: our paths evaluate OpenSim's own construction in float64 (the same formulas
  in another order), so the residual is roundoff; observed <= 2e-16 m.
* -dL/dq (forward-mode autodiff) vs `moment_arm_fd`, 1e-9 m: the reference's central difference
  carries rounding eps L / h ~ 3e-11 m and truncation h^2 L'''/6 ~ 1e-13 m; observed <= 1.6e-10 m.
  The same for -dL/dq by reverse mode (`jax.jacrev`), which goes through the transposed
  derivative of the early-exit tangency loop (`opensim_cylinder._adjusted`; TRIlong has two
  wrap objects, so the loop runs).
* OpenSim's computeMomentArm vs our `generalized_force_moment_arms` (tension along the current
  path, tangent points fixed on their bodies), 1e-9 m; observed <= 3e-16 m. Where a cylinder
  wraps, this differs from -dL/dq by up to 0.2 mm (OpenSim's cylinder tangent points are a
  construction, not the geodesic), and the test checks that it does (> 1e-6 m somewhere).
* Which muscles wrap: TRIlat, TRImed, BRA over the cylinder TRI; TRIlong over TRI and
  TRIlongglen (quadrant x; with two wrap objects OpenSim iterates the tangency); BIClong over
  the ellipsoid BIClonghh and TRIlong also over the ellipsoid TRIlonghh. Ellipsoid wrapping is
  not implemented (models.arm26.OMITTED_WRAPS), so a (muscle, state) pair is compared only if
  our current path has as many points as OpenSim's. The excluded pairs must be exactly the
  ones where OpenSim's ellipsoid wraps: BIClong at 8 states (3.4-6.5 mm longer in OpenSim) and
  TRIlong at (1.5, 1.5) (4.9 mm); every other pair, wrapped or not, is compared.
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
    """Lengths, -dL/dq, OpenSim's computeMomentArm and current-path point counts at q (2,)."""
    paths = model.paths
    counts = []
    cur = opensim_path.current_paths(paths.opensim, kinematics(model, q), q)
    for kind, index, name in zip(paths.path_kind, paths.path_index, paths.path_names):
        counts.append(cur.count[index] if kind == 1 else jnp.asarray(len(arm26.PATHS[name][0])))
    lengths, arms = paths.lengths_and_moment_arms(model, q)   # = myotwin.muscle_lengths/-
    # hinges only: velocity coordinates are q itself
    arms_rev = -jax.jacrev(lambda x: paths.muscle_lengths(model, x))(q).T
    return (lengths, arms, paths.generalized_force_moment_arms(model, q), jnp.stack(counts),
            arms_rev)


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def results(reference):
    model = arm26.build()
    states = np.array([[s["state"]["r_shoulder_elev"], s["state"]["r_elbow_flex"]]
                       for s in reference["samples"]])
    out = jax.jit(jax.vmap(_evaluate, in_axes=(None, 0)))(model, jnp.asarray(states))
    return model, states, [np.asarray(x) for x in out]


def _ref(sample, muscle, key):
    o = sample["outputs"][muscle]
    if key == "mtu_length":
        return o[key]
    return np.array([o[key]["r_shoulder_elev"], o[key]["r_elbow_flex"]])


def test_model_structure(results):
    model, _, _ = results
    assert model.paths.path_names == arm26.MUSCLE_NAMES
    assert (model.n_q, model.n_v) == (2, 2)
    # MJCF tendons for the via-point muscles, OpenSim paths for the cylinder-wrapping ones
    kinds = dict(zip(model.paths.path_names, model.paths.path_kind))
    assert kinds == {"TRIlong": 1, "TRIlat": 1, "TRImed": 1, "BIClong": 0, "BICshort": 0,
                     "BRA": 1}


def test_lengths_and_moment_arms_vs_opensim(results, reference):
    _, states, (length, arm, arm_gf, count, arm_rev) = results
    excluded, worst = set(), {"length": 0.0, "fd": 0.0, "fd_reverse": 0.0, "gf": 0.0}
    for i, sample in enumerate(reference["samples"]):
        pose = (float(states[i, 0]), float(states[i, 1]))
        for k, muscle in enumerate(arm26.MUSCLE_NAMES):
            if count[i, k] != sample["outputs"][muscle]["n_current_path_points"]:
                excluded.add((muscle, pose))
                continue
            # arm: (n_states, n_v, n_muscles); the reference lists (shoulder, elbow) = qvel order
            errs = {"length": abs(length[i, k] - _ref(sample, muscle, "mtu_length")),
                    "fd": np.abs(arm[i, :, k] - _ref(sample, muscle, "moment_arm_fd")).max(),
                    "fd_reverse": np.abs(arm_rev[i, :, k]
                                         - _ref(sample, muscle, "moment_arm_fd")).max(),
                    "gf": np.abs(arm_gf[i, :, k] - _ref(sample, muscle, "moment_arm")).max()}
            for key, tol in (("length", TOL_LENGTH_M), ("fd", TOL_MOMENT_ARM_M),
                             ("fd_reverse", TOL_MOMENT_ARM_M), ("gf", TOL_MOMENT_ARM_M)):
                assert errs[key] <= tol, (f"{muscle} at {pose}: {key} error {errs[key]:.3e} m "
                                          f"> {tol:g}")
                worst[key] = max(worst[key], errs[key])
    assert excluded == ELLIPSOID_PAIRS, f"pairs not compared: {sorted(excluded)}"
    print(f"worst errors: {worst}")


def test_wrapped_states_are_covered(results, reference):
    """The comparison includes wrapped paths: every cylinder muscle wraps at some compared
    state, and there the two moment-arm definitions differ (so both were really tested)."""
    _, states, (_, arm, arm_gf, count, _) = results
    for k, muscle in enumerate(arm26.MUSCLE_NAMES):
        n_points = len(arm26.PATHS[muscle][0])
        wrapped = [i for i in range(len(states)) if count[i, k] > n_points
                   and (muscle, tuple(states[i])) not in ELLIPSOID_PAIRS]
        if muscle in ("BIClong", "BICshort"):
            assert not wrapped
            continue
        assert wrapped, f"{muscle} never wraps at a compared state"
        gap = max(np.abs(arm[i, :, k] - arm_gf[i, :, k]).max() for i in wrapped)
        assert gap > 1e-6, f"{muscle}: -dL/dq equals computeMomentArm where wrapped ({gap:.1e})"


def test_ellipsoid_states_differ_as_documented(results, reference):
    """Where OpenSim's ellipsoids wrap, our path (ellipsoid omitted) is the shorter straight
    polyline: 1-10 mm shorter, never longer (a sanity check of the exclusion)."""
    _, states, (length, *_rest) = results
    for i, sample in enumerate(reference["samples"]):
        for k, muscle in enumerate(arm26.MUSCLE_NAMES):
            if (muscle, (float(states[i, 0]), float(states[i, 1]))) in ELLIPSOID_PAIRS:
                gap = _ref(sample, muscle, "mtu_length") - length[i, k]
                assert 1e-3 < gap < 1e-2, f"{muscle}: ellipsoid gap {gap:.3e} m"

