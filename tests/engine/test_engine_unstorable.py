"""A report no store can keep (NaN, a set, U+0000, text that is not Unicode, nesting too deep)
fails the attempt like any schema failure, on every store; it never fails the caller or writes
half a transition."""

from __future__ import annotations

import math

import pytest
from specs import fan_spec

from lockgate.engine import Engine
from lockgate.engine.agents import AgentResult
from lockgate.engine.runner import run
from lockgate.engine.store import open_store

LOOSE = """
version: 1
contracts:
  Done:
    ok: boolean
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${end.output}"
      contract: Done
    steps:
      - id: work
        do: "anything: nothing checks this answer"
        attempts: 2
      - id: end
        after: [work]
        do: "finish"
        out: Done
"""


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


BAD = [{"score": math.nan}, {"tags": {1, 2}}, {"text": "a\0b"}, {"text": "\ud800"}, _nested(5000)]


@pytest.fixture(params=["memory", "sqlite"])
def engine(request, tmp_path):
    engine = Engine(store=open_store("memory" if request.param == "memory" else tmp_path / "s.db"))
    yield engine
    engine.close()


@pytest.mark.parametrize(("bad", "path"), zip(BAD, ["result.score", "result.tags", "result.text", "result.text", "result"]),
                         ids=["nan", "set", "nul", "surrogate", "deep"])
def test_an_unstorable_result_is_a_schema_failure_that_is_retried(engine: Engine, bad, path) -> None:
    """The violation names the part of the result that is not JSON (a NaN, a set) or holds text
    a store refuses (U+0000, a lone surrogate); nesting deeper than it keeps is the whole result's."""
    first = engine.plan(LOOSE, {})
    retry = engine.step_done(first["run_id"], "work", bad, first["token"])
    assert retry["status"] == "schema_failed" and retry["retries_remaining"] == 0
    assert retry["violations"][0]["path"] == path
    assert retry["failure"]["reason"].startswith("the result cannot be stored: ")
    end = engine.step_done(first["run_id"], "work", {"fine": True}, retry["token"])
    done = engine.step_done(first["run_id"], "end", {"ok": True}, end["token"])
    assert done["status"] == "complete" and done["output"] == {"ok": True}
    assert engine.verify(first["run_id"])["ok"]


def test_an_unstorable_item_result_fails_that_item_attempt(engine: Engine) -> None:
    first = engine.plan(fan_spec(concurrency=1), {"words": ["a"]})
    retry = engine.step_done(first["run_id"], "fan/0", {"word": math.inf}, first["token"])
    (entry,) = retry["ready"]
    assert entry["step_id"] == "fan/0" and entry["attempt"] == 2
    assert entry["previous_failure"]["reason"].startswith("the result cannot be stored: ")
    done = engine.step_done(first["run_id"], "fan/0", {"word": "a"}, entry["token"])
    assert done["status"] == "complete"


async def test_the_runner_retries_an_agent_answer_no_store_can_keep() -> None:
    answers = iter([AgentResult.success({"score": math.nan}), AgentResult.success({"score": 1}),
                    {"ok": True}])
    result = await run(LOOSE, {}, agents={"claude": lambda task: next(answers)}, store="memory")
    assert result.ok and result.output == {"ok": True}
