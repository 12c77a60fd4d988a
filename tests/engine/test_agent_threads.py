"""The daemon worker threads of plain agent functions (lockgate/engine/agents/threads.py) keep
nothing of a finished call alive, and the engine's import does not pull the agents package in."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import weakref

from lockgate.engine.agents.threads import run_in_thread


class Answer:
    """A call's answer that a weak reference can watch."""


async def test_an_idle_worker_holds_nothing_of_the_calls_it_made() -> None:
    made: list[weakref.ref[Answer]] = []

    def call() -> Answer:
        answer = Answer()
        made.append(weakref.ref(answer))
        return answer

    for _ in range(2):  # the first call starts the worker; the second reuses it
        assert isinstance(await run_in_thread(call), Answer)
    await asyncio.sleep(0)
    gc.collect()
    assert [ref() for ref in made] == [None, None]


def test_the_engine_and_the_judge_import_without_the_agents_package() -> None:
    code = ("import sys, lockgate.engine.engine, lockgate.engine.judge; "
            "print(sorted(m for m in ('httpx', 'lockgate.engine.agents') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
