"""Inactive wrap objects (<active>false</active>) read from arm26.osim, against OpenSim 4.6 run
in the test on the same file.

OpenSim skips an inactive object inside GeometryPath::applyWrapObjects' loop over the
PathWrapSet; the set's size still decides the repetitions, the cylinders' single-wrap rule and
the order swap (docs/osim.md). Compared at 43 poses (40 random over the coordinates' ranges,
and three where an ellipsoid wraps when active: (1.5, 1.5) TRIlong, (0, 0.5) and (0.5, 1.2)
BIClong):
* both ellipsoids inactive: lengths against getLength and `generalized_force_moment_arms`
  against computeMomentArm, 1e-12 m (OpenSim's construction in float64, observed ~2e-16 m and
  ~2e-15 m); TRIlong at (1.5, 1.5) is then millimetres shorter than with its ellipsoid (OpenSim
  on the original file), so the flag is not ignored;
* TRIlong's first cylinder and its ellipsoid inactive, one active object of three: the same
  comparison. OpenSim's lengths with the two PathWraps removed instead differ from these by up
  to 2.4e-6 m (the remaining cylinder then wraps alone, without the multi-wrap adjustment), far
  above the tolerance, so agreement means the inactive objects' place in the wrap set is kept.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import osim
from myotwin.engine import ModelBuilder
from myotwin.paths import PathBuilder
from myotwin.paths.builder import Point
from opensim_live import opensim_package
from osim_synthetic import deactivate, write_osim
from shared_reference import SHARED, needs

opensim = opensim_package()

ARM = SHARED / "reference" / "opensim" / "models" / "arm26.osim"
COORDINATES = ("r_shoulder_elev", "r_elbow_flex")
TOL_M = 1e-12
_RNG = np.random.default_rng(7)
POSES = np.vstack([np.column_stack([_RNG.uniform(-1.5, 2.5, 40), _RNG.uniform(0.0, 2.4, 40)]),
                   [[1.5, 1.5], [0.0, 0.5], [0.5, 1.2]]])


def _copy(tmp_path, inactive, removed=()):
    def edit(root):
        deactivate(root, inactive)
        for wraps in root.iter("objects"):
            for pw in [p for p in wraps if p.tag == "PathWrap"]:
                if pw.find("wrap_object").text.strip() in removed:
                    wraps.remove(pw)
    name = "_".join(("arm26", *inactive, *(("removed",) if removed else ()))) + ".osim"
    return write_osim(tmp_path, needs(ARM).read_text(), edit, name=name)


def _opensim(path):
    """OpenSim's lengths (n, 6) and computeMomentArm (n, 2, 6) at POSES."""
    model = opensim.Model(str(path))
    state = model.initSystem()
    coords = [model.getCoordinateSet().get(c) for c in COORDINATES]
    muscles = model.getMuscles()
    lengths, arms = [], []
    for pose in POSES:
        for c, value in zip(coords, pose):
            c.setValue(state, float(value))
        model.realizePosition(state)
        lengths.append([muscles.get(i).getLength(state) for i in range(muscles.getSize())])
        arms.append([[muscles.get(i).computeMomentArm(state, c)
                      for i in range(muscles.getSize())] for c in coords])
    return np.array(lengths), np.array(arms)


def _ours(path):
    loaded = osim.load(path)
    assert loaded.coordinates == COORDINATES
    model = loaded.model
    evaluate = jax.jit(lambda q: (myotwin.muscle_lengths(model, q),
                                  model.paths.generalized_force_moment_arms(model, q)))
    out = [evaluate(jnp.asarray(pose)) for pose in POSES]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out]), loaded


def _compare(theirs, ours, what):
    d_length = np.abs(theirs[0] - ours[0]).max()
    d_arm = np.abs(theirs[1] - ours[1]).max()
    print(f"{what}: lengths within {d_length:.1e} m, computeMomentArm within {d_arm:.1e} m")
    assert d_length <= TOL_M and d_arm <= TOL_M


def test_inactive_ellipsoids_match_opensim(tmp_path):
    path = _copy(tmp_path, ("TRIlonghh", "BIClonghh"))
    theirs = _opensim(path)
    *ours, loaded = _ours(path)
    ps = loaded.model.paths.opensim
    active = dict(zip(ps.cyl_names, ps.cyl_active))
    assert active == {"TRI": True, "TRIlongglen": True, "TRIlonghh": False,
                      "BIClonghh": False}
    _compare(theirs, ours, "ellipsoids inactive")
    original = _opensim(needs(ARM))[0]
    trilong = loaded.muscle_names.index("TRIlong")
    shorter = original[-3, trilong] - theirs[0][-3, trilong]
    print(f"TRIlong at (1.5, 1.5): {shorter * 1e3:.2f} mm shorter than with its ellipsoid")
    assert shorter > 1e-3


def test_one_active_object_of_three_keeps_the_multi_wrap_rules(tmp_path):
    inactive = ("TRIlonghh", "TRIlongglen")
    path = _copy(tmp_path, inactive)
    theirs = _opensim(path)
    *ours, loaded = _ours(path)
    _compare(theirs, ours, "TRIlong with one active object of three")
    removed = _opensim(_copy(tmp_path, inactive, removed=inactive))[0]
    trilong = loaded.muscle_names.index("TRIlong")
    differs = np.abs(removed[:, trilong] - theirs[0][:, trilong]).max()
    print(f"OpenSim, the PathWraps removed instead: TRIlong differs by up to {differs:.1e} m")
    assert differs > 1e3 * TOL_M


def test_builder_active_flag():
    """`PathBuilder`'s `active`: a non-bool is refused by name; an inactive sphere 2 mm off
    the straight path's line leaves it straight (exactly its chord), where an active one wraps
    it."""
    b = ModelBuilder("arm", contact=False)
    b.add_body("upper", mass=1.0, com=(0, 0, -0.1), inertia=(0.01, 0.01, 0.001))
    b.add_joint("upper", "hinge", name="shoulder", axis=(0, 1, 0))
    pb = PathBuilder(b)
    with pytest.raises(ValueError, match=r"OpenSim cylinder 'c': active must be True or "
                                         r"False, got 'no'"):
        pb.add_opensim_cylinder("c", "upper", radius=0.01, length=0.1, active="no")
    lengths = []
    for active in (False, True):
        pb = PathBuilder(b)
        pb.add_opensim_sphere("s", "upper", pos=(0, 0, -0.1), radius=0.02, active=active)
        pb.add_path("m", [Point("upper", (0.002, 0, 0.0)), Point("upper", (0.002, 0, -0.2))],
                    wraps=["s"])
        model = pb.build()
        lengths.append(float(myotwin.muscle_lengths(model, jnp.zeros(1))[0]))
    assert lengths[0] == pytest.approx(0.2, abs=1e-15)
    assert lengths[1] > 0.2 + 1e-3
