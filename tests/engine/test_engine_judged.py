"""``judged`` ensures in the engine: a ``judged`` event for every question asked, and what the
judge spent settled like the judged step's own usage (semantics §6.6 step 7)."""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import Script, drive
from test_engine_constructs import flow

from lockgate.engine import Engine
from lockgate.engine.ensures import judge_usage

DO = flow("""      - id: last
        do: "write"
        out: Note
        attempts: 2
        ensure:
          - judged:
              statement: "the text is polite"
              stakes: cheap
""")

FLOW_BUDGET = flow("""      - id: last
        do: "write"
        out: Note
        ensure:
          - judged:
              statement: "the text is polite"
""", extra="    budget:\n      tokens: 100\n")

TASK_BUDGET = flow("""      - id: last
        do: "write"
        out: Note
        attempts: 2
        budget:
          usd: 0.5
        ensure:
          - judged:
              statement: "the text is polite"
""")

FANOUT = flow("""      - id: fan
        fanout:
          over: "${input.topic}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "say ${item}"
              out: Note
              ensure:
                - judged:
                    statement: "it is polite"
      - id: last
        after: [fan]
        set:
          text: "'done'"
        out: Note
        ensure:
          - judged:
              statement: "the summary is fine"
""").replace("topic: string", "topic: string[]")


def judge(holds: bool = True, usage: Any = None, reason: str = "looked at it") -> Any:
    """A judge callable answering ``holds`` with ``usage``, remembering what it was asked."""

    def verdict(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
        verdict.asked.append(statement)
        answer: dict[str, Any] = {"holds": holds, "reason": reason}
        if usage is not None:
            answer["usage"] = usage
        return answer

    verdict.asked = []
    return verdict


def judged_events(engine: Engine, run: str) -> list[dict[str, Any]]:
    return [e for e in engine.audit(run)["events"] if e["type"] == "judged"]


def test_every_judged_question_is_an_event_whether_it_holds_or_not() -> None:
    engine = Engine(judge=judge(holds=False, reason="too curt"))
    run = engine.plan(DO, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "no"}]}))
    assert done["status"] == "error" and "too curt" in done["message"]
    events = judged_events(engine, run)
    assert [(e["step_id"], e["detail"]) for e in events] == [
        ("last", {"statement": "the text is polite", "stakes": "cheap", "holds": False, "reason": "too curt"})] * 2


def test_without_a_judge_the_failed_question_is_recorded_too(engine: Engine) -> None:
    run = engine.plan(DO, {"topic": "t"})["run_id"]
    drive(engine, run, Script({"last": [{"text": "hi"}]}))
    (first, _) = judged_events(engine, run)
    assert first["detail"]["holds"] is False and "no judge is configured" in first["detail"]["reason"]


def test_what_the_judge_spent_is_debited_like_the_steps_usage() -> None:
    engine = Engine(judge=judge(usage={"tokens": 40, "usd": 0.01}))
    run = engine.plan(DO, {"topic": "t"})["run_id"]
    assert drive(engine, run, Script({"last": [{"text": "hello"}]}))["status"] == "complete"
    audit = engine.audit(run)
    assert audit["spent"] == {"dispatches": 1, "tokens": 40, "usd": 0.01}
    debits = [e for e in audit["events"] if e["type"] == "usage_debit"]
    assert [d["detail"]["usage"] for d in debits] == [{"tokens": 40, "usd": 0.01}]
    assert judged_events(engine, run)[0]["detail"]["usage"] == {"tokens": 40, "usd": 0.01}


def test_a_judge_that_exhausts_the_flow_budget_ends_the_run() -> None:
    engine = Engine(judge=judge(usage={"tokens": 150}))
    run = engine.plan(FLOW_BUDGET, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "hello"}]}))
    assert done["status"] == "error" and done["error_type"] == "budget_exhausted"
    audit = engine.audit(run)
    assert audit["spent"]["tokens"] == 150
    assert {t["step_id"]: t["status"] for t in audit["trace"]}["last"] == "failed"
    assert audit["events"][-1]["type"] == "budget_exhausted"
    assert audit["events"][-1]["detail"]["reason"] == "flow budget exhausted: tokens 150 spent of 100"


