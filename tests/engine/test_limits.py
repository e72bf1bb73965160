"""Joint limits (limits.py) vs MuJoCo 4.0: constraint rows (efc_*), forward dynamics (qacc,
qfrc_constraint, efc_force), inverse dynamics (qfrc_inverse), option flags, a pendulum falling
onto its limit (RK4 vs MuJoCo RK4), gradients of a rollout through a limit vs central
differences, and the QP solver vs brute-force KKT enumeration. Float64 (conftest).

MuJoCo runs with solver="Newton", tolerance=1e-12, iterations=200 and contact disabled, so its
solver stops at the optimum of the same convex problem we solve exactly."""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine import cholesky, limits

from random_trees import random_tree_mjcf

#: Rows (dist, J, vel, aref, R) use the same closed-form expressions as MuJoCo: roundoff only
#: (observed worst 6e-15, the ball angle from atan2 of a differently arranged quaternion).
ROW_TOL = 1e-12
#: qacc / forces come out of a linear solve with A + R, whose condition number grows as R -> 0
#: (stiff limits, impedance near 1): roundoff ~1e-16 x cond (observed worst 4e-15).
SOLVE_TOL = 1e-10

_HINGE, _SLIDE, _BALL = 3, 2, 1


def _close(name, ours, ref, tol, scale=0.0):
    """Max error relative to the largest MuJoCo entry (or `scale`, when the reference is a
    difference of larger terms that cancel)."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} vs MuJoCo {ref.shape}"
    err = np.abs(ours - ref).max(initial=0.0) / max(np.abs(ref).max(initial=0.0), scale, 1e-300)
    assert err <= tol, f"{name}: relative error {err:.3e} > {tol:g} vs MuJoCo"
    return err


def _solver_options(m, timestep=0.002):
    m.opt.timestep = timestep
    m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    m.opt.tolerance, m.opt.iterations = 1e-12, 200
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT


def _random_limited_model(seed: int, n_bodies: int = 14,
                          limit_balls: bool = True) -> mujoco.MjModel:
    """Random tree (every joint type) with most hinges/slides/balls (balls only if
    `limit_balls`) limited: random ranges,
    margins (half of them zero), solreflimit standard (some below the refsafe floor
    2 timestep = 4 ms) or direct (negative), solimplimit with random width/midpoint/power
    (some linear, some flat), plus joint damping so that aref and qacc_smooth see velocity."""
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(seed, n_bodies=n_bodies))
    _solver_options(m)
    rng = np.random.default_rng(1000 + seed)
    limitable = (_HINGE, _SLIDE, _BALL) if limit_balls else (_HINGE, _SLIDE)
    for j in range(m.njnt):
        jtype = m.jnt_type[j]
        if jtype not in limitable or rng.random() < 0.15:
            continue
        m.jnt_limited[j] = 1
        if jtype == _BALL:
            m.jnt_range[j] = [0.0, rng.uniform(0.3, 1.2)]
        else:
            ref = m.qpos0[m.jnt_qposadr[j]]
            m.jnt_range[j] = [ref - rng.uniform(0.2, 1.0), ref + rng.uniform(0.2, 1.0)]
        m.jnt_margin[j] = 0.0 if rng.random() < 0.5 else rng.uniform(0.01, 0.1)
        if rng.random() < 0.3:  # direct: -stiffness, -damping
            m.jnt_solref[j] = [-rng.uniform(100, 3000), -rng.uniform(1, 40)]
        else:
            m.jnt_solref[j] = [rng.uniform(0.001, 0.05), rng.uniform(0.3, 2.0)]
        d0 = rng.uniform(0.5, 0.95)
        kind = rng.integers(3)
        power = 1.0 if kind == 0 else rng.uniform(1.5, 4.0)
        dwidth = d0 if kind == 2 else rng.uniform(d0, 0.99)
        m.jnt_solimp[j] = [d0, dwidth, rng.uniform(0.01, 0.2), rng.uniform(0.2, 0.8), power]
    m.dof_damping[:] = rng.uniform(0, 0.3, size=m.nv)
    return m


def _unit(rng, n):
    v = rng.normal(size=n)
    return v / np.linalg.norm(v)


def _near(rng, margin):
    """Distance to a limit inside the margin band (instantiated row, no force yet unless
    moving in), or just inside the range for a zero margin; never exactly on a switch."""
    return rng.uniform(0.1, 0.9) * margin if margin > 0 else rng.uniform(1e-3, 1e-2)


def _limit_state(m, rng):
    """(qpos, qvel) with each limited joint inside, near (within its margin) or beyond its
    lower or upper limit; unlimited joints and free joints at random values."""
    q = np.array(m.qpos0)
    for j in range(m.njnt):
        a, jtype, lim = m.jnt_qposadr[j], m.jnt_type[j], m.jnt_limited[j]
        lo, hi = m.jnt_range[j]
        margin = m.jnt_margin[j]
        where = rng.choice(["inside", "near", "beyond"], p=[0.3, 0.3, 0.4]) if lim else "free"
        if jtype == 0:
            q[a:a + 3], q[a + 3:a + 7] = rng.normal(size=3) * 0.5, _unit(rng, 4)
        elif jtype == _BALL:
            angle = {"free": rng.uniform(0, 3), "inside": rng.uniform(0, 0.5) * hi,
                     "near": hi - _near(rng, margin),
                     "beyond": hi + rng.uniform(0, 0.1)}[where]
            q[a:a + 4] = [np.cos(angle / 2), *(np.sin(angle / 2) * _unit(rng, 3))]
            if rng.random() < 0.3:
                q[a:a + 4] *= -1  # same rotation, w < 0 (angle wrap in mju_quat2Vel)
        elif where == "free":
            q[a] += rng.uniform(-1.5, 1.5)
        else:
            side = rng.choice([-1, 1])
            bound = lo if side < 0 else hi
            q[a] = {"inside": lo + (hi - lo) * rng.uniform(0.3, 0.7),
                    "near": bound - side * _near(rng, margin),
                    "beyond": bound + side * rng.uniform(0, 0.05)}[where]
    return q, rng.normal(size=m.nv) * 1.5


def _mujoco_forward(m, q, qd):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    return d


def _smooth(model, q, qd):
    """(qacc_smooth, Cholesky factor of M) from the engine's smooth dynamics."""
    mass = engine.mass_matrix(model, q)
    force = engine.passive_forces(model, q, qd) - engine.bias_forces(model, q, qd)
    factor = cholesky.factor(mass)
    return cholesky.solve(factor, force), factor


