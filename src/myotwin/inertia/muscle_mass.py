"""Mass points on musculotendon paths: specification, validation and the `MuscleMass` pytree.

Wang et al. 2022 §3: a musculotendon's mass is lumped into m points at *fixed fractions*
alpha in [0, 1] of its path length ("texture coordinates", Fig. 3b); as the skeleton moves the
points slide with the path (`path_fraction.py`) and their inertia enters the skeleton's
equations of motion through Eq. 7 (`dynamics.py`). Inertial and massless paths mix freely:
only the paths given a mass carry points.

Distributions (per path, total mass `mass_kg`):
  * uniform (default): the midpoints of m equal cells of [a, b] = `belly` (default [0, 1], the
    whole path; a narrower interval puts the mass on the muscle belly only, e.g. the seed's
    §4.5 "middle portion ... that corresponds to the muscle"), each point mass_kg / m;
  * `rule="gauss"`: the m Gauss-Legendre nodes of [a, b] with masses mass_kg * w_k / 2.
    For a straight (Type I) path the kinetic energy of a uniform line mass is quadratic in
    alpha, so 2 Gauss points reproduce the continuous uniform muscle exactly
    (M = (m/3)(Jo'Jo + Ji'Ji) + (m/6)(Jo'Ji + Ji'Jo), notes §2.4); midpoints converge as 1/m^2;
  * a given distribution: `alphas` (fractions) and optional relative `weights` (default
    equal), masses mass_kg * w_k / sum(w).

MJCF (read by `engine.load` / `engine.compile_model`):
    <custom><numeric name="muscle_mass:<tendon name>" data="mass_kg n_points"/></custom>
puts n_points uniform midpoint masses on the whole path; data="mass_kg n_points a b" puts them
on the belly [a, b]. Only spatial tendons (paths) can carry mass.

Validation (ValueError naming the path and the field): no paths in the model, unknown path,
a path with pulleys (its branches are separate strands: a fraction of "the" path length is
undefined), negative or non-finite mass, n_points not a positive integer, alpha outside
[0, 1], a belly with a >= b or outside [0, 1], negative or all-zero weights, an unknown rule or
position model, the network position model on a path that is not one cylinder-wrap unit
(or on an OpenSim-semantics path: those take library positions, `opensim_points.py`).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.scalars import as_real, as_real_pair, is_integer, require_real_numbers
from myotwin.paths.sequence import WrapType

_STATIC = {"static": True}

#: Prefix of the MJCF custom numerics that give a path its mass.
NUMERIC_PREFIX = "muscle_mass:"


class PositionModel(enum.IntEnum):
    """How a path's mass-point positions x_alpha(q) are computed.

    LIBRARY: exactly on the path of the wrapping library (Types I, II and III; `path_fraction`).
    NETWORK: the seed's §3.3 neural network for a single cylinder wrap
      (`myotwin.inertia.wrap_network.network_mass_point`), smooth across wrap on/off.
    """

    LIBRARY = 0
    NETWORK = 1


class PointRule(enum.Enum):
    """Where the n points of a distribution over [a, b] sit (see module docstring)."""

    MIDPOINT = "midpoint"
    GAUSS = "gauss"


@dataclasses.dataclass(frozen=True)
class MuscleMass:
    """Mass points of the inertial paths of a model (a JAX pytree; `Model.muscle_mass`).

    Leaves (float64):
      point_alpha (n_points,): fraction of its path's length at which each point sits.
      point_mass (n_points,): mass of each point (kg); gradients reach it.
      network_params: parameters of the wrap network (a pytree) when a path uses
        `PositionModel.NETWORK`, else None.
    Static:
      n_points; point_path (n_points,): path index (into `Model.paths`) of each point, points
        grouped by path in path order; n_paths: size of the PathSet the points were made for;
      path_position_model (n_paths,): `PositionModel` value of each path (LIBRARY for paths
        without mass); include_qvv: False drops the points' quadratic velocity vector
        -M_a Jdot_ar qd from Eq. 7c -- *an ablation only* (seed §4.3, Fig. 8), which breaks
        energy conservation.
    """

    point_alpha: jax.Array
    point_mass: jax.Array
    network_params: Any = None
    n_points: int = dataclasses.field(default=0, metadata=_STATIC)
    point_path: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    n_paths: int = dataclasses.field(default=0, metadata=_STATIC)
    path_position_model: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)
    include_qvv: bool = dataclasses.field(default=True, metadata=_STATIC)

    def inertial_paths(self) -> tuple[int, ...]:
        """Indices of the paths that carry mass points, in order."""
        return tuple(sorted(set(self.point_path)))


_DATA = [f.name for f in dataclasses.fields(MuscleMass) if not f.metadata.get("static")]
_META = [f.name for f in dataclasses.fields(MuscleMass) if f.metadata.get("static")]
jax.tree_util.register_dataclass(MuscleMass, data_fields=_DATA, meta_fields=_META)


def _is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def path_index(paths, path: int | str) -> int:
    """Index of `path` (a tendon name or an index) in the PathSet; ValueError if unknown."""
    if paths is None:
        raise ValueError("the model has no musculotendon paths (no spatial <tendon> in its "
                         "MJCF), so no muscle can carry mass")
    if isinstance(path, str):
        if path not in paths.path_names:
            raise ValueError(f"unknown path '{path}': the model's paths are "
                             f"{list(paths.path_names)}")
        return paths.path_names.index(path)
    if not is_integer(path):
        raise ValueError(f"path {path!r}: expected a tendon name or an integer index")
    p = int(path)
    if not 0 <= p < paths.n_paths:
        raise ValueError(f"path index {path!r} outside [0, {paths.n_paths - 1}]")
    return p


def _label(paths, p: int) -> str:
    return f"path #{p}" + (f" '{paths.path_names[p]}'" if paths.path_names[p] else "")


def _mjcf_part(paths, p: int):
    """(PathSet, index in it) of path p if it is a MuJoCo spatial tendon, or None if it is an
    OpenSim-semantics path (`paths.opensim_composite.CompositePaths`, from paths.builder)."""
    if hasattr(paths, "unit_path"):
        return paths, p
    if paths.path_kind[p] == 0:
        return paths.mjcf, paths.path_index[p]
    return None


def _check_single_strand(paths, p: int) -> None:
    branches = {b for u, b in zip(paths.unit_path, paths.unit_branch) if u == p}
    if len(branches) > 1:
        raise ValueError(f"{_label(paths, p)} has pulleys ({len(branches)} branches): mass "
                         "points need a single strand (a fraction of one path length)")


def _check_network_path(paths, p: int) -> None:
    units = [u for u in range(paths.n_units) if paths.unit_path[u] == p]
    w = paths.unit_wrap[units[0]] if len(units) == 1 else -1
    if w < 0 or paths.wrap_type[w] != WrapType.CYLINDER:
        raise ValueError(f"{_label(paths, p)}: the network position model needs a path of one "
                         "site-cylinder-site unit (the seed's §3.3 network is trained for a "
                         "single cylinder wrap); use position_model='library'")


def distribution(n_points: int | None = None, *, belly=(0.0, 1.0), alphas=None, weights=None,
                 rule: PointRule | str = PointRule.MIDPOINT, what: str = "muscle mass"):
    """(alphas (m,), relative weights (m,) summing to 1) of a distribution (module docstring),
    validated in NumPy; `what` names the path in error messages."""
    for name, values in (("alphas", alphas), ("weights", weights)):
        if values is not None:                  # [0.5, True] is not [0.5, 1.0]
            require_real_numbers(what, name, values)
    if n_points is not None and (not is_integer(n_points) or n_points < 1):
        raise ValueError(f"{what}: n_points must be a positive integer, got {n_points!r}")
    if alphas is not None:
        a = np.asarray(alphas, dtype=np.float64).reshape(-1)
        if a.size == 0:
            raise ValueError(f"{what}: alphas is empty")
        if n_points is not None and n_points != a.size:
            raise ValueError(f"{what}: n_points={n_points!r} but {a.size} alphas were given")
        if not np.all(np.isfinite(a)) or np.any((a < 0.0) | (a > 1.0)):
            bad = a[~np.isfinite(a) | (a < 0.0) | (a > 1.0)][0]
            raise ValueError(f"{what}: alpha {float(bad)!r} outside [0, 1] (fractions of the "
                             "path length)")
        w = np.ones_like(a) if weights is None else np.asarray(weights, np.float64).reshape(-1)
        if w.shape != a.shape:
            raise ValueError(f"{what}: {w.size} weights for {a.size} alphas")
        if not np.all(np.isfinite(w)) or np.any(w < 0.0) or not np.sum(w) > 0.0:
            raise ValueError(f"{what}: weights must be finite, >= 0 and not all 0, got "
                             f"{w.tolist()}")
        return a, w / np.sum(w)
    if weights is not None:
        raise ValueError(f"{what}: weights need alphas")
    if n_points is None:
        raise ValueError(f"{what}: n_points must be a positive integer, got None")
    pair = as_real_pair(belly)              # (0, True) is not (0.0, 1.0)
    if pair is None:
        raise ValueError(f"{what}: belly must be two numbers (a, b), got {belly!r}")
    lo, hi = pair
    if not (np.isfinite(lo) and np.isfinite(hi) and 0.0 <= lo < hi <= 1.0):
        raise ValueError(f"{what}: belly ({lo!r}, {hi!r}) must satisfy 0 <= a < b <= 1")
    n = int(n_points)
    try:
        rule = PointRule(rule)
    except ValueError:
        raise ValueError(f"{what}: rule {rule!r} is not one of "
                         f"{[r.value for r in PointRule]}") from None
    if rule is PointRule.MIDPOINT:
        x, w = (np.arange(n) + 0.5) / n, np.full(n, 1.0 / n)
    else:
        nodes, gw = np.polynomial.legendre.leggauss(n)
        x, w = 0.5 * (nodes + 1.0), 0.5 * gw
    return lo + (hi - lo) * x, w


def _group(mm: MuscleMass | None) -> dict[int, tuple[jax.Array, jax.Array, int]]:
    """{path: (alphas, masses, position model)} of an existing MuscleMass."""
    if mm is None:
        return {}
    out = {}
    path = np.asarray(mm.point_path, dtype=int)
    for p in mm.inertial_paths():
        idx = np.flatnonzero(path == p)
        out[p] = (mm.point_alpha[idx], mm.point_mass[idx], mm.path_position_model[p])
    return out


def build_muscle_mass(paths, groups: dict[int, tuple], network_params=None,
                      include_qvv: bool = True) -> MuscleMass | None:
    """MuscleMass from {path: (alphas (m,), masses (m,), PositionModel)}; None if empty."""
    groups = {p: g for p, g in groups.items() if np.size(g[0])}
    if not groups:
        return None
    order = sorted(groups)
    models = [int(PositionModel.LIBRARY)] * paths.n_paths
    for p in order:
        models[p] = int(PositionModel(groups[p][2]))
    if PositionModel.NETWORK not in models:
        network_params = None
    alphas = jnp.concatenate([jnp.asarray(groups[p][0], jnp.float64).reshape(-1) for p in order])
    masses = jnp.concatenate([jnp.asarray(groups[p][1], jnp.float64).reshape(-1) for p in order])
    point_path = tuple(p for p in order for _ in range(int(np.size(groups[p][0]))))
    return MuscleMass(point_alpha=alphas, point_mass=masses, network_params=network_params,
                      n_points=len(point_path), point_path=point_path, n_paths=paths.n_paths,
                      path_position_model=tuple(models), include_qvv=include_qvv)


def _load_network():
    """(network_mass_point, default params) of the wrap network, or ValueError if absent."""
    try:
        from myotwin.inertia import wrap_network
    except ImportError as err:
        raise ValueError("position_model='network' needs myotwin.inertia.wrap_network, which "
                         f"is not available ({err})") from err
    return wrap_network


def with_muscle_mass(model, path: int | str, mass_kg, n_points: int | None = None, *,
                     belly: Sequence[float] = (0.0, 1.0), alphas=None, weights=None,
                     rule: PointRule | str = PointRule.MIDPOINT,
                     position_model: PositionModel | str = PositionModel.LIBRARY,
                     network_params=None):
    """A copy of `model` (an `engine.Model` with paths) whose path `path` (tendon name or
    index) carries total mass `mass_kg` (kg) in mass points (module docstring for the
    distribution keywords). Replaces the path's previous mass points; other paths keep theirs.
    `mass_kg` may be traced (e.g. under `jax.grad`); it is validated when concrete.
    position_model: "library" (default) or "network" (a single cylinder wrap; `network_params`
    default: the weights shipped with `myotwin.inertia.wrap_network`).
    """
    paths = getattr(model, "paths", None)
    p = path_index(paths, path)
    what = f"muscle mass of {_label(paths, p)}"
    mjcf = _mjcf_part(paths, p)
    if mjcf is not None:
        _check_single_strand(*mjcf)
    else:
        from myotwin.inertia.opensim_points import check_paths

        check_paths(paths.opensim, [paths.path_index[p]])
    if not _is_traced(mass_kg):
        m = as_real(mass_kg)                # True is not 1 kg, nor "0.1" 0.1 kg
        if m is None or not np.isfinite(m) or m < 0.0:
            raise ValueError(f"{what}: mass_kg must be a finite scalar >= 0, got {mass_kg!r}")
    a, w = distribution(n_points, belly=belly, alphas=alphas, weights=weights, rule=rule,
                        what=what)
    try:
        if isinstance(position_model, (bool, np.bool_)):   # an IntEnum: True would be NETWORK
            raise ValueError
        pm = PositionModel[position_model.upper()] if isinstance(position_model, str) \
            else PositionModel(position_model)
    except (KeyError, ValueError) as err:
        raise ValueError(f"{what}: unknown position_model {position_model!r}, expected "
                         "'library' or 'network'") from err
    old = getattr(model, "muscle_mass", None)
    if old is not None and old.n_paths != paths.n_paths:
        raise ValueError(f"the model's MuscleMass was made for {old.n_paths} paths, the model "
                         f"has {paths.n_paths}")
    params = None if old is None else old.network_params
    if pm is PositionModel.NETWORK:
        if mjcf is None:
            raise ValueError(f"{what}: the network position model needs a MuJoCo cylinder "
                             "wrap; this is an OpenSim-semantics path, use "
                             "position_model='library'")
        _check_network_path(*mjcf)
        net = _load_network()
        if network_params is not None and not isinstance(network_params, net.WrapNetwork):
            raise ValueError(f"{what}: network_params must be a wrap_network.WrapNetwork "
                             f"(wrap_network.load_params(path)), got "
                             f"{type(network_params).__name__}")
        if network_params is not None:
            net.check_params(network_params, f"{what}: network_params")
        params = network_params if network_params is not None else (
            params if params is not None else net.load_params())
    groups = _group(old)
    groups[p] = (a, jnp.asarray(mass_kg, jnp.float64) * w, pm)
    include_qvv = True if old is None else old.include_qvv
    return dataclasses.replace(model, muscle_mass=build_muscle_mass(paths, groups, params,
                                                                    include_qvv))


def without_qvv(model):
    """`model` with the mass points' quadratic velocity vector dropped (seed §4.3 ablation)."""
    if getattr(model, "muscle_mass", None) is None:
        raise ValueError("the model has no muscle mass")
    return dataclasses.replace(model, muscle_mass=dataclasses.replace(model.muscle_mass,
                                                                      include_qvv=False))