def test_a_judge_that_exhausts_the_task_budget_fails_the_attempt() -> None:
    engine = Engine(judge=judge(holds=False, usage={"usd": 0.3}, reason="too curt"))
    run = engine.plan(TASK_BUDGET, {"topic": "t"})["run_id"]
    first = engine.status(run)
    retry = engine.step_done(run, "last", {"text": "hello"}, first["token"])
    assert retry["status"] == "ensure_failed" and "too curt" in retry["violations"][0]["message"]
    done = engine.step_done(run, "last", {"text": "hello"}, retry["token"])  # 0.6 of 0.5 spent
    assert done["status"] == "error" and done["message"] == "task budget exhausted: usd 0.6 spent of 0.5"
    assert engine.audit(run)["spent"]["usd"] == pytest.approx(0.6)
    assert "usage" not in engine._get(run).steps["last"].attempts[-1]  # the step itself reported none


def test_fanout_items_and_set_steps_are_judged_and_charged() -> None:
    engine = Engine(judge=judge(usage={"tokens": 5}))
    run = engine.plan(FANOUT, {"topic": ["a", "b"]})["run_id"]
    done = drive(engine, run, Script({"fan/*": [{"text": "hi"}]}))
    assert done["status"] == "complete"
    events = judged_events(engine, run)
    assert sorted(e["step_id"] for e in events) == ["fan/0", "fan/1", "last"]
    audit = engine.audit(run)
    assert audit["spent"]["tokens"] == 15
    debits = sorted((e["step_id"], e["detail"]["usage"]["tokens"]) for e in audit["events"] if e["type"] == "usage_debit")
    assert debits == [("fan/0", 5), ("fan/1", 5), ("last", 5)]


def test_a_malformed_verdict_fails_closed_and_its_spend_still_counts() -> None:
    def malformed(*_: Any) -> dict[str, Any]:
        return {"verdict": "yes", "usage": {"tokens": 7}}

    engine = Engine(judge=malformed)
    run = engine.plan(DO, {"topic": "t"})["run_id"]
    done = drive(engine, run, Script({"last": [{"text": "hi"}]}))
    assert "the judge answered malformed {'verdict': 'yes'}" in done["message"]
    assert engine.audit(run)["spent"]["tokens"] == 14


@pytest.mark.parametrize(("usage", "kept"), [
    (None, {}),
    ("lots", {}),
    ({"tokens": 3, "usd": 0.5, "ms": 20.0}, {"tokens": 3, "usd": 0.5, "ms": 20.0}),
    ({"tokens": -1, "usd": float("nan"), "ms": float("inf"), "dispatches": 4, "other": 1}, {}),
    ({"tokens": True, "usd": "0.1", "ms": 0}, {}),
    ({"tokens": 10**400, "usd": 0.5}, {"usd": 0.5}),  # no float overflow: ignored, not a crash
])
def test_only_sound_spend_is_taken_from_a_verdict(usage: Any, kept: dict[str, float]) -> None:
    assert judge_usage(usage) == kept


def test_an_agent_judge_passes_its_agents_usage_on() -> None:
    from lockgate.engine.agents.base import AgentResult
    from lockgate.engine.agents.base import Usage as AgentUsage
    from lockgate.engine.agents.scripted import ScriptedAgent
    from lockgate.engine.judge import AgentJudge

    agent = ScriptedAgent(default=AgentResult.success({"holds": True, "reason": "polite"},
                                                      usage=AgentUsage(tokens=9, usd=0.002)))
    engine = Engine(judge=AgentJudge(agent, "reviewer"))
    run = engine.plan(DO, {"topic": "t"})["run_id"]
    assert drive(engine, run, Script({"last": [{"text": "hello"}]}))["status"] == "complete"
    assert engine.audit(run)["spent"] == {"dispatches": 1, "tokens": 9, "usd": 0.002}
    assert agent.calls[0].contract == "JudgeVerdict"


def test_reported_usage_with_a_huge_integer_is_refused_clearly() -> None:
    from lockgate.engine.budget import usage_problem

    assert "integers up to 2**53 - 1" in usage_problem({"tokens": 10**400})
    assert usage_problem({"tokens": 2**53 - 1, "usd": 0.25}) is None
