"""The evaluate commands an engine runs for a caller that does not drive the run (a ``lockgate
gate approve``, the MCP server) run exactly once: the engine holds the run while they run, its
concurrent calls share that claim until the last one's command ends, it runs the commands
another process's decision left to it meanwhile, and a resume in it does not start a command
it is running again."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

import pytest
from processes import wait_until
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.drivers import Driver
from lockgate.engine.store import open_store

#: a guard on waits (nothing waits for it to pass)
GUARD_S = 30
CLOSED = {"status": "closed", "children": [], "reason": "ok"}
# two gates, each releasing a command of its own
TWO_GATES = note_flow("""      - id: g1
        gate: {on_approve: c1, on_revise: null, on_kill: null}
      - id: g2
        gate: {on_approve: c2, on_revise: null, on_kill: null}
      - {id: c1, evaluate: {command: "one", timeout_ms: 60000}, out: Verdict}
      - {id: c2, evaluate: {command: "two", timeout_ms: 60000}, out: Verdict}
""", output="c1", contract="Verdict")


class Commands:
    """An evaluator whose commands each wait until the test releases them by name."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.started = {name: threading.Event() for name in ("one", "two")}
        self.release = {name: threading.Event() for name in ("one", "two")}

    def __call__(self, command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        self.ran.append(command)
        self.started[command].set()
        assert self.release[command].wait(GUARD_S), f"the test never released {command}"
        return {"ok": True, "result": CLOSED}


class Serialised:
    """An engine whose calls are serialised under a lock it leaves while a command runs, as the
    MCP server serves concurrent tool calls; calls go on in threads."""

    def __init__(self, engine: Engine) -> None:
        self.engine, self.lock, self.threads = engine, threading.Lock(), []
        engine.around_commands = self._unlocked

    @contextmanager
    def _unlocked(self, call: Any):
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()

    def call(self, method: str, *args: Any) -> Any:
        with self.lock:
            return getattr(self.engine, method)(*args)

    def start(self, method: str, *args: Any) -> None:
        thread = threading.Thread(target=self.call, args=(method, *args))
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(GUARD_S)
            assert not thread.is_alive()


@pytest.fixture
def two_gates(tmp_path):
    commands = Commands()
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=commands)
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                   evaluator=lambda *args: pytest.fail("the other process ran a command"))
    run_id = engine.plan(TWO_GATES, {})["run_id"]
    yield Serialised(engine), other, commands, run_id
    for event in commands.release.values():
        event.set()
    engine.close()
    other.close()


def test_a_command_left_by_a_decision_elsewhere_is_run_by_the_engine_holding_the_run(two_gates):
    server, other, commands, run_id = two_gates
    server.start("resolve_waiting_gate", run_id, "g1", "approve")
    assert commands.started["one"].wait(GUARD_S)
    # another process decides g2 while the server holds the run: it leaves c2 to the server
    assert other.resolve_waiting_gate(run_id, "g2", "approve")["commands_by"]
    commands.release["one"].set()
    assert commands.started["two"].wait(GUARD_S)  # run once the server's own command ended
    commands.release["two"].set()
    server.join()
    assert commands.ran == ["one", "two"]
    assert other.status(run_id)["status"] == "complete" and other.driver_of(run_id) is None


def test_concurrent_calls_share_the_claim_until_the_last_command_ends(two_gates):
    server, other, commands, run_id = two_gates
    server.start("resolve_waiting_gate", run_id, "g1", "approve")
    assert commands.started["one"].wait(GUARD_S)
    server.start("resolve_waiting_gate", run_id, "g2", "approve")
    assert commands.started["two"].wait(GUARD_S)
    commands.release["one"].set()
    server.threads[0].join(GUARD_S)
    # two still runs in the server: the run is still held, so a resume elsewhere leaves it be
    assert other.driver_of(run_id) is not None
    assert other.resume(run_id)["commands_by"]
    commands.release["two"].set()
    server.join()
    assert commands.ran == ["one", "two"] and other.driver_of(run_id) is None


