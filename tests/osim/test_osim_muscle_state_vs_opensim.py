"""The muscle inputs and muscle states of OpenSim's force coupling vs OpenSim 4.6 itself, live.

Reference: the `opensim` 4.6 package in this process, on arm26.osim (and two edited copies).
Each comparison sets one state in an OpenSim State (coordinate values and speeds, activations,
fiber lengths), realizes it and reads OpenSim's own numbers; ours come from the public API:
`musculoskeletal.paths.path_state` with coupling="opensim", `osim.build_muscles` and
`muscle.musculotendon.muscle_outputs`.

(a) Paths. l_MT, v_MT and r of `path_state` vs GeometryPath getLength,
    getLengtheningSpeed and computeMomentArm at six (q, qd) states, where every wrap object of
    arm26 is active somewhere (BIClong on the ellipsoid BIClonghh; TRIlong on the cylinders
    TRIlongglen and TRI and the ellipsoid TRIlonghh; TRIlat, TRImed and BRA on TRI; read from
    OpenSim's current paths). Lengths and moment arms 1e-9 m: our paths evaluate OpenSim's
    construction in float64 in another order, so the residual is roundoff (tests/paths/
    test_arm26.py observes <= 1.5e-15 m and uses the same 1e-9 m). Speeds 1e-9 m * |qd|_1:
    v_MT is the derivative along qd of the same fixed-point construction as r, so an error
    of r within its tolerance moves v_MT by at most that.
    Where a wrap is active OpenSim's lengthening speed is not dL/dt (the tangent points are
    held on their bodies); the test checks that they differ by > 1e-6 m/s somewhere (the
    central difference of getLength, h = 1e-6 s, carries ~1e-10 m/s of rounding), so
    v_MT = dL/dt would fail. One state is TRIlong over three interacting wraps with OpenSim's
    stale tangent points (`paths/opensim_path.py`, step 5; the shoulder elevated ~1.3-2.5
    rad, seen on a 48 x 12 grid of arm26's ranges): there OpenSim's getLengtheningSpeed is
    not -qd . r of its own computeMomentArm (at q = (1.5, 1.5), qd = (1, 0): 0.016650 vs
    0.018436 m/s): Point::calcSpeedBetween takes each segment's direction from the stale
    ground locations and the velocities from PathWrapPoint::getLocation, and
    computeLengtheningSpeed sums every segment, while addInEquivalentForces (so
    computeMomentArm) skips segments with both ends on one body; with consistent points
    those add exactly 0, with stale ones they do not. `path_state` sums them too; -qd . r
    would fail there by 1.8e-3 m/s.
(b) Thelen2003Muscle with the fiber length as state (tendon="fiber_length"): OpenSim's
    getFiberVelocity and getTendonForce after setActivation / setFiberLength and
    realizeDynamics vs our `muscle_outputs` at OUR l_MT, v_MT, at the six states,
    activations 0.05, 0.5, 1 and fiber lengths 0.998, 1, 1.002 x OpenSim's equilibrium
    fiber length (equilibrateMuscles at the state's speeds): force-velocity multipliers F
    from -7 to 8, so all four pieces of OpenSim's calcdlceN (the linear extrapolations for
    F <= 0 and F >= 0.95 Flen included), concentric and eccentric fibers. The curves are
    OpenSim's formulas to 1e-12 relative (docs/muscle.md, test_thelen2003.py), l_MT is
    OpenSim's to ~1e-15 m ((a)); a length error d moves the tendon force by (k_lin / l_ts) d
    F_iso (<= 1000 d/m F_iso: k_lin = 51.9, l_ts >= 0.053 m) and F by that over a f_L (down
    to ~0.02 here), the fiber velocity by F's error times f_V^-1's slope. Tolerances 1e-10:
    tendon force in F_iso, fiber velocity in v_max l_opt max(1, |v~|) (observed 5e-13 and
    5e-12, the latter at a = 0.05 far out on an extrapolation). Regimes kept away from:
    OpenSim's minimum fiber length (its fiber state clamp) and its minimum activation 0.01
    (arm26 keeps the default): every fiber is > 2 x getMinimumFiberLength and
    a >= 0.05 > getMinimumActivation; that OpenSim took the fiber length is checked.
    v_MT does not enter this state's fiber velocity or tendon force.
(c) Rigid tendon. OpenSim 4.6 refuses Thelen2003Muscle with ignore_tendon_compliance at
    initSystem ("not currently implemented"; checked below), so the rigid comparison uses a
    copy of arm26 whose six muscles are Millard2012EquilibriumMuscle (same paths, F_iso,
    l_opt, l_ts, pennation, v_max, time constants; OpenSim's default curves; fiber_damping
    0.1) with ignore_tendon_compliance true. `build_muscles(tendon="opensim")` must give
    "rigid"; OpenSim's getFiberLength, getFiberVelocity, getTendonForce vs ours at the
    states with nonzero qd and activations 0.05, 0.5, 1: the fiber velocity is v_MT's
    (v_M = v_MT cos phi for the constant-height pennation), so this checks that a rigid fiber
    follows OpenSim's lengthening speed. Fiber length 1e-9 m and fiber velocity
    1e-9 m * |qd|_1 (those of l_MT and v_MT in (a)); tendon force 1e-10 F_iso plus what
    the speed tolerance can move it: f_V's slope (<= 5 per unit of v_max l_opt) and the
    damping 0.1. The stale TRIlong state is included. At fast shortening (FAST, a = 0.01)
    the damping would make the fiber force compressive; OpenSim's rigid Millard muscle
    saturates it at 0 (the damping force becomes -(active + passive)); ours too, compared
    with the same tolerances (without the saturation the tendon pushes with up to 20 N).
(d) OpenSim's Millard2012EquilibriumMuscle overrides its ActiveForceLengthCurve's
    minimum_value (0 when damped, fiber_damping >= 1e-3, or rigid) and the
    ForceVelocityCurve's slopes at v_max (0) in extendFinalizeFromProperties, whatever the
    file says; so does `build_muscles`. The copy of (c) without <minimum_value>0</...> (the
    curve default 0.1 applies in the file): f_L at l~ = 0.53 and 0.58 (BICshort, BRA at
    q = (-0.5, 2.4)) against OpenSim's getActiveForceLengthMultiplier; the file's 0.1 would
    be 1.3e-3 too large.
The resolution of tendon="opensim" is checked on arm26 (Thelen: "fiber_length"),
gait10dof18musc (Millard: "damped_fiber_length") and the two rigid copies ("rigid").
OpenSim prints [info]/[warning] lines about missing .vtp meshes: harmless.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import musculoskeletal as ms
from myotwin import osim
from myotwin.muscle.musculotendon import muscle_outputs
from myotwin.musculoskeletal.paths import path_state
from opensim_live import opensim_package, set_pose
from osim_synthetic import scale_tendon_slack_lengths, set_muscle_property, write_osim
from shared_reference import SHARED, needs

opensim = opensim_package()

MODELS = SHARED / "reference" / "opensim" / "models"
ARM26 = MODELS / "arm26.osim"
GAIT = MODELS / "gait10dof18musc.osim"

#: (q, qd): q = (r_shoulder_elev, r_elbow_flex) rad, qd rad/s, speeds of both signs.
STATES = [((0.0, 1.0), (0.3, -0.5)), ((0.5, 2.0), (-2.0, 1.5)), ((-0.3, 0.4), (0.8, 1.2)),
          ((1.2, 0.8), (2.0, -1.0)), ((-0.5, 2.4), (-1.5, -2.5))]
#: TRIlong over three wraps with OpenSim's stale tangent points (module docstring, (a)).
STALE = ((1.5, 1.5), (-1.0, -2.0))
STATE_PARAMS = [*STATES, STALE]
ACTIVATIONS = (0.05, 0.5, 1.0)
FIBER_FACTORS = (0.998, 1.0, 1.002)

TOL_LENGTH_M = 1e-9
TOL_ARM_M = 1e-9
TOL_CURVE = 1e-10        # F_iso, and v_max l_opt max(1, |v~|)
H_FD_S = 1e-6            # central difference of OpenSim's length along qd
THELEN_ONLY = ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af",
               "Flen")


# ------------------------------------------------------------------------------ helpers

def _muscles(model, cast):
    muscles = model.getMuscles()
    return [cast.safeDownCast(muscles.get(k)) for k in range(muscles.getSize())]


class _Arm:
    """arm26 in OpenSim and ours, its muscles built with `tendon` (or a copy at `path`)."""

    def __init__(self, path, tendon, cast):
        self.loaded = osim.load(path)
        self.muscles = osim.build_muscles(self.loaded, tendon=tendon)
        msm = ms.musculoskeletal_model(self.loaded.model, self.muscles, coupling="opensim",
                                       coordinates=self.loaded.coupling)
        self.model = opensim.Model(str(path))
        self.state = self.model.initSystem()
        self.os_muscles = _muscles(self.model, cast)
        coords = self.model.getCoordinateSet()
        assert self.loaded.coordinates == tuple(coords.get(j).getName()
                                                for j in range(coords.getSize()))
        assert self.loaded.muscle_names == tuple(m.getName() for m in self.os_muscles)
        self.paths = jax.jit(lambda q, qd: path_state(msm, q, qd))
        self.outputs = jax.jit(lambda *args: muscle_outputs(self.muscles, *args))
        self.f_iso = np.asarray(self.muscles.max_isometric_force_N)
        self.v_unit = np.asarray(self.muscles.max_contraction_velocity_Lopt_per_s
                                 * self.muscles.optimal_fiber_length_m)

    def ours(self, q, qd):
        return [np.asarray(x) for x in self.paths(jnp.asarray(q, float),
                                                  jnp.asarray(qd, float))]

    def theirs(self, q, qd):
        """OpenSim's (getLength, getLengtheningSpeed, computeMomentArm (n_v, n_muscles))."""
        set_pose(self.model, self.state, q, qd)
        self.model.realizeVelocity(self.state)
        s, coords = self.state, self.model.getCoordinateSet()
        length = np.array([m.getLength(s) for m in self.os_muscles])
        speed = np.array([m.getLengtheningSpeed(s) for m in self.os_muscles])
        arms = np.array([[m.getGeometryPath().computeMomentArm(s, coords.get(j))
                          for m in self.os_muscles] for j in range(coords.getSize())])
        return length, speed, arms

    def realized(self, q, qd, a):
        """OpenSim's state set to (q, qd) and activation `a`, realized to Dynamics; returns our
        (l_MT, v_MT, MuscleOutputs) at the same (q, qd, a)."""
        l_mt, v_mt, _ = self.ours(q, qd)
        set_pose(self.model, self.state, q, qd)
        for m in self.os_muscles:
            m.setActivation(self.state, a)
        self.model.realizeDynamics(self.state)
        return l_mt, v_mt, self.outputs(a, l_mt, v_mt)

    def rigid_force_tolerance(self, qd):
        """(n_muscles,) tendon-force tolerance (F_iso) of the rigid comparisons at speeds qd:
        TOL_CURVE plus what the speed tolerance TOL_ARM_M |qd|_1 moves f_V (slope <= 5 per
        v_max l_opt) and the damping."""
        tol_v = TOL_ARM_M * np.abs(qd).sum()
        return TOL_CURVE + (5.0 + np.asarray(self.muscles.fiber_damping)) * tol_v / self.v_unit

    def wraps(self, q):
        """(muscle, wrap object) pairs active at q in OpenSim's current paths."""
        set_pose(self.model, self.state, q, (0.0, 0.0))
        self.model.realizePosition(self.state)
        pairs = set()
        for m in self.os_muscles:
            path = m.getGeometryPath().getCurrentPath(self.state)
            for i in range(path.getSize()):
                point = opensim.PathWrapPoint.safeDownCast(path.get(i))
                if point is not None:
                    pairs.add((m.getName(), point.getWrapObject().getName()))
        return pairs


