"""Paths declared in Python (myotwin.paths.builder) against references outside our code.

* MJCF paths (via points, MuJoCo sphere/cylinder wraps with side sites) vs MuJoCo 4.0.0 on the
  same geometry written by hand as MJCF: ten_length and -ten_J^T, tolerance 1e-9 m (both are
  float64 evaluations of MuJoCo's formulas; observed ~1e-16).
* A conditional via point vs the closed-form polyline (point present or removed, OpenSim's
  inclusive range with 1e-5 slack) and its central-difference moment arm (h = 1e-6: rounding
  ~1e-11, truncation ~1e-13; tolerance 1e-8).
* The OpenSim cylinder in a plane perpendicular to its axis vs the closed form
  sqrt(d1^2 - r^2) + sqrt(d2^2 - r^2) + r (phi - acos(r/d1) - acos(r/d2)) (OpenSim's tangent
  points are exact there and its tangency adjustment does nothing; tolerance 1e-12 m, roundoff),
  with one wrap object (no adjustment) and two (adjustment loop, second cylinder never hit).
* Public API on a model mixing both kinds, dL/dt vs central differences in time, reverse-mode
  gradient vs forward mode, and every rejected declaration (issue 4, acceptance 5).
"""

from __future__ import annotations

import mujoco
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin.engine import ModelBuilder
from myotwin.paths.builder import (ConditionalPoint, CylinderWrap, PathBuilder, Point,
                                   SphereWrap)
from myotwin.paths.opensim_cylinder import (INSIDE_RADIUS, NO_WRAP, WRAPPED,
                                            opensim_cylinder_wrap)
from myotwin.paths.opensim_obstacle import opensim_obstacle_wrap

R_Y = (np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0)   # quaternion turning z into -y: cylinder axis y
ELBOW = np.array([0.0, 0.0, -0.3])
ORIGIN, INSERTION, RADIUS = (0.025, 0.0, -0.25), (0.025, 0.0, -0.05), 0.02

HAND_MJCF = """<mujoco><compiler angle="radian" autolimits="false"/><option gravity="0 0 -9.81"/>
<worldbody><site name="w" pos="0.02 0.01 0.05"/>
 <body name="upper"><joint name="shoulder" type="hinge" axis="0 1 0"/>
  <inertial pos="0 0 -0.15" mass="2" diaginertia="0.02 0.02 0.002"/>
  <site name="u1" pos="0.03 0.005 -0.1"/><site name="u2" pos="0.025 0 -0.25"/>
  <geom name="ball" type="sphere" size="0.025" pos="0 0 -0.3" contype="0" conaffinity="0"/>
  <site name="side" pos="0.06 0 -0.3"/>
  <geom name="cyl" type="cylinder" size="0.02 0.02" pos="0 0 -0.3" quat="{q}"
        contype="0" conaffinity="0"/>
  <body name="fore" pos="0 0 -0.3"><joint name="elbow" type="hinge" axis="0 1 0"/>
   <inertial pos="0 0 -0.12" mass="1" diaginertia="0.01 0.01 0.001"/>
   <site name="f1" pos="0.02 0 -0.08"/><site name="f2" pos="0.025 0 -0.05"/>
  </body></body></worldbody>
<tendon><spatial name="via"><site site="w"/><site site="u1"/><site site="f1"/></spatial>
 <spatial name="sphere"><site site="u1"/><geom geom="ball" sidesite="side"/><site site="f1"/>
 </spatial>
 <spatial name="cylinder"><site site="u2"/><geom geom="cyl"/><site site="f2"/></spatial>
</tendon></mujoco>""".format(q=" ".join(repr(float(v)) for v in R_Y))