def test_a_resume_in_the_engine_running_a_command_does_not_start_it_again(two_gates):
    server, other, commands, run_id = two_gates
    server.start("resolve_waiting_gate", run_id, "g1", "approve")
    assert commands.started["one"].wait(GUARD_S)
    resumed = server.call("resume", run_id)
    assert [e["step_id"] for e in resumed["evaluating"]] == ["c1"]
    commands.release["one"].set()
    server.join()
    assert commands.ran == ["one"]
    assert [g["step_id"] for g in other.status(run_id)["gates"]] == ["g2"]


LONG = TWO_GATES.replace('command: "one"', 'command: "cat > /dev/null; echo $$ > pid; exec sleep 600"')


@pytest.mark.parametrize("how", ["cancel", "take over"])
def test_a_command_run_for_a_caller_stops_when_its_run_is_cancelled_or_taken_over(tmp_path, how):
    from processes import running, wait_until

    from lockgate.engine.drivers import Driver, ended

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)  # the built-in runner
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(LONG, {})["run_id"]
    server = Serialised(engine)
    server.start("resolve_waiting_gate", run_id, "g1", "approve")
    wait_until(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text().strip(), "the command")
    pid = int((tmp_path / "pid").read_text())
    if how == "cancel":
        other.cancel(run_id, "from another terminal")
    else:
        taker = Driver.here()
        other.claim(run_id, taker, take_over=True)
    server.join()  # returns within a second or so, not after the command's 600 s
    assert not running(pid)
    if how == "take over":
        assert other.claim_of(run_id).owner == taker.owner  # the new holder's claim stands
        ended(taker)
    engine.close()
    other.close()


async def test_an_engine_driven_by_its_runner_runs_only_the_commands_its_calls_start(tmp_path):
    """An engine with a dispatcher runs the commands its calls start itself, under its runner's
    drive; the commands the drive runs (one a decision elsewhere left to it) are not run again."""
    import asyncio

    from lockgate.engine.runner import run

    commands, slow = Commands(), asyncio.Event()

    async def agent(task: Any) -> dict[str, str]:
        await slow.wait()
        return {"text": "slow"}

    spec = note_flow("""      - {id: x, agent: slow, do: "slow", out: Note}
      - {id: c2, after: [x], evaluate: {command: "two", timeout_ms: 60000}, out: Verdict}
      - id: g
        gate: {on_approve: c1, on_revise: null, on_kill: null}
      - {id: c1, evaluate: {command: "one", timeout_ms: 60000}, out: Verdict}
""", output="c1", contract="Verdict")
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=commands,
                    dispatcher=lambda entry: {"text": "d"})
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    commands.release["two"].set()
    async with asyncio.timeout(GUARD_S):
        driving = asyncio.ensure_future(run(spec, {}, engine=engine, agents={"slow": agent}))
        while not engine.runs() or not other.status(engine.runs()[0]["run_id"]).get("gates"):
            await asyncio.sleep(0.01)
        (summary,) = engine.runs()
        other.resolve_waiting_gate(summary["run_id"], "g", "approve")  # c1 is left to the drive
        await asyncio.to_thread(commands.started["one"].wait, GUARD_S)
        slow.set()  # x's result starts c2, in the engine's own call
        await asyncio.to_thread(commands.started["two"].wait, GUARD_S)
        commands.release["one"].set()
        result = await driving
    assert result.status == "complete" and sorted(commands.ran) == ["one", "two"]
    other.close()


def test_a_custom_evaluator_runs_in_the_callers_thread(two_gates):
    server, other, commands, run_id = two_gates
    threads: list[int] = []
    server.engine.evaluator = lambda *args: threads.append(threading.get_ident()) or {"ok": True, "result": CLOSED}
    server.call("resolve_waiting_gate", run_id, "g1", "approve")
    assert threads == [threading.get_ident()]


GATE_THEN_C1 = """      - id: g1
        gate: {on_approve: c1, on_revise: null, on_kill: null}
      - {id: c1, evaluate: {command: "one", timeout_ms: 60000}, out: Verdict}
"""
LONG_GATE = note_flow(GATE_THEN_C1, output="c1", contract="Verdict")
JUDGED_AFTER_C1 = note_flow(GATE_THEN_C1 + """      - id: s
        after: [c1]
        set: {status: "result.c1.status", children: "result.c1.children", reason: "'judged'"}
        out: Verdict
        ensure: [{judged: {statement: fine}}]
""", output="s", contract="Verdict")


