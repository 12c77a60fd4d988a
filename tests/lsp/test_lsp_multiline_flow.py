"""Completion inside a flow collection spread over several lines (``after: [a,`` then ``b, |]``
on the next line): the collection's opening is found on an earlier line and the one-line logic
follows it from there. Quoted scalars and comments holding brackets, commas or ``#`` do not
confuse it, a line not indented past the opening one is outside it (a collection left unclosed
mid-edit does not capture the block lines below), and the look back is bounded."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_harness import (
    STEPS_HEAD,
    apply_edits,
    at,
    completion_at,
    covered,
    find,
    open_doc,
)
from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position
from lockgate.lsp import completion, context
from lockgate.lsp.context import context_at
from lockgate.lsp.documents import analyze

on_server = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/multiline-flow.stratum.yaml"
SPEC = STEPS_HEAD + """\
      - id: plan
        do: "Plan ${input.topic}"
        out: Verdict
      - id: fetch
        do: "Fetch"
        out: Verdict
      - id: parse
        do: "Parse"
        after: [fetch]
        out: Verdict
      - id: report
        after: [fetch,
                parse, AFTER]
        gate: {on_approve: null,
               GATE}
      - {id: c, do: "x",
         STEP}
"""
DO_KEYS = {"after", "when", "agent", "out", "ensure", "attempts", "iterate", "budget", "on_fail"}


def spec(after: str = "", gate: str = "on_revise: ", step: str = "") -> str:
    return SPEC.replace("AFTER", after).replace("GATE", gate).replace("STEP", step)


async def labels(client, text: str, needle: str, offset: int | None = None) -> set[str]:
    return {i.label for i in await completion_at(client, URI, text, needle, offset)}


@on_server
async def test_step_ids_on_a_later_line_of_a_flow_sequence(client):
    # nothing before: the line was read as a key-less line of block style
    assert await labels(client, spec(), "parse, ") == {"plan", "c"}  # not itself, not listed, no cycle
    text = spec(after="pl")
    found = {i.label: i for i in await completion_at(client, URI, text, "parse, pl")}
    assert set(found) == {"plan", "c"}
    assert covered(client, text, found["plan"].text_edit.range) == "pl"  # the word typed on this line


@on_server
async def test_step_ids_for_a_route_on_a_later_line_of_a_flow_mapping(client):
    # the first key of the line was right by its indentation; one after it got that key's list
    assert await labels(client, spec(), "on_revise: ") == {"fetch", "parse", "null"}
    text = spec(gate="on_kill: null, on_revise: ")
    assert await labels(client, text, "on_revise: ") == {"fetch", "parse", "null"}  # upstream only
    assert await labels(client, text, "on_kill: ") == {"plan", "c", "null"}  # no cycle


@on_server
async def test_step_keys_on_a_later_line_of_a_flow_style_step(client):
    text = spec(step="")
    found = {i.label: i for i in await completion_at(client, URI, text, "         }", offset=9)}
    assert set(found) == DO_KEYS  # the do step's keys, less those written, no block snippets
    assert found["after"].text_edit.new_text.startswith("after: [")
    edited = apply_edits(client, text, [found["out"].text_edit]).replace("$0", "")  # the snippet's final stop
    assert '      - {id: c, do: "x",\n         out: }\n' in edited  # on the line, no block snippet


@on_server
async def test_keys_written_on_later_lines_are_present(client):
    text = spec(step="\n         agent: claude, out: Verdict")
    assert await labels(client, text, "         \n", offset=9) == DO_KEYS - {"agent", "out"}


@on_server
async def test_quoted_brackets_commas_and_hashes_and_comments_do_not_confuse_it(client):
    text = spec().replace('        after: [fetch,\n', '        after: ["a [b", \'c, {d\', fetch,   # e ] f, {g\n')
    assert await labels(client, text, "parse, ") == {"plan", "c"}
    text = spec(step='agent: "x, ] # y", ')
    assert await labels(client, text, '"x, ] # y", ') == DO_KEYS - {"agent"}
    text = spec(step="# a comment after the entries, ]")
    assert await labels(client, text, "# a comm") == set()  # inside a comment: nothing
    text = spec(gate="# a [comment\n               on_revise: ")
    assert await labels(client, text, "on_revise: ") == {"fetch", "parse", "null"}


@on_server
async def test_a_collection_left_unclosed_does_not_hold_the_block_lines_below(client):
    text = spec().replace("                parse, ]\n", "        \n")
    closed = text.replace("[fetch,\n", "[fetch]\n")
    found = await labels(client, text, "[fetch,\n        \n", offset=16)
    assert found == await labels(client, closed, "[fetch]\n        \n", offset=16) == {"when"}  # a gate step's


@on_server
async def test_hover_and_definition_on_step_ids_in_a_multi_line_collection(client):
    text = spec(gate="on_revise: fetch")
    await open_doc(client, URI, text)
    doc = lsp.TextDocumentIdentifier(uri=URI)
    for needle, target in (("parse, ]", "      - id: parse"), ("on_revise: fetch", "      - id: fetch")):
        line, col = find(text, needle, offset=needle.index(target.split()[-1]) + 1)
        position = at(client, text, line, col)
        [found] = await client.text_document_definition_async(lsp.DefinitionParams(text_document=doc, position=position))
        assert found.range.start.line == text.splitlines().index(target)
        assert covered(client, text, found.range) == target.split()[-1]
        hover = await client.text_document_hover_async(lsp.HoverParams(text_document=doc, position=position))
        assert hover.contents.value.startswith(f"**step** `{target.split()[-1]}`")


# -- the look back is bounded ----------------------------------------------------------------------


def rows(count: int) -> str:
    """Later lines of the ``after`` list: entries, quoted brackets, commas and hashes, comments."""
    return "".join(f"                x{i}, \"[{i}, #\", # {{ ]\n" for i in range(count))


def scanned_at(monkeypatch, text: str, line: int, column: int) -> tuple[context.CursorContext, int]:
    """The context at a position, and how many characters the scans for it read."""
    lengths = []
    unquoted = context._unquoted
    monkeypatch.setattr(context, "_unquoted", lambda raw, start, end, *a, **k: lengths.append(end - start) or unquoted(raw, start, end, *a, **k))
    return context_at(context.Outline(text), Position(line, column)), sum(lengths)


def test_the_scans_read_no_more_than_the_budget_whatever_the_document(monkeypatch):
    """The cursor near the opening of a collection of 20,000 lines: the scans read the lines
    within the budget, not the document; further from it than the budget, the line is read as
    block style, as before, and nothing is scanned."""
    text = spec().replace("                parse, ]", rows(20_000) + "                parse, ]")
    assert len(text) > 50 * context.FLOW_CHARS
    opening = text.splitlines().index("        after: [fetch,")
    near, chars = scanned_at(monkeypatch, text, opening + 20, 16)
    assert (near.where, near.path[-1], near.item_index) == ("value", "after", 39)  # fetch, then two a line
    assert chars <= 5 * context.FLOW_CHARS
    far, chars = scanned_at(monkeypatch, text, opening + context.FLOW_LINES + 1, 16)
    assert (far.where, far.item_index, chars) == ("key", None, 0)


@on_server
async def test_completion_in_a_huge_multi_line_collection_answers(vscode):
    text = spec().replace("                parse, ]", rows(30_000) + "                parse, ]")
    await open_doc(vscode, URI, text)
    opening = text.splitlines().index("        after: [fetch,")
    pending = [vscode.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(vscode, text, opening + lines, 16)))
        for lines in (20, 15_000, 30_001)]
    near, *_ = await asyncio.wait_for(asyncio.gather(*pending), 5)  # the budget of the long-word tests
    assert {item.label for item in near.items} == {"plan", "c"}


# -- the scan outside quotes jumps from mark to mark -------------------------------------------------

MARKS = frozenset("'\"#[]{},:")
SCAN_PIECES = ["'", '"', "''", "\\", "#", " #", "[", "]", "{", ",", ":", " ", "\n", "a", "\t", "x y"]


def charwise(raw: str, start: int, end: int, flow: bool, comments: list[int] | None):
    """The scan as it was, one character at a time (every column outside quotes)."""
    quote, opens, i = None, True, start
    while i < end:
        ch = raw[i]
        if quote is not None:
            if (ch == "\\" and quote == '"') or (ch == quote == "'" and raw[i + 1:i + 2] == "'"):
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"" and opens:
            quote = ch
        elif comments is not None and ch == "#" and (i == start or raw[i - 1] in " \t\n"):
            comments.append(i)
            i = raw.find("\n", i, end)
            if i < 0:
                return
            continue
        else:
            yield i
        opens = quote is None and ((opens and ch in " \t\n") or (flow and ch in "[{,:"))
        i += 1


def test_the_mark_scan_answers_what_the_character_scan_did():
    checked = 0
    for n in range(4):
        for parts in itertools.product(SCAN_PIECES, repeat=n):
            raw = "".join(parts)
            for start, end, flow in itertools.product(range(min(len(raw), 2) + 1), range(len(raw) + 1), (False, True)):
                if end < start:
                    continue
                want_comments: list[int] = []
                got_comments: list[int] = []
                want = [i for i in charwise(raw, start, end, flow, want_comments) if raw[i] in MARKS]
                assert list(context._unquoted(raw, start, end, flow, got_comments)) == want, (raw, start, end)
                assert got_comments == want_comments, (raw, start, end)
                assert list(context._unquoted(raw, start, end, flow)) == [
                    i for i in charwise(raw, start, end, flow, None) if raw[i] in MARKS]
                checked += 1
    assert checked > 50_000


# -- property: never raises, answers fast, edits stay on the cursor line ----------------------------

PIECES = ["[", "]", "{", "}", ",", ", ", ": ", "#", " # c", "'", '"', "''", "\\", "\n", "\n   ", "\n         ",
          "\n      - ", "fetch", "parse", "id: z", "do: ", "on_revise: ", "after: ", "|", "- ", " ", "${", "a.b"]
FLOW_TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(inside=FLOW_TEXT, opening=st.sampled_from(["after: [fetch,\n", "gate: {on_approve: null,\n", "when: [\n"]))
def test_completion_in_random_multi_line_flow_text_never_raises_and_answers_fast(inside, opening):
    text = SPEC.replace("after: [fetch,\n", opening).replace("AFTER", inside).replace("GATE", inside).replace("STEP", inside)
    analysis = analyze(URI, text)
    lines = text.split("\n")
    first = text[: text.index(opening)].count("\n")
    slowest = 0.0
    for number in range(first, len(lines)):
        for column in range(len(lines[number]) + 1):
            position = Position(number, column)
            started = time.perf_counter()
            items = completion.complete(analysis, context_at(analysis.outline, position), ())
            slowest = max(slowest, time.perf_counter() - started)
            for item in items:
                assert item.replace.start.line == item.replace.end.line == number
                assert item.replace.start.character <= column <= item.replace.end.character <= len(lines[number])
    assert slowest < 0.5  # a completion request's whole budget is 5 s (test_lsp_long_words)
