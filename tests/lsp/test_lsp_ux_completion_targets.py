"""Completion offers no guaranteed error: routes and ``after`` entries that would close a cycle,
``after`` entries already listed, ``${`` roots that depend on the step being written or have no
output (gates), and ``input`` in a flow's ``output.from``."""

from __future__ import annotations

import pytest
from lsp_harness import completion_at

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-completion-targets.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Plan:
    tasks: string[]
  Patch:
    passed: boolean
  Verdict:
    score: number
  Scored:
    status: string
    children: array
    reason: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${report.output}"
      contract: Verdict
    max_rounds: 2
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
        on_fail: fix
      - id: fix
        do: "Fix it"
        out: Patch
      - id: score
        after: [work]
        evaluate:
          command: "./score.sh"
          in: "${plan.output.tasks}"
          timeout_ms: 60000
        out: Scored
      - id: review
        after: [score]
        gate:
          on_approve: report
          on_revise: plan
          on_kill: null
      - id: report
        after: [review]
        do: "Report ${score.output}"
        out: Verdict
"""


async def labels(client, text: str, needle: str, offset: int | None = None) -> set[str]:
    return {i.label for i in await completion_at(client, URI, text, needle, offset)}


async def test_on_fail_offers_no_ancestor(client):
    # plan is upstream of work: routing work's failure to it would close a cycle (LG504)
    assert await labels(client, SPEC.replace("on_fail: fix", "on_fail: "), "on_fail: ") == {"fix", "score", "review", "report"}


async def test_gate_on_approve_offers_no_ancestor(client):
    text = SPEC.replace("on_approve: report", "on_approve: ")
    assert await labels(client, text, "on_approve: ") == {"report", "fix", "null"}


async def test_gate_on_revise_offers_only_ancestors(client):
    text = SPEC.replace("on_revise: plan", "on_revise: ")
    assert await labels(client, text, "on_revise: ") == {"plan", "work", "score", "null"}


@pytest.mark.parametrize(("variant", "needle"), [
    ("after: [work, ]", "after: [work, "),
    ("after:\n          - work\n          - ", "after:\n          - work\n          - "),
])
async def test_after_offers_neither_listed_nor_downstream_steps(client, variant, needle):
    text = SPEC.replace("after: [work]", variant, 1)
    assert await labels(client, text, needle) == {"plan", "fix"}


async def test_after_still_offers_the_entry_being_edited(client):
    assert "work" in await labels(client, SPEC, "after: [work]", len("after: [wo"))


async def test_reference_roots_are_upstream_steps_with_outputs(client):
    found = await labels(client, SPEC.replace("Report ${score.output}", "Report ${"), "Report ${")
    assert found == {"input", "plan", "work", "fix", "score"}  # not the gate, not itself
    assert await labels(client, SPEC, 'do: "Plan ${') == {"input"}  # every other step depends on plan


async def test_output_from_offers_only_step_outputs(client):
    text = SPEC.replace('from: "${report.output}"', 'from: "${"')
    assert await labels(client, text, 'from: "${') == {"plan", "work", "fix", "score", "report"}