def muscle_mass_from_mjcf(mj_model, paths) -> MuscleMass | None:
    """MuscleMass from the `muscle_mass:<tendon name>` custom numerics of a compiled MjModel
    (module docstring), or None if there are none. ValueError naming the numeric otherwise."""
    import mujoco

    groups = {}
    for i in range(mj_model.nnumeric):
        name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_NUMERIC, i) or ""
        if not name.startswith(NUMERIC_PREFIX):
            continue
        tendon = name[len(NUMERIC_PREFIX):]
        adr, size = int(mj_model.numeric_adr[i]), int(mj_model.numeric_size[i])
        data = np.array(mj_model.numeric_data[adr:adr + size], dtype=np.float64)
        where = f"custom numeric '{name}'"
        if paths is None or tendon not in paths.path_names:
            known = [] if paths is None else list(paths.path_names)
            raise ValueError(f"{where}: no spatial tendon named '{tendon}' (paths: {known})")
        if size not in (2, 4):
            raise ValueError(f"{where}: expected data='mass_kg n_points' or 'mass_kg n_points "
                             f"alpha_begin alpha_end', got {size} values")
        p = paths.path_names.index(tendon)
        _check_single_strand(paths, p)
        if not np.isfinite(data[0]) or data[0] < 0.0:
            raise ValueError(f"{where}: mass_kg must be finite and >= 0, got {data[0]!r}")
        n = data[1]
        if not (np.isfinite(n) and n == int(n) and n >= 1):
            raise ValueError(f"{where}: n_points must be a positive integer, got {n!r}")
        belly = tuple(data[2:4]) if size == 4 else (0.0, 1.0)
        a, w = distribution(int(n), belly=belly, what=where)
        groups[p] = (a, data[0] * w, PositionModel.LIBRARY)
    return build_muscle_mass(paths, groups) if paths is not None else None


def path_masses(model) -> jax.Array:
    """(n_paths,) total muscle mass of each path (kg; 0 for massless paths)."""
    paths = getattr(model, "paths", None)
    n = 0 if paths is None else paths.n_paths
    mm = getattr(model, "muscle_mass", None)
    if mm is None:
        return jnp.zeros(n)
    return jax.ops.segment_sum(mm.point_mass, jnp.asarray(mm.point_path, jnp.int32),
                               num_segments=n)
