"""The muscles' equilibrium of `osim.muscle_equilibrium.equilibrium_states` (what
`myotwin osim muscle-analysis --muscle-states equilibrium` writes) vs OpenSim 4.6's
Model::equilibrateMuscles, live, muscle by muscle at random states.

Reference: the `opensim` 4.6 package in this process. For each model, 40 states drawn with a
fixed seed: every coordinate uniform in its range, every speed uniform in [-2, 2] (rad/s or
m/s), every activation uniform in [0.02, 1]. OpenSim sets the state, equilibrates its muscles
and reports each muscle's path length, lengthening speed, fiber length and tendon force; ours
are computed at OpenSim's own path length and lengthening speed (the paths are compared
elsewhere: test_osim_muscle_state_vs_opensim.py), so only the equilibrium is compared.

* arm26 (Thelen2003Muscle, initMuscleState's stiffness-shared velocity heuristic, emulated step
  for step): fiber length within 1e-10 m. The emulation repeats OpenSim's arithmetic except
  calcfvInv (a Newton solve OpenSim stops one step past its tolerance; ours the exact
  inverse), so the gap is roundoff carried through <= 20 damped Newton steps (observed when
  written: 5.7e-12 m). The heuristic's answer is not a static equilibrium: the test also
  checks that a static one (zero fiber velocity) would fail by > 1e-5 m somewhere.
* gait10dof18musc (Millard2012EquilibriumMuscle, damped: the static equilibrium, Newton to
  |F_M cos(phi) - F_T| < 1e-8 F_iso): tendon force within 2e-8 F_iso. At OpenSim's stop the
  residual e is below 1e-8 F_iso and ours is ~0; moving the fiber to cancel e changes the
  tendon force by e k_T / (k_T + k_M) (k_M the fiber's stiffness along the tendon), which is
  <= e unless k_M < 0 (the active curve's descending limb), where the factor 2 covers
  |k_M| <= k_T / 2 (observed: 9.2e-9 F_iso). The random poses make many musculotendons slack
  (no equilibrium): OpenSim then leaves the fiber at getMinimumFiberLength, so do we
  (`at_bound`); those fibers must agree to 1e-12 m and there must be at least 20 of them.
  There the outputs of AT_MINIMUM (fiber velocity, f_V, fiber, active and passive forces,
  tendon force and velocity) must be OpenSim's within 1e-12 (F_iso, v_max l_opt, m or 1):
  the state is the same on both sides. (These fibers sit at the active curve's start, where
  f_L = 0, so a slack tendon gives v = 0 even without OpenSim's clamp.)
* arm26 with every tendon slack length x 1.3 (Thelen): slack musculotendons whose fiber
  OpenSim holds at its minimum, 0 for the unpennated biceps and brachialis, and clamps
  (isFiberStateClamped: velocity 0, f_V = 1, no fiber force, the passive force still
  reported): the same AT_MINIMUM comparison (without the clamp our velocity there is NaN).
* arm26 made DeGrooteFregly2016Muscle (`osim_synthetic.to_degroote`; equilibrium with zero
  tendon-force derivative, OpenSim bisects the normalized tendon force to 1e-10): tendon force
  within 1e-10 F_iso + 1e-12 (roundoff) (observed 7.2e-11).
* arm26 made De Groote with 1.3 x longer tendons: at slack poses OpenSim's bisection finds no
  sign change, Model::equilibrateMuscles equilibrates the other muscles and throws, the muscle
  keeps its state (its default here); ours reports it `failed` and keeps it: tendon forces of
  every muscle within 1e-10 F_iso, at least 3 such muscle-states (7 when written).
Apart from that last model no state of these draws fails to equilibrate, in OpenSim (an
exception) or in ours (`failed`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import osim
from myotwin.muscle.musculotendon import equilibrium, muscle_outputs
from myotwin.osim.muscle_equilibrium import equilibrium_states
from myotwin.osim.muscle_states import default_state_rows, muscle_groups
from myotwin.osim.muscles import OPENSIM_STATE
from opensim_live import opensim_package, set_pose
from osim_synthetic import scale_tendon_slack_lengths, to_degroote, write_osim
from shared_reference import SHARED, needs

opensim = opensim_package()

MODELS = SHARED / "reference" / "opensim" / "models"
N_STATES = 40
SEED = 1
SPEED_RANGE = 2.0
ACTIVATION_RANGE = (0.02, 1.0)

TOL_THELEN_FIBER_M = 1e-10
STATIC_GAP_M = 1e-5
TOL_MILLARD_FORCE = 2e-8         # F_iso
TOL_AT_MINIMUM_M = 1e-12
MIN_AT_MINIMUM = 20
TOL_DEGROOTE_FORCE = 1e-10 + 1e-12   # F_iso
TOL_AT_MINIMUM = 1e-12          # F_iso, v_max l_opt, m or 1: the same state on both sides
MIN_CLAMPED = 3
SLACK_FACTOR = 1.3


#: Our MuscleOutputs field -> OpenSim's getter, compared where the fiber is at its minimum.
AT_MINIMUM = {"fiber_length_m": "getFiberLength", "tendon_force_N": "getTendonForce",
              "fiber_velocity_m_per_s": "getFiberVelocity",
              "force_velocity_multiplier": "getForceVelocityMultiplier",
              "fiber_force_N": "getFiberForce", "active_fiber_force_N": "getActiveFiberForce",
              "passive_fiber_force_N": "getPassiveFiberForce",
              "tendon_velocity_m_per_s": "getTendonVelocity"}


class Equilibria:
    """OpenSim's and our equilibrium at N_STATES random states of the model at `path`:
    `theirs[getter]` and `ours[field]` (n_rows, n_muscles) for the AT_MINIMUM pairs. Each
    muscle's tendon state is set to its default before OpenSim equilibrates (so that a muscle
    OpenSim cannot equilibrate keeps its default, as ours does); `refused`: how many states
    OpenSim's equilibrateMuscles raised for (after equilibrating the other muscles)."""

    def __init__(self, path):
        self.loaded = osim.load(path)
        self.groups = muscle_groups(self.loaded)
        _, defaults = default_state_rows(self.groups, (1, len(self.loaded.muscle_names)))
        model = opensim.Model(str(path))
        state = model.initSystem()
        listed = model.getMuscles()
        muscles = [_concrete(listed.get(k)) for k in range(listed.getSize())]
        assert self.loaded.muscle_names == tuple(m.getName() for m in muscles)
        coords = model.getCoordinateSet()
        lo, hi = (np.array([f(coords.get(j)) for j in range(coords.getSize())])
                  for f in (lambda c: c.getRangeMin(), lambda c: c.getRangeMax()))
        rng = np.random.default_rng(SEED)
        getters = ("getLength", "getLengtheningSpeed", *AT_MINIMUM.values())
        rows, activations, self.refused = [], [], 0
        for _ in range(N_STATES):
            q, qd = rng.uniform(lo, hi), rng.uniform(-SPEED_RANGE, SPEED_RANGE, lo.size)
            a = rng.uniform(*ACTIVATION_RANGE, len(muscles))
            set_pose(model, state, q, qd)
            for m, value, default in zip(muscles, a, defaults[0]):
                m.setActivation(state, float(value))
                m.setStateVariableValue(state, OPENSIM_STATE[m.getConcreteClassName()],
                                        float(default))
            try:
                model.equilibrateMuscles(state)
            except RuntimeError as err:        # thrown after every muscle was tried
                assert "equilibrateMuscles" in str(err), err
                self.refused += 1
            model.realizeDynamics(state)
            rows.append([[getattr(m, g)(state) for g in getters] for m in muscles])
            activations.append(a)
        self.theirs = dict(zip(getters, np.moveaxis(np.array(rows), -1, 0)))
        self.length, self.speed = self.theirs["getLength"], self.theirs["getLengtheningSpeed"]
        self.fiber, self.force = self.theirs["getFiberLength"], self.theirs["getTendonForce"]
        self.activation = np.array(activations)
        self.shortest = np.array([_shortest(m) for m in muscles])
        self.f_iso = np.array([m.getMaxIsometricForce() for m in muscles])
        self.v_unit = np.array([m.getMaxContractionVelocity() * m.getOptimalFiberLength()
                                for m in muscles])
        _, defaults = default_state_rows(self.groups, self.length.shape)
        self.states, self.failed, self.at_bound = equilibrium_states(
            self.groups, self.length, self.speed, self.activation, defaults)
        self.ours = self.outputs(self.states)
        self.ours_fiber, self.ours_force = self.ours["fiber_length_m"], self.ours["tendon_force_N"]

    def outputs(self, tendon_states):
        """Our AT_MINIMUM outputs (field -> (n_rows, n_muscles)) at the drawn rows and
        `tendon_states` (n_rows, n_muscles)."""
        result = {name: np.full(self.length.shape, np.nan) for name in AT_MINIMUM}
        for g in self.groups:
            cols = np.asarray(g.columns)
            rows = jax.jit(jax.vmap(functools.partial(muscle_outputs, g.muscles)))
            out = rows(*(jnp.asarray(x[:, cols]) for x in
                         (self.activation, self.length, self.speed, tendon_states)))
            for name in AT_MINIMUM:
                result[name][:, cols] = np.asarray(getattr(out, name))
        return result

    def force_error(self):
        """|our tendon force - OpenSim's| / F_iso, (n_rows, n_muscles)."""
        return np.abs(self.ours_force - self.force) / self.f_iso

    def at_minimum_errors(self):
        """Per AT_MINIMUM output, the largest |ours - OpenSim's| over the rows held at the
        minimum fiber length, scaled by F_iso (forces), v_max l_opt (speeds), 1 (lengths m,
        multipliers), and the number of those rows OpenSim clamped (fiber velocity 0)."""
        scale = {"m_per_s": self.v_unit, "_N": self.f_iso}
        errors = {}
        for name, getter in AT_MINIMUM.items():
            unit = next((v for k, v in scale.items() if name.endswith(k)), 1.0)
            gap = np.abs(self.ours[name] - self.theirs[getter]) / unit
            errors[name] = float(gap[self.at_bound].max())
        clamped = int((self.theirs["getFiberVelocity"][self.at_bound] == 0.0).sum())
        return errors, clamped


