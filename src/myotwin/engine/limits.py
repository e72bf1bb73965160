"""Joint and tendon limits as MuJoCo's soft unilateral constraints, solved exactly (MuJoCo 4.0
semantics).

MuJoCo (Computation chapter, "Soft constraints"; engine_core_constraint.c) makes one
constraint row per violated side of a limited joint. With q the joint value, [lo, hi] its
range and m its margin (`jnt_margin`), each row has a distance r, a Jacobian J (1, n_v) and
is instantiated when r < m:
  hinge/slide lower side:  r = q - lo,   J = +e_dof
  hinge/slide upper side:  r = hi - q,   J = -e_dof
  ball:                    r = max(lo, hi) - theta,   J = -u on the ball's 3 dofs,
where theta in [0, pi] and the unit axis u are the rotation angle and axis of the normalised
joint quaternion (mju_quat2Vel: theta = 2 atan2(|v|, |w|), u = sign(w) v / |v|; the dofs
are the body-frame angular velocity, so J qd = d r / dt). Free joints have no limits.
A limited tendon of length L and Jacobian J_t gives rows r = L - lo, J = +J_t and r = hi - L,
J = -J_t after the joints' rows, with its own margin, solref and solimp, and
tendon_invweight0 in place of dof_invweight0 below (`tendons.py`).

Soft-constraint law per row (solref = (s0, s1), solimp = (d0, dwidth, width, mid, power)):
  impedance  d(r) = d0 + y(x) (dwidth - d0),  x = |r - m| / width, y the two-piece power
             sigmoid through (mid, mid) (y = x^p / mid^(p-1) for x <= mid,
             1 - (1-x)^p / (1-mid)^(p-1) above); d = dwidth for x >= 1, flat (d0 + dwidth)/2
             if d0 == dwidth or width <= mjMINVAL; d0, dwidth, mid clamped to [1e-4, 0.9999].
  stiffness, damping (dmax = dwidth):
             s0 > 0 ("standard"): tc = max(s0, 2 timestep) (refsafe), K = 1/(dmax^2 tc^2 s1^2),
             B = 2/(dmax tc);   s0 <= 0 ("direct"): K = -s0/dmax^2, B = -s1/dmax.
  reference acceleration  aref = -B J qd - K d (r - m)
  regulariser             R = max(mjMINVAL, (1 - d)/d * dof_invweight0[joint's first dof])
Dry friction (dof and tendon `frictionloss`, `friction.py`) adds rows before these, always
instantiated, with r = 0 and the force bounded to [-mu, mu] instead of f >= 0.
With no other constraint MuJoCo's Newton/CG/PGS solvers minimise one convex problem; its
dual over the instantiated rows is the box QP (A = J M^-1 J^T, a0 = M^-1 (smooth force))
  f = argmin_{lower <= f <= upper} 1/2 f^T (A + diag R) f + f^T (J a0 - aref),
  qacc = a0 + M^-1 J^T f,   qfrc_constraint = J^T f,
with bounds [0, inf) for a limit row and [-mu, mu] for a friction row.
We solve that QP exactly (primal active-set method, Nocedal & Wright 2006, Alg. 16.3, on the
bounds: finite termination for a strictly convex QP), so our qacc is MuJoCo's optimum
(MuJoCo itself stops at opt.tolerance). Inverse dynamics (mj_inverse) does not solve: the
given qacc fixes jar = J qacc - aref and f = clip(-jar / R, lower, upper) per instantiated
row (max(0, -jar / R) for a limit row).

Gradients: the active-set iterations run on stop_gradient'ed data inside a lax.while_loop;
the force is their minimiser, made differentiable by the implicit-function rule of the final
active set F (f_F = -H_FF^-1 (g + H f_B)_F with f_B the bounds held, `_qp_force`), so
jax.grad gives the derivative of the piece that holds at the evaluation point (exact away from
a switch of the active set, of row instantiation r = m, or of the impedance's kinks). When
every row is a hinge/slide side (J = -side e_dof, static) H = J M^-1 J^T is formed from the
columns of L^-1 at the limited dofs only (`_hinge_rows_delassus`).
The QP has one row per friction row, limited hinge/slide side, limited ball and limited
tendon side (static shape); rows that are not instantiated are masked.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine import cholesky
from myotwin.engine.equality import equality_rows
from myotwin.engine.friction import friction_jacobian
from myotwin.engine.kinematics import kinematics
from myotwin.engine.mass import mass_matrix_from_kinematics
from myotwin.engine.model import JointType, Model
from myotwin.engine.rows import take, take_pairs
from myotwin.engine.spatial import mat_mat, mat_vec
from myotwin.engine.tendons import tendon_limit_geometry, tendon_limit_layout

#: MuJoCo's mjMINVAL, mjMINIMP and mjMAXIMP.
_MINVAL = 1e-15
_MINIMP, _MAXIMP = 1e-4, 0.9999


class LimitRows(NamedTuple):
    """Constraint rows of the friction and limit constraints (MuJoCo's efc_* for
    mjCNSTR_FRICTION_DOF, mjCNSTR_FRICTION_TENDON, mjCNSTR_LIMIT_JOINT, mjCNSTR_LIMIT_TENDON).

    Row order (MuJoCo's): the friction rows (`friction.py`: dofs, then tendons), if any; the
    joints in order, a hinge/slide giving (lower, upper), a ball one row (joint ids and sides
    from `limit_layout`); then the limited tendons (lower, upper) in order
    (`tendons.tendon_limit_layout`). Limit rows with `instantiated` False (r >= margin) are
    not MuJoCo constraints and carry no force; friction rows are always instantiated.
      dist (n_rows,): r (efc_pos; 0 for friction); margin (n_rows,) (efc_margin).
      jac (n_rows, n_v): efc_J.   vel (n_rows,): J qd (efc_vel).
      aref (n_rows,): reference acceleration (efc_aref).
      regularizer (n_rows,): R (efc_R).   instantiated (n_rows,) bool.
      lower, upper (n_rows,): bounds of the row's force: (0, inf) for a limit row,
        (-mu, mu) for a friction row with frictionloss mu (efc_frictionloss).
    """

    dist: jax.Array
    margin: jax.Array
    jac: jax.Array
    vel: jax.Array
    aref: jax.Array
    regularizer: jax.Array
    instantiated: jax.Array
    lower: jax.Array
    upper: jax.Array


class LimitSolution(NamedTuple):
    """Forward-dynamics solution of the limit and friction QP.
      efc_force (n_rows,): f per row, within [lower, upper] (zero on rows not instantiated).
      qfrc_constraint (n_v,): J^T f.   qacc (n_v,): a0 + M^-1 J^T f.
      converged () bool: the active-set method met its KKT test within its iteration cap
        (3 n_rows + 10); if not, efc_force, qfrc_constraint and qacc are NaN.
      n_iter () int: active-set iterations used.
    """

    efc_force: jax.Array
    qfrc_constraint: jax.Array
    qacc: jax.Array
    converged: jax.Array
    n_iter: jax.Array


def limit_layout(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Static row layout: joint id and side (-1 lower, +1 upper, 0 ball) of each row (n_rows,).
    Empty when limits are disabled (MuJoCo's limit or constraint disable flag)."""
    joints, sides = [], []
    if model.limits_enabled:
        for j, (jtype, limited) in enumerate(zip(model.joint_type, model.joint_limited)):
            if not limited:
                continue
            if jtype in (JointType.HINGE, JointType.SLIDE):
                joints += [j, j]
                sides += [-1, 1]
            elif jtype == JointType.BALL:
                joints.append(j)
                sides.append(0)
    return np.array(joints, dtype=int), np.array(sides, dtype=int)


def _ball_angle_axis(quat: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Rotation angle theta in [0, pi] (n,) and unit axis (n, 3) of quaternions (n, 4), w-first,
    normalised first (mju_normalize4 + mju_quat2Vel). Safe for gradients at the identity,
    where the axis is MuJoCo's fallback (1, 0, 0)."""
    quat = quat / jnp.linalg.norm(quat, axis=-1, keepdims=True)
    w, v = quat[:, 0], quat[:, 1:]
    s2 = jnp.sum(v * v, axis=-1)
    small = s2 < _MINVAL**2
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    sign = jnp.where(w < 0, -1.0, 1.0)
    axis = jnp.where(small[:, None], jnp.array([1.0, 0.0, 0.0]), sign[:, None] * v / s[:, None])
    angle = jnp.where(small, 0.0, 2.0 * jnp.arctan2(s, jnp.abs(w)))
    return angle, axis


def impedance(solimp: jax.Array, dist: jax.Array, margin: jax.Array) -> jax.Array:
    """(n,) impedance d(r) in (0, 1) for solimp (n, 5), dist r (n,), margin (n,) (MuJoCo's
    getimpedance, including its clamps of solimp)."""
    d0 = jnp.clip(solimp[:, 0], _MINIMP, _MAXIMP)
    dw = jnp.clip(solimp[:, 1], _MINIMP, _MAXIMP)
    width = jnp.maximum(solimp[:, 2], 0.0)
    mid = jnp.clip(solimp[:, 3], _MINIMP, _MAXIMP)
    power = jnp.maximum(solimp[:, 4], 1.0)
    flat = (d0 == dw) | (width <= _MINVAL)
    x = jnp.abs(dist - margin) / jnp.where(flat, 1.0, width)
    inside = (x > 0.0) & (x < 1.0)
    xs = jnp.where(inside, x, 0.5)  # keeps every power's base in (0, 1) for finite gradients
    # y = xs^p / mid^(p-1) below mid, 1 - (1-xs)^p / (1-mid)^(p-1) above: only the branch
    # taken is evaluated, as exp(p log b - (p-1) log m) (two logs and an exp per row instead
    # of four powers, each a log and an exp)
    below = xs <= mid
    base, ref = jnp.where(below, xs, 1.0 - xs), jnp.where(below, mid, 1.0 - mid)
    t = jnp.exp(power * jnp.log(base) - (power - 1.0) * jnp.log(ref))
    y = jnp.where(below, t, 1.0 - t)
    imp = jnp.where(inside, d0 + y * (dw - d0), jnp.where(x >= 1.0, dw, d0))
    return jnp.where(flat, 0.5 * (d0 + dw), imp)


def stiffness_damping(solref: jax.Array, solimp: jax.Array,
                      min_timeconst_s: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(K (n,), B (n,)) of the reference acceleration from solref (n, 2), solimp (n, 5) and
    the refsafe floor of the time constant (2 opt.timestep, 0 if refsafe is disabled)."""
    ref0, ref1 = solref[:, 0], solref[:, 1]
    dmax = jnp.clip(solimp[:, 1], _MINIMP, _MAXIMP)
    tc = jnp.where(ref0 > 0, jnp.maximum(ref0, min_timeconst_s), ref0)
    k = jnp.where(ref0 > 0, 1.0 / jnp.maximum(_MINVAL, dmax**2 * tc**2 * ref1**2),
                  -ref0 / jnp.maximum(_MINVAL, dmax**2))
    b = jnp.where(ref1 > 0, 2.0 / jnp.maximum(_MINVAL, dmax * tc),
                  -ref1 / jnp.maximum(_MINVAL, dmax))
    return k, b


def _joint_limit_geometry(model: Model, q: jax.Array):
    """(dist, jac, margin, solref, solimp, invweight) of the joint limit rows (module
    docstring; layout `limit_layout`)."""
    joint, side = limit_layout(model)
    dtype = q.dtype
    qadr = np.array(model.joint_qpos_adr, dtype=int)[joint]
    dadr = np.array(model.joint_dof_adr, dtype=int)[joint]
    # Every row's value without a scatter (which would keep the step off XLA's whole-loop
    # compilation, jax_setup.py): hinge/slide sides straight from q, balls from their
    # quaternion's angle and axis, placed by selects and constant one-hot matrices.
    sgn = side.astype(np.float64)  # 0 on ball rows
    bound = take_pairs(model.joint_range, joint, (side > 0).astype(int))
    dist = sgn * (bound - take(q, qadr))
    jac = jnp.asarray(np.where(np.arange(model.n_v)[None, :] == dadr[:, None], -sgn[:, None],
                               0.0), dtype=dtype)
    ball = np.nonzero(side == 0)[0]
    if ball.size:
        angle, axis = _ball_angle_axis(take(q, qadr[ball][:, None] + np.arange(4)))
        rmax = jnp.max(take(model.joint_range, joint[ball]), axis=1)
        in_ball = np.cumsum(side == 0) - 1  # each row's position among the ball rows
        slot = np.maximum(in_ball, 0)
        dist = jnp.where(side == 0, take(rmax - angle, slot), dist)
        axis_rows = take(axis, slot)  # (n_rows, 3)
        for k in range(3):
            one_hot = (side[:, None] == 0) & (np.arange(model.n_v)[None, :] == dadr[:, None] + k)
            jac = jac - jnp.asarray(one_hot, dtype=dtype) * axis_rows[:, k:k + 1]
    return (dist, jac, model.joint_margin[joint], model.joint_solref[joint],
            model.joint_solimp[joint], model.dof_invweight0[dadr])


def _friction_geometry(model: Model, q: jax.Array, stages=None):
    """(dist, jac, margin, solref, solimp, invweight) of the friction rows (`friction.py`):
    distance and margin 0."""
    fr = model.friction
    zero = jnp.zeros(len(fr.dof), dtype=q.dtype)
    return (zero, friction_jacobian(model, q, stages), zero, fr.solref, fr.solimp, fr.invweight0)


def limit_rows(model: Model, q: jax.Array, qd: jax.Array, stages=None) -> LimitRows:
    """Constraint rows (see `LimitRows`) at configuration q (n_q,) and velocity qd (n_v,):
    the friction rows (`friction.py`), the joints' limit rows (`limit_layout`), then the
    tendons' (`tendons.tendon_limit_layout`). stages: the evaluation's `engine.stages.Stages`
    at (q, qd), or None to compute what the rows need from q and qd."""
    q = q.astype(jnp.result_type(q, qd))
    n_eq = 0 if model.equality is None else model.equality.n_rows
    n_fric = 0 if model.friction is None else len(model.friction.dof)
    parts = [_friction_geometry(model, q, stages)] if n_fric else []
    parts.append(_joint_limit_geometry(model, q))
    if tendon_limit_layout(model)[0].size:
        parts.append(tendon_limit_geometry(model, q, stages))
    # the impedance's distance: the row's own r, but a connect's or weld's |r| (equality.py)
    # and their acceleration bias in aref (equality.py); zero for the other rows
    parts = [p + (p[0], jnp.zeros_like(p[0])) for p in parts]
    if n_eq:
        e_dist, e_jac, e_imp, e_bias, e_solref, e_solimp, e_weight = equality_rows(
            model, q, qd, stages)
        zero = jnp.zeros(n_eq, dtype=q.dtype)
        parts.insert(0, (e_dist, e_jac, zero, e_solref, e_solimp, e_weight, e_imp, e_bias))
    dist, jac, margin, solref, solimp, invweight, imp_dist, acc_bias = (
        p[0] if len(parts) == 1 else jnp.concatenate(p) for p in zip(*parts))
    vel = jac @ qd
    imp = impedance(solimp, imp_dist, margin)
    k, b = stiffness_damping(solref, solimp, model.limit_min_timeconst_s)
    aref = -b * vel - k * imp * (dist - margin) - acc_bias
    reg = jnp.maximum(_MINVAL, (1.0 - imp) * invweight / imp)
    row = np.arange(dist.shape[0])                       # static
    is_eq, is_fric = row < n_eq, (row >= n_eq) & (row < n_eq + n_fric)
    instantiated = is_eq | is_fric | (dist < margin)
    lower = jnp.where(is_eq, -jnp.inf, 0.0)
    upper = jnp.full_like(dist, jnp.inf)
    if n_fric:
        mu = jnp.concatenate([jnp.zeros(n_eq, dist.dtype),
                              model.friction.frictionloss.astype(dist.dtype),
                              jnp.zeros(dist.shape[0] - n_eq - n_fric, dist.dtype)])
        lower, upper = jnp.where(is_fric, -mu, lower), jnp.where(is_fric, mu, upper)
    return LimitRows(dist, margin, jac, vel, aref, reg, instantiated, lower, upper)


def _masked_solve(h: jax.Array, g: jax.Array, free: jax.Array) -> jax.Array:
    """(n,) f with f_F = -H_FF^-1 g_F on the free set F and 0 elsewhere (H SPD (n, n))."""
    both = free[:, None] & free[None, :]
    hm = jnp.where(both, h, 0.0) + jnp.diag(jnp.where(free, 0.0, 1.0))
    return cholesky.solve(cholesky.factor(hm), jnp.where(free, -g, 0.0))


def _max_abs(x: jax.Array) -> jax.Array:
    """max |x| over all entries of a small array, as a chain of elementwise maxima: under
    `vmap` XLA hands a small reduction to a slow YNNPACK kernel (spatial.dot_last)."""
    flat = jnp.abs(x.reshape(-1))
    out = flat[0]
    for k in range(1, flat.shape[0]):
        out = jnp.maximum(out, flat[k])
    return out


def _solve_free(h: jax.Array, g: jax.Array, free: jax.Array, f: jax.Array) -> jax.Array:
    """(n,) the minimiser over the free set with the other rows held at their values in f:
    f_F = -H_FF^-1 (g + H f_B)_F, f elsewhere."""
    held = jnp.where(free, 0.0, f)
    return jnp.where(free, _masked_solve(h, g + mat_vec(h, held), free), f)


def _active_set(h: jax.Array, g: jax.Array, lower: jax.Array, upper: jax.Array):
    """Free set of argmin_{lower <= f <= upper} 1/2 f^T H f + g^T f (H SPD; upper may be
    +inf; lower = upper holds a row at that value) by the primal active-set method
    (Nocedal & Wright Alg. 16.3 for bounds), started from the solution on the rows whose
    one-row minimiser -g_i / H_ii lies inside their bounds, clipped. Rows off the free set sit
    at a bound. Returns (free (n,) bool, converged, n_iter, f (n,) the minimiser,
    `_solve_free` of its free set up to roundoff); no gradient (`_qp_force` adds it)."""
    h, g = jax.lax.stop_gradient(h), jax.lax.stop_gradient(g)
    lower, upper = jax.lax.stop_gradient(lower), jax.lax.stop_gradient(upper)
    n = g.shape[0]
    max_iter = 3 * n + 10
    index = jnp.arange(n)
    eligible = lower < upper
    one_row = -g / jnp.diagonal(h)
    free0 = eligible & (one_row > lower) & (one_row < upper)
    f_try = _solve_free(h, g, free0, jnp.where(one_row >= upper, upper, lower))
    f0 = jnp.clip(f_try, lower, upper)
    at_opt0 = jnp.all(jnp.where(free0, (f_try >= lower) & (f_try <= upper), True))

    g_max, h_max = _max_abs(g), _max_abs(h)

    def check_multipliers(state):
        f, free, _, _ = state
        mu = mat_vec(h, f) + g
        tol = 1e-12 * (g_max + h_max * _max_abs(f))
        # a row held at its lower bound may leave it if mu < 0, one at its upper if mu > 0
        held = eligible & ~free
        violation = jnp.where(held & (f <= lower), -mu,
                              jnp.where(held & (f >= upper), mu, -jnp.inf))
        j = jnp.argmax(violation)
        done = violation[j] <= tol
        return f, free | (~done & (index == j)), done, done

    def step(state):
        f, free, _, _ = state
        p = _solve_free(h, g, free, f) - f
        down, up = free & (p < 0), free & (p > 0)
        ratio = jnp.where(down, (f - lower) / jnp.where(down, -p, 1.0),
                          jnp.where(up, (upper - f) / jnp.where(up, p, 1.0), jnp.inf))
        k = jnp.argmin(ratio)
        full = ratio[k] >= 1.0
        f = f + jnp.minimum(ratio[k], 1.0) * p
        # selects, not .at[k].set: a scatter keeps the loop off XLA's whole-loop compilation
        # (jax_setup.py)
        leaves = ~full & (index == k)
        f = jnp.where(leaves, jnp.where(p < 0, lower, upper), f)
        return f, free & ~leaves, full, jnp.array(False)

    def body(carry):
        state, it = carry
        return jax.lax.cond(state[2], check_multipliers, step, state), it + 1

    def cond(carry):
        (_, _, _, done), it = carry
        return ~done & (it < max_iter)

    start = (f0, free0 & (f0 > lower) & (f0 < upper), at_opt0, jnp.array(False))
    # The first iteration from an optimal start (the common case: the clipped solution is
    # already optimal on its free set) only checks the multipliers: done here, branch-free,
    # so that the loop usually runs no iteration at all (and under vmap, where the loop runs
    # to the batch's largest count and both branches of `cond` run, it costs nothing then).
    # Same iterates as running that check inside the loop.
    checked = check_multipliers(start)
    first = jax.tree_util.tree_map(lambda a, b: jnp.where(at_opt0, a, b), checked, start)
    init = (first, jnp.where(at_opt0, 1, 0))
    (f, free, _, done), it = jax.lax.while_loop(cond, body, init)
    return free, done, it, f


@jax.custom_jvp
def _qp_force(h: jax.Array, g: jax.Array, lower: jax.Array, upper: jax.Array,
              free: jax.Array, f: jax.Array) -> jax.Array:
    """The active-set minimiser f (`_active_set`, computed without gradient) as a
    differentiable function of (h, g, lower, upper) on its free set F: f_F = -H_FF^-1 (g +
    H f_B)_F with f_B the bounds the other rows sit at, so df_B = d(bound) and
    df_F = -H_FF^-1 (dH f + dg + H df_B)_F (the implicit-function derivative). The value is f
    itself: no factorisation beyond the active set's, only a derivative factors H_FF (it is
    linear in the tangents, so reverse mode transposes it)."""
    del h, g, lower, upper, free
    return f


@_qp_force.defjvp
def _qp_force_jvp(primals, tangents):
    h, g, lower, upper, free, f = primals
    dh, dg, dlower, dupper, _, _ = tangents
    d_held = jnp.where(free, 0.0, jnp.where(f >= upper, dupper, jnp.where(f <= lower, dlower,
                                                                          0.0)))
    rhs = mat_vec(dh, f) + dg + mat_vec(h, d_held)
    return f, _masked_solve(h, rhs, free) + d_held


def _hinge_rows_only(model: Model) -> bool:
    """Whether every limit row is a hinge/slide side (J = -side e_dof, static) and M is
    factored by cholesky's unrolled loops (n_v <= SMALL_N), so `_hinge_rows_delassus` applies."""
    _, side = limit_layout(model)
    return (bool(np.all(side != 0)) and model.n_v <= cholesky.SMALL_N
            and not tendon_limit_layout(model)[0].size and model.friction is None
            and model.equality is None)


def _hinge_rows_delassus(model: Model, mass_factor) -> jax.Array:
    """(n_rows, n_rows) J M^-1 J^T for hinge/slide rows only: row r is -side_r e_(d_r), so the
    entry (r, s) is side_r side_s (M^-1)[d_r, d_s], with (M^-1)[d, e] = z_d . z_e for the
    columns z_d = L^-1 e_d of the factor's inverse (M = L L^T). z_d is zero above row d, so
    each is a forward substitution over rows d.. only, on scalars; for the frog (limited
    hinges on dofs 6-9 of 10) that is a 4 x 4 triangle instead of a (10, 8) solve and an
    (8, 8) product that XLA fused with it, recomputing the solve for every entry of h
    (cholesky.py's scalars; engine.md "Performance", twelfth session)."""
    joint, side = limit_layout(model)
    dadr = np.asarray(model.joint_dof_adr, dtype=int)[joint]
    dofs = sorted(set(int(d) for d in dadr))
    n = mass_factor.lower.shape[0]
    cols = cholesky.lower_inverse_columns(mass_factor, dofs)   # z_d[k], k >= d
    gram = {}
    for a in dofs:
        for b in dofs:
            if b < a:
                gram[a, b] = gram[b, a]
                continue
            acc = cols[a][b] * cols[b][b]
            for k in range(b + 1, n):
                acc = acc + cols[a][k] * cols[b][k]
            gram[a, b] = acc
    sgn = side.astype(np.float64)
    return jnp.stack([jnp.stack([float(sgn[r] * sgn[c]) * gram[int(dadr[r]), int(dadr[c])]
                                 for c in range(joint.size)]) for r in range(joint.size)])


def solve_limits(model: Model, q: jax.Array, qd: jax.Array, qacc_smooth: jax.Array,
                 mass_factor, stages=None) -> LimitSolution:
    """Exact solution of the limit QP (module docstring) at (q (n_q,), qd (n_v,)) for the
    unconstrained acceleration qacc_smooth (n_v,) (MuJoCo qacc_smooth) and `mass_factor`,
    the `engine.cholesky.factor` of M(q); stages as in `limit_rows`."""
    rows = limit_rows(model, q, qd, stages)
    if rows.dist.shape[0] == 0:
        zero = jnp.zeros(model.n_v, dtype=qacc_smooth.dtype)
        return LimitSolution(zero[:0], zero, qacc_smooth, jnp.array(True), jnp.array(0))

    def solve(_):
        if _hinge_rows_only(model):  # static rows: the columns of L^-1 they need
            h = _hinge_rows_delassus(model, mass_factor) + jnp.diag(rows.regularizer)
        else:
            # J M^-1 J^T = Y^T Y with Y = L^-1 J^T (M = L L^T): one triangular solve, and h
            # is symmetric by construction
            y = cholesky.solve_lower(mass_factor, rows.jac.T)  # (n_v, n_rows)
            h = mat_mat(y.T, y) + jnp.diag(rows.regularizer)
        g = rows.jac @ qacc_smooth - rows.aref
        lower = jnp.where(rows.instantiated, rows.lower, 0.0)
        upper = jnp.where(rows.instantiated, rows.upper, 0.0)
        free, converged, n_iter, f_star = _active_set(h, g, lower, upper)
        force = _qp_force(h, g, lower, upper, free, f_star)
        force = jnp.where(converged, force, jnp.nan)
        qfrc = rows.jac.T @ force
        return LimitSolution(force, qfrc, qacc_smooth + cholesky.solve(mass_factor, qfrc),
                             converged, n_iter)

    def no_rows(_):  # no row instantiated: f = 0, qacc = qacc_smooth, nothing to solve
        return LimitSolution(jnp.zeros_like(rows.dist), jnp.zeros_like(qacc_smooth),
                             qacc_smooth, jnp.array(True), jnp.array(0))

    # (a real branch for a single state; under vmap both run and the result is selected)
    return jax.lax.cond(jnp.any(rows.instantiated), solve, no_rows, None)


def constrained_acceleration(model: Model, q: jax.Array, qd: jax.Array,
                             qacc_smooth: jax.Array, mass_factor, stages=None) -> jax.Array:
    """(n_v,) MuJoCo qacc: qacc_smooth (n_v,) corrected by the joint-limit forces (stages as
    in `limit_rows`)."""
    return solve_limits(model, q, qd, qacc_smooth, mass_factor, stages).qacc


def limit_forces(model: Model, q: jax.Array, qd: jax.Array, qacc_smooth: jax.Array,
                 mass_factor) -> jax.Array:
    """(n_v,) joint-limit generalized force of forward dynamics (MuJoCo qfrc_constraint)."""
    return solve_limits(model, q, qd, qacc_smooth, mass_factor).qfrc_constraint


def inverse_limit_forces(model: Model, q: jax.Array, qd: jax.Array,
                         qacc: jax.Array, stages=None) -> jax.Array:
    """(n_v,) limit and friction generalized force that mj_inverse assigns to the given qacc
    (n_v,): J^T f with f = clip(-(J qacc - aref) / R, lower, upper) on instantiated rows
    (max(0, .) for a limit row; MuJoCo's mj_constraintUpdate; its qfrc_constraint after
    mj_inverse); stages as in `limit_rows`."""
    rows = limit_rows(model, q, qd, stages)
    if rows.dist.shape[0] == 0:
        return jnp.zeros(model.n_v, dtype=qacc.dtype)
    jar = rows.jac @ qacc - rows.aref
    force = jnp.clip(-jar / rows.regularizer, rows.lower, rows.upper)
    force = jnp.where(rows.instantiated, force, 0.0)
    return rows.jac.T @ force


def invweight0(model: Model) -> jax.Array:
    """(n_v,) MuJoCo's dof_invweight0 recomputed from the model (mj_setConst): the diagonal of
    M(qpos0)^-1, averaged over each ball joint's 3 dofs and over a free joint's translational
    and rotational triples. `compile_model` copies MuJoCo's value into `Model.dof_invweight0`;
    use this after changing inertial parameters, e.g.
    `dataclasses.replace(model, dof_invweight0=invweight0(model))` (MuJoCo does the same only
    when mj_setConst is called)."""
    mass = mass_matrix_from_kinematics(model, kinematics(model, model.qpos0))
    diag = jnp.diag(cholesky.solve(cholesky.factor(mass), jnp.eye(model.n_v, dtype=mass.dtype)))
    for j, jtype in enumerate(model.joint_type):
        a = model.joint_dof_adr[j]
        groups = {JointType.BALL: [(a, a + 3)], JointType.FREE: [(a, a + 3), (a + 3, a + 6)]}
        for lo, hi in groups.get(JointType(jtype), []):
            diag = diag.at[lo:hi].set(jnp.mean(diag[lo:hi]))
    return diag


def check_solref(solref, what: str, attribute: str) -> None:
    """Raise ValueError naming `what` and its MJCF `attribute` if solref (2,) mixes the
    standard (timeconst, dampratio > 0) and direct (-stiffness, -damping <= 0) formats, which
    MuJoCo replaces by its default (0.02, 1) with a warning."""
    ref0, ref1 = (float(x) for x in np.asarray(solref).reshape(2))
    if (ref0 > 0) != (ref1 > 0):
        raise ValueError(
            f"{what}: {attribute} ({ref0:g}, {ref1:g}) mixes the standard (timeconst, "
            "dampratio > 0) and direct (-stiffness, -damping <= 0) formats; use two positive "
            "or two non-positive values (MuJoCo would warn and use its default (0.02, 1))")


def limit_parameters(mj_model) -> dict:
    """`Model` fields for joint limits from a compiled `mujoco.MjModel` (only read):
    joint_margin (n_joint,), joint_solref (n_joint, 2), joint_solimp (n_joint, 5) (the
    override flag does not reach joint limits in MuJoCo 4.0: it changes contacts only;
    verified), dof_invweight0 (n_v,),
    limit_min_timeconst_s () = 2 opt.timestep (0 with the refsafe flag disabled) and the static
    limits_enabled (False with the limit or constraint flag disabled).

    Raises ValueError for a limited joint whose solreflimit mixes the standard (both > 0) and
    direct (both <= 0) formats, which MuJoCo replaces by its default with a warning."""
    import mujoco

    m = mj_model
    dsbl = m.opt.disableflags
    enabled = not (dsbl & mujoco.mjtDisableBit.mjDSBL_LIMIT
                   or dsbl & mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    solref = np.array(m.jnt_solref, dtype=np.float64).reshape(m.njnt, 2)
    solimp = np.array(m.jnt_solimp, dtype=np.float64).reshape(m.njnt, 5)
    margin = np.array(m.jnt_margin, dtype=np.float64).reshape(m.njnt)
    for j in range(m.njnt):
        if enabled and m.jnt_limited[j]:
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
            check_solref(solref[j], f"joint #{j}" + (f" '{name}'" if name else ""),
                         "solreflimit")
    refsafe = not dsbl & mujoco.mjtDisableBit.mjDSBL_REFSAFE
    f64 = lambda x: jnp.asarray(np.array(x, dtype=np.float64), dtype=jnp.float64)  # noqa: E731
    return dict(
        joint_margin=f64(margin),
        joint_solref=f64(solref),
        joint_solimp=f64(solimp),
        dof_invweight0=f64(m.dof_invweight0),
        limit_min_timeconst_s=f64(2.0 * m.opt.timestep if refsafe else 0.0),
        limits_enabled=bool(enabled),
    )
