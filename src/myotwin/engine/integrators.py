"""Fixed-step integrators on the configuration manifold, in MuJoCo's conventions.

State (q (n_q,), qd (n_v,)); qdd = f(q, qd, ctrl) is `forward_dynamics`. Positions are
advanced with `integrate_pos` (MuJoCo mj_integratePos): hinge/slide and free translation
q += dt v; ball and free rotation q <- normalise(q) * exp(dt w / 2) with w the body-frame
angular velocity (mju_quatIntegrate).

  explicit Euler:       q' = q (+) dt qd,          qd' = qd + dt f(q, qd)          order 1
  semi-implicit Euler:  qd' = qd + dt f(q, qd),    q' = q (+) dt qd'               order 1
                        (MuJoCo's "Euler" with its `eulerdamp` flag disabled)
  Euler (MuJoCo's):     qd' = qd + dt (M + dt D)^-1 M f(q, qd), q' = q (+) dt qd'  order 1
                        (MuJoCo's default "Euler": dof damping D integrated implicitly;
                        the same as semi-implicit Euler when D = 0; `euler_step`)
  RK4:                  classic Butcher tableau; velocities qd_i = qd + h sum_j a_ij f_j,
                        positions by Runge-Kutta-Munthe-Kaas on the quaternions:
                        q_i = q (+) h sum_j a_ij k_j with k_j = qd_j on hinge/slide and
                        free-translation dofs and k_j = dexpinv(Theta_j, w_j) on ball and
                        free-rotation dofs (Theta_j the stage's rotation from q). This is
                        what MuJoCo 4.0.0's RK4 computes (see `rk4_step`).      order 4
  BDF1, SDIRK2:         implicit, Newton on velocity unknowns (implicit.py)    order 1, 2

The explicit steps also come in a form that carries extra states along (`*_step_with`:
`rates(q, qd, extra) -> (qdd, d extra / dt)`; the extra states follow the same tableau in
their vector space), used by `myotwin.musculoskeletal` for muscle activations and tendon
states; the skeleton-only steps call them with no extra state (compiled programs identical
to the former skeleton-only code, checked on the inertial benchmark chain).

Every step takes MuJoCo's applied forces as optional keywords, qfrc_applied (n_v,) and
xfrc_applied (n_body, 6), held constant over the step (as MuJoCo holds them over mj_step) and
passed to every `forward_dynamics` evaluation of the step; None (default) applies nothing.
"""

from __future__ import annotations

import enum
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.dynamics import forward_dynamics
from myotwin.engine.model import JointType, Model
from myotwin.engine.rows import take, take_pairs
from myotwin.engine.spatial import cross, dot_last, quat_integrate, quat_mul


class Integrator(enum.Enum):
    """Fixed-step integrators; values are the names accepted by `simulate`."""

    EXPLICIT_EULER = "explicit_euler"
    SEMI_IMPLICIT_EULER = "semi_implicit_euler"
    EULER = "euler"
    RK4 = "rk4"
    BDF1 = "bdf1"
    SDIRK2 = "sdirk2"


class QposPlan(NamedTuple):
    """Static qpos/qvel tables (NumPy, built once per topology).

    quat_qpos (n_quat, 4): qpos addresses of each ball/free quaternion; quat_dof (n_quat, 3):
    the dofs of its body-frame angular velocity. linear_qpos (n_lin,), linear_dof (n_lin,):
    the qpos entries that move by their dof's velocity (hinge, slide, free translation).
    """

    quat_qpos: np.ndarray
    quat_dof: np.ndarray
    linear_qpos: np.ndarray
    linear_dof: np.ndarray


def qpos_plan(model: Model) -> QposPlan:
    """Static qpos tables of `model` (cached per topology)."""
    return _qpos_plan(model.joint_type, model.joint_qpos_adr, model.joint_dof_adr)


