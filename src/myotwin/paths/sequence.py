"""Site sequences (Type II via-point paths of Wang et al. 2022 §3.2) and their units.

A branch of a spatial tendon (see `pulley.py`) is a sequence of sites, optionally with a wrap
geom between two consecutive sites: site (geom? site)+. MuJoCo 4.0 mj_tendon walks it in
*units*: a site followed by a site is a straight segment (Type I/II); a site, a geom and a site
form a wrap unit (Type III) whose path is either the straight segment (wrap inactive) or
site -> tangent point -> arc/helix -> tangent point -> site. The branch length is the sum of its
unit lengths, i.e. the polyline through the via points with wraps in between.

Sites are fixed on their bodies (MuJoCo has no moving or conditional via points; via points
active only in a coordinate range, an OpenSim feature, are not part of MJCF tendons).
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Sequence


class WrapType(enum.IntEnum):
    """MuJoCo's mjtWrap values (the `wrap_type` of each tendon element)."""

    NONE = 0
    JOINT = 1
    PULLEY = 2
    SITE = 3
    SPHERE = 4
    CYLINDER = 5


class Element(NamedTuple):
    """One element of a spatial tendon as compiled by MuJoCo: type, object id (site or geom),
    and wrap_prm (pulley divisor, or side-site id for a geom, -1 if none)."""

    type: WrapType
    obj: int
    prm: float


class Unit(NamedTuple):
    """A straight segment (geom = -1, wrap = NONE) or a wrap unit between sites site0 and
    site1 around `geom` (wrap = SPHERE or CYLINDER) with an optional side site (-1: none)."""

    site0: int
    site1: int
    geom: int
    wrap: WrapType
    side_site: int


def branch_units(elements: Sequence[Element], what: str) -> list[Unit]:
    """Units of one branch, in order. `what` names the tendon/branch in error messages.

    Raises ValueError unless the branch reads site (geom? site)+ (MuJoCo's compiler enforces
    the same; this guards models built or edited by other means).
    """
    types = [el.type for el in elements]
    for k, t in enumerate(types):
        if t not in (WrapType.SITE, WrapType.SPHERE, WrapType.CYLINDER):
            raise ValueError(f"{what}, element {k}: unexpected element type {t!r} in a spatial "
                             "tendon branch (expected sites and sphere/cylinder geoms)")
    if types[0] != WrapType.SITE or types[-1] != WrapType.SITE:
        raise ValueError(f"{what}: a branch must start and end with a site, got "
                         f"{types[0].name.lower()} ... {types[-1].name.lower()}")
    units, j = [], 0
    while j < len(elements) - 1:
        first, nxt = elements[j], elements[j + 1]
        if first.type != WrapType.SITE:
            raise ValueError(f"{what}, element {j}: two wrap geoms in a row (a geom must be "
                             "between two sites)")
        if nxt.type == WrapType.SITE:
            units.append(Unit(first.obj, nxt.obj, -1, WrapType.NONE, -1))
            j += 1
            continue
        last = elements[j + 2]
        if last.type != WrapType.SITE:
            raise ValueError(f"{what}, element {j + 2}: the geom at element {j + 1} must be "
                             "followed by a site")
        units.append(Unit(first.obj, last.obj, nxt.obj, nxt.type, int(round(nxt.prm))))
        j += 2
    return units
