"""Moving path points (`paths.builder.MovingPoint`, OpenSim's MovingPathPoint) in closed form.

A two-link arm in the x-z plane (hinges about y: `shoulder` at the origin, `elbow` 0.3 m below
on the upper arm). Path `arm`: a point on the upper arm, a moving point on the forearm, a point
on ground. The moving point's x is a two-piece polynomial of the elbow angle, clamped to
[-0.5, 1.0]; its y a polynomial without a joint (evaluated at 0); its z a line in the shoulder
angle (components may read different joints in the builder; OpenSim's files use one). Path
`same_body`: a point on the forearm, the moving point, a point on the upper arm.

* Lengths vs the closed-form polyline, also beyond the clamp (1e-12 m: a few float64 ops).
* -dL/dq (`myotwin.moment_arms`) vs central differences of the closed form (h = 1e-6:
  truncation ~1e-13 m, rounding ~1e-10 m; tolerance 1e-8 m).
* `generalized_force_moment_arms` (OpenSim's computeMomentArm) against the same differences of
  the lengths OpenSim's construction differentiates: `arm` -- both segments between two
  bodies -- is -dL/dq inside the clamp range; `same_body` leaves out its first segment, whose
  ends are both on the forearm (OpenSim skips it, moving point or not); beyond the clamp the
  force acts at the clamped location but the point's term uses the derivative of the unclamped
  function (OpenSim's getdPointdQ), while -dL/dq does not see it (the length is constant in
  the elbow angle there).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin.engine.piecewise import PiecewisePolynomial
from myotwin.paths.builder import MovingPoint, PathBuilder, Point
from test_path_builder import skeleton as twolink  # the same two-link arm (and a welded body)

ELBOW = np.array([0.0, 0.0, -0.3])
UPPER, FORE, WORLD = (0.03, 0.0, -0.1), (0.0, 0.01, -0.05), (0.05, 0.02, 0.1)
CLAMP = (-0.5, 1.0)
# x(e) = 0.02 + 0.01 e + 0.005 e^2 for e < 0.3, continued with the same value and slope above
FX = PiecewisePolynomial(np.array([0.3]), np.array([0.0, 0.3]),
                         np.array([[0.02, 0.01, 0.005], [0.02345, 0.013, -0.02]]))
FY = PiecewisePolynomial(np.zeros(0), np.zeros(1), np.array([[0.015, 3.0]]))   # read at 0
FZ = PiecewisePolynomial(np.zeros(0), np.zeros(1), np.array([[-0.08, 0.02]]))
MOVING = MovingPoint("fore", (FX, FY, FZ), ("elbow", None, "shoulder"),
                     clamp=(CLAMP, None, None))
STATES = np.array([[0.2, 0.1], [-0.4, 0.3], [0.7, 0.9], [0.1, 1.3], [0.3, -0.8]])
TOL_CLOSED_FORM_M, TOL_DIFFERENCES_M, H = 1e-12, 1e-8, 1e-6


def _model():
    pb = PathBuilder(twolink())
    pb.add_path("arm", [Point("upper", UPPER), MOVING, Point("world", WORLD)])
    pb.add_path("same_body", [Point("fore", FORE), MOVING, Point("upper", UPPER)])
    return pb.build()


def _rot_y(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _fx(e):
    if e < 0.3:
        return 0.02 + 0.01 * e + 0.005 * e * e
    u = e - 0.3
    return 0.02345 + 0.013 * u - 0.02 * u * u


def _local(q, clamp=True):
    """The moving point in the forearm's frame at q = (shoulder, elbow)."""
    x = np.clip(q[1], *CLAMP) if clamp else q[1]
    return np.array([_fx(x), 0.015, -0.08 + 0.02 * q[0]])


def _segments(q, local=None):
    """The closed-form segment lengths of both paths at q = (shoulder, elbow), the moving
    point at `local` (default: where it is at q)."""
    a, e = q
    local = _local(q) if local is None else local
    upper = _rot_y(a) @ np.array(UPPER)
    moving = _rot_y(a) @ (ELBOW + _rot_y(e) @ local)
    fore = _rot_y(a) @ (ELBOW + _rot_y(e) @ np.array(FORE))
    arm = (np.linalg.norm(moving - upper), np.linalg.norm(np.array(WORLD) - moving))
    same = (np.linalg.norm(moving - fore), np.linalg.norm(upper - moving))
    return arm, same


