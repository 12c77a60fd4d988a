"""``evaluate`` steps under the runner: ``evaluator=`` reaches the engine, and an evaluate
command is awaited off the event loop, so other agent calls and runs go on while it runs.

The concurrency tests synchronise through FIFOs, never sleeps: the evaluate command writes to
``started`` and then blocks reading ``release``; an agent of the same run (or of another run on
the same Runner) reads ``started`` and writes ``release``. On a blocked event loop the agent could
not go on, the command would time out, and the evaluate step would fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lockgate.engine.agents import Task
from lockgate.engine.engine import Engine
from lockgate.engine.evaluate import NO_RUNNER
from lockgate.engine.runner import Runner, make_runner, run, run_sync

CLOSED = {"status": "closed", "children": [], "reason": "released"}
#: seconds after which a test that should take milliseconds fails rather than hangs (only a
#: guard: nothing waits for it to pass); longer than the commands' own timeout_ms
GUARD_S = 60


def spec(steps: str, output: str = "${check.output}", contract: str = "Verdict") -> str:
    body = textwrap.indent(textwrap.dedent(steps).strip("\n"), " " * 6)
    return (
        "version: 1\n"
        "contracts:\n"
        "  Verdict: {status: string, children: array, reason: string}\n"
        "  Note: {text: string}\n"
        "flows:\n"
        "  entry: main\n"
        "  main:\n"
        "    input: {}\n"
        f"    output: {{from: '{output}', contract: {contract}}}\n"
        "    steps:\n"
        f"{body}\n"
    )


def evaluate_only(command: str, timeout_ms: int = 20_000) -> str:
    return spec(f"""
        - id: check
          evaluate: {{command: {json.dumps(command)}, in: "x", timeout_ms: {timeout_ms}}}
          out: Verdict
        """)


def after_first(command: str, timeout_ms: int = 20_000, beside: str = "") -> str:
    """``first`` (instant), then ``check`` (the command), and the ``beside`` steps."""
    return spec(textwrap.dedent(f"""
        - id: first
          do: "first"
          agent: quick
          out: Note
        - id: check
          evaluate: {{command: {json.dumps(command)}, timeout_ms: {timeout_ms}}}
          out: Verdict
          after: [first]
        """) + textwrap.dedent(beside).lstrip("\n"))


def beside_agent(command: str, timeout_ms: int = 20_000) -> str:
    """``first`` (instant), then ``check`` (the command); ``other`` runs beside both."""
    return after_first(command, timeout_ms, beside="""
        - id: other
          do: "other"
          agent: helper
          out: Note
        """)


def only_agent() -> str:
    return spec("""
        - id: other
          do: "other"
          agent: helper
          out: Note
        """, output="${other.output}", contract="Note")


async def quick(task: Task) -> dict[str, Any]:
    return {"text": "quick"}


class Handshake:
    """The FIFOs between an evaluate command and an agent, and the agent's side of them."""

    def __init__(self, where: Path) -> None:
        self.started, self.release, self.pid = where / "started", where / "release", where / "pid"
        os.mkfifo(self.started)
        os.mkfifo(self.release)
        self.window: tuple[float, float] | None = None  # (command seen started, release sent)

    @property
    def command(self) -> str:
        """Writes its pid, says it started, blocks until released, then prints a result."""
        return (f"echo $$ > {self.pid}; printf go > {self.started}; read line < {self.release}; "
                f"printf '%s' '{json.dumps(CLOSED)}'")

    async def helper(self, task: Task) -> dict[str, Any]:
        """An agent that waits for the command to start, then releases it."""
        await self.wait_started()
        seen = time.perf_counter()
        await asyncio.to_thread(self.release.write_text, "go\n")
        self.window = (seen, time.perf_counter())
        return {"text": "released"}

    async def wait_started(self) -> None:
        assert await asyncio.to_thread(self.started.read_text) == "go"

    def unblock(self) -> None:
        """Let any thread still blocked opening a FIFO go (a failing test must not hang): a
        read-write open is both ends at once on Linux."""
        for fifo in (self.started, self.release):
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))


@contextmanager
def handshake_in(where: Path) -> Iterator[Handshake]:
    """A Handshake, unblocked on the way out (in the test itself: the event loop's executor
    would wait for a blocked thread before any fixture's teardown)."""
    shake = Handshake(where)
    try:
        yield shake
    finally:
        shake.unblock()


def events_of(engine: Engine, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in engine.audit(run_id)["events"] if e["type"] == kind]


# -- evaluator= reaches the engine ---------------------------------------------------------------