def skeleton() -> ModelBuilder:
    b = ModelBuilder("twolink", contact=False)
    b.add_body("upper", mass=2.0, com=(0, 0, -0.15), inertia=(0.02, 0.02, 0.002))
    b.add_joint("upper", "hinge", name="shoulder", axis=(0, 1, 0))
    b.add_body("fore", "upper", pos=tuple(ELBOW), mass=1.0, com=(0, 0, -0.12),
               inertia=(0.01, 0.01, 0.001))
    b.add_joint("fore", "hinge", name="elbow", axis=(0, 1, 0))
    b.add_body("ball_body", "upper", pos=(0.0, 0.0, 0.0), mass=0.1,
               inertia=(1e-4, 1e-4, 1e-4))  # welded to upper (a ball joint in one test)
    return b


def mixed_builder() -> PathBuilder:
    pb = PathBuilder(skeleton())
    pb.add_opensim_cylinder("elbow_cyl", "upper", pos=tuple(ELBOW), quat=R_Y, radius=RADIUS,
                            length=1.0)
    pb.add_opensim_cylinder("far_cyl", "upper", pos=(1.0, 0.0, 1.0), quat=R_Y, radius=0.01,
                            length=0.1)
    pb.add_path("via", [Point("world", (0.02, 0.01, 0.05)), Point("upper", (0.03, 0.005, -0.1)),
                        Point("fore", (0.02, 0.0, -0.08))])
    pb.add_path("cond", [Point("upper", (0.03, 0.0, -0.1)),
                         ConditionalPoint("upper", (0.05, 0.0, -0.28), "elbow", (0.5, 1.5)),
                         Point("fore", (0.02, 0.0, -0.08))])
    pb.add_path("sphere", [Point("upper", (0.03, 0.005, -0.1)),
                           SphereWrap("upper", tuple(ELBOW), 0.025, side=(0.06, 0, -0.3)),
                           Point("fore", (0.02, 0.0, -0.08))])
    pb.add_path("os_cyl", [Point("upper", ORIGIN), Point("fore", INSERTION)],
                wraps=["elbow_cyl"])
    pb.add_path("cylinder", [Point("upper", ORIGIN),
                             CylinderWrap("upper", tuple(ELBOW), 0.02, quat=R_Y),
                             Point("fore", INSERTION)])
    pb.add_path("os_two", [Point("upper", ORIGIN), Point("fore", INSERTION)],
                wraps=["elbow_cyl", ("far_cyl", (1, 2))])
    return pb


@pytest.fixture(scope="module")
def mixed():
    model = mixed_builder().build()
    qs = jnp.array([[0.0, 0.0], [0.3, 0.4], [-0.2, 1.2], [0.1, 1.5 + 0.9e-5],
                    [0.1, 1.5 + 1.1e-5], [0.4, 2.0]])
    # one forward-mode pass gives both (the public functions are checked to equal it below)
    lengths, arms = jax.jit(jax.vmap(lambda q: model.paths.lengths_and_moment_arms(model, q)))(qs)
    return model, np.asarray(qs), np.asarray(lengths), np.asarray(arms)


def test_declaration_order_and_kinds(mixed):
    model = mixed[0]
    assert model.paths.path_names == ("via", "cond", "sphere", "os_cyl", "cylinder", "os_two")
    assert model.paths.path_kind == (0, 1, 0, 1, 0, 1)


def test_mjcf_paths_vs_hand_written_mujoco(mixed):
    _, qs, lengths, arms = mixed
    m = mujoco.MjModel.from_xml_string(HAND_MJCF)
    d = mujoco.MjData(m)
    cols = {"via": 0, "sphere": 2, "cylinder": 4}
    for i, q in enumerate(qs):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        jac = np.zeros((m.ntendon, m.nv))
        mujoco.mju_sparse2dense(jac, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind)
        for t in range(m.ntendon):
            k = cols[m.tendon(t).name]
            assert abs(lengths[i, k] - d.ten_length[t]) <= 1e-9, (m.tendon(t).name, q)
            assert np.abs(arms[i, :, k] + jac[t]).max() <= 1e-9, (m.tendon(t).name, q)
    # the wraps are exercised: the cylinder path wraps at the flexed states only
    assert lengths[0, 4] == pytest.approx(0.1, abs=1e-12)


