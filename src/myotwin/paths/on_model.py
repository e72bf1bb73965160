"""Path quantities of an engine `Model` that carries its paths (`Model.paths`, compiled from
the MJCF's spatial tendons by `engine.load` / `engine.compile_model`).

These are the public entry points re-exported as `myotwin.muscle_lengths`,
`myotwin.moment_arms` and `myotwin.lengthening_speeds`; the functions of `length.py` and
`moment_arms.py` take the PathSet explicitly (for paths compiled separately).
Shapes: n_paths = number of spatial tendons, in MJCF file order.

Each checks its arrays' shapes against the model (`engine/arguments.py`) and is compiled
(`jax.jit`; inlined when called inside compiled code), so calls from plain
Python compile once per model structure and then cost what the compiled code costs (arm26's
moment arms: 2 ms per call after a first call of ~22 s that compiles, against ~24 s for
every call evaluated op by op; scratch timings, docs/paths.md).
"""

from __future__ import annotations

import jax

from myotwin.engine.arguments import compiled
from myotwin.engine.kinematics import kinematics
from myotwin.engine.tendons import path_rows_from_kinematics
from myotwin.paths.length import muscle_lengths as _lengths
from myotwin.paths.moment_arms import lengthening_speeds as _speeds
from myotwin.paths.moment_arms import moment_arms as _moment_arms
from myotwin.paths.pathset import PathSet


def _paths_of(model):
    if getattr(model, "paths", None) is None:
        raise ValueError("the model has no musculotendon paths (no spatial <tendon> in its MJCF)")
    return model.paths


@compiled
def muscle_lengths(model, q: jax.Array) -> jax.Array:
    """(n_paths,) musculotendon lengths (m) at configuration q (n_q,) (MuJoCo ten_length)."""
    paths = _paths_of(model)
    if not isinstance(paths, PathSet):  # CompositePaths (paths built with paths.builder)
        return paths.muscle_lengths(model, q)
    return _lengths(paths, model, q)


@compiled
def moment_arms(model, q: jax.Array) -> jax.Array:
    """(n_v, n_paths) moment arms r = -dL/dq in velocity coordinates (m, or m/rad)."""
    paths = _paths_of(model)
    if not isinstance(paths, PathSet):  # CompositePaths (paths built with paths.builder)
        return paths.moment_arms(model, q)
    return _moment_arms(paths, model, q)


@compiled
def lengthening_speeds(model, q: jax.Array, qd: jax.Array) -> jax.Array:
    """(n_paths,) dL/dt = -r^T qd (m/s) (MuJoCo ten_velocity)."""
    paths = _paths_of(model)
    if not isinstance(paths, PathSet):  # CompositePaths (paths built with paths.builder)
        return paths.lengthening_speeds(model, q, qd)
    return _speeds(paths, model, q, qd)


@compiled
def lengths_and_moment_arms(model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """((n_paths,) lengths (m), (n_v, n_paths) moment arms r = -dL/dq) at q, the two together:
    for paths built with OpenSim parts one forward-mode pass gives both
    (`CompositePaths.lengths_and_moment_arms`); for MJCF paths one position stage (kinematics
    and path geometry) feeds both. Left to XLA's common-subexpression elimination, the stage was
    traced twice, and a gradient through it (a rollout's) differentiated both copies."""
    paths = _paths_of(model)
    if not isinstance(paths, PathSet):
        lengths, arms = paths.lengths_and_moment_arms(model, q)
    else:
        lengths, ten_j = path_rows_from_kinematics(model, kinematics(model, q))
        arms = -ten_j.T
    return lengths, arms
