"""The loader's one error type and the place every message names.

Each message reads `<file>: <Tag> '<name>' (<context>): <problem>`, e.g.
`tiny.osim: CoordinateCouplerConstraint 'couple': a coupler with exactly one independent
coordinate is supported, got <independent_coordinate_names>theta phi
</independent_coordinate_names>`. The problem text quotes the offending value as written in
the file.
"""

from __future__ import annotations

import dataclasses


class OsimError(ValueError):
    """An .osim file (or part of it) outside the supported subset, or malformed (docs/osim.md)."""


@dataclasses.dataclass(frozen=True)
class Where:
    """An element of the file: file name, XML tag, `name` attribute and optional context
    (e.g. "body r_humerus", "muscle TRIlong")."""

    file: str
    tag: str
    name: str
    context: str = ""

    def error(self, problem: str) -> OsimError:
        """An OsimError for `problem` at this element."""
        name = f" '{self.name}'" if self.name else ""
        context = f" ({self.context})" if self.context else ""
        return OsimError(f"{self.file}: {self.tag}{name}{context}: {problem}")

    def inside(self, tag: str, name: str, context: str | None = None) -> Where:
        """The place of a sub-element, in this file; context defaults to this element."""
        if context is None:
            context = f"{self.tag} {self.name}" if self.name else self.tag
        return Where(self.file, tag, name, context)
