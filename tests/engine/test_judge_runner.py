"""``judged`` ensures through the runner: the judge by callable, agent, name and lockgate.toml,
failing closed, and the judge never stalling the other agents of the run."""

from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest

from lockgate.engine.agents import AgentResult, Fail, ScriptedAgent, Task
from lockgate.engine.engine import Engine
from lockgate.engine.judge import VERDICT_CONTRACT, VERDICT_SCHEMA
from lockgate.engine.runner import _as_spec as as_spec
from lockgate.engine.runner import run, uses_judged
from lockgate.errors import ConfigError

STATEMENT = "the title is about the topic"

JUDGED = textwrap.dedent(f"""
    version: 1
    contracts:
      Draft:
        title: string
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${{draft.output}}"
          contract: Draft
        steps:
          - id: draft
            do: "Draft a title about ${{input.topic}}"
            agent: writer
            out: Draft
            ensure:
              - judged:
                  statement: "{STATEMENT}"
                  stakes: paranoid
            attempts: 2
    """).lstrip()

# two independent steps: ``draft`` is judged while ``other`` is still running
PAIR = JUDGED.replace("        attempts: 2\n", """        attempts: 2
      - id: other
        do: "Something else"
        agent: helper
        out: Draft
""")


def writer(task: Task) -> dict:
    """"sun" first, "rain" on a retry."""
    return {"title": "sun" if task.attempt == 1 else "rain"}


def rain_judge(statement, stakes, result, input):
    holds = "rain" in result["title"]
    return {"holds": holds, "reason": "it mentions rain" if holds else "the title never mentions rain"}


def retry_violations(agent_tasks: list[Task]) -> str:
    return " ".join(str(v.get("message")) for v in agent_tasks[1].violations)


