"""`myotwin.configure_jax`: the entry points' JAX settings (src/myotwin/jax_setup.py).

Each case runs in a fresh interpreter, because the settings are process-global and this test
process has already been configured by the suite's conftests."""

import os
import subprocess
import sys

import pytest

PROBE = ("import jax, myotwin; myotwin.configure_jax(); "
         "print(jax.config.jax_enable_x64, jax.config.jax_use_simplified_jaxpr_constants)")


def _probe(env_value):
    env = {k: v for k, v in os.environ.items() if k != "JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS"}
    if env_value is not None:
        env["JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("env_value, expected", [
    (None, ["True", "True"]),        # the default: float64 and embedded constants
    ("0", ["True", "False"]),        # JAX's own environment variable wins (an A/B switch)
    ("1", ["True", "True"]),
])
def test_configure_jax_sets_float64_and_constants(env_value, expected):
    assert _probe(env_value) == expected


def test_import_does_not_configure_jax():
    """STYLE: importing myotwin changes no global JAX setting."""
    code = "import jax, myotwin; print(jax.config.jax_enable_x64)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["False"]
