"""Derivatives in every mode of a function that runs early-exit loops (`lax.while_loop`).

JAX differentiates a `while_loop` in forward mode only. OpenSim's wrap constructions iterate
until a test passes (the cylinder's tangency adjustment, `opensim_cylinder.py`; the
ellipsoid's Newton and Levenberg-Marquardt solves, `opensim_ellipsoid.py`), and an early exit
saves most of the trips of a fixed-trip loop. `LoopDerivatives` makes such a function
differentiable in both modes: the first (second, third) derivative tensor of the function
is taken in forward mode through the loops and contracted with the input tangent, a linear
map that reverse mode can transpose. The loop's derivative is that of its trips composed,
exactly as in a fixed-trip loop (a trip count is piecewise constant in the inputs), so the
derivatives are those of what the loop computes, not of the fixed point it approaches.

The function is `flat(points, rest, *aux) -> (n_out,)`: `points` (n_p,) the inputs that
always vary (a segment's end points), `rest` (n_r,) parameters that usually do not (a wrap
object's dimensions), `aux` non-differentiable arguments (integers, booleans; traced or not).
When the tangent of `rest` is a symbolic zero (model constants under derivatives with respect
to q) the next tensor is taken with respect to `points` alone (n_p instead of n_p + n_r
forward-mode directions per order). Up to `orders` (3) in any combination of modes; beyond
that, forward mode only (the innermost tensor is differentiated by JAX itself).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

#: Axes of a derivative tensor: with respect to `points` alone, or to (points, rest).
POINTS, ALL = "points", "all"


def _jacfwd_points(fn):
    """jacfwd of fn(pp, rl, *aux) with respect to pp: a new last axis of n_p."""
    def jac(pp, rl, *aux):
        return jax.jacfwd(lambda x: fn(x, rl, *aux))(pp)
    return jac


def _jacfwd_all(fn):
    """jacfwd of fn(pp, rl, *aux) with respect to z = (pp, rl): a new last axis of n_p + n_r."""
    def jac(pp, rl, *aux):
        n = pp.shape[0]
        return jax.jacfwd(lambda z: fn(z[:n], z[n:], *aux))(jnp.concatenate([pp, rl]))
    return jac


class LoopDerivatives:
    """`flat` (module docstring) with derivative rules for reverse mode: call it as `flat`.

    `tensor(axes)` is the derivative tensor with one axis per entry of `axes` (POINTS: n_p,
    ALL: n_p + n_r, in that order after the output axis), itself differentiable in both modes
    while the total order stays within `orders`."""

    def __init__(self, flat: Callable, orders: int = 3):
        self._flat = flat
        self.orders = orders

    def __call__(self, points, rest, *aux):
        return self.tensor(())(points, rest, *aux)

    def _nested_jacfwd(self, axes: tuple, points, rest, *aux):
        fn = self._flat
        for axis in axes:
            fn = _jacfwd_points(fn) if axis == POINTS else _jacfwd_all(fn)
        return fn(points, rest, *aux)

    @functools.lru_cache(maxsize=None)  # noqa: B019 (module-level instances, never freed)
    def tensor(self, axes: tuple):
        """The tensor `axes` as a function of (points, rest, *aux): its JVP is its value
        (through itself, so that the rule is used again one order up) and the next tensor
        contracted with the input tangent."""
        def value(points, rest, *aux):
            return self._nested_jacfwd(axes, points, rest, *aux)

        if len(axes) >= self.orders:
            return value
        fn = jax.custom_jvp(value)

        def _jvp(primals, tangents):
            out = fn(*primals)
            t_points, t_rest = tangents[0], tangents[1]
            points_zero = isinstance(t_points, SymbolicZero)
            if isinstance(t_rest, SymbolicZero):
                if points_zero:
                    return out, jnp.zeros_like(out)
                return out, jnp.tensordot(self.tensor(axes + (POINTS,))(*primals), t_points,
                                          axes=1)
            if points_zero:
                t_points = jnp.zeros_like(primals[0])
            tangent = jnp.concatenate([t_points, t_rest])
            return out, jnp.tensordot(self.tensor(axes + (ALL,))(*primals), tangent, axes=1)

        fn.defjvp(_jvp, symbolic_zeros=True)
        return fn
