"""`engine.loop_carry.tied`: the same value, with the batching and tangent status of its
reference, observed through JAX's public API (vmap's `out_axes=None` refuses a batched output;
a custom JVP rule with `symbolic_zeros=True` is handed a symbolic zero for a constant)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.custom_derivatives import SymbolicZero

from myotwin.engine.loop_carry import tied

VALUES = [jnp.zeros((2, 3)), jnp.asarray(jnp.inf), jnp.arange(4, dtype=jnp.int32),
          jnp.zeros(3, bool), jnp.asarray(True)]


@pytest.mark.parametrize("ref", [0.7, -2.0, np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("value", VALUES, ids=["zeros", "inf", "int", "bools", "true"])
def test_value_and_dtype_are_kept_for_any_reference(value, ref):
    out = tied(value, jnp.array([ref, 1.0]))
    assert out.dtype == value.dtype and out.shape == value.shape
    np.testing.assert_array_equal(out, value)


@pytest.mark.parametrize("value", VALUES, ids=["zeros", "inf", "int", "bools", "true"])
def test_batched_where_the_reference_is(value):
    xs = jnp.linspace(0.0, 1.0, 5)
    # a constant is an unbatched output: out_axes=None accepts it ...
    jax.vmap(lambda x: value + jnp.zeros_like(value), out_axes=None)(xs)
    # ... the tied value is batched, which out_axes=None refuses
    with pytest.raises(ValueError, match="out_axes"):
        jax.vmap(lambda x: tied(value, x), out_axes=None)(xs)


def test_a_float_has_a_zero_tangent_that_is_not_symbolic():
    seen = []

    @jax.custom_jvp
    def probe(x, carry):
        return x + jnp.sum(carry)

    def probe_jvp(primals, tangents):
        # the rule runs because x is differentiated; carry's tangent is what is observed
        seen.append(isinstance(tangents[1], SymbolicZero))
        t = tangents[1]
        return probe(*primals), tangents[0] + (0.0 if seen[-1] else jnp.sum(t))

    probe.defjvp(probe_jvp, symbolic_zeros=True)
    for ref in (0.3, np.inf):
        x = jnp.asarray(ref)
        _, plain = jax.jvp(lambda x: probe(x, jnp.zeros(2)), (x,), (1.0,))
        _, tangent = jax.jvp(lambda x: probe(x, tied(jnp.zeros(2), x)), (x,), (1.0,))
        assert float(plain) == 1.0
        assert float(tangent) == 1.0   # the tie adds an exact zero, even for an infinite ref
    assert seen == [True, False, True, False]
