"""leg6dof9musc.osim (a CoordinateCouplerConstraint, a welded toes body) against OpenSim 4.6.

The file's `pat_angle_r` makes the patella's coordinate knee_angle_pat_r = 1 * (knee_angle_r)
(a LinearFunction (1, 0)); `osim.load` eliminates it (the patella's three spline axes follow
knee_angle_r through `OsimModel.coupling`), while OpenSim keeps it as a mobility held by a
constraint force. toes_r (inertia 0 0 0.0009, refused by MuJoCo's compiler) is welded to
calcn_r and merged into it (`to_builders.merge_welded`); OpenSim keeps it as its own body.
Two files are compared: the model as it is, and a variant whose coupler is a nonlinear
SimmSpline with scale_factor 0.9 (so the composition f_j(s g(q)) and its chain-rule
derivatives are exercised beyond the identity), with a rect_fem_r path point moved onto the
patella and tib_ant_r's insertion onto the merged toes (in the file as it is no path touches
either body, so the coupler would not reach the muscles).

At poses drawn in the coordinate ranges (OpenSim's dependent coordinate set to
scale * f(knee) with OpenSim's own function object, its speed to scale * f' * knee speed; not
by `Model.assemble`, which stops at its 1e-10 accuracy):

* every muscle's length against `getLength`: tolerance 1e-12 m (the same splines, transforms
  and distances in float64; observed ~5e-16 m);
* the moment arms w.r.t. every independent coordinate, ours -d/dq of
  `muscle_lengths(model, full_positions(coupling, q))` (jax.jacfwd through the composed
  coupling) and `generalized_force_moment_arms` reduced by J^T, against OpenSim's
  `computeMomentArm`. OpenSim 4's MomentArmSolver sets the coordinate's speed to 1, projects
  the speeds onto the constraint (so the dependent coordinate moves with it) and applies J^T
  to the path's generalized forces: the same quantity. Tolerance 1e-10 m (its velocity
  projection is solved to 1e-10 in the worst case; observed ~3e-16 m);
* the lengthening speeds a forward simulation with OpenSim's coupling uses (`musculoskeletal.
  path_state`: -r^T qd with the reduced point-force arms) against `getLengtheningSpeed` at
  random speeds: 1e-10 m times |qd|_1 (the arms' tolerance; observed ~1e-15 m/s);
* forward dynamics: OpenSim's udot with the constraint enforced (muscles off, random
  generalized forces applied by CoordinateActuators on the independent coordinates, random
  speeds) against `coupled_forward_dynamics`; tolerance 1e-9 relative to the largest
  acceleration, as tests/osim/test_osim_coupled_forward.py (both solve the same constrained
  system in float64, OpenSim through Lagrange multipliers). This also checks the welded merge
  end to end: OpenSim's toes are a separate body. OpenSim's dependent acceleration is checked
  against s (f'' qd^2 + f' qdd) too.

The parallel-axis merge itself is unit-checked against an independent construction: each body
replaced by six point masses with its mass, mass centre and inertia, the union's inertia
summed point by point (1e-15 kg m^2). On a synthetic pair (`osim_synthetic.coupled_pair`: phi
= 2 (0.5 theta + 0.1), a ConditionalPathPoint on phi) the eliminated model is compared with
the same file loaded with the coupler omitted and phi set by hand: lengths (the conditional
point switching with theta through phi), J^T M_f J and the inverse dynamics J^T tau_f
(1e-14 relative: the same engine arithmetic, the coupling's products aside).
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import musculoskeletal as ms
from myotwin import osim
from myotwin.engine import (coupled_forward_dynamics, coupled_inverse_dynamics,
                            coupled_mass_matrix)
from myotwin.engine.dynamics import inverse_dynamics
from myotwin.engine.mass import mass_matrix
from myotwin.engine.coupling import full_positions
from myotwin.engine.piecewise import evaluate_padded
from myotwin.osim.description import Body
from myotwin.osim.to_builders import combined_body, is_rigid_body_inertia
from coupled_paths import path_functions
from opensim_live import opensim_package
from osim_synthetic import COUPLER_LINEAR, COUPLER_SCALE, TINY, coupled_pair, write_osim
from shared_reference import SHARED

opensim = opensim_package()

MODEL = SHARED / "reference/opensim/models/leg6dof9musc.osim"
TOL_LENGTH_M = 1e-12
TOL_ARM_M = 1e-10
TOL_QDD_RELATIVE = 1e-9
DEPENDENT, INDEPENDENT = "knee_angle_pat_r", "knee_angle_r"
#: The variant's coupler: knee_angle_pat_r = 0.9 * SimmSpline(knee_angle_r).
SPLINE_X = "-2.2 -1.5 -0.8 -0.2 0.3"
SPLINE_Y = "-1.9 -1.45 -0.6 -0.25 0.3"
SCALE = "0.9"


def _needs_model():
    if not MODEL.exists():
        pytest.skip(f"shared reference {MODEL} is absent")
    return MODEL


def _variant(root: ET.Element) -> None:
    """The nonlinear coupler, a rect_fem_r point on the patella, tib_ant_r's insertion on the
    toes."""
    coupler = root.find(".//CoordinateCouplerConstraint[@name='pat_angle_r']")
    holder = coupler.find("coupled_coordinates_function")
    holder.remove(holder[0])
    holder.append(ET.fromstring(f"<SimmSpline><x>{SPLINE_X}</x><y>{SPLINE_Y}</y></SimmSpline>"))
    coupler.find("scale_factor").text = SCALE
    rect_fem = root.find(".//Thelen2003Muscle[@name='rect_fem_r']//PathPointSet/objects")
    at = [p.get("name") for p in rect_fem].index("rect_fem_r-P2") + 1
    rect_fem.insert(at, ET.fromstring(
        '<PathPoint name="rect_fem_r-Ppat"><socket_parent_frame>/bodyset/patella_r'
        "</socket_parent_frame><location>0.01 0.03 0.002</location></PathPoint>"))
    insertion = root.find(".//PathPoint[@name='tib_ant_r-P3']")
    insertion.find("socket_parent_frame").text = "/bodyset/toes_r"
    insertion.find("location").text = "0.02 0.01 -0.02"


@functools.lru_cache(maxsize=None)
def _path(tmp_root, variant: bool):
    if not variant:
        return _needs_model()
    root = ET.parse(_needs_model()).getroot()
    _variant(root)
    path = tmp_root / "leg6dof9musc_variant.osim"
    ET.ElementTree(root).write(path, encoding="unicode")
    return path


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory):
    return tmp_path_factory.mktemp("coupler")


@functools.lru_cache(maxsize=None)
def _ours(path):
    loaded = osim.load(path)
    return (loaded, *path_functions(loaded))


class _OpenSim:
    """One OpenSim model (muscles off and CoordinateActuators added when `drives`)."""

    def __init__(self, path, names, drives=False):
        self.model = opensim.Model(str(path))
        self.actuators = {}
        if drives:
            for i in range(self.model.getMuscles().getSize()):
                self.model.getMuscles().get(i).set_appliesForce(False)
            for name in names:
                act = opensim.CoordinateActuator(name)
                act.setName(f"{name}_drive")
                act.setOptimalForce(1.0)
                self.model.addForce(act)
                self.actuators[name] = act
        self.state = self.model.initSystem()
        self.names = names
        self.coords = self.model.getCoordinateSet()
        coupler = opensim.CoordinateCouplerConstraint.safeDownCast(
            self.model.getConstraintSet().get("pat_angle_r"))
        self.function = coupler.getFunction()
        self.scale = float(coupler.getPropertyByName("scale_factor").toString())

    def coupler(self, x):
        """(s f, s f', s f'') at x by OpenSim's function object."""
        arg = opensim.Vector(1, float(x))
        derivatives = []
        for order in (1, 2):
            which = opensim.StdVectorInt()
            for _ in range(order):
                which.append(0)
            derivatives.append(self.function.calcDerivative(which, arg))
        return self.scale * np.array([self.function.calcValue(arg), *derivatives])

    def set(self, q, qd=None):
        knee = self.names.index(INDEPENDENT)
        value, slope, _ = self.coupler(q[knee])
        for name, v in zip(self.names, q):
            self.coords.get(name).setValue(self.state, float(v), False)
        self.coords.get(DEPENDENT).setValue(self.state, float(value), False)
        if qd is None:
            self.model.realizePosition(self.state)
            return
        for name, v in zip(self.names, qd):
            self.coords.get(name).setSpeedValue(self.state, float(v))
        self.coords.get(DEPENDENT).setSpeedValue(self.state, float(slope * qd[knee]))
        self.model.realizeVelocity(self.state)


def _poses(loaded, seed, n):
    rng = np.random.default_rng(seed)
    names = loaded.coordinates
    poses = [np.array([rng.uniform(*loaded.coordinate_ranges[c]) for c in names])
             for _ in range(n)]
    knee = names.index(INDEPENDENT)
    poses[0][knee] = -1.45997 - 0.5e-5   # rect_fem_r's conditional point switched on
    poses[1][knee] = -0.526391           # a knot of the patella's rotation spline
    return poses


def test_leg6dof9musc_loads_without_its_dependent_coordinate():
    """Coordinates: OpenSim's minus knee_angle_pat_r; the coupler and the merge recorded."""
    loaded = osim.load(_needs_model())
    model = opensim.Model(str(MODEL))
    coords = model.getCoordinateSet()
    theirs = {coords.get(i).getName() for i in range(coords.getSize())}
    assert set(loaded.coordinates) == theirs - {DEPENDENT}
    assert len(loaded.coordinates) == len(theirs) - 1
    coupled = loaded.coupled_coordinates[DEPENDENT]
    assert (coupled.independent, coupled.constraint) == (INDEPENDENT, "pat_angle_r")
    assert "LinearFunction (coefficients '1 0')" in coupled.description
    assert dict(loaded.merged_bodies) == {"toes_r": "calcn_r"}
    assert loaded.unenforced_constraints == ()
    mj = loaded.path_builder.mj_model()
    bodies = model.getBodySet()
    assert mj.body("toes_r").mass[0] == 0.0
    np.testing.assert_allclose(mj.body("calcn_r").mass[0],
                               bodies.get("calcn_r").getMass() + bodies.get("toes_r").getMass(),
                               rtol=1e-15)
    # the patella's three spline axes follow the knee
    knee = loaded.coordinates.index(INDEPENDENT)
    patella = [j for j, name in enumerate(loaded.engine_joints) if name.startswith("tib_pat_r")]
    assert len(patella) == 3 and {loaded.coupling.source[j] for j in patella} == {knee}


@pytest.mark.parametrize("variant", [False, True], ids=["file", "spline_coupler"])
def test_lengths_and_moment_arms_match_opensim(tmp_root, variant):
    path = _path(tmp_root, variant)
    loaded, lengths, minus_dl, force_arms = _ours(path)
    theirs = _OpenSim(path, loaded.coordinates)
    muscles = [theirs.model.getMuscles().get(n) for n in loaded.muscle_names]
    knee = loaded.coordinates.index(INDEPENDENT)
    coupled = loaded.coupled_coordinates[DEPENDENT].function
    worst_length = worst_arm = 0.0
    for q in _poses(loaded, 7 + variant, 5):
        theirs.set(q)
        ours_dependent = evaluate_padded(*(jnp.asarray(a)[None] for a in coupled),
                                         jnp.asarray(q[knee:knee + 1]))[0][0]
        np.testing.assert_allclose(ours_dependent, theirs.coupler(q[knee])[0], rtol=0,
                                   atol=1e-15)
        reference = np.array([m.getLength(theirs.state) for m in muscles])
        err = np.abs(np.asarray(lengths(jnp.asarray(q))) - reference).max()
        assert err <= TOL_LENGTH_M, f"lengths differ by {err:.3e} m at {q}"
        worst_length = max(worst_length, err)
        arms = np.array([[m.getGeometryPath().computeMomentArm(
            theirs.state, theirs.coords.get(c)) for c in loaded.coordinates] for m in muscles])
        for what, ours in (("-dL/dq", minus_dl), ("J^T force arms", force_arms)):
            err = np.abs(np.asarray(ours(jnp.asarray(q))) - arms).max()
            assert err <= TOL_ARM_M, f"{what} differ by {err:.3e} m at {q}"
            worst_arm = max(worst_arm, err)
        if variant:  # the patella point makes rect_fem_r's knee moment arm see the coupler
            assert abs(arms[loaded.muscle_names.index("rect_fem_r"), knee]) > 1e-3
    print(f"worst length error {worst_length:.2e} m, moment arm {worst_arm:.2e} m")


@pytest.mark.parametrize("variant", [False, True], ids=["file", "spline_coupler"])
def test_lengthening_speeds_match_opensim(tmp_root, variant):
    """`musculoskeletal.path_state`'s v_MT with OpenSim's coupling (-r^T qd, r the point-force
    arms reduced by J^T) against OpenSim's getLengtheningSpeed with the dependent speed
    s f'(q) qd_knee; 1e-10 m (the arms' tolerance) times |qd|_1."""
    path = _path(tmp_root, variant)
    loaded = _ours(path)[0]
    msm = ms.musculoskeletal_model(loaded.model, osim.build_muscles(loaded, tendon="opensim"),
                                   coupling="opensim", coordinates=loaded.coupling)
    state_fn = jax.jit(lambda q, qd: ms.path_state(msm, q, qd)[1])
    theirs = _OpenSim(path, loaded.coordinates)
    muscles = [theirs.model.getMuscles().get(n) for n in loaded.muscle_names]
    rng = np.random.default_rng(11 + variant)
    worst = 0.0
    for q in _poses(loaded, 9 + variant, 4):
        qd = rng.uniform(-2.0, 2.0, len(q))
        theirs.set(q, qd)
        reference = np.array([m.getGeometryPath().getLengtheningSpeed(theirs.state)
                              for m in muscles])
        err = np.abs(np.asarray(state_fn(jnp.asarray(q), jnp.asarray(qd))) - reference).max()
        assert err <= TOL_ARM_M * np.abs(qd).sum(), f"speeds differ by {err:.3e} m/s at {q}"
        worst = max(worst, err)
    print(f"worst lengthening speed error {worst:.2e} m/s")


@pytest.mark.parametrize("variant", [False, True], ids=["file", "spline_coupler"])
def test_accelerations_match_opensim_with_the_constraint_enforced(tmp_root, variant):
    path = _path(tmp_root, variant)
    loaded = osim.load(path, forces=False)
    names = loaded.coordinates
    theirs = _OpenSim(path, names, drives=True)
    forward = jax.jit(lambda q, qd, tau: coupled_forward_dynamics(
        loaded.model, loaded.coupling, q, qd, jnp.zeros(loaded.model.n_u), qfrc=tau))
    rng = np.random.default_rng(3 + variant)
    knee = names.index(INDEPENDENT)
    worst = 0.0
    for q in _poses(loaded, 5 + variant, 4):
        qd = rng.uniform(-2.0, 2.0, len(names))
        tau = rng.uniform(-50.0, 50.0, len(names))
        theirs.set(q, qd)
        controls = opensim.Vector(theirs.model.getNumControls(), 0.0)
        for k, name in enumerate(names):
            theirs.actuators[name].addInControls(opensim.Vector(1, float(tau[k])), controls)
        theirs.model.setControls(theirs.state, controls)
        theirs.model.realizeAcceleration(theirs.state)
        reference = np.array([theirs.coords.get(n).getAccelerationValue(theirs.state)
                              for n in names])
        ours = np.asarray(forward(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(tau)))
        scale = np.abs(reference).max()
        err = np.abs(ours - reference).max() / scale
        assert err <= TOL_QDD_RELATIVE, f"qdd differs by {err:.3e} (relative) at {q}"
        worst = max(worst, err)
        _, slope, curvature = theirs.coupler(q[knee])
        dependent = theirs.coords.get(DEPENDENT).getAccelerationValue(theirs.state)
        expected = curvature * qd[knee] ** 2 + slope * reference[knee]
        assert abs(dependent - expected) <= TOL_QDD_RELATIVE * scale, "OpenSim's constraint"
    print(f"worst relative acceleration error {worst:.2e}")


def _point_cloud(body: Body, rotation, offset):
    """Six point masses with `body`'s mass, mass centre and inertia (placed on its principal
    axes, second moments S_k = (tr I / 2 - I_k)), in the frame (rotation, offset)."""
    xx, yy, zz, xy, xz, yz = body.inertia
    moments, axes = np.linalg.eigh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
    second = moments.sum() / 2.0 - moments
    points = []
    for k in range(3):
        arm = np.sqrt(3.0 * second[k] / body.mass) * axes[:, k]
        points += [np.asarray(body.mass_center) + arm, np.asarray(body.mass_center) - arm]
    return [(body.mass / 6.0, offset + rotation @ p) for p in points]


def test_parallel_axis_merge_against_point_masses():
    """`combined_body` (a child with a full inertia, rotated and offset in its parent) against
    the inertia of the union of both bodies' six-point-mass equivalents, summed directly."""
    parent = Body("p", 1.3, (0.02, -0.1, 0.03), (0.011, 0.009, 0.014, 0.001, -0.0005, 0.0007))
    child = Body("c", 0.4, (0.05, 0.01, -0.02), (0.002, 0.0015, 0.003, 0.0002, 0.0001, -0.0003))
    pos = np.array([0.1, -0.05, 0.2])
    angle = 0.7
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    quat = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rotation = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k   # Rodrigues
    merged = combined_body(parent, child, pos, quat)
    points = _point_cloud(parent, np.eye(3), np.zeros(3)) + _point_cloud(child, rotation, pos)
    mass = sum(m for m, _ in points)
    centre = sum(m * p for m, p in points) / mass
    inertia = sum(m * ((p - centre) @ (p - centre) * np.eye(3) - np.outer(p - centre,
                                                                          p - centre))
                  for m, p in points)
    np.testing.assert_allclose(merged.mass, mass, rtol=1e-15)
    np.testing.assert_allclose(merged.mass_center, centre, rtol=0, atol=1e-16)
    expected = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2],
                inertia[1, 2]]
    np.testing.assert_allclose(merged.inertia, expected, rtol=0, atol=1e-15)
    assert is_rigid_body_inertia(merged.inertia)
    assert not is_rigid_body_inertia((0.0, 0.0, 0.0009, 0.0, 0.0, 0.0))   # toes_r's
    assert not is_rigid_body_inertia((0.001, 0.001, 0.003, 0.0, 0.0, 0.0))   # 1 + 1 < 3