def _concrete(muscle):
    """`muscle` downcast to its OpenSim type (getMinimumFiberLength is not on Muscle)."""
    cast = getattr(opensim, muscle.getConcreteClassName()).safeDownCast(muscle)
    assert cast is not None, muscle.getConcreteClassName()
    return cast


def _shortest(muscle) -> float:
    """OpenSim's minimum fiber length of `muscle` (NaN for a type without one)."""
    get = getattr(muscle, "getMinimumFiberLength", None)
    return get() if get is not None else np.nan


def _summary(name, eq, errors, unit):
    k = np.unravel_index(np.nanargmax(errors), errors.shape)
    print(f"{name}: within {errors[k]:.1e} {unit} of equilibrateMuscles (worst "
          f"{eq.loaded.muscle_names[k[1]]}); held at the minimum fiber length: "
          f"{int(eq.at_bound.sum())} of {eq.at_bound.size}")


def test_thelen_equilibrium_is_opensims_initmusclestate():
    eq = Equilibria(needs(MODELS / "arm26.osim"))
    assert {g.opensim_type for g in eq.groups} == {"Thelen2003Muscle"}
    assert not eq.failed.any() and not eq.at_bound.any() and eq.refused == 0
    errors = np.abs(eq.ours_fiber - eq.fiber)
    _summary("arm26 Thelen, fiber length", eq, errors, "m")
    assert errors.max() <= TOL_THELEN_FIBER_M, errors.max()
    # the heuristic is not the static equilibrium, which would fail this comparison
    static = np.empty_like(eq.states)
    for g in eq.groups:
        cols = np.asarray(g.columns)
        solve = jax.vmap(lambda a, l: equilibrium(g.muscles, a, l, 0.0).tendon_state)
        static[:, cols] = np.asarray(solve(jnp.asarray(eq.activation[:, cols]),
                                           jnp.asarray(eq.length[:, cols])))
    gap = np.abs(eq.outputs(static)["fiber_length_m"] - eq.fiber).max()
    print(f"a static equilibrium would be off by {gap:.1e} m")
    assert gap > STATIC_GAP_M


