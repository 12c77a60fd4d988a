"""Who drives a run (:mod:`lockgate.engine.drivers`): a drive claims its run, a second drive is
refused while the first one's process lives, a claim of a dead process is free at once, one made
on another host lapses unless renewed, and ``take_over`` displaces a claim (the displaced drive
stops at its next renewal)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from specs import note_flow

from lockgate.engine import Engine, drive
from lockgate.engine.agents import Task
from lockgate.engine.drivers import DRIVER_KEY, STALE_S, Driver, holding, process_start
from lockgate.engine.evaluate import deferred
from lockgate.engine.runner import make_runner
from lockgate.engine.store import open_store
from lockgate.errors import RunDriven, TakenOver

#: a guard (nothing waits for it to pass)
GUARD_S = 30
SPEC = note_flow('      - {id: write, agent: writer, do: "write", out: Note}\n', output="write")
COMMAND_SPEC = note_flow("""      - {id: a, agent: claude, do: a, out: Note}
      - id: check
        after: [a]
        evaluate: {command: "check it", timeout_ms: 5000}
""", output="a")


def elsewhere(driver: Driver, **changes: Any) -> dict[str, Any]:
    """``driver``'s record as if made on another host."""
    return replace(driver, host="another-host.example", **changes).to_dict()


def exited_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# -- whether a claim holds -------------------------------------------------------------------------


def test_a_claim_of_this_live_process_holds():
    driver = Driver.here()
    assert holding(driver.to_dict()) == driver


def test_a_claim_of_a_process_that_exited_is_free():
    assert holding(replace(Driver.here(), pid=exited_pid(), started=None).to_dict()) is None


def test_a_claim_of_a_process_that_exited_but_was_not_reaped_is_free():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start(child.pid)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited; left a zombie
    try:
        assert holding(replace(Driver.here(), pid=child.pid, started=started).to_dict()) is None
    finally:
        child.wait()


def test_a_claim_naming_a_pid_now_used_by_another_process_is_free():
    driver = Driver.here()
    assert driver.started is not None
    assert holding(replace(driver, started=str(int(driver.started) - 1)).to_dict()) is None


def test_a_claim_made_on_another_host_holds_until_it_lapses():
    driver = Driver.here()
    assert holding(elsewhere(driver)) is not None
    assert holding(elsewhere(driver, renewed_at=time.time() - STALE_S - 1)) is None


@pytest.mark.parametrize("record", [
    None, {}, {"owner": None}, {"owner": 7}, {"owner": "x", "host": "h", "pid": "not a pid", "renewed_at": 1},
    {"owner": "x", "host": "h", "pid": 0, "renewed_at": 1}, {"owner": "x", "host": "h", "pid": -1, "renewed_at": 1},
    {"owner": "x", "host": "h", "pid": 1}, "a string", [1, 2],
])
def test_what_is_not_a_claim_holds_nothing(record):
    assert Driver.from_dict(record) is None and holding(record) is None


# -- claims through the engine ---------------------------------------------------------------------


@pytest.fixture
def two_engines(tmp_path):
    """Two processes' engines on one SQLite store (one process here: distinct drives)."""
    first = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    second = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    yield first, second
    first.close()
    second.close()


def test_a_second_claim_is_refused_changing_nothing_until_the_first_is_released(two_engines):
    first, second = two_engines
    run_id = first.plan(SPEC, {})["run_id"]
    mine, theirs = Driver.here(), Driver.here()
    first.claim(run_id, mine)
    version = second.store.current_version(run_id)
    with pytest.raises(RunDriven, match=rf"run {run_id} is being driven by process {os.getpid()} on this host"):
        second.claim(run_id, theirs)
    assert second.store.current_version(run_id) == version
    assert second.driver_of(run_id) == mine
    first.release(run_id, mine)
    assert second.driver_of(run_id) is None
    second.claim(run_id, theirs)
    assert first.driver_of(run_id) == theirs


def test_a_claim_taken_over_is_recorded_and_its_driver_can_no_longer_renew(two_engines):
    first, second = two_engines
    run_id = first.plan(SPEC, {})["run_id"]
    mine, theirs = Driver.here(), Driver.here()
    first.claim(run_id, mine)
    assert first.renew(run_id, mine)
    second.claim(run_id, theirs, take_over=True)
    assert not first.renew(run_id, mine)
    first.release(run_id, mine)  # not its claim any more: left as it is
    assert second.driver_of(run_id) == theirs
    (event,) = [e for e in second.audit(run_id)["events"] if e["type"] == "drive_taken_over"]
    assert event["detail"]["displaced"] == {"host": mine.host, "pid": os.getpid()}