@pytest.fixture(scope="module")
def thelen():
    return _Arm(needs(ARM26), "fiber_length", opensim.Thelen2003Muscle)


def _flag_thelen_rigid(root):
    set_muscle_property(root, "Thelen2003Muscle", "ignore_tendon_compliance", "true")


def _to_rigid_millard(zero_active_minimum: bool):
    """An edit making every Thelen2003Muscle a rigid-tendon Millard2012EquilibriumMuscle
    (the Thelen-only properties dropped, OpenSim's default curves), with the active
    force-length curve's minimum_value written as 0 if `zero_active_minimum`."""

    def edit(root):
        for muscle in root.iter("Thelen2003Muscle"):
            muscle.tag = "Millard2012EquilibriumMuscle"
            for tag in THELEN_ONLY:
                for element in muscle.findall(tag):
                    muscle.remove(element)
            flag = type(muscle)("ignore_tendon_compliance")
            flag.text = "true"
            muscle.append(flag)
            if zero_active_minimum:
                curve = type(muscle)("ActiveForceLengthCurve")
                minimum = type(muscle)("minimum_value")
                minimum.text = "0"
                curve.append(minimum)
                muscle.append(curve)
    return edit


@pytest.fixture(scope="module")
def rigid(tmp_path_factory):
    path = write_osim(tmp_path_factory.mktemp("rigid"), needs(ARM26).read_text(),
                      _to_rigid_millard(True), "arm26_rigid_millard.osim")
    return _Arm(path, "opensim", opensim.Millard2012EquilibriumMuscle)


