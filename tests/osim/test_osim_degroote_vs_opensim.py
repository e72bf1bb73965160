"""De Groote muscles with the explicit tendon-force state vs OpenSim 4.6's
DeGrooteFregly2016Muscle, live.

Reference: the `opensim` 4.6 package in this process, on a copy of arm26.osim whose six
Thelen2003Muscles are DeGrooteFregly2016Muscle (same paths, F_iso, l_opt, l_ts, pennation,
v_max, time constants; Thelen's FmaxTendonStrain 0.033 and FmaxMuscleStrain 0.6 carried over
as tendon_strain_at_one_norm_force and passive_fiber_strain_at_one_norm_force; the other
Thelen-only properties dropped, and optimal_force too: OpenSim's DGF refuses any written
optimal_force, even the default 1; active_force_width_scale 1.5 on the three elbow flexors, so
a non-default width scale is compared too, and left out on the triceps, which then take
OpenSim's default 1 in both codes: `osim.force_reading.TYPE_DEFAULTS`). OpenSim's
defaults do the rest: fiber_damping 0 (our explicit tendon force refuses damping),
tendon_compliance_dynamics_mode "explicit", ignore_tendon_compliance false; checked below,
with `build_muscles(tendon="opensim")` giving "explicit_force".

Each comparison sets one OpenSim State (coordinate values and speeds, the DGF's own
"activation" and "normalized_tendon_force" states via setActivation and
setNormalizedTendonForce), realizes it to Acceleration and reads getTendonForce,
getFiberLength, getFiberVelocity and the state derivative getStateVariableDerivativeValue(
"normalized_tendon_force"). Ours: `muscle_outputs` and `tendon_state_derivative` at OUR
`path_state` l_MT, v_MT (coupling "opensim"). States: the six (q, qd) of
test_osim_muscle_state_vs_opensim.py, where every wrap object of arm26 is active somewhere
(among them TRIlong over three wraps with OpenSim's stale tangent points), activations 0.1,
0.5, 1, and normalized tendon forces 0.9, 1, 1.1 x OpenSim's equilibrium (equilibrateMuscles
at the state's speeds, zero tendon velocity); all in (0, 5], OpenSim's bounds of the state.

Why the tolerances. The De Groote curves are OpenSim's formulas to roundoff (docs/muscle.md)
and the paths agree to <= 1.4e-15 m, m/s here; asserted <= TOL_PATH = 1e-13 at every state, the
premise of what follows. Such a length error moves l~ by <= 1.2e-12 (l_opt >= 0.0858 m) and so
f_PE (slope <= 13 for l~ <= 1.7, asserted; 1.61 at most here) by <= 2e-11 and f_L (slope
<= 4.5) by <= 6e-12.
* Tendon force: F_iso f~_T of the same state on both sides: TOL_FORCE = 1e-10 F_iso.
* Fiber length: l_M = sqrt((l_MT - l_ts f_T^-1(f~_T))^2 + w^2) moves by <= the l_MT error:
  TOL_LENGTH_M = 1e-12 m.
* Fiber velocity: v~ = f_V^-1(F), F = (f~_T/cos phi - f_PE)/(a f_L). With the numerator and
  a f_L each within TOL_FORCE = 1e-10 (5x the path-induced bounds above, far above roundoff),
  F is within TOL_FORCE (1 + |F|)/(a f_L), and v~ within that times f_V^-1's slope
  dv~/dF = sqrt(1 + (d2 v~ + d3)^2)/|d1 d2| (OpenSim's d1, d2, d3), in v_max l_opt: 7e-11 to
  6e-9 where |v~| <= 1 (observed <= 2.4e-12, at the stale state). This bound, not a fixed
  one, because a 10% step of f~_T from equilibrium takes TRIlong far out on
  the asinh where a f_L is small (l~ ~ 1.6, a f_L ~ 0.012 at q = (1.5, 1.5), a = 0.1): F ~ -9,
  v~ ~ -1.4e12 (OpenSim logs "exceeding maximum contraction velocity"); there the bound is
  ~4e5 v_max l_opt and the observed error ~30 (2e-11 relative: F's cancellation over a f_L).
* d f~_T/dt = (f_T'(l~_T)/l_ts) (v_MT - v_M/cos phi), f_T'/l_ts = OpenSim's getTendonStiffness
  / F_iso: within that times (TOL_PATH + the fiber velocity's bound / cos phi), plus
  TOL_RATE_REL = 1e-12 of |d f~_T/dt| for the rounding of the product (up to 8e14 1/s at the
  far asinh state).
Where a wrap is active OpenSim's lengthening speed is not dL/dt (the tangent points are held
on their bodies; test_osim_muscle_state_vs_opensim.py). The last test shows the derivative
would fail: with v_MT replaced by the central difference of OpenSim's getLength along qd
(h = 1e-6 s, ~1e-10 m/s of rounding) it misses OpenSim's by > 1e3 x its tolerance.
OpenSim prints [info]/[warning] lines about missing .vtp meshes and fast fibers: harmless.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import musculoskeletal as ms
from myotwin import osim
from myotwin.muscle.musculotendon import muscle_outputs, tendon_state_derivative
from myotwin.musculoskeletal.paths import path_state
from opensim_live import opensim_package, set_pose
from osim_synthetic import DEGROOTE_WIDE, DEGROOTE_WIDTH_SCALE, to_degroote, write_osim
from shared_reference import SHARED, needs

opensim = opensim_package()

ARM26 = SHARED / "reference" / "opensim" / "models" / "arm26.osim"

#: (q, qd) of test_osim_muscle_state_vs_opensim.py: q = (r_shoulder_elev, r_elbow_flex) rad,
#: qd rad/s; the last is TRIlong over three wraps with OpenSim's stale tangent points.
STATES = [((0.0, 1.0), (0.3, -0.5)), ((0.5, 2.0), (-2.0, 1.5)), ((-0.3, 0.4), (0.8, 1.2)),
          ((1.2, 0.8), (2.0, -1.0)), ((-0.5, 2.4), (-1.5, -2.5)), ((1.5, 1.5), (-1.0, -2.0))]
ACTIVATIONS = (0.1, 0.5, 1.0)
FORCE_FACTORS = (0.9, 1.0, 1.1)
#: OpenSim's DGF normalized tendon force bounds (m_minNormTendonForce, m_maxNormTendonForce).
STATE_BOUNDS = (0.0, 5.0)
#: f_V(v~) = d1 asinh(d2 v~ + d3) + d4, DeGrooteFregly2016Muscle.h (for the slope of f_V^-1).
D1, D2, D3 = -0.3211346127989808, -8.149, -0.374

TOL_PATH = 1e-13         # m and m/s: l_MT, v_MT vs getLength, getLengtheningSpeed
TOL_FORCE = 1e-10        # normalized force (module docstring)
TOL_LENGTH_M = 1e-12
TOL_RATE_REL = 1e-12
H_FD_S = 1e-6            # central difference of OpenSim's length along qd
class _Arm:
    """The DGF copy of arm26 in OpenSim and ours (tendon="opensim")."""

    def __init__(self, path):
        self.loaded = osim.load(path)
        self.muscles = osim.build_muscles(self.loaded, tendon="opensim")
        msm = ms.musculoskeletal_model(self.loaded.model, self.muscles, coupling="opensim",
                                       coordinates=self.loaded.coupling)
        self.model = opensim.Model(str(path))
        self.state = self.model.initSystem()
        muscles = self.model.getMuscles()
        self.os_muscles = [opensim.DeGrooteFregly2016Muscle.safeDownCast(muscles.get(k))
                           for k in range(muscles.getSize())]
        assert self.loaded.muscle_names == tuple(m.getName() for m in self.os_muscles)
        self.paths = jax.jit(lambda q, qd: path_state(msm, q, qd)[:2])
        self.outputs = jax.jit(lambda *args: muscle_outputs(self.muscles, *args))
        self.rate = jax.jit(lambda *args: tendon_state_derivative(self.muscles, *args))
        self.f_iso = np.asarray(self.muscles.max_isometric_force_N)
        self.v_unit = np.asarray(self.muscles.max_contraction_velocity_Lopt_per_s
                                 * self.muscles.optimal_fiber_length_m)

    def ours(self, q, qd):
        """Our (l_MT, v_MT) at (q, qd)."""
        return [np.asarray(x) for x in self.paths(jnp.asarray(q, float),
                                                  jnp.asarray(qd, float))]

    def _pose(self, q, qd):
        set_pose(self.model, self.state, q, qd)

    def lengths(self, q, qd):
        """OpenSim's (getLength, getLengtheningSpeed) at (q, qd)."""
        self._pose(q, qd)
        self.model.realizeVelocity(self.state)
        return (np.array([m.getLength(self.state) for m in self.os_muscles]),
                np.array([m.getLengtheningSpeed(self.state) for m in self.os_muscles]))

    def equilibrium(self, q, qd, a):
        """OpenSim's equilibrium normalized tendon forces at (q, qd) and activation a."""
        self._pose(q, qd)
        for m in self.os_muscles:
            m.setActivation(self.state, a)
        self.model.equilibrateMuscles(self.state)
        return np.array([m.getNormalizedTendonForce(self.state) for m in self.os_muscles])

    def theirs(self, q, qd, a, force):
        """OpenSim's numbers at (q, qd), activation a, normalized tendon forces `force`."""
        s = self.state
        self._pose(q, qd)
        for m, f in zip(self.os_muscles, force):
            m.setActivation(s, a)
            m.setNormalizedTendonForce(s, f)
        self.model.realizeAcceleration(s)
        get = {name: np.array([getattr(m, name)(s) for m in self.os_muscles]) for name in (
            "getNormalizedTendonForce", "getTendonForce", "getFiberLength", "getFiberVelocity",
            "getNormalizedFiberVelocity", "getForceVelocityMultiplier",
            "getNormalizedFiberLength", "getActiveForceLengthMultiplier", "getCosPennationAngle",
            "getTendonStiffness")}
        get["rate"] = np.array([m.getStateVariableDerivativeValue(s, "normalized_tendon_force")
                                for m in self.os_muscles])
        assert np.array_equal(get["getNormalizedTendonForce"], force), "OpenSim changed f~_T"
        return get

    def tolerances(self, a, ref):
        """(fiber velocity m/s, d f~_T/dt 1/s) bounds of the module docstring, per muscle."""
        v_norm, f_v = ref["getNormalizedFiberVelocity"], ref["getForceVelocityMultiplier"]
        slope = np.sqrt(1.0 + (D2 * v_norm + D3) ** 2) / abs(D1 * D2)
        a_fl = a * ref["getActiveForceLengthMultiplier"]
        tol_v = self.v_unit * slope * TOL_FORCE * (1.0 + np.abs(f_v)) / a_fl
        stiffness = ref["getTendonStiffness"] / self.f_iso
        tol_rate = (stiffness * (TOL_PATH + tol_v / ref["getCosPennationAngle"])
                    + TOL_RATE_REL * np.abs(ref["rate"]))
        return tol_v, tol_rate


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    path = write_osim(tmp_path_factory.mktemp("degroote"), needs(ARM26).read_text(),
                      to_degroote, "arm26_degroote.osim")
    return _Arm(path)