@functools.lru_cache(maxsize=256)
def _qpos_plan(joint_type, joint_qpos_adr, joint_dof_adr) -> QposPlan:
    quat_qpos, quat_dof, linear_qpos, linear_dof = [], [], [], []
    for jtype, qa, va in zip(joint_type, joint_qpos_adr, joint_dof_adr):
        if jtype == JointType.FREE:
            linear_qpos += [qa, qa + 1, qa + 2]
            linear_dof += [va, va + 1, va + 2]
            qa, va = qa + 3, va + 3
        if jtype in (JointType.FREE, JointType.BALL):
            quat_qpos.append(list(range(qa, qa + 4)))
            quat_dof.append(list(range(va, va + 3)))
        else:
            linear_qpos.append(qa)
            linear_dof.append(va)
    as_int = lambda x, shape: np.array(x, dtype=int).reshape(shape)  # noqa: E731
    return QposPlan(as_int(quat_qpos, (-1, 4)), as_int(quat_dof, (-1, 3)),
                    as_int(linear_qpos, (-1,)), as_int(linear_dof, (-1,)))


def _assemble(model: Model, plan: QposPlan, linear: jax.Array, quats: jax.Array) -> jax.Array:
    """(n_q,) vector with `linear` (n_lin,) at plan.linear_qpos and `quats` (n_quat, 4) at
    plan.quat_qpos (a static permutation, one gather)."""
    source = np.empty(model.n_q, dtype=int)
    source[plan.linear_qpos] = np.arange(plan.linear_qpos.size)
    source[plan.quat_qpos.reshape(-1)] = plan.linear_qpos.size + np.arange(plan.quat_qpos.size)
    return take(jnp.concatenate([linear, quats.reshape(-1)]), source)


def integrate_pos(model: Model | None, q: jax.Array, v: jax.Array, dt) -> jax.Array:
    """(n_q,) configuration q (n_q,) moved by velocity v (n_v,) for time dt (mj_integratePos).
    model None: coordinates in a vector space (coupled coordinates, engine.coupling): q + dt v.
    """
    if model is None:
        return q + dt * v
    plan = qpos_plan(model)
    if model.n_q == 0:
        return q
    linear = take(q, plan.linear_qpos) + dt * take(v, plan.linear_dof)
    quats = quat_integrate(take(q, plan.quat_qpos), take(v, plan.quat_dof), dt)
    return _assemble(model, plan, linear, quats)


def qpos_derivative(model: Model, q: jax.Array, v: jax.Array) -> jax.Array:
    """(n_q,) time derivative of q (n_q,) at velocity v (n_v,): v for hinge/slide and free
    translation, 0.5 q * (0, w) for ball/free quaternions (w body-frame)."""
    plan = qpos_plan(model)
    if model.n_q == 0:
        return jnp.zeros_like(q)
    w = take(v, plan.quat_dof)
    w = jnp.concatenate([jnp.zeros(w.shape[:-1] + (1,), dtype=v.dtype), w], axis=-1)
    return _assemble(model, plan, take(v, plan.linear_dof),
                     0.5 * quat_mul(take(q, plan.quat_qpos), w))


def normalize_quaternions(model: Model, q: jax.Array) -> jax.Array:
    """(n_q,) q with every ball/free quaternion scaled to unit norm."""
    plan = qpos_plan(model)
    if plan.quat_qpos.size == 0:
        return q
    quats = take(q, plan.quat_qpos)
    return _assemble(model, plan, take(q, plan.linear_qpos),
                     quats / jnp.linalg.norm(quats, axis=-1, keepdims=True))


def explicit_euler_step(model: Model, q, qd, ctrl, dt, qfrc_applied=None, xfrc_applied=None):
    """One forward-Euler step; returns (q', qd')."""
    q, qd, _ = explicit_euler_step_with(model, q, qd, None, _skeleton_rates(
        model, ctrl, qfrc_applied, xfrc_applied), dt)
    return q, qd


def semi_implicit_euler_step(model: Model, q, qd, ctrl, dt, qfrc_applied=None,
                             xfrc_applied=None):
    """One symplectic-Euler step (velocity first, then position with the new velocity)."""
    q, qd, _ = semi_implicit_euler_step_with(model, q, qd, None, _skeleton_rates(
        model, ctrl, qfrc_applied, xfrc_applied), dt)
    return q, qd