# ------------------------------------------------------------------------------ (a) paths

def test_lengths_and_moment_arms_are_opensims_where_every_wrap_is_active(thelen):
    pairs = set().union(*(thelen.wraps(q) for q, _ in [*STATES, STALE]))
    assert {("BIClong", "BIClonghh"), ("TRIlong", "TRIlonghh"), ("TRIlong", "TRIlongglen"),
            ("TRIlong", "TRI"), ("TRIlat", "TRI"), ("TRImed", "TRI"),
            ("BRA", "TRI")} <= pairs, pairs
    # an ellipsoid wraps TRIlong at a state whose speeds are compared too (not only STALE)
    assert ("TRIlong", "TRIlonghh") in set().union(*(thelen.wraps(q) for q, _ in STATES))
    worst_l = worst_r = 0.0
    for q, qd in [*STATES, STALE]:
        l_mt, _, arms = thelen.ours(q, qd)
        length, _, ref_arms = thelen.theirs(q, qd)
        err_l, err_r = np.abs(l_mt - length).max(), np.abs(arms - ref_arms).max()
        assert err_l <= TOL_LENGTH_M, f"l_MT at q = {q}: {err_l:.2e} m"
        assert err_r <= TOL_ARM_M, f"moment arms at q = {q}: {err_r:.2e} m"
        worst_l, worst_r = max(worst_l, err_l), max(worst_r, err_r)
    print(f"arm26, {len(STATES) + 1} states: l_MT within {worst_l:.1e} m, r within "
          f"{worst_r:.1e} m of OpenSim's; wraps active: {sorted(pairs)}")


