"""Mass points on a model whose paths are MJCF tendons and OpenSim-semantics paths together.

A model built with `paths.builder` that uses OpenSim features keeps its paths in a
`paths.opensim_composite.CompositePaths`: the MJCF-expressible paths in a `PathSet`, the others
in an `OpenSimPathSet`. Its `MuscleMass` numbers paths in declaration order. This module splits
the points by kind:
  * points on MJCF paths go through the same code as on an all-MJCF model (closed forms for
    site-only paths, forward-mode derivatives of F for wraps), on a view of the model whose
    `paths` is the PathSet and whose MuscleMass holds only those points, renumbered;
  * points on OpenSim paths are placed by `opensim_points.point_positions`, their J and
    Jdot qd by forward-mode derivatives of that F (`dynamics.py`).
Results are returned in the model's point order.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.rows import take
from myotwin.inertia.muscle_mass import MuscleMass
from myotwin.paths.opensim_composite import CompositePaths


def is_composite(model) -> bool:
    """Whether the model's paths are a `CompositePaths` (MJCF and OpenSim paths)."""
    return isinstance(model.paths, CompositePaths)


class CompositeSplit(NamedTuple):
    """The model's mass points by path kind (static index arrays into its points).

    mjcf_model: the model viewed with only its MJCF paths and their points (None if no point
      is on an MJCF path); mjcf_points: those points; opensim_points: the points on OpenSim
      paths; opensim_path: their path index in `paths.opensim`."""

    mjcf_model: object
    mjcf_points: np.ndarray
    opensim_points: np.ndarray
    opensim_path: np.ndarray


def split(model) -> CompositeSplit:
    """Split the mass points of a composite-path model by path kind."""
    paths, mm = model.paths, model.muscle_mass
    if mm.n_paths != paths.n_paths:
        raise ValueError(f"the MuscleMass was made for {mm.n_paths} paths, the model has "
                         f"{paths.n_paths}")
    point_path = np.asarray(mm.point_path, dtype=np.int64)
    kind = np.asarray(paths.path_kind, dtype=np.int64)[point_path]
    local = np.asarray(paths.path_index, dtype=np.int64)[point_path]
    mjcf_points, os_points = np.flatnonzero(kind == 0), np.flatnonzero(kind == 1)
    if os_points.size:
        from myotwin.inertia.opensim_points import check_paths

        check_paths(paths.opensim, local[os_points])
    view = None
    if mjcf_points.size:
        n_mjcf = paths.mjcf.n_paths
        position_model = [0] * n_mjcf
        for p in range(paths.n_paths):
            if paths.path_kind[p] == 0:
                position_model[paths.path_index[p]] = mm.path_position_model[p]
        sub = MuscleMass(point_alpha=take(mm.point_alpha, mjcf_points),
                         point_mass=take(mm.point_mass, mjcf_points),
                         network_params=mm.network_params, n_points=int(mjcf_points.size),
                         point_path=tuple(local[mjcf_points].tolist()), n_paths=n_mjcf,
                         path_position_model=tuple(position_model),
                         include_qvv=mm.include_qvv)
        view = dataclasses.replace(model, paths=paths.mjcf, muscle_mass=sub)
    return CompositeSplit(view, mjcf_points, os_points, local[os_points])


def merge_points(parts) -> jax.Array:
    """Rows of per-kind results [(static indices, array with those rows first), ...] put back
    in point order (a static permutation)."""
    parts = [(idx, x) for idx, x in parts if idx.size]
    if len(parts) == 1:
        return parts[0][1]
    both = jnp.concatenate([x for _, x in parts])
    return take(both, np.argsort(np.concatenate([idx for idx, _ in parts])))


def positions(model, kin, q: jax.Array) -> jax.Array:
    """(n_points, 3) world positions of the mass points of a composite-path model at the
    kinematics `kin` (at q, which decides which conditional points are active)."""
    from myotwin.inertia.opensim_points import point_positions_from_kinematics
    from myotwin.inertia.path_fraction import mass_point_positions_from_kinematics

    sp = split(model)
    parts = []
    if sp.mjcf_model is not None:
        parts.append((sp.mjcf_points, mass_point_positions_from_kinematics(sp.mjcf_model, kin)))
    if sp.opensim_points.size:
        alpha = take(model.muscle_mass.point_alpha, sp.opensim_points)
        parts.append((sp.opensim_points, point_positions_from_kinematics(
            model.paths.opensim, kin, q, sp.opensim_path, alpha)))
    return merge_points(parts)
