"""Expression fields: LG601-606, with spans inside the expression string."""

from __future__ import annotations

from checks_support import P, codes, errors, flow, only

FAN = """
    - {{id: a, do: x, out: R}}
    - id: fan
      fanout:
        over: "${{a.output.items}}"
        concurrency: 2
        isolation: none
        require: all
        merge: sequential
        steps:
          - {{do: "first ${{item}}", out: R, when: "{when0}"}}
          - {{do: "second ${{prev}}", out: R, ensure: [{{expr: "{ensure1}"}}]}}
"""


def one(expr_field: str, expr: str, **kw):
    """The findings of a spec whose step b has ``expr_field: expr``."""
    steps = f"""
        - {{id: a, do: x, out: R}}
        - {{id: b, do: y, out: R, after: [a], {expr_field}: {expr}}}
    """
    return errors(flow(steps, **kw))


def test_parse_error_span_is_inside_the_string():
    found = only(one("ensure", "[{expr: 'result.v == ('}]"))
    assert (found.code, found.path, found.span) == ("LG601", P(1, "ensure", 0, "expr"), (12, 13))


def test_unknown_identifier_per_context():
    found = only(one("when", "'item == 1'"))
    assert (found.code, found.path, found.span) == ("LG602", P(1, "when"), (0, 4))
    assert "input, result" in found.message


def test_unknown_function_with_did_you_mean():
    found = only(one("ensure", "[{expr: 'lenght(result.v) > 1'}]"))
    assert (found.code, found.span, found.replacement) == ("LG603", (0, 6), "len")


def test_wrong_arity():
    found = only(one("ensure", "[{expr: 'len(result.v, 2) > 1'}]"))
    assert (found.code, found.span) == ("LG604", (0, 16))


def test_resource_limit():
    deep = "(" * 200 + "1" + ")" * 200 + " == 1"
    found = only(one("when", f"'{deep}'"))
    assert found.code == "LG605"


def test_ensure_reads_fields_of_the_out_contract():
    found = only(one("ensure", "[{expr: 'len(result.itmes) > 0'}]"))
    assert (found.code, found.span, found.replacement) == ("LG606", (10, 16), ".items")


def test_until_and_input_paths():
    found = one("iterate", "{max: 2, until: 'result.n > 1 && input.topics == \"\"'}")
    found = only(found)
    assert (found.code, found.path, found.span, found.replacement) == (
        "LG606", P(1, "iterate", "until"), (21, 28), ".topic")


def test_when_reads_result_step_fields():
    found = errors(flow("""
        - {id: a, do: x, out: R}
        - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
        - {id: b, do: y, out: R, after: [a, g], when: "result.a.nn == 1 || result.gg.v == '' || result.g.v == 1"}
    """))
    assert [(f.code, f.span, f.replacement) for f in found] == [
        ("LG606", (8, 11), ".n"),
        ("LG606", (26, 29), ".g"),
        ("LG606", (47, 49), None),
    ]


def test_fanout_result_in_when_is_an_array():
    found = only(errors(flow(FAN.format(when0="true", ensure1="true") + """
    - {id: c, do: z, out: R, after: [fan], when: "result.fan.v == '' && result.fan[0].v == ''"}
    """)))
    assert found.code == "LG606" and "index it first" in found.message


def test_stage_bindings_item_prev_and_result():
    text = flow(FAN.format(when0="prev.v == item", ensure1="result.v == prev.vv && item == ''"))
    found = errors(text)
    assert [(f.code, f.path[-2:], f.span) for f in found] == [
        ("LG602", (0, "when"), (0, 4)),
        ("LG606", (0, "expr"), (16, 19)),
    ]
    assert "first stage" in found[0].message


def test_item_paths_follow_the_over_type():
    text = flow("""
        - {id: a, do: x, out: L}
        - id: fan
          fanout:
            over: "${a.output.rows}"
            concurrency: 2
            isolation: none
            require: all
            merge: sequential
            steps: [{do: "x ${item}", out: R, when: "item.name == '' && item.nam == ''"}]
    """, contracts="R: {v: string}\n  L: {rows: 'Row[]'}\n  Row: {name: string}", output="${fan.output[0]}")
    found = only(errors(text))
    assert (found.code, found.replacement) == ("LG606", ".name")


def test_template_in_expression_is_one_problem():
    found = only(one("when", "\"${a.output.v} == 'x'\""))
    assert (found.code, found.span, found.replacement) == ("LG601", (0, 13), "result.a.v")
    found = only(one("when", "\"${nope.output.v} == 'x'\""))
    assert found.code == "LG403"


def test_valid_expressions_everywhere():
    assert errors(flow("""
        - {id: a, do: x, out: R, ensure: [{expr: "len(result.items) >= 0 && matches(result.v, '^a')"}]}
        - {id: b, set: {v: "str(result.a.n)", n: "result.a.n + 1", items: "result.a.items"}, out: R,
           after: [a], when: "result.a.v != '' && input.topic in result.a.items"}
        - {id: c, do: y, out: R, after: [b], iterate: {max: 3, until: "result.n > input.topic"}}
    """)) == []