def _world(body_q, local, upper=True):
    """World position of a point on 'upper' (shoulder angle a) or 'fore' (a + b), all in xz."""
    a, b = body_q

    def rot(t, v):  # rotation about +y
        c, s = np.cos(t), np.sin(t)
        return np.array([c * v[0] + s * v[2], v[1], -s * v[0] + c * v[2]])

    v = np.asarray(local, float)
    return rot(a, v) if upper else rot(a, ELBOW + rot(b, v))


def _cond_length(q):
    o, v = _world(q, (0.03, 0.0, -0.1)), _world(q, (0.05, 0.0, -0.28))
    i = _world(q, (0.02, 0.0, -0.08), upper=False)
    active = 0.5 - 1e-5 <= q[1] <= 1.5 + 1e-5
    return (np.linalg.norm(v - o) + np.linalg.norm(i - v)) if active else np.linalg.norm(i - o)


def test_conditional_point_closed_form(mixed):
    _, qs, lengths, arms = mixed
    h = 1e-6
    for i, q in enumerate(qs):
        assert abs(lengths[i, 1] - _cond_length(q)) <= 1e-12, q
        if abs(q[1] - 1.5) < 1e-4:   # range edge: the derivative below is one-sided there
            continue
        for d in range(2):
            e = np.eye(2)[d] * h
            fd = -(_cond_length(q + e) - _cond_length(q - e)) / (2 * h)
            assert abs(arms[i, d, 1] - fd) <= 1e-8, (q, d)
    # OpenSim's inclusive range with 1e-5 slack: active at hi + 0.9e-5, removed at hi + 1.1e-5
    straight = np.linalg.norm(_world(qs[4], (0.02, 0, -0.08), False) - _world(qs[4], (0.03, 0,
                                                                                    -0.1)))
    assert lengths[3, 1] > straight + 1e-3 and lengths[4, 1] == pytest.approx(straight, abs=1e-12)


def _planar_wrap_length(q, radius=RADIUS):
    """Closed form of the planar cylinder wrap the short way round."""
    c = _world(q, ELBOW)
    p1, p2 = _world(q, ORIGIN) - c, _world(q, INSERTION, upper=False) - c
    d1, d2 = np.linalg.norm(p1), np.linalg.norm(p2)
    phi = np.arccos(p1 @ p2 / (d1 * d2))
    return (np.sqrt(d1**2 - radius**2) + np.sqrt(d2**2 - radius**2)
            + radius * (phi - np.arccos(radius / d1) - np.arccos(radius / d2)))


def test_opensim_cylinder_planar_closed_form(mixed):
    _, qs, lengths, _ = mixed
    wrapped = 0
    for i, q in enumerate(qs):
        straight = np.linalg.norm(_world(q, INSERTION, upper=False) - _world(q, ORIGIN))
        crosses = lengths[i, 4] > straight + 1e-9   # MuJoCo's (geodesic) cylinder wraps
        expected = _planar_wrap_length(q) if crosses else straight
        wrapped += crosses
        assert abs(lengths[i, 3] - expected) <= 1e-12, q       # one wrap object
        assert abs(lengths[i, 5] - expected) <= 1e-12, q       # two: adjustment loop runs
        assert abs(lengths[i, 3] - lengths[i, 4]) <= 1e-12, q  # planar: equals the geodesic
    assert wrapped >= 3


def test_opensim_cylinder_statuses():
    # inside the radius; a segment missing the cylinder; tangent points beyond the length
    inside = opensim_cylinder_wrap(jnp.array([0.01, 0, 0]), jnp.array([0.1, 0.1, 0]), 0.02, 0.1,
                                   0, 0, True)
    miss = opensim_cylinder_wrap(jnp.array([0.05, -0.1, 0]), jnp.array([0.05, 0.1, 0]), 0.02,
                                 0.1, 0, 0, True)
    beyond = opensim_cylinder_wrap(jnp.array([0.05, -0.1, 0.2]), jnp.array([-0.05, 0.1, 0.2]),
                                   0.02, 0.1, 0, 0, True)
    assert int(inside.status) == INSIDE_RADIUS
    assert int(miss.status) == NO_WRAP and int(beyond.status) == NO_WRAP


