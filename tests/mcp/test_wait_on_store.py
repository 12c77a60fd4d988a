"""A ``lockgate_status`` wait costs (almost) nothing while nothing changes (session 12).

It used to wait in the store in slices of 0.2 s so that a cancelled call gave its wait slot back
at once: five store waits a second per waiting call (on PostgreSQL two queries each, on SQLite a
dozen version reads each). Now one watcher thread per run makes long store waits shared by every
call waiting on the run, and a call looks at its cancel flag in this process. The upper bounds
below count store calls through a counting wrapper (deterministic), and statements a real
PostgreSQL server receives from a real ``lockgate mcp`` process.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from mcp_support import REVIEWED, connect

from lockgate.engine.engine import Engine
from lockgate.engine.store import MemoryStore
from lockgate.engine.store.sqlite import SQLiteStore
from lockgate.errors import StoreError
from lockgate.mcp import handlers
from lockgate.mcp.handlers import ToolContext
from lockgate.mcp.watch import CANCEL_CHECK_S, RunWatches

IDLE_S = 2.0  # the idle wait measured (the old slices made ten store waits of it per call)


class CountingStore:
    """A store passing every call on, counting them by method; ``waiting`` is set by the first
    ``wait_for_change``."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.waiting = threading.Event()
        self._waits = 0
        self._waited = threading.Condition()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
            if name == "wait_for_change":
                self.waiting.set()
                with self._waited:
                    self._waits += 1
                    self._waited.notify_all()
            return attr(*args, **kwargs)

        return counted

    def waited(self, count: int, timeout: float) -> bool:
        """Whether ``count`` store waits have started within ``timeout`` seconds."""
        with self._waited:
            return self._waited.wait_for(lambda: self._waits >= count, timeout)

    def taken(self) -> Counter[str]:
        """The calls counted so far, and the count started again."""
        with self._lock:
            calls, self.calls = self.calls, Counter()
        return calls


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ToolContext]:
    store = CountingStore(SQLiteStore(tmp_path / "runs.db"))
    context = ToolContext(Engine(store=store, workspace=tmp_path), tmp_path)
    yield context
    context.engine.close()


def _at_gate(ctx: ToolContext) -> tuple[str, str]:
    """A run of the reviewed example waiting for its gate: (run id, the gate's token)."""
    plan = handlers.plan(ctx, {"spec": REVIEWED, "inputs": {"text": "t"}})
    done = handlers.step_done(ctx, {"run_id": plan["run_id"], "step_id": "work", "token": plan["token"],
                                    "result": {"result": "r", "quality_score": 0.9}})
    assert done["status"] == "await_gate"
    return plan["run_id"], done["token"]


def test_an_idle_wait_makes_one_store_wait_not_five_a_second(ctx: ToolContext) -> None:
    run, _ = _at_gate(ctx)
    store = ctx.engine.store
    store.taken()
    started = time.monotonic()
    out = handlers.status(ctx, {"run_id": run, "wait_seconds": IDLE_S})
    assert out["status"] == "await_gate" and time.monotonic() - started >= IDLE_S
    calls = store.taken()
    assert calls["wait_for_change"] <= 1, calls
    assert sum(calls.values()) <= 6, calls  # the status read before the wait, and the one wait


def test_calls_waiting_on_one_run_share_its_store_wait(ctx: ToolContext) -> None:
    run, _ = _at_gate(ctx)
    store = ctx.engine.store
    store.taken()
    answers: list[str] = []
    waiting = [threading.Thread(target=lambda: answers.append(
        handlers.status(ctx, {"run_id": run, "wait_seconds": IDLE_S})["status"])) for _ in range(4)]
    for thread in waiting:
        thread.start()
    for thread in waiting:
        thread.join(IDLE_S + 30)
    assert answers == ["await_gate"] * 4
    calls = store.taken()
    assert calls["wait_for_change"] <= 2, calls  # four calls, ten slices each, made forty


def test_every_waiting_call_wakes_when_the_gate_is_decided(ctx: ToolContext) -> None:
    run, token = _at_gate(ctx)
    answers: list[str] = []
    waiting = [threading.Thread(target=lambda: answers.append(
        handlers.status(ctx, {"run_id": run, "wait_seconds": 60})["status"])) for _ in range(3)]
    for thread in waiting:
        thread.start()
    assert ctx.engine.store.waiting.wait(30)
    started = time.monotonic()
    handlers.gate_resolve(ctx, {"run_id": run, "step_id": "review", "outcome": "approve", "rationale": "fine",
                                "resolved_by": "human", "token": token})
    for thread in waiting:
        thread.join(30)
    assert len(answers) == 3 and "await_gate" not in answers
    assert time.monotonic() - started < 10  # SQLite polls every 50 ms at most; not the 60 s deadline


