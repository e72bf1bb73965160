"""Static row selections and row sums whose reverse mode has no scatter.

The kinematic tree is traversed with gathers along the body and dof axes at indices fixed by
the topology (a body's parent, a dof's joint, a site's body). A gather is one cheap fused
kernel going forward, but its transpose, which reverse mode needs, is a scatter-add: a separate
and, on XLA's CPU backend, slow kernel per gather. Each selection here is a linear map
x -> A x with a constant 0/1 matrix A (n, m). Its value is still computed by gathers (under
`vmap`, by static slices behind the batch axis: `_batch_first`). Its
tangent is written as the dense product sum_m A[i, m] t[m], one broadcast multiply-and-sum
whose transpose is again one, so `jax.grad` through the tree traversal emits no scatter
(engine.md "Performance"). The dense form costs n * m multiply-adds per row element, nothing
for trees of tens of bodies.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np


def take(x: jax.Array, index, axis: int = 0) -> jax.Array:
    """The rows `index` (static integers of any shape, checked against the axis length when
    traced) of x along `axis`, as NumPy indexing: one gather, without the bounds handling of
    jnp.take's default mode, which costs every gather a compare and a select. A 1-D `index`
    of every row in order (a chain's dof -> joint map, hinge-only qpos) returns x itself."""
    index = np.asarray(index, dtype=np.int64)
    axis = axis % x.ndim
    flat = index.reshape(-1)
    if index.ndim == 1 and np.array_equal(flat, np.arange(x.shape[axis])):
        return x  # every row in order: no gather at all
    rows = _take_fn(flat.tobytes(), int(x.shape[axis]), axis)(x)
    return rows.reshape(x.shape[:axis] + index.shape + x.shape[axis + 1:])


def take_pairs(x: jax.Array, first, second, second_axis: int = 1) -> jax.Array:
    """x[first, second] (second_axis 1) or x[first, :, second] (second_axis 2) for static
    1-D integer arrays of equal length: one gather, as NumPy's advanced indexing."""
    first = np.asarray(first, dtype=np.int64).reshape(-1)
    second = np.asarray(second, dtype=np.int64).reshape(-1)
    return _take_pairs_fn(first.tobytes(), second.tobytes(), x.shape[0], x.shape[second_axis],
                          second_axis)(x)


def masked_sum(mask: np.ndarray, x: jax.Array) -> jax.Array:
    """(n, ...) sums sum_m mask[i, m] x[m, ...] for a static 0/1 mask (n, m) and x (m, ...).

    The value is K gathers and additions (K = most nonzeros in a row; rows with fewer read an
    appended zero row), which XLA fuses: a dot with the mask would be a separate library call
    per use, and a reduction under `vmap` a slow generic kernel. The tangent is the dense
    product with the mask (module docstring)."""
    mask = np.asarray(mask, dtype=bool)
    return _masked_sum_fn(mask.tobytes(), mask.shape)(x)


def static_product(matrix: np.ndarray, x: jax.Array) -> jax.Array:
    """matrix @ x for a static NumPy matrix (n, m) and x (m, ...).

    In a single trajectory the value is one broadcast multiply-and-sum, not a dot: XLA's CPU
    backend turns a dot of two matrices into a YNNPACK library fusion, which keeps the loop
    around it from being compiled whole (jax_setup.py). Under `vmap` (a custom_vmap rule) it
    is one GEMM over the whole batch, which is faster there (engine.md "Performance", tenth
    session). The tangent is the dense product (module docstring), for both AD modes."""
    matrix = np.asarray(matrix, dtype=np.float64)
    return _static_product_fn(matrix.tobytes(), matrix.shape)(x)


@functools.lru_cache(maxsize=None)
def _static_product_fn(matrix_bytes: bytes, shape: tuple[int, int]):
    matrix = np.frombuffer(matrix_bytes, dtype=np.float64).reshape(shape)

    @jax.custom_batching.custom_vmap
    def primal(x):
        return _dense_product(matrix, x)

    @primal.def_vmap
    def batched(axis_size, in_batched, x):  # x (batch, m, ...)
        if not in_batched[0]:  # (not primal: that would re-enter this rule)
            return _dense_product(matrix, x), False
        return jnp.einsum("nm,bm...->bn...", jnp.asarray(matrix, dtype=x.dtype), x), True

    return _dense_tangent(primal, matrix)


_MAX_SLICES = 64  # above this many runs a gather (slices would each be an HLO op to compile)


def _static_rows(x: jax.Array, index: np.ndarray, axis: int) -> jax.Array:
    """x's rows `index` (static 1-D) along `axis` as static slices of consecutive runs,
    concatenated: no gather (a gather for more than _MAX_SLICES runs)."""
    if index.size == 0:
        return jax.lax.slice_in_dim(x, 0, 0, axis=axis)
    runs, start = [], 0
    for k in range(1, index.size + 1):
        if k == index.size or index[k] != index[k - 1] + 1:
            runs.append((int(index[start]), int(index[k - 1]) + 1))
            start = k
    if len(runs) > _MAX_SLICES:
        return x[(slice(None),) * axis + (index,)]
    parts = [jax.lax.slice_in_dim(x, a, b, axis=axis) for a, b in runs]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=axis)


