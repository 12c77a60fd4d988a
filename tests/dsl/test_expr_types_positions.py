"""LG604 in every expression position, not only ``ensure``: ``when`` and ``set`` values (typed
through the step-output map), ``iterate.until`` (typed by the step's own contract), stage
``when``; conditions certain not to be booleans; ``set`` values whose kind the ``out`` field
cannot hold. Valid specs (the examples, the valid corpus, the reference's examples) gain no
type diagnostic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from checks_support import P, errors, flow
from hypothesis import given
from test_expr_types_static import SETTINGS, _expressions, _VALUES, _raises_type_error

from lockgate.dsl.contracts import ContractSet
from lockgate.dsl.expr import compile
from lockgate.dsl.loader import load
from lockgate.errors import ExprError

CONTRACTS = ("R: {s: string, n: number, i: integer, b: boolean, tags: 'string[]', o: 'number?', "
             "meta: Meta, anyo: object}\n  Meta: {label: string, count: integer}\n"
             "  T: {total: integer, label: 'string?', meta: Meta}")


def found(steps: str, **options) -> list[tuple]:
    """(code, path, span, message) of every error of a flow of ``steps``."""
    return [(f.code, f.path, f.span, f.message) for f in errors(flow(steps, contracts=CONTRACTS, **options))]


def test_when_comparing_a_list_with_a_number():
    """The review's case: the step was silently skipped at run time."""
    steps = """
        - {id: a, do: x, out: R}
        - {id: b, do: y, out: R, after: [a], when: "result.a.tags > 2"}
    """
    assert found(steps) == [("LG604", P(1, "when"), (0, 17),
                             "result.a.tags is an array; '>' needs two numbers or two strings (in 'when')")]


def test_set_value_adding_a_number_to_a_fanout_output():
    """The review's case: the value became false and failed the out contract."""
    steps = """
        - id: fan
          fanout: {over: "${input.names}", concurrency: 2, isolation: none, require: all, merge: sequential,
                   steps: [{do: "${item}", out: Meta}]}
        - {id: tot, after: [fan], set: {total: "result.fan + 1", label: "'x'", meta: "result.fan[0]"}, out: T}
    """
    assert found(steps, inputs="{names: 'string[]'}", output="${tot.output}") == [
        ("LG604", P(1, "set", "total"), (0, 14),
         "result.fan is an array; '+' needs two numbers or two strings (in 'set')")]


def test_iterate_until_ordering_a_number_against_a_string():
    """The review's case: every attempt was used up before the type error surfaced."""
    steps = """
        - {id: a, do: x, out: R, iterate: {max: 4, until: "result.n >= 'high'"}}
    """
    assert found(steps) == [("LG604", P(0, "iterate", "until"), (0, 18),
                             "result.n is a number; '>=' cannot compare it with the string 'high' (in 'until')")]


def test_stage_when_reads_the_step_map():
    steps = """
        - {id: a, do: x, out: R}
        - id: fan
          fanout: {over: "${a.output.tags}", concurrency: 2, isolation: none, require: all, merge: sequential,
                   steps: [{do: "${item}", out: Meta, when: "len(result.a.n) > 0"}]}
    """
    assert found(steps) == [("LG604", P(1, "fanout", "steps", 0, "when"), (0, 15),
                             "result.a.n is a number; len() needs a string, array or object (in 'stage when')")]


@pytest.mark.parametrize("where, steps, path, span, message", [
    ("when", '- {id: a, do: x, out: R, when: "len(input.topic)"}', P(0, "when"), (0, 16),
     "len(input.topic) is a number; a condition must be true or false (in 'when')"),
    ("until", '- {id: a, do: x, out: R, iterate: {max: 2, until: "result.tags"}}', P(0, "iterate", "until"),
     (0, 11), "result.tags is an array; a condition must be true or false (in 'until')"),
    ("ensure", '- {id: a, do: x, out: R, ensure: [{expr: " result.n + 1 "}]}', P(0, "ensure", 0, "expr"),
     (1, 13), "result.n + 1 is a number; a condition must be true or false (in 'ensure')"),
])
def test_a_condition_certain_not_to_be_a_boolean(where, steps, path, span, message):
    assert found(steps) == [("LG604", path, span, message)], where


def test_set_value_of_a_kind_its_out_field_cannot_hold():
    steps = """
        - {id: a, do: x, out: R}
        - {id: t, after: [a], out: T, set: {total: "result.a.s", label: "result.a.n", meta: "result.a.meta"}}
    """
    assert found(steps, output="${t.output}") == [
        ("LG604", P(1, "set", "total"), (0, 10),
         "result.a.s is a string; out contract T declares total: integer (in 'set')"),
        ("LG604", P(1, "set", "label"), (0, 10),
         "result.a.n is a number; out contract T declares label: string? (in 'set')"),
    ]


