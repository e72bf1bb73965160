"""Paths of a model built in Python: MJCF spatial tendons and OpenSim-semantics paths together.

`paths.builder.PathBuilder` compiles every path MJCF can express into a MuJoCo spatial tendon
(evaluated by `length.py` / `moment_arms.py`, MuJoCo's semantics) and the paths that use
OpenSim features (conditional via points, OpenSim cylinders) into an `OpenSimPathSet`
(`opensim_path.py`). `CompositePaths` holds both and returns every quantity in declaration
order; it is what `Model.paths` carries for such a model, so `myotwin.muscle_lengths`,
`myotwin.moment_arms` and `myotwin.lengthening_speeds` work unchanged (they dispatch on the
type). A model whose paths are all MJCF keeps a plain `PathSet`.

Shapes: n_paths = all paths in declaration order; r = -dL/dq (n_v, n_paths) in velocity
coordinates for both kinds (chained point Jacobians for MJCF paths, forward-mode autodiff for
OpenSim paths).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.paths import opensim_path
from myotwin.paths.length import muscle_lengths as _mjcf_lengths
from myotwin.paths.moment_arms import lengthening_speeds as _mjcf_speeds
from myotwin.paths.moment_arms import moment_arms as _mjcf_moment_arms
from myotwin.paths.opensim_path import OpenSimPathSet
from myotwin.paths.pathset import PathSet

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class CompositePaths:
    """MJCF paths (`mjcf`, a PathSet or None) and OpenSim paths (`opensim`, an
    OpenSimPathSet or None) of one model (a JAX pytree).

    Static: path_names (n_paths,) in declaration order; path_kind (n_paths,): 0 = MJCF,
    1 = OpenSim; path_index (n_paths,): index within its own set."""

    mjcf: PathSet | None
    opensim: OpenSimPathSet | None
    path_names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)
    path_kind: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    path_index: tuple[int, ...] = dataclasses.field(metadata=_STATIC)

    @property
    def n_paths(self) -> int:
        return len(self.path_names)

    def _merge(self, mjcf_part: jax.Array | None, os_part: jax.Array | None, axis: int):
        """Concatenate per-kind results along `axis` and reorder into declaration order."""
        parts = [x for x in (mjcf_part, os_part) if x is not None]
        both = jnp.concatenate(parts, axis=axis)
        n_mjcf = 0 if self.mjcf is None else self.mjcf.n_paths
        perm = np.array([i if k == 0 else n_mjcf + i
                         for k, i in zip(self.path_kind, self.path_index)], dtype=np.int64)
        return jnp.take(both, perm, axis=axis)

    def muscle_lengths(self, model, q: jax.Array) -> jax.Array:
        """(n_paths,) musculotendon lengths (m) at configuration q (n_q,)."""
        a = None if self.mjcf is None else _mjcf_lengths(self.mjcf, model, q)
        b = None if self.opensim is None else opensim_path.muscle_lengths(self.opensim, model, q)
        return self._merge(a, b, 0)

    def moment_arms(self, model, q: jax.Array) -> jax.Array:
        """(n_v, n_paths) moment arms r = -dL/dq in velocity coordinates."""
        a = None if self.mjcf is None else _mjcf_moment_arms(self.mjcf, model, q)
        b = None if self.opensim is None else opensim_path.moment_arms(self.opensim, model, q)
        return self._merge(a, b, 1)

    def lengths_and_moment_arms(self, model, q: jax.Array):
        """((n_paths,) lengths, (n_v, n_paths) moment arms), the OpenSim part from one
        forward-mode pass (cheaper to compile than the two calls)."""
        a_len = a_arm = b_len = b_arm = None
        if self.mjcf is not None:
            a_len = _mjcf_lengths(self.mjcf, model, q)
            a_arm = _mjcf_moment_arms(self.mjcf, model, q)
        if self.opensim is not None:
            b_len, b_arm = opensim_path.lengths_and_moment_arms(self.opensim, model, q)
        return self._merge(a_len, b_len, 0), self._merge(a_arm, b_arm, 1)

    def generalized_force_moment_arms(self, model, q: jax.Array) -> jax.Array:
        """(n_v, n_paths) OpenSim's computeMomentArm: -dL/dq with every path point, tangent
        points included, held fixed on its body. For MJCF paths this is MuJoCo's -ten_J^T
        (tangent points fixed on the wrap geom's body), for OpenSim paths
        `opensim_path.generalized_force_moment_arms`."""
        a = None if self.mjcf is None else _mjcf_moment_arms(self.mjcf, model, q)
        b = (None if self.opensim is None
             else opensim_path.generalized_force_moment_arms(self.opensim, model, q))
        return self._merge(a, b, 1)

    def lengths_force_arms_and_speeds(self, model, q: jax.Array, qd: jax.Array):
        """((n_paths,) lengths, `generalized_force_moment_arms` (n_v, n_paths), (n_paths,)
        OpenSim's lengthening speeds) at q (n_q,) and qd (n_v,), the OpenSim part's current
        paths computed once (`opensim_path.lengths_force_arms_and_speeds`); for MJCF paths
        the speed is dL/dt (MuJoCo's ten_velocity, which is OpenSim's for these paths)."""
        parts = [[None] * 3, [None] * 3]
        if self.mjcf is not None:
            parts[0] = [_mjcf_lengths(self.mjcf, model, q),
                        _mjcf_moment_arms(self.mjcf, model, q),
                        _mjcf_speeds(self.mjcf, model, q, qd)]
        if self.opensim is not None:
            parts[1] = list(opensim_path.lengths_force_arms_and_speeds(self.opensim, model, q,
                                                                       qd))
        return tuple(self._merge(a, b, axis) for a, b, axis in zip(*parts, (0, 1, 0)))

    def lengthening_speeds(self, model, q: jax.Array, qd: jax.Array) -> jax.Array:
        """(n_paths,) dL/dt (m/s) at configuration q (n_q,) and velocity qd (n_v,)."""
        a = None if self.mjcf is None else _mjcf_speeds(self.mjcf, model, q, qd)
        b = (None if self.opensim is None
             else opensim_path.lengthening_speeds(self.opensim, model, q, qd))
        return self._merge(a, b, 0)


jax.tree_util.register_dataclass(CompositePaths, data_fields=["mjcf", "opensim"],
                                 meta_fields=["path_names", "path_kind", "path_index"])