class Recorder:
    """A writer agent keeping every task it was given."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []

    def __call__(self, task: Task) -> dict:
        self.tasks.append(task)
        return writer(task)


async def test_a_judged_ensure_fails_then_passes_and_the_retry_gets_the_reason():
    asked = []

    async def judge(statement, stakes, result, input):
        asked.append((statement, stakes, result, input))
        return rain_judge(statement, stakes, result, input)

    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent}, store="memory", judge=judge)
    assert result.ok and result.output == {"title": "rain"}
    assert asked == [(STATEMENT, "paranoid", {"title": "sun"}, {"topic": "rain"}),
                     (STATEMENT, "paranoid", {"title": "rain"}, {"topic": "rain"})]
    violation = agent.tasks[1].violations[0]
    assert violation["kind"] == "judged" and violation["detail"] == "the title never mentions rain"
    assert "the title never mentions rain" in agent.tasks[1].retry_feedback()


async def test_a_sync_callable_judge_that_never_agrees_fails_the_run():
    def never(statement, stakes, result, input):
        return {"holds": False, "reason": "not convinced"}

    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": writer}, store="memory", judge=never)
    assert result.status == "error" and result.response["error_type"] == "retries_exhausted"
    assert "not convinced" in str(result.response["violations"])


async def test_the_judge_by_agent_name_gets_a_task_with_the_verdict_contract(tmp_path):
    judge_tasks: list[Task] = []

    def critic(task: Task) -> dict:
        judge_tasks.append(task)
        return rain_judge(**{k: task.inputs[k] for k in ("statement", "stakes", "result", "input")})

    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": writer, "critic": critic},
                       store="memory", judge="critic", workspace=tmp_path)
    assert result.ok
    first = judge_tasks[0]
    assert (first.run_id, first.step_id, first.agent) == (result.run_id, "draft", "critic")
    assert first.contract == VERDICT_CONTRACT and first.schema == VERDICT_SCHEMA
    assert first.cwd == str(tmp_path)
    assert STATEMENT in first.prompt and '"title": "sun"' in first.prompt and "paranoid" in first.prompt


async def test_an_agent_object_as_the_judge():
    critic = ScriptedAgent({"draft": [{"holds": False, "reason": "too sunny"},
                                      {"holds": True, "reason": "fine"}]}, name="critic")
    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent}, store="memory", judge=critic)
    assert result.ok and len(critic.calls) == 2
    assert "too sunny" in retry_violations(agent.tasks)


async def test_the_judge_named_in_lockgate_toml(tmp_path):
    (tmp_path / "judge_toml_critic.py").write_text(textwrap.dedent("""
        def critic(task):
            holds = "rain" in task.inputs["result"]["title"]
            return {"holds": holds, "reason": "ok" if holds else "say rain (from the toml judge)"}
        """))
    (tmp_path / "lockgate.toml").write_text(textwrap.dedent("""
        judge = "critic"

        [agents.critic]
        type = "python"
        callable = "judge_toml_critic:critic"
        """))
    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent}, store="memory",
                       workspace=tmp_path)
    assert result.ok
    assert "say rain (from the toml judge)" in retry_violations(agent.tasks)


async def test_judge_argument_overrides_the_engine_judge_which_overrides_the_config(tmp_path):
    (tmp_path / "lockgate.toml").write_text('judge = "nobody"\n')

    def engine_judge(*args):
        return {"holds": True, "reason": "the engine's judge"}

    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent},
                       engine=Engine(judge=engine_judge), workspace=tmp_path)
    assert result.ok and len(agent.tasks) == 1  # the unknown toml judge was never consulted
    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent},
                       engine=Engine(judge=engine_judge), workspace=tmp_path, judge=rain_judge)
    assert result.ok and len(agent.tasks) == 2


async def test_an_unknown_judge_name_lists_the_agents():
    with pytest.raises(ConfigError, match=r"no agent named 'nobody' to be the judge; the agents "
                                          r"are: claude, codex, writer"):
        await run(JUDGED, {"topic": "rain"}, agents={"writer": writer}, store="memory", judge="nobody")


async def test_an_unknown_judge_in_lockgate_toml_names_the_file(tmp_path):
    (tmp_path / "lockgate.toml").write_text('judge = "nobody"\n')
    with pytest.raises(ConfigError, match=r"lockgate.toml: judge: no agent named 'nobody'"):
        await run(JUDGED, {"topic": "rain"}, agents={"writer": writer}, store="memory",
                  workspace=tmp_path)


@pytest.mark.parametrize("judge, reason", [
    ("raises", "the judge failed: model down"),
    ("exits", "the judge failed: called sys.exit(3)"),
    ("exits_async", "the judge failed: called sys.exit(4)"),
    ("malformed", "the judge answered malformed {'verdict': 'yes'}"),
    ("agent_fails", "the judge failed: judge agent 'scripted': overloaded"),
    ("agent_prose", "the judge answered malformed 'looks fine to me'"),
])
async def test_a_judge_that_fails_or_answers_malformed_fails_closed(judge, reason):
    def raises(*args):
        raise ValueError("model down")

    def exits(*args):
        sys.exit(3)

    async def exits_async(*args):
        sys.exit(4)

    judges = {
        "raises": raises,
        "exits": exits,
        "exits_async": exits_async,
        "malformed": lambda *args: {"verdict": "yes"},
        "agent_fails": ScriptedAgent(default=Fail("overloaded")),
        "agent_prose": ScriptedAgent(default=AgentResult.success("looks fine to me")),
    }
    agent = Recorder()
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": agent}, store="memory",
                       judge=judges[judge])
    assert result.status == "error" and result.response["error_type"] == "retries_exhausted"
    assert reason in retry_violations(agent.tasks)
    assert reason in str(result.response["violations"])


async def test_without_a_judge_a_judged_ensure_fails_closed(tmp_path):
    result = await run(JUDGED, {"topic": "rain"}, agents={"writer": writer}, store="memory",
                       workspace=tmp_path)
    assert result.status == "error"
    assert "no judge is configured" in str(result.response["violations"])


async def test_a_slow_judge_does_not_stall_another_running_agent():
    """``other`` answers only once the judge is judging ``draft``, and the judge answers only
    once ``other``'s result has been reported and accepted: both happen only if the loop and
    the engine stay available to ``other`` for the whole judgement."""
    judging = asyncio.Event()
    other_done = asyncio.Event()

    asked = []

    async def judge(statement, stakes, result, input):
        asked.append(result)
        judging.set()
        await asyncio.wait_for(other_done.wait(), 10)  # a bound for a broken runner, not a pace
        return {"holds": True, "reason": "fine"}

    async def helper(task: Task) -> dict:
        await judging.wait()
        return {"title": "other"}

    def observe(event) -> None:
        if event.kind == "step_succeeded" and event.step_id == "other":
            other_done.set()

    events = []
    result = await run(PAIR, {"topic": "rain"}, agents={"writer": lambda t: {"title": "rain"}, "helper": helper},
                       store="memory", judge=judge, on_event=lambda e: (events.append(e), observe(e)))
    assert result.ok, result.response
    succeeded = [e.step_id for e in events if e.kind == "step_succeeded"]
    assert succeeded == ["other", "draft"]
    assert asked == [{"title": "rain"}]  # judged once: the first judgement was never stuck


async def test_cancelling_the_run_cancels_the_judge():
    judging = asyncio.Event()
    cancelled = asyncio.Event()

    async def judge(*args):
        judging.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    engine = Engine()
    running = asyncio.ensure_future(run(JUDGED, {"topic": "rain"}, agents={"writer": writer},
                                        engine=engine, judge=judge))
    await judging.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert cancelled.is_set()
    assert [r["status"] for r in engine.runs()] == ["cancelled"]


def test_uses_judged_finds_judged_ensures():
    assert uses_judged(as_spec(JUDGED)) and uses_judged(as_spec(PAIR))
    judged = f'          - judged:\n              statement: "{STATEMENT}"\n              stakes: paranoid\n'
    assert judged in JUDGED
    plain = JUDGED.replace(judged, "          - expr: \"result.title != ''\"\n")
    assert not uses_judged(as_spec(plain))


SET_JUDGED = textwrap.dedent("""
    version: 1
    contracts:
      Note:
        text: string
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${last.output}"
          contract: Note
        steps:
          - id: first
            set:
              text: "input.topic"
            out: Note
            ensure:
              - judged:
                  statement: "the note names the topic"
          - id: middle
            do: "Write about ${first.output.text}"
            agent: writer
            out: Note
          - id: last
            after: [middle]
            set:
              text: "result.middle.text"
            out: Note
            ensure:
              - judged:
                  statement: "the note is short"
                  stakes: cheap
    """).lstrip()


async def test_judged_set_steps_are_judged_inside_plan_and_inside_another_steps_result():
    """``first`` is settled by plan itself, ``last`` by the transition reporting ``middle``."""
    asked = []

    async def judge(statement, stakes, result, input):
        asked.append((statement, stakes, result))
        return {"holds": True, "reason": "fine"}

    result = await run(SET_JUDGED, {"topic": "rain"}, agents={"writer": lambda t: {"text": "drops"}},
                       store="memory", judge=judge)
    assert result.ok and result.output == {"text": "drops"}
    assert asked == [("the note names the topic", "default", {"text": "rain"}),
                     ("the note is short", "cheap", {"text": "drops"})]


FAN_JUDGED = textwrap.dedent("""
    version: 1
    contracts:
      Item:
        name: string
    flows:
      entry: main
      main:
        input:
          items: string[]
        output:
          from: "${each.output[0]}"
          contract: Item
        steps:
          - id: each
            fanout:
              over: "${input.items}"
              concurrency: 3
              isolation: none
              require: all
              merge: sequential
              steps:
                - do: "Handle ${item}"
                  agent: worker
                  out: Item
                  ensure:
                    - judged:
                        statement: "the name is upper case"
                  attempts: 2
    """).lstrip()


async def test_fanout_items_are_judged_concurrently():
    """Every item's judgement is pending at once: the judge releases them only when all three
    are waiting, which a runner judging one item at a time would never reach."""
    waiting = []
    all_waiting = asyncio.Event()

    async def judge(statement, stakes, result, input):
        waiting.append(result["name"])
        if len(waiting) == 3:
            all_waiting.set()
        await asyncio.wait_for(all_waiting.wait(), 10)
        return {"holds": result["name"].isupper(), "reason": "shout it"}

    worker = ScriptedAgent(default=lambda task: {"name": task.prompt.split()[-1].upper()})
    result = await run(FAN_JUDGED, {"items": ["a", "b", "c"]}, agents={"worker": worker},
                       store="memory", judge=judge)
    assert result.ok and result.output == {"name": "A"}
    assert sorted(waiting) == ["A", "B", "C"]
