"""Typed, checked access to the properties of one .osim XML element.

OpenSim writes each property as a child element whose text is the value: numbers in decimal
(`Inf`, `-Inf` and `NaN` spelled as such), vectors as space-separated numbers, booleans as
`true` / `false`, strings as text. `Node` reads them with the checks of the loader: a property
given twice, a missing required property, a non-numeric or non-finite number, a vector of the
wrong length or an unknown property is an `OsimError` naming the file, the element and the
value as written.
"""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from collections.abc import Collection
from pathlib import Path

from myotwin.osim.errors import OsimError, Where

_REQUIRED = object()


def parse_xml(path, error: type[ValueError] = OsimError) -> ET.Element:
    """The root element of the XML file `path`; `error` (OsimError, or a reader's own
    ValueError) naming the file if it cannot be read or parsed."""
    name = Path(path).name
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as err:
        raise error(f"{name}: unreadable XML: {err}") from None
    except OSError as err:
        raise error(f"{name}: cannot read the file: {err}") from None


@dataclasses.dataclass(frozen=True)
class Node:
    """One XML element and where it is (for messages)."""

    elem: ET.Element
    where: Where

    @classmethod
    def of(cls, elem: ET.Element, parent: Where, context: str | None = None) -> Node:
        """A child element read inside `parent` (its context defaults to the parent)."""
        return cls(elem, parent.inside(elem.tag, elem.get("name", ""), context))

    @property
    def tag(self) -> str:
        return self.elem.tag

    @property
    def name(self) -> str:
        return self.elem.get("name", "")

    def error(self, problem: str) -> OsimError:
        return self.where.error(problem)

    def check_children(self, allowed: Collection[str]) -> None:
        """Refuse any child element whose tag is not in `allowed` (a property or component
        the loader does not understand)."""
        for child in self.elem:
            if child.tag not in allowed:
                raise self.error(f"<{child.tag}> is not part of the supported subset "
                                 f"(expected only {', '.join(sorted(allowed))})")

    def find(self, tag: str) -> ET.Element | None:
        """The child element `tag`, or None; two of them is an error."""
        found = self.elem.findall(tag)
        if len(found) > 1:
            raise self.error(f"<{tag}> is given {len(found)} times")
        return found[0] if found else None

    def require(self, tag: str) -> ET.Element:
        found = self.find(tag)
        if found is None:
            raise self.error(f"the required property <{tag}> is missing")
        return found

    def text(self, tag: str, default=_REQUIRED) -> str:
        """The stripped text of property `tag` (`default` if absent; required otherwise)."""
        found = self.find(tag) if default is not _REQUIRED else self.require(tag)
        if found is None:
            return default
        return (found.text or "").strip()

    def path(self, tag: str, folder: Path) -> Path | None:
        """Property `tag` of a tool setup as a file path, a relative one taken from `folder`
        (the setup's, as OpenSim's tools resolve them); None when absent, empty or
        "Unassigned" (OpenSim's unset path)."""
        text = self.text(tag, "")
        if not text or text == "Unassigned":
            return None
        path = Path(text)
        return path if path.is_absolute() else folder / path

    def paths(self, tag: str, folder: Path) -> tuple[Path, ...]:
        """Property `tag` as space-separated file paths (a tool's force_set_files), each
        relative one taken from `folder`."""
        return tuple(p if p.is_absolute() else folder / p
                     for p in map(Path, self.text(tag, "").split()))

    def has_value(self, tag: str) -> bool:
        """True if property `tag` is present with a non-empty value (OpenSim writes unset
        optional properties as empty elements)."""
        found = self.find(tag)
        return found is not None and bool((found.text or "").strip())

    def numbers(self, tag: str, n: int, default=_REQUIRED, *,
                finite: bool = True) -> tuple[float, ...]:
        """Property `tag` as exactly n numbers (finite unless finite=False)."""
        if default is not _REQUIRED and self.find(tag) is None:
            return default
        raw = self.text(tag)
        words = raw.split()
        wanted = "a number" if n == 1 else f"{n} numbers"
        if len(words) != n:
            raise self.error(f"<{tag}> must be {wanted}, got {raw!r}")
        values = []
        for word in words:
            try:
                x = float(word)
            except ValueError:
                raise self.error(f"<{tag}> must be {wanted}, got {raw!r}") from None
            if math.isnan(x) or (finite and math.isinf(x)):
                raise self.error(f"<{tag}> must be finite, got {raw!r}")
            values.append(x)
        return tuple(values)

    def number(self, tag: str, default=_REQUIRED, *, finite: bool = True) -> float:
        """Property `tag` as one number."""
        if default is not _REQUIRED and self.find(tag) is None:
            return default
        return self.numbers(tag, 1, finite=finite)[0]

    def flag(self, tag: str, default=_REQUIRED) -> bool:
        """Property `tag` as a boolean (`true` / `false`)."""
        if default is not _REQUIRED and self.find(tag) is None:
            return default
        raw = self.text(tag)
        if raw not in ("true", "false"):
            raise self.error(f"<{tag}> must be true or false, got {raw!r}")
        return raw == "true"

    def objects(self, set_tag: str) -> list[ET.Element]:
        """The elements of an OpenSim Set property (`<set_tag><objects>...</objects>
        <groups/></set_tag>`); an absent set is empty. Object groups only name members: no
        physics."""
        found = self.find(set_tag)
        if found is None:
            return []
        node = Node(found, self.where.inside(set_tag, found.get("name", "")))
        if found.get("file"):
            raise node.error(f"sets kept in another file are not supported, got "
                             f"file={found.get('file')!r}")
        node.check_children(("objects", "groups"))
        objects = node.find("objects")
        return [] if objects is None else list(objects)


@dataclasses.dataclass
class Omissions:
    """The names the caller passed in `omit`, and those found so far (in file order)."""

    requested: frozenset[str]
    used: list[str] = dataclasses.field(default_factory=list)

    def take(self, node: Node) -> bool:
        """True (and recorded) if this element is to be left out."""
        if node.name and node.name in self.requested:
            self.used.append(node.name)
            return True
        return False


def document_element(root: ET.Element, file_name: str, tag: str, min_version: int,
                     too_old: str) -> Node:
    """The one `tag` element under an `OpenSimDocument` root whose integer Version is at
    least `min_version`; an OsimError otherwise. too_old says what an older Version is (e.g.
    "an OpenSim 3 (or older) file")."""
    doc = Node(root, Where(file_name, root.tag, ""))
    if root.tag != "OpenSimDocument":
        raise doc.error("the root element must be OpenSimDocument")
    raw = root.get("Version")
    try:
        version = int(raw)
    except (TypeError, ValueError):
        raise doc.error(f"Version must be an integer, got {raw!r}") from None
    if version < min_version:
        raise doc.error(f"Version {raw} is {too_old}; only Version >= {min_version} is "
                        "supported")
    doc.check_children((tag,))
    elem = doc.require(tag)
    return Node(elem, Where(file_name, tag, elem.get("name", "")))