def test_converted_arm26_is_opensims_explicit_degroote(arm):
    assert arm.muscles.tendon.value == "explicit_force"
    assert np.all(np.asarray(arm.muscles.fiber_damping) == 0.0)
    for m in arm.os_muscles:
        assert m.get_tendon_compliance_dynamics_mode() == "explicit"
        assert m.get_fiber_damping() == 0.0 and not m.get_ignore_tendon_compliance()
        assert m.get_tendon_strain_at_one_norm_force() == 0.033
        wide = DEGROOTE_WIDTH_SCALE if m.getName() in DEGROOTE_WIDE else 1.0
        assert m.get_active_force_width_scale() == wide
    names = arm.os_muscles[0].getStateVariableNames()
    assert {names.get(i).rsplit("/", 1)[-1] for i in range(names.getSize())} == {
        "activation", "normalized_tendon_force"}


@pytest.mark.parametrize("q, qd", STATES)
def test_explicit_tendon_force_state_matches_opensims_degroote(arm, q, qd):
    l_mt, v_mt = arm.ours(q, qd)
    length, speed = arm.lengths(q, qd)
    err_path = max(np.abs(l_mt - length).max(), np.abs(v_mt - speed).max())
    assert err_path <= TOL_PATH, f"paths at q = {q}: {err_path:.2e} (tolerances' premise)"
    worst = {"tendon force": 0.0, "fiber length": 0.0, "fiber velocity": 0.0, "rate": 0.0}
    ratio = {"fiber velocity": 0.0, "rate": 0.0}
    fast = 0
    for a in ACTIVATIONS:
        base = arm.equilibrium(q, qd, a)
        for factor in FORCE_FACTORS:
            force = base * factor
            assert (force > STATE_BOUNDS[0]).all() and (force <= STATE_BOUNDS[1]).all(), force
            ref = arm.theirs(q, qd, a, force)
            assert ref["getNormalizedFiberLength"].max() <= 1.7, "f_PE's slope bound (docstring)"
            tol_v, tol_rate = arm.tolerances(a, ref)
            out = arm.outputs(a, l_mt, v_mt, jnp.asarray(force))
            rate = np.asarray(arm.rate(a, l_mt, v_mt, jnp.asarray(force)))
            err = {"tendon force": np.abs(np.asarray(out.tendon_force_N)
                                          - ref["getTendonForce"]) / arm.f_iso,
                   "fiber length": np.abs(np.asarray(out.fiber_length_m)
                                          - ref["getFiberLength"]),
                   "fiber velocity": np.abs(np.asarray(out.fiber_velocity_m_per_s)
                                            - ref["getFiberVelocity"]),
                   "rate": np.abs(rate - ref["rate"])}
            where = f"q = {q}, qd = {qd}, a = {a}, f~_T x {factor}"
            assert err["tendon force"].max() <= TOL_FORCE, f"tendon force at {where}: {err}"
            assert err["fiber length"].max() <= TOL_LENGTH_M, f"fiber length at {where}: {err}"
            assert (err["fiber velocity"] <= tol_v).all(), (
                f"fiber velocity at {where}: {err['fiber velocity']} > {tol_v}")
            assert (err["rate"] <= tol_rate).all(), (
                f"d f~_T/dt at {where}: {err['rate']} > {tol_rate}")
            ordinary = np.abs(ref["getNormalizedFiberVelocity"]) <= 1.0
            fast += int((~ordinary).sum())
            for key in worst:
                worst[key] = max(worst[key], err[key][ordinary].max(initial=0.0))
            ratio["fiber velocity"] = max(ratio["fiber velocity"],
                                          (err["fiber velocity"] / tol_v).max())
            ratio["rate"] = max(ratio["rate"], (err["rate"] / tol_rate).max())
    print(f"DGF at q = {q}, qd = {qd}: paths within {err_path:.1e}; where |v~| <= 1: tendon "
          f"force {worst['tendon force']:.1e} F_iso, fiber length {worst['fiber length']:.1e} "
          f"m, fiber velocity {worst['fiber velocity']:.1e} m/s, d f~_T/dt {worst['rate']:.1e}"
          f" 1/s; worst error / bound over all (incl. {fast} with |v~| > 1): fiber velocity "
          f"{ratio['fiber velocity']:.1e}, d f~_T/dt {ratio['rate']:.1e}")