@pytest.mark.parametrize("seed, n_bodies, limit_balls", [(3, 14, True), (8, 6, False)])
def test_rows_forward_and_inverse_match_mujoco(seed, n_bodies, limit_balls):
    """Ten states of a random forest, evaluated in one jitted, vmapped call: constraint rows
    vs MuJoCo's efc_* (instantiated rows, MuJoCo's order), qacc_smooth, efc_force,
    qfrc_constraint, qacc (solve_limits and forward_dynamics), qfrc_inverse at a random qacc
    and at MuJoCo's own qacc, and dof_invweight0 recomputed from the model (`invweight0`,
    as mj_setConst) vs the compiler's. Seed 3 (14 bodies: 5 trees, 25 joints of every type,
    multi-joint bodies, n_v > 16) limits balls too: the general Delassus matrix Y^T Y. Seed 8
    (6 bodies, unlimited balls, n_v 12) limits hinges and slides only: the static-row form
    (limits._hinge_rows_delassus)."""
    m = _random_limited_model(seed, n_bodies, limit_balls)
    model = engine.compile_model(m)
    assert not model.dynamics_unsupported
    kinds = {_BALL, _HINGE, _SLIDE} if limit_balls else {_HINGE, _SLIDE}
    assert kinds == set(m.jnt_type[m.jnt_limited.astype(bool)])
    assert limits._hinge_rows_only(model) == (not limit_balls)

    def evaluate(q, qd, qdd_random):
        rows = limits.limit_rows(model, q, qd)
        a0, factor = _smooth(model, q, qd)
        sol = engine.solve_limits(model, q, qd, a0, factor)
        qacc = engine.forward_dynamics(model, q, qd, jnp.zeros(0))
        inv = jax.vmap(lambda a: engine.inverse_dynamics(model, q, qd, a))(
            jnp.stack([qdd_random, qacc]))
        return rows, a0, sol, qacc, inv

    rng = np.random.default_rng(seed)
    states = [_limit_state(m, rng) for _ in range(10)]
    q, qd = (jnp.array(np.stack(x)) for x in zip(*states))
    qdd_random = jnp.array(rng.normal(size=(len(states), m.nv)) * 5.0)
    (rows, a0, sol, qacc, inv), invweight = jax.jit(
        lambda *x: (jax.vmap(evaluate)(*x), limits.invweight0(model)))(q, qd, qdd_random)
    _close(f"seed {seed} dof_invweight0", invweight, m.dof_invweight0, ROW_TOL)
    assert bool(jnp.all(sol.converged))
    most_active = 0
    for s in range(len(states)):
        d = _mujoco_forward(m, q[s], qd[s])
        on = np.asarray(rows.instantiated[s])
        tag = f"seed {seed} state {s}"
        assert on.sum() == d.nefc == d.nl, f"{tag}: {on.sum()} rows vs MuJoCo nefc {d.nefc}"
        _close(f"{tag} efc_pos", rows.dist[s][on], d.efc_pos, ROW_TOL)
        _close(f"{tag} efc_margin", rows.margin[s][on], d.efc_margin, ROW_TOL)
        _close(f"{tag} efc_J", rows.jac[s][on], d.efc_J.reshape(d.nefc, m.nv), ROW_TOL)
        _close(f"{tag} efc_vel", rows.vel[s][on], d.efc_vel, ROW_TOL)
        _close(f"{tag} efc_aref", rows.aref[s][on], d.efc_aref, ROW_TOL)
        _close(f"{tag} efc_R", rows.regularizer[s][on], d.efc_R, ROW_TOL)
        _close(f"{tag} qacc_smooth", a0[s], d.qacc_smooth, ROW_TOL)
        _close(f"{tag} efc_force", sol.efc_force[s][on], d.efc_force, SOLVE_TOL)
        _close(f"{tag} qfrc_constraint", sol.qfrc_constraint[s], d.qfrc_constraint, SOLVE_TOL)
        _close(f"{tag} qacc (solve_limits)", sol.qacc[s], d.qacc, SOLVE_TOL)
        _close(f"{tag} qacc (forward_dynamics)", qacc[s], d.qacc, SOLVE_TOL)
        most_active = max(most_active, int(np.sum(np.asarray(d.efc_force) > 0)))
        # at MuJoCo's own qacc, qfrc_inverse is the applied force (zero: no actuators), a
        # cancellation of M qacc, qfrc_bias, qfrc_passive and qfrc_constraint: scale by them
        scale = max(np.abs(d.qfrc_bias).max(), np.abs(d.qfrc_constraint).max())
        for k, qdd in enumerate((np.asarray(qdd_random[s]), d.qacc.copy())):
            d.qacc[:] = qdd
            mujoco.mj_inverse(m, d)
            _close(f"{tag} qfrc_inverse ({('random qacc', 'forward qacc')[k]})", inv[s, k],
                   d.qfrc_inverse, SOLVE_TOL, scale)
    assert most_active >= 3, f"seed {seed}: at most {most_active} limits pushing at once"


