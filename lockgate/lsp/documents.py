"""Open documents and their analyses.

The server keeps its own copy of every open document (see :func:`positions.apply_change`). Each
version of the text is a :class:`Text`, whose line index and indentation outline are built on
first use and shared by every request on that version. An analysis is
:func:`lockgate.dsl.loader.load` of one :class:`Text`; it runs on a worker thread, at most once
per version and settings, so requests never wait for it unless they need the exact analysis of
the current text (diagnostics, navigation, rename).

While the user types, the newest analysis is usually of an older text, or of text that is not
valid YAML. Completion and hover answer from a *view* (:meth:`DocumentStore.usable`): the
current text (for the cursor context) with the result of the last analysis whose YAML parsed
(for the names and types). The view's ``base`` is that analysis, so hover can map an unchanged
line of the current text into it and answer exactly.

What an analysis reports also depends on the spec's project configuration (the agents of the
nearest ``lockgate.toml``, LG905), a file the editor may change while the spec stays as it is.
An analysis records the configuration file it saw (:func:`config_stamp`); the server drops
the analyses of the documents a changed configuration governs (:meth:`DocumentStore.invalidate`
with ``folders``, on ``workspace/didChangeWatchedFiles``), and, when a document's configuration
changed on disk unseen (:meth:`DocumentStore.revalidate`, on save and on a diagnostics pull),
those of every document that configuration governs, as if the change had been watched.

A text over the size limit (``lockgate.maxDocumentBytes``) is not given to the loader at all:
its analysis has no result and carries the limit, which diagnostics report; completion, hover
and folding still answer from the text's outline.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Diagnostic
from lockgate.dsl.ir import Spec

from .positions import Encoding, LineIndex, apply_change

log = logging.getLogger(__name__)

# Codes meaning the YAML itself could not be read: no tree, no source map worth keeping.
_UNPARSED_CODES = frozenset({"LG101", "LG102", "LG103", "LG105", "LG106", "LG107"})
_BREAK = re.compile(r"\r\n|\r|\n")
#: numbers every analysis, for diagnostics result ids that no later analysis can repeat
_SERIALS = itertools.count(1)


class Text:
    """One version of a document's text; its line index, lines and outline are built once, on
    first use, and shared by everything that reads this version."""

    __slots__ = ("_lines", "_outline", "_raw", "_size", "text", "version")

    def __init__(self, text: str, version: int | None = None) -> None:
        self.text = text
        self.version = version
        self._lines: LineIndex | None = None
        self._raw: list[str] | None = None
        self._outline: Any = None
        self._size: int | None = None

    def __repr__(self) -> str:
        return f"Text(version={self.version}, {len(self.text)} chars)"

    @property
    def size(self) -> int:
        """The text's length in UTF-8 bytes (what the size limit counts; editors show it too)."""
        if self._size is None:
            text = self.text
            self._size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        return self._size

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    @property
    def raw_lines(self) -> list[str]:
        """The lines without their breaks (split as LSP does: ``\\r\\n``, ``\\r``, ``\\n``)."""
        if self._raw is None:
            self._raw = _BREAK.split(self.text)
        return self._raw

    @property
    def outline(self):
        """The indentation outline (see :mod:`lockgate.lsp.context`)."""
        if self._outline is None:
            from .context import Outline

            self._outline = Outline(self.text, self.raw_lines)
        return self._outline


