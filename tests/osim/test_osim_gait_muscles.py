"""The 18 muscles of gait10dof18musc.osim and its scaled subject01 against OpenSim 4.6 itself.

Their paths have PathPoints, ConditionalPathPoints (on the knee and hip angles) and four
MovingPathPoints (rectus femoris and vasti insertions: splines of the knee angle, scaled by
MultiplierFunctions in subject01); the knees are CustomJoints whose translations are splines of
the knee angle (`OsimModel.coupling`). Both files are loaded by `osim.load` and by the `opensim`
package, and at poses inside the coordinate ranges -- seeded random ones, with the knee and hip
angles put where the conditional points switch (just inside and just outside OpenSim's 1e-5
slack), at the ends of the knee range (where the moving points' clamping starts) and on spline
knots -- compared:

* every muscle's length with `Muscle.getLength` (state realized to Position): tolerance
  1e-12 m, observed ~1e-15 m (both sides evaluate the same splines, transforms and distances
  in float64);
* the moment arms with respect to every coordinate, ours -d/dq of
  `myotwin.muscle_lengths(model, full_positions(coupling, q))` by `jax.jacfwd` (through the
  knees' coupled translations), with OpenSim's `GeometryPath.computeMomentArm`: tolerance
  1e-12 m, observed ~1e-15 m. Without wraps, and with every moving point's neighbours on
  other bodies, OpenSim's construction (unit tension applied at the path points, J^T, plus
  the mobility force dP/dq . force of each moving point, `addInEquivalentForces`) is exactly
  -dL/dq, computed by another route. Seen to fail: the moving points held fixed on the tibia
  (1.8e-2 m), the knee translations left out of the derivative (2.0e-2 m).
* `CompositePaths.generalized_force_moment_arms` (our computeMomentArm, reduced by J^T) with
  computeMomentArm, also at a pose beyond the knee range: there OpenSim's location is clamped
  (the length no longer changes with the knee) but its dP/dq is not, so computeMomentArm is
  not -dL/dq (by ~0.06 m for rect_fem_r at 0.3 rad); ours reproduces it (1e-12 m), and our
  -dL/dq is checked against central differences of OpenSim's own length there (h = 1e-6 rad:
  truncation ~1e-13 m, rounding ~1e-10 m; tolerance 1e-8 m). Seen to fail: the mobility force
  dropped (1.8e-2 m inside the range, 4.8e-2 m beyond), the clamping dropped (lengths beyond
  the range, 5.4e-3 m).
The poses at the conditional points' range ends are checked to switch them (OpenSim's current
path has one point more on the right than on the left).
"""

import functools

import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import osim
from coupled_paths import path_functions
from opensim_live import opensim_package
from shared_reference import SHARED, needs

opensim = opensim_package()

MODELS = SHARED / "reference/opensim/models"
FILES = ("gait10dof18musc.osim", "gait10dof18musc_subject01.osim")
TOL_LENGTH_M = 1e-12
TOL_ARM_M = 1e-12
TOL_DIFFERENCES_M = 1e-8
SLACK = 1e-5  # OpenSim's ConditionalPathPoint range slack
RECT_FEM_HI, VASTI_HI, GASTROC_LO = -1.45997, -1.42, -0.785398   # the conditional ranges
HIP_HI = 0.785398                                                # iliopsoas' conditional
KNEE_RANGE = (-2.0943950999999998, 0.17453293)
# (knee_angle_r, knee_angle_l, hip_flexion_r, hip_flexion_l) set in each pose (None: random)
SETTINGS = (
    (RECT_FEM_HI + 0.99 * SLACK, RECT_FEM_HI + 1.01 * SLACK, HIP_HI + 0.99 * SLACK,
     HIP_HI + 1.01 * SLACK),
    (VASTI_HI + 0.99 * SLACK, VASTI_HI + 1.01 * SLACK, None, None),
    (GASTROC_LO - 0.99 * SLACK, GASTROC_LO - 1.01 * SLACK, None, None),
    (KNEE_RANGE[1], 0.0, None, None),              # range end (clamping starts), a knot
    (KNEE_RANGE[0], 0.00017453, None, None),       # the other end, another knot
    (None, None, None, None),
)
BEYOND = {"knee_angle_r": 0.3, "knee_angle_l": -2.3}   # outside the knee range


def _poses(loaded):
    rng = np.random.default_rng(2024)
    names = loaded.coordinates
    poses = []
    for setting in SETTINGS:
        q = np.array([rng.uniform(*loaded.coordinate_ranges[c]) for c in names])
        for name, value in zip(("knee_angle_r", "knee_angle_l", "hip_flexion_r",
                                "hip_flexion_l"), setting):
            if value is not None:
                q[names.index(name)] = value
        poses.append(q)
    return poses


