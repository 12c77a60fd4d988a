"""Python callables as agents: the natural agent of notebooks and tests.

The callable receives the :class:`~lockgate.engine.agents.base.Task` and returns the step's output
(a JSON value) or an :class:`~lockgate.engine.agents.base.AgentResult`. Coroutine functions are
awaited on the loop; plain functions run in a daemon worker thread (:mod:`.threads`) so a slow one
never blocks the loop (and other steps keep running), and one still running when its run ended
does not keep ``lockgate.run_sync`` or the process waiting. An exception raised by the callable
is the task's failure, ``sys.exit()`` included (an agent does not end its caller's process);
a ``KeyboardInterrupt`` still interrupts the caller. The failure's first line is the exception
(``KeyError: 'score'``); the lines after it are the last frames of the callable's own code
(:data:`MAX_FRAMES`, each line cut; none after a message so long that the engine cuts it), so
that a bug in an agent can be found from the run's failure and its audit record.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...dsl.contractcheck import json_violations
from ..store.codec import is_plain, json_encoder
from ..textargs import MAX_FAILURE_BYTES
from .base import AgentResult, Task, Telemetry, describe_exception
from .threads import ExitCalled, run_in_thread

AgentFunction = Callable[[Task], Any]

_encode = json_encoder(sort_keys=False, ensure_ascii=True)


class _CancelledByAgent(Exception):
    """The call was stopped by :meth:`PythonAgent.cancel`: the task's failure, not the caller's
    cancellation."""


@dataclass(slots=True)
class _Call:
    """A call in flight: the run it serves, and whether :meth:`PythonAgent.cancel` cancelled it
    (and has not had that taken back yet)."""

    run_id: str
    cancelled: bool = False


class PythonAgent:
    """Wraps ``fn(task)``; sync functions run in a daemon worker thread (:func:`run_in_thread`)."""

    def __init__(self, name: str, fn: AgentFunction) -> None:
        if not callable(fn):
            raise TypeError(f"agent {name!r}: expected a callable, got {type(fn).__name__}")
        self.name = name
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None))
        #: the tasks running a call -> that call
        self._calls: dict[asyncio.Task[Any], _Call] = {}

    async def execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        try:
            value = await self._tracked(task)
        except _CancelledByAgent:
            return AgentResult.failed(f"agent {self.name!r} was cancelled")
        except (SystemExit, ExitCalled) as exc:
            return AgentResult.failed(f"agent {self.name!r} {ExitCalled(exc.code)}")
        except Exception as exc:  # the callable's own failure is the task's failure
            message = describe_exception(exc)
            return AgentResult.failed(message + (where_raised(exc) if len(message) < _ROOM else ""))
        elapsed = (time.perf_counter() - started) * 1000
        if isinstance(value, AgentResult):
            return value.with_duration(elapsed)
        if not is_plain(value):
            value = json_types(value)
        problem = _json_problem(value)
        if problem:
            return AgentResult.failed(f"agent {self.name!r} returned {problem}")
        return AgentResult.success(value, telemetry=Telemetry(duration_ms=elapsed))

    async def _tracked(self, task: Task) -> Any:
        """``fn(task)`` in the caller's task, registered so :meth:`cancel` can reach it.

        The call has no task of its own (that costs more than an instant agent's whole call):
        cancel() marks the caller's task and cancels it, and that cancellation is always taken
        back here (``uncancel``), however the call ends; it surfaces as
        :class:`_CancelledByAgent` unless the caller is being cancelled too. A CancelledError
        the callable raises while nobody cancels the caller (an inner task it awaited was
        cancelled) is the call's failure as well. A call of this agent made from within one of
        its calls rides on the outer call's registration: cancelling reaches both, as one call.
        """
        current = asyncio.current_task()
        if current is None or current in self._calls:
            return await self._call(task)
        call = self._calls[current] = _Call(task.run_id)
        try:
            return await self._call(task)
        except asyncio.CancelledError:
            if call.cancelled:
                call.cancelled = False
                if current.uncancel() == 0:
                    raise _CancelledByAgent from None
            elif current.cancelling() == 0:
                raise _CancelledByAgent from None
            raise
        finally:
            del self._calls[current]
            if call.cancelled:  # cancel() reached the call, which ended another way
                current.uncancel()

    async def _call(self, task: Task) -> Any:
        if self._is_async:
            return await self.fn(task)
        result = await run_in_thread(self.fn, task)
        if inspect.isawaitable(result):
            return await result
        return result

    async def cancel(self, run_id: str | None = None) -> None:
        """Cancel every call in flight, or only the calls of run ``run_id`` (a sync function's
        thread finishes on its own)."""
        for running, call in list(self._calls.items()):
            if not call.cancelled and (run_id is None or call.run_id == run_id):
                call.cancelled = True
                running.cancel()

    def __repr__(self) -> str:
        return f"PythonAgent({self.name!r}, {getattr(self.fn, '__qualname__', self.fn)!r})"


#: frames of an agent's traceback kept in its failure (the innermost), and the length of a line
MAX_FRAMES = 6
MAX_LINE = 240
#: causes of an agent's exception shown after it (see :func:`where_raised`)
MAX_CAUSES = 3
#: the longest message a traceback is added to: a longer one is cut by the engine (see
#: :func:`~lockgate.engine.textargs.reported_failure`), the traceback with it
_ROOM = MAX_FAILURE_BYTES // 8
#: the folder of the lockgate package: frames in it are the runner's, not the agent's
_OURS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def where_raised(exc: BaseException) -> str:
    """The last frames of ``exc``'s traceback that are not Lockgate's own, as lines to put
    after its message ("" when there are none): where in the agent's code it was raised. An
    exception raised from another (``raise ... from``) or while handling one is followed by
    that one and its frames, as Python prints them, up to :data:`MAX_CAUSES` deep: an agent
    that wraps a library's error names its own, and the library's is often what to fix."""
    frames = _own_frames(exc)
    if not frames:
        return ""
    more = f", the last {MAX_FRAMES} of {len(frames)}" if len(frames) > MAX_FRAMES else ""
    lines = _frame_lines(frames)
    for words, cause in _causes(exc):
        lines += [_cut(f"{words} {describe_exception(cause)}"), *_frame_lines(_own_frames(cause))]
    return f"{TRACEBACK_MARK}{more}, most recent call last):\n" + "\n".join(lines)


def _own_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_OURS)]


def _frame_lines(frames: list[traceback.FrameSummary]) -> list[str]:
    """The last :data:`MAX_FRAMES` ``frames`` as a traceback's lines, each cut to :data:`MAX_LINE`."""
    return [_cut(text) for f in frames[-MAX_FRAMES:] for text in
            (f'  File "{f.filename}", line {f.lineno}, in {f.name}', *([f"    {f.line}"] if f.line else []))]


def _cut(line: str) -> str:
    # a file name that is not UTF-8 holds lone surrogates, which no store keeps: escape them
    return (line if len(line) <= MAX_LINE else line[:MAX_LINE] + " ...").encode("utf-8", "backslashreplace") \
        .decode("utf-8")


def _causes(exc: BaseException) -> list[tuple[str, BaseException]]:
    """The exceptions behind ``exc``, outermost first, each with the words that link it: the
    one it was raised from, or the one being handled when it was raised (unless ``from None``)."""
    found: list[tuple[str, BaseException]] = []
    seen = {id(exc)}
    while len(found) < MAX_CAUSES:
        if exc.__cause__ is not None:
            words, exc = "caused by", exc.__cause__
        elif exc.__context__ is not None and not exc.__suppress_context__:
            words, exc = "raised while handling", exc.__context__
        else:
            break
        if id(exc) in seen:
            break
        seen.add(id(exc))
        found.append((words, exc))
    return found


#: where the frames :func:`where_raised` adds to a failure begin
TRACEBACK_MARK = "\nTraceback (the agent's frames"


def split_traceback(failure: str) -> tuple[str, str]:
    """``failure`` as (its message, the agent's frames after it: "" when it has none), for views
    that show the message on one line (a progress line) and the frames, if at all, below it."""
    message, mark, frames = failure.partition(TRACEBACK_MARK)
    return message, (mark.lstrip("\n") + frames) if mark else ""


def json_types(value: Any) -> Any:
    """``value`` with the Python types that stand for JSON values made JSON's own: subclasses of
    ``int``, ``float`` and ``str`` (an ``IntEnum``, a ``str`` enum, NumPy's ``float64``) as the
    plain type, NumPy scalars and arrays as their ``tolist()``, tuples as lists. Python code
    (a notebook's above all) returns these for numbers and strings, and a contract takes only
    JSON's own types. Anything else is left as it is, for the JSON check to name."""
    try:
        return _json_types(value)
    except RecursionError:  # a cycle: the JSON check names it
        return value


#: NumPy dtype kinds with no JSON counterpart: datetime64, timedelta64, void (raw records), bytes
_NOT_JSON_KINDS = frozenset("MmVS")


def _json_types(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, dict):  # an OrderedDict, a defaultdict, ...
        return {key: _json_types(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_json_types(item) for item in value]
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):
        # not dates, durations or raw records: their tolist() gives bare counts (nanoseconds since
        # 1970) or bytes, which would pass for numbers or text; left for the JSON check to name
        if getattr(getattr(value, "dtype", None), "kind", "") in _NOT_JSON_KINDS:
            return value
        return _json_types(value.tolist())
    for plain in (bool, int, float, str):  # bool first: it is an int
        if isinstance(value, plain):
            return plain.__str__(value) if plain is str else plain(value)
    return value


def _json_problem(value: Any) -> str | None:
    """Why ``value`` is not a JSON value, or None."""
    try:
        _encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        # where the value stops being JSON, as a contract check says it, rather than the
        # encoder's words (which name no field, and for a huge int sys.set_int_max_str_digits)
        found = json_violations(value)
        return f"a value that is not JSON ({found[0] if found else exc})"
    return None