@dataclass(frozen=True)
class Analysis:
    """One analysed version of one document, or a view of the current text over an earlier
    analysis (``stale``). Immutable; shared by every request on it."""

    uri: str
    doc: Text
    result: Any  # lockgate.dsl.loader.LoadResult, or None when the loader failed or has not run
    elapsed_ms: float = 0.0
    failure: str | None = field(default=None, repr=False)
    stale: bool = False  # the IR comes from ``base``, an analysis of an earlier text
    limit: int | None = None  # the size limit ``doc`` exceeds: it was not analysed
    base: Analysis | None = field(default=None, repr=False, compare=False)
    #: the configuration file the analysis read and its stat (see :func:`config_stamp`)
    config: tuple[str, int, int, int] | None = field(default=None, compare=False)
    serial: int = field(default_factory=lambda: next(_SERIALS), repr=False, compare=False)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def memo(self, key: str, factory: Callable[[Analysis], Any]) -> Any:
        """A value derived from this analysis, computed once (symbol index, tokens...)."""
        if key not in self._memo:
            self._memo[key] = factory(self)
        return self._memo[key]

    @property
    def version(self) -> int | None:
        return self.doc.version

    @property
    def text(self) -> str:
        return self.doc.text

    @property
    def lines(self) -> LineIndex:
        return self.doc.lines

    @property
    def outline(self):
        return self.doc.outline

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
        return not any(d.code in _UNPARSED_CODES for d in self.result.diagnostics)


def analyze(
    uri: str,
    text: str | Text,
    version: int | None = None,
    *,
    agents: Collection[str] = (),
    lint: bool = True,
) -> Analysis:
    """Run the spec loader over ``text``, the agents ``agents`` and the spec's project
    configuration names known (:mod:`.projectagents`). Never raises: a loader crash is logged
    and kept. Safe to call on a worker thread (it reads nothing but its arguments and that
    configuration)."""
    from lockgate.dsl.loader import load

    from .projectagents import configured_agents

    doc = text if isinstance(text, Text) else Text(text, version)
    started = time.perf_counter()
    path = path_of(uri)
    config = config_stamp(path)  # before the file is read: a change meanwhile shows as stale
    try:
        project = configured_agents(path) if lint else None
        known = (*agents, *project.agents) if project is not None else tuple(agents)
        result = load(doc.text, path, agents=known or None, lint=lint)
        if project is not None and project.problem is not None:
            result = _unconfigured(result, project.problem)
        failure = None
    except Exception as exc:  # a loader bug must not take the server down
        log.exception("analysis of %s failed", uri)
        result, failure = None, f"{type(exc).__name__}: {exc}"
    elapsed = (time.perf_counter() - started) * 1000
    return Analysis(uri, doc, result, elapsed, failure, config=config)


def _unconfigured(result, problem: str):
    """``result`` under a configuration that cannot be read: which agents it configures is
    unknown, so no agent is called unconfigured (LG905, as ``lockgate validate`` drops it), and
    the reason is reported at the top of the spec (LG111, as validate reports it)."""
    from dataclasses import replace

    from lockgate.dsl.codes import AGENT_CONFIG_CODES, lookup
    from lockgate.dsl.diagnostics import Range

    kept = [d for d in result.diagnostics if d.code not in AGENT_CONFIG_CODES]
    first = len(result.text.partition("\n")[0].rstrip("\r"))
    kept.insert(0, Diagnostic(
        code="LG111", name=lookup("LG111").name, range=Range.of(0, 0, 0, first),
        message=f"the project configuration cannot be read, so its agents are unknown: {problem}",
        hint="lockgate run refuses it too: fix it, or give run another with --config"))
    return replace(result, diagnostics=kept)


def config_stamp(spec_path: str | None) -> tuple[str, int, int, int] | None:
    """The project configuration governing the spec at ``spec_path`` (the nearest
    ``lockgate.toml``, or ``pyproject.toml`` with ``[tool.lockgate]``) as (its path, modification
    time, size, inode): any edit, replacement or a nearer file makes a different stamp. None for
    a document that is no file or has no configuration."""
    if spec_path is None:
        return None
    from lockgate.engine.agents.config import find_config
    from lockgate.errors import ConfigError

    try:
        found = find_config(Path(spec_path).parent)
        if found is None:
            return None
        stat = found.stat()
    except (ConfigError, OSError):  # unreadable: the analysis reads no agents from it either
        return None
    return str(found), stat.st_mtime_ns, stat.st_size, stat.st_ino


def over_limit(doc: Text, limit: int) -> bool:
    """Whether ``doc`` is too large to analyse under ``limit`` bytes (0: no limit)."""
    return 0 < limit < doc.size


