"""Large documents: above ``lockgate.maxDocumentBytes`` a document gets one diagnostic saying so
and only the features that need no analysis (folding, completion and hover from the outline);
below it, a long generated spec (one line or many) still answers every feature."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from lsp_harness import at, diagnostics, next_publish, open_doc, reconfigure, uses_pull
from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range
from lockgate.lsp import fields as F
from lockgate.lsp import index, inlay_hints
from lockgate.lsp.documents import analyze
from lockgate.lsp.settings import DEFAULT_MAX_DOCUMENT_BYTES, Settings
from lockgate.lsp.spans import span_ranges

on_server = pytest.mark.asyncio(loop_scope="session")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SMALL = "file:///tmp/huge-small.stratum.yaml"
BIG = "file:///tmp/huge-big.stratum.yaml"
STEP = """      - id: s{i}
        do: |
          Summarise ${{s{prev}.output.summary}} for ${{input.topic}}; keep it short.
        agent: {agent}
        out: Result
"""


def generated(steps: int) -> str:
    """A valid spec with ``steps`` chained steps (what a generator writes)."""
    head = ("version: 1\ncontracts:\n  Result:\n    summary: string\nflows:\n  entry: main\n  main:\n"
            "    input:\n      topic: string\n    output:\n      from: \"${s0.output}\"\n      contract: Result\n    steps:\n"
            "      - id: s0\n        do: \"Start on ${input.topic}\"\n        out: Result\n")
    return head + "".join(STEP.format(i=i, prev=i - 1, agent=("claude", "codex")[i % 2]) for i in range(1, steps))


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


async def limit_to(client, limit: int, review_spec: str) -> None:
    """Set the size limit, and wait until the server has it: a settings change re-publishes
    the diagnostics of the open documents once the new settings are applied."""
    await open_doc(client, SMALL, review_spec)
    await reconfigure(client, {"maxDocumentBytes": limit})


def test_the_limit_setting_is_a_whole_number_of_bytes() -> None:
    assert Settings().max_document_bytes == DEFAULT_MAX_DOCUMENT_BYTES == 5_000_000
    assert Settings.from_client({"lockgate": {"maxDocumentBytes": 0}}).max_document_bytes == 0
    assert Settings.from_client({"max_document_bytes": 12_000_000}).max_document_bytes == 12_000_000
    for bad in (-1, "5MB", True, 1.5):
        assert Settings.from_client({"maxDocumentBytes": bad}).max_document_bytes == DEFAULT_MAX_DOCUMENT_BYTES


@on_server
async def test_a_document_over_the_limit_gets_one_diagnostic_and_cheap_features(fresh_vscode, review_spec):
    client = fresh_vscode  # settings change: a server of its own
    text = generated(60)
    size = len(text.encode("utf-8"))
    await limit_to(client, 4_000, review_spec)

    [only] = await open_doc(client, BIG, text)
    assert only.message == (f"document too large for full analysis: {size:,} bytes > 4,000 bytes limit; "
                            "set lockgate.maxDocumentBytes to a larger value (0: no limit) to analyse it")
    assert only.severity == lsp.DiagnosticSeverity.Warning
    assert (only.range.start.line, only.range.start.character, only.range.end.line) == (0, 0, 0)

    # not analysed: nothing that needs the spec's names answers with anything
    assert list((await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(text_document=doc(BIG)))).data) == []
    assert await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=doc(BIG))) == []
    at_step = lsp.Position(line=text.splitlines().index("      - id: s5"), character=13)
    assert await client.text_document_definition_async(lsp.DefinitionParams(text_document=doc(BIG), position=at_step)) == []

    # what needs only the text still answers
    folds = await client.text_document_folding_range_async(lsp.FoldingRangeParams(text_document=doc(BIG)))
    assert {(f.start_line, f.end_line) for f in folds} >= {(1, 3), (4, len(text.splitlines()) - 1)}
    key_line = text.splitlines().index("        agent: codex")
    completion = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=doc(BIG), position=lsp.Position(line=key_line, character=8)))
    assert "attempts" in {item.label for item in completion.items}
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=doc(BIG), position=lsp.Position(line=key_line, character=9)))
    assert hover.contents.value.startswith("**agent**")


@on_server
async def test_raising_the_limit_or_shrinking_the_document_analyses_it(fresh_vscode, review_spec):
    client = fresh_vscode
    text = generated(60)
    await limit_to(client, 4_000, review_spec)
    assert [d.message.split(":")[0] for d in await open_doc(client, BIG, text)] == ["document too large for full analysis"]

    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=BIG, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=generated(6))]))
    assert await next_publish(client, BIG) == []

    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=BIG, version=3),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    assert len(await next_publish(client, BIG)) == 1

    assert list((await reconfigure(client, {"maxDocumentBytes": 0}, BIG)).diagnostics) == []  # 0: no limit
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=doc(BIG)))
    assert [s.name for s in symbols] == ["Result", "main"]


@on_server
async def test_a_long_generated_spec_under_the_limit_answers_every_feature(client):
    # one line of JSON (YAML's flow style) with thousands of references, as generators write it
    data = yaml.safe_load(generated(1500))
    text = json.dumps(data, ensure_ascii=False).replace("Summarise", "Résumé 😀")
    assert "\n" not in text and len(text.encode("utf-8")) > 200_000
    assert await open_doc(client, BIG, text) == []

    tokens = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(text_document=doc(BIG)))
    assert len(tokens.data) // 5 > 3 * 1500 and all(tokens.data[i] == 0 for i in range(5, len(tokens.data), 5))
    step = at(client, text, 0, text.rindex('"s1498"') + 2)
    found = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc(BIG), position=step, context=lsp.ReferenceContext(include_declaration=True)))
    assert len(found) == 2  # its id and the next step's reference
    highlights = await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(text_document=doc(BIG), position=step))
    assert sorted(h.kind for h in highlights) == [lsp.DocumentHighlightKind.Read, lsp.DocumentHighlightKind.Write]
    if uses_pull(client):
        assert await diagnostics(client, BIG) == []


def one_line(steps: int) -> str:
    return json.dumps(yaml.safe_load(generated(steps)))


def occurrences(text: str) -> list[tuple]:
    found = index.index_of(analyze("file:///tmp/one-line.stratum.yaml", text))
    return [(o.key, o.range, o.path, o.definition, o.span, o.at) for o in found.occurrences]


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("{", "{   ", 1),  # every step moves right on the one line
    lambda t: t.replace('"steps": [', '"steps":\n  [', 1),  # every step moves one line down
    lambda t: t.replace('"id": "s3"', '"id": "s3", "attempts": 2', 1),  # one step changes
])
def test_steps_of_a_one_line_document_reused_after_an_edit_equal_a_fresh_index(edit):
    text = one_line(8)
    occurrences(text)  # fills the per-step cache
    edited = edit(text)
    assert edited != text
    reused = occurrences(edited)
    index._STEP_CACHE.clear()
    assert reused == occurrences(edited)


def test_closing_a_document_drops_its_reusable_step_entries():
    kept, closed = "file:///tmp/kept.stratum.yaml", "file:///tmp/closed.stratum.yaml"
    for uri in (kept, closed):
        index.index_of(analyze(uri, generated(5)))
    index.forget(closed)
    owners = {key[-1] for key in index._STEP_CACHE}
    assert kept in owners and closed not in owners


STYLES = r"""version: 1
contracts:
  Out:
    note: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: '${a.output}'
      contract: Out
    steps:
      - id: a
        do: plain ${input.topic} text   # comment
        out: Out
      - id: b
        do: "double ${a.output.note} with \"escapes\" and \u00e9 ${input.topic}"
        after: [a]
      - id: c
        do: 'single ''quoted'' ${b.output} 😀 ${input.topic}'
        when: "result.a.note != '' && len(input.topic) > 0"
      - id: d
        do: "folded
          over ${c.output} two lines"
      - id: e
        do: |
          literal ${d.output}

            indented ${input.topic}
      - id: e2
        do: |-   # a comment
          stripped ${e.output}
      - id: e3
        do: |+

          kept ${e2.output}	and a tab

      - id: f
        do: >-
          folded block ${e.output}
          next ${input.topic}
      - {id: g, do: "flow ${f.output} in a flow mapping", out: Out}
