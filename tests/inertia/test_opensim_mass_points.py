"""Mass points on OpenSim-semantics paths (arm26 built in Python; `inertia/opensim_points.py`).

References outside the code under test:
  * OpenSim 4.6's path lengths (`mtu_length` of /work/shared/reference/opensim/
    arm26_reference.json): points at equal steps of alpha are equally spaced in arc length
    along a curve whose length is OpenSim's;
  * the path's own end points (origin and insertion on their bodies);
  * autodiff through the whole kinematics (`inertia.jacobians_by_autodiff`: a different chain
    from the anchors' motion that the dynamics use) and central differences of x_alpha(q) for
    J, second differences along qd for Jdot qd (arm26's joints are hinges, so q + t qd is the
    motion at constant qd);
  * Lagrange's equations: Eq. 7's terms in the engine's inverse dynamics against
    sum m J^T (J qdd + Jdot qd - g) built from those differences;
  * conservation of energy in a free motion, and its failure without the quadratic velocity
    term (the seed's §4.3, Fig. 8).
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import engine, inertia
from myotwin.engine.kinematics import kinematics
from myotwin.models import arm26
from myotwin.paths import opensim_path
from shared_reference import SHARED

REFERENCE = SHARED / "reference" / "opensim" / "arm26_reference.json"
#: Total mass (kg) and points of each muscle: arm26's OpenSim paths and its MJCF tendons mixed.
MASS = {"TRIlong": (0.2, 6), "TRIlat": (0.15, 5), "TRImed": (0.15, 5), "BIClong": (0.2, 6),
        "BICshort": (0.15, 5), "BRA": (0.1, 5)}
#: States inside arm26's coordinate ranges (rad, rad/s); at each the wraps of TRI* and BRA are
#: active and no point sits within the finite-difference step of a path point.
STATES = [((0.3, 1.2), (0.7, -1.3), (2.0, -1.0)),
          ((-0.4, 0.6), (-0.9, 2.1), (-1.5, 3.0)),
          ((1.1, 1.9), (0.4, 0.8), (0.5, 0.5))]


@pytest.fixture(scope="module")
def arm():
    # BIClong and TRIlong carry mass: their ellipsoids are there but inactive (mass points on
    # an active ellipsoid wrap are refused, docs/inertia.md; an inactive one never wraps, so
    # the points may go on its paths: BIClong is then an OpenSim path with no active wrap,
    # TRIlong one with two active wraps of three, OpenSim's repetitions counting all three)
    model = arm26.build(ellipsoids=True, ellipsoids_active=False)
    for name, (mass, n) in MASS.items():
        model = inertia.with_muscle_mass(model, name, mass, n)
    return model


def test_points_are_equally_spaced_along_opensims_path():
    """1001 points at equal steps of alpha on each OpenSim path: the first and last are the
    path's origin and insertion, and consecutive points are h = L / 1000 apart along a curve of
    OpenSim's length L. Chords never exceed the arc between them (1e-12 m); a chord is shorter
    than h by more than 1e-3 h only where it cuts a corner of the path (at a path point: at most
    one chord per interior point). On a spiral of radius r the chords fall short by
    h^2 / (24 r^2) of h: 1.6e-5 on the 16-mm TRI cylinder, 4.9e-4 on the 3-mm TRIlongglen (the
    points lie on a helix of that radius: with 2001 points the shortfall observed there is
    1.23e-4, as predicted). The chords' sum is L to within the corners' cut (< 4e-5 m)."""
    if not REFERENCE.exists():
        pytest.skip(f"OpenSim reference {REFERENCE} is absent")
    samples = json.loads(REFERENCE.read_text())["samples"]
    model = arm26.build(ellipsoids=False)
    alphas = np.linspace(0.0, 1.0, 1001)
    names = [n for n, k in zip(model.paths.path_names, model.paths.path_kind) if k == 1]
    with_points = model
    for name in names:
        with_points = inertia.with_muscle_mass(with_points, name, 0.1, alphas=alphas)
    point_path = np.asarray(with_points.muscle_mass.point_path)
    positions = jax.jit(inertia.mass_point_positions)
    path_points = jax.jit(lambda q: opensim_path.path_points(model.paths.opensim, model, q))
    checked = 0
    for sample in samples[::4]:
        st = sample["state"]
        q = jnp.array([st["r_shoulder_elev"], st["r_elbow_flex"]])
        pts, valid = path_points(q)
        x_all = np.asarray(positions(with_points, q))
        for name in names:
            length = sample["outputs"][name]["mtu_length"]
            x = x_all[point_path == model.paths.path_names.index(name)]
            i = model.paths.opensim.path_names.index(name)
            path = np.asarray(pts[i])[np.asarray(valid[i])]
            np.testing.assert_allclose(x[0], path[0], atol=1e-12)
            np.testing.assert_allclose(x[-1], path[-1], atol=1e-12)
            chords = np.linalg.norm(np.diff(x, axis=0), axis=1)
            h = length / 1000
            assert chords.max() <= h + 1e-12, (name, st, chords.max() - h)
            short = int(np.sum(chords < h * (1.0 - 1e-3)))
            interior = len(path) - 2   # path points and tangent points between the ends
            assert short <= interior, (name, st, short, interior)
            assert -1e-12 <= length - chords.sum() < 4e-5, (name, st, length - chords.sum())
            checked += 1
    assert checked >= 9


def _fd_terms(model, q, qd, h1=1e-6, h2=1e-4):
    """(J (n, 3, n_v), Jdot qd (n, 3)) of the mass points by central and second differences
    of their positions (hinges only: q + t e_d, q + t qd)."""
    pos = jax.jit(inertia.mass_point_positions)
    cols = [(pos(model, q + h1 * e) - pos(model, q - h1 * e)) / (2 * h1)
            for e in np.eye(model.n_v)]
    jac = np.stack([np.asarray(c) for c in cols], axis=-1)
    acc = (pos(model, q + h2 * qd) - 2 * pos(model, q) + pos(model, q - h2 * qd)) / h2 ** 2
    return jac, np.asarray(acc)


def test_jacobians_quadratic_velocity_terms_and_inverse_dynamics(arm):
    """J against autodiff through the kinematics (1e-12 m: the same derivative by another
    chain) and central differences (1e-8 m: truncation h^2 |x'''| ~ 1e-12, roundoff
    1e-16 / h ~ 1e-10); Jdot qd against second differences along qd (1e-6 m/s^2: truncation
    h^2 |x''''| / 12 ~ 1e-9, roundoff 4e-16 / h^2 ~ 4e-8). Then Lagrange's equations: the mass
    points' share of inverse dynamics (with gravity) against
    sum_k m_k J_k^T (J_k qdd + Jdot_k qd - g) from those differences (1e-6 N m: the
    differences' error times the masses). One compiled function for all (each part compiles
    OpenSim's tangency loop differentiated once or twice)."""
    massless = arm26.build(ellipsoids=False)

    @jax.jit
    def evaluate(q, qd, qdd):
        share = (engine.inverse_dynamics(arm, q, qd, qdd)
                 - engine.inverse_dynamics(massless, q, qd, qdd))
        return (inertia.mass_point_jacobians(arm, q), inertia.jacobians_by_autodiff(arm, q),
                inertia.mass_point_bias_accelerations(arm, q, qd), share)

    masses = np.asarray(arm.muscle_mass.point_mass)
    grav = np.asarray(arm.gravity)
    for q, qd, qdd in STATES:
        q, qd, qdd = jnp.array(q), jnp.array(qd), jnp.array(qdd)
        jac, ref, acc, share = (np.asarray(x) for x in evaluate(q, qd, qdd))
        np.testing.assert_allclose(jac, ref, rtol=0, atol=1e-12)
        fd_jac, fd_acc = _fd_terms(arm, q, qd)
        np.testing.assert_allclose(jac, fd_jac, rtol=0, atol=1e-8)
        np.testing.assert_allclose(acc, fd_acc, rtol=0, atol=1e-6)
        assert np.abs(acc).max() > 0.01  # the points do accelerate: a real comparison
        point_acc = np.einsum("kia,a->ki", fd_jac, np.asarray(qdd)) + fd_acc - grav
        expected = np.einsum("k,kia,ki->a", masses, fd_jac, point_acc)
        np.testing.assert_allclose(share, expected, rtol=0, atol=1e-6)
        assert np.abs(expected).max() > 1e-3


def test_free_motion_conserves_energy_only_with_the_quadratic_velocity_term():
    """No gravity, no muscle force: RK4 (1 ms, 0.5 s) from a moving state, mass points on TRIlat
    and BRA (both wrapping on OpenSim's cylinder). The kinetic energy of skeleton and points
    changes by less than 1e-12 of itself per step (RK4's error at this step is ~1e-15; observed
    <= 1.4e-15) except at the steps where a point crosses a path point, where x_alpha(q) has a
    corner and the points' energy jumps, as on the seed's Type II paths (at most 2 here;
    observed 1, of 1.8e-4). Without the points' Jdot qd (seed §4.3) every step drifts (median
    > 1e-8; observed 1.7e-6)."""
    model = dataclasses.replace(arm26.build(ellipsoids=False), gravity=jnp.zeros(3))
    for name in ("TRIlat", "BRA"):
        model = inertia.with_muscle_mass(model, name, 0.3, 10)
    q0, qd0 = jnp.array([0.2, 0.8]), jnp.array([0.5, 1.5])
    steps = {}
    for label, m in (("qvv", model), ("no_qvv", inertia.without_qvv(model))):
        q, qd, _ = engine.simulate(m, q0, qd0, jnp.zeros(m.n_u), 0.5, 1e-3, "rk4")
        energy = np.asarray(jax.jit(jax.vmap(lambda a, b, m=m: engine.kinetic_energy(m, a, b)))(
            q, qd))
        steps[label] = np.abs(np.diff(energy)) / energy[0]
    assert np.sum(steps["qvv"] > 1e-12) <= 2, np.sort(steps["qvv"])[-4:]
    assert np.median(steps["no_qvv"]) > 1e-8, np.median(steps["no_qvv"])


def _two_link_paths():
    """The two-link arm of tests/paths/test_path_builder.py with an OpenSim obstacle-set
    cylinder (WrapCylinderObst, right-handed, axis y at the elbow) and a conditional point."""
    from myotwin.engine.builder import ModelBuilder
    from myotwin.paths.builder import ConditionalPoint, PathBuilder, Point

    b = ModelBuilder("twolink", contact=False)
    b.add_body("upper", mass=2.0, com=(0, 0, -0.15), inertia=(0.02, 0.02, 0.002))
    b.add_joint("upper", "hinge", name="shoulder", axis=(0, 1, 0))
    b.add_body("fore", "upper", pos=(0.0, 0.0, -0.3), mass=1.0, com=(0, 0, -0.12),
               inertia=(0.01, 0.01, 0.001))
    b.add_joint("fore", "hinge", name="elbow", axis=(0, 1, 0))
    pb = PathBuilder(b)
    pb.add_opensim_obstacle("elbow_obst", "upper", pos=(0.0, 0.0, -0.3),
                            quat=(np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0), radius=0.025,
                            wrap_direction="righthand")
    pb.add_path("obst", [Point("upper", (0.025, 0.0, -0.25)), Point("fore", (0.025, 0.0, -0.05))],
                wraps=["elbow_obst"])
    pb.add_path("cond", [Point("upper", (0.03, 0.0, -0.1)),
                         ConditionalPoint("upper", (0.05, 0.0, -0.28), "elbow", (0.5, 1.5)),
                         Point("fore", (0.02, 0.0, -0.08))])
    return pb.build()


def test_obstacle_wrap_and_conditional_point():
    """WrapCylinderObst (radius 0.8 x 25 mm = 20 mm): of 1001 points on the wrapped path, those
    on the arc are 20 mm from the cylinder's axis (1e-12 m), lie between the tangent points Q and
    T (angles about the axis, the short way), and number arc / L x 1000 (+-1; OpenSim's L counts
    the arc without its rise); no point is inside the cylinder. The conditional point: where it
    is active, the points pass through it (a corner: one chord shorter than h per interior
    point), where not, the path is straight (all chords h to 1e-12)."""
    model = _two_link_paths()
    alphas = np.linspace(0.0, 1.0, 1001)
    for name in ("obst", "cond"):
        model = inertia.with_muscle_mass(model, name, 0.1, alphas=alphas)
    positions = jax.jit(inertia.mass_point_positions)
    ps = model.paths.opensim
    geometry = jax.jit(lambda q: (opensim_path.path_points(ps, model, q),
                                  opensim_path.muscle_lengths(ps, model, q)))
    point_path = np.asarray(model.muscle_mass.point_path)
    wrapped = 0
    for q in ((0.3, 1.2), (0.0, 2.0), (-0.2, 0.3)):
        q = jnp.array(q)
        x = np.asarray(positions(model, q))
        (pts, valid), lengths = geometry(q)
        lengths = np.asarray(lengths)
        # the obstacle: axis y through the elbow, which the shoulder turns about y
        xo, path = x[point_path == 0], np.asarray(pts[0])[np.asarray(valid[0])]
        np.testing.assert_allclose(xo[[0, -1]], path[[0, -1]], atol=1e-12)
        c, s = np.cos(float(q[0])), np.sin(float(q[0]))
        centre = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]) @ np.array([0.0, 0.0, -0.3])
        radial = lambda p: (p - centre)[..., [0, 2]]  # noqa: E731  (x, z) about the axis y
        dist = np.linalg.norm(radial(xo), axis=-1)
        assert dist.min() >= 0.02 - 1e-12
        if len(path) == 4:  # origin, Q, T, insertion: wrapped
            wrapped += 1
            on = np.abs(dist - 0.02) < 1e-12
            ang = lambda p: np.arctan2(radial(p)[..., 1], radial(p)[..., 0])  # noqa: E731
            a_q, a_t = ang(path[1]), ang(path[2])
            span = (a_t - a_q + np.pi) % (2 * np.pi) - np.pi
            arc = 0.02 * abs(span)
            assert abs(on.sum() - arc / lengths[0] * 1000) <= 1.0 + 1e-9, (on.sum(), arc)
            rel = ((ang(xo[on]) - a_q + np.pi) % (2 * np.pi) - np.pi) / span
            assert rel.min() >= -1e-9 and rel.max() <= 1 + 1e-9
        # the conditional point
        xc, path = x[point_path == 1], np.asarray(pts[1])[np.asarray(valid[1])]
        np.testing.assert_allclose(xc[[0, -1]], path[[0, -1]], atol=1e-12)
        chords = np.linalg.norm(np.diff(xc, axis=0), axis=1)
        h = lengths[1] / 1000
        assert chords.max() <= h + 1e-12
        assert np.sum(chords < h * (1 - 1e-9)) <= len(path) - 2
        if len(path) == 2:
            np.testing.assert_allclose(chords, h, atol=1e-12)
    assert wrapped >= 1


