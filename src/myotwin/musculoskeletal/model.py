"""A skeleton driven by Hill-type muscles: the `MusculoskeletalModel` pytree and its builder.

It pairs an engine `Model` that carries musculotendon paths (`Model.paths`; with or without
muscle mass points, `myotwin.inertia`) with a `myotwin.muscle.Muscle` group: muscle i pulls
along path `muscle_path[i]`. By default each muscle takes the path of its own name, as an
OpenSim muscle owns its GeometryPath; the skeleton's own actuators (MJCF motors) still act,
with their ctrl.

Validation at build time (ValueError naming the muscle, the path and the value): the model
has no paths, a muscle's path is unknown, two muscles share a path, the number of paths given
differs from the number of muscles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax

from myotwin.muscle.model import Muscle

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class MusculoskeletalModel:
    """skeleton: engine `Model` with paths; muscles: `Muscle` (n_muscles); static
    muscle_path (n_muscles,): index into `skeleton.paths` of each muscle's path."""

    skeleton: object
    muscles: Muscle
    muscle_path: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)

    @property
    def n_muscles(self) -> int:
        return len(self.muscle_path)


jax.tree_util.register_dataclass(MusculoskeletalModel, data_fields=["skeleton", "muscles"],
                                 meta_fields=["muscle_path"])


def _path_index(paths, name_or_index, muscle: str) -> int:
    names = tuple(paths.path_names)
    if isinstance(name_or_index, str):
        if name_or_index not in names:
            raise ValueError(f"muscle '{muscle}': unknown path '{name_or_index}'; the model's "
                             f"paths are {list(names)}")
        return names.index(name_or_index)
    p = int(name_or_index)
    if not 0 <= p < len(names):
        raise ValueError(f"muscle '{muscle}': path index {name_or_index!r} outside "
                         f"[0, {len(names) - 1}]")
    return p


def musculoskeletal_model(skeleton, muscles: Muscle,
                          paths: Sequence[str | int] | None = None) -> MusculoskeletalModel:
    """Pair `skeleton` (an engine Model with paths) with `muscles`: muscle i pulls along
    paths[i] (a path name or index), by default the path named like the muscle."""
    if getattr(skeleton, "paths", None) is None:
        raise ValueError("musculoskeletal_model: the skeleton has no musculotendon paths (no "
                         "spatial <tendon> in its MJCF), so no muscle can act on it")
    names = tuple(muscles.names)
    given = names if paths is None else tuple(paths)
    if len(given) != len(names):
        raise ValueError(f"musculoskeletal_model: {len(given)} paths for {len(names)} muscles "
                         f"{list(names)}")
    index = tuple(_path_index(skeleton.paths, p, m) for p, m in zip(given, names))
    seen: dict[int, str] = {}
    for m, p in zip(names, index):
        if p in seen:
            raise ValueError(f"muscles '{seen[p]}' and '{m}' both pull on path "
                             f"'{skeleton.paths.path_names[p]}': one muscle per path")
        seen[p] = m
    return MusculoskeletalModel(skeleton, muscles, index)