def test_a_command_whose_answer_waits_for_the_judge_is_not_started_again(tmp_path):
    """The MCP server settles a command's answer, asking the judge with its lock left: a resume
    meanwhile finds the command still the server's (it ran it again, twice)."""
    from lockgate.engine.judge import JudgeBridge
    from lockgate.mcp.handlers import ToolContext

    judging, verdict = threading.Event(), threading.Event()

    def judge(*args: Any) -> dict[str, Any]:
        judging.set()
        assert verdict.wait(GUARD_S)
        return {"holds": True, "reason": "fine"}

    ran: list[str] = []
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, judge=JudgeBridge(judge),
                    evaluator=lambda command, *rest: ran.append(command) or {"ok": True, "result": CLOSED})
    ctx = ToolContext(engine, tmp_path)
    run_id = ctx.call(engine.plan, JUDGED_AFTER_C1, {})["run_id"]
    approving = threading.Thread(target=ctx.call, args=(engine.resolve_waiting_gate, run_id, "g1", "approve"))
    approving.start()
    assert judging.wait(GUARD_S)  # c1 has run; its answer waits for the verdict on s
    resumed = ctx.call(engine.resume, run_id)
    assert [e["step_id"] for e in resumed.get("evaluating", [])] == ["c1"]
    verdict.set()
    approving.join(GUARD_S)
    assert ran == ["one"] and engine.status(run_id)["status"] == "complete"
    engine.close()


async def test_a_drive_that_ended_leaves_the_engine_to_claim_the_run_for_its_commands(tmp_path):
    """The engine's runner drove the run to its end; reverted, the run's gate is decided in the
    same engine, which claims the run while it runs the command (it trusted the ended drive)."""
    import asyncio

    from lockgate.engine.gatechannel import CallbackGates
    from lockgate.engine.runner import make_runner

    commands = Commands()
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=commands)
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    decisions = iter([None, "approve"])
    runner = make_runner(engine=engine, gates=CallbackGates(lambda request: next(decisions)))
    waiting = await runner.start(LONG_GATE, {})
    engine.commit(waiting.run_id, "at the gate")
    commands.release["one"].set()
    assert (await runner.resume(waiting.run_id)).status == "complete"
    engine.revert(waiting.run_id, "at the gate")
    commands.started["one"].clear()
    commands.release["one"].clear()
    approving = threading.Thread(target=engine.resolve_waiting_gate, args=(waiting.run_id, "g1", "approve"))
    approving.start()
    await asyncio.to_thread(commands.started["one"].wait, GUARD_S)
    assert other.driver_of(waiting.run_id) is not None  # held: a resume elsewhere is refused
    commands.release["one"].set()
    await asyncio.to_thread(approving.join, GUARD_S)
    assert commands.ran == ["one", "one"] and other.driver_of(waiting.run_id) is None
    engine.close()
    other.close()


def test_a_driver_lets_go_of_a_run_only_when_no_work_was_left_to_it(tmp_path):
    """A drive ending idle gives up its claim in one transaction with a look at the run: work a
    decision elsewhere left to it (the decision saw the claim held) keeps the claim and is
    handed back to the drive; a decision committed after the let-go finds the run free."""
    from lockgate.engine.drivers import Driver, ended
    from lockgate.engine.evaluate import Evaluated, deferred

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(LONG_GATE, {})["run_id"]
    driver = Driver.here()
    engine.claim(run_id, driver)
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    with deferred():  # decided elsewhere, leaving c1 to the run's driver
        other.resolve_waiting_gate(run_id, "g1", "approve")
    kept = engine.let_go(run_id, driver)
    assert [e["step_id"] for e in kept["evaluating"]] == ["c1"]
    assert other.driver_of(run_id) == driver  # still held: the drive goes on with c1
    engine.evaluated(run_id, "c1", engine.evaluations(run_id)[0]["token"],
                     Evaluated({"ok": True, "result": CLOSED}, None, 1.0))
    assert engine.let_go(run_id, driver) is not None  # ended (complete): nothing to give up
    ended(driver)
    fresh = engine.plan(LONG_GATE, {})["run_id"]
    driver = Driver.here()
    engine.claim(fresh, driver)
    assert engine.let_go(fresh, driver) is None and other.driver_of(fresh) is None  # only a gate waits
    ended(driver)
    engine.close()
    other.close()