def test_a_cancelled_wait_ends_within_a_cancel_check_having_cost_one_store_wait(ctx: ToolContext) -> None:
    run, _ = _at_gate(ctx)
    store = ctx.engine.store
    cancelled, answers = threading.Event(), []

    def wait() -> None:
        with ctx.cancelling(cancelled):
            answers.append(handlers.status(ctx, {"run_id": run, "wait_seconds": 60})["status"])

    thread = threading.Thread(target=wait)
    thread.start()
    assert store.waiting.wait(30)
    store.taken()
    time.sleep(1.0)  # the window measured: the call waits, nothing changes
    cancelled.set()
    started = time.monotonic()
    thread.join(30)
    assert answers == ["await_gate"] and time.monotonic() - started < 1.0 + CANCEL_CHECK_S
    calls = store.taken()
    assert calls["wait_for_change"] <= 1, calls  # the 0.2 s slices made five


# -- the watches themselves ---------------------------------------------------------------------


def test_a_run_beyond_the_watched_ones_is_waited_on_by_its_call(tmp_path: Path) -> None:
    store = CountingStore(MemoryStore())
    ctx = ToolContext(Engine(store=store, workspace=tmp_path), tmp_path)
    first, _ = _at_gate(ctx)
    second, token = _at_gate(ctx)
    ctx.watches = RunWatches(store, max_watchers=1)
    cancelled, answers = threading.Event(), []

    def wait(run: str, event: threading.Event | None) -> None:
        with ctx.cancelling(event):
            answers.append(handlers.status(ctx, {"run_id": run, "wait_seconds": 60})["status"])

    watched = threading.Thread(target=wait, args=(first, cancelled))
    watched.start()
    assert store.waited(1, 30)  # the watcher of the first run
    unwatched = threading.Thread(target=wait, args=(second, None))
    unwatched.start()
    assert store.waited(2, 30)  # the second call's own store wait
    handlers.gate_resolve(ctx, {"run_id": second, "step_id": "review", "outcome": "approve", "rationale": "fine",
                                "resolved_by": "human", "token": token})
    unwatched.join(30)
    cancelled.set()
    watched.join(30)
    assert sorted(answers) == ["await_gate", "complete"]


class _FailingWait:
    """A store whose waits fail (a PostgreSQL session lost for good)."""

    def __init__(self) -> None:
        self.waits = 0

    def wait_for_change(self, run_id: str, version: int, timeout: float) -> int:
        self.waits += 1
        raise StoreError("lost the PostgreSQL notification connection")


def test_a_store_failure_in_the_watcher_reaches_the_waiting_call() -> None:
    store = _FailingWait()
    with pytest.raises(StoreError, match="notification connection"):
        RunWatches(store).wait("r", 1, 30, lambda: False)
    assert store.waits == 2  # the watcher's, then the call's own


# -- a real server on a real PostgreSQL -------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> Iterator[Any]:
    from lockgate.engine.store.pgserver import TempPostgres

    server = TempPostgres()
    try:
        server.start()
    except (StoreError, OSError) as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        yield server
    finally:
        server.stop()


def _statements(log: Path, since: int) -> list[str]:
    """The statements the server logged after byte ``since`` of its log."""
    with log.open("rb") as file:
        file.seek(since)
        lines = file.read().decode(errors="replace").splitlines()
    return [line for line in lines if "statement: " in line or "execute " in line]


async def test_an_idle_mcp_wait_sends_postgresql_almost_nothing(postgres: Any, tmp_path: Path) -> None:
    # every statement of the MCP server's sessions is logged before it runs, so by the time an
    # answer arrives, its statements are in the log
    dsn = f"{postgres.dsn}?options={quote('-c log_statement=all')}"
    log = postgres._log_path()
    async with connect(dsn, tmp_path) as s:  # type: ignore[arg-type]
        plan = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
        run = plan["run_id"]
        done = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": plan["token"],
                                                 "result": {"result": "r", "quality_score": 0.9}})
        await s.ok("lockgate_status", {"run_id": run, "wait_seconds": 0.5})  # its LISTEN session opened
        since = log.stat().st_size
        idle = await s.ok("lockgate_status", {"run_id": run, "wait_seconds": IDLE_S})
        assert idle["status"] == "await_gate"
        sent = _statements(log, since)
        assert len(sent) <= 8, "\n".join(sent)  # slices of 0.2 s sent two queries each: twenty more

        answers: list[dict[str, Any]] = []
        async with anyio.create_task_group() as group:  # and a decision still ends a wait at once

            async def wait() -> None:
                answers.append(await s.ok("lockgate_status", {"run_id": run, "wait_seconds": 120}))

            group.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            started = time.monotonic()
            await s.ok("lockgate_gate_resolve", {"run_id": run, "step_id": "review", "outcome": "approve",
                                                 "rationale": "fine", "resolved_by": "human", "token": done["token"]})
        assert answers[0]["status"] != "await_gate" and time.monotonic() - started < 30
