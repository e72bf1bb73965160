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


FLAG_PROBE = ("import os, myotwin; myotwin.configure_jax(); "
              "print('xla_cpu_small_while_loop_byte_threshold=16777216' in "
              "os.environ.get('XLA_FLAGS', ''))")


@pytest.mark.parametrize("env_value, expected", [
    (None, "True"),     # the default: small loops compiled whole (jax_setup.SMALL_LOOP_BYTES)
    ("0", "False"),     # MYOTWIN_SMALL_LOOP_BYTES=0 keeps XLA's default
])
def test_configure_jax_sets_the_small_loop_option(env_value, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("MYOTWIN_SMALL_LOOP_BYTES",
                                                            "XLA_FLAGS")}
    if env_value is not None:
        env["MYOTWIN_SMALL_LOOP_BYTES"] = env_value
    out = subprocess.run([sys.executable, "-c", FLAG_PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split() == [expected]


def test_bad_small_loop_override_names_the_variable():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["MYOTWIN_SMALL_LOOP_BYTES"] = "lots"
    out = subprocess.run([sys.executable, "-c", "import myotwin; myotwin.configure_jax()"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "MYOTWIN_SMALL_LOOP_BYTES='lots'" in out.stderr and "ValueError" in out.stderr


def test_configure_jax_after_the_backend_started_warns():
    """XLA reads XLA_FLAGS once, when JAX creates its backend: too late, and configure_jax says
    so instead of pretending."""
    code = ("import warnings, jax, jax.numpy as jnp, myotwin; jnp.ones(1).block_until_ready(); "
            "warnings.simplefilter('error'); myotwin.configure_jax()")
    env = {k: v for k, v in os.environ.items() if k not in ("MYOTWIN_SMALL_LOOP_BYTES",
                                                            "XLA_FLAGS")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    assert "RuntimeWarning" in out.stderr and "after JAX created its backend" in out.stderr