@pytest.mark.parametrize("q, qd", STATE_PARAMS)
def test_lengthening_speed_is_opensims(thelen, q, qd):
    _, v_mt, _ = thelen.ours(q, qd)
    _, speed, _ = thelen.theirs(q, qd)
    err = np.abs(v_mt - speed)
    tol = TOL_ARM_M * np.abs(qd).sum()
    print(f"q = {q}, qd = {qd}: v_MT within {err.max():.1e} m/s of getLengtheningSpeed "
          f"(worst {thelen.loaded.muscle_names[int(err.argmax())]}; tolerance {tol:.0e})")
    assert err.max() <= tol, dict(zip(thelen.loaded.muscle_names, err))


def test_at_stale_tangent_points_the_speed_is_not_minus_qd_dot_r(thelen):
    """At STALE, -qd . r (OpenSim's own computeMomentArm) is not OpenSim's speed (module
    docstring, (a)): a v_MT = -qd . r would fail the comparison above."""
    q, qd = STALE
    _, speed, arms = thelen.theirs(q, qd)
    gap = np.abs(speed + np.asarray(qd) @ arms).max()
    print(f"at q = {q}, qd = {qd}: |getLengtheningSpeed + qd . computeMomentArm| = {gap:.2e}")
    assert gap > 1e-4


def test_opensims_lengthening_speed_is_not_dl_dt_where_it_wraps(thelen):
    """The speeds compared above are not dL/dt: a v_MT = dL/dt would fail there."""
    worst = (0.0, None)
    for q, qd in STATES:
        _, speed, _ = thelen.theirs(q, qd)
        ends = [thelen.theirs(np.add(q, sign * H_FD_S * np.asarray(qd)), qd)[0]
                for sign in (1, -1)]
        gap = np.abs(speed - (ends[0] - ends[1]) / (2 * H_FD_S))
        k = int(gap.argmax())
        if gap[k] > worst[0]:
            worst = (gap[k], (thelen.loaded.muscle_names[k], q, qd))
    print(f"getLengtheningSpeed - central dL/dt: {worst[0]:.2e} m/s at {worst[1]}")
    assert worst[0] > 1e-6


# --------------------------------------------------------------- (b) Thelen fiber length

