"""arm26.osim loaded by `osim.load` vs OpenSim 4.6 and vs the hand-written `models.arm26`.

1. Against /work/shared/reference/opensim/arm26_reference.json (OpenSim 4.6 on arm26.osim, 11
   poses; tests/paths/test_arm26.py explains the file): MTU lengths and -dL/dq
   (`myotwin.moment_arms`) vs the reference's central differences `moment_arm_fd`, for every
   (muscle, pose) pair except the 9 where OpenSim's ellipsoids (omitted here) wrap.
   Tolerances: lengths 1e-9 m (the paths evaluate OpenSim's construction in float64: roundoff,
   observed ~1e-16 m); moment arms 1e-9 m (the reference's central difference, h = 1e-6,
   carries rounding eps L / h ~ 3e-11 m and truncation ~1e-13 m; observed ~1.6e-10 m).
2. Against `models.arm26.build()` (transcribed by hand from the same file): same coordinates,
   path names and kinds, the same MJCF, lengths and moment arms at a few poses to 1e-15 m
   and the mass matrix to 1e-15 relative (both builders make the same calls, so any
   difference is a parsing or frame error, not roundoff; observed 0), and the same muscle
   parameters and coordinate ranges.
Both tests share one compilation of the path functions (same model structure, one module).
"""

from __future__ import annotations

import json

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
TOL_SAME_MODEL = 1e-15
#: (muscle, (r_shoulder_elev, r_elbow_flex)) pairs where OpenSim's ellipsoid wraps (restated
#: from tests/paths/test_arm26.py, ELLIPSOID_PAIRS; docs/models.md explains them).
ELLIPSOID_PAIRS = {("BIClong", s) for s in [(0.0, 0.0), (0.0, 0.5), (0.0, 1.0), (0.0, 1.5),
                                           (0.0, 2.0), (0.5, 0.3), (0.5, 1.2), (-0.5, 1.0)]}
ELLIPSOID_PAIRS |= {("TRIlong", (1.5, 1.5))}
#: Poses (rad) for the comparison with the hand-written model: straight, wrapped over TRI,
#: over TRI and TRIlongglen, and a negative shoulder angle.
POSES = [(0.0, 0.0), (0.3, 1.2), (1.5, 1.5), (-0.5, 2.0)]


@pytest.fixture(scope="module")
def arm():
    return osim.load(ARM26, omit=("TRIlonghh", "BIClonghh"))


def test_loaded_arm26_vs_opensim(arm):
    if not REFERENCE.exists():
        pytest.skip(f"OpenSim reference {REFERENCE} is absent")
    reference = json.loads(REFERENCE.read_text())
    assert arm.coordinates == ("r_shoulder_elev", "r_elbow_flex")
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


def test_loaded_arm26_equals_hand_written(arm):
    ref = arm26.build()
    assert arm.coordinates == arm26.COORDINATES
    assert arm.muscle_names == arm26.MUSCLE_NAMES == ref.paths.path_names
    assert arm.model.paths.path_names == ref.paths.path_names
    assert arm.model.paths.path_kind == ref.paths.path_kind
    assert arm.path_builder.to_mjcf() == arm26.path_builder().to_mjcf()
    assert dict(arm.coordinate_ranges) == arm26.COORDINATE_RANGES
    assert arm.omitted == ("TRIlonghh", "BIClonghh")
    for muscle, params in arm26.MUSCLES.items():
        loaded = arm.muscles[muscle]
        assert loaded["type"] == "Thelen2003Muscle" and loaded["applies_force"] is True
        assert {k: loaded[k] for k in params} == dict(params), muscle
    worst = {"length": 0.0, "moment arm": 0.0, "mass matrix": 0.0}
    for pose in POSES:
        q = jnp.array(pose)
        errors = {
            "length": np.abs(np.asarray(myotwin.muscle_lengths(arm.model, q))
                             - np.asarray(myotwin.muscle_lengths(ref, q))).max(),
            "moment arm": np.abs(np.asarray(myotwin.moment_arms(arm.model, q))
                                 - np.asarray(myotwin.moment_arms(ref, q))).max()}
        m_loaded = np.asarray(myotwin.mass_matrix(arm.model, q))
        m_ref = np.asarray(myotwin.mass_matrix(ref, q))
        errors["mass matrix"] = np.abs(m_loaded - m_ref).max() / np.abs(m_ref).max()
        for key, err in errors.items():
            assert err <= TOL_SAME_MODEL, f"{key} at {pose}: {err:.3e} > {TOL_SAME_MODEL:g}"
            worst[key] = max(worst[key], err)
    print(f"worst differences loaded vs hand-written: {worst}")
