"""A result nested as deeply as a store keeps is readable everywhere it is stored: the audit
copies nothing recursively."""

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts: {R: {a: object}}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s.output}", contract: R}
    steps:
      - {id: s, agent: claude, do: x, out: R}
"""


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_the_audit_of_a_deeply_nested_result(backend, tmp_path):
    engine = Engine(store=open_store("memory" if backend == "memory" else tmp_path / "runs.db"))
    first = engine.plan(SPEC, {})
    result = _nested(600)
    assert engine.step_done(first["run_id"], "s", result, first["token"])["status"] == "complete"
    audit = engine.audit(first["run_id"])
    (reported,) = [e for e in audit["events"] if e["type"] == "result"]
    assert reported["detail"]["result"] == result
    assert audit["output"] == result
