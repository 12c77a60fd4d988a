"""LG907: a ``set`` step whose output nothing reads, and every way a read keeps it quiet."""

from __future__ import annotations

import pytest
from checks_support import P, check, codes, errors, flow, only

from lockgate.dsl.codes import lookup
from lockgate.dsl.diagnostics import Severity

SET = '{id: s, set: {v: "input.topic"}, out: R}'


def spec(steps: str, **options) -> str:
    return flow(steps, contracts="R: {v: string, vs: 'string[]?'}", **options)


def unused(text: str):
    return [f for f in check(text) if f.code == "LG907"]


def test_unread_set_step_is_reported_on_its_id():
    text = spec(f"""
        - {{id: a, do: "write about ${{input.topic}}", out: R}}
        - {SET}
    """)
    assert errors(text) == []
    found = only(unused(text))
    assert (found.path, found.at) == (P(1, "id"), "value")
    assert lookup("LG907").severity == Severity.WARNING
    assert found.message == (
        "set step 's' computes an output nothing reads (no step, expression, carry or flow "
        "output refers to s); remove it or use ${s.output}"
    )
    assert "ensure" in found.hint


def test_after_orders_but_does_not_read():
    text = spec(f"""
        - {SET}
        - {{id: a, after: [s], do: "write about ${{input.topic}}", out: R}}
    """)
    assert errors(text) == []
    assert only(unused(text)).path == P(0, "id")


def test_each_unread_set_step_is_reported():
    text = spec(f"""
        - {{id: a, do: "write", out: R}}
        - {SET}
        - {{id: t, when: "result.a.v == 'x'", set: {{v: "result.a.v"}}, out: R}}
    """)
    assert [f.path for f in unused(text)] == [P(1, "id"), P(2, "id")]


READERS = {
    "do template": '{id: a, do: "use ${s.output.v}", out: R}',
    "when": '{id: a, after: [s], when: "result.s.v == \'x\'", do: "go", out: R}',
    "set value": '{id: a, after: [s], set: {v: "result.s.v"}, out: R, ensure: [{expr: "true"}]}',
    "run with": '{id: a, run: sub, with: {v: "${s.output.v}"}}',
    "fanout over": "{id: a, fanout: {over: '${s.output.vs}', steps: [{do: 'x ${item}', out: R}]}}",
    "fanout stage do": "{id: a, fanout: {over: '${input.items}', steps: [{do: 'x ${item} ${s.output.v}', out: R}]}}",
    "fanout stage when": "{id: a, after: [s], fanout: {over: '${input.items}', "
    "steps: [{when: \"result.s.v == item\", do: 'x ${item}', out: R}]}}",
}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_a_read_keeps_it_quiet(reader: str):
    text = spec(f"""
        - {SET}
        - {reader}
        - {{id: z, do: "finish", out: R}}
    """, output="${z.output}", inputs="{topic: string, items: 'string[]'}")
    text += "  sub:\n    input: {v: string}\n    output: {from: '${w.output}', contract: R}\n" \
        "    steps: [{id: w, do: 'work on ${input.v}', out: R}]\n"
    assert errors(text) == []
    assert unused(text) == []
    unread = text.replace("${s.output.v}", "${input.topic}").replace("result.s.v", "input.topic") \
        .replace("${s.output.vs}", "${input.items}")
    assert only(unused(unread)).path == P(0, "id")


def test_flow_output_reads_it():
    text = spec(f"- {SET}", output="${s.output}")
    assert errors(text) == []
    assert unused(text) == []


def test_subflow_output_reads_its_set_step_and_an_unread_one_is_reported():
    text = (
        "version: 1\ncontracts: {R: {v: string}}\nflows:\n  entry: main\n  main:\n    input: {}\n"
        "    output: {from: '${c.output}', contract: R}\n    steps: [{id: c, run: sub, with: {v: 'x'}}]\n"
        "  sub:\n    input: {v: string}\n    output: {from: '${s.output}', contract: R}\n"
        "    steps:\n"
        "      - {id: s, set: {v: 'input.v'}, out: R}\n"
        "      - {id: t, set: {v: 'input.v'}, out: R}\n"
    )
    assert errors(text) == []
    assert only(unused(text)).path == ("flows", "sub", "steps", 1, "id")


@pytest.mark.parametrize("carry", [
    "{initial: '${s.output.v}'}",
    "{initial: '${input.topic}', on_revise: {g: '${s.output.v}'}}",
])
def test_carry_sources_read_it(carry: str):
    text = spec(f"""
        - {SET}
        - {{id: a, after: [s], do: "write about ${{note}}", out: R}}
        - {{id: g, after: [a], gate: {{on_approve: null, on_revise: a, on_kill: null}}}}
    """, extra=f"max_rounds: 1\ncarry:\n  note: {carry}")
    assert errors(text) == []
    assert unused(text) == []


def test_a_set_step_with_an_ensure_is_a_check():
    text = spec("""
        - {id: a, do: "write", out: R}
        - {id: s, after: [a], set: {v: "result.a.v"}, out: R, ensure: [{expr: "result.v != ''"}]}
        - {id: b, after: [s], do: "ship", out: R}
    """)
    assert errors(text) == []
    assert unused(text) == []


@pytest.mark.parametrize("step", [
    '{id: x, do: "write", out: R}',
    "{id: x, gate: {on_approve: null, on_revise: null, on_kill: null}}",
    "{id: x, fanout: {over: '${input.items}', steps: [{do: 'x ${item}', out: R}]}}",
    "{id: x, run: sub, with: {v: 'x'}}",
])
def test_other_kinds_are_never_reported(step: str):
    text = spec(f"""
        - {{id: a, do: "write", out: R}}
        - {step}
    """, inputs="{topic: string, items: 'string[]'}")
    text += "  sub:\n    input: {v: string}\n    output: {from: '${w.output}', contract: R}\n" \
        "    steps: [{id: w, do: 'work on ${input.v}', out: R}]\n"
    assert "LG907" not in codes(check(text))


@pytest.mark.parametrize("reader", [
    '{id: a, after: [s], when: "result.s.v ==", do: "go", out: R}',  # does not compile
    '{id: a, after: [s], when: "result.ss.v == \'x\'", do: "go", out: R}',  # misspelt: LG606
    '{id: a, do: "use ${ss.output.v}", out: R}',  # misspelt reference: the graph is not complete
])
def test_reads_that_cannot_be_told_or_are_misspelt_stay_quiet(reader: str):
    text = spec(f"""
        - {SET}
        - {reader}
    """)
    assert errors(text) != []
    assert unused(text) == []


def test_a_misspelt_flow_output_is_the_problem_not_an_unread_step():
    text = spec(f"- {SET}", output="${ss.output}")
    assert "LG403" in codes(errors(text))
    assert unused(text) == []


def test_reading_the_whole_result_map_may_read_it():
    text = spec(f"""
        - {SET}
        - {{id: a, after: [s], when: "len(result) > 0", do: "go", out: R}}
    """)
    assert unused(text) == []
    assert unused(text.replace("len(result)", "len(result.s.v)")) == []
    assert unused(text.replace("len(result)", "len(input.topic)")) != []


def test_no_lint_with_lint_false():
    text = spec(f"- {SET}\n- {{id: a, do: 'write', out: R}}")
    assert "LG907" in codes(check(text))
    assert "LG907" not in codes(check(text, lint=False))
