"""${...} references in scanned fields and flow outputs: LG401-410, LG708, contract names."""

from __future__ import annotations

from checks_support import P, calling_sub, codes, errors, flow, only


def test_malformed_reference_points_inside_the_string():
    found = only(errors(flow("""
        - {id: a, do: "hello ${ input.topic }", out: R}
    """)))
    assert (found.code, found.path, found.span) == ("LG401", P(0, "do"), (6, 22))


def test_unknown_step_with_did_you_mean_on_the_name():
    found = only(errors(flow("""
        - {id: build, do: x, out: R}
        - {id: b, do: "use ${biuld.output.v}", out: R}
    """, output="${build.output}")))
    assert (found.code, found.path, found.span, found.replacement) == ("LG403", P(1, "do"), (6, 11), "build")


def test_unknown_path_names_the_segment_and_suggests_a_field():
    found = errors(flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: "use ${a.output.vv} and ${input.topc}", out: R}
    """))
    assert [(f.code, f.span, f.replacement) for f in found] == [
        ("LG404", (14, 17), ".v"),
        ("LG404", (30, 35), ".topic"),
    ]
    assert "did you mean 'v'" in found[0].message


def test_path_through_array_needs_an_index_and_scalars_end_paths():
    found = errors(flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: "${a.output.items.x} ${a.output.items[0]} ${a.output.v.w}", out: R}
    """))
    assert codes(found) == ["LG404", "LG404"]
    assert "index it first" in found[0].message


def test_output_contract_required_for_do_without_out_and_for_gates():
    found = errors(flow("""
        - {id: a, do: x, out: R}
        - {id: plain, do: x}
        - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
        - {id: b, do: "${plain.output} ${g.output}", out: R}
    """))
    assert [(f.code, f.span) for f in found] == [("LG405", (0, 15)), ("LG405", (16, 27))]
    assert "gate" in found[1].message


def test_fanout_output_must_be_indexed_and_needs_a_final_out():
    text = flow("""
        - id: fan
          fanout:
            over: "${input.topics}"
            concurrency: 2
            isolation: none
            require: all
            merge: sequential
            steps: [{do: "a ${item}", out: R}]
        - id: bare
          fanout:
            over: "${input.topics}"
            concurrency: 2
            isolation: none
            require: all
            merge: sequential
            steps: [{do: "a ${item}"}]
        - {id: a, do: "${fan.output[0].v} ${fan.output} ${fan.output.v} ${bare.output[0]}", out: R}
    """, inputs="{topics: 'string[]'}")
    found = errors(text)
    assert [(f.code, f.span) for f in found] == [("LG404", (33, 48)), ("LG406", (49, 66))]
    assert found[1].related[0][0] == P(1, "fanout", "steps", 0)


def test_fanout_as_flow_output_must_be_indexed():
    base = """
        - id: fan
          fanout: {over: "${input.topics}", concurrency: 1, isolation: none, require: all,
                   merge: sequential, steps: [{do: "x ${item}", out: R}]}
    """
    topics = "{topics: 'string[]'}"
    found = only(errors(flow(base, output="${fan.output}", inputs=topics)))
    assert (found.code, found.path) == ("LG404", ("flows", "main", "output", "from"))
    assert errors(flow(base, output="${fan.output[0]}", inputs=topics)) == []


def test_fanout_over_must_be_typed_as_a_list():
    """An ``over`` the contracts type as a string, number or object fails the step every time it
    starts (semantics §6.8): LG410 on the reference; an optional list or an untyped value is not
    certain to fail, so it passes."""
    def over(ref: str, inputs: str) -> list:
        return errors(flow(f"""
            - id: fan
              fanout: {{over: "{ref}", concurrency: 1, isolation: none, require: all,
                       merge: sequential, steps: [{{do: "x ${{item}}", out: R}}]}}
        """, output="${fan.output[0]}", inputs=inputs))

    found = only(over("${input.topic}", "{topic: string}"))
    assert (found.code, found.path, found.span) == ("LG410", P(0, "fanout", "over"), (0, 14))
    assert found.message.startswith("fanout.over must be a list, but ${input.topic} is a string;")
    assert only(over("${input.meta}", "{meta: R}")).message.startswith(
        "fanout.over must be a list, but ${input.meta} is an object (R);")
    assert over("${input.topics}", "{topics: 'string[]?'}") == []
    assert over("${input.topics}", "{topics: 'string[]'}") == []


