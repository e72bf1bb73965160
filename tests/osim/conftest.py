""".osim loader tests run in float64 (STYLE 14: config set here, never on library import)."""

from myotwin import configure_jax

configure_jax()  # float64 and embedded small constants, as the entry points (jax_setup.py)