def _batch_first(select):
    """`select(x, 0)` (a static selection along x's leading axes) with a `custom_vmap` rule
    that applies `select(x, 1)`, the same selection behind one leading batch axis, written
    with static slices: XLA's CPU compiler rewrites a batched gather to put the gathered rows
    in front of the batch ((rows, batch, ...)) and transposes them back, a layout change in
    every kernel that reads them."""
    @jax.custom_batching.custom_vmap
    def primal(x):
        return select(x, 0)

    @primal.def_vmap
    def batched(axis_size, in_batched, x):  # x (batch, ...)
        if not in_batched[0]:  # (not primal: that would re-enter this rule)
            return select(x, 0), False
        return select(x, 1), True

    return primal


def _dense_product(matrix: np.ndarray, t: jax.Array, axis: int = 0) -> jax.Array:
    """sum_m matrix[i, m] t[..., m, ...] along `axis`: one broadcast multiply and sum."""
    a = jnp.asarray(matrix, dtype=t.dtype)                     # (n, m)
    a = a.reshape(a.shape + (1,) * (t.ndim - axis - 1))       # (n, m, trailing 1s)
    return jnp.sum(a * jnp.expand_dims(t, axis), axis=axis + 1)


def _dense_tangent(primal, matrix: np.ndarray, axis: int = 0):
    """`primal` (a linear map of x along `axis` equal to x -> matrix @ x there) with the JVP
    rule t -> `_dense_product(matrix, t, axis)`."""
    fn = jax.custom_jvp(primal)

    def jvp(primals, tangents):
        # the value through `fn` itself, so that derivatives of this rule (reverse over
        # forward: jax.grad of a jacfwd) use the rule again instead of linearizing the
        # custom_vmap primal, which JAX cannot do
        (x,), (t,) = primals, tangents
        return fn(x), _dense_product(matrix, t, axis)

    fn.defjvp(jvp)
    return fn


@functools.lru_cache(maxsize=None)
def _take_fn(index_bytes: bytes, n_rows: int, axis: int):
    index = np.frombuffer(index_bytes, dtype=np.int64)
    if index.size and (index.min() < 0 or index.max() >= n_rows):
        raise IndexError(f"take: index out of range [0, {n_rows}): {index.min()}..{index.max()}")
    matrix = (index[:, None] == np.arange(n_rows)[None, :]).astype(np.float64)

    def select(x, b):
        if b:
            return _static_rows(x, index, b + axis)
        return x[(slice(None),) * axis + (index,)]

    return _dense_tangent(_batch_first(select), matrix, axis)


@functools.lru_cache(maxsize=None)
def _take_pairs_fn(first_bytes: bytes, second_bytes: bytes, n0: int, n1: int, second_axis: int):
    first = np.frombuffer(first_bytes, dtype=np.int64)
    second = np.frombuffer(second_bytes, dtype=np.int64)
    if first.size and (first.max() >= n0 or second.max() >= n1 or min(first.min(),
                                                                      second.min()) < 0):
        raise IndexError(f"take_pairs: index out of range ({n0}, {n1})")
    flat_index = first * n1 + second
    matrix = (flat_index[:, None] == np.arange(n0 * n1)[None, :]).astype(np.float64)

    def select(x, b):
        if second_axis == 2:  # x[first, :, second]: the paired axes made adjacent first
            x = jnp.moveaxis(x, b + 2, b + 1)
        if b:
            flat = x.reshape(x.shape[:b] + (n0 * n1,) + x.shape[b + 2:])
            return _static_rows(flat, flat_index, b)
        return x[first, second]

    primal = _batch_first(select)
    fn = jax.custom_jvp(primal)

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        t2 = jnp.moveaxis(t, second_axis, 1)                   # (n0, n1, ...)
        # `fn` for the value: higher derivatives use this rule again (`_dense_tangent`)
        return fn(x), _dense_product(matrix, t2.reshape((n0 * n1,) + t2.shape[2:]))

    fn.defjvp(jvp)
    return fn


@functools.lru_cache(maxsize=None)
def _masked_sum_fn(mask_bytes: bytes, shape: tuple[int, int]):
    mask = np.frombuffer(mask_bytes, dtype=bool).reshape(shape)
    n, m = shape
    counts = mask.sum(axis=1)
    k = int(counts.max()) if n else 0
    terms = np.full((n, k), m, dtype=np.int64)  # index m reads the appended zero row
    for i in range(n):
        cols = np.flatnonzero(mask[i])
        terms[i, : cols.size] = cols

    def select(x, b):
        lead, rest = x.shape[:b], x.shape[b + 1:]
        if k == 0:
            return jnp.zeros(lead + (n,) + rest, dtype=x.dtype)
        padded = jnp.concatenate([x, jnp.zeros(lead + (1,) + rest, dtype=x.dtype)], axis=b)

        def rows(j):
            return _static_rows(padded, terms[:, j], b) if b else padded[terms[:, j]]

        out = rows(0)
        for j in range(1, k):
            out = out + rows(j)
        return out

    return _dense_tangent(_batch_first(select), mask.astype(np.float64))
