"""Server settings, read from the client's ``lockgate`` configuration section.

Every value has a default, so a client that sends nothing (or something malformed) gets a
working server; unknown keys are ignored. Both ``camelCase`` (VS Code style) and ``snake_case``
spellings are accepted.

There is no workspace root setting: the server never evaluates ``file_exists`` /
``file_contains``, and a run resolves them in its own workspace (the folder ``lockgate run``
starts in, or the ``workspace=`` a Python caller passes), which no editor setting can change.
A ``workspaceRoot`` an older client sends is an unknown key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SECTION = "lockgate"
DEFAULT_DEBOUNCE_MS = 150
#: Documents larger than this (UTF-8 bytes) get no full analysis: a generated 6 MB spec took the
#: server to ~650 MB resident and tens of seconds; 0 turns the limit off.
DEFAULT_MAX_DOCUMENT_BYTES = 5_000_000


@dataclass(frozen=True, slots=True)
class Settings:
    """``agents``: agent names configured beyond the built-ins; ``lint``: advisory warnings on or
    off; ``debounce_ms``: delay of diagnostics while typing; ``inlay_hints``: show reference
    types inline; ``max_document_bytes``: the size above which a document is not analysed (0:
    no limit)."""

    agents: tuple[str, ...] = ()
    lint: bool = True
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    inlay_hints: bool = True
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_client(cls, raw: Any) -> Settings:
        """Settings from the configuration value a client sent (any shape), with defaults."""
        data = raw if isinstance(raw, Mapping) else {}
        if isinstance(data.get(SECTION), Mapping):
            data = data[SECTION]
        agents = _get(data, "agents", [])
        debounce = _get(data, "debounce_ms", DEFAULT_DEBOUNCE_MS)
        limit = _get(data, "max_document_bytes", DEFAULT_MAX_DOCUMENT_BYTES)
        return cls(
            agents=tuple(a for a in agents if isinstance(a, str)) if isinstance(agents, list) else (),
            lint=_bool(_get(data, "lint", True), True),
            debounce_ms=debounce if type(debounce) is int and 0 <= debounce <= 10_000 else DEFAULT_DEBOUNCE_MS,
            inlay_hints=_bool(_get(data, "inlay_hints", True), True),
            max_document_bytes=limit if type(limit) is int and limit >= 0 else DEFAULT_MAX_DOCUMENT_BYTES,
            extra=dict(data),
        )


def _get(data: Mapping[str, Any], snake: str, default: Any) -> Any:
    head, *rest = snake.split("_")
    camel = head + "".join(part.title() for part in rest)
    if camel in data:
        return data[camel]
    return data.get(snake, default)


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("enabled"), bool):
        return value["enabled"]
    return default
