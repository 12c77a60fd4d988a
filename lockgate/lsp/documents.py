"""Open documents and their analyses.

The server keeps its own copy of every open document (see :func:`positions.apply_change`) and
analyses each version at most once, lazily. An analysis is :func:`lockgate.dsl.loader.load` plus
the per-version :class:`LineIndex`. While the user types, the text is often not valid YAML; the
store then also keeps the *last good* analysis (the latest one whose YAML parsed), which
completion, hover and navigation fall back on so they keep working on a half-typed buffer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Diagnostic
from lockgate.dsl.ir import Spec

from .positions import Encoding, LineIndex, apply_change

log = logging.getLogger(__name__)

# Codes meaning the YAML itself could not be read: no tree, no source map worth keeping.
_UNPARSED_CODES = frozenset({"LG101", "LG102", "LG103", "LG105", "LG106", "LG107"})


@dataclass(frozen=True)
class Analysis:
    """One analysed version of one document. Immutable; shared by every request on it."""

    uri: str
    version: int | None
    text: str
    result: Any  # lockgate.dsl.loader.LoadResult, or None when the loader itself failed
    elapsed_ms: float = 0.0
    failure: str | None = field(default=None, repr=False)
    stale: bool = False  # the IR comes from an earlier version than ``text``
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def memo(self, key: str, factory: Callable[[Analysis], Any]) -> Any:
        """A value derived from this analysis, computed once (symbol index, tokens...)."""
        if key not in self._memo:
            self._memo[key] = factory(self)
        return self._memo[key]

    @cached_property
    def lines(self) -> LineIndex:
        return LineIndex(self.text)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return list(self.result.diagnostics) if self.result is not None else []

    @property
    def ir(self) -> Spec | None:
        return self.result.ir if self.result is not None else None

    @property
    def source_map(self) -> Any:
        return self.result.source_map if self.result is not None else None

    @property
    def parsed(self) -> bool:
        """Whether the YAML of ``text`` parsed into a mapping (the IR and source map are exact)."""
        if self.stale or self.ir is None or self.source_map is None:
            return False
        return not any(d.code in _UNPARSED_CODES for d in self.diagnostics)

    @cached_property
    def outline(self):
        """The indentation outline of the text (see :mod:`lockgate.lsp.context`)."""
        from .context import Outline

        return Outline(self.text)


def analyze(
    uri: str,
    text: str,
    version: int | None,
    *,
    agents: Collection[str] = (),
    lint: bool = True,
) -> Analysis:
    """Run the spec loader over ``text``. Never raises: a loader crash is logged and kept."""
    from lockgate.dsl.loader import load

    started = time.perf_counter()
    try:
        result = load(text, _path_of(uri), agents=tuple(agents) or None, lint=lint)
        failure = None
    except Exception as exc:  # noqa: BLE001 - a loader bug must not take the server down
        log.exception("analysis of %s failed", uri)
        result, failure = None, f"{type(exc).__name__}: {exc}"
    elapsed = (time.perf_counter() - started) * 1000
    return Analysis(uri, version, text, result, elapsed, failure)


def _path_of(uri: str) -> str | None:
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(uri).path)
    return None


@dataclass
class _Entry:
    text: str
    version: int | None
    language_id: str = "yaml"
    current: Analysis | None = None
    last_good: Analysis | None = None


class DocumentStore:
    """Texts of the open documents, and their analyses cached per version."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.agents: tuple[str, ...] = ()
        self.lint: bool = True

    def __contains__(self, uri: str) -> bool:
        return uri in self._entries

    def uris(self) -> list[str]:
        return list(self._entries)

    def open(self, uri: str, text: str, version: int | None, language_id: str = "yaml") -> None:
        self._entries[uri] = _Entry(text, version, language_id)

    def change(
        self,
        uri: str,
        changes: Sequence[Any],
        version: int | None,
        encoding: Encoding = "utf-16",
    ) -> None:
        """Apply full or incremental content changes in order."""
        entry = self._entries.get(uri)
        if entry is None:
            return
        text = entry.text
        for change in changes:
            rng = change.range if isinstance(change, lsp.TextDocumentContentChangePartial) else None
            text = apply_change(text, rng, change.text, encoding)
        entry.text, entry.version, entry.current = text, version, None

    def close(self, uri: str) -> None:
        self._entries.pop(uri, None)

    def text(self, uri: str) -> str | None:
        entry = self._entries.get(uri)
        return entry.text if entry else None

    def version(self, uri: str) -> int | None:
        entry = self._entries.get(uri)
        return entry.version if entry else None

    def invalidate(self) -> None:
        """Forget every analysis (after a settings change)."""
        for entry in self._entries.values():
            entry.current = None

    def analysis(self, uri: str) -> Analysis | None:
        """The analysis of the current version (computed now if needed); None if not open."""
        entry = self._entries.get(uri)
        if entry is None:
            return None
        if entry.current is None:
            entry.current = analyze(uri, entry.text, entry.version, agents=self.agents, lint=self.lint)
            if entry.current.parsed:
                entry.last_good = entry.current
        return entry.current

    def usable(self, uri: str) -> Analysis | None:
        """The current analysis if its YAML parsed; otherwise the current text with the IR of
        the last good version, marked ``stale`` (its source map no longer matches the text, so
        only text-based context and IR names are used from it)."""
        current = self.analysis(uri)
        if current is None or current.parsed:
            return current
        good = self._entries[uri].last_good
        if good is None:
            return current
        return Analysis(uri, current.version, current.text, good.result, 0.0, None, stale=True)
