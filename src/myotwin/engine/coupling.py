"""Coupled coordinates: engine joints whose motion is a function of a smaller set of coordinates.

OpenSim's CustomJoint moves its child through up to six transform axes, each a function of
one coordinate: gait models translate the knee along two axes as splines of the knee angle.
The engine keeps MuJoCo's joints (docs/engine.md), so such a joint is compiled as one engine
hinge or slide per moving axis (the full model, coordinates q_f) and this module eliminates the
dependent ones exactly: every engine dof j follows one reduced coordinate s(j),

    q_f[j] = f_j(q[s(j)]),   qd_f = J qd,   qdd_f = J qdd + Jdot qd,
    J[j, s(j)] = f_j'(q[s(j)]),  (Jdot qd)[j] = f_j''(q[s(j)]) qd[s(j)]^2,

and the equations of motion of the reduced system are the full ones projected by J
(d'Alembert / Kane; the chained Jacobians of the seed, Wang et al. 2022 §3, Eq. 7, with
q_f in the role of the maximal coordinates):

    tau = J^T tau_f(q_f, qd_f, J qdd + Jdot qd),   M = J^T M_f J.

This is exact (no constraint forces, no drift), unlike MuJoCo's approach to the same models
(extra dofs held by soft equality constraints, MyoSuite's knee). f_j is a piecewise
polynomial (`PiecewisePolynomial`): every OpenSim function of one coordinate that a joint
uses (Constant, LinearFunction, SimmSpline, NaturalCubicSpline, PiecewiseLinearFunction,
PolynomialFunction, MultiplierFunction of those) is one, extrapolation included. An
independent dof is the identity f(x) = x.

The full model must have hinge and slide joints only (q_f and qd_f then have the same layout)
with qpos0 = 0 (q_f is the joint displacement itself).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.model import JointType, Model
from myotwin.scalars import is_integer
# PiecewisePolynomial and identity_polynomial live in engine.piecewise (shared with the
# moving path points of paths.builder) and stay importable from here.
from myotwin.engine.piecewise import (PiecewisePolynomial, check_polynomial, evaluate_padded,
                                      identity_polynomial, pad_polynomials)


@dataclasses.dataclass(frozen=True)
class CoordinateCoupling:
    """The map from n_reduced coordinates to the n_full engine dofs (a JAX pytree).

    source (n_full,) static: the reduced coordinate each engine dof follows.
    breaks (n_full, k_max): per dof, padded with +inf (never reached).
    origins (n_full, k_max + 1), coefficients (n_full, k_max + 1, d_max + 1): zero padded.
    inner_breaks, inner_origins, inner_coefficients: the inner functions g_j padded alike
      (identity for a dof without one), or all None when no dof has one (module docstring).
    """

    n_reduced: int = dataclasses.field(metadata={"static": True})
    source: tuple[int, ...] = dataclasses.field(metadata={"static": True})
    breaks: jax.Array
    origins: jax.Array
    coefficients: jax.Array
    inner_breaks: jax.Array | None = None
    inner_origins: jax.Array | None = None
    inner_coefficients: jax.Array | None = None

    @property
    def n_full(self) -> int:
        return len(self.source)


jax.tree_util.register_dataclass(CoordinateCoupling)


def coordinate_coupling(n_reduced: int, source, functions,
                        inner=None) -> CoordinateCoupling:
    """Compile per-dof functions: dof j = functions[j](q[source[j]]), or, with `inner` (one
    entry per dof: a PiecewisePolynomial g_j or None for the identity),
    functions[j](inner[j](q[source[j]])). Raises ValueError on a source outside
    range(n_reduced), a coordinate no dof follows, or a malformed function, and TypeError
    on an n_reduced or a source that is not an integer (`is_integer`: 0.7 and True are not
    indices) or functions that are not a list."""
    if not is_integer(n_reduced):
        raise TypeError(f"coordinate_coupling: n_reduced must be an integer, got {n_reduced!r}")
    if not isinstance(source, (list, tuple, np.ndarray)) or not all(map(is_integer, source)):
        raise TypeError(f"coordinate_coupling: source must be a list of integers (one reduced "
                        f"coordinate per engine dof), got {source!r}")
    if not isinstance(functions, (list, tuple)):
        raise TypeError(f"coordinate_coupling: functions must be a list of PiecewisePolynomial "
                        f"(one per engine dof), got {type(functions).__name__}")
    source = tuple(int(s) for s in source)
    functions = [check_polynomial(f, f"coupling function of dof {j}")
                 for j, f in enumerate(functions)]
    if len(functions) != len(source):
        raise ValueError(f"{len(source)} dofs but {len(functions)} functions")
    inner_tables = (None, None, None)
    if inner is not None:
        inner = list(inner)
        if len(inner) != len(source):
            raise ValueError(f"{len(source)} dofs but {len(inner)} inner functions")
        if any(g is not None for g in inner):
            inner_tables = tuple(jnp.asarray(a) for a in pad_polynomials(
                [identity_polynomial() if g is None
                 else check_polynomial(g, f"inner coupling function of dof {j}")
                 for j, g in enumerate(inner)]))
    bad = [s for s in source if not 0 <= s < n_reduced]
    if bad:
        raise ValueError(f"coupling sources must be in [0, {n_reduced}), got {bad}")
    unused = sorted(set(range(n_reduced)) - set(source))
    if unused:
        raise ValueError(f"reduced coordinates {unused} move no engine dof")
    breaks, origins, coefficients = pad_polynomials(functions)
    return CoordinateCoupling(n_reduced, source, jnp.asarray(breaks), jnp.asarray(origins),
                              jnp.asarray(coefficients), *inner_tables)


def _dof_functions(c: CoordinateCoupling, q: jax.Array):
    """(value, first, second derivative) (n_full,) of each dof w.r.t. its source coordinate
    (through its inner function by the chain rule, module docstring)."""
    x = q[np.asarray(c.source, dtype=np.int32)] if c.n_full else jnp.zeros(0, q.dtype)
    if c.inner_breaks is None:
        return evaluate_padded(c.breaks, c.origins, c.coefficients, x)
    g, g1, g2 = evaluate_padded(c.inner_breaks, c.inner_origins, c.inner_coefficients, x)
    f, f1, f2 = evaluate_padded(c.breaks, c.origins, c.coefficients, g)
    return f, f1 * g1, f2 * g1 * g1 + f1 * g2


def full_positions(c: CoordinateCoupling, q: jax.Array) -> jax.Array:
    """(n_full,) engine q_f of the reduced coordinates q (n_reduced,)."""
    return _dof_functions(c, q)[0]


def full_jacobian(c: CoordinateCoupling, q: jax.Array) -> jax.Array:
    """(n_full, n_reduced) J = d q_f / d q."""
    slope = _dof_functions(c, q)[1]
    return jnp.zeros((c.n_full, c.n_reduced), q.dtype).at[
        np.arange(c.n_full), np.asarray(c.source, dtype=np.int32)].set(slope)


class FullMotion(NamedTuple):
    """Engine-dof motion of a reduced state: q_f, qd_f, qdd_f (n_full,)."""

    q: jax.Array
    qd: jax.Array
    qdd: jax.Array


def full_motion(c: CoordinateCoupling, q: jax.Array, qd: jax.Array,
                qdd: jax.Array) -> FullMotion:
    """q_f, qd_f = J qd and qdd_f = J qdd + Jdot qd (module docstring)."""
    value, first, second = _dof_functions(c, q)
    src = np.asarray(c.source, dtype=np.int32)
    rate = qd[src]
    return FullMotion(value, first * rate, first * qdd[src] + second * rate * rate)


def reduce_forces(c: CoordinateCoupling, q: jax.Array, tau_full: jax.Array) -> jax.Array:
    """(n_reduced,) J^T tau_full: a generalized force on the engine dofs (n_full,) as a force
    on the reduced coordinates (the same power for every reduced velocity)."""
    slope = _dof_functions(c, q)[1]
    return jax.ops.segment_sum(slope * tau_full, np.asarray(c.source, dtype=np.int32),
                               num_segments=c.n_reduced)


def direct_forces(c: CoordinateCoupling, q: jax.Array, tau_full: jax.Array,
                  direct: tuple[int, ...], n_direct: int) -> jax.Array:
    """(n_direct,) the generalized forces of the coordinates that move the dofs directly, each
    dof j counted once, at the coordinate direct[j] (static ints in range(n_direct)): sum over
    j with direct[j] = k of f_j'(g_j(q[s(j)])) tau_full[j]. For a dof with an inner function
    g_j the direct coordinate is g_j's value (an eliminated coordinate, q_dep = g_j(q[s(j)]))
    and f_j' is taken with respect to it, without g_j' (the mobility force of q_dep with the
    constraint that eliminated it ignored); without inner functions and with direct = source
    this is `reduce_forces`. Raises ValueError on a `direct` of the wrong length or range."""
    direct = tuple(int(k) for k in direct)
    if len(direct) != c.n_full or any(not 0 <= k < n_direct for k in direct):
        raise ValueError(f"direct must give one coordinate in [0, {n_direct}) per engine dof "
                         f"({c.n_full}), got {direct}")
    x = q[np.asarray(c.source, dtype=np.int32)] if c.n_full else jnp.zeros(0, q.dtype)
    if c.inner_breaks is not None:
        x = evaluate_padded(c.inner_breaks, c.inner_origins, c.inner_coefficients, x)[0]
    slope = evaluate_padded(c.breaks, c.origins, c.coefficients, x)[1]
    return jax.ops.segment_sum(slope * tau_full, np.asarray(direct, dtype=np.int32),
                               num_segments=n_direct)


def check_coupled_model(model: Model, c: CoordinateCoupling) -> None:
    """Raise ValueError unless `model` has n_full hinge/slide dofs with qpos0 = 0."""
    if model.n_v != c.n_full or model.n_q != c.n_full:
        raise ValueError(f"the coupling moves {c.n_full} engine dofs but the model has "
                         f"n_q = {model.n_q}, n_v = {model.n_v}")
    bad = [JointType(t).name for t in model.joint_type
           if t not in (JointType.HINGE, JointType.SLIDE)]
    if bad:
        raise ValueError(f"coupled coordinates need hinge and slide joints only, got {bad}")
    if np.any(np.asarray(model.qpos0) != 0.0):
        raise ValueError("coupled coordinates need qpos0 = 0 (no joint `ref`)")