def test_a_run_that_ended_is_claimed_freely(two_engines):
    first, second = two_engines
    plan = first.plan(SPEC, {})
    first.claim(plan["run_id"], Driver.here())
    first.step_done(plan["run_id"], "write", {"text": "done"}, plan["token"])
    second.claim(plan["run_id"], Driver.here())


def test_a_resume_leaves_the_commands_of_a_live_driver_running(two_engines):
    first, second = two_engines
    plan = first.plan(COMMAND_SPEC, {})
    run_id = plan["run_id"]
    mine = Driver.here()
    first.claim(run_id, mine)
    with deferred():
        (call,) = first.step_done(run_id, "a", {"text": "A"}, plan["token"])["evaluate"]
        seen = second.resume(run_id)  # `lockgate resume` elsewhere: it is running here
    assert "evaluate" not in seen and [e["step_id"] for e in seen["evaluating"]] == ["check"]
    assert second.store.load_run(run_id).steps["check"]["token"] == call["token"]
    first.release(run_id, mine)
    with deferred():
        (again,) = second.resume(run_id)["evaluate"]  # nobody runs it now: started again
    assert again["token"] != call["token"]


def test_the_claim_is_an_engine_record_not_a_step(two_engines):
    first, _ = two_engines
    plan = first.plan(SPEC, {})
    first.claim(plan["run_id"], Driver.here())
    assert DRIVER_KEY in first.store.load_run(plan["run_id"]).steps
    assert [t["step_id"] for t in first.audit(plan["run_id"])["trace"]] == ["write"]


# -- drives ------------------------------------------------------------------------------------------


async def test_a_second_drive_is_refused_without_calling_the_agent_and_a_take_over_displaces_the_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drive, "RENEW_S", 0.0)  # the first drive renews at every watch
    calls: list[str] = []
    started = asyncio.Event()

    async def stuck(task: Task) -> dict[str, Any]:
        calls.append("stuck")
        started.set()
        await asyncio.Event().wait()
        return {"text": "never"}

    async def quick(task: Task) -> dict[str, Any]:
        calls.append("quick")
        await asyncio.wait([driving])  # the first drive stops at its next renewal
        return {"text": "written"}

    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": stuck})
    driving = asyncio.ensure_future(first.start(SPEC, {}))
    async with asyncio.timeout(GUARD_S):
        await started.wait()
        (run_id,) = first.run_ids
        second = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": quick})
        with pytest.raises(RunDriven):
            await second.resume(run_id)
        assert calls == ["stuck"]

        result = await second.resume(run_id, take_over=True)

        assert result.ok and result.output == {"text": "written"}
        with pytest.raises(TakenOver, match=rf"process {os.getpid()} on this host took over run {run_id}"):
            await driving
    assert calls == ["stuck", "quick"]
    first.engine.close()
    second.engine.close()


async def test_a_drive_that_stops_with_the_run_going_gives_its_claim_up(tmp_path: Path) -> None:
    gate_spec = SPEC + "      - {id: ok, after: [write], gate: {on_approve: null, on_revise: null, on_kill: null}}\n"
    runner = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": lambda task: {"text": "x"}})
    result = await runner.start(gate_spec, {})
    assert result.status == "await_gate"
    assert runner.engine.driver_of(result.run_id) is None
    runner.engine.close()


# -- the configuration a run is driven with ----------------------------------------------------------


def _project(folder: Path, writer: str) -> Path:
    """A lockgate.toml in ``folder`` mapping agent ``writer`` to a command printing ``writer``'s note."""
    folder.mkdir()
    config = folder / "lockgate.toml"
    config.write_text(f'[agents.writer]\ntype = "command"\ncommand = ["sh", "-c", "cat >/dev/null; echo \'{{\\"text\\": \\"{writer}\\"}}\'"]\n')
    return config


