"""Path functions of a loaded .osim model in its coordinates (coupled ones included), jitted,
for the tests that compare them with OpenSim: lengths L(q), -dL/dq through the coupling, and
OpenSim's point-force moment arms reduced by J^T."""

from __future__ import annotations

import jax

import myotwin
from myotwin.engine.coupling import full_jacobian, full_positions


def path_functions(loaded):
    """(lengths(q) (n_muscles,), minus_dl_dq(q) (n_muscles, n_coordinates),
    force_arms(q) (n_muscles, n_coordinates)), each jitted, q the model's coordinates."""
    def lengths(q):
        return myotwin.muscle_lengths(loaded.model, full_positions(loaded.coupling, q))

    def force_arms(q):
        arms = loaded.model.paths.generalized_force_moment_arms(
            loaded.model, full_positions(loaded.coupling, q))
        return (full_jacobian(loaded.coupling, q).T @ arms).T

    return jax.jit(lengths), jax.jit(lambda q: -jax.jacfwd(lengths)(q)), jax.jit(force_arms)