def test_millard_equilibrium_is_opensims_static_one_or_its_minimum():
    eq = Equilibria(needs(MODELS / "gait10dof18musc.osim"))
    assert {g.opensim_type for g in eq.groups} == {"Millard2012EquilibriumMuscle"}
    assert not eq.failed.any() and eq.refused == 0
    errors = eq.force_error()
    _summary("gait10dof18musc Millard, tendon force", eq, errors, "F_iso")
    assert errors.max() <= TOL_MILLARD_FORCE, errors.max()
    assert eq.at_bound.sum() >= MIN_AT_MINIMUM
    at_minimum = np.abs(eq.ours_fiber - eq.shortest)[eq.at_bound]
    theirs = np.abs(eq.fiber - eq.shortest)[eq.at_bound]
    assert at_minimum.max() <= TOL_AT_MINIMUM_M and theirs.max() <= TOL_AT_MINIMUM_M, (
        at_minimum.max(), theirs.max())
    _check_at_minimum(eq)


def _check_at_minimum(eq):
    """Every AT_MINIMUM output where the fiber is held at its minimum within TOL_AT_MINIMUM
    (scaled as `at_minimum_errors`), and OpenSim's fiber clamp seen at least MIN_CLAMPED
    times there."""
    errors, clamped = eq.at_minimum_errors()
    print(f"at the minimum fiber length ({int(eq.at_bound.sum())} muscle-rows, {clamped} "
          f"clamped): {', '.join(f'{k} {v:.1e}' for k, v in errors.items())}")
    assert clamped >= MIN_CLAMPED
    assert all(e <= TOL_AT_MINIMUM for e in errors.values()), errors     # (NaN fails)


