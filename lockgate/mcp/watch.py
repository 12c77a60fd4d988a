"""Waiting for a run to change: one store wait per watched run, however many tool calls wait.

A ``lockgate_status`` call that waits (``wait_seconds``) must give its thread and its wait slot
(``server.MAX_WAITING_CALLS``) back soon after the client cancels it, but a store's
``wait_for_change`` cannot be interrupted. Waiting in the store in slices of
:data:`CANCEL_CHECK_S` seconds made every waiting call a store wait five times a second: on
PostgreSQL two queries each, on SQLite a dozen version reads each (its polling starts again at
0.5 ms with every wait).

So tool calls wait here, on a condition in this process, and a *watcher* makes the store waits:
one per watched run, each up to :data:`WATCH_SLICE_S` seconds, for as long as calls wait on
the run. A change wakes the calls at once (the memory and PostgreSQL stores end their wait on
it); a waiting call looks at its cancel flag every CANCEL_CHECK_S seconds without touching the
store. A watcher whose calls all gave up stops after its current store wait. At most
:data:`MAX_WATCHERS` runs are watched at once; a call beyond them, or whose watcher failed,
waits in slices itself (and meets the store's failure in its own thread).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Seconds a waiting call goes without looking whether the client cancelled it.
CANCEL_CHECK_S = 0.2
#: The longest store wait a watcher makes: how long it outlives the calls that all gave up.
WATCH_SLICE_S = 5.0
#: Runs watched at once (twice ``server.MAX_WAITING_CALLS``: room for watchers outliving
#: cancelled calls); also the most watcher threads, each keeping one PostgreSQL LISTEN session.
MAX_WATCHERS = 16


@dataclass
class _Watch:
    """One watched run: its version as the watcher last saw it, and who waits how long."""

    version: int
    until: float  # the latest deadline of the calls that joined
    waiters: int = 0
    failed: bool = False


class RunWatches:
    """The runs of ``store`` that tool calls wait on, each watched by one thread."""

    def __init__(self, store: Any, *, slice_s: float = WATCH_SLICE_S, max_watchers: int = MAX_WATCHERS) -> None:
        self._store = store
        self._slice = slice_s
        self._max = max_watchers
        self._changed = threading.Condition()
        self._watches: dict[str, _Watch] = {}
        self._jobs: queue.SimpleQueue[tuple[str, _Watch]] = queue.SimpleQueue()
        self._threads = self._idle = 0

    def wait(self, run_id: str, version: int, timeout: float, cancelled: Callable[[], bool]) -> None:
        """Return once run ``run_id`` is past ``version``, ``timeout`` seconds have passed or
        ``cancelled()`` is true (looked at every :data:`CANCEL_CHECK_S` seconds)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            watch = self._join(run_id, version, deadline)
            if watch is not None:
                try:
                    while watch.version <= version and not watch.failed and not cancelled():
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return
                        self._changed.wait(min(remaining, CANCEL_CHECK_S))
                finally:
                    watch.waiters -= 1
                if not watch.failed:
                    return
        self._sliced(run_id, version, deadline, cancelled)

    def _sliced(self, run_id: str, version: int, deadline: float, cancelled: Callable[[], bool]) -> None:
        """The wait made in this thread, one store wait per :data:`CANCEL_CHECK_S` seconds."""
        while not cancelled():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._store.wait_for_change(run_id, version, min(remaining, CANCEL_CHECK_S)) != version:
                return

    def _join(self, run_id: str, version: int, deadline: float) -> _Watch | None:
        """The watch of ``run_id`` with one more waiter (started if need be), or None when
        :data:`MAX_WATCHERS` other runs are watched. Called holding the condition."""
        watch = self._watches.get(run_id)
        if watch is None:
            if len(self._watches) >= self._max:
                return None
            watch = self._watches[run_id] = _Watch(version, deadline)
            self._hand_over(run_id, watch)
        watch.waiters += 1
        watch.until = max(watch.until, deadline)
        return watch

    def _hand_over(self, run_id: str, watch: _Watch) -> None:
        """Give the watch to an idle watcher thread, or to a new one. Threads are kept rather
        than ended: a PostgreSQL store keeps a LISTEN session per thread that waits."""
        if self._idle:
            self._idle -= 1  # taken now, so the next watch does not count on the same thread
        else:
            self._threads += 1
            threading.Thread(target=self._serve, name=f"lockgate-watch-{self._threads}", daemon=True).start()
        self._jobs.put((run_id, watch))

    def _serve(self) -> None:
        while True:
            self._watch(*self._jobs.get())
            with self._changed:
                self._idle += 1

    def _watch(self, run_id: str, watch: _Watch) -> None:
        """Store waits on ``run_id`` while calls wait on it, telling them each change."""
        while True:
            with self._changed:
                look = min(self._slice, watch.until - time.monotonic())
                if watch.waiters == 0 or look <= 0:
                    del self._watches[run_id]
                    return
                known = watch.version
            try:
                seen = self._store.wait_for_change(run_id, known, look)
            except Exception:  # noqa: BLE001 - each waiting call then waits itself, and meets it
                with self._changed:
                    watch.failed = True
                    del self._watches[run_id]
                    self._changed.notify_all()
                return
            if seen != known:
                with self._changed:
                    watch.version = seen
                    self._changed.notify_all()