def path_of(uri: str) -> str | None:
    """The file a ``file:`` URI names; None for other schemes (an unsaved document)."""
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(uri).path)
    return None


@dataclass
class _Entry:
    doc: Text
    language_id: str = "yaml"
    current: Analysis | None = None  # the analysis of ``doc`` under the current settings
    latest: Analysis | None = None  # the newest finished analysis, of any version
    last_good: Analysis | None = None  # the newest finished analysis whose YAML parsed
    pending: dict[tuple[int, int, int], asyncio.Future[Analysis]] = field(default_factory=dict)
    epoch: int = 0  # bumped when the document's project configuration changes


class DocumentStore:
    """Texts of the open documents, and their analyses (run on ``executor``, one at a time)."""

    def __init__(self, executor: Executor | None = None) -> None:
        self._entries: dict[str, _Entry] = {}
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix="lockgate-analysis")
        self._generation = 0  # bumped when settings change what an analysis reports
        self.agents: tuple[str, ...] = ()
        self.lint: bool = True
        self.max_bytes: int = 0  # documents above this many bytes are not analysed (0: no limit)

    def __contains__(self, uri: str) -> bool:
        return uri in self._entries

    def uris(self) -> list[str]:
        return list(self._entries)

    def open(self, uri: str, text: str, version: int | None, language_id: str = "yaml") -> None:
        self._entries[uri] = _Entry(Text(text, version), language_id)

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
        text, index = entry.doc.text, entry.doc.lines
        for change in changes:
            rng = change.range if isinstance(change, lsp.TextDocumentContentChangePartial) else None
            text = apply_change(text, rng, change.text, encoding, index)
        entry.doc, entry.current = Text(text, version), None

    def close(self, uri: str) -> None:
        self._entries.pop(uri, None)

    def doc(self, uri: str) -> Text | None:
        """The current text of an open document."""
        entry = self._entries.get(uri)
        return entry.doc if entry else None

    def text(self, uri: str) -> str | None:
        entry = self._entries.get(uri)
        return entry.doc.text if entry else None

    def version(self, uri: str) -> int | None:
        entry = self._entries.get(uri)
        return entry.doc.version if entry else None

    def invalidate(self, folders: Collection[str] | None = None) -> list[str]:
        """Forget the current analyses (after a settings change), or only those of the documents
        inside one of ``folders`` (after a project configuration there changed), and return the
        URIs of the documents concerned. The last good analyses stay usable for completion and
        hover until fresh ones are done; an analysis already running is not taken as current."""
        if folders is None:
            self._generation += 1
            for entry in self._entries.values():
                entry.current = None
            return self.uris()
        roots = [os.path.realpath(folder) for folder in folders]
        stale = [uri for uri in self._entries if _inside(path_of(uri), roots)]
        for uri in stale:
            self._forget(self._entries[uri])
        return stale

    def revalidate(self, uri: str) -> set[str]:
        """Forget the current analysis of ``uri`` if the project configuration it read has
        changed on disk since (for a client that does not watch the file), and return the
        folders of that configuration and of the one governing ``uri`` now (a configuration
        may have been added nearer the spec, or removed): the caller invalidates them, as for a
        watched change, so the other documents they govern follow too. Empty if unchanged."""
        entry = self._entries.get(uri)
        current = entry.current if entry is not None else None
        if current is None or current.limit is not None:
            return set()  # nothing analysed, or too large to be
        now = config_stamp(path_of(uri))
        if current.config == now:
            return set()
        self._forget(entry)
        return {str(Path(stamp[0]).parent) for stamp in (current.config, now) if stamp is not None}

    @staticmethod
    def _forget(entry: _Entry) -> None:
        entry.current = None
        entry.epoch += 1

    # -- analyses ---------------------------------------------------------------------------------

    async def current(self, uri: str) -> Analysis | None:
        """The analysis of the current text, run on the worker thread if not done yet (one run
        per version, however many requests wait for it). None if the document is not open."""
        entry = self._entries.get(uri)
        if entry is None:
            return None
        if entry.current is not None:
            return entry.current
        return await asyncio.shield(self._start(uri, entry))

    async def outline(self, uri: str) -> Analysis | None:
        """What document symbols answer from: the current analysis if its YAML parsed, else the
        last one that did (ranges of the older text, for the caller to fit into this one: an
        outline that stays while the user is mid-edit is worth more than exact positions for a
        moment)."""
        analysis = await self.current(uri)
        if analysis is None or analysis.parsed:
            return analysis
        entry = self._entries.get(uri)
        return entry.last_good if entry is not None else None

    async def usable(self, uri: str) -> Analysis | None:
        """What completion and hover answer from, without waiting for a pending analysis: the
        current analysis if it is done and its YAML parsed; otherwise a ``stale`` view of the
        current text over the last good analysis. Waits only when no analysis of the document
        has ever finished."""
        entry = self._entries.get(uri)
        if entry is None:
            return None
        if entry.latest is None:
            await self.current(uri)
            entry = self._entries.get(uri)
            if entry is None:
                return None
        current = entry.current
        if current is not None and current.parsed:
            return current
        base = entry.last_good
        if base is None:
            latest = entry.latest
            return Analysis(uri, entry.doc, latest.result if latest else None, stale=latest is not current, base=latest)
        return Analysis(uri, entry.doc, base.result, stale=True, base=base)

    def _start(self, uri: str, entry: _Entry) -> asyncio.Future[Analysis]:
        doc, generation = entry.doc, (self._generation, entry.epoch)
        if over_limit(doc, self.max_bytes):
            return self._skip(uri, entry, doc, generation)
        key = (id(doc), *generation)
        future = entry.pending.get(key)
        if future is None:
            loop = asyncio.get_running_loop()
            agents, lint = self.agents, self.lint
            future = loop.run_in_executor(self._executor, lambda: analyze(uri, doc, agents=agents, lint=lint))
            entry.pending[key] = future
            future.add_done_callback(lambda f: self._settle(entry, key, doc, generation, f))
        return future

    def _skip(self, uri: str, entry: _Entry, doc: Text, generation: tuple[int, int]) -> asyncio.Future[Analysis]:
        """The analysis of a text over the size limit: the loader does not run, so the server
        keeps no more than the text and its line tables for it."""
        future: asyncio.Future[Analysis] = asyncio.get_running_loop().create_future()
        future.set_result(Analysis(uri, doc, None, limit=self.max_bytes))
        self._finished(entry, doc, generation, future.result())
        return future

    def _settle(self, entry: _Entry, key: tuple[int, int, int], doc: Text, generation: tuple[int, int],
                future: asyncio.Future[Analysis]) -> None:
        entry.pending.pop(key, None)
        if not future.cancelled() and future.exception() is None:
            self._finished(entry, doc, generation, future.result())

    def _finished(self, entry: _Entry, doc: Text, generation: tuple[int, int], analysis: Analysis) -> None:
        if self._entries.get(analysis.uri) is not entry:
            return  # closed (and maybe reopened) while it ran
        if entry.latest is None or _newer(analysis, entry.latest):
            entry.latest = analysis
            if analysis.parsed:
                entry.last_good = analysis
        if entry.doc is doc and generation == (self._generation, entry.epoch):
            entry.current = analysis

    def shutdown(self) -> None:
        """Stop the worker thread (an analysis in progress finishes first)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


def _inside(path: str | None, folders: list[str]) -> bool:
    """Whether the file ``path`` lies in (or below) one of ``folders`` (real paths)."""
    if path is None:
        return False
    real = os.path.realpath(path)
    return any(real.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _newer(a: Analysis, b: Analysis) -> bool:
    """Whether ``a`` analyses a later text than ``b`` (versions only grow; a re-analysis of the
    same text after a settings change replaces it)."""
    if a.version is None or b.version is None:
        return True
    return a.version >= b.version