OBSTACLE_MJCF = """<mujoco><worldbody><site name="p" pos="0.1 0 0"/><site name="s" pos="0 0.1 0"/>
 <geom name="c" type="cylinder" size="0.016 0.5" contype="0" conaffinity="0"/></worldbody>
 <tendon><spatial name="t"><site site="p"/><geom geom="c"/><site site="s"/></spatial></tendon>
</mujoco>"""


def test_obstacle_cylinder_vs_mujoco():
    """OpenSim's obstacle-set cylinder (declared radius 0.02, wraps at 0.016) against MuJoCo's
    cylinder of radius 0.016 on 200 seeded segments that cross it, wrapping the short way
    (right-handed iff S is counter-clockwise of P): the tangent points are MuJoCo's (1e-12 m;
    both are the exact 2-D tangents and the same linear rise, roundoff ~1e-17), and the length
    is MuJoCo's with the helix replaced by its arc, |PQ| + R theta + |TS| (OpenSim ignores the
    rise on the cylinder), 1e-12 m."""
    m = mujoco.MjModel.from_xml_string(OBSTACLE_MJCF)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(7)
    f = jax.jit(opensim_obstacle_wrap)
    checked = 0
    while checked < 200:
        p, s = rng.uniform(-0.08, 0.08, 3), rng.uniform(-0.08, 0.08, 3)
        m.site_pos[0], m.site_pos[1] = p, s
        mujoco.mj_forward(m, d)
        if d.ten_wrapnum[0] != 4:
            continue  # MuJoCo does not wrap (segment misses) or a point is inside
        hand = 1.0 if p[0] * s[1] - p[1] * s[0] > 0 else -1.0
        res = f(jnp.asarray(p), jnp.asarray(s), 0.02, hand)
        t0, t1 = d.wrap_xpos.reshape(-1, 3)[1:3]  # p, t0, t1, s
        assert int(res.status) == WRAPPED
        np.testing.assert_allclose(res.r1, t0, atol=1e-12)
        np.testing.assert_allclose(res.r2, t1, atol=1e-12)
        arc = float(res.length)
        rise = t1[2] - t0[2]
        expected = d.ten_length[0] - np.sqrt(arc**2 + rise**2) + arc
        assert abs(np.linalg.norm(res.r1 - p) + arc + np.linalg.norm(s - res.r2)
                   - expected) <= 1e-12
        checked += 1


def _small_model():
    """One single-wrap OpenSim path, one conditional point, one MJCF path, an obstacle."""
    pb = PathBuilder(skeleton())
    pb.add_opensim_cylinder("elbow_cyl", "upper", pos=tuple(ELBOW), quat=R_Y, radius=RADIUS,
                            length=1.0)
    pb.add_path("via", [Point("world", (0.02, 0.01, 0.05)), Point("upper", (0.03, 0.005, -0.1)),
                        Point("fore", (0.02, 0.0, -0.08))])
    pb.add_path("cond", [Point("upper", (0.03, 0.0, -0.1)),
                         ConditionalPoint("upper", (0.05, 0.0, -0.28), "elbow", (0.5, 1.5)),
                         Point("fore", (0.02, 0.0, -0.08))])
    pb.add_path("os_cyl", [Point("upper", ORIGIN), Point("fore", INSERTION)],
                wraps=["elbow_cyl"])
    pb.add_opensim_obstacle("elbow_obst", "upper", pos=tuple(ELBOW), quat=R_Y,
                            radius=RADIUS / 0.8, wrap_direction="righthand")
    pb.add_path("obst", [Point("upper", ORIGIN), Point("fore", INSERTION)],
                wraps=["elbow_obst"])
    return pb.build()