"""


@pytest.mark.parametrize("name", [*sorted(p.name for p in EXAMPLES.glob("*.stratum.yaml")), "styles"])
def test_span_ranges_equal_the_source_maps(name):
    text = STYLES if name == "styles" else (EXAMPLES / name).read_text(encoding="utf-8")
    analysis = analyze("file:///tmp/spans.stratum.yaml", text)
    assert analysis.parsed
    ranges, source = span_ranges(analysis), analysis.source_map
    checked = 0
    for field in F.walk(analysis.ir):
        value = field.value
        for start, end in [(0, len(value)), (1, len(value) - 1), (len(value), len(value) + 3),
                           *((k, k + width) for k in range(len(value)) for width in (0, 2, 7))]:
            assert ranges.range(field.path, value, start, end) == source.span_range(field.path, start, end), (field.path, start, end)
            checked += 1
    assert checked > 100
    if name == "styles":  # the verbatim strings were mapped here, the others by the source map
        mapped = {path[3] for path, layout in ranges._layouts.items() if path[-1] == "do" and layout is not None}
        assert mapped == {0, 4, 5, 6, 8}  # plain, the three literal blocks, the flow mapping's


def test_inlay_hints_of_the_lines_on_screen_are_those_of_the_whole_document_there():
    text = generated(40)
    analysis = analyze("file:///tmp/hints.stratum.yaml", text)
    everything = inlay_hints.inlay_hints(analysis, Range(Position(0, 0), Position(10_000, 0)))
    assert len(everything) > 40
    for first in range(0, len(text.splitlines()), 7):
        screen = Range(Position(first, 0), Position(first + 9, 0))
        assert inlay_hints.inlay_hints(analysis, screen) == [h for h in everything if screen.start <= h.position <= screen.end]
