"""arm26.osim loaded by `osim.load` vs OpenSim 4.6 and vs the hand-written `models.arm26`.

1. Against `models.arm26` (transcribed by hand from the same file): arm26.osim as it is equals
   `arm26.build(ellipsoids=True)`, and with `omit=("TRIlonghh", "BIClonghh")` it equals
   `arm26.build()` (the default, without the ellipsoids): the same engine `Model` pytree -- every
   leaf (skeleton, path points, wrap object frames and semi-axes) bitwise and every static
   field (path and wrap-object tables, kinds, quadrants) equal --, the same MJCF text,
   coordinates, coordinate ranges and muscle parameters. Both builders make the same calls, so
   any difference would be a parsing or frame error, not roundoff. Identical pytrees give
   identical results in every function of them, so the comparisons of the hand-written model
   with OpenSim (tests/paths/test_arm26.py: all 66 (muscle, pose) pairs with the ellipsoids)
   carry over to the loaded file.
2. Against /work/shared/reference/opensim/arm26_reference.json (OpenSim 4.6 on arm26.osim, 11
   poses; tests/paths/test_arm26.py explains the file), the ellipsoid-free variant (the
   default `arm26.build()`): MTU lengths and -dL/dq (`myotwin.moment_arms`) vs the reference's
   central differences `moment_arm_fd`, for every (muscle, pose) pair except the 9 where
   OpenSim's ellipsoids wrap. Tolerances: lengths 1e-9 m (the paths evaluate OpenSim's
   construction in float64: roundoff, observed ~1e-16 m); moment arms 1e-9 m (the reference's
   central difference, h = 1e-6, carries rounding eps L / h ~ 3e-11 m and truncation ~1e-13 m;
   observed ~1.6e-10 m).
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import osim
from myotwin.models import arm26
from shared_reference import SHARED

OPENSIM = SHARED / "reference" / "opensim"
ARM26 = OPENSIM / "models" / "arm26.osim"
REFERENCE = OPENSIM / "arm26_reference.json"
pytestmark = pytest.mark.skipif(not ARM26.exists(), reason=f"OpenSim model {ARM26} is absent")

TOL_LENGTH_M = 1e-9
TOL_MOMENT_ARM_M = 1e-9
ELLIPSOIDS = ("TRIlonghh", "BIClonghh")
#: (muscle, (r_shoulder_elev, r_elbow_flex)) pairs where OpenSim's ellipsoid wraps (restated
#: from tests/paths/test_arm26.py, ELLIPSOID_PAIRS; docs/models.md explains them).
ELLIPSOID_PAIRS = {("BIClong", s) for s in [(0.0, 0.0), (0.0, 0.5), (0.0, 1.0), (0.0, 1.5),
                                           (0.0, 2.0), (0.5, 0.3), (0.5, 1.2), (-0.5, 1.0)]}
ELLIPSOID_PAIRS |= {("TRIlong", (1.5, 1.5))}


@pytest.mark.parametrize("omit", [(), ELLIPSOIDS])
def test_loaded_arm26_equals_hand_written(omit):
    arm = osim.load(ARM26, omit=omit)
    ref = arm26.build(ellipsoids=not omit)
    assert arm.omitted == omit
    assert arm.coordinates == arm26.COORDINATES
    assert arm.muscle_names == arm26.MUSCLE_NAMES == ref.paths.path_names
    assert arm.path_builder.to_mjcf() == arm26.path_builder(ellipsoids=not omit).to_mjcf()
    assert dict(arm.coordinate_ranges) == arm26.COORDINATE_RANGES
    for muscle, params in arm26.MUSCLES.items():
        loaded = arm.muscles[muscle]
        assert loaded["type"] == "Thelen2003Muscle" and loaded["applies_force"] is True
        assert {k: loaded[k] for k in params} == dict(params), muscle
    leaves, tree = jax.tree_util.tree_flatten(arm.model)
    ref_leaves, ref_tree = jax.tree_util.tree_flatten(ref)
    assert tree == ref_tree          # the static fields: tables, kinds, names, quadrants
    for a, b in zip(leaves, ref_leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    kinds = dict(zip(ref.paths.path_names, ref.paths.path_kind))
    assert kinds["BIClong"] == (0 if omit else 1)   # a tendon without its ellipsoid


def test_loaded_arm26_without_ellipsoids_vs_opensim():
    if not REFERENCE.exists():
        pytest.skip(f"OpenSim reference {REFERENCE} is absent")
    reference = json.loads(REFERENCE.read_text())
    arm = osim.load(ARM26, omit=ELLIPSOIDS)
    excluded, worst = set(), {"length": 0.0, "moment arm": 0.0}
    for sample in reference["samples"]:
        pose = tuple(float(sample["state"][c]) for c in arm.coordinates)
        q = jnp.array(pose)
        lengths = np.asarray(myotwin.muscle_lengths(arm.model, q))
        arms = np.asarray(myotwin.moment_arms(arm.model, q))  # (n_v, n_muscles)
        for k, muscle in enumerate(arm.muscle_names):
            if (muscle, pose) in ELLIPSOID_PAIRS:
                excluded.add((muscle, pose))
                continue
            out = sample["outputs"][muscle]
            fd = np.array([out["moment_arm_fd"][c] for c in arm.coordinates])
            errors = {"length": abs(lengths[k] - out["mtu_length"]),
                      "moment arm": np.abs(arms[:, k] - fd).max()}
            for key, tol in (("length", TOL_LENGTH_M), ("moment arm", TOL_MOMENT_ARM_M)):
                assert errors[key] <= tol, (f"{muscle} at {pose}: {key} error "
                                            f"{errors[key]:.3e} m > {tol:g} m")
                worst[key] = max(worst[key], errors[key])
    assert excluded == ELLIPSOID_PAIRS
    print(f"worst errors vs OpenSim 4.6 (m): {worst}")