def euler_step(model: Model, q, qd, ctrl, dt, qfrc_applied=None, xfrc_applied=None):
    """One step of MuJoCo's default Euler (dof damping implicit; `euler_step_with`)."""
    q, qd, _ = euler_step_with(model, q, qd, None, _skeleton_rates(
        model, ctrl, qfrc_applied, xfrc_applied), dt)
    return q, qd


def _skeleton_rates(model: Model, ctrl, qfrc_applied, xfrc_applied):
    """The `rates` of the *_with steps for the skeleton alone (no extra state)."""
    def rates(q, qd, extra, damping_dt=None):
        return forward_dynamics(model, q, qd, ctrl, qfrc_applied=qfrc_applied,
                                xfrc_applied=xfrc_applied, damping_dt=damping_dt), None
    return rates


def _axpy(x, dt, rate):
    """x + dt * rate over a pytree of extra states (None stays None)."""
    return jax.tree_util.tree_map(lambda a, b: a + dt * b, x, rate)


# Steps of (q, qd, extra): `extra` is any pytree of states that evolve with the skeleton (for
# example muscle activations and tendon states, myotwin.musculoskeletal) and
# rates(q, qd, extra) -> (qdd (n_v,), d extra / dt) their joint right-hand side (for
# `euler_step_with`, rates(q, qd, extra, damping_dt=dt) returns the qdd of
# `forward_dynamics(..., damping_dt=dt)`, MuJoCo Euler's implicit damping). The extra
# states live in a vector space (plain additions); the skeleton's positions move on the
# configuration manifold as in the steps above.

def explicit_euler_step_with(model: Model, q, qd, extra, rates, dt):
    """Forward Euler on (q, qd, extra); returns (q', qd', extra')."""
    qdd, extra_rate = rates(q, qd, extra)
    return integrate_pos(model, q, qd, dt), qd + dt * qdd, _axpy(extra, dt, extra_rate)


def semi_implicit_euler_step_with(model: Model, q, qd, extra, rates, dt):
    """Symplectic Euler on (q, qd) (velocity first, then position with the new velocity),
    forward Euler on `extra`; returns (q', qd', extra')."""
    qdd, extra_rate = rates(q, qd, extra)
    qd_new = qd + dt * qdd
    return integrate_pos(model, q, qd_new, dt), qd_new, _axpy(extra, dt, extra_rate)


def euler_step_with(model: Model, q, qd, extra, rates, dt):
    """MuJoCo's Euler (`integrator="Euler"`, `eulerdamp` enabled: its default) on (q, qd) and
    forward Euler on `extra`; returns (q', qd', extra'). mj_Euler replaces the acceleration
    by (M + dt D)^-1 (qfrc_smooth + qfrc_constraint), which makes the dof damping force
    -D qd' (implicit) rather than -D qd, then advances as semi-implicit Euler (mj_advance:
    activations by their rate, qd' = qd + dt qdd', q' = q (+) dt qd'). Needs the skeleton
    (`model` not None); `rates` takes damping_dt (comment above), so that the damped
    acceleration uses the mass matrix of the same evaluation (`dynamics.implicit_damping`)."""
    if model is None:
        raise ValueError("integrator 'euler' (MuJoCo's, implicit dof damping) needs the "
                         "skeleton's mass matrix; coordinates in a vector space (coupled "
                         "coordinates) take 'semi_implicit_euler' or 'rk4'")
    qdd, extra_rate = rates(q, qd, extra, damping_dt=dt)
    qd_new = qd + dt * qdd
    return integrate_pos(model, q, qd_new, dt), qd_new, _axpy(extra, dt, extra_rate)


# The classic tableau: a_ij = 0 except a_i,i-1 = c_i (so each stage needs only the previous
# one); weights b_i.
_RK4_C = np.array([0.0, 0.5, 0.5, 1.0])  # stage 0 is the step's start
_RK4_B = np.array([1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0])


