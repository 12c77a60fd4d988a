"""Carry variables are a flow's own: completion offers and hover types them in the entry flow
that declares them, never inside a subflow, where the validator refuses them (LG407)."""

from __future__ import annotations

import pytest
from lsp_harness import completion_at

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/carry-scope.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${call.output}", contract: Note}
    carry:
      guidance:
        initial: "${input.topic}"
    steps:
      - {id: write, do: "Write with ${MAIN", out: Note}
      - id: call
        run: sub
        with: {text: "${write.output.text}"}
  sub:
    input: {text: string}
    output: {from: "${polish.output}", contract: Note}
    steps:
      - {id: polish, do: "Polish ${SUB", out: Note}
"""


async def test_carry_is_offered_only_in_the_flow_that_declares_it(client):
    text = SPEC.replace("${MAIN", "${").replace("${SUB", "${x}")
    labels = {item.label for item in await completion_at(client, URI, text, "Write with ${")}
    assert {"guidance", "input"} <= labels
    text = SPEC.replace("${MAIN", "${x}").replace("${SUB", "${")
    labels = {item.label for item in await completion_at(client, URI, text, "Polish ${")}
    assert "input" in labels and "guidance" not in labels