async def test_a_decision_made_while_the_driver_stops_runs_its_command_in_the_deciding_process(tmp_path):
    """Ctrl-C: the drive stops its agents (which may take their grace period). A gate decided
    meanwhile elsewhere runs its command there, once the stopping drive has given up the run:
    the stopping drive starts nothing more (the command was run by nobody), and until then its
    claim keeps every other process out."""
    import asyncio

    from lockgate.engine.drivers import Driver, ended
    from lockgate.engine.runner import make_runner
    from lockgate.errors import RunDriven

    started, stopping, let_stop = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def stubborn(task: Any) -> dict[str, str]:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopping.set()
            while not let_stop.is_set():  # slow to stop, as a command trapping SIGTERM is
                try:
                    await let_stop.wait()
                except asyncio.CancelledError:
                    continue
            raise
        return {"text": "never"}

    spec = note_flow(GATE_THEN_C1 + '      - {id: x, agent: slow, do: "slow", out: Note}\n',
                     output="c1", contract="Verdict")
    ran: list[str] = []
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                    evaluator=lambda *args: pytest.fail("the stopping driver ran the command"))
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                   evaluator=lambda command, *rest: ran.append(command) or {"ok": True, "result": CLOSED})
    runner = make_runner(engine=engine, agents={"slow": stubborn})
    driving = asyncio.ensure_future(runner.start(spec, {}))
    async with asyncio.timeout(GUARD_S):
        await started.wait()
        runner.detach()  # as Ctrl-C does: the run is left resumable
        driving.cancel()
        await stopping.wait()
        (summary,) = engine.runs()
        assert "driven_by" not in other.status(summary["run_id"])  # it carries nothing on
        second = Driver.here()
        with pytest.raises(RunDriven):  # its agents may still run: no second drive yet
            other.claim(summary["run_id"], second)
        ended(second)
        deciding = asyncio.ensure_future(asyncio.to_thread(other.resolve_waiting_gate, summary["run_id"], "g1",
                                                           "approve"))
        while not engine.status(summary["run_id"]).get("evaluating"):  # the decision is in
            await asyncio.sleep(0.01)
        assert ran == []  # its process waits: the stopping drive's agent may still run
        let_stop.set()
        with pytest.raises(asyncio.CancelledError):
            await driving
        decided = await deciding
    assert "driven_by" not in decided and ran == ["one"]
    assert other.driver_of(summary["run_id"]) is None
    engine.close()
    other.close()


def test_a_call_sharing_the_claim_does_not_start_a_command_another_call_of_it_runs(two_gates):
    """Two decisions wait for a stopping driver to give the run up (the server leaves its lock
    meanwhile, as the MCP server does): the call that claims first runs its own command and then
    the other decision's, which it finds left; the other call, sharing the claim once it wakes,
    must not start that command again (it ran twice, the second run absent from the audit;
    review s8-r5 #1)."""
    server, other, commands, run_id = two_gates
    stopping = Driver.here()
    other.claim(run_id, stopping)
    other.stopping(run_id, stopping)

    @contextmanager
    def waits():  # the g1 call wakes only once c1 runs in the other call
        server.lock.release()
        try:
            yield
        finally:
            if threading.current_thread() is server.threads[0]:
                assert commands.started["one"].wait(GUARD_S)
            server.lock.acquire()

    server.engine.around_waits = waits
    commands.release["two"].set()
    server.start("resolve_waiting_gate", run_id, "g1", "approve")
    server.start("resolve_waiting_gate", run_id, "g2", "approve")
    # both decisions saved: each call waits for the claim
    wait_until(lambda: not other.status(run_id).get("gates"), "both decisions to be saved")
    other.release(run_id, stopping)
    assert commands.started["one"].wait(GUARD_S)
    commands.release["one"].set()
    server.join()
    assert commands.ran == ["two", "one"]
    assert other.status(run_id)["status"] == "complete"