def test_a_slack_thelen_muscle_is_held_at_opensims_minimum(tmp_path):
    """arm26 with every tendon slack length x SLACK_FACTOR, so that the random poses make
    some musculotendons slack: OpenSim's initMuscleState then ends at getMinimumFiberLength
    (0 for the unpennated biceps and brachialis: Warning_FiberAtLowerBound) and clamps the
    fiber (velocity 0, f_V = 1, no fiber force, Thelen's passive force still reported)."""
    path = write_osim(tmp_path, needs(MODELS / "arm26.osim").read_text(),
                      lambda root: scale_tendon_slack_lengths(root, SLACK_FACTOR),
                      "arm26_slack_tendons.osim")
    eq = Equilibria(path)
    assert not eq.failed.any() and eq.refused == 0 and eq.at_bound.sum() >= MIN_CLAMPED
    errors = np.abs(eq.ours_fiber - eq.fiber)
    _summary("arm26 Thelen with long tendons, fiber length", eq, errors, "m")
    assert errors.max() <= TOL_THELEN_FIBER_M, errors.max()
    _check_at_minimum(eq)


def test_degroote_equilibrium_is_opensims(tmp_path):
    path = write_osim(tmp_path, needs(MODELS / "arm26.osim").read_text(), to_degroote,
                      "arm26_degroote.osim")
    eq = Equilibria(path)
    assert {g.opensim_type for g in eq.groups} == {"DeGrooteFregly2016Muscle"}
    assert not eq.failed.any() and eq.refused == 0
    errors = eq.force_error()
    _summary("arm26 De Groote, tendon force", eq, errors, "F_iso")
    assert errors.max() <= TOL_DEGROOTE_FORCE, errors.max()


def test_a_slack_degroote_muscle_keeps_its_state_as_in_opensim(tmp_path):
    """arm26 made De Groote with every tendon slack length x SLACK_FACTOR: at a slack pose
    the equilibrium residual has one sign over OpenSim's bracket [0, 5] of the normalized
    tendon force, OpenSim's solveBisection throws, Model::equilibrateMuscles equilibrates the
    other muscles and then throws (AnalyzeTool logs it and goes on), and the muscle keeps its
    state; ours reports it `failed` and keeps its state too. Tendon forces of every muscle
    within TOL_DEGROOTE_FORCE, at least MIN_CLAMPED failures, each a state OpenSim refused."""
    def edit(root):
        to_degroote(root)
        scale_tendon_slack_lengths(root, SLACK_FACTOR)

    path = write_osim(tmp_path, needs(MODELS / "arm26.osim").read_text(), edit,
                      "arm26_degroote_slack.osim")
    eq = Equilibria(path)
    failed_rows = int(eq.failed.any(axis=1).sum())
    assert eq.failed.sum() >= MIN_CLAMPED and eq.refused == failed_rows, (
        eq.failed.sum(), eq.refused, failed_rows)
    errors = eq.force_error()
    _summary("arm26 De Groote with long tendons, tendon force", eq, errors, "F_iso")
    print(f"{int(eq.failed.sum())} muscle-states without equilibrium, kept at their default")
    assert errors.max() <= TOL_DEGROOTE_FORCE, errors.max()
