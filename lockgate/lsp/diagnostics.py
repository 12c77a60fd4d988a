"""Diagnostics: ``lockgate.dsl`` diagnostics as LSP diagnostics, pushed with a debounce or pulled.

The conversion keeps the dsl's code, message, severity and related ranges, adds a
``codeDescription`` link to the code's documentation, and clamps every range into the document
(the one guarantee the server adds: no diagnostic ever points outside the text).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types as lsp

from lockgate.dsl import codes
from lockgate.dsl.diagnostics import Diagnostic

from .documents import Analysis
from .positions import Encoding

log = logging.getLogger(__name__)

SOURCE = "lockgate"
_UNNECESSARY = frozenset({"LG901", "LG902", "LG907"})
#: the most diagnostics sent for one document; the rest are counted in one more
MAX_SHOWN = 1000


def to_lsp(
    analysis: Analysis,
    encoding: Encoding = "utf-16",
    *,
    related: bool = True,
    code_links: bool = True,
) -> list[lsp.Diagnostic]:
    """The analysis' diagnostics for the client, with ranges clamped into the document: the
    first :data:`MAX_SHOWN` in document order and one saying how many more there are, when
    there are more (converting 50,000 took seconds of the event loop, on every answer)."""
    shown, hidden = _first_shown(analysis.diagnostics)
    out = [_convert(d, analysis, encoding, related, code_links) for d in shown]
    if hidden:
        out.append(_more(hidden, analysis, encoding))
    if analysis.limit is not None:
        out.append(too_large(analysis.doc.size, analysis.limit))
    if analysis.failure is not None:
        out.append(
            lsp.Diagnostic(
                range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
                message=f"internal error while analysing this document: {analysis.failure}",
                severity=lsp.DiagnosticSeverity.Warning,
                source=SOURCE,
            )
        )
    return out


def _first_shown(diags: list[Diagnostic]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """The diagnostics to send (all, in the analysis' order, when there are few enough; else the
    first MAX_SHOWN by position) and those left out."""
    if len(diags) <= MAX_SHOWN:
        return diags, []
    ordered = sorted(diags, key=lambda d: (d.range.start.line, d.range.start.character))
    return ordered[:MAX_SHOWN], ordered[MAX_SHOWN:]


def _more(hidden: list[Diagnostic], analysis: Analysis, encoding: Encoding) -> lsp.Diagnostic:
    """One diagnostic standing for those not sent, where the first of them is, as severe as
    the most severe of them (a document with errors still shows one)."""
    start = analysis.lines.range_to_client(hidden[0].range, encoding).start
    return lsp.Diagnostic(
        range=lsp.Range(start=start, end=start),
        message=f"{len(hidden):,} more problems not shown; fix these first",
        severity=lsp.DiagnosticSeverity(min(int(d.severity) for d in hidden)),
        source=SOURCE,
    )


def too_large(size: int, limit: int) -> lsp.Diagnostic:
    """What a document over the size limit shows instead of its diagnostics."""
    return lsp.Diagnostic(
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        message=(f"document too large for full analysis: {_amount(size)} > {_amount(limit)} limit; "
                 f"set lockgate.maxDocumentBytes to a larger value (0: no limit) to analyse it"),
        severity=lsp.DiagnosticSeverity.Warning,
        source=SOURCE,
    )


def _amount(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def to_lsp_one(diag: Diagnostic, analysis: Analysis, encoding: Encoding = "utf-16", *,
               related: bool = True, code_links: bool = True) -> lsp.Diagnostic:
    """One diagnostic for the client (code actions echo the diagnostic they fix)."""
    return _convert(diag, analysis, encoding, related, code_links)


def _convert(
    diag: Diagnostic, analysis: Analysis, encoding: Encoding, related: bool, code_links: bool
) -> lsp.Diagnostic:
    lines = analysis.lines
    message = diag.message if not diag.hint else f"{diag.message}\n{diag.hint}"
    return lsp.Diagnostic(
        range=lines.range_to_client(diag.range, encoding),
        message=message,
        severity=lsp.DiagnosticSeverity(int(diag.severity)),
        code=diag.code,
        code_description=lsp.CodeDescription(href=codes.docs_url(diag.code)) if code_links and diag.code in codes.CODES else None,
        source=SOURCE,
        related_information=[
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(uri=analysis.uri, range=lines.range_to_client(r.range, encoding)),
                message=r.message,
            )
            for r in diag.related
        ]
        if related and diag.related
        else None,
        tags=[lsp.DiagnosticTag.Unnecessary] if diag.code in _UNNECESSARY else None,
    )


def client_options(caps: lsp.ClientCapabilities | None) -> dict[str, bool]:
    """Which optional diagnostic fields the client understands."""
    text = caps.text_document if caps else None
    push = text.publish_diagnostics if text else None
    pull = text.diagnostic if text else None
    return {
        "related": bool((push and push.related_information) or (pull and pull.related_information)),
        "code_links": bool(push and push.code_description_support) or bool(pull),
    }


def supports_pull(caps: lsp.ClientCapabilities | None) -> bool:
    return bool(caps and caps.text_document and caps.text_document.diagnostic)


class Debouncer:
    """Runs at most one pending job per key, ``delay`` seconds after the last request."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}

    def schedule(self, key: str, delay: float, job: Callable[[], Awaitable[None]]) -> None:
        self.cancel(key)
        self._tasks[key] = asyncio.ensure_future(self._run(key, delay, job))

    def cancel(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is not None and not task.done():
            task.cancel()

    @property
    def pending(self) -> int:
        return sum(1 for t in self._tasks.values() if not t.done())

    async def _run(self, key: str, delay: float, job: Callable[[], Awaitable[None]]) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            await job()
        except asyncio.CancelledError:
            raise
        except Exception:  # a failed publish is logged, the server goes on
            log.exception("debounced job for %s failed", key)
        finally:
            if self._tasks.get(key) is asyncio.current_task():
                del self._tasks[key]
