"""muscle.solve: the safeguarded Newton root finders against closed-form roots.

Each test compares with a root known in closed form (tolerance: a few ulps of the root, the
loop's own stopping rule, STEP_ULPS = 8) or with the implicit-function derivative of that
closed form (1e-12 relative: one division away from the root).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import configure_jax
from myotwin.muscle.solve import bracketed_root, increasing_root

configure_jax()


def _kinked_line(root):
    """g(x) = x - root, written so that g'(root) is NaN (sqrt(u**2)' = u / |u| = 0/0 at u = 0):
    Newton from any point lands exactly on the root, where the derivative is unusable."""
    def g(x):
        u = x - root
        return jnp.sign(u) * jnp.sqrt(u * u)
    return g


def test_root_reached_exactly_is_kept_when_its_derivative_is_unusable():
    # Session 63: the loop stopped on g(x) == 0 but returned the bisection midpoint it had just
    # chosen (the Newton step was refused there), a result 0.125 away from the root. In a
    # compiled rollout the same happened to a damped fiber's velocity solve (why the step was
    # refused there was not pinned down; see docs/osim.md): RK4 on the gait model moved
    # by 1e-5 rad for a 1e-12 change of its input (tests/osim/test_osim_forward_gait.py).
    x, residual = jax.jit(lambda: bracketed_root(_kinked_line(0.5), 0.0, 1.0, 0.25, 60))()
    assert float(x) == 0.5
    assert float(residual) == 0.0


@pytest.mark.parametrize("c", [2.0, 0.3, 17.0])
def test_cube_root_and_its_implicit_derivative(c):
    def root(c):
        return bracketed_root(lambda x: x ** 3 - c, 0.0, 3.0, 1.0, 60)[0]

    x = float(jax.jit(root)(c))
    assert abs(x - c ** (1.0 / 3.0)) <= 8 * np.finfo(float).eps * c ** (1.0 / 3.0)
    slope = float(jax.grad(root)(c))
    assert slope == pytest.approx(c ** (-2.0 / 3.0) / 3.0, rel=1e-12)


def test_increasing_root_brackets_from_the_slope_bound():
    # g(x) = 0.1 x + tanh(x) - t: increasing with slope >= 0.1; the root of a large demand t
    # lies far outside tanh's range, reached only through the slope bound's bracket
    for t in (-3.0, -0.2, 0.0, 0.7, 5.0):
        x, residual = increasing_root(lambda x: 0.1 * x + jnp.tanh(x) - t, jnp.zeros(()),
                                      0.1, 60)
        assert abs(float(residual)) <= 1e-15
        assert 0.1 * float(x) + np.tanh(float(x)) == pytest.approx(t, abs=1e-15)


def test_vmapped_lanes_converging_at_different_iterations_equal_their_scalar_solves():
    cs = jnp.asarray([1e-6, 0.3, 2.0, 8.0, 26.9])   # roots from 0.01 to 2.996

    def solve(c):
        return bracketed_root(lambda x: x ** 3 - c, 0.0, 3.0, 1.5, 60)[0]

    batched = np.asarray(jax.jit(jax.vmap(solve))(cs))
    single = np.array([float(jax.jit(solve)(c)) for c in cs])
    np.testing.assert_array_equal(batched, single)
    np.testing.assert_allclose(batched, np.cbrt(np.asarray(cs)), rtol=8 * np.finfo(float).eps)