def test_rate_with_dl_dt_for_v_mt_would_fail(arm):
    """At OpenSim's equilibrium (zero tendon velocity by its lengthening speed) OpenSim's rate
    is ~0; with v_MT = dL/dt ours would miss it by f_T'/l_ts |dL/dt - v_MT| somewhere."""
    a = 0.5
    worst = (0.0, None)
    for q, qd in STATES:
        l_mt, v_mt = arm.ours(q, qd)
        ends = [arm.lengths(np.add(q, sign * H_FD_S * np.asarray(qd)), qd)[0]
                for sign in (1, -1)]
        dl_dt = (ends[0] - ends[1]) / (2 * H_FD_S)
        force = arm.equilibrium(q, qd, a)
        ref = arm.theirs(q, qd, a, force)
        _, tol_rate = arm.tolerances(a, ref)
        wrong = np.asarray(arm.rate(a, l_mt, jnp.asarray(dl_dt), jnp.asarray(force)))
        gap = np.abs(wrong - ref["rate"]) / tol_rate
        k = int(gap.argmax())
        if gap[k] > worst[0]:
            worst = (gap[k], (arm.loaded.muscle_names[k], q, qd, abs(wrong[k] - ref["rate"][k]),
                              abs(dl_dt[k] - v_mt[k])))
    name, q, qd, miss, speed_gap = worst[1]
    print(f"d f~_T/dt with v_MT = dL/dt misses OpenSim's by {miss:.2e} 1/s = {worst[0]:.1e} x "
          f"its tolerance ({name} at q = {q}, qd = {qd}; |dL/dt - v_MT| = {speed_gap:.2e} m/s)")
    assert worst[0] > 1e3