_PENDULUM = """<mujoco><option timestep="0.002" integrator="RK4" gravity="0 0 -9.81"
  tolerance="1e-12" iterations="200" solver="Newton"><flag contact="disable" {flags}/></option>
  <compiler angle="radian"/><worldbody>
  <body pos="0 0 1"><joint name="h0" type="hinge" axis="0 1 0" range="-0.4 0.3" {attrs}/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
    <body pos="0 0 -0.5"><joint name="s1" type="slide" axis="0 0 1" range="-0.1 0.05" {attrs1}/>
      <geom type="sphere" size="0.08"/></body></body>
  </worldbody></mujoco>"""


def _pendulum(flags="", attrs="", attrs1=None):
    """Hinge pendulum with a slider (range -0.4..0.3 rad and -0.1..0.05 m); `attrs` go on
    both joints unless `attrs1` is given for the slide."""
    return _PENDULUM.format(flags=flags, attrs=attrs, attrs1=attrs if attrs1 is None else attrs1)


#: One compiled forward dynamics for every pendulum variant: models whose static metadata
#: agree (all but the limit/constraint-disabled ones) share the compilation.
_FORWARD = jax.jit(lambda model, q, qd: engine.forward_dynamics(model, q, qd, jnp.zeros(0)))


def test_option_variants_match_mujoco():
    """MJCF default limit parameters; custom margin/solreflimit/solimplimit whose 1 ms time
    constant is raised to the refsafe floor 2 timestep = 4 ms; the override flag with
    o_solref/o_solimp/o_margin (MuJoCo 4.0 applies them to contacts only, not to limits);
    refsafe disabled (1 ms used as is); direct (negative) solref; limit and constraint flags
    disabled (no rows, no limit force). qacc vs MuJoCo with both joints beyond a limit."""
    custom = 'margin="0.02" solreflimit="0.001 0.7" solimplimit="0.6 0.97 0.05 0.4 2.5"'
    override = 'override="enable"'
    cases = {"defaults": ("", ""), "custom": ("", custom), "override": (override, custom),
             "norefsafe": ('refsafe="disable"', custom),
             "direct": ("", 'solreflimit="-2000 -30" solimplimit="0.95 0.99 0.01 0.5 1"'),
             "nolimit": ('limit="disable"', custom),
             "noconstraint": ('constraint="disable"', custom)}
    for case, (flags, attrs) in cases.items():
        xml = _pendulum(flags, attrs)
        if case == "override":
            xml = xml.replace('solver="Newton"', 'solver="Newton" o_margin="0.05" '
                              'o_solref="-500 -8" o_solimp="0.7 0.8 0.02 0.5 1"')
        m = mujoco.MjModel.from_xml_string(xml)
        model = engine.compile_model(m)
        for q, qd in (([0.45, 0.07], [0.8, -0.3]), ([-0.42, -0.11], [-0.5, 0.2])):
            d = _mujoco_forward(m, q, qd)
            assert (d.nefc == 2) == (case not in ("nolimit", "noconstraint")), case
            _close(f"{case} qacc at q={q}", _FORWARD(model, jnp.array(q), jnp.array(qd)),
                   d.qacc, SOLVE_TOL)


