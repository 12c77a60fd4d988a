"""A plain (non-async) agent function still running when its run ended is abandoned: it runs on
in a daemon thread nothing joins, so neither ``lockgate.run_sync`` (``asyncio.run`` joins the
default executor's threads as it ends) nor the process (``concurrent.futures`` joins its threads
at exit) waits for it, and its late answer is dropped."""

from __future__ import annotations

import asyncio
import select
import subprocess
import sys
import threading
from pathlib import Path

from lockgate.engine import Engine
from lockgate.engine.agents import PythonAgent, Task, threads
from lockgate.engine.store import open_store

HERE = Path(__file__).parent
GUARD_S = 30  # a failure timeout: nothing waits for it to pass


def test_run_sync_returns_cancelled_and_the_script_exits_while_its_agent_function_hangs(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = subprocess.Popen([sys.executable, str(HERE / "python_agent_abandon_driver.py"), str(db)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path)
    try:
        ready, _, _ = select.select([script.stdout], [], [], GUARD_S)
        assert ready, "the agent function never started"
        inside, run_id = script.stdout.readline().split()
        assert inside == "inside"
        elsewhere = Engine(store=open_store(db))
        assert elsewhere.cancel(run_id)["status"] == "cancelled"
        elsewhere.close()
        out, err = script.communicate(timeout=GUARD_S)
    finally:
        if script.poll() is None:
            script.kill()
            script.communicate()
    assert (script.returncode, out, err) == (0, "ended cancelled\n", "")


def test_asyncio_run_returns_when_the_caller_is_cancelled_and_the_late_answer_is_dropped(
        monkeypatch) -> None:
    inside, release, returned = threading.Event(), threading.Event(), threading.Event()
    workers: list[threading.Thread] = []
    thread_errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: thread_errors.append(args.exc_value))
    monkeypatch.setattr(threads, "IDLE_S", 0)  # the worker ends once its call is done

    def blocked(task: Task) -> dict:
        workers.append(threading.current_thread())
        inside.set()
        release.wait(GUARD_S)
        returned.set()
        return {"late": True}

    async def cancel_the_call() -> bool:
        agent = PythonAgent("blocked", blocked)
        call = asyncio.ensure_future(agent.execute(Task(run_id="r", step_id="s", prompt="p")))
        assert await asyncio.to_thread(inside.wait, GUARD_S)
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
        return call.cancelled()

    assert asyncio.run(cancel_the_call())  # returns with the function still inside
    assert not returned.is_set()
    release.set()
    (worker,) = workers
    worker.join(GUARD_S)  # it handed its answer to a closed loop, which dropped it quietly
    assert returned.is_set() and not worker.is_alive() and worker.daemon
    assert thread_errors == []
