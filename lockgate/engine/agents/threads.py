"""Daemon worker threads for plain (non-async) agent functions.

Why not ``asyncio.to_thread``: the default executor's threads are joined, by ``asyncio.run`` as it
ends (``loop.shutdown_default_executor``) and by ``concurrent.futures`` at interpreter exit. A
function still running when its run ended (cancelled from another process, a gate rejected
elsewhere, the caller's task cancelled) would keep ``lockgate.run_sync``, and then the script,
waiting until it returns: forever for a hung one. Here each function runs in a daemon thread that
nothing joins: an abandoned call goes on in the background until it returns or the process exits,
and its late answer is dropped.

Threads are reused (a small pool of idle daemon workers, each retiring after :data:`IDLE_S`
seconds without work): starting a thread per call costs more than an instant agent's whole call.
There is no limit on workers: the runner's ``max_running`` bounds the calls in flight, and an
abandoned call must not hold a slot that later calls wait for.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

#: Seconds an idle worker waits for another call before its thread ends.
IDLE_S = 30.0

Job = Callable[[], None]


class ExitCalled(Exception):
    """The function called ``sys.exit()``: in a thread that ends the thread, never the process,
    so it is the call's failure like any other exception (``code`` is the exit's argument)."""

    def __init__(self, code: Any) -> None:
        self.code = code
        super().__init__(f"called sys.exit({'' if code is None else repr(code)})")


async def run_in_thread(fn: Callable[..., Any], /, *args: Any) -> Any:
    """``fn(*args)`` in a daemon worker thread, in a copy of the caller's context; its result or
    exception is this coroutine's (a ``SystemExit`` as :class:`ExitCalled`). Cancelling the
    coroutine abandons the call (see the module)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    call = partial(contextvars.copy_context().run, fn, *args)
    _POOL.submit(partial(_call_and_settle, call, loop, future))
    return await future


def _call_and_settle(call: Callable[[], Any], loop: asyncio.AbstractEventLoop,
                     future: asyncio.Future[Any]) -> None:
    """In the worker: make the call and hand its outcome to the loop (gone if it has closed)."""
    try:
        outcome, failed = call(), False
    except BaseException as exc:  # noqa: BLE001 - whatever it raised is the awaiting caller's
        outcome, failed = exc, True
    try:
        loop.call_soon_threadsafe(_settle, future, outcome, failed)
    except RuntimeError:  # the loop is closed: the call was abandoned, its answer is dropped
        pass


def _settle(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
    """On the loop: the call's outcome becomes the future's, unless it was abandoned."""
    if future.done():  # cancelled meanwhile
        return
    if not failed:
        future.set_result(outcome)
    elif isinstance(outcome, StopIteration):  # a future refuses it (as a coroutine does, PEP 479)
        error = RuntimeError(f"agent function raised StopIteration: {outcome}")
        error.__cause__ = outcome
        future.set_exception(error)
    elif isinstance(outcome, SystemExit):  # raised on the loop it would end the process
        exited = ExitCalled(outcome.code)
        exited.__cause__ = outcome
        future.set_exception(exited)
    else:
        future.set_exception(outcome)


class _Pool:
    """Idle daemon workers waiting for a job; a job finding none starts a new worker."""

    def __init__(self) -> None:
        self._reset()
        if hasattr(os, "register_at_fork"):  # POSIX: Windows does not fork
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        # A forked child has none of the parent's threads: forget them (and a lock held by one).
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Job]] = []

    def submit(self, job: Job) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            # the job goes through the inbox, not the thread's arguments, which the thread
            # would keep (and with them the call's answer) for as long as it lives
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._work, args=(inbox,), name="lockgate-agent", daemon=True).start()
        inbox.put(job)

    def _work(self, inbox: queue.SimpleQueue[Job]) -> None:
        job = inbox.get()
        while True:
            job()
            del job  # nothing of a finished call stays alive while the worker idles
            with self._lock:
                self._idle.append(inbox)
            try:
                job = inbox.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                job = inbox.get()  # a submitter took this worker just as it timed out


_POOL = _Pool()
