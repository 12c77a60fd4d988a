"""Dead-code lints reach the editor tagged Unnecessary (greyed out); other findings do not."""

from __future__ import annotations

import pytest
from lsp_harness import covered, open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/unnecessary.stratum.yaml"
SPEC = """version: 1
contracts:
  Out:
    text: string
  Spare:
    note: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${write.output}"
      contract: Out
    steps:
      - id: write
        do: "Write about ${input.topic}"
        agent: codex
        out: Out
        ensure:
          - expr: "len(result.text) > 0"
      - id: totals
        after: [write]
        set:
          text: "result.write.text"
        out: Out
      - id: extra
        do: "Add notes"
"""


async def test_unused_set_step_and_contract_are_unnecessary(client):
    found = {d.code: d for d in await open_doc(client, URI, SPEC)}
    assert set(found) == {"LG901", "LG906", "LG907"}, found
    assert covered(client, SPEC, found["LG907"].range) == "totals"
    assert tuple(found["LG907"].tags) == (lsp.DiagnosticTag.Unnecessary,)
    assert tuple(found["LG901"].tags) == (lsp.DiagnosticTag.Unnecessary,)
    assert not found["LG906"].tags