class Recorder:
    """A sync evaluator answering ``closed`` and recording its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        self.calls.append((command, value, timeout_ms, workspace))
        return {"ok": True, "result": {**CLOSED, "reason": f"recorded {command}"}}


async def test_run_passes_its_evaluator_to_the_engine_it_makes(tmp_path: Path) -> None:
    recorder = Recorder()
    result = await run(evaluate_only("never-run"), {}, store="memory", workspace=tmp_path, evaluator=recorder)
    assert result.status == "complete"
    assert result.output == {**CLOSED, "reason": "recorded never-run"}
    assert recorder.calls == [("never-run", "x", 20_000, tmp_path.resolve())]


def test_run_sync_passes_its_evaluator_and_defaults_to_the_shell(tmp_path: Path) -> None:
    recorder = Recorder()
    given = run_sync(evaluate_only("never-run"), {}, store="memory", workspace=tmp_path, evaluator=recorder)
    assert given.output["reason"] == "recorded never-run" and len(recorder.calls) == 1
    printed = json.dumps({**CLOSED, "reason": "from sh"})
    default = run_sync(evaluate_only(f"printf '%s' '{printed}'"), {}, store="memory", workspace=tmp_path)
    assert default.status == "complete" and default.output == {**CLOSED, "reason": "from sh"}


async def test_a_runner_keeps_the_engines_evaluator_unless_given_one(tmp_path: Path) -> None:
    engines_own, given = Recorder(), Recorder()
    engine = Engine(workspace=tmp_path, evaluator=engines_own)
    kept = await Runner(engine).start(evaluate_only("a"))
    assert kept.status == "complete" and len(engines_own.calls) == 1
    replaced = await Runner(Engine(workspace=tmp_path, evaluator=engines_own), evaluator=given).start(evaluate_only("b"))
    assert replaced.output["reason"] == "recorded b" and len(engines_own.calls) == 1
    assert engine.evaluator is engines_own


async def test_evaluator_none_configures_none() -> None:
    engine = Engine()
    result = await make_runner(engine=engine, evaluator=None).start(evaluate_only("a"))
    assert result.status == "error" and engine.evaluator is None
    (check,) = [t for t in engine.audit(result.run_id)["trace"] if t["step_id"] == "check"]
    assert check["failure"]["reason"] == NO_RUNNER


# -- the command does not block the event loop --------------------------------------------------


async def test_another_agent_of_the_run_goes_on_while_the_command_runs(tmp_path: Path) -> None:
    engine = Engine(workspace=tmp_path)
    with handshake_in(tmp_path) as handshake:
        async with asyncio.timeout(GUARD_S):
            result = await run(beside_agent(handshake.command), {}, engine=engine,
                               agents={"quick": quick, "helper": handshake.helper})
    assert result.status == "complete" and result.output == CLOSED
    (ran,) = events_of(engine, result.run_id, "evaluated")
    assert ran["detail"]["outcome"] == "ok"
    # the event tells how long the command ran
    assert handshake.window is not None
    assert ran["detail"]["duration_ms"] >= (handshake.window[1] - handshake.window[0]) * 1000


async def test_another_run_on_the_same_runner_goes_on_while_the_command_runs(tmp_path: Path) -> None:
    with handshake_in(tmp_path) as handshake:
        runner = make_runner(engine=Engine(workspace=tmp_path), agents={"helper": handshake.helper})
        async with asyncio.timeout(GUARD_S):
            waiting, helping = await asyncio.gather(runner.start(evaluate_only(handshake.command)),
                                                    runner.start(only_agent()))
    assert (waiting.status, waiting.output) == ("complete", CLOSED)
    assert (helping.status, helping.output) == ("complete", {"text": "released"})


async def test_a_sync_evaluator_runs_in_a_worker_thread(tmp_path: Path) -> None:
    started, released = asyncio.Event(), __import__("threading").Event()
    loop = asyncio.get_running_loop()

    def evaluator(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        loop.call_soon_threadsafe(started.set)
        ok = released.wait(20)
        return {"ok": True, "result": {**CLOSED, "reason": f"released={ok}"}}

    async def helper(task: Task) -> dict[str, Any]:
        await started.wait()
        released.set()
        return {"text": "released"}

    result = await run(beside_agent("checker"), {}, store="memory", workspace=tmp_path, evaluator=evaluator,
                       agents={"quick": quick, "helper": helper})
    assert result.status == "complete" and result.output["reason"] == "released=True"


async def test_cancelling_the_run_kills_the_command(tmp_path: Path) -> None:
    engine = Engine(workspace=tmp_path)
    with handshake_in(tmp_path) as handshake:
        task = asyncio.ensure_future(run(after_first(handshake.command), {}, engine=engine, agents={"quick": quick}))
        async with asyncio.timeout(GUARD_S):
            await handshake.wait_started()
            pid = int(handshake.pid.read_text())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)
    (run_id,) = [r["run_id"] for r in engine.runs()]
    assert engine.status(run_id)["status"] == "cancelled"


# -- with the judge, and many commands in one engine call ---------------------------------------


async def test_a_verdict_and_a_command_needed_by_one_engine_call_are_each_asked_once(tmp_path: Path) -> None:
    text = spec("""
        - id: first
          do: "first"
          agent: quick
          out: Note
          ensure:
            - judged: {statement: "the note is quick"}
        - id: check
          evaluate: {command: "c", in: "${first.output.text}", timeout_ms: 1000}
          out: Verdict
        """)
    recorder, verdicts = Recorder(), []

    def judge(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
        verdicts.append(result)
        return {"holds": True, "reason": "it is"}

    result = await run(text, {}, store="memory", workspace=tmp_path, evaluator=recorder, judge=judge,
                       agents={"quick": quick})
    assert result.status == "complete" and result.output["reason"] == "recorded c"
    assert verdicts == [{"text": "quick"}] and [call[1] for call in recorder.calls] == ["quick"]


async def test_many_commands_in_one_engine_call_each_run_once(tmp_path: Path) -> None:
    count = 70
    checks = "".join(f"""
        - id: check{i}
          evaluate: {{command: "c{i}", in: "${{first.output.text}}", timeout_ms: 1000}}
          out: Verdict
        """ for i in range(count))
    text = spec("""
        - id: first
          do: "first"
          agent: quick
          out: Note
        """ + checks, output="${check0.output}")
    recorder = Recorder()
    result = await run(text, {}, store="memory", workspace=tmp_path, evaluator=recorder, agents={"quick": quick})
    assert result.status == "complete"
    assert sorted(call[0] for call in recorder.calls) == sorted(f"c{i}" for i in range(count))


# -- progress and limits --------------------------------------------------------------------------

FAILING_IN_SUBFLOW = """version: 1
contracts:
  Note: {text: string}
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${fb.output}", contract: Note}
    steps:
      - {id: wrap, run: child, with: {}, on_fail: fb}
      - {id: fb, agent: quick, do: fallback, out: Note}
  child:
    input: {}
    output: {from: "${e.output}", contract: Verdict}
    steps:
      - id: e
        evaluate: {command: "exit 3", timeout_ms: 5000}
        out: Verdict
