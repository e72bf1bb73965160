"""The muscles' equilibrium at each time of an analysis, as OpenSim 4.6 computes it when its
AnalyzeTool has `solve_for_equilibrium_for_auxiliary_states` true (Model::equilibrateMuscles
after the states of the time are set): each compliant muscle's tendon state replaced by the
one its type's `computeInitialFiberEquilibrium` finds at the muscle's activation, path length
and lengthening speed. Each type defines the equilibrium differently:

* DeGrooteFregly2016Muscle: fiber and tendon forces balance with a zero tendon-force
  derivative, so the fiber takes the whole lengthening speed (its implicit residual, bisected
  on the normalized tendon force to 1e-10): `muscle.equilibrium(..., speed)`, solved to
  roundoff;
* Millard2012EquilibriumMuscle: the static equilibrium, zero fiber and tendon velocity
  whatever the lengthening speed (`computeFiberEquilibrium(s, false)`, Newton to
  1e-8 F_iso): `muscle.equilibrium(..., 0)`, the fiber no shorter than OpenSim's minimum
  (`Muscle.min_fiber_length_m`: its Newton clamps the fiber there, and a slack musculotendon,
  which has no equilibrium, ends there too, its `Warning_FiberAtLowerBound`);
* Thelen2003Muscle (`initMuscleState`): the lengthening speed shared between tendon and fiber
  in proportion to their stiffnesses, a heuristic defined by its iteration (the split is
  re-estimated after each damped Newton step on the fiber length, the loop stops when
  |F_M cos(phi) - F_T| < 1e-8 F_iso or after 20 steps): `thelen_equilibrium` emulates it
  step for step, so that its answer (not the heuristic's fixed point) is reproduced.

A muscle without an equilibrium at a time (De Groote's residual without a sign change,
Thelen's 20 steps used up) keeps its state there (its default, or the states file's), as
OpenSim's AnalyzeTool keeps it after logging a warning; `equilibrium_states` returns those
(time, muscle) pairs, and those held at the minimum fiber length. At that minimum a fiber the
velocity law would shorten is held with no fiber force (OpenSim's isFiberStateClamped, which
the muscle outputs follow: `muscle.tendon`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.muscle import Muscle
from myotwin.muscle.activation import force_activation
from myotwin.muscle.model import MAX_PENNATION_RAD, SIGNIFICANT_REAL, TendonModel
from myotwin.muscle.musculotendon import equilibrium

#: SimTK's SqrtEps = eps^(1/2) (double precision).
SQRT_EPS = math.sqrt(np.finfo(float).eps)
#: Thelen2003Muscle::computeInitialFiberEquilibrium: tolerance 1e-8 F_iso (N), 20 steps.
THELEN_TOL_PER_F_ISO = 1e-8
THELEN_MAX_STEPS = 20

THELEN, MILLARD, DEGROOTE = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle",
                             "DeGrooteFregly2016Muscle")


def thelen_equilibrium(m: Muscle, a, ml, dml):
    """Thelen2003Muscle::initMuscleState for one muscle (scalar leaves) at activation `a`
    (clamped to [a_min, 1]; OpenSim reads the state unclamped, the same within that range),
    path length `ml` (m) and lengthening speed `dml` (m/s): (fiber length (m), status: 0
    converged, 1 at the fiber's lower bound (OpenSim's warning; the fiber there), 2 failed).
    OpenSim's calcfvInv (a Newton solve of Thelen's force-velocity relation, stopped one step
    past its tolerance) is taken as its exact inverse, clamped at 0."""
    c = m.curves
    tsl, ofl, fiso = m.tendon_slack_length_m, m.optimal_fiber_length_m, m.max_isometric_force_N
    vmax = m.max_contraction_velocity_Lopt_per_s
    h = ofl * jnp.sin(m.pennation_at_optimal_rad)          # the parallelogram's height
    min_length = m.min_fiber_length_m                      # h / sin(acos 0.1)
    tol = jnp.maximum(THELEN_TOL_PER_F_ISO * fiso, 10.0 * SIGNIFICANT_REAL)
    d_fal, d_fpe = jax.grad(c.active_force_length), jax.grad(c.passive_force_length)
    d_fse = jax.grad(c.tendon_force_length)

    def position(lce):
        sin_phi = jnp.minimum(h / lce, math.sin(MAX_PENNATION_RAD))
        cos_phi = jnp.sqrt(1.0 - sin_phi ** 2)
        return sin_phi, cos_phi, ml - lce * cos_phi

    def error(lce, fv):
        """(F_M, F_M cos(phi) - F_T) at fiber length lce and force-velocity multiplier fv."""
        _, cos_phi, tl = position(lce)
        fm = (a * c.active_force_length(lce / ofl) * fv
              + c.passive_force_length(lce / ofl)) * fiso
        return fm, fm * cos_phi - c.tendon_force_length(tl / tsl) * fiso

    def partials(lce, fv, fm):
        """(dF_M cos(phi)/dlce, dF_T/dlce, dF_M cos(phi)/dlce along the tendon, dF_T/dl_T):
        calcDFmDlce, calcDFmATDlce, calcDFseDlce and calcDFseDtl."""
        sin_phi, cos_phi, tl = position(lce)
        dfm = (a * fv * d_fal(lce / ofl) + d_fpe(lce / ofl)) * fiso / ofl
        root = jnp.sqrt(1.0 - (h / lce) ** 2)
        dfm_at = dfm * cos_phi + fm * h ** 2 / (lce ** 3 * root)
        dphi = -h / (lce ** 2 * root)
        dft_dtl = d_fse(tl / tsl) * fiso / tsl
        dft = dft_dtl * (-cos_phi + lce * sin_phi * dphi)
        return dfm_at, dft, dfm_at * cos_phi, dft_dtl

    def velocity(lce, dfm_at_along, dft_dtl):
        """The force-velocity multiplier of the stiffness-shared fiber velocity (calcfvInv's
        Newton converges to the exact inverse, clamped at 0)."""
        _, cos_phi, tl = position(lce)
        split = (jnp.abs(dfm_at_along + dft_dtl) > SIGNIFICANT_REAL) & (tl > tsl)
        dtl = jnp.where(split, dfm_at_along / jnp.where(split, dfm_at_along + dft_dtl, 1.0)
                        * dml, dml)
        v_norm = (dml - dtl) * cos_phi / (vmax * ofl)
        return jnp.maximum(0.0, c.force_velocity(v_norm, a))

    # The start: a tendon 1 % longer than its slack length, the static multiplier.
    lce = jnp.sqrt((ml - 1.01 * tsl) ** 2 + h ** 2)
    fm0 = jnp.zeros_like(lce)           # (OpenSim's F_M before its first force evaluation)
    _, _, along, dft_dtl = partials(lce, 1.0, fm0)
    fv = velocity(lce, along, dft_dtl)
    fm, ferr = error(lce, fv)
    dfm_at, dft, along, dft_dtl = partials(lce, fv, fm)

    def outer_cond(s):
        it, _, ferr, *_ = s
        return (jnp.abs(ferr) > tol) & (it < THELEN_MAX_STEPS)

    def outer_body(s):
        it, lce_prev, ferr_prev, fv, dfm_at, dft, _ = s
        slope = dfm_at - dft

        def inner_cond(t):
            _, ferr, _, _, done = t
            return (jnp.abs(ferr) >= jnp.abs(ferr_prev)) & ~done

        def inner_body(t):
            step, _, _, _, _ = t
            delta = -step * ferr_prev / slope
            tiny = jnp.abs(delta) <= SIGNIFICANT_REAL
            lce = jnp.where(tiny, lce_prev - jnp.sign(delta) * SQRT_EPS, lce_prev + delta)
            step = jnp.where(tiny, 0.0, step)
            lce = jnp.maximum(lce, min_length)
            fm, ferr = error(lce, fv)
            return 0.5 * step, ferr, lce, fm, step <= SQRT_EPS

        _, ferr, lce, fm, _ = jax.lax.while_loop(
            inner_cond, inner_body, (jnp.ones_like(lce_prev), ferr_prev, lce_prev,
                                     jnp.zeros_like(lce_prev), False))
        # (the next step's slope is taken before the velocity is re-estimated, as OpenSim's)
        dfm_at, dft, along, dft_dtl = partials(lce, fv, fm)
        return it + 1, lce, ferr, velocity(lce, along, dft_dtl), dfm_at, dft, fm

    _, lce, ferr, *_ = jax.lax.while_loop(outer_cond, outer_body,
                                         (0, lce, ferr, fv, dfm_at, dft, fm))
    converged = jnp.abs(ferr) < tol
    at_bound = ~converged & (lce <= min_length)
    return jnp.where(at_bound, min_length, lce), jnp.where(converged, 0,
                                                           jnp.where(at_bound, 1, 2))


@jax.jit
def _thelen_rows(muscles: Muscle, activation, lengths, speeds):
    """(fiber lengths, statuses), each (n_rows, n), of `thelen_equilibrium` at rows of activation,
    path length and lengthening speed (n_rows, n)."""
    def row(a, l, v):
        return jax.vmap(thelen_equilibrium)(muscles, force_activation(muscles.activation, a), l, v)
    return jax.vmap(row)(activation, lengths, speeds)


@jax.jit
def _solved_rows(muscles: Muscle, activation, lengths, speeds):
    """(tendon states, converged), each (n_rows, n), of `muscle.equilibrium`."""
    def row(a, l, v):
        eq = equilibrium(muscles, a, l, v)
        return eq.tendon_state, eq.converged
    return jax.vmap(row)(activation, lengths, speeds)


def equilibrium_states(groups, lengths, speeds, activation, tendon_state):
    """OpenSim's equilibrium tendon states (module docstring) at rows of path lengths,
    lengthening speeds and activations (n_rows, n_muscles, columns in `loaded.muscle_names`
    order): returns (tendon states (n_rows, n_muscles): `tendon_state` where a muscle has no
    equilibrium or a rigid tendon, failed: boolean (n_rows, n_muscles), at the fiber's lower
    bound (Thelen's; boolean (n_rows, n_muscles)))."""
    lengths, speeds = np.asarray(lengths, float), np.asarray(speeds, float)
    states = np.array(tendon_state, dtype=float)
    failed = np.zeros(lengths.shape, dtype=bool)
    at_bound = np.zeros(lengths.shape, dtype=bool)
    for g in groups:
        if g.muscles.tendon is TendonModel.RIGID:
            continue
        cols = np.asarray(g.columns)
        a, l, v = (jnp.asarray(np.asarray(x, float)[:, cols])
                   for x in (activation, lengths, speeds))
        if g.opensim_type == THELEN:
            solved, status = (np.asarray(x) for x in _thelen_rows(g.muscles, a, l, v))
            ok, bound = status < 2, status == 1
        elif g.opensim_type == MILLARD:       # static; the fiber no shorter than its minimum
            solved, ok = (np.asarray(x) for x in _solved_rows(g.muscles, a, l,
                                                              jnp.zeros_like(v)))
            shortest = np.asarray(g.muscles.min_fiber_length_m)
            bound = ~ok | (solved <= shortest)
            solved, ok = np.where(bound, shortest, solved), np.ones_like(ok)
        else:
            solved, ok = (np.asarray(x) for x in _solved_rows(g.muscles, a, l, v))
            bound = np.zeros_like(ok)
        block = states[:, cols]
        block[ok] = solved[ok]
        states[:, cols] = block
        failed[:, cols] = ~ok
        at_bound[:, cols] = bound
    return states, failed, at_bound
