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
on scalars (Cholesky-Banachiewicz, entry by entry; forward and back substitution as sums of
scalar-times-row products): no custom call, the same arithmetic as LAPACK's unblocked
algorithm up to the order of the sums. Under `vmap` every scalar operation is one operation
on a contiguous batch vector; the column-oriented form used until session 12 (a rank-1
update of the (n, n) trailing block per column) made strided kernels there. Session 12
(scratch A/B, frog, one CPU): the batched forward dynamics 6.6 -> 5.4 us per state, the
frog's batched RK4 rollout 3.2 -> 4.0e4 steps/s at 1024 states, the single trajectory's
step 33 -> 30 us (benchmarks/RESULTS.md). Larger systems use
LAPACK. The bound is set from measurements (`benchmarks/engine.py`), not derived, and is
not measured above n = 10, the largest model benchmarked: with n_v = 6 (the
4-link chain, the free body) and 3 (the inertial chain) the whole-loop rollout was 1.3-3x
faster than before (session 9); the frog (n_v = 10, contacts, limits) was first 2x *slower*
with the unrolled solve (87 -> 188-202 us per RK4 step), because its loop still held
scatters and YNNPACK dots and so ran on the per-kernel executor, where the unrolled solve is
many more kernels. Without those (session 10: limits.py's rows, `spatial.mat_mat`) it is
compiled whole and takes 41 us, against mj_step's 41 us, and took 30-34 us once the
column-oriented factor of that time updated only the trailing block (n^3 / 3 multiply-adds
rather than n^3; session 11); the scalar form above then took it to 21-23 us. Under `vmap` the
frog's one-device batch (2.2-2.8e4 steps/s) is now faster than the 1.9e4 measured earlier in
the session with LAPACK (engine.md "Performance", tenth session); rechecked in the eleventh
(scratch, 1024 x 50, unpinned, alternating runs): 4.2-4.5e4 steps/s unrolled, 3.7-4.1e4 with LAPACK for
M (SMALL_N = 8), so a batch-only LAPACK rule would not pay. The limit QP factors a
matrix of one row per limited hinge side: more than 8 limited hinges (over 16 rows) put a
LAPACK call, and so the per-kernel executor, back into the step. Both routes are
differentiable (autodiff through the unrolled loop; JAX's rules for LAPACK's).

Derivatives. Differentiated entry by entry, the unrolled loops make the reverse pass of a
rollout one large whole-compiled loop, and LLVM's compile time of that one function grows
steeply with n and with what else the step holds: the equality tests' 14-dof model (13
constraint rows) compiled its RK4 rollout's gradient for 430 s, a 14-hinge chain's for 126 s
(engine.md "Performance", thirty-sixth session; `benchmarks/gradient_routes.py`). So for
GRAD_SMALL_N < n <= SMALL_N the factor and the solves are `custom_jvp` functions whose value
is the unrolled loops' and whose derivative is LAPACK's (JAX's rules for potrf and trsm,
value and tangent both): undifferentiated code (a forward rollout, `vmap`) keeps the
whole-compiled loop; a derivative calls LAPACK, is not compiled whole, and compiles in 17-56 s
on those models, but its steps run 1.6-2.5x slower than the unrolled route's. At
n <= GRAD_SMALL_N the unrolled loops are differentiated as they are (the 2-4-dof models of the
inertial benchmark and the reaching reproduction). GRAD_SMALL_N is read when a function is
traced: set it to SMALL_N first to take the unrolled route's faster gradient steps at its
compile time.

