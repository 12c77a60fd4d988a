"""``evaluate`` steps in the validator: the strict shape (§1.3), the field matrix (no on_fail),
``evaluate.in`` as a scanned template (§3.2), output typing (§3.3), the graph and the CLI."""

from __future__ import annotations

import textwrap

import jsonschema
import pytest
from checks_support import P, codes, errors, flow, only, spec
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.dsl.graph import dependencies, flow_graph
from lockgate.dsl.ir import Evaluate
from lockgate.dsl.loader import load
from lockgate.dsl.schema import spec_schema
from lockgate.dsl.structure import check_structure
from lockgate.dsl.yamlsrc import parse_yaml

GOOD = textwrap.dedent("""\
    version: 1
    contracts:
      Verdict:
        status: string
        children: array
        reason: string
        score: number?
      Note:
        text: string
    flows:
      entry: main
      main:
        input:
          doc: object
        output:
          from: "${report.output}"
          contract: Note
        carry:
          seen:
            initial: "${input.doc}"
        steps:
          - id: check
            evaluate:
              command: "python3 check.py --strict"
              in: "${input.doc}"
              timeout_ms: 60000
            out: Verdict
          - id: recheck
            when: "result.check.status == 'open'"
            evaluate:
              command: "./again.sh"
              in: "previous: ${check.output.reason} ${seen}"
              timeout_ms: 5000
          - id: report
            do: "Summarise ${check.output.reason}"
            after: [recheck]
            out: Note
    """)


def _structure(text: str) -> list[tuple[str, tuple, str]]:
    return [(f.code, f.path, f.at) for f in check_structure(parse_yaml(text).data)]


def _with_step(body: str) -> str:
    """GOOD with its first step replaced by ``body`` (YAML at step indentation)."""
    start = GOOD.index("      - id: check\n")
    end = GOOD.index("      - id: recheck\n")
    return GOOD[:start] + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 6) + "\n" + GOOD[end:]


# -- the shape ----------------------------------------------------------------------------------


def test_a_valid_evaluate_spec_passes_both_schema_validators_and_every_check() -> None:
    data = parse_yaml(GOOD).data
    assert list(jsonschema.Draft202012Validator(spec_schema()).iter_errors(data)) == []
    result = load(GOOD)
    assert result.diagnostics == []
    step = result.spec.flows["main"].steps[0]
    assert step.kind == "evaluate"
    assert step.evaluate == Evaluate("python3 check.py --strict", "${input.doc}", 60000,
                                     ("flows", "main", "steps", 0, "evaluate"))


def test_evaluate_alone_is_a_construct_and_mixing_it_is_lg204() -> None:
    mixed = _with_step("""
        - id: check
          do: "work"
          evaluate: {command: "true", timeout_ms: 10}
        """)
    (finding,) = [f for f in check_structure(parse_yaml(mixed).data)]
    assert (finding.code, finding.path) == ("LG204", P(0))
    assert "`do` and `evaluate`" in finding.message
    bare = _with_step("""
        - id: check
          out: Verdict
        """)
    none = [f for f in check_structure(parse_yaml(bare).data) if f.code == "LG204"]
    assert none[0].message == ("this step has none of do, set, gate, fanout, run, evaluate; "
                               "say what it does")


@pytest.mark.parametrize(("evaluate", "expected", "message"), [
    ('{command: "", timeout_ms: 10}', ("LG201", P(0, "evaluate", "command"), "value"),
     "`command` must not be empty"),
    ('{command: "x", timeout_ms: 0}', ("LG210", P(0, "evaluate", "timeout_ms"), "value"),
     "`timeout_ms` must be a positive integer, got `0`"),
    ('{command: "x", timeout_ms: 1.5}', ("LG201", P(0, "evaluate", "timeout_ms"), "value"),
     "`timeout_ms` must be an integer, got `1.5`"),
    ('{command: "x", in: {a: 1}, timeout_ms: 10}', ("LG201", P(0, "evaluate", "in"), "value"),
     "`in` must be a string, got a mapping"),
    ('{command: 7, timeout_ms: 10}', ("LG201", P(0, "evaluate", "command"), "value"),
     "`command` must be a string, got `7`"),
    ('{command: "x"}', ("LG203", P(0, "evaluate"), "key"), "missing required key `timeout_ms` in evaluate"),
    ('{command: "x", timeout_ms: 10, cmd: "y"}', ("LG202", P(0, "evaluate", "cmd"), "key"),
     "unknown key `cmd` in evaluate"),
    ('{commnd: "x", timeout_ms: 10}', ("LG202", P(0, "evaluate", "commnd"), "key"),
     "unknown key `commnd` in evaluate; did you mean `command`?"),
    ('"python3 check.py"', ("LG201", P(0, "evaluate"), "value"),
     'evaluate must be a mapping, got the string "python3 check.py"'),
])
def test_bad_evaluate_shapes_are_one_finding_each(evaluate: str, expected: tuple, message: str) -> None:
    text = _with_step(f"""
        - id: check
          evaluate: {evaluate}
          out: Verdict
        """)
    (finding,) = check_structure(parse_yaml(text).data)
    assert (finding.code, finding.path, finding.at) == expected
    assert finding.message.replace("`evaluate`", "evaluate") == message


