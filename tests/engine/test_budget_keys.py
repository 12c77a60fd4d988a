"""Every budget key holds (semantics §6.10, §6.4, §1.8): a dispatch is reserved only when every
declared key of the flow, subflow and task ledgers passes ``spent + amount <= limit`` with the
amount one dispatch, so a step or fanout already spent past its ``usd``, ``tokens`` or ``ms``
limit gets no more agent calls; the runner charges each agent call's measured time as ``ms``
(judges' too, and consumers may report their own); exhaustion messages name the key and limit."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import lockgate
from lockgate.engine import Engine
from lockgate.engine.agents import AgentResult, Task, Telemetry, Usage
from lockgate.mcp.handlers import ToolContext
from lockgate.mcp.server import call_tool

RETRIED = textwrap.dedent("""
    version: 1
    contracts:
      V: {v: integer}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${a.output}", contract: V}
        steps:
          - id: a
            do: "a"
            out: V
            attempts: 4
            budget: {BUDGET}
            ensure:
              - expr: "result.v > 100"
    """)

FANNED = textwrap.dedent("""
    version: 1
    contracts:
      R: {v: integer}
    flows:
      entry: main
      main:
        input: {xs: "string[]"}
        output: {from: "${fan.output[0]}", contract: R}
        steps:
          - id: fan
            budget: {BUDGET}
            fanout:
              over: "${input.xs}"
              concurrency: 1
              isolation: none
              require: any
              merge: sequential
              steps:
                - do: "item ${item}"
                  out: R
                  attempts: 1
    """)

CHAIN = textwrap.dedent("""
    version: 1
    contracts:
      V: {v: integer}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${c.output}", contract: V}
        FLOW_BUDGET
        steps:
          - id: a
            do: "a"
            out: V
            STEP_BUDGET
          - id: b
            after: [a]
            do: "b"
            out: V
          - id: c
            after: [b]
            do: "c"
            out: V
    """)

#: what each call of the costly agent spends, by key
COST = {"usd": 0.4, "tokens": 100}


def chain(flow_budget: str = "", step_budget: str = "", attempts: int | None = None) -> str:
    """CHAIN with ``budget: {...}`` lines on the flow and on step ``a`` (none when empty)."""
    spec = CHAIN.replace("FLOW_BUDGET", f"budget: {{{flow_budget}}}" if flow_budget else "")
    step = f"budget: {{{step_budget}}}" if step_budget else ""
    if attempts is not None:
        step += f"\n        attempts: {attempts}"
    return spec.replace("STEP_BUDGET", step)


def costly(calls: list[str]) -> Any:
    """An agent whose every call costs COST (and answers a v that fails RETRIED's ensure)."""
    def agent(task: Task) -> AgentResult:
        calls.append(task.step_id)
        return AgentResult.success({"v": len(calls)}, usage=Usage(tokens=COST["tokens"], usd=COST["usd"]))
    return agent


def working(took: dict[str, float], at_least_ms: float = 3.0, fails: bool = False) -> Any:
    """An agent doing ``at_least_ms`` of real work, keeping the time it measured itself (and then
    raising, with ``fails``)."""
    def agent(task: Task) -> dict[str, int]:
        started = time.perf_counter()
        while (time.perf_counter() - started) * 1000 < at_least_ms:
            pass
        took[task.step_id] = took.get(task.step_id, 0.0) + (time.perf_counter() - started) * 1000
        if fails:
            raise RuntimeError("worked, then broke")
        return {"v": 1}
    return agent


def run(spec: str, inputs: dict[str, Any], agent: Any, **options: Any) -> tuple[Any, Engine]:
    """``spec`` run through the runner with ``agent`` as claude: its result and its engine."""
    engine = Engine()
    agents = {"claude": agent, **options.pop("agents", {})}
    return lockgate.run_sync(spec, inputs, agents=agents, engine=engine, **options), engine


def step_spent(engine: Engine, run_id: str, step_id: str) -> dict[str, float]:
    """What ``step_id`` of the run spent (its task ledger), as the audit's trace says."""
    return next(t.get("spent", {}) for t in engine.audit(run_id)["trace"] if t["step_id"] == step_id)


# -- a step's or a fanout's own usd / tokens budget stops further calls ------------------------------


@pytest.mark.parametrize("key,limit", [("usd", 0.5), ("tokens", 150)])
def test_a_steps_own_budget_stops_its_retries_once_spent(key: str, limit: float) -> None:
    calls: list[str] = []
    result, _ = run(RETRIED.replace("BUDGET", f"{key}: {limit}"), {}, costly(calls))
    assert calls == ["a", "a"]  # the second call overspent the step: attempts 3 and 4 are refused
    assert result.response["spent"][key] == pytest.approx(2 * COST[key])
    assert result.response["spent"]["dispatches"] == 2
    assert result.response["message"] == f"task budget exhausted: {key} {2 * COST[key]:g} spent of {limit:g}"


@pytest.mark.parametrize("key,limit", [("usd", 1.0), ("tokens", 250)])
def test_a_fanouts_own_budget_stops_dispatching_its_items_once_spent(key: str, limit: float) -> None:
    calls: list[str] = []
    result, _ = run(FANNED.replace("BUDGET", f"{key}: {limit}"), {"xs": list("abcdef")}, costly(calls))
    assert calls == ["fan/0", "fan/1", "fan/2"]  # the third overspent the fanout: no more items
    assert result.response["spent"][key] == pytest.approx(3 * COST[key])
    assert result.response["spent"]["dispatches"] == 3


# -- ms: each agent call's measured time ---------------------------------------------------------------


def test_the_runner_charges_each_agent_calls_measured_time_as_ms() -> None:
    took: dict[str, float] = {}
    result, engine = run(chain(), {}, working(took))
    assert result.status == "complete"
    for step in "abc":  # the runner measures around the agent's own work: never less
        assert step_spent(engine, result.run_id, step)["ms"] >= took[step]
    assert result.response["spent"]["ms"] >= sum(took.values())


def test_a_steps_ms_budget_refuses_a_retry_once_its_call_took_longer() -> None:
    took: dict[str, float] = {}
    result, engine = run(chain(step_budget="ms: 1", attempts=3), {}, working(took))
    assert list(took) == ["a"] and took["a"] >= 3  # called once: its 3 ms overspent the step's 1
    assert result.status == "error" and result.response["step_id"] == "a"
    spent = step_spent(engine, result.run_id, "a")["ms"]
    assert spent >= took["a"]
    assert result.response["message"] == f"task budget exhausted: ms {spent:.10g} spent of 1"


def test_a_failed_call_is_charged_its_time_too() -> None:
    took: dict[str, float] = {}
    result, engine = run(chain(step_budget="ms: 1", attempts=3), {}, working(took, fails=True))
    assert list(took) == ["a"]  # its failed 3 ms call overspent the step: no retry
    assert result.response["message"] == (f"task budget exhausted: ms {step_spent(engine, result.run_id, 'a')['ms']:.10g}"
                                           " spent of 1")
    assert step_spent(engine, result.run_id, "a")["ms"] >= took["a"]


def test_an_engine_dispatched_items_calls_are_charged_their_time() -> None:
    took: dict[str, float] = {}

    class Dispatcher:  # an agent the engine calls itself for engine-dispatch fanout items
        async def execute(self, task: Task) -> AgentResult:
            working(took, fails=task.step_id.endswith("1"))(task)
            return AgentResult.success({"v": 1})

    engine = Engine(dispatcher=Dispatcher())
    spec = FANNED.replace("BUDGET", "ms: 100000").replace("isolation: none", "isolation: none\n          dispatch: engine")
    out = engine.plan(spec, {"xs": ["a", "b", "c"]})
    assert out["status"] == "complete", out
    assert out["spent"]["ms"] >= sum(took.values()) and len(took) == 3


def test_a_flow_ms_budget_ends_the_run_when_the_calls_took_longer() -> None:
    took: dict[str, float] = {}
    result, _ = run(chain(flow_budget="ms: 5"), {}, working(took))
    assert result.status == "error" and result.response["error_type"] == "budget_exhausted"
    assert list(took) in (["a"], ["a", "b"])  # 3 ms and more each: over 5 by the second at the latest
    assert result.response["spent"]["ms"] >= sum(took.values())


def test_an_agents_own_ms_is_charged_instead_of_the_measured_time() -> None:
    result, engine = run(chain(), {}, lambda task: AgentResult.success({"v": 1}, usage=Usage(ms=7)))
    assert result.status == "complete"
    assert result.response["spent"]["ms"] == 21
    assert step_spent(engine, result.run_id, "a") == {"dispatches": 1, "ms": 7}


def test_a_call_shorter_than_a_millisecond_is_not_charged_unless_the_agent_says_so() -> None:
    measured = AgentResult.success({"v": 1}, telemetry=Telemetry(duration_ms=0.4))
    assert measured.spend() == {}  # below the unit of an ms budget: no settlement for instant agents
    assert AgentResult.success({"v": 1}, telemetry=Telemetry(duration_ms=2.5)).spend() == {"ms": 2.5}
    reported = AgentResult.success({"v": 1}, usage=Usage(tokens=3, ms=0.2), telemetry=Telemetry(duration_ms=9))
    assert reported.spend() == {"tokens": 3, "ms": 0.2}


def test_a_judge_agents_measured_time_is_charged_with_the_judged_step() -> None:
    took: dict[str, float] = {}
    spec = chain().replace('        do: "a"\n', '        do: "a"\n        ensure:\n'
                                                '          - judged: {statement: "fine"}\n', 1)
    work = working(took)

    def critic(task: Task) -> dict[str, Any]:
        work(Task(run_id=task.run_id, step_id="judge", prompt=""))
        return {"holds": True, "reason": "fine"}

    result, engine = run(spec, {}, working(took), agents={"critic": critic}, judge="critic")
    assert result.status == "complete" and took["judge"] >= 3
    assert step_spent(engine, result.run_id, "a")["ms"] >= took["a"] + took["judge"]


def test_a_failed_judge_agents_time_is_charged_too() -> None:
    took: dict[str, float] = {}
    spec = chain(attempts=1).replace('        do: "a"\n', '        do: "a"\n        ensure:\n'
                                     '          - judged: {statement: "fine"}\n', 1)
    work = working(took, fails=True)

    def critic(task: Task) -> dict[str, Any]:
        work(Task(run_id=task.run_id, step_id="judge", prompt=""))
        return {}

    result, engine = run(spec, {}, working(took), agents={"critic": critic}, judge="critic")
    assert result.status == "error" and took["judge"] >= 3  # the judge failed: the ensure failed closed
    assert step_spent(engine, result.run_id, "a")["ms"] >= took["a"] + took["judge"]


def test_a_plain_dispatcher_is_charged_its_time() -> None:
    took: dict[str, float] = {}
    work = working(took)

    def dispatcher(entry: dict[str, Any]) -> dict[str, int]:  # the engine calls it for each item
        return work(Task(run_id="r", step_id=entry["step_id"], prompt=""))

    spec = FANNED.replace("BUDGET", "ms: 100000").replace("isolation: none", "isolation: none\n          dispatch: engine")
    out = Engine(dispatcher=dispatcher).plan(spec, {"xs": ["a", "b", "c"]})
    assert out["status"] == "complete", out
    assert out["spent"]["ms"] >= sum(took.values()) and len(took) == 3


# -- exhaustion messages name the key and the limit -------------------------------------------------


@pytest.mark.parametrize("key,reported,limit", [("usd", 0.75, 0.5), ("tokens", 600, 500), ("ms", 250, 100)])
def test_a_refused_retry_names_the_key_spent_past_the_steps_limit(key: str, reported: float, limit: float) -> None:
    engine = Engine()
    first = engine.plan(chain(step_budget=f"{key}: {limit}", attempts=3), {})
    done = engine.step_done(first["run_id"], "a", {"v": 1}, first["token"], usage={key: reported})
    assert done["status"] == "error" and done["error_type"] == "retries_exhausted"
    assert done["message"] == f"task budget exhausted: {key} {reported:g} spent of {limit:g}"
    assert engine.audit(first["run_id"])["spent"] == {"dispatches": 1, key: reported}


def test_a_dispatch_budget_names_its_limit_for_the_step_and_the_flow() -> None:
    engine = Engine()
    first = engine.plan(chain(step_budget="dispatches: 1", attempts=2), {})
    done = engine.step_done(first["run_id"], "a", None, first["token"], failure="no")
    assert done["message"] == "task budget exhausted: dispatches 1 spent of 1"
    first = engine.plan(chain(flow_budget="dispatches: 1"), {})
    done = engine.step_done(first["run_id"], "a", {"v": 1}, first["token"])
    assert done["error_type"] == "budget_exhausted" and done["message"] == "flow budget exhausted: dispatches 1 spent of 1"


def test_a_fanout_item_that_overspends_the_flow_names_the_key() -> None:
    spec = FANNED.replace("        budget: {BUDGET}\n", "").replace(
        "    steps:\n", "    budget: {tokens: 5}\n    steps:\n", 1).replace(
        "isolation: none\n", "isolation: none\n          dispatch: consumer\n")
    engine = Engine()
    first = engine.plan(spec, {"xs": ["a", "b"]})
    done = engine.step_done(first["run_id"], "fan/0", {"v": 1}, first["ready"][0]["token"], usage={"tokens": 6})
    assert done["error_type"] == "budget_exhausted" and done["message"] == "flow budget exhausted: tokens 6 spent of 5"


# -- consumers report ms -----------------------------------------------------------------------------


def test_a_consumers_reported_ms_is_charged_and_held_to_the_budget() -> None:
    engine = Engine()
    first = engine.plan(chain(flow_budget="ms: 1000", step_budget="ms: 100", attempts=2), {})
    run_id = first["run_id"]
    done = engine.step_done(run_id, "a", {"v": 1}, first["token"], usage={"ms": 250})
    assert done["message"] == "task budget exhausted: ms 250 spent of 100"
    assert engine.audit(run_id)["spent"] == {"dispatches": 1, "ms": 250}
    debits = [e["detail"]["usage"] for e in engine.audit(run_id)["events"] if e["type"] == "usage_debit"]
    assert debits == [{"ms": 250}]


def test_an_mcp_consumers_reported_ms_is_charged(tmp_path: Path) -> None:
    ctx = ToolContext(Engine(), tmp_path)

    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = call_tool(ctx, tool, arguments)
        assert not answer.is_error, answer.content[0].text
        return answer.structured_content

    first = call("lockgate_plan", {"spec": chain(flow_budget="ms: 1000", step_budget="ms: 100", attempts=2)})
    run_id = first["run_id"]
    done = call("lockgate_step_done", {"run_id": run_id, "step_id": "a", "token": first["token"],
                                       "result": {"v": 1}, "usage": {"ms": 600}})
    assert done["message"] == "task budget exhausted: ms 600 spent of 100"  # the retry was refused
    assert ctx.engine.audit(run_id)["spent"] == {"dispatches": 1, "ms": 600}


def test_spend_summing_to_the_limit_in_floats_is_at_the_limit_not_past_it() -> None:
    def dime(task: Task) -> AgentResult:
        return AgentResult.success({"v": 1}, usage=Usage(usd=0.1))

    spec = FANNED.replace("BUDGET", "usd: 0.3").replace("require: any", "require: all")
    result, _ = run(spec, {"xs": ["a", "b", "c"]}, dime)  # 0.1 + 0.1 + 0.1 == 0.30000000000000004
    assert result.status == "complete", result.response
    assert result.response["spent"]["usd"] == pytest.approx(0.3)
