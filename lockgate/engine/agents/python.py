"""Python callables as agents: the natural agent of notebooks and tests.

The callable receives the :class:`~lockgate.engine.agents.base.Task` and returns the step's output
(a JSON value) or an :class:`~lockgate.engine.agents.base.AgentResult`. Coroutine functions are
awaited on the loop; plain functions run in a worker thread so a slow one never blocks the loop
(and other steps keep running). An exception raised by the callable is the task's failure.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable
from typing import Any

from .base import AgentResult, Task, Telemetry

AgentFunction = Callable[[Task], Any]


class PythonAgent:
    """Wraps ``fn(task)``; sync functions run via ``asyncio.to_thread``."""

    def __init__(self, name: str, fn: AgentFunction) -> None:
        if not callable(fn):
            raise TypeError(f"agent {name!r}: expected a callable, got {type(fn).__name__}")
        self.name = name
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None))
        self._tasks: set[asyncio.Task[Any]] = set()

    async def execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        call = asyncio.ensure_future(self._call(task))
        self._tasks.add(call)
        try:
            value = await call
        except asyncio.CancelledError:
            if call.cancelled() and not _current_task_cancelling():
                return AgentResult.failed(f"agent {self.name!r} was cancelled")
            raise
        except Exception as exc:  # the callable's own failure is the task's failure
            return AgentResult.failed(f"{type(exc).__name__}: {exc}")
        finally:
            self._tasks.discard(call)
        elapsed = (time.perf_counter() - started) * 1000
        if isinstance(value, AgentResult):
            return value.with_duration(elapsed)
        problem = _json_problem(value)
        if problem:
            return AgentResult.failed(f"agent {self.name!r} returned {problem}")
        return AgentResult.success(value, telemetry=Telemetry(duration_ms=elapsed))

    async def _call(self, task: Task) -> Any:
        if self._is_async:
            return await self.fn(task)
        result = await asyncio.to_thread(self.fn, task)
        if inspect.isawaitable(result):
            return await result
        return result

    async def cancel(self) -> None:
        """Cancel every call in flight (a sync function's thread finishes on its own)."""
        for call in list(self._tasks):
            call.cancel()

    def __repr__(self) -> str:
        return f"PythonAgent({self.name!r}, {getattr(self.fn, '__qualname__', self.fn)!r})"


def _current_task_cancelling() -> bool:
    current = asyncio.current_task()
    return bool(current and current.cancelling())


def _json_problem(value: Any) -> str | None:
    """Why ``value`` is not a JSON value, or None."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"a value that is not JSON ({exc})"
    return None
