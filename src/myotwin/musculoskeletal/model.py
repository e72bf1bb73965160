"""A skeleton driven by Hill-type muscles: the `MusculoskeletalModel` pytree and its builder.

It pairs an engine `Model` that carries musculotendon paths (`Model.paths`; with or without
muscle mass points, `myotwin.inertia`) with a `myotwin.muscle.Muscle` group: muscle i pulls
along path `muscle_path[i]`. By default each muscle takes the path of its own name, as an
OpenSim muscle owns its GeometryPath; the skeleton's own actuators (MJCF motors) still act,
with their ctrl.

Coupling (`coupling`, docs/muscle.md "Driving the skeleton"): how path and skeleton exchange
force and motion.
* "length_gradient" (default): r = -dL/dq by autodiff of the path length, v_MT = dL/dt =
  -r^T qd, qfrc = r F. Power balance holds exactly (F v_MT is the power the skeleton loses).
* "opensim": OpenSim's GeometryPath coupling: the force acts at the current path points, the
  wrap tangent points included, as if each were fixed on its body (GeometryPath::
  addInEquivalentForces), so qfrc = r_gf F with r_gf = `generalized_force_moment_arms`
  (OpenSim's computeMomentArm), l_MT = L(q) and v_MT OpenSim's getLengtheningSpeed (the
  speeds of the same points; not dL/dt where its wraps are active: a fiber-length state, as
  OpenSim's Thelen and Millard muscles, reads l_MT(q) and does not use it; a tendon-force
  state, as OpenSim's De Groote muscle, integrates it). The two couplings agree
  wherever no wrap is active, and on MJCF paths (MuJoCo's wraps are geodesic); where an
  OpenSim cylinder or ellipsoid wraps, OpenSim's construction is not the shortest path and
  r_gf differs from -dL/dq by up to millimetres, so a muscle's force then does work that its
  length does not account for (power balance fails by F (r_gf + dL/dq)^T qd). Use it to
  reproduce OpenSim's simulations; it needs paths that provide
  `generalized_force_moment_arms` (built with `paths.builder` or `osim.load`), without
  muscle mass points.

Coordinates (`coordinates`, an `engine.CoordinateCoupling`, e.g. `OsimModel.coupling`): the
state's q and qd are then the coupling's coordinates (n_reduced,), not the skeleton's dofs;
the paths are evaluated at q_f = f(q), their moment arms w.r.t. the coordinates are
J^T r_f, and the skeleton's accelerations come from `engine.coupled_dynamics` (the dofs'
dynamics projected by J; no joint limits, no muscle mass points).
Linear paths (`linear_paths.py`): a muscle may instead pull on a length linear in q, as a
MuJoCo muscle with a joint transmission or on a fixed tendon (`mjcf.load_mjcf`); r = -dL/dq is
then constant.
A group of no muscles (`build_muscles` with no names) leaves the skeleton to its own
actuators: it needs no paths, and either coupling applies (there is nothing to couple).
Validation at build time (ValueError naming the muscle, the path and the value): the model
has no paths for the muscles, a muscle's path is unknown, two muscles share a path, the number
of paths given differs from the number of muscles, an unknown coupling or one the paths cannot
give.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from myotwin.engine.arguments import model_of
from myotwin.scalars import as_real, as_real_pair, is_integer
from myotwin.muscle.model import Muscle

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class MusculoskeletalModel:
    """skeleton: engine `Model` with paths; muscles: `Muscle` (n_muscles); static
    muscle_path (n_muscles,): index into `skeleton.paths` of each muscle's path; coupling:
    "length_gradient" or "opensim" (module docstring); coordinates: None, or the
    `engine.CoordinateCoupling` whose coordinates are the state's q (module docstring);
    activation_range: None, or (n_muscles, 2) bounds [lo, hi] to which the fixed-step
    rollouts clamp each activation after every step (MuJoCo's actlimited/actrange,
    mj_nextActivation; +-inf where a muscle has none); the adaptive rollout keeps act in them
    by the clamp's small-step limit (adaptive.py); linear_paths: None, or the
    `linear_paths.LinearPaths` (lengths linear in q: MuJoCo muscles on a joint or a fixed
    tendon) of the muscles that have no spatial path; static muscle_linear (n_muscles,):
    index into `linear_paths` of each such muscle, -1 for the others (whose muscle_path is
    then >= 0; a linear muscle's muscle_path is -1)."""

    skeleton: object
    muscles: Muscle
    coordinates: object = None
    activation_range: object = None
    linear_paths: object = None
    muscle_path: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    coupling: str = dataclasses.field(default="length_gradient", metadata=_STATIC)
    muscle_linear: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)

    @property
    def n_muscles(self) -> int:
        return len(self.muscle_path)


