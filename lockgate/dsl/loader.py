"""``load``: text in, a typed spec and every diagnostic out.

The one entry point shared by the CLI, the language server, the notebook and the engine, so a
problem gets the same code, message and range everywhere. The passes are pure; this module only
runs them in order and resolves each :class:`Finding`'s YAML path to a document range.
"""

from __future__ import annotations

import gc
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import codes
from .diagnostics import Diagnostic, Finding, Fix, Related, Severity, TextEdit
from .ir import Spec, Step, build_spec


@dataclass(frozen=True)
class LoadResult:
    """The outcome of :func:`load`.

    ``ir`` is the best-effort IR, present whenever the document is a mapping, so editors keep
    working on invalid specs; ``spec`` is the same IR but only when there is no error.
    """

    text: str
    path: str | None
    diagnostics: list[Diagnostic]
    ir: Spec | None
    source_map: object | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def spec(self) -> Spec | None:
        return self.ir if self.ok else None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if not d.is_error]


def load(
    text: str | bytes,
    path: str | None = None,
    *,
    agents: Collection[str] | None = None,
    lint: bool = True,
) -> LoadResult:
    """Parse and validate a spec document, reporting every problem found.

    Never raises for any input: binary, huge, deeply nested or malformed text yields
    diagnostics. ``agents`` lists agent names configured beyond the built-ins (for the lint
    about unknown agents); ``lint=False`` leaves out the advisory warnings.
    """
    with _collector_paused():
        return _load(text, path, agents, lint)


def _load(text: str | bytes, path: str | None, agents: Collection[str] | None, lint: bool) -> LoadResult:
    from .checks import run_checks
    from .structure import check_structure
    from .yamlsrc import parse_yaml

    parsed = parse_yaml(text)
    source = parsed.source_map
    decoded = text if isinstance(text, str) else getattr(parsed, "text", "")
    diagnostics = list(parsed.diagnostics)
    if parsed.data is None or source is None:
        return LoadResult(decoded, path, _ordered(diagnostics), None, source)
    findings = list(check_structure(parsed.data))
    ir = build_spec(parsed.data, step_memo=_step_memo(parsed.item_sources) if parsed.item_sources else None)
    findings.extend(run_checks(ir, agents=agents, lint=lint))
    diagnostics.extend(to_diagnostic(f, source) for f in findings)
    return LoadResult(decoded, path, _ordered(diagnostics), ir, source)


_STEPS: OrderedDict[tuple, Step] = OrderedDict()
_STEPS_SIZE = 8_192


def _step_memo(sources: dict[int, str]):
    """IR steps remembered by the text of the chunk their data was parsed from (and their
    place): an unchanged step of an edited document is not rebuilt."""

    def memo(index: int, data: Any, at: tuple, build: Callable[[], Step]) -> Step:
        source = sources.get(id(data))
        if source is None:
            return build()
        key = (source, index, at)
        found = _STEPS.get(key)
        if found is None:
            found = _STEPS[key] = build()
            if len(_STEPS) > _STEPS_SIZE:
                _STEPS.popitem(last=False)
        else:
            try:
                _STEPS.move_to_end(key)
            except KeyError:  # another thread's load just evicted it: the step is still good
                pass
        return found

    return memo


