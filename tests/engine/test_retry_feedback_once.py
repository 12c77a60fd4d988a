"""A retry's prompt says each problem of the previous attempt once (review s11, finding 7): the
failure's reason, then only the violations it does not already say, an ensure not named again
before a message that quotes it."""

from __future__ import annotations

import textwrap

from test_agents_openai import completion, server  # noqa: F401  (a real chat-completions server)

from lockgate.engine.agents import OpenAIAgent, Task
from lockgate.engine.runner import run

ENSURE = 'ensure "result.score >= 0.5" failed: predicate evaluated to false (result.score = 0.2)'

SCORED = textwrap.dedent("""
    version: 1
    contracts:
      Verdict: {label: string, score: number}
    flows:
      entry: main
      main:
        input: {text: string}
        output: {from: "${rate.output}", contract: Verdict}
        steps:
          - id: rate
            do: "Rate ${input.text}"
            agent: rater
            out: Verdict
            attempts: 2
            ensure:
              - expr: "result.score >= 0.5"
    """).lstrip()


async def test_the_model_is_told_a_failed_ensure_once(server):  # noqa: F811
    server.replies.extend([(200, completion('{"label": "positive", "score": 0.2}')),
                           (200, completion('{"label": "positive", "score": 0.9}'))])
    rater = OpenAIAgent("rater", model="tiny-model", base_url=server.base_url, backoff=0)
    result = await run(SCORED, {"text": "great"}, agents={"rater": rater}, store="memory")
    assert result.ok
    feedback = server.user_message(1).split("\n\n")[1]
    assert feedback == "\n".join(["Your previous attempt (attempt 1) was rejected:", f"- {ENSURE}",
                                  "Fix these problems and answer again."])


def feedback(previous: str | None, *violations: dict) -> list[str]:
    """The lines of a second attempt's feedback between its heading and its closing line."""
    text = Task(run_id="r", step_id="s", prompt="p", attempt=2, previous_failure=previous,
                violations=violations).retry_feedback()
    assert text is not None
    return text.splitlines()[1:-1]


def test_an_ensure_violation_its_reason_says_is_not_repeated():
    violation = {"ensure": "result.score >= 0.5", "message": ENSURE, "reason": ENSURE}
    assert feedback(ENSURE, violation) == [f"- {ENSURE}"]


def test_a_reported_failure_is_said_once():
    violation = {"message": "ValueError: boom"}
    assert feedback("agent reported failure: ValueError: boom", violation) == [
        "- agent reported failure: ValueError: boom"]


def test_contract_violations_past_the_summary_are_listed():
    violations = [{"path": f"result.f{k}", "message": "expected a string"} for k in range(6)]
    summary = "; ".join(f"{v['path']}: {v['message']}" for v in violations[:5])
    reason = f"output does not match contract Out: {summary}; and 1 more"
    assert feedback(reason, *violations) == [f"- {reason}", "- result.f5: expected a string"]


def test_an_iterate_round_says_its_reason_once_and_no_empty_line():
    why = 'iterate until "result.done" failed: predicate evaluated to false'
    assert feedback(why, {"until": "result.done", "reason": why}) == [f"- {why}"]


def test_violations_without_a_reason_are_each_listed_with_where():
    assert feedback(None, {"path": "result.title", "message": "too long"},
                    {"ensure": "result.n > 1", "message": "no n"}) == [
        "- result.title: too long", "- result.n > 1: no n"]