def test_thelen_fiber_length_state_matches_opensims_thelen2003muscle(thelen):
    assert thelen.muscles.tendon.value == "fiber_length"
    s, mus = thelen.state, thelen.os_muscles
    shortest = np.array([m.getMinimumFiberLength() for m in mus])
    assert max(m.getMinimumActivation() for m in mus) < min(ACTIVATIONS)
    worst_v = worst_f = 0.0
    f_range = [np.inf, -np.inf]
    branches = {"F <= 0": 0, "0 < F < 1": 0, "1 < F < 0.95 Flen": 0, "F >= 0.95 Flen": 0}
    moving = {"concentric": 0, "eccentric": 0}
    for q, qd in [*STATES, STALE]:
        l_mt, v_mt, _ = thelen.ours(q, qd)
        for a in ACTIVATIONS:
            set_pose(thelen.model, s, q, qd)
            for m in mus:
                m.setActivation(s, a)
            thelen.model.equilibrateMuscles(s)
            base = np.array([m.getFiberLength(s) for m in mus])
            for factor in FIBER_FACTORS:
                fiber = base * factor
                for m, length in zip(mus, fiber):
                    m.setActivation(s, a)
                    m.setFiberLength(s, length)
                thelen.model.realizeDynamics(s)
                taken = np.array([m.getFiberLength(s) for m in mus])
                assert np.abs(taken - fiber).max() <= 1e-15, "OpenSim changed the fiber length"
                assert (taken > 2 * shortest).all(), "near OpenSim's fiber length clamp"
                speed = np.array([m.getFiberVelocity(s) for m in mus])
                force = np.array([m.getTendonForce(s) for m in mus])
                f_v = np.array([m.getForceVelocityMultiplier(s) for m in mus])
                out = thelen.outputs(a, l_mt, v_mt, jnp.asarray(fiber))
                v_norm = speed / thelen.v_unit
                err_v = (np.abs(np.asarray(out.fiber_velocity_m_per_s) - speed)
                         / (thelen.v_unit * np.maximum(1.0, np.abs(v_norm))))
                err_f = np.abs(np.asarray(out.tendon_force_N) - force) / thelen.f_iso
                where = f"q = {q}, a = {a}, fiber x {factor}"
                assert err_v.max() <= TOL_CURVE, f"fiber velocity at {where}: {err_v}"
                assert err_f.max() <= TOL_CURVE, f"tendon force at {where}: {err_f}"
                worst_v, worst_f = max(worst_v, err_v.max()), max(worst_f, err_f.max())
                f_range = [min(f_range[0], f_v.min()), max(f_range[1], f_v.max())]
                branches["F <= 0"] += int((f_v <= 0).sum())
                branches["0 < F < 1"] += int(((f_v > 0) & (f_v < 1)).sum())
                branches["1 < F < 0.95 Flen"] += int(((f_v > 1) & (f_v < 0.95 * 1.8)).sum())
                branches["F >= 0.95 Flen"] += int((f_v >= 0.95 * 1.8).sum())
                moving["concentric"] += int((v_norm < -0.05).sum())
                moving["eccentric"] += int((v_norm > 0.05).sum())
    assert min(branches.values()) >= 3 and min(moving.values()) >= 20, (branches, moving)
    print(f"Thelen fiber-length state: fiber velocity within {worst_v:.1e} v_max l_opt "
          f"max(1, |v~|), tendon force within {worst_f:.1e} F_iso of OpenSim's; f_V from "
          f"{f_range[0]:.2f} to {f_range[1]:.2f}, branches {branches}, |v~| > 0.05: {moving}")


# ------------------------------------------------------------------------ (c) rigid tendon

