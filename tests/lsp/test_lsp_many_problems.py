"""A document with thousands of problems (review s8-r3 #3): the server sends the first
``MAX_SHOWN`` in document order and one more diagnostic counting the rest, instead of converting
every one on the event loop for every answer (50,000 took 3.7 s, other requests waiting)."""

from __future__ import annotations

import pytest
from lsp_harness import open_doc
from lsprotocol import types as lsp

from lockgate.lsp import diagnostics as diag
from lockgate.lsp.documents import analyze

on_server = pytest.mark.asyncio(loop_scope="session")
HEAD = "version: 1\nflows:\n  main:\n    input:\n      q: string\n    steps:\n      - id: a\n        agent: claude\n        do: "
URI = "file:///tmp/many-problems.stratum.yaml"


def unknown_refs(n: int) -> str:
    """A one-step spec whose ``do`` names ``n`` steps that do not exist (one LG407 each)."""
    return HEAD + '"' + "".join(f"${{nope{i}.x}} " for i in range(n)) + '"\n'


def test_the_first_problems_in_document_order_and_a_count_of_the_rest() -> None:
    analysis = analyze(URI, unknown_refs(diag.MAX_SHOWN + 500))
    total = len(analysis.diagnostics)
    items = diag.to_lsp(analysis)
    assert len(items) == diag.MAX_SHOWN + 1
    shown, more = items[:-1], items[-1]
    starts = [(d.range.start.line, d.range.start.character) for d in shown]
    assert starts == sorted(starts)
    assert more.message == f"{total - diag.MAX_SHOWN:,} more problems not shown; fix these first"
    assert more.severity == lsp.DiagnosticSeverity.Error and more.code is None
    first_hidden = analysis.lines.to_client(sorted(d.range.start for d in analysis.diagnostics)[diag.MAX_SHOWN])
    assert more.range.start == more.range.end == first_hidden
    assert {d.code for d in shown} >= {"LG407"}


def test_up_to_the_limit_every_problem_is_sent_as_before() -> None:
    analysis = analyze(URI, unknown_refs(diag.MAX_SHOWN - 10))
    items = diag.to_lsp(analysis)
    assert [(d.code, d.message.split("\n")[0]) for d in items] == [(d.code, d.message) for d in analysis.diagnostics]


@on_server
async def test_the_client_gets_the_first_problems_and_a_count(client) -> None:
    text = unknown_refs(3 * diag.MAX_SHOWN)
    items = await open_doc(client, URI, text)
    hidden = len(analyze(URI, text).diagnostics) - diag.MAX_SHOWN
    assert len(items) == diag.MAX_SHOWN + 1
    assert items[-1].message == f"{hidden:,} more problems not shown; fix these first"