def _dexpinv_coefficient(t2: jax.Array) -> jax.Array:
    """c(t) = (1 - (t/2) cot(t/2)) / t^2 of `_dexpinv` from t2 = t^2 (...,): closed form for
    t >= 0.1, its Taylor series below (finite values and gradients at t = 0)."""
    small = t2 < 0.01
    t2_safe = jnp.where(small, 1.0, t2)
    t = jnp.sqrt(t2_safe)
    closed = (1.0 - 0.5 * t / jnp.tan(0.5 * t)) / t2_safe
    series = 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 / 1209600.0))
    return jnp.where(small, series, closed)


def _dexpinv(model: Model, theta: jax.Array, v: jax.Array) -> jax.Array:
    """(n_v,) v with each ball/free rotation triplet w replaced by the inverse differential of
    the exponential, w + theta x w / 2 + c(|theta|) theta x (theta x w), at the stage's
    rotation vector theta (same triplets of the (n_v,) theta; the body-frame form of
    Munthe-Kaas 1998 Eq. 2.4, in closed form as MuJoCo 4.0.0 computes it):
    c(t) = (1 - (t/2) cot(t/2)) / t^2 = 1/12 + t^2/720 + t^4/30240 + t^6/1209600 + ...
    (the series below |theta| = 0.1, where the closed form loses digits to cancellation; the
    next term changes c by < 3e-15 relative there). v itself for model None."""
    if model is None:
        return v
    plan = qpos_plan(model)
    if plan.quat_dof.size == 0:
        return v
    # static tables: each rotational dof's triplet and its position in it (gathers and a
    # select, which XLA fuses; engine.md "Performance")
    triplet = np.tile(np.arange(model.n_v)[:, None], (1, 3))
    slot = np.zeros(model.n_v, dtype=int)
    triplet[plan.quat_dof.reshape(-1)] = np.repeat(plan.quat_dof, 3, axis=0)
    slot[plan.quat_dof.reshape(-1)] = np.tile(np.arange(3), plan.quat_dof.shape[0])
    rotational = np.zeros(model.n_v, dtype=bool)
    rotational[plan.quat_dof.reshape(-1)] = True
    w, th = take(v, triplet), take(theta, triplet)  # (n_v, 3)
    half = cross(th, w)
    coefficient = _dexpinv_coefficient(dot_last(th, th))[:, None]
    corrected = w + 0.5 * half + coefficient * cross(th, half)
    return jnp.where(rotational, take_pairs(corrected, np.arange(model.n_v), slot), v)


def rk4_step(model: Model, q, qd, ctrl, dt, qfrc_applied=None, xfrc_applied=None):
    """One classic RK4 step, as MuJoCo 4.0.0's `integrator="RK4"` computes it.

    Velocities follow the tableau (qd_i = qd + h sum_j a_ij f_j). Positions follow the
    Runge-Kutta-Munthe-Kaas method (H. Munthe-Kaas, "Runge-Kutta methods on Lie groups", BIT
    38, 1998; Iserles et al., Acta Numerica 9, 2000, §5.2): stage i sits at
    q_i = q (+) h sum_j a_ij k_j (`integrate_pos`, i.e. the quaternions q exp(Theta_i) with
    Theta_i = h sum_j a_ij k_j), where k_j = qd_j on hinge/slide and free-translation dofs and
    k_j = dexpinv(Theta_j, w_j) = w_j + Theta_j x w_j / 2 + c(|Theta_j|) Theta_j x (Theta_j x
    w_j) (`_dexpinv`, c = 1/12 + O(|Theta|^2)) on the body-frame angular velocity w_j of each
    ball/free rotation; the step ends at q (+) h sum_j b_j k_j. Without the correction (the
    manifold form of older mj_RungeKutta sources) the quaternions are integrated to 2nd
    order only. Measured against MuJoCo 4.0.0 by recording its stage states (qpos, qvel seen
    by mjcb_passive inside mj_step): every stage and the final state agree bit for bit with
    the closed-form c; with c = 1/12 (used until session 33) they agreed only while |Theta|
    stayed small (a free body with a soft spring) and one step of a light box spinning at
    ~150 rad/s differed by 1e-8. Since the stages run in a loop (session 10; the same
    expressions, fused differently) one step agrees to roundoff
    (`tests/engine/test_joint_springs.py`, `test_one_rk4_step_matches_mj_step_to_roundoff`,
    `test_one_rk4_step_of_a_fast_rotation_matches_mj_step`).
    The qpos-coordinate form q + h sum b_j qdot_j
    (quaternion rate 0.5 q (0, w), normalised) differs by h^5 per step (1e-13 at dt = 1 ms,
    |w| ~ 1 rad/s, with a spring of natural frequency 24 rad/s), which accumulated to
    3.7e-8 over 1 s in a ball-spring rollout.
    """
    q, qd, _ = rk4_step_with(model, q, qd, None,
                             _skeleton_rates(model, ctrl, qfrc_applied, xfrc_applied), dt)
    return q, qd


