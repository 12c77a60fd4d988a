"""The runner end to end with Python agents: retries, concurrency limits, gates, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import textwrap
from pathlib import Path

import pytest

from lockgate.engine.agents import Fail, ScriptedAgent, Task
from lockgate.engine.engine import Engine
from lockgate.engine.gatechannel import CallbackGates, Decision, StoreGates
from lockgate.engine.runner import agent_names, make_runner, run
from lockgate.engine.store import open_store
from lockgate.errors import ConfigError, RunnerError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def spec(text: str) -> str:
    return textwrap.dedent(text).lstrip()


DRAFT = spec("""
    version: 1
    contracts:
      Draft:
        title: string
        score: number
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${polish.output}"
          contract: Draft
        steps:
          - id: draft
            do: "Draft a title about ${input.topic}"
            agent: writer
            out: Draft
            ensure:
              - expr: "result.score >= 0.5"
            attempts: 3
          - id: polish
            do: "Polish ${draft.output.title}"
            agent: writer
            out: Draft
    """)


CHAIN = spec("""
    version: 1
    contracts:
      Part:
        text: string
    flows:
      entry: main
      main:
        input: {}
        output:
          from: "${b.output}"
          contract: Part
        steps:
          - id: a
            do: "first"
            agent: worker
            out: Part
          - id: b
            do: "after ${a.output.text}"
            agent: worker
            out: Part
    """)


ONE_STEP = spec("""
    version: 1
    contracts:
      Part:
        text: string
    flows:
      entry: main
      main:
        input: {}
        output:
          from: "${only.output}"
          contract: Part
        steps:
          - id: only
            do: "do it"
            agent: worker
            out: Part
    """)


def fan_spec(count_ref: str = "${input.items}", concurrency: int = 2) -> str:
    return spec(f"""
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
              from: "${{done.output}}"
              contract: Item
            steps:
              - id: each
                fanout:
                  over: "{count_ref}"
                  concurrency: {concurrency}
                  isolation: none
                  require: all
                  merge: sequential
                  steps:
                    - do: "Handle ${{item}}"
                      agent: worker
                      out: Item
              - id: done
                do: "Count ${{each.output}}"
                agent: finisher
                out: Item
        """)


PARALLEL = spec("""
    version: 1
    contracts:
      Part:
        text: string
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${a.output}"
          contract: Part
        steps:
          - id: a
            do: "Part A of ${input.topic}"
            agent: worker
            out: Part
          - id: b
            do: "Part B of ${input.topic}"
            agent: worker
            out: Part
          - id: c
            do: "Part C of ${input.topic}"
            agent: worker
            out: Part
          - id: skipped
            when: "input.topic == 'never'"
            do: "Not needed"
            agent: worker
            out: Part
    """)

GATED = spec("""
    version: 1
    contracts:
      Work:
        text: string
    flows:
      entry: main
      main:
        input:
          ask: string
        output:
          from: "${work.output}"
          contract: Work
        max_rounds: 3
        steps:
          - id: work
            do: "Do ${input.ask}"
            agent: writer
            out: Work
          - id: review
            after: [work]
            gate:
              on_approve: null
              on_revise: work
              on_kill: null
    """)


def FINISH(task: Task) -> dict:  # noqa: N802 (a constant-like agent)
    return {"name": "done"}


class Tracker:
    """Counts agent calls in flight; the first call to reach ``limit`` concurrent opens the
    gate for everyone, so reaching the limit is proven and exceeding it would be recorded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self.peak = 0
        self.calls = 0
        self.full = asyncio.Event()

    async def __call__(self, task: Task) -> dict:
        self.active += 1
        self.calls += 1
        self.peak = max(self.peak, self.active)
        if self.active >= self.limit:
            self.full.set()
        try:
            await self.full.wait()
            return {field: task.prompt for field in task.schema["properties"]}
        finally:
            self.active -= 1