async def test_a_resume_finding_another_configuration_than_the_run_was_driven_with_is_refused(tmp_path: Path) -> None:
    from lockgate.engine.agents.config import load_config
    from lockgate.errors import ConfigError

    gate_first = SPEC.replace("      - {id: write,", "      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}\n"
                                                    "      - {id: write,")
    started_with = _project(tmp_path / "proj", "from proj")
    other = _project(tmp_path / "other", "from other")
    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, config=load_config(started_with),
                        config_chosen=False)
    waiting = await first.start(gate_first, {})
    assert waiting.status == "await_gate"
    run_id = waiting.run_id
    first.engine.resolve_waiting_gate(run_id, "ok", "approve")
    assert first.engine.last_config(run_id) == str(started_with.resolve())

    elsewhere = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, config=load_config(other),
                            config_chosen=False)
    with pytest.raises(ConfigError, match=rf"run {run_id} was driven with the configuration {started_with.resolve()}, "
                                          rf"but this resume found {other.resolve()}"):
        await elsewhere.resume(run_id)
    chosen = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, config=load_config(other))
    result = await chosen.resume(run_id)  # chosen on purpose
    assert result.ok and result.output == {"text": "from other"}
    for runner in (first, elsewhere, chosen):
        runner.engine.close()


async def test_a_step_reset_by_a_decision_made_elsewhere_while_its_agent_works_is_dispatched_again(
        tmp_path: Path) -> None:
    spec = note_flow("""      - {id: plan, agent: planner, do: "plan", out: Note}
      - {id: write, agent: writer, do: "write", out: Note, after: [plan]}
      - {id: look, after: [plan], gate: {on_approve: null, on_revise: plan, on_kill: null}}
""", output="write", max_rounds=3)
    calls: list[int] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def writer(task: Task) -> dict[str, Any]:
        calls.append(task.attempt)
        if len(calls) == 1:
            started.set()
            await release.wait()
        return {"text": f"call {len(calls)}"}

    runner = make_runner(store=tmp_path / "runs.db", workspace=tmp_path,
                         agents={"writer": writer, "planner": lambda task: {"text": "plan"}})
    driving = asyncio.ensure_future(runner.start(spec, {}))
    async with asyncio.timeout(GUARD_S):
        await started.wait()
        (run_id,) = runner.run_ids
        elsewhere = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)  # another terminal
        elsewhere.resolve_waiting_gate(run_id, "look", "revise", "start over")
        elsewhere.close()
        release.set()
        result = await driving
    assert result.status == "await_gate"  # not "another process is driving": nobody else does
    assert len(calls) == 2
    (write,) = [t for t in runner.engine.audit(run_id)["trace"] if t["step_id"] == "write"]
    assert write["output"] == {"text": "call 2"}
    runner.engine.close()


async def test_a_decision_for_a_gate_reset_elsewhere_meanwhile_is_reported_not_applied(tmp_path: Path) -> None:
    from lockgate.engine.gatechannel import Decision

    spec = note_flow("""      - {id: plan, agent: planner, do: "plan", out: Note}
      - {id: look, after: [plan], gate: {on_approve: null, on_revise: plan, on_kill: null}}
      - {id: sign, after: [plan], gate: {on_approve: null, on_revise: null, on_kill: null}}
""", output="plan", max_rounds=3)
    asked, answer = asyncio.Event(), asyncio.Event()
    lost: list[str] = []

    class Slow:
        """Decides gate sign once the test says so; leaves look waiting."""

        async def decide(self, request: Any) -> Decision | None:
            if request.step_id != "sign" or lost:
                return None
            asked.set()
            await answer.wait()
            return Decision("approve", "fine")

        def not_applied(self, request: Any, decision: Decision, refusal: Exception) -> None:
            lost.append(f"{request.step_id}: {refusal}")

    runner = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, gates=Slow(),
                         agents={"planner": lambda task: {"text": "plan"}})
    driving = asyncio.ensure_future(runner.start(spec, {}))
    async with asyncio.timeout(GUARD_S):
        await asked.wait()
        (run_id,) = runner.run_ids
        elsewhere = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
        elsewhere.resolve_waiting_gate(run_id, "look", "revise", "again")  # resets plan, look and sign
        elsewhere.close()
        answer.set()
        result = await driving
    assert result.status == "await_gate"
    assert lost == ["sign: step sign is pending, not awaiting a gate decision"]
    runner.engine.close()


# -- claims and the rest of the protocol (from a review) -------------------------------------------


def test_a_start_claims_its_run_in_the_transaction_that_plans_it(tmp_path: Path) -> None:
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    driver = Driver.here()
    run_id = engine.plan(SPEC, {}, driver=driver)["run_id"]
    assert engine.store.current_version(run_id) == 1 and engine.driver_of(run_id) == driver
    engine.close()