class _OpenSim:
    """One OpenSim model and state; lengths and computeMomentArm at a pose."""

    def __init__(self, path, loaded):
        self.model = opensim.Model(str(path))
        self.state = self.model.initSystem()
        self.names = loaded.coordinates
        self.muscles = [self.model.getMuscles().get(n) for n in loaded.muscle_names]
        self.coords = [self.model.getCoordinateSet().get(n) for n in self.names]

    def set(self, q):
        for coord, value in zip(self.coords, q):
            coord.setValue(self.state, float(value), False)
        self.model.realizePosition(self.state)

    def lengths(self, q):
        self.set(q)
        return np.array([m.getLength(self.state) for m in self.muscles])

    def active_points(self, q, muscle):
        """The number of points of `muscle`'s current path (OpenSim's getCurrentPath)."""
        self.set(q)
        path = self.model.getMuscles().get(muscle).getGeometryPath()
        return path.getCurrentPath(self.state).getSize()

    def moment_arms(self, q):
        """(n_muscles, n_coordinates) computeMomentArm."""
        self.set(q)
        return np.array([[m.getGeometryPath().computeMomentArm(self.state, c)
                          for c in self.coords] for m in self.muscles])


@functools.lru_cache(maxsize=None)
def _ours(name):
    loaded = osim.load(needs(MODELS / name))
    return (loaded, *path_functions(loaded))


def _length_and_force_arm_errors(lengths, force_arms, theirs, q, where: str):
    """(length error (m), force moment-arm error (m), OpenSim's computeMomentArm) at q, each
    asserted within its tolerance."""
    q_j = jnp.asarray(q)
    err_l = np.abs(np.asarray(lengths(q_j)) - theirs.lengths(q)).max()
    assert err_l <= TOL_LENGTH_M, f"lengths differ by {err_l:.3e} m {where}"
    reference = theirs.moment_arms(q)
    err_g = np.abs(np.asarray(force_arms(q_j)) - reference).max()
    assert err_g <= TOL_ARM_M, f"force moment arms differ by {err_g:.3e} m {where}"
    return err_l, err_g, reference


@pytest.mark.parametrize("name", FILES)
def test_lengths_and_moment_arms_match_opensim(name):
    loaded, lengths, arms, force_arms = _ours(name)
    assert len(loaded.muscle_names) == 18
    assert len(loaded.model.paths.opensim.move_point) == 4
    theirs = _OpenSim(MODELS / name, loaded)
    poses = _poses(loaded)
    for pose, muscle in ((0, "rect_fem"), (0, "iliopsoas"), (1, "vasti"), (2, "gastroc")):
        points = [theirs.active_points(poses[pose], f"{muscle}_{side}") for side in "rl"]
        assert points[0] == points[1] + 1, (muscle, points)  # the via point on, then off
    worst = np.zeros(3)
    for q in poses:
        where = f"at {dict(zip(loaded.coordinates, np.round(q, 8)))}"
        err_l, err_g, reference = _length_and_force_arm_errors(lengths, force_arms, theirs, q,
                                                               where)
        err_r = np.abs(np.asarray(arms(jnp.asarray(q))) - reference).max()
        assert err_r <= TOL_ARM_M, f"-dL/dq vs computeMomentArm: {err_r:.3e} m {where}"
        worst = np.maximum(worst, (err_l, err_r, err_g))
    print(f"{name}: lengths {worst[0]:.1e} m, -dL/dq {worst[1]:.1e} m, "
          f"generalized-force arms {worst[2]:.1e} m")


@pytest.mark.parametrize("name", FILES)
def test_beyond_the_knee_range(name):
    """OpenSim clamps the moving points' coordinate to its range (lengths equal), but its
    computeMomentArm uses the unclamped dP/dq: our force arms reproduce that, our -dL/dq is
    the derivative of OpenSim's length."""
    loaded, lengths, arms, force_arms = _ours(name)
    theirs = _OpenSim(MODELS / name, loaded)
    q = _poses(loaded)[-1]
    for coordinate, value in BEYOND.items():
        q[loaded.coordinates.index(coordinate)] = value
    _, _, reference = _length_and_force_arm_errors(lengths, force_arms, theirs, q,
                                                   "beyond the knee range")
    ours = np.asarray(arms(jnp.asarray(q)))
    h = 1e-6
    for coordinate in BEYOND:
        k = loaded.coordinates.index(coordinate)
        step = np.zeros_like(q)
        step[k] = h
        differences = -(theirs.lengths(q + step) - theirs.lengths(q - step)) / (2 * h)
        err = np.abs(ours[:, k] - differences).max()
        assert err <= TOL_DIFFERENCES_M, f"-dL/d{coordinate} vs differences: {err:.3e} m"
    rect_fem = loaded.muscle_names.index("rect_fem_r")
    knee = loaded.coordinates.index("knee_angle_r")
    assert abs(ours[rect_fem, knee] - reference[rect_fem, knee]) > 1e-2  # OpenSim's mismatch