class _CollectorPause:
    """Holds off the cyclic garbage collector while documents load.

    A load allocates hundreds of thousands of small objects that all stay alive until it
    returns (and hold no cycles worth finding), so the collector's scans during a load are pure
    overhead: about a third of the time on a 2,000-step spec. Loads in several threads share
    one pause: the first to start turns the collector off (when it was on) and the last to
    finish turns it back on, so no load re-enables it under another still running.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loads = 0
        self._paused = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._loads == 0 and gc.isenabled():
                gc.disable()
                self._paused = True
            self._loads += 1
        try:
            yield
        finally:
            with self._lock:
                self._loads -= 1
                if self._loads == 0 and self._paused:
                    self._paused = False
                    gc.enable()


_collector_paused = _CollectorPause()


def clear_caches() -> None:
    """Forget everything :func:`load` remembers between calls (cached chunk parses, memoised
    findings, per-step facts, shared flow graphs, compiled expressions, scanned templates,
    parsed types), so the next load is cold."""
    from . import graph, stepfacts
    from .checks.context import clear_memo
    from .expr.expression import _compile_cached
    from .refscan import _scan
    from .refsyntax import _parse_inner
    from .types import _parse
    from .yamlsrc import clear_chunk_cache

    clear_chunk_cache()
    clear_memo()
    stepfacts.clear()
    graph.clear_cache()
    _STEPS.clear()
    for cached in (_compile_cached, _scan, _parse_inner, _parse):
        cached.cache_clear()


def load_file(path: str | Path, **options) -> LoadResult:
    """:func:`load` a file; unreadable files raise :class:`OSError` for the caller to report.

    No more than the document limit and one byte is read, so a file too large to be a spec (or
    a device that never ends, such as ``/dev/zero``) is refused with LG101 in bounded memory."""
    read = read_document(path)
    if read.data is None:
        return _oversized(path, read.size, "bytes" if read.sized else "bytes or more")
    return load(read.data, str(path), **options)


class Document(NamedTuple):
    """A file read as a spec is (:func:`read_document`)."""

    data: bytes | None  #: None: the file is larger than a spec may be
    size: int  #: its size in bytes, or, over the limit, what was read of it (the limit and one byte)
    sized: bool  #: whether ``size`` is the file's own (a regular file over the limit, not read)


def read_document(path: str | Path) -> Document:
    """The bytes of file ``path`` when it is no larger than a spec may be
    (:data:`~lockgate.dsl.yamlsrc.MAX_DOCUMENT_CHARS`), in bounded memory: a regular file over
    the limit is refused by its size before any of it is read, a stream (a pipe, ``/dev/zero``)
    after one byte past the limit. OSError for the caller to report."""
    from .yamlsrc import MAX_DOCUMENT_CHARS

    with open(path, "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_DOCUMENT_CHARS:
            return Document(None, info.st_size, True)
        data = read_at_most(handle.fileno(), MAX_DOCUMENT_CHARS + 1)
    if len(data) > MAX_DOCUMENT_CHARS:  # a stream, or a file that grew: its size is not known
        return Document(None, len(data), False)
    return Document(data, len(data), True)


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of the open file ``fd``, fewer at its end: how spec files are read
    (here and by the MCP server) without holding more than a spec may be."""
    chunks: list[bytes] = []
    total = 0
    while total < limit and (chunk := os.read(fd, min(_CHUNK, limit - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


_CHUNK = 1 << 20


def _oversized(path: str | Path, size: int, unit: str) -> LoadResult:
    """The result :func:`load` gives a document over the size limit (LG101), for a file that
    was not read whole."""
    from .sourcemap import SourceMap
    from .yamlsrc import _too_large

    return LoadResult("", str(path), [_too_large(size, unit)], None, SourceMap(""))


def to_diagnostic(finding: Finding, source) -> Diagnostic:
    """Resolve a finding's YAML path (and span) to a document range."""
    entry = codes.lookup(finding.code)
    if finding.span is not None:
        rng = source.span_range(finding.path, *finding.span)
    elif finding.at == "key":
        rng = source.key_range(finding.path)
    else:
        rng = source.value_range(finding.path)
    fix = None
    if finding.replacement is not None:
        fix = Fix(f"Change to '{finding.replacement}'", (TextEdit(rng, finding.replacement),))
    related = tuple(Related(source.value_range(p), msg) for p, msg in finding.related)
    return Diagnostic(
        code=finding.code,
        message=finding.message,
        range=rng,
        severity=finding.severity or entry.severity,
        name=entry.name,
        hint=finding.hint,
        related=related,
        fix=fix,
        path=finding.path,
    )


def _ordered(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted by position, exact duplicates (same code, range and message) dropped."""
    seen: set[tuple] = set()
    out = []
    for diag in sorted(diagnostics, key=lambda d: (d.range, d.code)):
        key = (diag.code, diag.range, diag.message)
        if key not in seen:
            seen.add(key)
            out.append(diag)
    return out


__all__ = ["LoadResult", "Severity", "clear_caches", "load", "load_file", "read_at_most", "to_diagnostic"]