async def test_linear_flow_with_python_agents():
    def writer(task: Task) -> dict:
        return {"title": task.prompt.upper(), "score": 0.9}

    events = []
    result = await run(DRAFT, {"topic": "rain"}, agents={"writer": writer}, store="memory",
                       on_event=events.append)
    assert result.ok and result.status == "complete"
    assert result.output == {"title": "POLISH DRAFT A TITLE ABOUT RAIN", "score": 0.9}
    kinds = [(e.kind, e.step_id) for e in events]
    assert kinds == [("step_started", "draft"), ("step_succeeded", "draft"),
                     ("step_started", "polish"), ("step_succeeded", "polish"),
                     ("run_finished", None)]
    assert events[-1].status == "complete"
    assert result.events == events


async def test_a_run_result_reads_in_one_line_however_long_the_run():
    def name(task: Task) -> dict:
        return {"name": task.prompt}

    result = await run(fan_spec(concurrency=5), {"items": [f"n{i}" for i in range(60)]},
                       agents={"worker": name, "finisher": name}, store="memory")
    assert result.ok and len(result.events) > 100
    text = repr(result)
    assert text == f"RunResult(run_id={result.run_id!r}, status='complete', events={len(result.events)})"


async def test_retry_carries_the_violations_into_the_next_task():
    writer = ScriptedAgent({"draft": [{"title": "meh", "score": 0.1},
                                      {"title": 7, "score": 0.9},
                                      {"title": "Rain", "score": 0.8}],
                            "polish": [{"title": "Rain!", "score": 0.9}]})
    events = []
    result = await run(DRAFT, {"topic": "rain"}, agents={"writer": writer}, store="memory",
                       on_event=events.append)
    assert result.ok
    first, second, third = writer.calls[:3]
    assert (first.attempt, first.violations) == (1, ())
    assert second.attempt == 2 and "result.score >= 0.5" in str(second.violations)
    assert third.attempt == 3
    assert any(v.get("path", "").endswith("title") for v in third.violations)
    assert first.schema["properties"]["title"] == {"type": "string"}
    retrying = [e for e in events if e.kind == "step_retrying"]
    assert [e.attempt for e in retrying] == [2, 3]
    failed = [e for e in events if e.kind == "step_failed"]
    assert len(failed) == 2 and failed[0].violations


async def test_exhausted_retries_end_the_run_with_an_error():
    writer = ScriptedAgent({"draft": [Fail("model overloaded")] * 3})
    result = await run(DRAFT, {"topic": "x"}, agents={"writer": writer}, store="memory")
    assert result.status == "error" and not result.ok
    assert result.response["error_type"] == "retries_exhausted"
    assert len(writer.calls) == 3
    assert writer.calls[1].previous_failure.endswith("model overloaded")


async def test_independent_steps_run_concurrently_and_skips_are_reported():
    tracker = Tracker(limit=3)
    events = []
    result = await run(PARALLEL, {"topic": "t"}, agents={"worker": tracker}, store="memory",
                       on_event=events.append)
    assert result.ok and tracker.peak == 3
    assert [e.step_id for e in events if e.kind == "step_skipped"] == ["skipped"]


async def test_global_running_limit_is_honoured():
    tracker = Tracker(limit=2)
    result = await run(fan_spec(concurrency=6), {"items": [f"i{n}" for n in range(6)]},
                       agents={"worker": tracker, "finisher": FINISH}, store="memory", max_running=2)
    assert result.ok and tracker.calls == 6 and tracker.peak == 2


async def test_a_finished_call_no_longer_counts_against_the_limits():
    """The step a call's response releases is admitted after that call has left: a chain runs
    with room for one call, and a fanout exactly as wide as the limits completes."""
    def name(task: Task) -> dict:
        return {"name": task.step_id}

    writer = ScriptedAgent(default={"title": "t", "score": 0.9})
    chain = await run(DRAFT, {"topic": "t"}, agents={"writer": writer}, store="memory",
                      max_running=1, max_outstanding=1)
    assert chain.ok
    fan = await run(fan_spec(concurrency=2), {"items": list("abcdef")},
                    agents={"worker": name, "finisher": name}, store="memory", max_running=2,
                    max_outstanding=2)
    assert fan.ok