def test_public_api_speeds_and_reverse_mode(mixed):
    """On a small model (one single-wrap OpenSim path, one conditional point, one MJCF path):
    myotwin.muscle_lengths / moment_arms / lengthening_speeds, called from plain Python, equal
    the checked values of the mixed model at two states, dL/dt (jvp) = -r^T qd, and
    reverse-mode gradients through the loops equal the forward-mode moment arms. The public
    functions compile on their first call only: JAX's compile events (jax.monitoring) count 0
    at the second state (evaluated op by op, OpenSim's path loops were compiled anew at every
    call: arm26 13-24 s per call)."""
    _, qs, lengths, arms = mixed
    model = _small_model()
    qd = jnp.array([0.7, -1.3])

    def public(q):
        return (myotwin.muscle_lengths(model, q), myotwin.moment_arms(model, q),
                myotwin.lengthening_speeds(model, q, qd))

    compiles = []

    def listener(event, duration_s, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    for row in (1, 2):
        q = jnp.asarray(qs[row])
        if row == 1:   # the first calls compile
            length, arm, speed = (np.asarray(x) for x in public(q))
        else:
            jax.monitoring.register_event_duration_secs_listener(listener)
            try:
                length, arm, speed = (np.asarray(x) for x in public(q))
            finally:
                jax.monitoring.unregister_event_duration_listener(listener)
        np.testing.assert_allclose(length[:3], lengths[row, [0, 1, 3]], atol=1e-15)
        np.testing.assert_allclose(arm[:, :3], arms[row][:, [0, 1, 3]], atol=1e-15)
        np.testing.assert_allclose(speed, -arm.T @ np.asarray(qd), atol=1e-12)
    assert compiles == [], f"{len(compiles)} compilations at the second state"
    grad = jax.jit(jax.grad(lambda x: myotwin.muscle_lengths(model, x)[2]))(q)
    np.testing.assert_allclose(grad, -arm[:, 2], atol=1e-12)
    # the obstacle at 0.8 of its radius, in a plane normal to its axis: the planar closed form
    # (rise 0, so OpenSim's arc-only length is exact here), 1e-12 m
    assert abs(length[3] - _planar_wrap_length(np.asarray(q))) <= 1e-12


@pytest.mark.parametrize("declare, message", [
    (lambda pb: pb.add_path("m", [Point("nowhere", (0, 0, 0)), Point("fore", (0, 0, 0))]),
     "unknown body 'nowhere'"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), Point("upper", (0, 0, 1)),
                                  ConditionalPoint("upper", (0, 0, 0), None, (0, 1)),
                                  Point("fore", (0, 0, 0))]), "needs a coordinate"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)),
                                  ConditionalPoint("upper", (0, 0, 0), "knee", (0, 1)),
                                  Point("fore", (0, 0, 0))]), "unknown coordinate (joint) 'knee'"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)),
                                  ConditionalPoint("upper", (0, 0, 0), "elbow", (1, 0)),
                                  Point("fore", (0, 0, 0))]), "lo <= hi"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0))]), "at least two points"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)),
                                  ConditionalPoint("upper", (0, 0, 0), "elbow", (0, 1))]),
     "two fixed points"),
    (lambda pb: pb.add_path("m", [SphereWrap("upper", (0, 0, 0), 0.02), Point("upper", (0, 0, 0)),
                                  Point("fore", (0, 0, 0))]), "between two fixed points"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), SphereWrap("upper", (0, 0, 0), -1),
                                  Point("fore", (0, 0, 0))]), "radius must be > 0, got -1"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), SphereWrap("upper", (0, 0, 0), .1),
                                  Point("fore", (0, 0, 0))], wraps=["elbow_cyl"]),
     "cannot be mixed"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))],
                            wraps=["nope"]), "unknown OpenSim wrap object 'nope'"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))],
                            wraps=[("elbow_cyl", (1, 3))]), "1-based point indices"),
    (lambda pb: pb.add_path("via", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))]),
     "new non-empty string"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, np.nan, 0)), Point("fore", (0, 0, 0))]),
     "finite"),
    (lambda pb: pb.add_opensim_cylinder("c2", "upper", radius=0.0, length=1.0), "radius"),
    (lambda pb: pb.add_opensim_cylinder("c2", "upper", radius=0.1, length=1.0, quadrant="w"),
     "unknown quadrant 'w'"),
    (lambda pb: pb.add_opensim_cylinder("c2", "nowhere", radius=0.1, length=1.0) and
     pb.add_path("m", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))], wraps=["c2"]),
     "OpenSim cylinder 'c2': unknown body 'nowhere'"),
    # declared and used by no path: checked too (it was dropped unseen)
    (lambda pb: pb.add_opensim_sphere("s2", "nowhere", radius=0.1),
     "OpenSim sphere 's2': unknown body 'nowhere'"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)),
                                  ConditionalPoint("upper", (0, 0, 0), "ball", (0, 1)),
                                  Point("fore", (0, 0, 0))]), "not a hinge or slide joint"),
    # names that are not strings: mj_name2id(None) crashed the process, an int was its TypeError
    (lambda pb: pb.add_path("m", [Point(None, (0, 0, 0)), Point("fore", (0, 0, 0))],
                            wraps=["elbow_cyl"]), "point 1: body must be a body name, got None"),
    (lambda pb: pb.add_opensim_sphere("s", 3, radius=0.1) and
     pb.add_path("m", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))], wraps=["s"]),
     "OpenSim sphere 's': body must be a body name, got 3"),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)),
                                  ConditionalPoint("upper", (0, 0, 0), 5, (0, 1)),
                                  Point("fore", (0, 0, 0))]),
     "point 2: coordinate must be a joint name, got 5"),
    # wraps: a range of 2.7 was truncated to 2, True taken as 1, '12' read as (1, 2); a string
    # was iterated by character; malformed entries were IndexErrors and TypeErrors
    *((lambda pb, w=w: pb.add_path("m", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))],
                                   wraps=[w]),
       f"wrap {w!r} must be a wrap object name or (name, (start, end)) with integer point")
      for w in [("elbow_cyl", (1, 2.7)), ("elbow_cyl", (True, 2)), ("elbow_cyl", "12"),
                ("elbow_cyl", (1, 2, 3)), ("elbow_cyl",), 5]),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), Point("fore", (0, 0, 0))],
                            wraps="elbow_cyl"), "wraps must be a list, got 'elbow_cyl'"),
    (lambda pb: pb.add_path("m", None), "elements must be a list, got None"),
    # booleans are not numbers: True was a radius of 1 m, (False, True) the range (0, 1)
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), SphereWrap("upper", (0, 0, 0), True),
                                  Point("fore", (0, 0, 0))]), "radius must be a number, got True"),
    (lambda pb: pb.add_opensim_cylinder("c2", "upper", radius=0.1, length=True),
     "OpenSim cylinder 'c2': length must be a number, got True"),
    *((lambda pb, r=r: pb.add_path("m", [Point("upper", (0, 0, 0)),
                                         ConditionalPoint("upper", (0, 0, 0), "elbow", r),
                                         Point("fore", (0, 0, 0))]),
       f"range must be (lo, hi), got {r!r}") for r in [(False, True), "01", ("0", "1")]),
    (lambda pb: pb.add_path("m", [Point("upper", (0, 0, 0)), SphereWrap("upper", (0, 0, 0), "0.02"),
                                  Point("fore", (0, 0, 0))]), "radius must be a number, got '0.02'"),
    (lambda pb: pb.add_path("m", [Point("upper", ("0", 0, 0)), Point("fore", (0, 0, 0))]),
     "must be 3 numbers, got ('0', 0, 0)"),
])
def test_rejected_declarations(declare, message):
    pb = mixed_builder()
    pb.skeleton.add_joint("ball_body", "ball", name="ball")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        declare(pb)
        pb.build()