async def test_an_ended_run_brought_back_by_a_revert_is_resumed_by_the_process_that_drove_it(tmp_path: Path) -> None:
    runner = make_runner(store=tmp_path / "runs.db", workspace=tmp_path,
                         agents={"writer": lambda task: {"text": "written"}})
    engine = runner.engine
    gate_first = note_flow("""      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}
      - {id: write, agent: writer, do: "write", out: Note}
""", output="write")
    run_id = (await runner.start(gate_first, {})).run_id
    engine.commit(run_id, "before")
    engine.resolve_waiting_gate(run_id, "ok", "approve")
    assert (await runner.resume(run_id)).ok  # this drive ends with the run: its claim stays recorded
    engine.revert(run_id, "before")  # back to life, waiting at the gate
    assert engine.driver_of(run_id) is None
    engine.resolve_waiting_gate(run_id, "ok", "approve")
    assert (await runner.resume(run_id)).ok
    engine.close()


async def test_a_resume_whose_engine_call_fails_gives_its_claim_up(tmp_path: Path) -> None:
    runner = make_runner(store=tmp_path / "runs.db", workspace=tmp_path,
                         agents={"writer": lambda task: {"text": "written"}})
    run_id = runner.engine.plan(SPEC, {})["run_id"]
    resume, failures = runner.engine.resume, []

    def failing(run: str) -> Any:
        if not failures:
            failures.append(run)
            raise OSError("database is locked")
        return resume(run)

    runner.engine.resume = failing  # type: ignore[method-assign]
    with pytest.raises(OSError):
        await runner.resume(run_id)
    assert runner.engine.driver_of(run_id) is None
    assert (await runner.resume(run_id)).ok  # the retry is not refused by the claim left behind
    runner.engine.close()


def test_a_claim_from_another_pid_namespace_of_this_host_holds_while_renewed():
    driver = Driver.here()
    other = replace(driver, pidns="pid:[1]", pid=exited_pid())  # its pid means nothing here
    assert holding(other.to_dict()) is not None
    assert holding(replace(other, renewed_at=time.time() - STALE_S - 1).to_dict()) is None


def test_a_claim_from_another_machine_of_the_same_name_holds_while_renewed():
    """Every Linux host's first pid namespace has the same number: a machine sharing this one's
    host name is told apart by its boot id, so its live claim is not judged by a local pid."""
    driver = Driver.here()
    namespace = driver.pidns.partition("@")[0]
    other = replace(driver, pidns=f"{namespace}@another-machines-boot", pid=exited_pid())
    assert holding(other.to_dict()) is not None
    assert "another machine of that name" in other.describe()
    assert holding(replace(other, renewed_at=time.time() - STALE_S - 1).to_dict()) is None


def test_a_claim_recorded_before_boot_ids_is_judged_by_its_pid_on_this_host():
    driver = Driver.here()
    older = replace(driver, pidns=driver.pidns.partition("@")[0], pid=exited_pid())
    assert holding(older.to_dict()) is None  # its process is gone: free at once, not after a lapse
    mine = replace(older, owner="a-drive-that-ended", pid=os.getpid(), started=driver.started)
    assert holding(mine.to_dict()) is None  # this process, which has no such drive


def test_a_consumer_reading_a_run_another_process_drives_is_told_who(two_engines):
    first, second = two_engines
    run_id = first.plan(SPEC, {}, driver=Driver.here())["run_id"]
    assert "driven_by" not in first.status(run_id)  # its own drive
    seen = second.status(run_id)
    assert seen["driven_by"].startswith(f"process {os.getpid()} on this host")
    assert second.resume(run_id)["driven_by"] == seen["driven_by"]
    from lockgate.mcp.advice import next_steps

    assert next_steps(seen).startswith(f"Run {run_id} is being driven by process {os.getpid()}")


async def test_a_drive_taken_over_stops_at_its_next_answer_without_calling_agents_again(tmp_path: Path) -> None:
    spec = note_flow("""      - {id: write, agent: writer, do: "write", out: Note}
      - {id: more, agent: writer, do: "more", out: Note, after: [write]}
""", output="more")
    calls: list[str] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def stuck(task: Task) -> dict[str, Any]:
        calls.append(f"first:{task.step_id}")
        started.set()
        await release.wait()
        return {"text": "first"}

    async def after_the_first_answers(task: Task) -> dict[str, Any]:
        calls.append(f"second:{task.step_id}")
        if task.step_id == "write":  # the take-over is committed: let the first drive's agent answer
            release.set()
            await asyncio.wait([driving])
        return {"text": "second"}

    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": stuck})
    driving = asyncio.ensure_future(first.start(spec, {}))
    async with asyncio.timeout(GUARD_S):
        await started.wait()
        (run_id,) = first.run_ids
        second = make_runner(store=tmp_path / "runs.db", workspace=tmp_path,
                             agents={"writer": after_the_first_answers})
        result = await second.resume(run_id, take_over=True)
        with pytest.raises(TakenOver):  # its answer was stale: it stopped, before any renewal
            await driving
    assert result.ok and result.output == {"text": "second"}
    assert calls == ["first:write", "second:write", "second:more"]
    first.engine.close()
    second.engine.close()