"""


@pytest.mark.parametrize("routed", [True, False])
async def test_a_command_failing_inside_a_subflow_is_reported_failed(tmp_path: Path, routed: bool) -> None:
    """Whether the subflow's failure is routed to on_fail or ends the run, the failed child is
    reported failed (the response names its run step, and lists both in failed_steps)."""
    text = FAILING_IN_SUBFLOW if routed else FAILING_IN_SUBFLOW.replace(", on_fail: fb}", "}").replace(
        "      - {id: fb, agent: quick, do: fallback, out: Note}\n", "").replace("${fb.output}", "${wrap.output}")
    events: list[Any] = []
    result = await run(text, {}, store="memory", workspace=tmp_path, agents={"quick": quick},
                       on_event=events.append)
    assert result.status == ("complete" if routed else "error")
    (outcome,) = [e for e in events if e.step_id == "wrap/e" and e.kind != "step_started"]
    assert outcome.kind == "step_failed" and "non-zero status (status 3" in outcome.message
    assert outcome.data["kind"] == "evaluate"


async def test_max_running_bounds_commands_as_it_bounds_agent_calls(tmp_path: Path) -> None:
    checks = "".join(f"""
        - id: check{i}
          evaluate: {{command: "c{i}", timeout_ms: 1000}}
          out: Verdict
        """ for i in range(6))
    threading = __import__("threading")
    running, most, lock, overlapped = [0], [0], threading.Lock(), threading.Event()

    def counting(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            if running[0] > 1:
                overlapped.set()
        try:
            if command == "c0":  # a window in which unbounded commands would start beside it
                overlapped.wait(0.2)
            return {"ok": True, "result": CLOSED}
        finally:
            with lock:
                running[0] -= 1

    result = await run(spec(checks, output="${check0.output}"), {}, store="memory", workspace=tmp_path,
                       evaluator=counting, max_running=1)
    assert result.status == "complete" and most == [1]