def test_obstacle_wrap_and_conditional_point_dynamics():
    """J and Jdot qd of 8 points on each of the two-link arm's paths (WrapCylinderObst; the
    conditional point) against central and second differences of their positions, with the
    tolerances of the arm26 test above (1e-8 m, 1e-6 m/s^2; observed <= 6e-11, 2e-8), at poses
    where the obstacle wraps or not and the conditional point is active or not (the number of
    points on each current path says which)."""
    model = _two_link_paths()
    for name in ("obst", "cond"):
        model = inertia.with_muscle_mass(model, name, 0.1, 8)
    ps = model.paths.opensim
    n_points = jax.jit(lambda q: jnp.sum(opensim_path.path_points(ps, model, q)[1], axis=1))
    terms = jax.jit(lambda q, qd: (inertia.mass_point_jacobians(model, q),
                                   inertia.mass_point_bias_accelerations(model, q, qd)))
    seen = set()
    for q, qd in (((0.3, 1.2), (0.7, -1.3)), ((0.0, 2.0), (-0.5, 1.1)),
                  ((-0.2, 0.3), (1.0, 0.6))):
        q, qd = jnp.array(q), jnp.array(qd)
        seen.add(tuple(int(n) for n in n_points(q)))
        jac, acc = (np.asarray(x) for x in terms(q, qd))
        fd_jac, fd_acc = _fd_terms(model, q, qd)
        np.testing.assert_allclose(jac, fd_jac, rtol=0, atol=1e-8)
        np.testing.assert_allclose(acc, fd_acc, rtol=0, atol=1e-6)
        assert np.abs(fd_acc).max() > 0.05
    # (obstacle path points, conditional path points): wrapped and not; active and not
    assert seen == {(4, 3), (2, 2), (4, 2)}, seen


def test_mjcf_only_helpers_refuse_composite_models(arm):
    """The MJCF piece layout and positions from kinematics without q name what to use instead."""
    with pytest.raises(ValueError, match="piece layouts describe MuJoCo spatial tendons"):
        inertia.mass_point_layout(arm)
    with pytest.raises(ValueError, match="need q as well as the kinematics"):
        inertia.mass_point_positions_from_kinematics(arm, kinematics(arm, jnp.zeros(2)))
