"""Cholesky factorisation and solves of the engine's small SPD systems, in plain XLA operations.

The engine solves M(q) qdd = f (dynamics.py) and the joint-limit QP's small systems
(limits.py) every dynamics evaluation. `jax.scipy.linalg.cho_factor`/`cho_solve` lower to
LAPACK custom calls (potrf, trsm) on the CPU. XLA's CPU compiler can compile a whole small
`while` loop (a `lax.scan` rollout) into one function and run it without its per-kernel
dispatch (its `SmallWhileLoopHoistingPass`, enabled in `myotwin.configure_jax`), but only if
the loop contains no custom call: one LAPACK call per step keeps every step on the thunk
executor, which dispatches each of the step's ~100-400 kernels separately (benchmarks/
RESULTS.md, session 9: the benchmark chain's RK4 step 11 -> 3.7 us, the tendon-driven
chain's 23-44 -> 6.7 us).

For n <= `SMALL_N` this module therefore factors and solves with statically unrolled loops
(right-looking Cholesky: one rank-1 update of the trailing matrix per column; forward and
back substitution one row at a time): O(n) fused array operations, no custom call, the same
arithmetic as LAPACK's unblocked algorithm up to the order of the sums. Larger systems use
LAPACK. The bound is set from measurements (`benchmarks/engine.py`), not derived, and is
not measured above n = 10, the largest model benchmarked: with n_v = 6 (the
4-link chain, the free body) and 3 (the inertial chain) the whole-loop rollout was 1.3-3x
faster than before (session 9); the frog (n_v = 10, contacts, limits) was first 2x *slower*
with the unrolled solve (87 -> 188-202 us per RK4 step), because its loop still held
scatters and YNNPACK dots and so ran on the per-kernel executor, where the unrolled solve is
many more kernels. Without those (session 10: limits.py's rows, `spatial.mat_mat`) it is
compiled whole and takes 41 us, against mj_step's 41 us, and 30-34 us since the factor
updates only the trailing block (n^3 / 3 multiply-adds rather than n^3). Under `vmap` the
frog's one-device batch (2.2-2.8e4 steps/s) is now faster than the 1.9e4 measured earlier in
the session with LAPACK (engine.md "Performance", tenth session); rechecked in the eleventh
(scratch, 1024 x 50, unpinned, alternating runs): 4.2-4.5e4 steps/s unrolled, 3.7-4.1e4 with LAPACK for
M (SMALL_N = 8), so a batch-only LAPACK rule would not pay. The limit QP factors a
matrix of one row per limited hinge side: more than 8 limited hinges (over 16 rows) put a
LAPACK call, and so the per-kernel executor, back into the step. Both routes are
differentiable (autodiff through the unrolled loop; JAX's rules for LAPACK's).

`Factor` is a NamedTuple (lower (n, n), small) so that one factorisation can be reused for
several right-hand sides (limits.py reuses forward dynamics' factor of M).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from myotwin.engine.spatial import mat_mat

#: Largest n factored by the unrolled loops (measured: module docstring).
SMALL_N = 16


class Factor(NamedTuple):
    """Cholesky factor of an SPD matrix A = L L^T: `lower` (n, n) L (lower triangular; for
    n > SMALL_N, jax.scipy's cho_factor output, whose upper triangle is not zeroed)."""

    lower: jax.Array


def _unrolled_factor(a: jax.Array) -> jax.Array:
    """(n, n) L with A = L L^T, column by column: l_j = A_j / sqrt(A_jj) on and below the
    diagonal, then the trailing matrix (rows and columns after j, a static slice) loses
    l_j l_j^T. About n^3 / 3 multiply-adds; updating the whole (n, n) matrix each column would
    be n^3, which the per-element cost under `vmap` pays in full."""
    n = a.shape[-1]
    cols = []
    trailing = a
    for j in range(n):
        col = trailing[:, 0] / jnp.sqrt(trailing[0, 0])           # rows j.. of column j
        cols.append(jnp.concatenate([jnp.zeros(j, dtype=a.dtype), col]))
        if j + 1 < n:
            trailing = trailing[1:, 1:] - col[1:, None] * col[None, 1:]
    return jnp.stack(cols, axis=1)


def factor(a: jax.Array) -> Factor:
    """Cholesky factor of the SPD matrix a (n, n). A matrix that is not positive definite
    gives NaN entries (as LAPACK's potrf through JAX), which the integrators' divergence
    checks report."""
    if a.shape[-1] == 0:
        return Factor(a)
    if a.shape[-1] <= SMALL_N:
        return Factor(_unrolled_factor(a))
    return Factor(jsl.cho_factor(a, lower=True)[0])


def _forward(lower: jax.Array, b: jax.Array) -> jax.Array:
    """y with L y = b (b (n, k)), one row at a time: y_i = (b_i - L_i,<i y_<i) / L_ii."""
    ys = []
    for i in range(lower.shape[0]):
        acc = b[i]
        if i:
            acc = acc - mat_mat(lower[i, :i], jnp.stack(ys))
        ys.append(acc / lower[i, i])
    return jnp.stack(ys)


def _backward(lower: jax.Array, y: jax.Array) -> jax.Array:
    """x with L^T x = y (y (n, k)), from the last row: x_i = (y_i - L_>i,i^T x_>i) / L_ii."""
    n = lower.shape[0]
    xs = []                                   # x_(i+1) .. x_(n-1), in that order
    for i in reversed(range(n)):
        acc = y[i]
        if xs:
            acc = acc - mat_mat(lower[i + 1:, i], jnp.stack(xs))
        xs.insert(0, acc / lower[i, i])
    return jnp.stack(xs)


def solve_lower(fac: Factor, b: jax.Array) -> jax.Array:
    """y with L y = b (forward substitution only) for the factor L of A = L L^T; b (n, k).
    A = L L^T gives B^T A^-1 B = Y^T Y with Y = L^-1 B (limits.py's J M^-1 J^T)."""
    n = fac.lower.shape[-1]
    if n > SMALL_N:
        return jsl.solve_triangular(fac.lower, b, lower=True)
    if n == 0:
        return b
    return _forward(fac.lower, b)


def solve(fac: Factor, b: jax.Array) -> jax.Array:
    """x with A x = b for A = L L^T (`factor`); b (n,) or (n, k)."""
    n = fac.lower.shape[-1]
    if n > SMALL_N:
        return jsl.cho_solve((fac.lower, True), b)
    if n == 0:
        return b
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    x = _backward(fac.lower, _forward(fac.lower, rhs))
    return x[:, 0] if vector else x
