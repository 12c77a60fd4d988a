"""Warm loads reuse what the checks derived from unchanged steps (the per-step facts, the
shared flow graph, the per-step findings), and must still report exactly what a cold load
reports: each edit below changes some check's verdict, applied one after another (and undone)
so that stale facts of an earlier version would show."""

from __future__ import annotations

import threading

import pytest

from lockgate.dsl import yamlchunks
from lockgate.dsl.loader import clear_caches, load

BASE = """\
version: 1
contracts:
  Result:
    summary: string
    score: number
    ok: boolean
    tags: string[]
  Other:
    x: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${s5.output}"
      contract: Result
    max_rounds: 2
    steps:
      - id: s0
        do: "Plan ${input.topic}"
        agent: claude
        out: Result
        ensure:
          - expr: "len(result.tags) > 0"
      - id: s1
        do: "Work on ${s0.output.summary}"
        agent: codex
        out: Result
        ensure:
          - expr: "result.score >= 0.5"
      - id: s2
        do: "Review ${s1.output}"
        agent: claude
        out: Result
        ensure:
          - expr: "result.ok || len(result.summary) > 3"
      - id: s3
        after: [s2]
        when: "result.s2.ok"
        do: "Polish ${s1.output.summary}"
        agent: codex
        out: Result
      - id: s4
        after: [s3]
        gate:
          on_approve: s5
          on_revise: s3
          on_kill: null
      - id: s5
        after: [s4]
        do: "Ship ${s3.output.summary}"
        agent: claude
        out: Result
        ensure:
          - expr: "result.ok"
      - id: s6
        fanout:
          over: "${s0.output.tags}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Check ${item} against ${s5.output.summary}"
              agent: codex
              out: Result
              ensure:
                - expr: "len(result.summary) > 0"
  other:
    input:
      x: string
    output:
      from: "${b.output}"
      contract: Other
    steps:
      - id: a
        do: "Use ${input.x}"
        out: Other
      - id: b
        do: "Then ${a.output.x}"
        out: Other
"""

# flow other with a gate whose null approve ends it as a subflow (LG902 only once main calls it)
OTHER_B = '      - id: b\n        do: "Then ${a.output.x}"\n'
OTHER_GATE = "      - id: g\n        after: [a]\n        gate: {on_approve: null, on_revise: null, on_kill: null}\n"
OTHER_B_AFTER_GATE = '      - id: b\n        after: [g]\n        do: "Then ${a.output.x}"\n'
CALL_OTHER = '      - id: s7\n        run: other\n        with: {x: "${input.topic}"}\n'
S1 = "      - id: s1\n"
S2 = "      - id: s2\n"


def edit(*replacements: tuple[str, str]) -> str:
    text = BASE
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


# (the codes the edit must bring, the edited document); each changes one check's verdict
VARIANTS = [
    ({"LG502"}, edit(("after: [s4]", "after: [s44]"))),
    ({"LG503"}, edit(("Work on ${s0.output.summary}", "Work on ${s1.output.summary}"))),
    ({"LG504"}, edit(('Plan ${input.topic}"\n', 'Plan ${input.topic}"\n        after: [s2]\n'))),
    ({"LG404"}, edit(("${s0.output.summary}", "${s0.output.summry}"))),
    ({"LG402"}, edit(("Work on ${s0.output.summary}", "Work on ${item}"))),
    ({"LG407"}, edit(("Polish ${s1.output.summary}", "Polish ${notes}"))),
    ({"LG603"}, edit(('"result.ok || len(', '"result.ok || lenn('))),
    ({"LG606"}, edit(('"result.score >= 0.5"', '"result.scor >= 0.5"'))),
    ({"LG601"}, edit(('"result.score >= 0.5"', '"result.score >= "'))),
    ({"LG404"}, edit(("    summary: string\n", "    title: string\n"))),  # unchanged steps' verdicts move
    ({"LG404"}, edit(("Plan ${input.topic}\"\n        agent: claude\n        out: Result",
                      "Plan ${input.topic}\"\n        agent: claude\n        out: Other"))),
    ({"LG403"}, edit(("      - id: s0\n", "      - id: s00\n"))),
    ({"LG403", "LG502"}, edit(("      - id: s3\n", "      - id: s33\n"))),
    ({"LG505"}, edit(("on_revise: s3", "on_revise: s5"))),
    ({"LG506"}, edit(("    max_rounds: 2\n", ""))),
    ({"LG908"}, edit(("on_kill: null", "on_kill: s6"))),
    (set(), edit((OTHER_B, OTHER_GATE + OTHER_B_AFTER_GATE))),  # a null-approve gate at the root
    ({"LG902"}, edit((OTHER_B, OTHER_GATE + OTHER_B_AFTER_GATE), ("      - id: s6\n", CALL_OTHER + "      - id: s6\n"))),
    ({"LG903"}, edit(("do: \"Work on ${s0.output.summary}\"\n        agent: codex",
                      "do: \"Work on ${s0.output.summary}\"\n        agent: claude"))),
    ({"LG904"}, edit(("        after: [s2]\n        when:", "        when:"))),
    ({"LG905"}, edit(("Ship ${s3.output.summary}\"\n        agent: claude", "Ship ${s3.output.summary}\"\n        agent: gemini"))),
    ({"LG906"}, edit(("        out: Result\n        ensure:\n          - expr: \"result.ok\"\n", ""))),
    ({"LG501"}, edit(("      - id: s5\n", "      - id: s1\n"))),
    ({"LG503"}, edit((S1, "      - id: sx\n"), (S2, S1), ("      - id: sx\n", S2))),  # swapped ids
    (set(), edit(('"result.score >= 0.5"', '"result.score >= 0.7"'))),
]


@pytest.fixture(autouse=True)
def chunk_small_documents(monkeypatch):
    """Chunk this short document as a long one is, so the loader reuses its unchanged steps."""
    monkeypatch.setattr(yamlchunks, "CHUNKED_MIN_ITEMS", 2)
    monkeypatch.setattr(yamlchunks, "CHUNKED_MIN_CHARS", 0)


def cold(text: str):
    clear_caches()
    return load(text)


def same(a, b) -> bool:
    return a.diagnostics == b.diagnostics and a.ir == b.ir


def test_the_base_is_valid_and_each_edit_brings_its_codes():
    assert cold(BASE).diagnostics == []
    for codes, text in VARIANTS:
        found = {d.code for d in cold(text).diagnostics}
        assert codes <= found, (codes, found)


def test_consecutive_warm_loads_equal_cold_loads():
    sequence = [BASE]
    for _, text in VARIANTS:
        sequence += [text, BASE, text]  # the edit, undone, redone
    sequence += [text for _, text in reversed(VARIANTS)]
    expected = {text: cold(text) for text in set(sequence)}
    clear_caches()
    for i, text in enumerate(sequence):
        assert same(load(text), expected[text]), i


def test_loads_on_two_threads_equal_cold_loads():
    texts = [BASE] + [text for _, text in VARIANTS]
    expected = {text: cold(text) for text in texts}
    clear_caches()
    mismatches: list[tuple[int, int]] = []

    def work(offset: int) -> None:
        for i in range(3 * len(texts)):
            text = texts[(i * (offset + 1) + offset) % len(texts)]
            if not same(load(text), expected[text]):
                mismatches.append((offset, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert mismatches == []