async def test_fanout_concurrency_is_honoured():
    tracker = Tracker(limit=3)
    result = await run(fan_spec(concurrency=3), {"items": [f"i{n}" for n in range(8)]},
                       agents={"worker": tracker, "finisher": FINISH}, store="memory")
    assert result.ok and tracker.calls == 8 and tracker.peak == 3


async def test_outstanding_limit_is_a_clear_error():
    started = asyncio.Event()

    async def worker(task):
        started.set()
        await asyncio.Event().wait()

    with pytest.raises(RunnerError, match="more than max_outstanding = 3 agent calls"):
        await run(fan_spec(concurrency=5), {"items": list("abcde")}, agents={"worker": worker, "finisher": FINISH},
                  store="memory", max_running=1, max_outstanding=3)


async def test_gate_decisions_from_a_callback_revise_then_approve():
    decisions = iter([Decision("revise", "make it shorter"), "approve"])
    seen = []

    def decide(request):
        seen.append((request.step_id, request.round))
        return next(decisions)

    writer = ScriptedAgent({"work": [{"text": "long version"}, {"text": "short"}]})
    events = []
    result = await run(GATED, {"ask": "a haiku"}, agents={"writer": writer}, store="memory",
                       gates=CallbackGates(decide), on_event=events.append)
    assert result.ok and result.output == {"text": "short"}
    assert len(writer.calls) == 2 and [s for s, _ in seen] == ["review", "review"]
    assert writer.calls[1].previous_failure == ("revision requested at gate 'review': "
                                                "make it shorter")
    assert "sent back" in writer.calls[1].retry_feedback()
    resolved = [e.data["decision"] for e in events if e.kind == "gate_resolved"]
    assert resolved == ["revise", "approve"]


async def test_a_decision_said_to_be_made_elsewhere_while_the_gate_waits_leaves_it_waiting():
    asked = []

    def claims_applied(request):
        asked.append(request.step_id)
        return Decision("approve", "done elsewhere", applied=True)

    writer = ScriptedAgent({"work": [{"text": "draft"}]})
    events = []
    result = await run(GATED, {"ask": "a haiku"}, agents={"writer": writer}, store="memory",
                       gates=CallbackGates(claims_applied), on_event=events.append)
    assert result.status == "await_gate" and asked == ["review"]
    assert [g["step_id"] for g in result.waiting_gates] == ["review"]
    assert not [e for e in events if e.kind == "gate_resolved"]


async def test_a_gate_channel_raising_a_stray_cancellation_is_a_runner_error():
    async def broken(request):
        inner = asyncio.ensure_future(asyncio.Event().wait())
        inner.cancel()
        await inner

    writer = ScriptedAgent({"work": [{"text": "draft"}]})
    with pytest.raises(RunnerError, match="cancelled from outside the run"):
        await asyncio.wait_for(run(GATED, {"ask": "a haiku"}, agents={"writer": writer}, store="memory",
                                   gates=CallbackGates(broken)), 30)


async def test_an_agent_raising_a_stray_cancellation_fails_its_step_and_the_run_ends():
    async def worker(task):
        inner = asyncio.ensure_future(asyncio.Event().wait())
        inner.cancel()
        await inner

    result = await asyncio.wait_for(run(CHAIN, {}, agents={"worker": worker}, store="memory"), 30)
    assert result.status == "error" and "was cancelled" in result.response["message"]


async def test_gate_kill_ends_the_run():
    writer = ScriptedAgent({"work": [{"text": "draft"}]})
    result = await run(GATED, {"ask": "x"}, agents={"writer": writer}, store="memory",
                       gates=CallbackGates(lambda r: ("kill", "wrong direction")))
    assert result.status == "killed"


async def test_no_gate_channel_stops_at_the_gate_and_resume_continues(tmp_path):
    store = open_store(tmp_path / "runs.db")
    writer = ScriptedAgent({"work": [{"text": "v1"}]})
    waiting = await run(GATED, {"ask": "x"}, agents={"writer": writer}, store=store)
    assert waiting.status == "await_gate"
    gate = waiting.waiting_gates[0]
    assert gate["step_id"] == "review"
    other = Engine(store=open_store(tmp_path / "runs.db"))
    other.gate_resolve(waiting.run_id, "review", "approve", "fine", "alice", gate["token"])
    runner = make_runner(store=store, agents={"writer": writer})
    done = await runner.resume(waiting.run_id)
    assert done.status == "complete" and done.output == {"text": "v1"}