@pytest.mark.parametrize(("key", "value", "homes"), [
    ("on_fail", "report", "do and fanout and run"),
    ("attempts", "2", "do and fanout"),
    ("ensure", "[{expr: 'true'}]", "do and set"),
    ("agent", "claude", "do"),
    ("with", "{a: 1}", "run"),
])
def test_keys_of_other_kinds_are_lg205_with_the_final_failure_hint(key: str, value: str, homes: str) -> None:
    text = _with_step(f"""
        - id: check
          evaluate: {{command: "x", timeout_ms: 10}}
          {key}: {value}
        """)
    (finding,) = check_structure(parse_yaml(text).data)
    assert (finding.code, finding.path, finding.at) == ("LG205", P(0, key), "key")
    assert finding.message == f"`{key}` is not allowed on an evaluate step; it belongs to {homes} steps"
    assert "never retried, never routed to on_fail" in (finding.hint or "")


def test_out_is_optional_and_when_and_after_are_allowed() -> None:
    text = _with_step("""
        - id: check
          after: [report]
          when: "true"
          evaluate: {command: "x", timeout_ms: 10}
        """).replace("after: [recheck]", "").replace("${check.output.reason}", "${input.doc}")
    text = text.replace("${check.output.reason} ", "")
    assert _structure(text) == []
    assert "LG405" not in codes(errors(text))


def test_findings_carry_exact_source_ranges() -> None:
    text = _with_step("""
        - id: check
          evaluate:
            command: ""
            timeout_ms: 0
          on_fail: report
        """)
    by_code = {d.code: d for d in load(text).diagnostics}
    lines = text.splitlines()

    def located(code: str) -> str:
        r = by_code[code].range
        assert r.start.line == r.end.line
        return lines[r.start.line][r.start.character:r.end.character]

    assert located("LG201") == '""'
    assert located("LG210") == "0"
    assert located("LG205") == "on_fail"


# -- evaluate.in as a template --------------------------------------------------------------------


def test_evaluate_in_references_are_edges_and_typed() -> None:
    text = flow("""
        - id: a
          do: "x"
          out: R
        - id: e
          evaluate: {command: "x", in: "${a.output.v} ${input.topic}", timeout_ms: 10}
        """)
    assert errors(text) == []
    assert dependencies(spec(text).flows["main"], "e") == {"a"}


@pytest.mark.parametrize(("in_", "code", "fragment"), [
    ("${a.output.nope}", "LG404", "nope"),
    ("${b.output}", "LG403", "'b' is not a step"),
    ("${item}", "LG402", "not in evaluate.in"),
    ("${input.nope}", "LG404", "nope"),
    ("${undeclared}", "LG407", "not a declared carry variable"),
    ("${a.output", "LG401", "unclosed"),
])
def test_evaluate_in_reference_problems(in_: str, code: str, fragment: str) -> None:
    text = flow(f"""
        - id: a
          do: "x"
          out: R
        - id: e
          evaluate: {{command: "x", in: "{in_}", timeout_ms: 10}}
        """)
    found = only(errors(text), code)
    assert found.path == P(1, "evaluate", "in")
    assert fragment in found.message


def test_evaluate_in_reads_carry_and_its_self_reference_is_lg503() -> None:
    assert load(GOOD).diagnostics == []  # ${seen} in recheck's in
    text = flow("""
        - id: a
          evaluate: {command: "x", in: "${a.output}", timeout_ms: 10}
          out: R
        """)
    assert only(errors(text), "LG503").path == P(0, "evaluate", "in")


def test_a_reference_to_an_evaluate_output_needs_its_out() -> None:
    text = flow("""
        - id: e
          evaluate: {command: "x", timeout_ms: 10}
        - id: a
          do: "${e.output.reason}"
          out: R
        """)
    found = only(errors(text), "LG405")
    assert "step 'e' declares no 'out' contract" in found.message
    typed = text.replace('timeout_ms: 10}', 'timeout_ms: 10}\n        out: R').replace("e.output.reason", "e.output.vv")
    found = only(errors(typed), "LG404")
    assert "did you mean 'v'" in found.message and found.replacement == ".v"


def test_when_reads_an_evaluate_output_through_its_out() -> None:
    text = flow("""
        - id: e
          evaluate: {command: "x", timeout_ms: 10}
          out: R
        - id: a
          after: [e]
          when: "result.e.nope == 1"
          do: "x"
          out: R
        """)
    assert "nope" in only(errors(text), "LG606").message


def test_an_unknown_out_contract_is_lg302() -> None:
    text = flow("""
        - id: a
          evaluate: {command: "x", timeout_ms: 10}
          out: Rr
        """)
    found = only(errors(text), "LG302")
    assert found.path == P(0, "out") and found.replacement == "R"


# -- graph and CLI --------------------------------------------------------------------------------


def test_the_graph_draws_evaluate_steps() -> None:
    graph = flow_graph(load(GOOD).spec, "main")
    assert graph.nodes["check"]["kind"] == "evaluate"
    assert graph.nodes["check"]["agent"] is None
    assert graph.edges["check", "recheck"]["kind"] == "data"
    assert graph.edges["recheck", "report"]["kind"] == "after"


def test_cli_graph_and_validate(tmp_path) -> None:
    good = tmp_path / "good.stratum.yaml"
    good.write_text(GOOD)
    drawn = CliRunner().invoke(main, ["graph", str(good)])
    assert drawn.exit_code == 0
    assert 'n0_check["check"]' in drawn.output and "n0_check --> n1_recheck" in drawn.output
    assert CliRunner().invoke(main, ["validate", str(good)]).exit_code == 0
    bad = tmp_path / "bad.stratum.yaml"
    bad.write_text(_with_step("""
        - id: check
          evaluate: {command: "", timeout_ms: 10}
          on_fail: report
        """))
    checked = CliRunner().invoke(main, ["validate", str(bad)])
    assert checked.exit_code != 0
    assert "error LG201: `command` must not be empty" in checked.output
    assert "error LG205: `on_fail` is not allowed on an evaluate step" in checked.output
