"""Loop carries that JAX's transformation rules see as batched and differentiated from the
start: `tied(value, ref)`.

Under `vmap`, JAX's `while_loop` and `scan` rules find which carries are batched by a
fixed-point iteration: they batch the loop body with the initial values' status, and if a
carry initialised from a constant (a zero position, a flag, an index order) comes out
batched, they batch the body again with that carry promoted. `jvp` does the same for carries
whose initial tangent is zero. Each pass transforms the whole body, and a pass of an outer
loop transforms every loop nested in it. A carry initialised with `tied(value, ref)`, where
`ref` is a quantity the loop's result depends on anyway, has its status from the start, so
each rule transforms the body once.

Used where it was measured to pay: OpenSim's wrap repetitions (`paths/opensim_path.py`, whose
body holds every wrap construction and its derivative rules): arm26's lengths and moment
arms traced and lowered in 13.0-14.5 s instead of 16.6-17.9 s, the mass points' Jdot qd in
12 s instead of 15-16 s (benchmarks/RESULTS.md, "Program size", session 44). Tried and not
kept, for no gain beyond the noise: the loops of OpenSim's ellipsoid construction (lowering
-1 s, compile +0.8 s: a scratch script tracing the `--arm26-moment-arms` program, two runs),
RK4's stage loop and MuJoCo's inside-wrap Newton loop (`paths/circle.py`; both measured with
`benchmarks/program_size.py --muscles` on myoelbow's gradient).

Same values: a float gets `ref`'s tangent times 0 (a non-finite `ref` replaced by 0 first),
other dtypes a selection between two equal values. The loops run the same trips, and the
compiled programs carry the same batched quantities as before (they were promoted anyway).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def tied(value, ref: jax.Array) -> jax.Array:
    """`value` (any dtype and shape) depending on `ref` (a non-empty array; its first element
    is used): batched wherever `ref` is and, for floats, with a (zero) tangent wherever `ref`
    has one."""
    value = jnp.asarray(value)
    r = jnp.ravel(ref)[0]
    if jnp.issubdtype(value.dtype, jnp.inexact):
        return value + (jnp.where(jnp.isfinite(r), r, 0.0) * 0.0).astype(value.dtype)
    return jnp.where(r == r, value, value)
