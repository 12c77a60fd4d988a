"""A Python agent that calls ``sys.exit()`` fails its task like any other exception (it does not
end the caller's process, nor leave its run ``running``), sync or async; a KeyboardInterrupt it
raises still interrupts the caller. A huge integer it returns is a failure naming the number."""

from __future__ import annotations

import asyncio
import sys

import pytest

import lockgate
from lockgate.engine.agents import PythonAgent, Task
from lockgate.engine.agents.threads import ExitCalled, run_in_thread


def task() -> Task:
    return Task(run_id="r", step_id="s", prompt="p")


def quits(code):
    def fn(task):
        sys.exit(code) if code != "none" else sys.exit()
    return fn


def quits_async(code):
    async def fn(task):
        await asyncio.sleep(0)
        sys.exit(code)
    return fn


@pytest.mark.parametrize(("code", "called"), [(3, "sys.exit(3)"), ("bye", "sys.exit('bye')"), ("none", "sys.exit()")])
async def test_a_sync_agent_calling_sys_exit_fails_its_task(code, called):
    result = await PythonAgent("w", quits(code)).execute(task())
    assert result.failure == f"agent 'w' called {called}"


async def test_an_async_agent_calling_sys_exit_fails_its_task():
    result = await PythonAgent("w", quits_async(3)).execute(task())
    assert result.failure == "agent 'w' called sys.exit(3)"


async def test_a_sys_exit_in_a_worker_thread_reaches_the_caller_as_an_exception():
    with pytest.raises(ExitCalled) as caught:
        await run_in_thread(sys.exit, 4)
    assert caught.value.code == 4 and str(caught.value) == "called sys.exit(4)"
    assert isinstance(caught.value.__cause__, SystemExit)


async def test_a_keyboard_interrupt_still_interrupts_the_caller():
    def interrupted(task):
        raise KeyboardInterrupt

    async def interrupted_async(task):
        raise KeyboardInterrupt

    for fn in (interrupted, interrupted_async):
        with pytest.raises(KeyboardInterrupt):
            await PythonAgent("w", fn).execute(task())


SPEC = """version: 1
contracts:
  Note: {text: string, n: number}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${work.output}", contract: Note}
    steps:
      - {id: work, agent: writer, do: "write", out: Note, attempts: 2}
"""


def test_a_run_whose_agent_calls_sys_exit_ends_in_error_naming_it():
    result = lockgate.run_sync(SPEC, {}, agents={"writer": quits(3)})
    assert result.status == "error"
    assert result.response["message"] == "agent reported failure: agent 'writer' called sys.exit(3)"


async def test_a_huge_integer_is_a_failure_naming_where_it_is_not_pythons_digit_limit():
    result = await PythonAgent("w", lambda t: {"text": "a", "n": 10**5000}).execute(task())
    assert result.failure == ("agent 'w' returned a value that is not JSON (result.n: expected a number, "
                              "found integer of about 5001 digits, beyond the largest number (about 1.8e308))")