`Factor` is a NamedTuple (lower (n, n), small) so that one factorisation can be reused for
several right-hand sides (limits.py reuses forward dynamics' factor of M).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl


#: Largest n factored by the unrolled loops (measured: module docstring).
SMALL_N = 16
#: Largest n whose derivatives go through the unrolled loops; for GRAD_SMALL_N < n <= SMALL_N
#: a derivative is computed by LAPACK (`_lapack_when_differentiated`; measured: module
#: docstring).
GRAD_SMALL_N = 8


class Factor(NamedTuple):
    """Cholesky factor of an SPD matrix A = L L^T: `lower` (n, n) L (lower triangular; for
    n > SMALL_N, jax.scipy's cho_factor output, whose upper triangle is not zeroed)."""

    lower: jax.Array


def _rows(x: jax.Array) -> list[jax.Array]:
    """x's rows x[0], x[1], ... by one `lax.split`: its transpose is one concatenation, where
    reverse mode turns each indexed row x[i] of a differentiated x into a pad kernel."""
    return [r.reshape(x.shape[1:]) for r in jax.lax.split(x, (1,) * x.shape[0])]


def _entries(x: jax.Array) -> list[list[jax.Array]]:
    """x[i, j] of an (n, m, ...) array as nested lists, by splits (`_rows`) of x and of its
    rows (splitting a reshaped (n m, ...) x instead made the frog's batch slower)."""
    return [_rows(r) for r in _rows(x)]


def _unrolled_factor(a: jax.Array) -> jax.Array:
    """(n, n) L with A = L L^T entry by entry (Cholesky-Banachiewicz): L_jj = sqrt(A_jj -
    sum_k<j L_jk^2), L_ij = (A_ij - sum_k<j L_ik L_jk) / L_jj for i > j. About n^3 / 6
    multiply-adds on scalars: under `vmap` every one is an operation on a contiguous batch
    vector, where a column-oriented update on (n, n) slices is a strided kernel per column."""
    n = a.shape[-1]
    a = _entries(a)
    low = [[None] * n for _ in range(n)]
    for j in range(n):
        diag = a[j][j]
        for k in range(j):
            diag = diag - low[j][k] * low[j][k]
        low[j][j] = jnp.sqrt(diag)
        inv = 1.0 / low[j][j]
        for i in range(j + 1, n):
            entry = a[i][j]
            for k in range(j):
                entry = entry - low[i][k] * low[j][k]
            low[i][j] = entry * inv
    zero = jnp.zeros((), dtype=low[0][0].dtype)
    return jnp.stack([jnp.stack([low[i][j] if j <= i else zero for j in range(n)])
                      for i in range(n)])


def _lapack_when_differentiated(unrolled, lapack, n: int):
    """`unrolled` for n <= GRAD_SMALL_N; above, a function whose value is `unrolled`'s but
    whose JVP (and so its reverse-mode derivative, JAX's transpose of that JVP) is `lapack`'s:
    value and tangent both by LAPACK through JAX's own derivative rules. Under differentiation
    the unrolled loops would be differentiated entry by entry, and the differentiated step
    compiled whole is one LLVM function whose compile time grows steeply with n (module
    docstring); LAPACK's custom calls keep the differentiated loop off whole-loop compilation.
    The two values differ by roundoff only (the same algorithm, sums in another order)."""
    if n <= GRAD_SMALL_N:
        return unrolled
    switched = jax.custom_jvp(unrolled)
    switched.defjvp(lambda primals, tangents: jax.jvp(lapack, primals, tangents))
    return switched


def _lapack_factor(a: jax.Array) -> jax.Array:
    """LAPACK's lower factor of a (its lower triangle read, the upper one zero)."""
    return jax.lax.linalg.cholesky(a, symmetrize_input=False)


def _lapack_solve_lower(lower: jax.Array, b: jax.Array) -> jax.Array:
    """y with L y = b by LAPACK (trsm)."""
    return jsl.solve_triangular(lower, b, lower=True)


def _lapack_solve(lower: jax.Array, b: jax.Array) -> jax.Array:
    """x with L L^T x = b by LAPACK (two trsm)."""
    return jsl.cho_solve((lower, True), b)


def factor(a: jax.Array) -> Factor:
    """Cholesky factor of the SPD matrix a (n, n). A matrix that is not positive definite
    gives NaN entries (as LAPACK's potrf through JAX), which the integrators' divergence
    checks report."""
    n = a.shape[-1]
    if n == 0:
        return Factor(a)
    if n <= SMALL_N:
        return Factor(_lapack_when_differentiated(_unrolled_factor, _lapack_factor, n)(a))
    return Factor(jsl.cho_factor(a, lower=True)[0])


def _forward(lower: jax.Array, b: jax.Array) -> jax.Array:
    """y with L y = b (b (n, k)), one row at a time: y_i = (b_i - sum_k<i L_ik y_k) / L_ii,
    as scalar-times-row products (contiguous under `vmap`, like the factor)."""
    low, rows = _entries(lower), _rows(b)
    ys = []
    for i in range(len(rows)):
        acc = rows[i]
        for k in range(i):
            acc = acc - low[i][k] * ys[k]
        ys.append(acc / low[i][i])
    return jnp.stack(ys)


def _backward(lower: jax.Array, y: jax.Array) -> jax.Array:
    """x with L^T x = y (y (n, k)), from the last row: x_i = (y_i - sum_k>i L_ki x_k) / L_ii."""
    n = lower.shape[0]
    low, rows = _entries(lower), _rows(y)
    xs = [None] * n
    for i in reversed(range(n)):
        acc = rows[i]
        for k in range(i + 1, n):
            acc = acc - low[k][i] * xs[k]
        xs[i] = acc / low[i][i]
    return jnp.stack(xs)


def solve_lower(fac: Factor, b: jax.Array) -> jax.Array:
    """y with L y = b (forward substitution only) for the factor L of A = L L^T; b (n, k).
    A = L L^T gives B^T A^-1 B = Y^T Y with Y = L^-1 B (limits.py's J M^-1 J^T)."""
    n = fac.lower.shape[-1]
    if n > SMALL_N:
        return _lapack_solve_lower(fac.lower, b)
    if n == 0:
        return b
    return _lapack_when_differentiated(_forward, _lapack_solve_lower, n)(fac.lower, b)


def lower_inverse_columns(fac: Factor, columns) -> dict[int, dict[int, jax.Array]]:
    """Columns d of L^-1 (`columns`: static dof indices) for the factor L of A = L L^T
    (n <= SMALL_N), as {d: {row k: scalar}} over rows k >= d only: L^-1 e_d is zero above row
    d, so each is a forward substitution over the rows below it, on scalars (no work on the
    structural zeros, which `solve_lower` with a unit right-hand side would do).
    (A^-1)[d, e] = sum_k z_d[k] z_e[k] (limits.py's hinge rows)."""
    n = fac.lower.shape[-1]
    if n > SMALL_N:
        raise ValueError(f"lower_inverse_columns: n = {n} > SMALL_N = {SMALL_N} (unrolled "
                         "scalars only)")
    columns = tuple(sorted(set(int(c) for c in columns)))

    def lapack(low):
        z = _lapack_solve_lower(low, jnp.eye(n, dtype=low.dtype)[:, list(columns)])
        return {d: {k: z[k, i] for k in range(d, n)} for i, d in enumerate(columns)}

    return _lapack_when_differentiated(
        lambda low: _unrolled_inverse_columns(low, columns), lapack, n)(fac.lower)


def _unrolled_inverse_columns(lower: jax.Array, columns) -> dict[int, dict[int, jax.Array]]:
    """`lower_inverse_columns` on scalars (the columns sorted, unique)."""
    n = lower.shape[-1]
    low = _entries(lower)
    inv_diag = [1.0 / low[k][k] for k in range(n)]
    out = {}
    for d in columns:
        z = {d: inv_diag[d]}
        for k in range(d + 1, n):
            acc = low[k][d] * z[d]
            for j in range(d + 1, k):
                acc = acc + low[k][j] * z[j]
            z[k] = -acc * inv_diag[k]
        out[d] = z
    return out


def solve(fac: Factor, b: jax.Array) -> jax.Array:
    """x with A x = b for A = L L^T (`factor`); b (n,) or (n, k)."""
    n = fac.lower.shape[-1]
    if n > SMALL_N:
        return _lapack_solve(fac.lower, b)
    if n == 0:
        return b
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    x = _lapack_when_differentiated(
        lambda low, y: _backward(low, _forward(low, y)), _lapack_solve, n)(fac.lower, rhs)
    return x[:, 0] if vector else x