def test_item_and_prev_only_in_stages():
    found = errors(flow("""
        - {id: a, do: "${item}", out: R}
        - id: fan
          fanout:
            over: "${prev}"
            concurrency: 1
            isolation: none
            require: all
            merge: sequential
            steps: [{do: "${item} ${prev}", out: R}]
    """))
    assert [(f.code, f.path) for f in found] == [("LG402", P(0, "do")), ("LG402", P(1, "fanout", "over"))]


def test_over_must_be_one_full_reference():
    found = only(errors(flow("""
        - id: fan
          fanout: {over: "files: ${input.topic}", concurrency: 1, isolation: none, require: all,
                   merge: sequential, steps: [{do: "x ${item}", out: R}]}
    """, output="${fan.output[0]}")))
    assert (found.code, found.path) == ("LG410", P(0, "fanout", "over"))


def test_carry_reference_in_expression_and_unknown_carry():
    found = errors(flow("""
        - {id: a, do: "x ${wave} ${wafe}", out: R, when: "${wave} == 1"}
    """, extra="""
        carry:
          wave: {initial: "${input.topic}"}
    """))
    assert [(f.code, f.path, f.span) for f in found] == [
        ("LG408", P(0, "when"), (0, 7)),
        ("LG407", P(0, "do"), (10, 17)),
    ]
    assert found[1].replacement == "${wave}"


def test_step_name_without_output_is_a_carry_slip():
    found = only(errors(flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: "use ${a}", out: R}
    """)))
    assert (found.code, found.replacement) == ("LG407", "${a.output}")


def test_carry_name_used_as_a_step_output():
    found = only(errors(flow("""
        - {id: a, do: "x ${wave.output.v}", out: R}
    """, extra="""
        carry:
          wave: {initial: "${input.topic}"}
    """)))
    assert (found.code, found.replacement) == ("LG409", "${wave.v}")


def test_run_output_is_typed_by_the_callee_contract():
    text = """
    version: 1
    contracts: {R: {v: string}, S: {w: string}}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${c.output}", contract: S}
        steps:
          - {id: c, run: sub, with: {}}
          - {id: d, do: "${c.output.w} ${c.output.v}", out: R}
      sub:
        input: {}
        output: {from: "${x.output}", contract: S}
        steps: [{id: x, do: y, out: S}]
    """
    found = only(errors(text))
    assert (found.code, found.path) == ("LG404", ("flows", "main", "steps", 1, "do"))


def test_flow_output_shape():
    found = only(errors(flow("- {id: a, do: x, out: R}", output="result: ${a.output}")))
    assert (found.code, found.path) == ("LG708", ("flows", "main", "output", "from"))
    found = only(errors(flow("- {id: a, do: x, out: R}", output="${input.topic}")))
    assert found.code == "LG708"
    found = only(errors(flow("- {id: a, do: x, out: R}", output="${aa.output}")))
    assert (found.code, found.replacement) == ("LG403", "a")


def test_unknown_out_and_output_contract():
    text = flow("""
        - {id: a, do: x, out: Rr}
    """)
    found = only(errors(text))
    assert (found.code, found.path, found.replacement) == ("LG302", P(0, "out"), "R")


def test_contract_type_issues_are_reported_once_for_contracts_and_inputs():
    text = """
    version: 1
    contracts:
      R: {v: strng, w: Missing, self: R}
    flows:
      entry: main
      main:
        input: {a: integr, b: Nope}
        output: {from: "${s.output}", contract: R}
        steps: [{id: s, do: x, out: R}]
    """
    found = errors(text)
    assert [(f.code, f.path[-1]) for f in found] == [
        ("LG301", "v"), ("LG302", "w"), ("LG303", "self"), ("LG301", "a"), ("LG302", "b"),
    ]


def test_references_to_a_broken_contract_do_not_cascade():
    text = flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: "${a.output.anything}", out: R}
    """, contracts="R: {v: strng}")
    assert codes(errors(text)) == ["LG301"]


def test_with_values_are_scanned_recursively():
    text = calling_sub("""
        input: {x: object}
        output: {from: "${s.output}", contract: R}
        steps: [{id: s, do: "${input.x.anything}", out: R}]
    """, with_='{x: {deep: ["${nope.output}"]}}')
    found = only(errors(text))
    assert (found.code, found.path) == ("LG403", ("flows", "main", "steps", 0, "with", "x", "deep", 0))
