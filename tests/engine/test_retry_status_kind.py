"""The status of a response that retries a rejected attempt agrees with the failure's kind, and
its ``violations`` always say what was wrong (review s11, finding 4: an agent's reported failure
or an invalid usage report came back ``ensure_failed`` with ``violations: []``).

``schema_failed``: the report's shape was wrong (its result's contract, or its usage);
``ensure_failed``: anything else (an ensure that does not hold, the agent's own failure)."""

from __future__ import annotations

from typing import Any

import pytest
from specs import fan_spec, note_flow

from lockgate.engine import Engine
from lockgate.engine.runner import run

STEP = note_flow("""      - id: a
        do: "write"
        out: Note
        attempts: 5
        ensure:
          - expr: "result.text != 'bad'"
""", output="a")
ITEM = fan_spec(stages="""            - do: "Shout ${item}"
              out: Word
              attempts: 5
              ensure:
                - expr: "result.word != 'bad'"
""")

#: (what the agent reports, the status, the failure's kind, what its first violation says)
CASES = {
    "reported failure": ({"result": None, "failure": "could not"}, "ensure_failed", "reported",
                         {"message": "agent reported failure: could not"}),
    "usage with dispatches": ({"usage": {"dispatches": 1}}, "schema_failed", "usage",
                              {"path": "usage.dispatches"}),
    "invalid usage key": ({"usage": {"cost": 1}}, "schema_failed", "usage", {"path": "usage.cost"}),
    "ensure false": ({"result": "bad"}, "ensure_failed", "ensure", {"ensure": None}),
    "contract broken": ({"result": 7}, "schema_failed", "schema", {"path": None}),
}


def _report(engine: Engine, run_id: str, step: str, token: str, field: str, how: dict[str, Any]) -> dict[str, Any]:
    """Report ``how`` (a ``result`` of "bad" or 7 is put in ``field``; otherwise a good one)."""
    result = how.get("result", "good")
    if isinstance(result, str):
        result = {field: result}
    return engine.step_done(run_id, step, result, token, failure=how.get("failure"), usage=how.get("usage"))


def _check(retry: dict[str, Any], step: str, status: str, kind: str, said: dict[str, Any]) -> None:
    assert (retry["status"], retry["failure"]["kind"]) == (status, kind)
    assert retry["step_id"] == retry["failed_step"] == step and retry["attempt"] == 2
    assert retry["violations"] and retry["violations"] == retry["failure"]["violations"]
    assert retry["previous_failure"] == retry["failure"]  # what the retry's dispatch hands the agent
    first = retry["violations"][0]
    for key, value in said.items():
        assert first.get(key) if value is None else first.get(key) == value, first
    if kind not in ("ensure", "schema"):  # checks' violations word it their own way
        assert first["message"] == retry["failure"]["reason"]


@pytest.mark.parametrize("case", CASES)
def test_a_do_steps_retry(case: str) -> None:
    how, status, kind, said = CASES[case]
    engine = Engine()
    first = engine.plan(STEP, {})
    _check(_report(engine, first["run_id"], "a", first["token"], "text", how), "a", status, kind, said)


@pytest.mark.parametrize("case", CASES)
def test_a_fanout_items_retry(case: str) -> None:
    how, status, kind, said = CASES[case]
    engine = Engine()
    first = engine.plan(ITEM, {"words": ["w"]})
    _check(_report(engine, first["run_id"], "fan/0", first["token"], "word", how), "fan/0", status, kind, said)


async def test_a_python_agents_failure_is_its_violation_without_its_frames() -> None:
    """The runner's progress says the step is retried and why, on one line: the frames stay in
    the failure's reason, which views show below the message."""
    calls = []

    def writer(task: Any) -> dict[str, Any]:
        calls.append(task)
        if len(calls) == 1:
            return {}["text"]
        return {"text": "fine"}

    result = await run(STEP.replace('do: "write"', 'do: "write"\n        agent: writer'), {},
                       agents={"writer": writer}, store="memory")
    assert result.ok and result.output == {"text": "fine"}
    retrying = [e for e in result.events if e.kind == "step_retrying"]
    assert [(e.step_id, e.attempt) for e in retrying] == [("a", 2)]
    (violation,) = retrying[0].violations
    assert violation == {"message": "agent reported failure: KeyError: 'text'"}
    retried = calls[1]
    assert retried.violations == (violation,) and "Traceback (the agent's frames" in retried.previous_failure