def _differences(f, q):
    """-df/dq (2, ...) by central differences."""
    return -np.array([(np.asarray(f(q + H * d)) - np.asarray(f(q - H * d))) / (2 * H)
                      for d in np.eye(2)])


@pytest.fixture(scope="module")
def model():
    return _model()


def test_lengths_in_closed_form(model):
    for q in STATES:
        ours = np.asarray(myotwin.muscle_lengths(model, jnp.asarray(q)))
        arm, same = _segments(q)
        err = np.abs(ours - [sum(arm), sum(same)]).max()
        assert err <= TOL_CLOSED_FORM_M, f"lengths at q = {q}: {err:.3e} m"
    assert model.paths.path_kind == (1, 1)   # moving points make OpenSim paths


def test_moment_arms_are_minus_dl_dq(model):
    for q in STATES:
        ours = np.asarray(myotwin.moment_arms(model, jnp.asarray(q)))
        reference = _differences(lambda x: [sum(s) for s in _segments(x)], q)
        err = np.abs(ours - reference).max()
        assert err <= TOL_DIFFERENCES_M, f"-dL/dq at q = {q}: {err:.3e} m"


def test_generalized_force_moment_arms_follow_opensim(model):
    force_arms = jax.jit(lambda q: model.paths.generalized_force_moment_arms(model, q))
    for q in STATES:
        ours = np.asarray(force_arms(jnp.asarray(q)))

        def work(x, q=q):
            """The lengths OpenSim's force differentiates: the point where it is at q, moved
            by its unclamped function; `same_body` without its first segment."""
            local = _local(q) + _local(x, clamp=False) - _local(q, clamp=False)
            arm, same = _segments(x, local)
            return [sum(arm), same[1]]

        reference = _differences(work, q)
        err = np.abs(ours - reference).max()
        assert err <= TOL_DIFFERENCES_M, f"force moment arms at q = {q}: {err:.3e} m"
    beyond = jnp.asarray(STATES[3])                      # elbow 1.3 rad, beyond the clamp
    arms = np.asarray(myotwin.moment_arms(model, beyond))
    force = np.asarray(force_arms(beyond))
    assert abs(force[1, 0] - arms[1, 0]) > 1e-3          # -dL/dq does not see the point move


@pytest.mark.parametrize("point, message", [
    (MovingPoint("nowhere", (FX, FY, FZ), ("elbow",) * 3), "unknown body 'nowhere'"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow", "knee", None)),
     "point 2 (moving point, y): unknown coordinate (joint) 'knee'"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow", "ball", None)), "not a hinge or slide joint"),
    (MovingPoint("fore", (FX, FY), ("elbow",) * 3), "functions must hold three entries"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow",) * 2), "joints must hold three entries"),
    (MovingPoint("fore", (FX, FY, PiecewisePolynomial(np.array([0.5, 0.1]), np.zeros(3),
                                                      np.zeros((3, 2)))), ("elbow",) * 3),
     "element 1 (moving point), z function: breaks must increase strictly"),
    (MovingPoint("fore", (FX, FY, "spline"), ("elbow",) * 3), "expected a PiecewisePolynomial"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow", 3, None)), "joint name or None"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow",) * 3, clamp=((1.0, 0.0), None, None)),
     "the x clamp must be finite with lo <= hi"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow",) * 3, clamp=(None, None)),
     "clamp must hold three entries"),
    (MovingPoint("fore", (FX, FY, FZ), ("elbow",) * 3, clamp=(("0", "1"), None, None)),
     "the x clamp must be None or (lo, hi), got ('0', '1')"),
])
def test_rejected_moving_points(point, message):
    b = twolink()   # its ball_body, welded to upper there, gets a ball joint here
    b.add_joint("ball_body", "ball", name="ball")
    pb = PathBuilder(b)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pb.add_path("m", [Point("upper", UPPER), point, Point("world", WORLD)])
        pb.build()


def test_mass_points_refuse_moving_points(model):
    from myotwin.inertia.opensim_points import check_paths

    with pytest.raises(ValueError, match="path 'arm': its point 2 is a moving point"):
        check_paths(model.paths.opensim, [0])
