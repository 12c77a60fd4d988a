"""Running the CLI's event loop so that Ctrl-C ends the command promptly.

The first Ctrl-C calls the command's ``on_interrupt`` (``lockgate run`` detaches its runner, so
the run is left resumable rather than cancelled), then cancels the main task: the runner stops
the agent calls in flight, and :func:`run` raises KeyboardInterrupt. A second Ctrl-C raises
KeyboardInterrupt at once.

``asyncio.run`` waits, on the way out, for every worker thread of the loop's default executor:
a synchronous Python agent in the middle of a slow call, or a gate prompt blocked reading the
terminal, would keep the command hanging after Ctrl-C, or after the run was cancelled from
another terminal. Here an interrupt, or a run that ends while such calls still run, abandons
those threads instead; :func:`exit_now` then ends the process without joining them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NoReturn


class _AbandonableExecutor(ThreadPoolExecutor):
    """A thread pool whose shutdown does not wait once :attr:`abandoned` is set, and which
    knows how many of its calls are still running (:attr:`busy`)."""

    abandoned = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lock = threading.Lock()
        self.busy = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        with self._lock:
            self.busy += 1
        future.add_done_callback(self._finished)
        return future

    def _finished(self, future: Future[Any]) -> None:
        with self._lock:
            self.busy -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self.abandoned:
            super().shutdown(wait=False, cancel_futures=True)
        else:
            super().shutdown(wait=wait, cancel_futures=cancel_futures)


class _Interrupts:
    """SIGINT while the main task runs: ``on_interrupt()`` and the task's cancellation first,
    KeyboardInterrupt the second time (or when there is no task to cancel)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_interrupt: Callable[[], None]) -> None:
        self.loop = loop
        self.on_interrupt = on_interrupt
        self.task: asyncio.Task[Any] | None = None
        self.count = 0

    async def main(self, coro: Coroutine[Any, Any, Any]) -> Any:
        self.task = asyncio.current_task()
        return await coro

    def handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        task = self.task
        if self.count > 1 or task is None or task.done():
            raise KeyboardInterrupt
        self.on_interrupt()
        task.cancel()
        self.loop.call_soon_threadsafe(lambda: None)  # wake the loop if it is waiting


def run(coro: Coroutine[Any, Any, Any], on_interrupt: Callable[[], None] = lambda: None) -> Any:
    """``asyncio.run(coro)``, except that Ctrl-C calls ``on_interrupt`` before the main task is
    cancelled, then raises KeyboardInterrupt without waiting for worker threads; and that
    worker threads still busy when ``coro`` returns (a synchronous agent in its call when the
    run was cancelled or killed from another terminal: its answer is not wanted) are not
    waited for either."""
    executor = _AbandonableExecutor(thread_name_prefix="lockgate-worker")
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        loop.set_default_executor(executor)
        interrupts = _Interrupts(loop, on_interrupt)
        installed = _take_sigint(interrupts.handle)
        try:
            result = runner.run(interrupts.main(coro))
            executor.abandoned = executor.busy > 0
            return result
        except asyncio.CancelledError:
            if not interrupts.count:
                raise
            executor.abandoned = True
            raise KeyboardInterrupt from None
        except KeyboardInterrupt:
            executor.abandoned = True
            raise
        finally:
            if installed:
                signal.signal(signal.SIGINT, signal.default_int_handler)


def _take_sigint(handler: Callable[[int, Any], None]) -> bool:
    """Make ``handler`` the SIGINT handler when Python's default one is in place (as
    ``asyncio.Runner`` does: an ignored SIGINT, as in a shell's background job, stays ignored;
    only the main thread may set one). Whether it was installed."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        return False
    signal.signal(signal.SIGINT, handler)
    return True


def exit_now(code: int) -> NoReturn:
    """Exit with ``code``; when worker threads are still busy and this process is the
    ``lockgate`` command itself, without waiting for them. A program calling the CLI in-process
    (click's test runner, ``main(standalone_mode=False)``) gets SystemExit as always: ending its
    whole process is not the CLI's to do."""
    busy = [t for t in threading.enumerate() if t.name.startswith("lockgate-worker") and t.is_alive()]
    if not busy or not _is_the_program():
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def _is_the_program() -> bool:
    """Whether this process is the ``lockgate`` command (its console script, or ``python -m
    lockgate``), not a program that calls the CLI in-process."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name in ("lockgate", "lockgate.__main__"):
        return True
    return os.path.basename(sys.argv[0] or "") == "lockgate"
