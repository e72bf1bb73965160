"""Scalar root finding for the muscle solves: fixed iteration count, implicit derivatives.

`bracketed_root(g, a, b, x0, max_iter)` finds x with g(x) = 0 between a and b, where g(a)
and g(b) have opposite signs, by a safeguarded Newton iteration (Numerical Recipes `rtsafe`:
Newton step, or bisection when the step leaves the bracket or does not shrink fast enough) in a
`lax.while_loop` that stops when the step is a few ulps of x (or after max_iter), so it runs
under jit and vmap (lanes run until all have converged). The bracket always keeps a sign
change, so the iteration converges to a root even when g is not monotone.

Derivatives of the root with respect to anything g closes over come from the
implicit-function theorem via `jax.lax.custom_root` (dx = -(dg/dtheta) / g'(x)), never from
the iterations. The residual g(x) at the returned x is also returned (not differentiated),
so callers can report convergence.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: The iteration stops when a step is below STEP_ULPS ulps of max(|x|, 1e-6 initial bracket
#: width): Newton has converged quadratically, or the bisection bracket has collapsed.
STEP_ULPS = 8.0


def _rtsafe(g, a, b, x0, max_iter: int):
    a_negative = g(a) < 0.0
    eps = jnp.finfo(jnp.result_type(float)).eps
    scale = 1e-6 * jnp.abs(b - a)

    def body(carry):
        i, x, a, b, dx_old, _ = carry
        gx, dg = jax.jvp(g, (x,), (jnp.ones_like(x),))
        same = (gx < 0.0) == a_negative
        a = jnp.where(same, x, a)
        b = jnp.where(same, b, x)
        lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
        newton = x - gx / jnp.where(dg != 0.0, dg, 1.0)
        ok = ((dg != 0.0) & (newton >= lo) & (newton <= hi) & jnp.isfinite(newton)
              & (jnp.abs(2.0 * gx) <= jnp.abs(dx_old * dg)))
        # g(x) == 0: x is the root, kept whatever the safeguard says (with `ok` false there,
        # e.g. a NaN derivative, or a residual rounded differently where the step is tested,
        # the loop used to stop on the residual but return the bisection midpoint). Done is
        # judged on the step actually taken, so the stop and the returned x always agree.
        x_new = jnp.where(gx == 0.0, x, jnp.where(ok, newton, 0.5 * (a + b)))
        step = jnp.abs(x_new - x)
        done = step <= STEP_ULPS * eps * jnp.maximum(jnp.abs(x), scale)
        return i + 1, x_new, a, b, step, done

    def cond(carry):
        i, _, _, _, _, done = carry
        return (i < max_iter) & ~done

    x0 = jnp.clip(x0, jnp.minimum(a, b), jnp.maximum(a, b))
    init = (0, x0, a, b, jnp.abs(b - a), jnp.zeros((), dtype=bool))
    return jax.lax.while_loop(cond, body, init)[1]


def bracketed_root(g, a, b, x0, max_iter: int):
    """(x, residual): root of the scalar function g in the sign-changing bracket [a, b]
    (either order), starting at x0; differentiable by the implicit-function theorem. If g(a)
    and g(b) have the same sign the result is an end of the bracket and |residual| is large."""
    a = jax.lax.stop_gradient(a)
    b = jax.lax.stop_gradient(b)
    x0 = jax.lax.stop_gradient(x0)
    x = jax.lax.custom_root(g, x0, lambda f, guess: _rtsafe(f, a, b, guess, max_iter),
                            tangent_solve=lambda lin, y: y / lin(1.0))
    return x, jax.lax.stop_gradient(g(x))


def increasing_root(g, x0, min_slope, max_iter: int):
    """(x, residual): root of a strictly increasing g with g' >= min_slope > 0 everywhere.
    The bracket follows from the slope bound: the root lies between x0 and x0 - g(x0)/min_slope."""
    x0 = jax.lax.stop_gradient(x0)
    g0 = jax.lax.stop_gradient(g(x0))
    other = x0 - g0 / jax.lax.stop_gradient(min_slope)
    return bracketed_root(g, x0, other, x0, max_iter)
