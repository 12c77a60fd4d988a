"""Completion offers only what the validator accepts (review s10 F5 #5): no ``carry`` key in a
subflow (LG711), no carry variable inside a carry's own value (LG713), no contract that would
make a contract recursive (LG303), never the step itself after ``result.`` in its own
``when``/``set``/stage ``when`` (LG606); and a carry's ``on_revise`` offers the gates that can
revise (LG716, LG717)."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, completion_at

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/review-s10-completion.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Out:
    t: string
    o: Other
  Other:
    x: string
flows:
  entry: main
  main:
    input: {topic: string, xs: "string[]"}
    output: {from: "${z.output}", contract: Out}
    max_rounds: 2
    carry:
      w:
        initial: "${input.topic}"
    steps:
      - {id: z, do: "x ${w}", out: Out}
      - {id: g, after: [z], gate: {on_approve: null, on_revise: z, on_kill: null}}
      - {id: h, after: [g], gate: {on_approve: null, on_revise: null, on_kill: null}}
      - {id: c, after: [z], do: x, out: Out, when: "result.z.t != ''"}
      - {id: s, after: [z], set: {t: "result.z.t", o: "result.z.o"}, out: Out}
      - id: f
        after: [z]
        fanout:
          over: "${input.xs}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "x ${item}"
              when: "result.z.t != ''"
              out: Other
  sub:
    input: {}
    output: {from: "${y.output}", contract: Out}
    steps:
      - {id: y, do: x, out: Out}
"""


async def _labels(client, text: str, needle: str, offset: int | None = None) -> set[str]:
    return {item.label for item in await completion_at(client, URI, text, needle, offset)}


async def test_the_spec_is_valid():
    assert load(SPEC).ok, [(d.code, d.message) for d in load(SPEC).diagnostics]


async def test_carry_key_only_in_the_entry_flow(client):
    sub = SPEC.replace("    input: {}\n", "    input: {}\n    \n")
    assert "carry" not in await _labels(client, sub, "    input: {}\n    ")
    main = SPEC.replace("    max_rounds: 2\n    carry:\n      w:\n        initial: \"${input.topic}\"\n", "    max_rounds: 2\n    \n")
    assert "carry" in await _labels(client, main, "max_rounds: 2\n    ")


@pytest.mark.parametrize("value", ['initial: "${', 'on_revise: {g: "${'])
async def test_no_carry_in_a_carry_value(client, value):
    text = SPEC.replace('initial: "${input.topic}"', 'initial: "${input.topic}"\n        on_revise: {g: "${input.topic}"}')
    needle = value if value.startswith("on_revise") else 'initial: "${'
    labels = await _labels(client, text, needle)
    assert "w" not in labels and {"input", "z"} <= labels


async def test_no_recursive_contract_type(client):
    labels = await _labels(client, SPEC, "    x: string", offset=len("    x: "))
    assert "string" in labels and not labels & {"Out", "Other"}
    assert "Other" in await _labels(client, SPEC, "    t: string", offset=len("    t: "))


@pytest.mark.parametrize("needle", ['when: "result.', 'set: {t: "result.', '              when: "result.'])
async def test_result_members_leave_out_the_step_itself(client, needle):
    own = {'when: "result.': "c", 'set: {t: "result.': "s", '              when: "result.': "f"}[needle]
    labels = await _labels(client, SPEC, needle)
    assert "z" in labels and own not in labels


@pytest.mark.parametrize("style", ["block", "flow"])
async def test_carry_on_revise_offers_gates_that_revise(client, style):
    marker = "        on_revise:\n          \n" if style == "block" else "        on_revise: {}\n"
    text = SPEC.replace('initial: "${input.topic}"\n', 'initial: "${input.topic}"\n' + marker)
    needle = marker[:-1] if style == "block" else "on_revise: {"
    items = await completion_at(client, URI, text, needle)
    assert [i.label for i in items] == ["g"]
    edit = items[0].text_edit
    filled = apply_edits(client, text, [edit]).replace("\\${$1\\}", "${input.topic}").replace("${}", "${input.topic}")
    assert load(filled).ok, [(d.code, d.message) for d in load(filled).diagnostics]