@pytest.mark.parametrize("q, qd", STATE_PARAMS)
def test_rigid_fiber_follows_opensims_lengthening_speed(rigid, q, qd):
    assert rigid.muscles.tendon.value == "rigid"
    s, mus = rigid.state, rigid.os_muscles
    tol_v = TOL_ARM_M * np.abs(qd).sum()
    tol_f = rigid.rigid_force_tolerance(qd)
    worst = np.zeros(3)
    for a in ACTIVATIONS:
        _, _, out = rigid.realized(q, qd, a)
        err = [np.abs(np.asarray(out.fiber_length_m) - [m.getFiberLength(s) for m in mus]),
               np.abs(np.asarray(out.fiber_velocity_m_per_s)
                      - [m.getFiberVelocity(s) for m in mus]),
               np.abs(np.asarray(out.tendon_force_N) - [m.getTendonForce(s) for m in mus])
               / rigid.f_iso]
        assert err[0].max() <= TOL_LENGTH_M, f"fiber length at a = {a}: {err[0]}"
        assert err[1].max() <= tol_v, f"fiber velocity at a = {a}: {err[1]}"
        assert (err[2] <= tol_f).all(), f"tendon force at a = {a}: {err[2]}"
        worst = np.maximum(worst, [e.max() for e in err])
    print(f"rigid Millard at q = {q}, qd = {qd}: fiber length {worst[0]:.1e} m, velocity "
          f"{worst[1]:.1e} m/s, tendon force {worst[2]:.1e} F_iso from OpenSim's")


#: Fast shortening at OpenSim's minimum activation: the rigid Millard fiber's damping would
#: make its force compressive (module docstring, (c)).
FAST = [((0.5, 1.0), (0.0, 8.0)), ((0.5, 1.0), (0.0, -8.0)), ((0.3, 1.5), (6.0, 6.0)),
        ((0.3, 1.5), (-6.0, -6.0))]


def test_a_rigid_tendon_does_not_push_as_in_opensim(rigid):
    """Where a + passive + damping < 0 OpenSim's rigid-tendon Millard2012EquilibriumMuscle
    sets the fiber force to 0 and reports the damping part as -(active + passive)
    (getPassiveFiberForce then -active): tendon, fiber and passive (+ damping) forces
    within the rigid comparison's tolerance, and OpenSim saturating at >= 8 muscle-states."""
    s, mus = rigid.state, rigid.os_muscles
    saturated = 0
    for q, qd in FAST:
        _, _, out = rigid.realized(q, qd, 0.01)
        tol = rigid.rigid_force_tolerance(qd) * rigid.f_iso
        pairs = {"tendon": (out.tendon_force_N, [m.getTendonForce(s) for m in mus]),
                 "fiber": (out.fiber_force_N, [m.getFiberForce(s) for m in mus]),
                 "passive": (out.passive_fiber_force_N + out.damping_fiber_force_N,
                             [m.getPassiveFiberForce(s) for m in mus])}
        for name, (ours, theirs) in pairs.items():
            err = np.abs(np.asarray(ours) - np.asarray(theirs))
            assert (err <= tol).all(), f"{name} force at q = {q}, qd = {qd}: {err} N"
        saturated += sum(m.getFiberForce(s) == 0.0 and m.getPassiveFiberForce(s) < 0.0
                         for m in mus)
    print(f"rigid Millard, fast shortening at a = 0.01: {saturated} saturated fibers")
    assert saturated >= 8


SLACK_FACTOR = 1.3          # the rigid copy's tendon slack lengths x this: slack poses
N_SLACK_STATES = 30
MIN_SLACK_CLAMPED = 20