def test_synthetic_coupler_equals_the_unconstrained_model_on_the_constraint(tmp_path):
    path = write_osim(tmp_path, TINY, coupled_pair)
    pair = osim.load(path)
    free = osim.load(path, omit=("couple",))
    assert free.coordinates == ("theta", "phi") and free.coupling is None

    def phi(theta):
        return COUPLER_SCALE * (COUPLER_LINEAR[0] * theta + COUPLER_LINEAR[1])

    slope = COUPLER_SCALE * COUPLER_LINEAR[0]
    jac = jnp.array([[1.0], [slope]])
    switched = set()
    for theta, rate, accel in ((-0.9, 0.4, 1.1), (-0.05, -1.3, 0.2), (0.6, 2.0, -0.7)):
        q, qd, qdd = jnp.array([theta]), jnp.array([rate]), jnp.array([accel])
        q_free = jnp.array([theta, phi(theta)])
        switched.add(bool(0.0 <= phi(theta) <= 1.0))
        np.testing.assert_allclose(full_positions(pair.coupling, q), q_free, rtol=1e-15)
        np.testing.assert_allclose(
            myotwin.muscle_lengths(pair.model, full_positions(pair.coupling, q)),
            myotwin.muscle_lengths(free.model, q_free), rtol=1e-15)
        np.testing.assert_allclose(coupled_mass_matrix(pair.model, pair.coupling, q),
                                   jac.T @ mass_matrix(free.model, q_free) @ jac, rtol=1e-14)
        tau_free = inverse_dynamics(free.model, q_free, jac @ qd, jac @ qdd)
        np.testing.assert_allclose(
            coupled_inverse_dynamics(pair.model, pair.coupling, q, qd, qdd),
            jac.T @ tau_free, rtol=1e-14)
    assert switched == {True, False}   # m2's conditional point seen on and off