jax.tree_util.register_dataclass(MusculoskeletalModel,
                                 data_fields=["skeleton", "muscles", "coordinates",
                                              "activation_range", "linear_paths"],
                                 meta_fields=["muscle_path", "coupling", "muscle_linear"])
#: The couplings of path and skeleton (module docstring).
COUPLINGS = ("length_gradient", "opensim")


def clamped_activation(msm: MusculoskeletalModel, a):
    """Activations a (..., n_muscles) clamped to `msm.activation_range` (a itself without
    one)."""
    if msm.activation_range is None:
        return a
    return jnp.clip(a, msm.activation_range[:, 0], msm.activation_range[:, 1])


def _path_index(paths, linear, name_or_index, muscle: str) -> tuple[int, int]:
    """(index into the spatial paths or -1, index into the linear paths or -1) of the path
    that `name_or_index` (a name, or an index into the spatial paths) names."""
    names = () if paths is None else tuple(paths.path_names)
    linear_names = () if linear is None else tuple(linear.names)
    if isinstance(name_or_index, str):
        if name_or_index in names and name_or_index in linear_names:
            raise ValueError(f"muscle '{muscle}': '{name_or_index}' names both a spatial path "
                             "and a linear path (a joint or fixed-tendon transmission)")
        if name_or_index in names:
            return names.index(name_or_index), -1
        if name_or_index in linear_names:
            return -1, linear_names.index(name_or_index)
        raise ValueError(f"muscle '{muscle}': unknown path '{name_or_index}'; the model's "
                         f"paths are {list(names + linear_names)}")
    if not is_integer(name_or_index):
        raise ValueError(f"muscle '{muscle}': path {name_or_index!r}: expected a path name or "
                         "an integer index")
    p = int(name_or_index)
    if not 0 <= p < len(names):
        raise ValueError(f"muscle '{muscle}': path index {name_or_index!r} outside "
                         f"[0, {len(names) - 1}]")
    return p, -1


