"""Where XLA's CPU fusion recomputes a value, and how to make it compute the value once.

XLA fuses cheap elementwise producers (products, sums, selects, slices, concatenations) into
every consumer that reads them. When a consumer reads each element of a producer several
times -- a Gram product J^T J reads every column n times, three mass moments read which
points each piece holds three times -- the producer's whole expression is evaluated again
for each read. (Other cases were removed by reformulating instead: one quaternion log per
joint, not per dof, in passive.py; the limit QP's H from static rows, limits.py.) On a single
trajectory that multiplies the arithmetic of small kernels; under `vmap` (one kernel per
fusion, a batch of elements each) it multiplies the per-element cost.

`jax.lax.optimization_barrier` does not prevent this on the CPU backend (XLA removes the
barrier before fusion). A reduction does: XLA does not duplicate a reduction into its
consumers, so `computed_once(x)`, a sum of x and zeros over a stacked axis of two, is
evaluated once into its own buffer (the extra addition is one per element). Used where a
profile showed the recomputation (RESULTS.md, session 11: perf samples of the compiled loop
mapped to XLA's dumped object code, and `jax.profiler` traces of the batched step).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


@jax.custom_batching.custom_vmap
def _summed_with_zeros(x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.stack([x, jnp.zeros_like(x)]), axis=0, dtype=x.dtype)


@_summed_with_zeros.def_vmap
def _batched(axis_size, in_batched, x):
    return x, in_batched[0]


@jax.custom_jvp
def computed_once(x: jax.Array) -> jax.Array:
    """x itself, evaluated once into a buffer of its own (module docstring). Differentiable:
    the tangent passes through as it is. Under `vmap` it returns x: there XLA hands a small
    reduction to a YNNPACK library kernel, slower than the recomputation it would avoid."""
    return _summed_with_zeros(x)


@computed_once.defjvp
def _computed_once_jvp(primals, tangents):
    return computed_once(primals[0]), tangents[0]