def test_mixed_solref_is_rejected_naming_the_joint():
    xml = _pendulum(attrs='solreflimit="0.02 -1"')
    with pytest.raises(ValueError, match=r"joint #0 'h0': solreflimit \(0.02, -1\) mixes"):
        engine.compile_model(mujoco.MjModel.from_xml_string(xml))


def _mujoco_rollout(m, q0, qd0, n):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    qs, forces = [d.qpos.copy()], []
    for _ in range(n):
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        forces.append(d.nefc)
    return np.array(qs), d.qvel.copy(), np.array(forces)


def test_pendulum_falling_onto_limits_matches_mujoco_rk4():
    """The hinge + slide pendulum thrown against its hinge limit: over 1 s at 2 ms (RK4 on
    both sides) it strikes both hinge limits, rests on the slide's lower limit and bounces
    into the upper margin band, so limit rows switch on and off between steps and RK4
    stages. The same states give the same rows on both sides; the trajectories agree to
    roundoff (observed 2e-16 in q, 4e-16 in qd); tolerance 1e-8 as the limit-free rollouts of
    test_dynamics.py."""
    m = mujoco.MjModel.from_xml_string(_pendulum(attrs='solreflimit="0.01 0.5" margin="0.01"'))
    q0, qd0 = np.array([-0.1, 0.0]), np.array([-4.0, 1.5])
    ref_q, ref_qd, nefc = _mujoco_rollout(m, q0, qd0, 500)
    assert nefc.max() >= 1 and (nefc == 0).any(), "the rollout must hit and leave the limits"
    assert ref_q[:, 0].min() < -0.4 and ref_q[:, 0].max() > 0.29, "both hinge limit rows"
    assert ref_q[:, 1].min() < -0.09 and ref_q[:, 1].max() > 0.04, "both slide limit rows"
    q, qd, _ = engine.simulate(engine.compile_model(m), q0, qd0, jnp.zeros(0), 1.0, 0.002, "rk4")
    _close("q over 1 s", q, ref_q, 1e-8)
    _close("final qd", qd[-1], ref_qd, 1e-8)