async def test_gate_resolved_by_another_process_through_the_store(tmp_path):
    db = tmp_path / "runs.db"
    store = open_store(db)
    engine = Engine(store=store, workspace=tmp_path)
    gate_waiting = asyncio.Event()
    events = []

    def observe(event):
        events.append(event)
        if event.kind == "gate_waiting":
            gate_waiting.set()

    writer = ScriptedAgent({"work": [{"text": "v1"}]})
    running = asyncio.ensure_future(run(GATED, {"ask": "x"}, agents={"writer": writer},
                                        engine=engine, gates=StoreGates(store, interval=0.2),
                                        on_event=observe))
    await gate_waiting.wait()
    approve = textwrap.dedent(f"""
        from lockgate.engine.engine import Engine
        from lockgate.engine.store import open_store
        engine = Engine(store=open_store({str(db)!r}))
        gate = engine.pending_gates()[0]
        engine.gate_resolve(gate["run_id"], gate["step_id"], "approve", "ship it", "bob",
                            gate["token"])
    """)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", approve)
    assert await proc.wait() == 0
    result = await running
    assert result.status == "complete"
    resolved = [e for e in events if e.kind == "gate_resolved"]
    assert resolved[0].data == {"decision": "approve", "resolved_by": "bob", "elsewhere": True}
    assert resolved[0].message == "ship it"


async def test_cancelling_the_run_cancels_agents_and_records_it():
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def worker(task):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    engine = Engine()
    events = []
    running = asyncio.ensure_future(run(PARALLEL, {"topic": "t"}, agents={"worker": worker},
                                        engine=engine, on_event=events.append))
    await started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert cancelled.is_set()
    run_id = events[0].run_id
    assert engine.status(run_id)["status"] == "cancelled"
    assert events[-1].kind == "run_finished" and events[-1].status == "cancelled"


async def test_an_agent_that_returns_when_cancelled_starts_nothing_more():
    """An agent may answer its cancellation with a partial result: the run is still cancelled,
    and the step that result would release is never started."""
    started = asyncio.Event()
    later: list[str] = []

    async def worker(task):
        if task.step_id != "a":
            later.append(task.step_id)
            return {"text": "late"}
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return {"text": "partial"}

    engine = Engine()
    events = []
    running = asyncio.ensure_future(run(CHAIN, {}, agents={"worker": worker}, engine=engine,
                                        on_event=events.append))
    await started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert later == []
    assert engine.status(events[0].run_id)["status"] == "cancelled"
    assert events[-1].kind == "run_finished" and events[-1].status == "cancelled"
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_one_run_ending_leaves_another_runs_calls_of_a_shared_agent_alone():
    """Two runs on one Runner share its agent: when the first ends, or is cancelled, the second
    run's call of that agent goes on (agent.cancel() would stop every call of the agent)."""
    for cancel_first in (False, True):
        first_started, second_started, first_over = asyncio.Event(), asyncio.Event(), asyncio.Event()
        calls: list[str] = []

        async def worker(task):
            calls.append(task.run_id)
            if len(calls) == 1:
                first_started.set()
                await second_started.wait()
                if cancel_first:
                    await asyncio.Event().wait()
                return {"text": "first"}
            second_started.set()
            await first_over.wait()
            return {"text": "second"}

        runner = make_runner(store="memory", agents={"worker": worker})
        first = asyncio.ensure_future(runner.start(ONE_STEP, {}))
        await first_started.wait()
        second = asyncio.ensure_future(runner.start(ONE_STEP, {}))
        await second_started.wait()
        if cancel_first:
            first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        first_over.set()
        result = await asyncio.wait_for(second, 30)
        assert result.ok and result.output == {"text": "second"} and len(calls) == 2
        assert not [e for e in result.events if e.kind in ("step_failed", "step_retrying")]


