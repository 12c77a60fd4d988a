"""A predicate that evaluates to false names the values it read, so a retry knows what was wrong."""

from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.ensures import MAX_VALUE_TEXT, MAX_VALUES
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  R: {path: string, items: "string[]"}
flows:
  entry: main
  main:
    input: {item: string}
    output: {from: "${s.output}", contract: R}
    steps:
      - id: s
        agent: claude
        do: x
        out: R
        attempts: 3
        ensure:
          - expr: %s
"""


def _violation(expression: str, result: dict) -> dict:
    engine = Engine(store=open_store("memory"))
    resp = engine.plan(load(SPEC % expression).spec, {"item": "a.py"})
    resp = engine.step_done(resp["run_id"], "s", result, resp["token"])
    assert resp["status"] == "ensure_failed"
    (violation,) = resp["violations"]
    return violation


def test_a_false_predicate_names_each_path_into_the_result_it_read_with_its_value():
    violation = _violation("result.path == input.item && len(result.items) > 0",
                           {"path": "zzz", "items": []})
    # input values may be secrets (keys, customer data): only the checked work is shown
    assert violation["values"] == {"result.path": '"zzz"', "result.items": "[]"}
    assert violation["message"].endswith(
        'failed: predicate evaluated to false (result.path = "zzz", result.items = [])')
    assert violation["detail"] == "predicate evaluated to false"


def test_control_characters_that_json_leaves_raw_are_escaped():
    violation = _violation('result.path == "x"', {"path": "a\x9b[31mb\x7f", "items": []})
    assert violation["values"] == {"result.path": '"a\\u009b[31mb\\u007f"'}


def test_values_are_cut_short_and_few():
    paths = " && ".join(f'result.items[{i}] == "x"' for i in range(MAX_VALUES + 2))
    violation = _violation(paths, {"path": "p", "items": ["y" * 500] * (MAX_VALUES + 2)})
    assert len(violation["values"]) == MAX_VALUES
    assert all(len(text) == MAX_VALUE_TEXT and text.endswith("…") for text in violation["values"].values())


def test_a_path_the_predicate_never_reached_is_left_out():
    violation = _violation('result.path == "q" && result.items[5] == "a"', {"path": "p", "items": ["a"]})
    assert violation["values"] == {"result.path": '"p"'}


def test_a_type_error_keeps_its_own_reason_without_values():
    violation = _violation("input.item > 1", {"path": "p", "items": []})  # validation types result only
    assert "values" not in violation
    assert violation["detail"].startswith("type_error")