async def test_a_resume_finding_a_configuration_for_a_run_driven_without_one_is_refused(tmp_path: Path) -> None:
    from lockgate.engine.agents.config import ProjectConfig, load_config
    from lockgate.errors import ConfigError

    gate_first = note_flow("""      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}
      - {id: write, agent: writer, do: "write", out: Note}
""", output="write")
    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, config=ProjectConfig(), config_chosen=False,
                        agents={"writer": lambda task: {"text": "explicit"}})
    run_id = (await first.start(gate_first, {})).run_id
    first.engine.resolve_waiting_gate(run_id, "ok", "approve")
    assert first.engine.last_config(run_id) == ""
    found = _project(tmp_path / "other", "from other")
    elsewhere = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, config=load_config(found),
                            config_chosen=False)
    with pytest.raises(ConfigError, match=rf"run {run_id} was driven without a configuration file, but this resume "
                                          rf"found {found.resolve()}"):
        await elsewhere.resume(run_id)
    for runner in (first, elsewhere):
        runner.engine.close()


def test_a_take_over_keeps_a_held_result_and_the_waiting_gates_tokens(tmp_path: Path) -> None:
    spec = note_flow("""      - id: w
        agent: writer
        do: "write"
        out: Note
        ensure:
          - judged: {statement: "fine"}
      - {id: g, gate: {on_approve: null, on_revise: null, on_kill: null}}
""", output="w")
    engine = Engine(store=open_store(tmp_path / "runs.db"), judge=lambda *args: {"holds": True, "reason": "ok"})
    plan = engine.plan(spec, {}, driver=replace(Driver.here(), host="another-host.example"))
    run_id = plan["run_id"]
    (w,) = [e for e in plan["ready"] if e["step_id"] == "w"]
    engine._park(run_id, "w", {"text": "held"}, w["token"], None, None)  # the judge was asked; then a crash
    gate_token = engine.status(run_id)["gates"][0]["token"]
    engine.claim(run_id, Driver.here(), take_over=True)
    (held,) = engine.status(run_id)["ready"]
    assert held["token"] != w["token"] and held["reported"] == {"result": {"text": "held"}}
    assert engine.status(run_id)["gates"][0]["token"] == gate_token  # a person holding it may decide
    done = engine.step_done(run_id, "w", {"text": "held"}, held["token"])
    assert engine.gate_resolve(run_id, "g", "approve", "ok", "ana", gate_token)["status"] == "complete", done
    engine.close()


async def test_a_drive_taken_over_while_its_gate_prompt_was_open_stops_after_the_decision(tmp_path: Path) -> None:
    from lockgate.engine.gatechannel import Decision

    spec = note_flow("""      - {id: g, gate: {on_approve: w, on_revise: null, on_kill: null}}
      - {id: w, agent: writer, do: "write", out: Note}
""", output="w")
    asked, answer = asyncio.Event(), asyncio.Event()
    calls: list[str] = []

    class Prompt:
        async def decide(self, request: Any) -> Decision:
            asked.set()
            await answer.wait()
            return Decision("approve", "go")

    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, gates=Prompt(),
                        agents={"writer": lambda task: calls.append("first") or {"text": "first"}})
    driving = asyncio.ensure_future(first.start(spec, {}))
    async with asyncio.timeout(GUARD_S):
        await asked.wait()
        (run_id,) = first.run_ids
        first.engine.claim(run_id, Driver.here(), take_over=True)  # another process takes it over
        answer.set()
        with pytest.raises(TakenOver):
            await driving
    assert calls == []  # the decision was applied; the step after it is the new driver's to run
    assert first.engine.status(run_id)["step_id"] == "w"
    first.engine.close()


