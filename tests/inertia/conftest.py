"""Inertia tests run in float64 (STYLE 14: config set here, never on library import)."""

import jax

jax.config.update("jax_enable_x64", True)
