"""A cancellation that lands while a command's process is being started (a run stopped the
moment it issued the command) kills the whole new process group and returns at once: asyncio's
own start would kill only the leader and wait for the pipes its children hold open."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest

from lockgate.engine.agents.process import ProcessGroup

MARK = "31.4159"  # a sleep no other test starts


def survivors() -> list[str]:
    return subprocess.run(["pgrep", "-f", f"^sleep {MARK}$"], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("turns", [0, 1, 2, 3])
async def test_a_start_cancelled_midway_kills_the_group_and_returns(turns: int) -> None:
    group = ProcessGroup()
    started = time.monotonic()
    task = asyncio.ensure_future(group.run(["/bin/sh", "-c", f"sleep {MARK} & sleep {MARK}; wait"]))
    for _ in range(turns):  # let the start get that far
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 10  # not held until the children's sleep ends
    assert survivors() == []