def musculoskeletal_model(skeleton, muscles: Muscle, paths: Sequence[str | int] | None = None,
                          coupling: str = "length_gradient",
                          coordinates=None, activation_range=None,
                          linear_paths=None) -> MusculoskeletalModel:
    """Pair `skeleton` (an engine Model with paths) with `muscles`: muscle i pulls along
    paths[i] (a path name or index), by default the path named like the muscle; coupling
    "length_gradient" (default) or "opensim"; coordinates: an `engine.CoordinateCoupling`
    (e.g. `OsimModel.coupling`) when the skeleton's dofs follow fewer coordinates (module
    docstring); activation_range: None or (n_muscles, 2) [lo, hi] per muscle (class
    docstring; ValueError for another shape, lo > hi, a NaN, a bool or a string);
    linear_paths: None or a `linear_paths.LinearPaths` whose names `paths` may name too
    (muscles on a joint or a fixed tendon; not with "opensim" coupling or coordinates)."""
    model_of("musculoskeletal_model", skeleton)
    if not isinstance(muscles, Muscle):
        raise ValueError(f"musculoskeletal_model: muscles must be a Muscle (muscle.build_muscles "
                         f"or osim.build_muscles), got {type(muscles).__name__}")
    if linear_paths is not None:
        _check_linear_paths(linear_paths, skeleton)
    spatial = getattr(skeleton, "paths", None)
    if spatial is None and linear_paths is None and muscles.n_muscles:
        raise ValueError("musculoskeletal_model: the skeleton has no musculotendon paths (no "
                         "spatial <tendon> in its MJCF), so no muscle can act on it")
    if coupling not in COUPLINGS:
        raise ValueError(f"musculoskeletal_model: coupling must be one of {list(COUPLINGS)}, "
                         f"got {coupling!r}")
    if coupling == "opensim" and muscles.n_muscles and (not _gives_point_force_arms(spatial)
                                  or getattr(skeleton, "muscle_mass", None) is not None
                                  or linear_paths is not None):
        raise ValueError("musculoskeletal_model: coupling 'opensim' needs paths that give "
                         "OpenSim's point-force moment arms (built with paths.builder or "
                         "osim.load), a skeleton without muscle mass points and no linear "
                         f"paths; these are {type(spatial).__name__}, muscle mass "
                         f"{'present' if getattr(skeleton, 'muscle_mass', None) else 'absent'}"
                         f", linear paths {'present' if linear_paths is not None else 'absent'}")
    if coordinates is not None and linear_paths is not None:
        raise ValueError("musculoskeletal_model: linear paths (joint or fixed-tendon muscles) "
                         "with coordinates are not supported")
    names = tuple(muscles.names)
    if isinstance(paths, str):      # tuple("via1") would be the paths v, i, a and 1
        raise ValueError(f"musculoskeletal_model: paths must be a sequence of path names or "
                         f"indices, got the string {paths!r} (for one muscle: [{paths!r}])")
    given = names if paths is None else tuple(paths)
    if len(given) != len(names):
        raise ValueError(f"musculoskeletal_model: {len(given)} paths for {len(names)} muscles "
                         f"{list(names)}")
    index = [_path_index(spatial, linear_paths, p, m) for p, m in zip(given, names)]
    seen: dict[tuple[int, int], str] = {}
    for m, p in zip(names, index):
        if p in seen:
            what = spatial.path_names[p[0]] if p[0] >= 0 else linear_paths.names[p[1]]
            raise ValueError(f"muscles '{seen[p]}' and '{m}' both pull on path "
                             f"'{what}': one muscle per path")
        seen[p] = m
    if coordinates is not None:
        from myotwin.engine.coupled_dynamics import check_coupled_forward
        from myotwin.engine.coupling import check_coupled_model

        check_coupled_model(skeleton, coordinates)
        check_coupled_forward(skeleton)
    return MusculoskeletalModel(skeleton, muscles, coordinates,
                                _activation_range(activation_range, names), linear_paths,
                                tuple(p for p, _ in index), coupling,
                                tuple(k for _, k in index))


def _check_linear_paths(paths, skeleton) -> None:
    """ValueError unless `paths` is a `LinearPaths` whose coefficients span the skeleton's
    n_q and n_v (a wrong width failed inside a JAX dot at the first evaluation)."""
    from myotwin.musculoskeletal.linear_paths import LinearPaths

    if not isinstance(paths, LinearPaths):
        raise ValueError(f"musculoskeletal_model: linear_paths must be a LinearPaths "
                         f"(linear_paths.linear_paths), got {type(paths).__name__}")
    for what, coef, n in (("coef_q", paths.coef_q, skeleton.n_q),
                          ("coef_v", paths.coef_v, skeleton.n_v)):
        if tuple(coef.shape) != (paths.n_paths, n):
            raise ValueError(f"musculoskeletal_model: linear_paths.{what} has shape "
                             f"{tuple(coef.shape)}, expected ({paths.n_paths}, {n}) (the "
                             f"skeleton's n_{what[-1]} = {n})")