def _mujoco_switch_distance(m, q0, qd0, n_steps):
    """MuJoCo Euler rollout (= our semi-implicit Euler: no damping, so eulerdamp is moot) and,
    over its steps, the distance of the limit problem to a switch of the piecewise-smooth
    dynamics: min |r - margin| over every limit side (a row turns on or off) and, over
    instantiated rows, min of f + mu with mu = J qacc - aref + R f the QP multiplier (a force
    starts or stops pushing where both vanish). Also the number of steps each joint pushes."""
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q0, qd0
    dist_gap, force_gap, pushing = np.inf, np.inf, np.zeros(m.njnt, dtype=int)
    for _ in range(n_steps):
        mujoco.mj_forward(m, d)
        lo, hi = m.jnt_range[:, 0], m.jnt_range[:, 1]
        dist = np.concatenate([d.qpos - lo, hi - d.qpos]) - np.tile(m.jnt_margin, 2)
        dist_gap = min(dist_gap, np.abs(dist).min())
        if d.nefc:
            jac = d.efc_J.reshape(d.nefc, m.nv)
            mu = jac @ d.qacc - d.efc_aref + d.efc_R * d.efc_force
            force_gap = min(force_gap, (d.efc_force + mu).min())
            pushing[d.efc_id[d.efc_force > 0]] += 1
        mujoco.mj_step(m, d)
    return dist_gap, force_gap, pushing


