"""Completion in particular places: a subflow's inputs under ``with``; nothing in comments;
no ``prev`` in a fanout's first stage; the value of an entry of a flow-style step."""

from __future__ import annotations

import pytest
from lsp_harness import completion_at
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-completion-places.stratum.yaml"
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
      # TODO: more steps
      - id: plan
        do: "Plan ${input.topic}"  # a comment
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
      - id: report
        run: summarise
        with:
          topic: "${input.topic}"
          patch: "${work.output[0]}"
  summarise:
    input:
      topic: string
      patch: Patch
      style: string
    output:
      from: "${write.output}"
      contract: Report
    steps:
      - id: write
        do: "Summarise ${input.topic} in ${input.style}: ${input.patch.passed}"
        out: Report
"""


async def items(client, text: str, needle: str, offset: int | None = None) -> dict[str, lsp.CompletionItem]:
    return {i.label: i for i in await completion_at(client, URI, text, needle, offset)}


async def test_with_offers_the_subflow_inputs_not_given(client):
    text = SPEC.replace('          topic: "${input.topic}"\n', "          \n")
    found = await items(client, text, "        with:\n          ")
    assert set(found) == {"topic", "style"}
    assert "input.topic" in found["topic"].text_edit.new_text  # the caller has a topic to pass on


@pytest.mark.parametrize(("needle", "offset"), [
    ("# TODO: more steps", None), ("# TODO: ", None), ("# a comment", None),
])
async def test_nothing_in_comments(client, needle, offset):
    text = SPEC.replace("# TODO: more steps", "# TODO: more steps ${")
    assert await items(client, text, needle, offset) == {}


async def test_no_prev_in_the_first_stage(client):
    text = SPEC.replace('"result.passed == true"', '"result.passed == "')
    found = await items(client, text, '"result.passed == ')
    assert {"result", "input", "item"} <= set(found) and "prev" not in found


async def test_flow_style_step_values(client):
    text = SPEC.replace('      - id: plan\n        do: "Plan ${input.topic}"  # a comment\n        out: Plan\n',
                        '      - {id: plan, do: "Plan ${input.topic}", out: Plan}\n')
    assert set(await items(client, text, "${input.", None)) == {"topic"}
    assert await items(client, text, "{id: pl", None) == {}  # no block-style step snippets in a flow mapping
