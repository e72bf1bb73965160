"""OpenSim's WrapSphere (`paths/opensim_sphere.py`) read from a synthetic .osim file, against
OpenSim 4.6 run in the test.

The model (`_model`): a link on a two-axis CustomJoint (theta about z, then phi about x) at
(0, 1, 0), a WrapSphere of radius 5 cm on ground centred on the joint (rotated frame,
xyz_body_rotation (0.2, -0.1, 0.3)), and one muscle from above the sphere to the link below
it, wrapped over it. At 60 random poses (|theta|, |phi| < 0.9 rad: the straight line crosses
the sphere at most of them, so the wrap is active there; counted) and for each quadrant
("all" and the six half-spaces, which change the length by up to 10 cm at a third of the
poses, so every branch of OpenSim's quadrant logic is met):
* the length against OpenSim's getLength: 1e-12 m (closed-form tangent points, a few float64
  operations; observed ~5e-16 m);
* `generalized_force_moment_arms` against OpenSim's computeMomentArm: 1e-12 m (observed
  ~1e-16 m);
* `myotwin.moment_arms` (-dL/dq by autodiff) against central differences of OpenSim's own
  length (h = 1e-6 rad: truncation ~h^2 L''' ~ 1e-13 m, rounding ~eps L / h ~ 1e-10 m), at the
  poses where the status does not change within h: 1e-8 m.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import osim
from opensim_live import opensim_package

opensim = opensim_package()

QUADRANTS = ("all", "x", "-x", "y", "-y", "z", "-z")
RADIUS_M = 0.05
_ZERO_AXES = "".join(
    f'<TransformAxis name="{name}"><coordinates></coordinates><axis>{axis}</axis>'
    f'<Constant name="function"><value>0</value></Constant></TransformAxis>'
    for name, axis in (("rotation3", "0 1 0"), ("translation1", "1 0 0"),
                       ("translation2", "0 1 0"), ("translation3", "0 0 1")))


def _axis(name: str, coordinate: str, axis: str) -> str:
    return (f'<TransformAxis name="{name}"><coordinates>{coordinate}</coordinates>'
            f'<axis>{axis}</axis><LinearFunction name="function"><coefficients>1 0'
            "</coefficients></LinearFunction></TransformAxis>")


def _model(quadrant: str) -> str:
    coordinates = "".join(
        f'<Coordinate name="{c}"><default_value>0</default_value><range>-3 3</range>'
        "</Coordinate>" for c in ("theta", "phi"))
    points = "".join(
        f'<PathPoint name="m-P{k}"><socket_parent_frame>{frame}</socket_parent_frame>'
        f"<location>{location}</location></PathPoint>"
        for k, frame, location in ((1, "/ground", "0.01 1.1 0.005"),
                                   (2, "/bodyset/link", "0.01 -0.1 0")))
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="ball">
  <Ground name="ground"><WrapObjectSet name="wrapobjectset"><objects>
    <WrapSphere name="head"><xyz_body_rotation>0.2 -0.1 0.3</xyz_body_rotation>
      <translation>0 1 0</translation><quadrant>{quadrant}</quadrant>
      <radius>{RADIUS_M}</radius></WrapSphere>
  </objects></WrapObjectSet></Ground>
  <gravity>0 -9.80665 0</gravity>
  <BodySet name="bodyset"><objects><Body name="link"><mass>1.5</mass>
    <mass_center>0 -0.2 0</mass_center><inertia>0.02 0.003 0.02 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet name="jointset"><objects><CustomJoint name="ball">
    <socket_parent_frame>ground_offset</socket_parent_frame>
    <socket_child_frame>link_offset</socket_child_frame>
    <coordinates>{coordinates}</coordinates>
    <frames>
      <PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent>
        <translation>0 1 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
      <PhysicalOffsetFrame name="link_offset"><socket_parent>/bodyset/link</socket_parent>
        <translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
    </frames>
    <SpatialTransform>{_axis("rotation1", "theta", "0 0 1")}{_axis("rotation2", "phi", "1 0 0")}
      {_ZERO_AXES}</SpatialTransform>
  </CustomJoint></objects></JointSet>
  <ForceSet name="forceset"><objects><Thelen2003Muscle name="m">
    <GeometryPath name="geometrypath"><PathPointSet><objects>{points}</objects></PathPointSet>
      <PathWrapSet><objects><PathWrap name="w"><wrap_object>head</wrap_object>
        <method>hybrid</method></PathWrap></objects></PathWrapSet></GeometryPath>
    <max_isometric_force>100</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>
    <tendon_slack_length>0.2</tendon_slack_length>
  </Thelen2003Muscle></objects></ForceSet>
</Model></OpenSimDocument>"""