def test_rollout_gradient_through_limit_matches_central_differences():
    """d loss / d (q0, qd0, hinge solreflimit time constant, body mass) through 60
    semi-implicit Euler steps (2 ms) in which the hinge strikes its lower limit while the
    slider rests on its own (margin 0, softer slide limit: resting penetration ~0.6 mm), vs
    central differences. The dynamics are piecewise smooth; the comparison is valid because
    every step stays clear of a switch (asserted). Residual: FD truncation O(eps^2) and
    roundoff O(1e-16 |loss| / eps) amplified by the stiff limit; eps = 1e-6, except 1e-4 for
    the mass, whose derivative is ~1e-3 of the loss (at 1e-6 roundoff alone gives 2e-6).
    RK4 gives the same agreement (checked by hand; its gradient takes ~4x longer to compile,
    too long for this suite)."""
    xml = _pendulum(attrs='solreflimit="0.01 0.5"', attrs1='solreflimit="0.03 1"')
    m = mujoco.MjModel.from_xml_string(xml)
    model0 = engine.compile_model(m)
    n_steps, dt = 60, 0.002

    def loss(q0, qd0, solref0, mass1):
        model = dataclasses.replace(model0,
                                    joint_solref=model0.joint_solref.at[0, 0].set(solref0),
                                    body_mass=model0.body_mass.at[1].set(mass1))
        q, qd = engine.rollout(model, q0, qd0, jnp.zeros(0), dt, n_steps,
                               engine.Integrator.SEMI_IMPLICIT_EULER)
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(qd[-1] ** 2) + jnp.sum(q[:, 0]) * dt

    args = (jnp.array([-0.32, -0.1006]), jnp.array([-2.0, 0.0]), jnp.array(0.01),
            model0.body_mass[1])
    dist_gap, force_gap, pushing = _mujoco_switch_distance(m, args[0], args[1], n_steps)
    assert pushing[0] >= 3, "the hinge limit must push during the rollout"
    assert pushing[1] >= 50, "the slider must rest on its lower limit"
    assert dist_gap > 1e-4, f"a step lies {dist_gap:.1e} from a row switch"
    assert force_gap > 1e-3, f"a step lies {force_gap:.1e} from a force switch"

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(*args)
    f = jax.jit(loss)
    for i, (name, eps) in enumerate((("q0", 1e-6), ("qd0", 1e-6), ("solref timeconst", 1e-6),
                                     ("body mass", 1e-4))):
        x = np.atleast_1d(np.asarray(args[i], dtype=np.float64))
        fd = []
        for k in range(x.size):
            dx = np.zeros_like(x)
            dx[k] = eps
            plus, minus = list(args), list(args)
            plus[i] = jnp.asarray((x + dx).reshape(np.shape(args[i])))
            minus[i] = jnp.asarray((x - dx).reshape(np.shape(args[i])))
            fd.append((f(*plus) - f(*minus)) / (2 * eps))
        g = np.atleast_1d(np.asarray(grads[i]))
        assert np.all(np.isfinite(g)), f"d loss / d {name} is not finite"
        err = np.abs(g - np.array(fd)).max() / np.abs(np.array(fd)).max()
        assert err <= 1e-6, f"d loss / d {name}: relative error {err:.2e} vs central FD"


def _brute_force_qp(h, g, lower, upper):
    """Reference solution of min 1/2 f'Hf + g'f, lower <= f <= upper (upper may be inf,
    lower = upper holds a row) by enumerating which rows sit at which bound and keeping the
    choice that satisfies the KKT conditions."""
    n = g.size
    choices = [("lo",) if lower[i] == upper[i] else
               ("free", "lo") if np.isinf(upper[i]) else ("free", "lo", "hi") for i in range(n)]
    tol = 1e-9 * np.abs(g).max()
    for pick in sorted(itertools.product(*choices), key=lambda c: -c.count("free")):
        f = np.where(np.array(pick) == "hi", upper, lower).astype(float)
        free = [i for i in range(n) if pick[i] == "free"]
        if free:
            held = [i for i in range(n) if i not in free]
            f[free] = np.linalg.solve(h[np.ix_(free, free)],
                                      -g[free] - h[np.ix_(free, held)] @ f[held])
        mu = h @ f + g
        ok = all((pick[i] == "free" and lower[i] - 1e-12 <= f[i] <= upper[i] + 1e-12)
                 or (pick[i] == "lo" and (lower[i] == upper[i] or mu[i] >= -tol))
                 or (pick[i] == "hi" and mu[i] <= tol) for i in range(n))
        if ok:
            return f
    raise AssertionError("no KKT point found")


