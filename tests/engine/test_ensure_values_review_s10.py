"""The values a false ensure names are written as JavaScript writes numbers (review s10): a
whole float as an integer ("result.n = 2", not 2.0), a small one as "1e-7" (not 1e-07)."""

from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  R: {n: number, o: object}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s.output}", contract: R}
    steps:
      - id: s
        agent: claude
        do: x
        out: R
        attempts: 3
        ensure:
          - expr: "result.n > 3 && result.o.a == 1"
"""


def _values(result: dict) -> dict:
    engine = Engine(store=open_store("memory"))
    resp = engine.plan(load(SPEC).spec, {})
    resp = engine.step_done(resp["run_id"], "s", result, resp["token"])
    assert resp["status"] == "ensure_failed"
    (violation,) = resp["violations"]
    return violation


def test_a_whole_float_is_shown_as_an_integer():
    violation = _values({"n": 2.0, "o": {}})
    assert violation["values"] == {"result.n": "2"}
    assert violation["message"].endswith("predicate evaluated to false (result.n = 2)")


def test_small_numbers_and_numbers_in_objects_are_shown_as_javascript_writes_them():
    violation = _values({"n": 5.0, "o": {"a": 1e-7, "b": [0.000001, 2.0]}})
    assert violation["values"] == {"result.n": "5", "result.o.a": "1e-7"}
    violation = _values({"n": 1e-7, "o": {"a": 1}})
    assert violation["values"] == {"result.n": "1e-7", "result.o.a": "1"}