def test_set_values_that_may_fit_stay_clean():
    """A number for an integer field, null for an optional one, unknown kinds: not certain."""
    steps = """
        - {id: a, do: x, out: R}
        - {id: t, after: [a], out: T, set: {total: "result.a.n * 2", label: "null", meta: "result.a.anyo"}}
        - {id: u, after: [a], out: T, set: {total: "result.a.o", label: "result.a.s + '!'", meta: "result.a.meta"}}
    """
    assert found(steps, output="${t.output}") == []


def test_untyped_and_uncertain_reads_stay_clean():
    """A step that is absent from the map fails on its own; a fanout item may be null; input is
    not typed by this check; a gate has no output."""
    steps = """
        - {id: a, do: x, out: R}
        - id: fan
          fanout: {over: "${a.output.tags}", concurrency: 2, isolation: none, require: all, merge: sequential,
                   steps: [{do: "${item}", out: Meta}]}
        - {id: g, after: [fan], gate: {on_approve: null, on_revise: null, on_kill: null}}
        - {id: b, do: y, out: R, after: [g], when: "result.fan[0] == null || result.a.o > 1 || input.topic > 1"}
        - {id: c, do: y, out: R, after: [g], when: "len(result.fan) > 0 && result.a.anyo.x > 'a' && result.a.b"}
    """
    assert found(steps) == []


# -- no false positives on valid specs ------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = Path("/work/shared/reference/000_stratum.txt")


def _valid_texts() -> list[tuple[str, str]]:
    paths = [*ROOT.glob("examples/*.stratum.yaml"), *(ROOT / "tests/dsl/corpus/valid").glob("*.stratum.yaml")]
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(paths)]
    if REFERENCE.exists():
        blocks = re.finditer(r"^version: 1\n(?:.+\n)+", REFERENCE.read_text(encoding="utf-8"), re.M)
        texts += [(f"reference-{i}", m.group(0)) for i, m in enumerate(blocks)]
    return texts


@pytest.mark.parametrize("name, text", _valid_texts(), ids=[n for n, _ in _valid_texts()])
def test_valid_specs_get_no_type_diagnostic(name, text):
    codes = [(d.code, d.message) for d in load(text, name).diagnostics]
    assert [c for c in codes if c[0] == "LG604"] == []


# -- property: a report in a step-map position means the evaluator raises ------------------------

_TYPES = ContractSet.from_decls({
    "R": {"s": "string", "n": "number", "i": "integer", "b": "boolean", "e": "low|high", "tags": "string[]",
          "nums": "number[]", "meta": "Meta", "o": "number?", "anyo": "object", "arr": "array",
          "metas": "Meta[]"},
    "Meta": {"label": "string", "count": "integer", "note": "string?"},
})


def _when_spec(text: str) -> tuple[str, str]:
    """``text`` with ``result`` read as step a's output (``result.a``), and a spec whose step b
    has it as its ``when``."""
    rewritten = re.sub(r"\bresult\b", "result.a", text)
    return rewritten, flow(f"""
        - {{id: a, do: x, out: R}}
        - {{id: b, do: y, out: R, after: [a], when: "{rewritten}"}}
    """, contracts="R: {s: string, n: number, i: integer, b: boolean, e: 'low|high', tags: 'string[]', "
                   "nums: 'number[]', meta: Meta, o: 'number?', anyo: object, arr: array, metas: 'Meta[]'}\n"
                   "  Meta: {label: string, count: integer, note: 'string?'}")


def _not_a_boolean(text: str, value: dict) -> bool:
    try:
        return type(compile(text).evaluate({"result": value})) is not bool
    except ExprError:
        return True


@SETTINGS
@given(_expressions(logical=False), _VALUES)
def test_a_when_type_report_means_the_when_cannot_hold(text, value):
    """Through the whole validator, with ``result`` the step map (every node runs: no ``&&`` or
    ``||``): an LG604 on an operation means evaluating the ``when`` on a contract-valid output
    raises a type error; one on the value's kind means it raises or is not a boolean."""
    assert _TYPES["R"].check(value) == []
    rewritten, spec = _when_spec(text)
    for finding in errors(spec):
        if finding.code != "LG604":
            continue
        if "a condition must be true or false" in finding.message:
            assert _not_a_boolean(rewritten, {"a": value}), (rewritten, finding)
        else:
            assert _raises_type_error(rewritten, {"a": value}), (rewritten, finding)
