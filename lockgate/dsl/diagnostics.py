"""Diagnostics: the one type every layer reports spec problems with.

Positions are 0-based lines and *code point* characters (Python string indices); the LSP adapter
converts characters to UTF-16 units. Checks produce :class:`Finding` values that name a YAML path
instead of a range, so they stay pure; :func:`lockgate.dsl.loader.load` resolves them to
:class:`Diagnostic` values through the document's source map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal

PathPart = str | int
YamlPath = tuple[PathPart, ...]
Span = tuple[int, int]


class Severity(IntEnum):
    """Same numbering as LSP's DiagnosticSeverity."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4


@dataclass(frozen=True, slots=True, order=True)
class Position:
    line: int
    character: int

    def to_dict(self) -> dict[str, int]:
        return {"line": self.line, "character": self.character}


@dataclass(frozen=True, slots=True, order=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, sl: int, sc: int, el: int, ec: int) -> Range:
        return cls(Position(sl, sc), Position(el, ec))

    def contains(self, pos: Position) -> bool:
        return self.start <= pos <= self.end

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start.to_dict(), "end": self.end.to_dict()}


ZERO_RANGE = Range.of(0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class TextEdit:
    range: Range
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return {"range": self.range.to_dict(), "newText": self.new_text}


@dataclass(frozen=True, slots=True)
class Fix:
    """A machine-applicable correction, e.g. a did-you-mean replacement."""

    title: str
    edits: tuple[TextEdit, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "edits": [e.to_dict() for e in self.edits]}


@dataclass(frozen=True, slots=True)
class Related:
    range: Range
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"range": self.range.to_dict(), "message": self.message}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a spec document, with its exact source range."""

    code: str
    message: str
    range: Range
    severity: Severity = Severity.ERROR
    name: str = ""
    hint: str | None = None
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    path: YamlPath = ()

    @property
    def is_error(self) -> bool:
        return self.severity == Severity.ERROR

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.name.lower(),
            "message": self.message,
            "range": self.range.to_dict(),
            "path": format_path(self.path),
        }
        if self.hint:
            out["hint"] = self.hint
        if self.related:
            out["related"] = [r.to_dict() for r in self.related]
        if self.fix:
            out["fix"] = self.fix.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem found by a pure check, located by YAML path rather than by range.

    ``span`` narrows the location to characters of the string value at ``path`` (a reference
    inside a ``do`` template, a token inside an expression). ``at="key"`` points at the mapping
    key instead of its value. ``replacement`` is the text a did-you-mean fix puts in place of the
    located characters.
    """

    code: str
    message: str
    path: YamlPath
    span: Span | None = None
    at: Literal["value", "key"] = "value"
    severity: Severity | None = None
    hint: str | None = None
    replacement: str | None = None
    related: tuple[tuple[YamlPath, str], ...] = field(default=())


def format_path(path: YamlPath) -> str:
    """``("flows", "main", "steps", 1, "do")`` -> ``flows.main.steps[1].do``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
