"""Piecewise polynomials of one variable, evaluated in JAX (value and two derivatives).

The functions of OpenSim's models -- a CustomJoint axis driven by its coordinate (the knees'
spline translations, `engine.coupling`), a MovingPathPoint's location (`paths.builder`) -- are
each one piecewise polynomial (`osim.functions.piecewise_polynomial` makes them). This module
holds the form, its checks and the evaluator both use: several functions padded to one table
and evaluated at once, branch-free (the piece is a comparison count), by Horner's rule.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class PiecewisePolynomial(NamedTuple):
    """A function of one variable, polynomial on each of k + 1 pieces (NumPy, float64).

    breaks (k,): increasing; piece 0 is x < breaks[0], piece i (1 <= i < k) is
      breaks[i-1] <= x < breaks[i], piece k is x >= breaks[k-1] (k = 0: one piece, all x).
    origins (k + 1,): the point each piece's polynomial is expanded about.
    coefficients (k + 1, d + 1): ascending powers of (x - origin) on each piece.
    """

    breaks: np.ndarray
    origins: np.ndarray
    coefficients: np.ndarray


def identity_polynomial() -> PiecewisePolynomial:
    """f(x) = x."""
    return PiecewisePolynomial(np.zeros(0), np.zeros(1), np.array([[0.0, 1.0]]))


def check_polynomial(p, what: str) -> PiecewisePolynomial:
    """`p` (anything with breaks, origins and coefficients) as a float64
    `PiecewisePolynomial`; ValueError naming `what` if the shapes disagree, the breaks do not
    increase strictly or a number is not finite."""
    try:
        breaks = np.asarray(p.breaks, np.float64).reshape(-1)
        origins = np.asarray(p.origins, np.float64).reshape(-1)
        coefficients = np.asarray(p.coefficients, np.float64)
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"{what}: expected a PiecewisePolynomial (breaks, origins, "
                         f"coefficients), got {p!r}") from None
    k = breaks.size
    if coefficients.ndim != 2 or coefficients.shape[0] != k + 1 or origins.size != k + 1:
        raise ValueError(f"{what}: {k} breaks need {k + 1} origins and {k + 1} rows of "
                         f"coefficients, got {origins.size} and {coefficients.shape}")
    if np.any(np.diff(breaks) <= 0):
        raise ValueError(f"{what}: breaks must increase strictly, got {breaks.tolist()}")
    for name, a in (("breaks", breaks), ("origins", origins), ("coefficients", coefficients)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what}: {name} must be finite, got {a.tolist()}")
    return PiecewisePolynomial(breaks, origins, coefficients)


def pad_polynomials(functions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n checked functions as one table: breaks (n, k_max) padded with +inf (never reached),
    origins (n, k_max + 1) and coefficients (n, k_max + 1, d_max) zero padded (NumPy)."""
    k_max = max((f.breaks.size for f in functions), default=0)
    d_max = max((f.coefficients.shape[1] for f in functions), default=1)
    n = len(functions)
    breaks = np.full((n, k_max), np.inf)
    origins = np.zeros((n, k_max + 1))
    coefficients = np.zeros((n, k_max + 1, d_max))
    for j, f in enumerate(functions):
        k, d = f.breaks.size, f.coefficients.shape[1]
        breaks[j, :k], origins[j, :k + 1] = f.breaks, f.origins
        coefficients[j, :k + 1, :d] = f.coefficients
    return breaks, origins, coefficients


def evaluate_padded(breaks: jax.Array, origins: jax.Array, coefficients: jax.Array,
                    x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(f, f', f'') (n,) of the n padded functions (`pad_polynomials`), function j at x[j].
    Differentiable (autodiff of f gives f' and f'' too)."""
    piece = jnp.sum(x[:, None] >= breaks, axis=1)
    u = x - jnp.take_along_axis(origins, piece[:, None], axis=1)[:, 0]
    coeff = jnp.take_along_axis(coefficients, piece[:, None, None], axis=1)[:, 0]
    value = jnp.zeros_like(x)
    first = jnp.zeros_like(x)
    second = jnp.zeros_like(x)
    for p in range(coeff.shape[1] - 1, -1, -1):  # Horner on the value and both derivatives
        second = second * u + 2.0 * first
        first = first * u + value
        value = value * u + coeff[:, p]
    return value, first, second