POSES = np.random.default_rng(0).uniform(-0.9, 0.9, (60, 2))
H = 1e-6


def _theirs(path, poses):
    """OpenSim's (lengths (n,), computeMomentArm (n, 2), straight distance (n,))."""
    model = opensim.Model(str(path))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    muscle = model.getMuscles().get(0)
    points = muscle.getGeometryPath().getPathPointSet()
    lengths, arms, straight = [], [], []
    for q in poses:
        for name, value in zip(("theta", "phi"), q):
            coords.get(name).setValue(state, float(value), False)
        model.realizePosition(state)
        lengths.append(muscle.getLength(state))
        arms.append([muscle.computeMomentArm(state, coords.get(c)) for c in ("theta", "phi")])
        a, b = (points.get(k).getLocationInGround(state) for k in (0, 1))
        straight.append(np.linalg.norm([a[i] - b[i] for i in range(3)]))
    return np.array(lengths), np.array(arms), np.array(straight)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    directory = tmp_path_factory.mktemp("wrap_sphere")
    paths = {}
    for quadrant in QUADRANTS:
        paths[quadrant] = directory / f"ball_{quadrant.replace('-', 'minus_')}.osim"
        paths[quadrant].write_text(_model(quadrant))
    return paths


@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_lengths_and_moment_arms_match_opensim(written, quadrant):
    loaded = osim.load(written[quadrant])
    assert loaded.coordinates == ("theta", "phi") and loaded.coupling is None
    model = loaded.model

    @jax.jit
    def ours(q):
        return (myotwin.muscle_lengths(model, q)[0],
                model.paths.generalized_force_moment_arms(model, q)[:, 0],
                myotwin.moment_arms(model, q)[:, 0])

    lengths, force_arms, arms = (np.array(x) for x in zip(*[ours(jnp.asarray(q))
                                                           for q in POSES]))
    theirs_l, theirs_arms, straight = _theirs(written[quadrant], POSES)
    wrapped = theirs_l > straight + 1e-9
    print(f"{quadrant}: wrapped at {int(wrapped.sum())} of {len(POSES)} poses; lengths within "
          f"{np.abs(lengths - theirs_l).max():.1e} m, computeMomentArm within "
          f"{np.abs(force_arms - theirs_arms).max():.1e} m")
    assert wrapped.sum() >= 30
    np.testing.assert_allclose(lengths, theirs_l, rtol=0, atol=1e-12)
    np.testing.assert_allclose(force_arms, theirs_arms, rtol=0, atol=1e-12)
    # -dL/dq against central differences of OpenSim's length, where no status changes
    steps = H * np.eye(2)
    shifted = np.concatenate([POSES[:, None, :] + sign * steps[None] for sign in (1, -1)],
                             axis=1).reshape(-1, 2)            # (pose, +e0, +e1, -e0, -e1)
    l_fd = _theirs(written[quadrant], shifted)[0].reshape(len(POSES), 2, 2)
    jump = np.abs(l_fd[:, 0] - l_fd[:, 1])
    fd = -(l_fd[:, 0] - l_fd[:, 1]) / (2 * H)
    smooth = jump < 1e-3                  # a status change within h jumps by centimetres
    assert smooth.mean() > 0.9
    np.testing.assert_allclose(arms[smooth], fd[smooth], rtol=0, atol=1e-8)


def test_quadrants_change_the_path(written):
    """The quadrant constraints are exercised: against "all", each changes the length at
    some poses (by up to ~10 cm in OpenSim's own results)."""
    base = _theirs(written["all"], POSES)[0]
    changed = {q: int(np.sum(np.abs(_theirs(written[q], POSES)[0] - base) > 1e-9))
               for q in QUADRANTS[1:]}
    assert all(n >= 5 for n in changed.values()), changed
