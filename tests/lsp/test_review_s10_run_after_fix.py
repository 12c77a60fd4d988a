"""The LG904 quick fix "Run after 'X'" adds ``X`` to the *step's* ``after`` (review s10 F5 #3):
the diagnostic may sit inside ``set:`` or inside a fanout stage, where an ``after`` key is
invalid (LG201/LG202). Every style the step may be written in gets it: block (before the key
reading X, or on the dash line when that key opens the item), flow ``{...}``, and an existing
``after`` list of either style is extended."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/review-s10-run-after.stratum.yaml"
HEAD = """\
version: 1
contracts:
  Score: {value: number}
flows:
  entry: main
  main:
    input: {files: "string[]"}
    output: {from: "${measure.output}", contract: Score}
    steps:
      - id: measure
        do: "Measure"
        out: Score
      - {id: other, do: "Other", out: Score}
"""
SET_BLOCK = """\
      - id: total
        set:
          value: "result.measure.value * 2"
        out: Score
"""
STAGE_WHEN = """\
      - id: each
        fanout:
          over: "${input.files}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Check ${item}"
              when: "result.measure.value > 0"
              out: Score
"""
SET_FLOW = """\
      - {id: total, set: {value: "result.measure.value * 2"}, out: Score}
"""
WHEN_FLOW_AFTER = """\
      - {id: total, do: "t", out: Score, after: [other], when: "result.measure.value > 0"}
"""
WHEN_OPENS_ITEM = """\
      - when: >-
          result.measure.value
          > 0
        id: total
        do: "t"
        out: Score
"""
WHEN_AFTER_TRAILING_COMMA = """\
      - id: total
        after: [other, ]
        when: "result.measure.value > 0"
        do: "t"
        out: Score
"""
WHEN_AFTER_MULTILINE_COMMA = """\
      - id: total
        after: [
          other,  # first
        ]
        when: "result.measure.value > 0"
        do: "t"
        out: Score
"""
SET_ANCHORED = SET_BLOCK.replace("      - id: total\n", "      - &total\n        id: total\n")
SET_TAGGED = SET_BLOCK.replace("      - id: total\n", "      - !!map  # tagged\n        id: total\n")
SET_ANCHORED_FLOW = SET_FLOW.replace("- {", "- &total !!map {")
STAGE_BLOCK_AFTER = STAGE_WHEN.replace("        fanout:\n", "        after:\n          - other\n        fanout:\n")
CASES = {
    "set in a block step": (SET_BLOCK, "      - id: total\n        after: [measure]\n        set:\n"),
    "stage when": (STAGE_WHEN, "      - id: each\n        after: [measure]\n        fanout:\n"),
    "set in a flow step": (SET_FLOW, "      - {after: [measure], id: total, set:"),
    "flow step with after": (WHEN_FLOW_AFTER, "after: [other, measure], when:"),
    "when opening the item": (WHEN_OPENS_ITEM, "      - after: [measure]\n        when: >-\n"),
    "stage with a block after": (STAGE_BLOCK_AFTER, "        after:\n          - other\n          - measure\n        fanout:\n"),
    # review s10 F8 #1: a comma already written ends the list, it is not doubled
    "flow after ending in a comma": (WHEN_AFTER_TRAILING_COMMA, "        after: [other, measure]\n"),
    "multi-line flow after ending in a comma": (
        WHEN_AFTER_MULTILINE_COMMA, "        after: [\n          other, measure  # first\n        ]\n"),
    # review s10 F8 #2: an anchor or a tag before a block mapping leaves a place for the key
    "anchored block step": (SET_ANCHORED, "      - &total\n        id: total\n        after: [measure]\n        set:\n"),
    "tagged block step": (SET_TAGGED, "      - !!map  # tagged\n        id: total\n        after: [measure]\n        set:\n"),
    "anchored, tagged flow step": (SET_ANCHORED_FLOW, "      - &total !!map {after: [measure], id: total, set:"),
}


async def run_after(client, text: str) -> str:
    """``text`` with the "Run after 'measure'" fix of its one LG904 applied."""
    found = [d for d in await open_doc(client, URI, text) if d.code == "LG904"]
    assert len(found) == 1
    answer = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), range=found[0].range,
        context=lsp.CodeActionContext(diagnostics=found)))
    [action] = [a for a in answer if a.title == "Run after 'measure'"]
    return apply_edits(client, text, action.edit.document_changes[0].edits)


@pytest.mark.parametrize("case", CASES)
async def test_run_after_goes_on_the_step(client, case):
    steps, expected = CASES[case]
    fixed = await run_after(client, HEAD + steps)
    assert expected in fixed
    assert load(fixed).ok, [(d.code, d.message) for d in load(fixed).diagnostics]
    assert not [d for d in load(fixed).diagnostics if d.code == "LG904"]


@pytest.mark.parametrize("steps", [SET_BLOCK, STAGE_BLOCK_AFTER, WHEN_OPENS_ITEM], ids=["new", "block list", "dash line"])
async def test_run_after_keeps_crlf_line_endings(client, steps):
    """review s10 F8 #2: a CRLF document gets CRLF lines, not a bare newline."""
    text = (HEAD + steps).replace("\n", "\r\n")
    fixed = await run_after(client, text)
    assert fixed.count("measure") == text.count("measure") + 1
    assert "\n" not in fixed.replace("\r\n", "")
    assert load(fixed).ok and not [d for d in load(fixed).diagnostics if d.code == "LG904"]
