"""Compiled musculotendon paths: MJCF spatial tendons frozen into an immutable JAX pytree.

`compile_paths(mj_model)` reads every spatial tendon of a compiled `mujoco.MjModel` in file
order (MuJoCo's tendon order), cuts it at its pulleys (`pulley.py`), walks each branch in units
(`sequence.py`) and stores:
  * static topology (Python tuples, hashed by `jax.jit`): for every unit its path, branch,
    sites and their bodies, and its wrap (-1 for a straight segment); for every wrap its
    obstacle type, body, MuJoCo geom id and side site (-1 for none);
  * float64 leaves (differentiable, vmappable): each unit's pulley divisor, each wrap geom's
    frame in its body frame (geom_pos, geom_quat w-first) and radius (geom_size[0]).
The sites are referenced by their ids in the skeleton `engine.Model` compiled from the same
MjModel (site ids are MuJoCo's); every path function checks that the model matches.

Rejected with a ValueError naming the tendon and the element: fixed (joint) tendons, wrap
geoms other than spheres and cylinders, side-site ids out of range, a non-positive divisor,
malformed element sequences.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.paths.pulley import split_at_pulleys
from myotwin.paths.sequence import Element, WrapType, branch_units

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class PathSet:
    """Immutable set of musculotendon paths (a JAX pytree), one per spatial tendon.

    Leaves (float64):
      unit_divisor (n_units,): pulley divisor of each unit's branch (1 without pulleys).
      wrap_pos (n_wraps, 3), wrap_quat (n_wraps, 4): wrap geom frame in its body frame (m, w-first).
      wrap_radius (n_wraps,): sphere or cylinder radius (m).

    Static metadata:
      n_paths, n_units, n_wraps: counts. path_names (n_paths,): tendon names ("" if unnamed);
      path_tendon (n_paths,): MuJoCo tendon id.
      unit_path, unit_branch (n_units,): path and branch (0 before the first pulley) of each unit;
      unit_site0, unit_site1 (n_units,): start and end site; unit_body0, unit_body1: their bodies;
      unit_wrap (n_units,): index into the wrap arrays, -1 for a straight segment.
      wrap_unit (n_wraps,): unit of each wrap; wrap_type (n_wraps,): `WrapType.SPHERE/CYLINDER`;
      wrap_body (n_wraps,): body carrying the geom; wrap_geom (n_wraps,): MuJoCo geom id;
      wrap_side_site (n_wraps,): side site id, -1 if none.
      n_body, n_site: sizes of the skeleton the paths were compiled against.
    """

    unit_divisor: jax.Array
    wrap_pos: jax.Array
    wrap_quat: jax.Array
    wrap_radius: jax.Array
    n_paths: int = dataclasses.field(metadata=_STATIC)
    n_units: int = dataclasses.field(metadata=_STATIC)
    n_wraps: int = dataclasses.field(metadata=_STATIC)
    path_names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)
    path_tendon: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_path: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_branch: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_site0: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_site1: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_body0: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_body1: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    unit_wrap: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_unit: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_type: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_body: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_geom: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    wrap_side_site: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    n_body: int = dataclasses.field(metadata=_STATIC)
    n_site: int = dataclasses.field(metadata=_STATIC)


_DATA = [f.name for f in dataclasses.fields(PathSet) if not f.metadata.get("static")]
_META = [f.name for f in dataclasses.fields(PathSet) if f.metadata.get("static")]
jax.tree_util.register_dataclass(PathSet, data_fields=_DATA, meta_fields=_META)


def check_model(paths: PathSet, model) -> None:
    """Raise ValueError unless `model` (an engine.Model) is the skeleton `paths` was compiled
    against (same body and site counts, same body for every site the paths use)."""
    if (paths.n_body, paths.n_site) != (model.n_body, model.n_site):
        raise ValueError(
            f"PathSet was compiled for {paths.n_body} bodies and {paths.n_site} sites, the model "
            f"has {model.n_body} bodies and {model.n_site} sites: compile both from one MjModel"
        )
    for u in range(paths.n_units):
        for site, body in ((paths.unit_site0[u], paths.unit_body0[u]),
                           (paths.unit_site1[u], paths.unit_body1[u])):
            if model.site_body[site] != body:
                raise ValueError(
                    f"path '{paths.path_names[paths.unit_path[u]]}': site {site} is on body "
                    f"{body} in the PathSet but on body {model.site_body[site]} in the model"
                )


def _name(m, objtype: str, i: int) -> str:
    import mujoco

    return mujoco.mj_id2name(m, getattr(mujoco.mjtObj, objtype), i) or ""


def _label(m, t: int) -> str:
    name = _name(m, "mjOBJ_TENDON", t)
    return f"tendon #{t}" + (f" '{name}'" if name else "")


def _elements(m, t: int) -> list[Element]:
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    what = _label(m, t)
    out = []
    for k in range(adr, adr + num):
        wtype = int(m.wrap_type[k])
        if wtype == WrapType.JOINT:
            raise ValueError(
                f"{what} is a fixed tendon (element {k - adr} couples joint "
                f"'{_name(m, 'mjOBJ_JOINT', int(m.wrap_objid[k]))}'): myotwin.paths represents "
                "spatial tendons only"
            )
        if wtype not in tuple(WrapType):
            raise ValueError(f"{what}, element {k - adr}: unknown wrap type {wtype}")
        out.append(Element(WrapType(wtype), int(m.wrap_objid[k]), float(m.wrap_prm[k])))
    if num < 2:
        raise ValueError(f"{what} has {num} element(s); a spatial tendon needs two sites")
    return out


def _check_geom(m, what: str, geom: int, wtype: WrapType, side: int) -> None:
    import mujoco

    gtype = int(m.geom_type[geom])
    expected = {WrapType.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
                WrapType.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER}[wtype]
    gname = _name(m, "mjOBJ_GEOM", geom) or f"#{geom}"
    if gtype != expected:
        raise ValueError(f"{what}: wrap geom '{gname}' has geom type {gtype}; only spheres and "
                         "cylinders can be wrapped")
    if not -1 <= side < m.nsite:
        raise ValueError(f"{what}: wrap geom '{gname}' has side site id {side}, outside "
                         f"[-1, {m.nsite - 1}]")
    if not np.isfinite(m.geom_size[geom, 0]) or m.geom_size[geom, 0] < 0:
        raise ValueError(f"{what}: wrap geom '{gname}' has radius {m.geom_size[geom, 0]!r}")


def _select(m, tendons: Sequence[int | str] | None) -> list[int]:
    import mujoco

    if tendons is None:
        return list(range(m.ntendon))
    ids = []
    for t in tendons:
        tid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_TENDON, t) if isinstance(t, str) else int(t)
        if not 0 <= tid < m.ntendon:
            raise ValueError(f"no tendon {t!r} in the model ({m.ntendon} tendons)")
        ids.append(tid)
    return ids


def compile_paths(mj_model, tendons: Sequence[int | str] | None = None) -> PathSet:
    """Freeze the spatial tendons of a compiled `mujoco.MjModel` (only read) into a PathSet.

    tendons: names or ids of the tendons to compile, in the order given; default every tendon
    in file order. Raises ValueError for what the paths cannot represent (see module docstring)
    and RuntimeError if JAX's float64 mode is off.
    """
    if not jax.config.jax_enable_x64:
        raise RuntimeError(
            'myotwin.paths needs float64: call jax.config.update("jax_enable_x64", True) '
            "before compiling paths"
        )
    m = mj_model
    units, wraps = [], []  # units: (path, branch, site0, site1, divisor, wrap); wraps: dicts
    ids = _select(m, tendons)
    for p, t in enumerate(ids):
        what = _label(m, t)
        for b, branch in enumerate(split_at_pulleys(_elements(m, t), what)):
            for unit in branch_units(branch.elements, f"{what} branch {b}"):
                w = -1
                if unit.geom >= 0:
                    _check_geom(m, what, unit.geom, unit.wrap, unit.side_site)
                    w = len(wraps)
                    wraps.append((len(units), unit.wrap, unit.geom, unit.side_site))
                units.append((p, b, unit.site0, unit.site1, branch.divisor, w))

    def col(rows, k):
        return tuple(int(r[k]) for r in rows)

    site_body = np.asarray(m.site_bodyid)
    geoms = [w[2] for w in wraps]
    return PathSet(
        unit_divisor=jnp.asarray(np.array([u[4] for u in units], dtype=np.float64)),
        wrap_pos=jnp.asarray(np.array(m.geom_pos, dtype=np.float64)[geoms].reshape(-1, 3)),
        wrap_quat=jnp.asarray(np.array(m.geom_quat, dtype=np.float64)[geoms].reshape(-1, 4)),
        wrap_radius=jnp.asarray(np.array(m.geom_size[:, 0], dtype=np.float64)[geoms]),
        n_paths=len(ids),
        n_units=len(units),
        n_wraps=len(wraps),
        path_names=tuple(_name(m, "mjOBJ_TENDON", t) for t in ids),
        path_tendon=tuple(ids),
        unit_path=col(units, 0),
        unit_branch=col(units, 1),
        unit_site0=col(units, 2),
        unit_site1=col(units, 3),
        unit_body0=tuple(int(site_body[u[2]]) for u in units),
        unit_body1=tuple(int(site_body[u[3]]) for u in units),
        unit_wrap=col(units, 5),
        wrap_unit=col(wraps, 0),
        wrap_type=col(wraps, 1),
        wrap_body=tuple(int(m.geom_bodyid[g]) for g in geoms),
        wrap_geom=tuple(geoms),
        wrap_side_site=col(wraps, 3),
        n_body=int(m.nbody),
        n_site=int(m.nsite),
    )