async def test_unknown_agent_fails_before_the_run_starts():
    engine = Engine()
    with pytest.raises(ConfigError, match="no agent named 'writer'"):
        await run(DRAFT, {"topic": "x"}, engine=engine, registry=None,
                  config=None, agents={})
    assert engine.runs() == []


async def test_observer_errors_do_not_break_the_run():
    def broken(event):
        raise RuntimeError("display crashed")

    result = await run(DRAFT, {"topic": "x"}, store="memory", on_event=broken,
                       agents={"writer": lambda t: {"title": "t", "score": 1}})
    assert result.ok


def test_agent_names_follow_subflows():
    from lockgate.dsl.loader import load
    text = (EXAMPLES / "deploy-subflow.stratum.yaml").read_text()
    names = agent_names(load(text).spec)
    assert names and all(isinstance(n, str) for n in names)


async def test_example_fanout_files_with_scripted_agents():
    def review(task):
        return {"path": task.prompt.split()[1], "issues": [], "ok": True}

    claude = ScriptedAgent({"changed": [{"files": ["a.py", "b.py", "c.py"]}],
                            "summarize": [{"reviewed": 3, "blocking": []}]})
    result = await run(EXAMPLES / "fanout-files.stratum.yaml", {"base": "main"},
                       agents={"claude": claude, "codex": review}, store="memory")
    assert result.ok and result.output == {"reviewed": 3, "blocking": []}
    assert "a.py" in claude.calls[-1].prompt


async def test_example_health_main_job(tmp_path, monkeypatch):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import health_agents
    finally:
        sys.path.remove(str(EXAMPLES))
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text('def f():\n    """Doc."""\n    return 1\n')
    (package / "b.py").write_text("def g():\n    return 2  # TODO\n")
    monkeypatch.chdir(tmp_path)
    agents = {name: getattr(health_agents, name) for name in ("scanner", "measurer", "reporter")}
    result = await run(EXAMPLES / "health.stratum.yaml", {"root": "pkg"}, agents=agents,
                       store=tmp_path / "runs.db")
    assert result.ok, result.response
    assert result.output["files"] == 2 and result.output["doc_coverage"] == 0.5
    assert (tmp_path / ".lockgate" / "health-report.md").exists()


def test_example_reviewed_work_with_run_sync(tmp_path):
    from lockgate.engine.runner import run_sync

    codex = ScriptedAgent({"work": [{"result": "draft", "quality_score": 0.4},
                                    {"result": "final", "quality_score": 0.85}]})
    result = run_sync(EXAMPLES / "reviewed-work.stratum.yaml", {"text": "a release note"},
                      agents={"codex": codex}, store="memory", workspace=tmp_path,
                      gates=CallbackGates(lambda request: "approve"))
    assert result.ok and result.output == {"result": "final", "quality_score": 0.85}
    assert "quality_score >= 0.8" in str(codex.calls[1].violations)


ITERATED = textwrap.dedent("""
    version: 1
    contracts:
      Out: {score: integer}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${w.output}", contract: Out}
        steps:
          - id: w
            do: "improve"
            agent: writer
            out: Out
            iterate: {max: 4, until: "result.score >= 3"}
    """)


async def test_an_iterate_round_goes_round_again_without_being_reported_failed():
    """A round whose ``until`` does not hold yet is not a failure: the progress stream says the
    step goes round again and why (the CLI showed "failed" with no reason for every round)."""
    writer = ScriptedAgent({"w": [{"score": 1}, {"score": 2}, {"score": 3}]})
    result = await run(ITERATED, {}, agents={"writer": writer}, store="memory")
    assert result.ok and result.output == {"score": 3}
    assert not [e for e in result.events if e.kind == "step_failed"]
    rounds = [(e.attempt, e.message) for e in result.events if e.kind == "step_retrying"]
    assert rounds == [(2, "round 1 of 4 done: until 'result.score >= 3' does not hold yet"),
                      (3, "round 2 of 4 done: until 'result.score >= 3' does not hold yet")]