def test_a_slack_rigid_musculotendon_is_clamped_as_in_opensim(tmp_path):
    """The rigid copy with every tendon slack length x SLACK_FACTOR at N_SLACK_STATES random
    (q, qd) (seed 0, q over arm26's ranges, qd in [-3, 3] rad/s, a = 0.3): where l_MT - l_ts
    is below the fiber's minimum length along the tendon OpenSim holds the fiber there,
    clamped (velocity 0, no force, tendon length l_MT - l_M cos(phi) < l_ts, tendon velocity
    v_MT). Fiber and tendon lengths and velocities and the tendon force compared with the
    rigid comparison's tolerances where l_MT >= l_ts, at least MIN_SLACK_CLAMPED clamped
    there. Below l_ts OpenSim takes the fiber as if stretched by l_ts - l_MT and lets it pull
    (docs/muscle.md); ours is slack: no force there."""
    def edit(root):
        _to_rigid_millard(True)(root)
        scale_tendon_slack_lengths(root, SLACK_FACTOR)

    path = write_osim(tmp_path, needs(ARM26).read_text(), edit, "arm26_rigid_slack.osim")
    arm = _Arm(path, "opensim", opensim.Millard2012EquilibriumMuscle)
    s, mus = arm.state, arm.os_muscles
    slack_length = np.array([m.getTendonSlackLength() for m in mus])
    rng = np.random.default_rng(0)
    getters = {"fiber_length_m": "getFiberLength", "tendon_length_m": "getTendonLength",
               "fiber_velocity_m_per_s": "getFiberVelocity",
               "tendon_velocity_m_per_s": "getTendonVelocity", "tendon_force_N": "getTendonForce"}
    clamped = below = 0
    for _ in range(N_SLACK_STATES):
        q, qd = rng.uniform((-1.5, 0.0), (3.0, 2.2)), rng.uniform(-3.0, 3.0, 2)
        l_mt, _, out = arm.realized(q, qd, 0.3)
        taut = l_mt >= slack_length
        tol_v = TOL_ARM_M * np.abs(qd).sum()
        tol = {"fiber_length_m": TOL_LENGTH_M, "tendon_length_m": TOL_LENGTH_M,
               "fiber_velocity_m_per_s": tol_v, "tendon_velocity_m_per_s": tol_v,
               "tendon_force_N": arm.rigid_force_tolerance(qd) * arm.f_iso}
        for name, getter in getters.items():
            err = np.abs(np.asarray(getattr(out, name)) - [getattr(m, getter)(s) for m in mus])
            assert (err <= tol[name])[taut].all(), f"{name} at q = {q}, qd = {qd}: {err}"
        held = np.array([m.getFiberVelocity(s) == 0.0 and m.getFiberForce(s) == 0.0
                         for m in mus])
        clamped += int((held & taut).sum())
        assert (np.asarray(out.tendon_force_N)[~taut] == 0.0).all()
        below += int((~taut).sum())
    print(f"rigid Millard, tendons x {SLACK_FACTOR}: {clamped} clamped muscle-states with "
          f"l_MT >= l_ts as OpenSim's; {below} below l_ts (ours without force)")
    assert clamped >= MIN_SLACK_CLAMPED


def test_millard_active_force_length_minimum_is_opensims(tmp_path):
    """The same copy without <minimum_value>0</minimum_value>; our muscles are evaluated at
    OpenSim's own l_MT and v_MT (the paths are compared above), so only the curve differs."""
    path = write_osim(tmp_path, needs(ARM26).read_text(), _to_rigid_millard(False),
                      "arm26_rigid_millard_defaults.osim")
    muscles = osim.build_muscles(osim.load(path), tendon="opensim")
    model = opensim.Model(str(path))
    state = model.initSystem()
    os_muscles = _muscles(model, opensim.Millard2012EquilibriumMuscle)
    set_pose(model, state, (-0.5, 2.4), (0.0, 0.0))     # BICshort at l~ = 0.53, BRA at 0.58
    for m in os_muscles:
        m.setActivation(state, 1.0)
    model.realizeDynamics(state)
    l_mt = jnp.asarray([m.getLength(state) for m in os_muscles])
    v_mt = jnp.asarray([m.getLengtheningSpeed(state) for m in os_muscles])
    ours = np.asarray(muscle_outputs(muscles, 1.0, l_mt, v_mt).active_force_length_multiplier)
    theirs = np.array([m.getActiveForceLengthMultiplier(state) for m in os_muscles])
    print(f"Millard default curves: f_L off by up to {np.abs(ours - theirs).max():.1e}")
    assert np.abs(ours - theirs).max() <= TOL_CURVE


# ---------------------------------------------------------------------- tendon="opensim"

def test_opensim_tendon_is_the_state_opensim_integrates(tmp_path):
    arm26 = needs(ARM26)
    assert osim.build_muscles(osim.load(arm26), tendon="opensim").tendon.value == "fiber_length"
    gait = osim.load(needs(GAIT))
    assert osim.build_muscles(gait, tendon="opensim").tendon.value == "damped_fiber_length"
    thelen_rigid = write_osim(tmp_path, arm26.read_text(), _flag_thelen_rigid,
                              "arm26_rigid_thelen.osim")
    assert (osim.build_muscles(osim.load(thelen_rigid), tendon="opensim").tendon.value
            == "rigid")
    millard_rigid = write_osim(tmp_path, arm26.read_text(), _to_rigid_millard(True),
                               "arm26_rigid_millard.osim")
    assert (osim.build_muscles(osim.load(millard_rigid), tendon="opensim").tendon.value
            == "rigid")
    # why (c) compares Millard muscles: OpenSim 4.6 cannot run a rigid Thelen2003Muscle
    with pytest.raises(RuntimeError, match="ignore_tendon_compliance flag is not currently"):
        opensim.Model(str(thelen_rigid)).initSystem()