def _activation_range(bounds, names):
    if bounds is None:
        return None
    import jax.numpy as jnp
    import numpy as np

    b = np.asarray(bounds, dtype=object)
    if b.shape != (len(names), 2):
        raise ValueError(f"activation_range has shape {b.shape}, expected ({len(names)}, 2): "
                         "[lo, hi] per muscle")
    for name, pair in zip(names, b):
        if as_real_pair(pair) is None:   # True is not 1, nor "0" 0
            raise ValueError(f"activation_range of {name!r}: [lo, hi] must be two numbers, "
                             f"got {pair.tolist()!r}")
    b = b.astype(np.float64)
    for name, (lo, hi) in zip(names, b.tolist()):
        if not lo <= hi:   # also False for a NaN
            raise ValueError(f"activation_range of {name!r}: [{lo}, {hi}] is not an interval")
    return jnp.asarray(b)


def with_muscle_masses(msm: MusculoskeletalModel, mass_kg, n_points: int,
                       where: str | None = None) -> MusculoskeletalModel:
    """`msm` with mass on its muscles: muscle i's mass_kg[i] (kg; one number for all, or
    n_muscles numbers; 0 leaves a muscle massless) in `n_points` points spread uniformly
    along its path (`inertia.with_muscle_mass`, seed Eq. 7). ValueError for a shape other
    than () or (n_muscles,), a mass that is not a finite number >= 0 (True or "0.1" is
    refused), n_points not an integer >= 1, or a mass on a muscle
    without a spatial path (a joint or fixed-tendon muscle); `where` (e.g. the model's file)
    prefixes the messages."""
    import numpy as np

    from myotwin import inertia

    prefix = "" if where is None else f"{where}: "
    if not isinstance(msm, MusculoskeletalModel):
        raise ValueError(f"{prefix}with_muscle_masses: expected a MusculoskeletalModel "
                         f"(musculoskeletal_model or load_mjcf), got {type(msm).__name__}")
    if not is_integer(n_points) or n_points < 1:     # also where no muscle has mass
        raise ValueError(f"{prefix}n_points must be a positive integer, got {n_points!r}")
    masses = np.asarray(mass_kg, dtype=object)
    if masses.ndim == 0:
        masses = np.full(msm.n_muscles, masses.item(), dtype=object)
    if masses.shape != (msm.n_muscles,):
        raise ValueError(f"{prefix}mass_kg has shape {masses.shape}, expected () or "
                         f"({msm.n_muscles},), one per muscle")
    for name, kg in zip(msm.muscles.names, masses):
        if as_real(kg) is None:     # True is not 1 kg, nor "0.1" 0.1 kg
            raise ValueError(f"{prefix}muscle mass of {name!r} must be a number, got {kg!r}")
    masses = masses.astype(np.float64)
    for name, kg in zip(msm.muscles.names, masses.tolist()):
        if not (np.isfinite(kg) and kg >= 0.0):
            raise ValueError(f"{prefix}muscle mass of {name!r} must be >= 0 kg, got {kg!r}")
    skeleton = msm.skeleton
    for name, path, kg in zip(msm.muscles.names, msm.muscle_path, masses.tolist()):
        if kg > 0.0 and path < 0:
            raise ValueError(f"{prefix}muscle {name!r} acts on a joint or a fixed tendon (no "
                             f"spatial path to carry mass points): its mass must be 0 kg, got "
                             f"{kg!r}")
        if kg > 0.0:
            skeleton = inertia.with_muscle_mass(skeleton, int(path), kg, n_points)
    paths = [p if p >= 0 else msm.linear_paths.names[k]
             for p, k in zip(msm.muscle_path, linear_index(msm))]
    return musculoskeletal_model(skeleton, msm.muscles, paths=paths,
                                 coupling=msm.coupling, coordinates=msm.coordinates,
                                 activation_range=msm.activation_range,
                                 linear_paths=msm.linear_paths)


def linear_index(msm: MusculoskeletalModel) -> tuple[int, ...]:
    """`msm.muscle_linear`, or all -1 for a model built before it existed (the default ())."""
    return msm.muscle_linear or (-1,) * msm.n_muscles


def _gives_point_force_arms(paths) -> bool:
    from myotwin.paths.opensim_composite import CompositePaths
    from myotwin.paths.pathset import PathSet

    return isinstance(paths, (PathSet, CompositePaths))
