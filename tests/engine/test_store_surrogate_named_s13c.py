"""A store refusing a lone surrogate quotes the one it found, not a fixed example (review s13b
F5), on every backend; and the engine fails an attempt whose result holds text no store keeps
with a violation at its path inside the result, as a contract check would."""

from __future__ import annotations

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import Store
from lockgate.errors import UnstorableValue

HEADER = {"status": "running", "flow": "main"}


@pytest.mark.parametrize("text, code", [("a\ud800b", "U+D800"), ("\udbff", "U+DBFF"), ("x\ude01", "U+DE01")])
def test_the_lone_surrogate_found_is_the_one_named(store: Store, text, code) -> None:
    with pytest.raises(UnstorableValue) as caught:
        store.create_run("r", {**HEADER, "note": ["fine \U0001f30a", text]}, {}, [])
    assert str(caught.value) == (f"header is not valid Unicode: it holds the lone surrogate {code}, which a store "
                                 "cannot keep (PostgreSQL refuses it)")


SPEC = """version: 1
contracts:
  Out: {v: string, more: object}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s0.output}", contract: Out}
    steps:
      - {id: s0, do: "Do it", agent: a, out: Out, attempts: 2}
"""


@pytest.mark.parametrize("bad, message", [
    ("a\0b", "contains U+0000, which no store keeps"),
    ("a\udcffb", "holds the lone surrogate U+DCFF, which is not Unicode text; no store keeps it"),
])
def test_a_result_no_store_keeps_fails_at_its_path(backend, bad, message) -> None:
    engine = Engine(store=backend.open())
    first = engine.plan(SPEC, {})
    result = {"v": "ok", "more": {"list": [1, {"deep key": bad}]}}
    answer = engine.step_done(first["run_id"], "s0", result, first["token"])
    path = 'result.more.list[1]["deep key"]'
    failure = {"attempt": 1, "kind": "schema", "reason": f"the result cannot be stored: {path}: {message}",
               "violations": [{"path": path, "message": message}]}
    assert (answer["status"], answer["attempt"], answer["previous_failure"]) == ("schema_failed", 2, failure)
    assert engine.status(first["run_id"])["previous_failure"] == failure  # as it was stored