async def test_agents_given_in_python_are_not_refused_for_another_configuration(tmp_path: Path) -> None:
    from lockgate.engine.agents.config import load_config

    gate_first = note_flow("""      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}
      - {id: write, agent: writer, do: "write", out: Note}
""", output="write")
    agents = {"writer": lambda task: {"text": "explicit"}}
    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents=agents,
                        config=load_config(_project(tmp_path / "a", "from a")), config_chosen=False)
    run_id = (await first.start(gate_first, {})).run_id
    first.engine.resolve_waiting_gate(run_id, "ok", "approve")
    elsewhere = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents=agents,
                            config=load_config(_project(tmp_path / "b", "from b")), config_chosen=False)
    result = await elsewhere.resume(run_id)  # every agent is given: no file can change them
    assert result.ok and result.output == {"text": "explicit"}
    for runner in (first, elsewhere):
        runner.engine.close()


def test_a_claim_of_this_process_whose_drive_stopped_binds_nobody(tmp_path: Path) -> None:
    from lockgate.engine.drivers import ended

    engine = Engine(store=open_store(tmp_path / "runs.db"))
    driver = Driver.here()
    run_id = engine.plan(SPEC, {}, driver=driver)["run_id"]
    assert engine.driver_of(run_id) == driver
    ended(driver)  # its release could not be written (the store failed): the claim is left
    assert engine.driver_of(run_id) is None  # a notebook kernel can drive it again
    engine.claim(run_id, Driver.here())
    engine.close()


async def test_resuming_an_ended_run_to_read_it_neither_claims_it_nor_records_a_configuration(tmp_path: Path) -> None:
    from lockgate.engine.agents.config import load_config

    started_with = _project(tmp_path / "proj", "from proj")
    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, config=load_config(started_with),
                        config_chosen=False)
    done = await first.start(SPEC, {})
    assert done.ok and done.output == {"text": "from proj"}
    reader = make_runner(store=tmp_path / "runs.db", workspace=tmp_path,
                         config=load_config(_project(tmp_path / "other", "from other")), config_chosen=False)
    version = reader.engine.store.current_version(done.run_id)
    again = await reader.resume(done.run_id)
    assert again.ok and again.output == {"text": "from proj"}
    assert reader.engine.last_config(done.run_id) == str(started_with.resolve())
    assert reader.engine.store.current_version(done.run_id) == version + 1  # the resume's event only
    for runner in (first, reader):
        runner.engine.close()


async def test_a_run_keeps_the_agents_module_its_drives_took_agents_from(tmp_path: Path) -> None:
    gate_first = SPEC.replace("      - {id: write,", "      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}\n"
                                                    "      - {id: write,")
    def writer(task: Task) -> dict[str, str]:
        return {"text": "x"}

    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": writer},
                        agents_module="/proj/agents.py")
    waiting = await first.start(gate_first, {})
    assert waiting.status == "await_gate"
    # the drive has returned and released its claim: the module is kept with the released record
    assert first.engine.driver_of(waiting.run_id) is None
    assert first.engine.last_agents(waiting.run_id) == 'python:{"names":["writer"],"module":"/proj/agents.py"}'
    first.engine.resolve_waiting_gate(waiting.run_id, "ok", "approve")
    # a drive given agents in Python, with no module, records their names: a resume given none
    # for them would quietly take other adapters (lockgate.engine.agentorigin refuses it)
    second = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": writer})
    done = await second.resume(waiting.run_id)
    assert done.ok
    assert second.engine.last_agents(waiting.run_id) == 'python:{"names":["writer"]}'
    for runner in (first, second):
        runner.engine.close()


async def test_a_displaced_drive_stops_even_when_the_process_that_took_over_has_died(tmp_path: Path) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    calls: list[str] = []

    async def stuck(task: Task) -> dict[str, Any]:
        calls.append(task.step_id)
        started.set()
        await release.wait()
        return {"text": "first"}

    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": stuck})
    driving = asyncio.ensure_future(first.start(SPEC, {}))
    async with asyncio.timeout(GUARD_S):
        await started.wait()
        (run_id,) = first.run_ids
        other = Engine(store=open_store(tmp_path / "runs.db"))
        dead = replace(Driver.here(), pid=exited_pid(), started=None)
        other.claim(run_id, dead, take_over=True)  # taken over by a process that has died since
        release.set()
        with pytest.raises(TakenOver, match=rf"process {dead.pid} on this host took over run {run_id}"):
            await driving
    assert calls == ["write"]  # its stale answer did not make it call the agent again
    assert other.driver_of(run_id) is None  # free: a resume goes on with the run
    first.engine.close()
    other.close()
