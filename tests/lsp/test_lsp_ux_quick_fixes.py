"""Quick fixes where a diagnostic's message states the fix: a subflow call's missing or unknown
``with`` input (LG703), an unindexed fanout output (LG404), ``=`` and ``and`` in expressions
(LG601), a ``when``'s missing ``after`` entry in a block-style list (LG904); and no fix that
changes a reference to a step id that is itself invalid (LG403 next to LG208)."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-quick-fixes.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Plan:
    tasks: string[]
  Patch:
    passed: boolean
  Report:
    summary: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${report.output}"
      contract: Report
    steps:
      - id: plan
        do: "Plan ${input.topic}"
        out: Plan
      - id: work
        fanout:
          over: "${plan.output.tasks}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Implement ${item}"
              out: Patch
              ensure:
                - expr: "result.passed == true"
      - id: score
        after:
          - plan
        do: "Score ${work.output[0].passed}"
        out: Patch
      - id: report
        run: summarise
        with:
          topic: "${input.topic}"
          patch: "${score.output}"
  summarise:
    input:
      topic: string
      patch: Patch
    output:
      from: "${write.output}"
      contract: Report
    steps:
      - id: write
        do: "Summarise ${input.topic}: ${input.patch.passed}"
        out: Report
"""


async def actions_for(client, text: str, code: str) -> dict[str, lsp.CodeAction]:
    """The quick fixes offered for the diagnostic with ``code``."""
    found = [d for d in await open_doc(client, URI, text) if d.code == code]
    assert found, code
    answer = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), range=found[0].range,
        context=lsp.CodeActionContext(diagnostics=found)))
    return {a.title: a for a in answer or [] if isinstance(a, lsp.CodeAction) and a.edit is not None}


async def fixed_by(client, text: str, code: str, title: str) -> str:
    action = (await actions_for(client, text, code))[title]
    return apply_edits(client, text, action.edit.document_changes[0].edits)


async def test_the_spec_is_valid():
    assert load(SPEC).ok


@pytest.mark.parametrize(("broken", "code", "title"), [
    (SPEC.replace('          topic: "${input.topic}"\n', ""), "LG703", "Add input 'topic' to 'with'"),
    (SPEC.replace('          patch: "${score.output}"\n', '          patch: "${score.output}"\n          tpoic: "x"\n'),
     "LG703", "Remove 'tpoic'"),
    (SPEC.replace("${work.output[0].passed}", "${work.output.passed}"), "LG404", "Change to '${work.output[0].passed}'"),
    (SPEC.replace("result.passed == true", "result.passed = true"), "LG601", "Change to '=='"),
    (SPEC.replace("result.passed == true", "result.passed == true and item != ''"), "LG601", "Change to '&&'"),
])
async def test_the_fix_the_message_states(client, broken, code, title):
    fixed = await fixed_by(client, broken, code, title)
    assert load(fixed).ok, [d.message for d in load(fixed).diagnostics]


async def test_block_style_after_gets_the_missing_entry(client):
    broken = SPEC.replace('do: "Score ${work.output[0].passed}"', 'when: "result.work[0].passed"\n        do: "Score"')
    fixed = await fixed_by(client, broken, "LG904", "Run after 'work'")
    assert "        after:\n          - plan\n          - work\n" in fixed
    assert not [d for d in load(fixed).diagnostics if d.code == "LG904"]


async def test_no_fix_to_an_invalid_step_id(client):
    broken = SPEC.replace("- id: score", "- id: Score")
    assert not [t for t in await actions_for(client, broken, "LG403") if "Score" in t]
    assert "Change to 'score'" in await actions_for(client, broken, "LG208")


WHEN = """\
version: 1
contracts:
  R: {ok: boolean}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: R}
    steps:
      - {id: x, do: "x", out: R}
      - {id: y, do: "y", out: R}
      - id: b
        when: "result.y.ok"
        do: "b"
        out: R
        after: [x]  # see [docs]"""


@pytest.mark.parametrize("style", ["flow with a bracket in its comment", "block at the end of the text"])
async def test_run_after_lands_in_the_list(client, style):
    broken = WHEN if style.startswith("flow") else WHEN.replace("after: [x]  # see [docs]", "after:\n          - x")
    fixed = await fixed_by(client, broken, "LG904", "Run after 'y'")
    assert load(fixed).ok, [d.message for d in load(fixed).diagnostics]
    assert fixed.endswith("after: [x, y]  # see [docs]" if style.startswith("flow") else "          - x\n          - y")


CALL = """\
version: 1
contracts:
  R: {ok: boolean}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${call.output}", contract: R}
    steps:
      - id: call
        run: sub
        with:
          zzzqqq: 3
  sub:
    input: {}
    output: {from: "${s.output}", contract: R}
    steps:
      - {id: s, do: "s", out: R}
"""


async def test_removing_the_only_with_key_leaves_an_empty_mapping(client):
    fixed = await fixed_by(client, CALL, "LG703", "Remove 'zzzqqq'")
    assert "        with: {}\n      - id" not in fixed and "        with: {}\n  sub:" in fixed
    assert load(fixed).ok, [d.message for d in load(fixed).diagnostics]
