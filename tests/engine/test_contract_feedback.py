"""What a retry is told when a result breaks a contract: the paths lead to the bad field of the
result the agent sent (the flow output's source included), and the failure line says what is
wrong, how many more problems there are when it lists only some."""

from __future__ import annotations

from typing import Any

import yaml

from lockgate import run_sync
from lockgate.dsl.contracts import MAX_VIOLATIONS
from lockgate.engine.agents import Task
from lockgate.engine.store import open_store


def drive(spec: dict[str, Any], results: list[Any]) -> tuple[Any, list[Task]]:
    """Run ``spec`` with an agent answering ``results`` in turn; (run result, tasks it was sent)."""
    seen: list[Task] = []
    answers = iter(results)

    def agent(task: Task) -> Any:
        seen.append(task)
        return next(answers)

    result = run_sync(yaml.safe_dump(spec, sort_keys=False), {}, agents={"py": agent}, store=open_store("memory"))
    return result, seen


def output_from(source: str, contracts: dict[str, Any], attempts: int = 2) -> dict[str, Any]:
    step = {"id": "s", "do": "go", "agent": "py", "out": "A", "attempts": attempts}
    return {"version": 1, "contracts": contracts,
            "flows": {"entry": "f", "f": {"input": {}, "output": {"from": source, "contract": "R"}, "steps": [step]}}}


def test_a_flow_output_failure_names_the_field_inside_the_steps_result() -> None:
    spec = output_from("${s.output.sub}", {"A": {"sub": "object", "n": "integer"}, "R": {"v": "string"}})
    result, seen = drive(spec, [{"sub": {"v": 1}, "n": 1}, {"sub": {"v": "ok"}, "n": 1}])
    assert result.ok and result.output == {"v": "ok"}
    retry = seen[1]
    assert [dict(v) for v in retry.violations] == [{"path": "result.sub.v", "message": "expected string, found integer 1"}]
    assert retry.previous_failure == "flow output does not match contract R: result.sub.v: expected string, found integer 1"


def test_a_missing_flow_output_source_names_where_it_is_taken_from() -> None:
    spec = output_from("${s.output.sub}", {"A": {"sub": "object?", "n": "integer"}, "R": {"v": "string"}})
    result, seen = drive(spec, [{"n": 1}, {"n": 2, "sub": {"v": "x"}}])
    assert result.ok
    [violation] = seen[1].violations
    assert dict(violation) == {"path": "result.sub", "message": "missing: the flow output ${s.output.sub} is taken from here"}


def test_a_long_list_of_violations_says_how_many_it_leaves_out() -> None:
    spec = output_from("${s.output}", {"A": {"xs": "integer[]"}, "R": {"xs": "integer[]"}}, attempts=3)
    result, seen = drive(spec, [{"xs": ["a"] * 8}, {"xs": ["a"] * 500}, {"xs": [1]}])
    assert result.ok
    first, second = seen[1].previous_failure, seen[2].previous_failure
    assert first.startswith("output does not match contract A: result.xs[0]: expected integer, found string")
    assert first.endswith("result.xs[4]: expected integer, found string \"a\"; and 3 more")
    assert second.endswith(f"; and {MAX_VIOLATIONS - 5} more (the check stops at {MAX_VIOLATIONS})")
    assert len(seen[2].violations) == MAX_VIOLATIONS