def test_active_set_qp_matches_brute_force_kkt():
    """The QP solver on 200 random strictly convex instances (8 rows: up to 3 boxes -mu <= f
    <= mu as friction rows, the others f >= 0 as limit rows, some held at 0 as rows not
    instantiated; H from random Jacobians: strongly coupled as ball and hinge rows on one
    chain; every 5th g with a zero: degenerate) vs enumeration of the bounds held; roundoff
    only (1e-9). One vmapped call, so the while_loop also runs batched. Both kinds of bound
    and interior box rows occur (asserted)."""
    rng = np.random.default_rng(5)
    n, n_trials = 8, 200
    hs, gs, lowers, uppers = [], [], [], []
    for trial in range(n_trials):
        jac = rng.normal(size=(n, n + int(rng.integers(-3, 3))))
        hs.append(jac @ jac.T + np.diag(rng.uniform(1e-3, 1.0, size=n)))
        g = rng.normal(size=n) * 10
        if trial % 5 == 0:
            g[rng.integers(n)] = 0.0
        gs.append(g)
        eligible = rng.random(n) < 0.85
        n_box = int(rng.integers(0, 4))
        mu = rng.uniform(0.1, 5.0, size=n)
        box = np.arange(n) < n_box
        lowers.append(np.where(box & eligible, -mu, 0.0))
        uppers.append(np.where(box & eligible, mu, np.where(eligible, np.inf, 0.0)))
    hs, gs, lowers, uppers = (np.array(x) for x in (hs, gs, lowers, uppers))

    @jax.jit
    @jax.vmap
    def solve(h, g, lower, upper):
        free, converged, n_iter, f = limits._active_set(h, g, lower, upper)
        # the minimiser the solver returns is the force (limits._qp_force): it must be the
        # solution of the equality-constrained problem on its free set, to roundoff
        residual = jnp.max(jnp.abs(f - limits._solve_free(h, g, free, f)))
        return f, converged, n_iter, residual

    f, converged, n_iter, off = solve(*(jnp.array(x) for x in (hs, gs, lowers, uppers)))
    assert bool(jnp.all(converged)), "active set did not converge"
    assert float(jnp.max(off)) <= 1e-9 * max(float(jnp.max(jnp.abs(f))), 1.0), \
        "returned minimiser is not the free set's solution"
    worst, kinds = 0.0, set()
    for k in range(n_trials):
        ref = _brute_force_qp(hs[k], gs[k], lowers[k], uppers[k])
        worst = max(worst, np.abs(np.asarray(f[k]) - ref).max() / max(np.abs(ref).max(), 1.0))
        box = np.isfinite(uppers[k]) & (lowers[k] < uppers[k])
        kinds |= {"box " + ("upper" if r == u else "lower" if r == lo else "inside")
                  for r, lo, u in zip(ref[box], lowers[k][box], uppers[k][box])}
        kinds |= {"limit held" for r, lo, u in zip(ref, lowers[k], uppers[k])
                  if np.isinf(u) and r == 0}
    assert kinds == {"box upper", "box lower", "box inside", "limit held"}, kinds
    assert worst <= 1e-9, f"QP force relative error {worst:.2e} vs brute-force KKT"
    assert int(jnp.max(n_iter)) < 3 * n + 10


def test_limited_joints_are_supported_by_dynamics():
    """Limited joints compile without any `dynamics_unsupported` entry."""
    xml = _pendulum()
    assert not engine.compile_model(mujoco.MjModel.from_xml_string(xml)).dynamics_unsupported


@pytest.mark.parametrize("function", ["limit_forces", "solve_limits"])
def test_mass_factor_must_be_a_cholesky_factor_of_the_mass_matrix(function):
    """Before, None or the mass matrix itself failed in an AttributeError ('lower') inside the
    trace, and a factor of the wrong size in the solve."""
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint type="hinge" axis="0 1 0" limited="true" '
        'range="-1 1"/><geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" contype="0" '
        'conaffinity="0"/></body></worldbody></mujoco>')
    model = engine.compile_model(m)
    q, qd, a0 = jnp.array([1.2]), jnp.zeros(1), jnp.zeros(1)
    run = getattr(engine, function)
    mass = engine.mass_matrix(model, q)
    for bad, got in ((None, "NoneType"), (mass, r"an array of shape \(1, 1\)")):
        with pytest.raises(ValueError, match=f"{function}: mass_factor must be "
                           r"engine.cholesky.factor\(M\) of the mass matrix M\(q\), got " + got):
            run(model, q, qd, a0, bad)
    with pytest.raises(ValueError, match=rf"{function}: mass_factor.lower has shape \(2, 2\), "
                       r"expected \(1, 1\) \(the model's n_v = 1\)"):
        run(model, q, qd, a0, cholesky.factor(jnp.eye(2)))
    run(model, q, qd, a0, cholesky.factor(mass))
