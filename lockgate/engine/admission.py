"""Admission of agent calls: the limits one run's calls are held to.

At most ``max_running`` agent calls (a judge's and evaluate commands included) run at once, and
at most ``max_outstanding`` are running or queued. Beyond that bound a run stops with a clear
error (:class:`OutstandingLimit`, a :class:`~lockgate.errors.RunnerError`) instead of queueing
without limit, losing nothing: a run whose first steps alone would pass it is refused before it
is planned (:func:`check_start`); one that reaches it later starts no more calls, lets those in
flight end and report, and is left resumable, so that a resume under a higher limit goes on
(see :mod:`lockgate.engine.drive`). Kept apart from the driving loop so the limits read in one
place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..errors import RunnerError
from .agents.config import RunnerSettings


class OutstandingLimit(RunnerError):
    """More agent calls would be outstanding than ``max_outstanding`` allows: the run was refused
    before it started, or its drive stopped leaving it resumable under a higher limit. Then
    ``run_id`` names the run and ``stopped`` says what happened without the resume command
    (a surface that knows the options the run was given, the CLI's ``--store``, says its own)."""

    def __init__(self, message: str, *, run_id: str | None = None, stopped: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.stopped = stopped or message


def too_many(settings: RunnerSettings) -> str:
    """What both refusals say would happen (the words tests and people look for)."""
    return (f"more than max_outstanding = {settings.max_outstanding} agent calls outstanding (running or "
            "queued, evaluate commands included)")


def where_to_raise(settings: RunnerSettings, config_path: Any = None) -> str:
    """How to raise the limit: the configuration file's ``[runner]`` table, or the argument."""
    where = str(config_path) if config_path else "lockgate.toml"
    return (f"raise max_outstanding above {settings.max_outstanding} ([runner] max_outstanding in {where}, "
            "or max_outstanding= in Python)")


def check_start(spec: Any, flow: str | None, inputs: Mapping[str, Any] | None, settings: RunnerSettings,
                config_path: Any = None) -> None:
    """Refuse (:class:`OutstandingLimit`), before anything is stored, a run whose first steps
    alone would pass ``max_outstanding``: :func:`first_calls` is certain to be started at once."""
    calls = first_calls(spec, flow, inputs)
    if sum(calls.values()) <= settings.max_outstanding:
        return
    shown = ", ".join(f"{step_id!r}: {count}" for step_id, count in calls.items())
    raise OutstandingLimit(
        f"the run was not started: its first steps start {sum(calls.values())} agent calls at once ({shown}), "
        f"which would make {too_many(settings)}; {where_to_raise(settings, config_path)}, or lower the "
        "fanout's concurrency")


def first_calls(spec: Any, flow: str | None, inputs: Mapping[str, Any] | None) -> dict[str, int]:
    """The agent calls and commands a plan of the flow with ``inputs`` certainly starts at once, by
    step: each step the flow starts with (no dependency, not routed to, no ``when``) that is a
    ``do`` or ``evaluate`` step (one), or a fanout over an input whose first stage has no ``when``
    (its width, at most its ``concurrency``). A lower bound, cheap and without side effects:
    steps released by others, subflows and worktree checks are not looked at; a flow with a
    ``dispatches`` budget, which may refuse an issuance, counts nothing."""
    from ..dsl.graph import topological_generations

    chosen = spec.flow(flow) if flow is not None else (spec.entry_flow or next(iter(spec.flows.values()), None))
    if chosen is None or not chosen.steps or _limits_dispatches(chosen.budget):
        return {}
    generations = topological_generations(chosen)
    calls: dict[str, int] = {}
    for step_id in sorted(generations[0] if generations else ()):
        step = chosen.step_map.get(step_id)
        count = _calls_of(step, inputs or {}) if step is not None and step.when is None else 0
        if count and not _limits_dispatches(step.budget):
            calls[step_id] = count
    return calls


def _calls_of(step: Any, inputs: Mapping[str, Any]) -> int:
    """The calls a step the flow starts with certainly starts at once (0 when not known)."""
    if step.do is not None or step.evaluate is not None:
        return 1
    fan = step.fanout
    if fan is None or not fan.stages or fan.stages[0].when is not None or not fan.concurrency:
        return 0
    items = _input_value(fan.over, inputs)
    return min(len(items), fan.concurrency) if isinstance(items, list) else 0


def _input_value(text: str | None, inputs: Mapping[str, Any]) -> Any:
    """The value of ``text`` when it is one full ``${input...}`` reference, else None."""
    from ..dsl.refrender import walk_path
    from ..dsl.refscan import scan

    ref = scan(text or "").full
    return walk_path(inputs, ref.path) if ref is not None and ref.kind == "input" else None


def _limits_dispatches(budget: Any) -> bool:
    return budget is not None and budget.dispatches is not None


class Admission:
    """Agent-call admission for one run: a semaphore for running calls and a bound on running
    plus queued calls that refuses instead of queueing without limit."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self._running = asyncio.Semaphore(settings.max_running)
        self.outstanding = 0
        self.active = 0
        self.peak = 0

    def reserve(self) -> bool:
        """Count one more call outstanding; False, counting nothing, when that would pass
        ``max_outstanding``."""
        if self.outstanding >= self.settings.max_outstanding:
            return False
        self.outstanding += 1
        return True

    def release(self) -> None:
        self.outstanding -= 1

    def full(self) -> bool:
        """Whether a call entering now would wait for a slot (every one taken, or others queued)."""
        return self._running.locked()

    async def __aenter__(self) -> Admission:
        await self._running.acquire()
        self.active += 1
        self.peak = max(self.peak, self.active)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.active -= 1
        self._running.release()
