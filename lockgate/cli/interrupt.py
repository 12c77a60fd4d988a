"""Running the CLI's event loop so that Ctrl-C ends the command promptly.

``asyncio.run`` waits, on the way out, for every worker thread of the loop's default executor:
a synchronous Python agent in the middle of a slow call, or a gate prompt blocked reading the
terminal, would keep the command hanging after Ctrl-C (the run itself is already recorded as
cancelled). Here an interrupt abandons those threads instead; :func:`exit_now` then ends the
process without joining them.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn


class _AbandonableExecutor(ThreadPoolExecutor):
    """A thread pool whose shutdown does not wait once :attr:`abandoned` is set."""

    abandoned = False

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self.abandoned:
            super().shutdown(wait=False, cancel_futures=True)
        else:
            super().shutdown(wait=wait, cancel_futures=cancel_futures)


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run(coro)``, except that a KeyboardInterrupt does not wait for worker threads."""
    executor = _AbandonableExecutor(thread_name_prefix="lockgate-worker")
    with asyncio.Runner() as runner:
        runner.get_loop().set_default_executor(executor)
        try:
            return runner.run(coro)
        except KeyboardInterrupt:
            executor.abandoned = True
            raise


def exit_now(code: int) -> NoReturn:
    """Exit with ``code``; when worker threads are still busy, without waiting for them."""
    busy = [t for t in threading.enumerate() if t.name.startswith("lockgate-worker") and t.is_alive()]
    if not busy:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)
