"""Admission of agent calls: the limits one run's calls are held to.

At most ``max_running`` agent calls (a judge's and evaluate commands included) run at once, and
at most ``max_outstanding`` are running or queued; a run that would exceed the second bound stops with a
:class:`OutstandingLimit` (a :class:`~lockgate.errors.RunnerError`) instead of queueing without
limit, and the runner records the run cancelled. Kept apart from the driving loop
(:mod:`lockgate.engine.drive`) so the limits read in one place.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import RunnerError
from .agents.config import RunnerSettings


class OutstandingLimit(RunnerError):
    """Starting one more call would exceed ``max_outstanding``: the run cannot go on under these
    limits, so the runner ends it (cancelled) rather than leave it looking alive."""


class Admission:
    """Agent-call admission for one run: a semaphore for running calls and a bound on running
    plus queued calls that fails instead of queueing without limit."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self._running = asyncio.Semaphore(settings.max_running)
        self.outstanding = 0
        self.active = 0
        self.peak = 0

    def reserve(self, run_id: str, step_id: str) -> None:
        if self.outstanding >= self.settings.max_outstanding:
            raise OutstandingLimit(
                f"run {run_id}: starting {step_id!r} would make more than max_outstanding = "
                f"{self.settings.max_outstanding} agent calls outstanding (running or queued, evaluate "
                "commands included); raise [runner] max_outstanding in lockgate.toml, or bound the "
                "fanout's concurrency")
        self.outstanding += 1

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
