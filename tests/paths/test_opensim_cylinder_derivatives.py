"""Derivatives through OpenSim's tangency loop (`paths/opensim_cylinder.py`), in every mode.

The loop is an early-exit `while_loop`, which JAX differentiates in forward mode only; its
derivatives are supplied by `_derivative_tensor` (the loop's derivative tensors up to the third,
taken in forward mode and contracted with the input tangent). Checked here on two
segments over an unconstrained cylinder (r = 2 cm, 30 cm long) where the wrap is mandatory and
the loop moves the tangent points by 0.3-0.4 mm, so the derivative runs through its trips.

Function: the path length over the cylinder, L(p1, p2) = |r1 - p1| + spiral + |p2 - r2| (m).
Reference: central differences, h = 1e-6 m. For L ~ 0.2 m: rounding eps L / h ~ 1e-11 and
truncation h^2 L'''/6 ~ 1e-12 * 2500 / 6 ~ 4e-10 (L''' ~ 1/r^2 = 2500 /m^2 near the wrap);
for the first derivatives (~1), whose third derivative is ~1/r^3 ~ 1e5: h^2 * 1e5 / 6 ~ 2e-8.
Tolerances 1e-7 (first derivatives) and 1e-6 relative to the largest second derivative;
observed <= 1e-10 and <= 3e-10.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin.paths import opensim_cylinder as oc

from gradient_check import value_and_gradient

jax.config.update("jax_enable_x64", True)

RADIUS_M, LENGTH_M, H = 0.02, 0.3, 1e-6
SEGMENTS = [((0.04, -0.03, -0.06), (-0.03, 0.05, 0.05)),
            ((0.06, 0.0, -0.1), (-0.06, 0.01, 0.1))]


def _length(z, single_wrap=False):
    p1, p2 = z[:3], z[3:]
    res = oc.opensim_cylinder_wrap(p1, p2, RADIUS_M, LENGTH_M, 0, 0, single_wrap)
    return jnp.linalg.norm(res.r1 - p1) + res.length + jnp.linalg.norm(p2 - res.r2)


# compiled once for both segments (second-order compiles take ~10 s each); the length and its
# reverse-mode gradient from one program
_LENGTH, _GRAD_REVERSE = value_and_gradient(_length)
_GRAD_FORWARD = jax.jit(jax.jacfwd(_length))
_HVP_REVERSE_OVER_FORWARD = jax.jit(lambda y, v: jax.grad(lambda x: jax.jvp(_length, (x,),
                                                                           (v,))[1])(y))
_HESS_FORWARD_OVER_FORWARD = jax.jit(jax.jacfwd(jax.jacfwd(_length)))
_HESS_FORWARD_OVER_REVERSE = jax.jit(jax.hessian(_length))


def _central(f, z):
    """Central differences of f (any output shape) along each of z's 6 components: (..., 6)."""
    cols = [(f(z + H * e) - f(z - H * e)) / (2 * H) for e in np.eye(z.size)]
    return np.stack([np.asarray(c) for c in cols], axis=-1)


@pytest.mark.parametrize("segment", SEGMENTS)
def test_derivatives_through_the_tangency_loop(segment):
    z = jnp.asarray(np.concatenate(segment))
    status = oc.opensim_cylinder_wrap(z[:3], z[3:], RADIUS_M, LENGTH_M, 0, 0, False).status
    assert int(status) == oc.MANDATORY_WRAP
    # the loop matters here: without it (a single-wrap path) the length differs
    assert abs(float(_length(z) - _length(z, True))) > 1e-7

    grad_fd = _central(_LENGTH, z)
    for name, g in (("reverse", _GRAD_REVERSE(z)), ("forward", _GRAD_FORWARD(z))):
        err = np.abs(np.asarray(g) - grad_fd).max()
        assert err <= 1e-7, f"{name}-mode gradient: error {err:.2e} vs central differences"

    v = jnp.asarray(np.random.default_rng(0).normal(size=6))
    hess_fd = _central(_GRAD_REVERSE, z)                     # (6, 6)
    scale = np.abs(hess_fd).max()
    for name, got, want in (("reverse over forward", _HVP_REVERSE_OVER_FORWARD(z, v),
                             hess_fd @ np.asarray(v)),
                            ("forward over forward", _HESS_FORWARD_OVER_FORWARD(z), hess_fd),
                            ("forward over reverse (jax.hessian)", _HESS_FORWARD_OVER_REVERSE(z),
                             hess_fd)):
        err = np.abs(np.asarray(got) - want).max() / scale
        assert err <= 1e-6, f"{name}: relative error {err:.2e} vs central differences"


def test_third_derivative_in_reverse_mode():
    """Reverse mode over two forward-mode derivatives, as a gradient through a mass point's
    Jdot qd needs (`myotwin.inertia`): grad of v^T H(z) v against central differences of the
    forward-over-forward v^T H v (h = 1e-6: truncation h^2 L^(5) / 6 ~ 1e-12 * 1 / r^4 / 6
    ~ 3e-7 vs third derivatives ~ 1 / r^2 ~ 2500; tolerance 1e-5 relative; observed 7e-10).
    Beyond this order the loop differentiates in forward mode only."""
    z = jnp.asarray(np.concatenate(SEGMENTS[0]))
    v = jnp.asarray(np.random.default_rng(1).normal(size=6))

    def curvature(x):
        return jax.jvp(lambda y: jax.jvp(_length, (y,), (v,))[1], (x,), (v,))[1]

    value, gradient = value_and_gradient(curvature)
    got = np.asarray(gradient(z))
    want = _central(value, z)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= 1e-5, f"relative error {err:.2e} vs central differences"


def test_derivatives_with_respect_to_radius_and_length():
    """The loop's derivative tensors drop the radius and length directions when those are
    constants (their tangent a symbolic zero) and keep them when a caller differentiates with
    respect to them: gradient (both modes) and Hessian of L(p1, p2, radius, length) against
    central differences (h = 1e-6; the radius enters like the end points, so the same
    tolerances as above hold; the length of the cylinder only sets where the wrap ends, so
    its derivative here is zero, and central differences give zero too)."""
    def length_all(x):
        p1, p2, radius, length_m = x[:3], x[3:6], x[6], x[7]
        res = oc.opensim_cylinder_wrap(p1, p2, radius, length_m, 0, 0, False)
        return jnp.linalg.norm(res.r1 - p1) + res.length + jnp.linalg.norm(p2 - res.r2)

    x = jnp.asarray(np.concatenate(SEGMENTS[0] + ((RADIUS_M, LENGTH_M),)))
    value, grad_reverse = value_and_gradient(length_all)
    grad_fd = _central(value, x)
    assert abs(grad_fd[6]) > 0.1          # the radius matters: the wrap's arc grows with it
    for name, g in (("reverse", grad_reverse(x)), ("forward", jax.jit(jax.jacfwd(length_all))(x))):
        err = np.abs(np.asarray(g) - grad_fd).max()
        assert err <= 1e-7, f"{name}-mode gradient: error {err:.2e} vs central differences"
    hess_fd = _central(grad_reverse, x)                       # (8, 8)
    err = np.abs(np.asarray(jax.jit(jax.hessian(length_all))(x)) - hess_fd).max()
    assert err / np.abs(hess_fd).max() <= 1e-6, f"Hessian: relative error {err:.2e}"
