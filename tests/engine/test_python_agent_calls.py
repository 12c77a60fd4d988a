"""The Python adapter's bookkeeping of its calls in flight: ``cancel()`` reaches each call once,
what it did to the calling task is taken back however the call ends, and nothing of a call
outlives it (a later call in the same task is not cancelled by an earlier cancel)."""

from __future__ import annotations

import asyncio

from lockgate.engine.agents import PythonAgent, Task

GUARD = 30  # seconds: a hung call fails the test instead of hanging it


def task(run_id: str = "r", step_id: str = "s") -> Task:
    return Task(run_id=run_id, step_id=step_id, prompt="p")


async def in_a_task(agent: PythonAgent, *tasks: Task):
    """An asyncio task calling ``agent`` with each of ``tasks`` in turn; it ends with their
    results and how many cancellations it still has pending."""
    async def calls():
        results = [await agent.execute(one) for one in tasks]
        return results, asyncio.current_task().cancelling()
    return asyncio.ensure_future(calls())


async def test_a_call_that_swallows_its_cancellation_succeeds_and_leaves_its_caller_uncancelled():
    started, swallowed = asyncio.Event(), asyncio.Event()

    async def stubborn(task):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.set()
        return {"late": True}

    agent = PythonAgent("stubborn", stubborn)
    caller = await in_a_task(agent, task())
    await asyncio.wait_for(started.wait(), GUARD)
    await agent.cancel()
    (result,), pending = await asyncio.wait_for(caller, GUARD)
    assert swallowed.is_set() and result.output == {"late": True} and pending == 0


async def test_cancelling_twice_cancels_the_call_once():
    started = asyncio.Event()

    async def slow(task):
        started.set()
        await asyncio.Event().wait()

    agent = PythonAgent("slow", slow)
    caller = await in_a_task(agent, task())
    await asyncio.wait_for(started.wait(), GUARD)
    await agent.cancel()
    await agent.cancel(run_id="r")
    (result,), pending = await asyncio.wait_for(caller, GUARD)
    assert result.failure == "agent 'slow' was cancelled" and pending == 0


async def test_a_cancelled_call_leaves_nothing_behind_for_the_next_call_in_the_same_task():
    started = asyncio.Event()

    async def first_waits(task):
        if task.step_id == "first":
            started.set()
            await asyncio.Event().wait()
        return {"step": task.step_id}

    agent = PythonAgent("a", first_waits)
    caller = await in_a_task(agent, task(step_id="first"), task(step_id="second"))
    await asyncio.wait_for(started.wait(), GUARD)
    await agent.cancel()
    (first, second), pending = await asyncio.wait_for(caller, GUARD)
    assert first.failure == "agent 'a' was cancelled"
    assert second.output == {"step": "second"} and pending == 0
    await agent.cancel()  # no call in flight: nothing to do
