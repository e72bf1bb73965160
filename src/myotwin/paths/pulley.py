"""Pulleys: a spatial tendon split into branches whose lengths are divided by a divisor
(MuJoCo 4.0 mj_tendon, `<pulley divisor="..."/>`).

A tendon's element list (sites, wrap geoms, pulleys; see `sequence.py`) is cut at each pulley.
The first branch has divisor 1; a pulley's divisor applies to every segment after it up to the
next pulley. The tendon length is sum over branches of (branch length / divisor), and so is its
length Jacobian: a branch of divisor 2 is one strand of a two-strand block and tackle.
A branch with fewer than two elements has no segment and adds nothing (as in MuJoCo).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from myotwin.paths.sequence import Element, WrapType


class Branch(NamedTuple):
    """One branch of a tendon: its divisor and its (site / wrap geom) elements in order."""

    divisor: float
    elements: tuple[Element, ...]


def split_at_pulleys(elements: Sequence[Element], what: str) -> list[Branch]:
    """Cut a tendon's elements at its pulleys. `what` names the tendon in error messages.

    Raises ValueError for a divisor that is not positive and finite (MuJoCo's compiler would
    reject it too; a model edited after compilation might not be).
    """
    branches: list[Branch] = []
    divisor, current = 1.0, []
    for k, el in enumerate(elements):
        if el.type == WrapType.PULLEY:
            branches.append(Branch(divisor, tuple(current)))
            divisor, current = float(el.prm), []
            if not (divisor > 0.0 and divisor < float("inf")):
                raise ValueError(f"{what}, element {k} (pulley): divisor must be positive and "
                                 f"finite, got {el.prm!r}")
        else:
            current.append(el)
    branches.append(Branch(divisor, tuple(current)))
    return [b for b in branches if len(b.elements) >= 2]
