"""The shared rules of myotwin.scalars for numbers, counts and flags given to the Python API:
each case is one a float()/np.asarray conversion would have let through (True as 1.0, "0.5" as
0.5, "no" as a true flag), or one that must pass (NumPy scalars, tracers of real numbers)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import configure_jax
from myotwin.scalars import (holds_real_numbers, is_integer, number_from_text, require_flag,
                             require_real_numbers)

configure_jax()     # float64, as the entry points


@pytest.mark.parametrize("value", [0.5, 2, np.float32(1.5), np.int64(3), [0.5, 1], [[1, 2]],
                                   np.zeros((2, 3)), jnp.ones(2), [np.float64(1.0), 2.0]])
def test_real_numbers_pass(value):
    assert holds_real_numbers(value)
    require_real_numbers("here", "x", value)


@pytest.mark.parametrize("value", [True, np.bool_(False), "0.5", [0.5, True], [[1.0], [1.0, 2.0]],
                                   np.array([True]), np.array(["1"]), None, 1j])
def test_what_is_not_real_numbers_is_named(value):
    assert not holds_real_numbers(value)
    with pytest.raises(ValueError, match=r"^here: x must be numbers, got "):
        require_real_numbers("here", "x", value)


def test_tracers_are_judged_by_dtype():
    def f(x):
        require_real_numbers("f", "x", x)
        return x
    assert float(jax.jit(f)(jnp.float64(2.0))) == 2.0
    assert float(jax.grad(lambda x: f(x) ** 2)(3.0)) == 6.0
    with pytest.raises(ValueError, match=r"^f: x must be numbers, got a traced bool array of "
                                          r"shape \(2,\)"):
        jax.jit(f)(jnp.array([True, False]))
    with pytest.raises(ValueError, match=r"^f: x must be numbers, got \[a traced bool array "
                                          r"of shape \(\), a traced float64 array of shape "
                                          r"\(\)\]"):
        jax.jit(f)([True, 0.5])


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_flags(value):
    assert require_flag("here", "flag", value) is bool(value)


@pytest.mark.parametrize("value", ["no", 0, 1, 1.0, None, np.array([True])])
def test_what_is_not_a_flag_is_named(value):
    with pytest.raises(ValueError, match=r"^here: flag must be True or False, got "):
        require_flag("here", "flag", value)


def test_counts_and_text_numbers():
    assert is_integer(3) and is_integer(np.int32(3))
    assert not any(is_integer(v) for v in (True, 3.0, "3", np.bool_(True)))
    assert number_from_text(" 1e-3 ") == 1e-3
    with pytest.raises(ValueError, match="no '_' digit separators"):
        number_from_text("1_000")
