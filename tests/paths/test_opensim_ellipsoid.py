"""OpenSim's WrapEllipsoid (`paths/opensim_ellipsoid.py`) against closed forms, and its
derivatives in every mode against central differences and each other.

Closed forms use a sphere (three equal semi-axes R = 2 cm) and segments whose wrap plane passes
through the centre (quadrant "all", or a planar case whose quadrant axis lies in the plane), so
that OpenSim's construction reduces to a great circle:
* the tangent points are the circle's tangent points from p1, p2, up to what the
  Levenberg-Marquardt iteration leaves: it stops at ssq <= ELLIPSOID_TINY (1e-8) in units of R,
  so each of its residuals (distance to the plane, to the surface, tangency) is <= 1e-4 R, and
  the point is within a few of those of the exact one: TOL_TANGENT = 3e-4 R (observed 2.5e-7 m
  = 1.2e-5 R);
* the wrap length is the chord sum of OpenSim's polyline: N = floor(|r1 - r2| / 1 mm) chords
  between r1, the points R (cos(k phi / N) u + sin(k phi / N) v) (u towards r1, phi the angle
  r1-centre-r2, or phi0 - 2 pi for a far-side wrap) and r2. Recomputed here from r1, r2 alone
  (the rays start at the centre): equal to the last bits, TOL_CHORDS = 1e-15 m (observed
  <= 3e-17 m);
* the whole path |p1 r1| + wrap + |r2 p2| against the exact great-circle path minus the chord
  sum's deficit R phi - 2 N R sin(phi / 2N): the tangent points' error enters to first order
  only through their distance from the surface (<= 1e-4 R / 2 by the stopping rule) times the
  chord angle, 2 (1e-4 R / 2) sin(phi / 2N) (observed 9.2e-9 m of a 1.1e-7 m bound).
Far side: a planar segment over a +y quadrant whose first wrap comes out the wrong way round
(the first chord of the polyline points back at p1), so OpenSim recomputes it the long way;
its length is the far chord sum, 5.5 cm more than the near one.

Derivatives: the path length L through the wrap of arm26's BIClong at q = (0.5, 0.3) rad in
the frame of its ellipsoid BIClonghh (2.5 x 2 x 2 cm, quadrant -y): Frans' and the fan's plane
points blended (fan weight 0.43), tangent iterations of 6 and 3 trips, 17 polyline chords.
References: Richardson-extrapolated central differences (4 D(h) - D(2h)) / 3, h = 1e-6 m.
Plain central differences would not do: the tangent iteration stops far from convergence, so
the third derivative of L is ~2e5 m^-2 here (not ~1 / R^2), and its h^2 / 6 term is 3.5e-8;
Richardson's combination removes that term, leaving rounding ~1.5 eps L / h ~ 1e-11 and the
h^4 terms. Tolerances 1e-8 for the gradient (observed 3.2e-12; 2.7e-12 with respect to the
semi-axes) and 1e-8 relative to its largest entry for the Hessian (the same differences of
the gradient, rounding ~eps / h ~ 2e-10 of O(1) gradients; observed 9.4e-12). The point is
checked to be away from OpenSim's discontinuities (the segment count, the trip counts, where
the length jumps): the extrapolations with h and h / 2 agree to 1e-9 (a jump delta of the
length would show as delta / h). The Hessian is jax.hessian's (forward over reverse: the
reverse-mode rules of the loops differentiated again). A forward-over-forward Hessian was
compared with it too (1e-10 relative, observed 7.8e-15) until it was dropped: its program
compiled for ~48 s of the fixture's ~150 (scratch timing, not a repo command), and forward mode
is checked against the same references at first order.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin.paths import opensim_ellipsoid as oe
from myotwin.paths.builder import PathBuilder, Point

R_M = 0.02
SPHERE = jnp.full(3, R_M)
TOL_TANGENT_M = 3.0 * np.sqrt(oe.ELLIPSOID_TINY) * R_M
TOL_CHORDS_M = 1e-15
H = 1e-6
#: BIClonghh's semi-axes (m) and quadrant, and BIClong's points 2 and 3 in its frame at
#: q = (0.5, 0.3) rad (m): the case of the derivative checks (module docstring).
RADII = jnp.array([0.025, 0.02, 0.02])
QUADRANT = (1, -1)
SEGMENT = np.array([0.012975, -0.010385, 0.013942, -0.003177, -0.019423, -0.012232])

# every argument traced: one compilation for all the closed-form cases
_WRAP = jax.jit(oe.opensim_ellipsoid_wrap)


def _wrap(p1, p2, radii=SPHERE, axis=0, sign=0):
    return _WRAP(jnp.asarray(p1, jnp.float64), jnp.asarray(p2, jnp.float64), radii, axis, sign)


def _polyline(r1, r2, n, far):
    """OpenSim's surface polyline on the sphere from r1 to r2, n segments, the long way round
    if `far` (module docstring): its points and its length."""
    u, w = r1 / np.linalg.norm(r1), r2 / np.linalg.norm(r2)
    phi0 = np.arccos(np.clip(u @ w, -1.0, 1.0))
    z = np.cross(u, w)
    v = np.cross(z / np.linalg.norm(z), u)
    dphi = (phi0 - 2.0 * np.pi) / n if far else phi0 / n
    k = np.arange(1, n)[:, None]
    pts = np.vstack([r1, R_M * (np.cos(k * dphi) * u + np.sin(k * dphi) * v), r2])
    return pts, np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()


def _tangent_point(p, normal, side):
    """The circle's tangent point from p in the plane with `normal` through the centre, on the
    side of the unit vector `side`."""
    d = np.linalg.norm(p)
    u = p / d
    v = np.cross(normal, u)
    c, s = R_M / d, np.sqrt(1.0 - (R_M / d) ** 2)
    return max((R_M * (c * u + s * v), R_M * (c * u - s * v)), key=lambda t: t @ side)


def test_sphere_is_a_great_circle():
    p1, p2 = np.array([-0.05, -0.012, 0.004]), np.array([0.045, -0.01, -0.006])
    w = _wrap(p1, p2)
    assert int(w.status) == oe.MANDATORY_WRAP and not bool(w.far_side)
    r1, r2, n = np.asarray(w.r1), np.asarray(w.r2), int(w.n_segments)
    normal = np.cross(p1, p2)
    normal /= np.linalg.norm(normal)
    closest = p1 + (-p1 @ (p2 - p1)) / ((p2 - p1) @ (p2 - p1)) * (p2 - p1)
    side = closest / np.linalg.norm(closest)
    t1, t2 = _tangent_point(p1, normal, side), _tangent_point(p2, normal, side)
    tangent_err = max(np.linalg.norm(r1 - t1), np.linalg.norm(r2 - t2))
    assert tangent_err <= TOL_TANGENT_M, (r1, t1, r2, t2)
    assert n == int(np.linalg.norm(r1 - r2) // oe.SEGMENT_LENGTH_M) >= 2
    _, chords = _polyline(r1, r2, n, far=False)
    assert abs(float(w.length) - chords) <= TOL_CHORDS_M
    phi = np.arccos(t1 @ t2 / R_M ** 2)
    exact = np.sqrt(p1 @ p1 - R_M ** 2) + R_M * phi + np.sqrt(p2 @ p2 - R_M ** 2)
    deficit = R_M * phi - 2.0 * n * R_M * np.sin(phi / (2 * n))
    path = np.linalg.norm(p1 - r1) + float(w.length) + np.linalg.norm(p2 - r2)
    bound = 2.0 * np.sqrt(oe.ELLIPSOID_TINY) * R_M * np.sin(phi / (2 * n))
    assert abs(path - (exact - deficit)) <= bound, (path - exact + deficit, bound)
    print(f"sphere: tangent points {tangent_err:.1e} m, chords "
          f"{abs(float(w.length) - chords):.1e} m, path {abs(path - exact + deficit):.1e} m "
          f"(bound {bound:.1e})")
    # a wrap shorter than 1 mm is the chord between the tangent points
    w = _wrap([-0.05, 0.0195, 0.0], [0.05, 0.0195, 0.0])
    assert int(w.status) == oe.MANDATORY_WRAP and int(w.n_segments) == 1
    assert abs(float(w.length) - np.linalg.norm(np.asarray(w.r1 - w.r2))) <= TOL_CHORDS_M


@pytest.mark.parametrize("p1, p2, status", [
    ([0.005, 0.0, 0.0], [0.05, 0.0, 0.0], oe.INSIDE_RADIUS),      # p1 inside
    ([0.05, 0.0, 0.0], [0.0, 0.0, 0.019], oe.INSIDE_RADIUS),      # p2 inside
    ([-0.05, 0.03, 0.0], [0.05, 0.03, 0.0], oe.NO_WRAP),          # the line misses
    ([-0.05, 0.0, 0.001], [-0.03, 0.001, 0.0], oe.NO_WRAP),       # stops before the sphere
    ([0.03, 0.0, 0.0], [0.06, 0.0, 0.0], oe.NO_WRAP),             # collinear with the centre
    ([-0.05, 0.0, 0.001], [0.05, 0.001, 0.0], oe.MANDATORY_WRAP),
])
def test_status(p1, p2, status):
    w = _wrap(p1, p2)
    assert int(w.status) == status
    if status != oe.MANDATORY_WRAP:   # the caller uses nothing else: finite, zero length
        assert float(w.length) == 0.0 and np.all(np.isfinite(np.asarray(w.r1)))


def test_quadrant_sends_the_wrap_round_the_active_side():
    """A segment below the centre (y = -1 cm): unconstrained, and with quadrants -y, +x, -x,
    it wraps under the sphere; with +y, OpenSim mirrors its plane point c1 to the top and the
    wrap goes over it, between the upper tangent points."""
    p1, p2 = [-0.04, -0.01, 0.0], [0.04, -0.01, 0.0]
    under = _wrap(p1, p2)
    for axis, sign in ((1, -1), (0, 1), (0, -1)):
        w = _wrap(p1, p2, axis=axis, sign=sign)
        assert float(w.length) == float(under.length)
    over = _wrap(p1, p2, axis=1, sign=1)
    for w, below in ((under, True), (over, False)):
        assert int(w.status) == oe.MANDATORY_WRAP and not bool(w.far_side)
        r1, r2 = np.asarray(w.r1), np.asarray(w.r2)
        pts, chords = _polyline(r1, r2, int(w.n_segments), far=False)
        assert abs(float(w.length) - chords) <= TOL_CHORDS_M
        assert np.all((pts[:, 1] < 0.0) == below)
        for p, r in ((p1, r1), (p2, r2)):   # tangent from its end point
            assert abs(r @ (np.asarray(p) - r)) <= TOL_TANGENT_M * R_M
    assert float(over.length) > 2.5 * float(under.length)


def test_far_side_retry():
    p1, p2 = np.array([-0.031, 0.0002, 0.0]), np.array([0.0167, -0.0399, 0.0])
    w = _wrap(p1, p2, axis=1, sign=1)
    assert int(w.status) == oe.MANDATORY_WRAP and bool(w.far_side)
    r1, r2, n = np.asarray(w.r1), np.asarray(w.r2), int(w.n_segments)
    near_pts, near = _polyline(r1, r2, n, far=False)
    # the trigger: the near polyline's first chord points back towards p1
    assert (p1 - r1) @ (near_pts[1] - r1) > 0.0
    _, far = _polyline(r1, r2, n, far=True)
    assert abs(float(w.length) - far) <= TOL_CHORDS_M
    assert far - near > 0.05
    # unconstrained, the same segment is a short wrap with no retry
    free = _wrap(p1, p2)
    assert not bool(free.far_side) and float(free.length) < 0.001


def _path_length(z, radii=RADII):
    w = oe.opensim_ellipsoid_wrap(z[:3], z[3:], radii, *QUADRANT)
    return jnp.linalg.norm(w.r1 - z[:3]) + w.length + jnp.linalg.norm(z[3:] - w.r2)


def _first_order(z, radii):
    # one reverse pass for both gradients: two jax.grad calls transpose the construction
    # twice (XLA merges repeated forward code, not transposed code), 41k against 31k StableHLO
    # lines for this vmapped program, compile 17.0 against 14.4 s alone (a scratch timing)
    grad_z, grad_radii = jax.grad(_path_length, argnums=(0, 1))(z, radii)
    return grad_z, jax.jacfwd(_path_length)(z, radii), grad_radii


def _stencil(x, h):
    """x + h e_i and x - h e_i for each component (2 n rows), then the same with 2 h."""
    steps = np.eye(x.size)
    return np.vstack([x + h * steps, x - h * steps, x + 2 * h * steps, x - 2 * h * steps])


def _richardson(values, h):
    """(4 D(h) - D(2h)) / 3 from f on `_stencil(x, h)` (rows: its 4 n points)."""
    n = values.shape[0] // 4
    d1 = (values[:n] - values[n:2 * n]) / (2.0 * h)
    d2 = (values[2 * n:3 * n] - values[3 * n:]) / (4.0 * h)
    return (4.0 * d1 - d2) / 3.0


@pytest.fixture(scope="module")
def derivatives():
    """First and second derivatives at SEGMENT and their Richardson references, from three
    programs: lengths and first derivatives on batches of stencil points, the Hessian at
    SEGMENT."""
    z, radii = np.asarray(SEGMENT), np.asarray(RADII)
    zs = np.vstack([_stencil(z, H), _stencil(z, H / 2), np.repeat(z[None], 12, axis=0)])
    rs = np.vstack([np.repeat(radii[None], 48, axis=0), _stencil(radii, H)])
    values = np.asarray(jax.jit(jax.vmap(_path_length))(zs, rs))
    rows = np.vstack([z[None], _stencil(z, H)])
    first = [np.asarray(x) for x in jax.jit(jax.vmap(_first_order))(
        rows, np.repeat(radii[None], rows.shape[0], axis=0))]
    hessian = jax.jit(jax.hessian(_path_length))(jnp.asarray(z))
    fd = {"h": _richardson(values[:24], H), "h/2": _richardson(values[24:48], H / 2),
          "radii": _richardson(values[48:], H), "hessian": _richardson(first[0][1:], H)}
    return [x[0] for x in first], np.asarray(hessian), fd


def test_gradients_vs_central_differences(derivatives):
    (grad_rev, grad_fwd, grad_radii), _, fd = derivatives
    w = oe.opensim_ellipsoid_wrap(SEGMENT[:3], SEGMENT[3:], RADII, *QUADRANT)
    assert int(w.status) == oe.MANDATORY_WRAP and int(w.n_segments) == 17
    assert np.abs(fd["h"] - fd["h/2"]).max() <= 1e-9, "the stencil straddles a discontinuity"
    errors = {"reverse": np.abs(grad_rev - fd["h"]).max(),
              "forward": np.abs(grad_fwd - fd["h"]).max(),
              "semi-axes": np.abs(grad_radii - fd["radii"]).max()}
    for name, err in errors.items():
        assert err <= 1e-8, f"{name} gradient off by {err:.2e}"
    print("gradients vs Richardson differences:", {k: f"{v:.1e}" for k, v in errors.items()})


def test_second_derivatives(derivatives):
    _, hessian, fd = derivatives
    scale = np.abs(fd["hessian"]).max()
    fd_err = np.abs(hessian - fd["hessian"]).max() / scale
    assert fd_err <= 1e-8, fd_err
    print(f"Hessian vs Richardson differences: {fd_err:.1e} (relative)")


def test_builder_validates_ellipsoids():
    from myotwin.models import arm26

    pb = PathBuilder(arm26.skeleton())
    cases = [(dict(dimensions=(0.02, 0.0, 0.01)), r"OpenSim ellipsoid 'e': dimensions must "
              r"be 3 semi-axes > 0 m, got \(0.02, 0.0, 0.01\)"),
             (dict(dimensions=(0.02, 0.01)), r"'e': dimensions must have 3 entries"),
             (dict(dimensions=(0.02, np.nan, 0.01)), r"'e': dimensions must be finite"),
             (dict(dimensions=(0.02, 0.01, 0.01), quadrant="w"), r"'e': unknown quadrant 'w'"),
             (dict(dimensions=(0.02, 0.01, 0.01), quat=(1.0, 0.0, 0.0, 0.0),
                   xyz_body_rotation=(0.0, 0.0, 0.0)), "give quat or xyz_body_rotation")]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            pb.add_opensim_ellipsoid("e", "r_humerus", **kwargs)
    pb.add_opensim_ellipsoid("e", "r_humerus", dimensions=(0.02, 0.01, 0.01), quadrant="-Y")
    with pytest.raises(ValueError, match="name must be a new"):
        pb.add_opensim_ellipsoid("e", "r_humerus", dimensions=(0.02, 0.01, 0.01))
    pb.add_path("m", [Point("base", (0.0, 0.0, 0.1)), Point("r_humerus", (0.0, -0.1, 0.0))],
                wraps=["e"])
    bad = PathBuilder(arm26.skeleton())
    bad.add_opensim_ellipsoid("e", "nowhere", dimensions=(0.02, 0.01, 0.01))
    bad.add_path("m", [Point("base", (0.0, 0.0, 0.1)), Point("r_humerus", (0.0, -0.1, 0.0))],
                 wraps=["e"])
    with pytest.raises(ValueError, match="OpenSim ellipsoid 'e': unknown body 'nowhere'"):
        bad.build()


def test_mass_points_on_an_ellipsoid_path_are_refused():
    from myotwin import inertia
    from myotwin.inertia import composite
    from myotwin.inertia.muscle_mass import build_muscle_mass, distribution
    from myotwin.models import arm26

    model = arm26.build(ellipsoids=True)
    for muscle, ellipsoid in (("BIClong", "BIClonghh"), ("TRIlong", "TRIlonghh")):
        with pytest.raises(ValueError, match=f"muscle mass of path '{muscle}': its path wraps "
                                             f"the OpenSim ellipsoid '{ellipsoid}'"):
            inertia.with_muscle_mass(model, muscle, 0.1, 4)
    assert inertia.with_muscle_mass(model, "TRIlat", 0.1, 4).muscle_mass.n_points == 4
    # built around `with_muscle_mass`, the points are refused when the dynamics use them
    alphas, weights = distribution(4)
    mm = build_muscle_mass(model.paths, {3: (alphas, 0.1 * weights, 0)})
    with pytest.raises(ValueError, match="'BIClong': its path wraps the OpenSim ellipsoid"):
        composite.split(dataclasses.replace(model, muscle_mass=mm))
