"""The guarded functions of paths/safe.py against NumPy's unguarded ones.

Where NumPy's function is defined and its derivative finite, the values agree to roundoff
(2 ulp-scale, 1e-15 absolute on values of order 1). At the guarded points the values are
MuJoCo's or the closed-form limits, and the derivatives are finite (the reason for the guards:
an unselected branch's inf times a zero cotangent is NaN). A NaN argument gives NaN, as the
unguarded function does: a guard that sent NaN to its fallback made a NaN configuration's path
lengths 0 m."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import configure_jax

configure_jax()

from myotwin.paths import safe  # noqa: E402

ORDINARY = np.array([0.3, 0.999, 1e-12, 0.5])


def test_values_match_numpy_on_ordinary_arguments():
    np.testing.assert_allclose(safe.safe_sqrt(ORDINARY), np.sqrt(ORDINARY), rtol=0, atol=1e-15)
    for x in (ORDINARY, -ORDINARY):
        np.testing.assert_allclose(safe.safe_acos(x), np.arccos(x), rtol=0, atol=1e-15)
        np.testing.assert_allclose(safe.safe_asin(x), np.arcsin(x), rtol=0, atol=1e-15)
    y, x = np.array([0.3, -0.2, 1.0, 0.0]), np.array([-0.7, -0.1, 0.0, -2.0])
    np.testing.assert_allclose(safe.safe_atan2(y, x), np.arctan2(y, x), rtol=0, atol=1e-15)


def test_guarded_points_have_limit_values_and_finite_derivatives():
    edges = {
        "sqrt": (safe.safe_sqrt, np.array([0.0, -1.0]), np.array([0.0, 0.0])),
        "acos": (safe.safe_acos, np.array([1.0, -1.0, 1.5]), np.array([0.0, np.pi, 0.0])),
        "asin": (safe.safe_asin, np.array([1.0, -1.0, -2.0]),
                 np.array([0.5 * np.pi, -0.5 * np.pi, -0.5 * np.pi])),
    }
    for name, (fn, x, expected) in edges.items():
        np.testing.assert_array_equal(np.asarray(fn(jnp.asarray(x))), expected, err_msg=name)
        grad = jax.vmap(jax.grad(fn))(jnp.asarray(x))
        assert np.all(np.isfinite(np.asarray(grad))), name
    assert float(safe.safe_atan2(0.0, 0.0)) == 0.0
    assert np.all(np.isfinite(np.asarray(jax.grad(safe.safe_atan2, (0, 1))(0.0, 0.0))))
    # mju_normalize3: a vector shorter than mjMINVAL becomes (1, 0, 0)
    unit, n = safe.normalize_mj(jnp.array([1e-16, 0.0, 0.0]))
    np.testing.assert_array_equal(np.asarray(unit), [1.0, 0.0, 0.0])
    assert np.all(np.isfinite(np.asarray(jax.grad(lambda v: safe.norm(v))(jnp.zeros(3)))))


def test_nan_arguments_give_nan():
    nan = jnp.array([np.nan])
    for fn in (safe.safe_sqrt, safe.safe_acos, safe.safe_asin):
        assert np.isnan(np.asarray(fn(nan))).all(), fn.__name__
    assert np.isnan(float(safe.safe_atan2(jnp.nan, 1.0)))
    assert np.isnan(float(safe.safe_atan2(1.0, jnp.nan)))
    assert np.isnan(np.asarray(safe.normalize_mj(jnp.array([np.nan, 0.0, 0.0]))[0])).all()
    assert np.isnan(float(safe.safe_div(1.0, jnp.nan)))