def rk4_step_with(model: Model, q, qd, extra, rates, dt):
    """One classic RK4 step of (q, qd, extra) (`rk4_step` for the skeleton; the extra states
    follow the same tableau in their vector space); returns (q', qd', extra'). model None:
    q and qd are coordinates in a vector space (`integrate_pos`)."""
    q = q if model is None else normalize_quaternions(model, q)
    zero_extra = jax.tree_util.tree_map(jnp.zeros_like, extra)

    def stage(i, carry):
        # stage i from stage i - 1 (the classic tableau's only nonzero a_ij is a_i,i-1 = c_i):
        # Theta_i = dt c_i k_(i-1), qd_i = qd + dt c_i f_(i-1); stage 0 is (q, qd) itself
        k_prev, acc_prev, k_sum, acc_sum, x_prev, x_sum = carry
        c, b = jnp.asarray(_RK4_C, qd.dtype)[i], jnp.asarray(_RK4_B, qd.dtype)[i]
        dk = c * k_prev
        qd_i = qd + dt * (c * acc_prev)
        q_i = jnp.where(i == 0, q, integrate_pos(model, q, dk, dt))
        k = _dexpinv(model, dt * dk, qd_i)
        acc, x_rate = rates(q_i, qd_i, _axpy(extra, dt * c, x_prev))
        return (k, acc, k_sum + b * k, acc_sum + b * acc, x_rate, _axpy(x_sum, b, x_rate))

    # One evaluation of the rates in a loop over the four stages, not four inlined copies: a
    # quarter of the code for XLA to compile (the small-loop compilation of a whole rollout,
    # jax_setup.py, made compile time grow with the step's size).
    zero = jnp.zeros_like(qd)
    _, _, dk, dv, _, dx = jax.lax.fori_loop(
        0, 4, stage, (qd, zero, zero, zero, zero_extra, zero_extra))
    return integrate_pos(model, q, dk, dt), qd + dt * dv, _axpy(extra, dt, dx)


# implicit.py needs integrate_pos (defined above); the package __init__ imports this module
# before implicit.py, so this late import is never circular.
from myotwin.engine.implicit import bdf1_step, sdirk2_step  # noqa: E402

STEPS = {
    Integrator.EXPLICIT_EULER: explicit_euler_step,
    Integrator.SEMI_IMPLICIT_EULER: semi_implicit_euler_step,
    Integrator.EULER: euler_step,
    Integrator.RK4: rk4_step,
    Integrator.BDF1: bdf1_step,
    Integrator.SDIRK2: sdirk2_step,
}

#: Global order of accuracy of each integrator (tested by regression on log error vs log dt).
ORDER = {Integrator.EXPLICIT_EULER: 1, Integrator.SEMI_IMPLICIT_EULER: 1, Integrator.EULER: 1,
         Integrator.RK4: 4, Integrator.BDF1: 1, Integrator.SDIRK2: 2}
