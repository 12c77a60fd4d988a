"""What a plain agent function keeps now that it runs in the adapter's own daemon threads rather
than through ``asyncio.to_thread``: it sees the caller's context variables (a copy: what it sets
stays its own), what it raises is the step's failure, an awaitable it returns is awaited, and
calls in flight at once each get a thread of their own."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from lockgate import run_sync
from lockgate.engine.agents import PythonAgent, Task
from lockgate.engine.agents.python import split_traceback
from lockgate.engine.store import open_store

GUARD_S = 30  # a failure timeout: nothing waits for it to pass
REQUEST = contextvars.ContextVar("request", default="none")
SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s.output}", contract: Note}
    steps:
      - {id: s, agent: a, do: "x", out: Note}
"""


def task(step_id: str = "s") -> Task:
    return Task(run_id="r", step_id=step_id, prompt="p")


async def test_a_sync_function_sees_the_callers_context_variables_in_a_copy():
    def reads_and_sets(task: Task) -> dict:
        seen = REQUEST.get()
        REQUEST.set("set by the function")
        return {"text": seen}

    REQUEST.set("from the caller")
    result = await PythonAgent("a", reads_and_sets).execute(task())
    assert result.output == {"text": "from the caller"}
    assert REQUEST.get() == "from the caller"


def test_an_exception_in_a_sync_function_is_the_steps_failure():
    def broken(task: Task) -> dict:
        raise ValueError("bad input")

    result = run_sync(SPEC, {}, agents={"a": broken}, store=open_store("memory"))
    assert result.status == "error"
    message, frames = split_traceback(result.response["message"])
    assert message == "agent reported failure: ValueError: bad input"
    assert frames.splitlines()[-1] == '    raise ValueError("bad input")'  # where it raised


async def test_a_sync_function_raising_stop_iteration_fails_its_call_as_a_coroutine_would():
    def stops(task: Task) -> dict:
        raise StopIteration("early")  # a future refuses it: to_thread's call never ended

    result = await asyncio.wait_for(PythonAgent("a", stops).execute(task()), GUARD_S)
    assert result.failure == "RuntimeError: agent function raised StopIteration: early"


async def test_an_awaitable_returned_by_a_sync_function_is_awaited_on_the_loop():
    async def later() -> dict:
        return {"text": "awaited"}

    result = await PythonAgent("a", lambda task: later()).execute(task())
    assert result.output == {"text": "awaited"}


async def test_sync_calls_in_flight_at_once_run_in_threads_of_their_own():
    both = threading.Barrier(2, timeout=GUARD_S)  # broken (an error) unless both wait at once

    def meets(task: Task) -> dict:
        both.wait()
        return {"text": threading.current_thread().name}

    agent = PythonAgent("a", meets)
    first, second = await asyncio.gather(agent.execute(task("one")), agent.execute(task("two")))
    assert first.output == second.output == {"text": "lockgate-agent"}
