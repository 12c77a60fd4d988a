"""Completion before a long run of letters or digits (review s8-r3 #1): what is typed at the
cursor is found by scans that read backwards from it and stop where the answer ends, not by
end-anchored expressions retried from every column (quadratic: a 20,000-letter string literal in
an ensure kept the event loop busy for 12 s, a hover on another document waiting behind it)."""

from __future__ import annotations

import asyncio
import itertools
import re
from pathlib import Path

import pytest
from lsp_harness import at, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position
from lockgate.lsp import completion, tails
from lockgate.lsp.context import _LINE, context_at
from lockgate.lsp.documents import analyze

on_server = pytest.mark.asyncio(loop_scope="session")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEALTH = (EXAMPLES / "health.stratum.yaml").read_text(encoding="utf-8")
ENSURE = '"len(result.files) > 0"'

# the expressions the scans replace, anchored at the very end (\Z)
CHAIN = re.compile(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_][\w-]*|\[\d+\])*)\s*\.\s*([A-Za-z_]\w*)?\Z")
IDENT = re.compile(r"[A-Za-z_]\w*\Z")
WORD = re.compile(r"[A-Za-z0-9_-]*\Z")
# an outline line's shape as it was read before: quadratic in a run of spaces inside a key-less line
OLD_LINE = re.compile(
    r"""(?P<indent>[ ]*)(?P<dash>-(?:[ ]+|$))?
        (?:(?P<key>"[^"]*"|'[^']*'|[^\s#'"\[\]{},:\-][^#:]*?|-[^\s#:][^#:]*?)[ ]*:(?=[ ]|$)
           (?P<gap>[ ]*)(?P<value>.*))?""",
    re.VERBOSE,
)
LINE_PIECES = [" ", "  ", "-", "- ", "a", "b c", ":", ": ", "#", "'", '"', "\t", "[", "x:y", "-x"]
PIECES = ["a", "b1", "_x", "9", ".", " ", "-", "[", "]", "[0]", "'", "é", "٣", "\n", "x-y", "("]
ENDINGS = ["", ".", ". ", ".a", " . _b"]


def _texts():
    """Every text of up to three pieces, with each ending a member chain can have."""
    for n in range(4):
        for parts in itertools.product(PIECES, repeat=n):
            for end in ENDINGS:
                yield "".join(parts) + end


def test_the_scans_answer_what_the_end_anchored_expressions_do() -> None:
    matched = 0
    for text in _texts():
        want, got = CHAIN.search(text), tails.chain(text)
        assert (want and (want.start(), want.groups())) == (got and (got.start(), got.groups())), text
        assert tails.ident_tail(text) == (m.group(0) if (m := IDENT.search(text)) else ""), text
        assert tails.word_tail(text) == WORD.search(text).group(0), text
        matched += want is not None
    assert matched > 5_000  # the corpus exercises chains, not only texts without one


def test_outline_lines_are_read_as_before() -> None:
    groups = ("indent", "dash", "key", "gap", "value")
    for n in range(5):
        for parts in itertools.product(LINE_PIECES, repeat=n):
            text = "".join(parts)
            want, got = OLD_LINE.match(text), _LINE.match(text)
            assert [want.span(g) for g in groups] == [got.span(g) for g in groups], text


def test_the_chain_scan_reads_no_further_than_the_trailing_run(monkeypatch) -> None:
    reads = []
    step = tails._step
    monkeypatch.setattr(tails, "_step", lambda states, ch: reads.append(ch) or step(states, ch))
    run = "x" * 50_000
    assert tails.chain("result.label != '" + run) is None
    assert len(reads) == len(run) + 1  # the run, then the quote that ends every way to go on
    reads.clear()
    assert tails.chain("len(result." + run).group(1) == "result"
    assert len(reads) == len(run) + len("result.") + 1


def test_an_empty_line_of_a_block_expression_ends_no_word() -> None:
    """``$`` matched before a final newline: on the empty line below ``result`` the replaced
    range began six columns left of the cursor, over the line's indentation."""
    text = HEALTH.replace(f"- expr: {ENSURE}", "- expr: |\n              result.files\n              \n          - expr: \"true\"")
    analysis = analyze("file:///tmp/block-expr.stratum.yaml", text)
    line = text.splitlines().index("              result.files") + 1
    items = completion.complete(analysis, context_at(analysis.outline, Position(line, 14)), ())
    assert {c.label for c in items} >= {"result", "input", "len"}
    assert all(c.replace.start == c.replace.end == Position(line, 14) for c in items)


@on_server
async def test_completion_at_the_end_of_a_200000_letter_literal_answers(vscode) -> None:
    letters = "x" * 200_000
    text = HEALTH.replace(ENSURE, f"\"result.files[0] != '{letters}'\"")
    uri, other = "file:///tmp/long-literal.stratum.yaml", "file:///tmp/long-literal-other.stratum.yaml"
    await open_doc(vscode, uri, text)
    await open_doc(vscode, other, HEALTH)
    line = next(i for i, row in enumerate(text.splitlines()) if letters in row)
    inside = text.splitlines()[line].index(letters) + len(letters)
    doc = lsp.TextDocumentIdentifier(uri=uri)
    pending = [
        vscode.text_document_completion_async(lsp.CompletionParams(text_document=doc, position=at(vscode, text, line, column)))
        for column in (inside, inside - 100_000)
    ]
    hover = vscode.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=other), position=lsp.Position(line=30, character=10)))
    # minutes before (quadratic in the run); a generous deadline for a loaded machine
    answers = await asyncio.wait_for(asyncio.gather(*pending, hover), 5)
    assert [list(a.items) for a in answers[:2]] == [[], []]  # inside a string literal: nothing to offer


@on_server
async def test_hover_on_a_list_item_with_200000_spaces_answers(vscode) -> None:
    """The outline read a key-less line (``- a      b``) in time quadratic in its run of spaces."""
    text = "version: 1\nnotes:\n  - a" + " " * 200_000 + "b\n"
    uri = "file:///tmp/long-spaces.stratum.yaml"
    await open_doc(vscode, uri, text)
    answer = await asyncio.wait_for(vscode.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=2))), 5)
    assert answer is not None and "version" in answer.contents.value
