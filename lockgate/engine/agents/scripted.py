"""A scripted agent for tests: queued outputs and failures per step id, every task recorded."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .base import AgentResult, Task


@dataclass(frozen=True)
class Fail:
    """A scripted failure: the attempt fails with ``message``."""

    message: str


Reply = Any  # a JSON value, Fail(...), an AgentResult, or a callable(task) -> any of those


class ScriptedAgent:
    """Replies from a queue per step id.

    ``script`` maps a step id to a list of replies, consumed one per call. A scoped id such as
    ``fan[2].stage`` falls back to its unscoped name when it has no queue of its own, and then to
    ``default`` (a reply used for every call, or None: a failure saying the script ran out).
    ``calls`` records every task received, in order.
    """

    def __init__(self, script: Mapping[str, Iterable[Reply]] | None = None, *,
                 name: str = "scripted", default: Reply | None = None) -> None:
        self.name = name
        self._queues = {step: deque(replies) for step, replies in (script or {}).items()}
        self._default = default
        self.calls: list[Task] = []

    def add(self, step_id: str, *replies: Reply) -> ScriptedAgent:
        self._queues.setdefault(step_id, deque()).extend(replies)
        return self

    async def execute(self, task: Task) -> AgentResult:
        self.calls.append(task)
        reply = self._next(task.step_id)
        while callable(reply) and not isinstance(reply, Fail):
            reply = reply(task)
            if asyncio.iscoroutine(reply):
                reply = await reply
        if isinstance(reply, AgentResult):
            return reply
        if isinstance(reply, Fail):
            return AgentResult.failed(reply.message)
        return AgentResult.success(reply)

    def _next(self, step_id: str) -> Reply:
        for key in (step_id, _unscoped(step_id)):
            queue = self._queues.get(key)
            if queue:
                return queue.popleft()
        if self._default is not None:
            return self._default
        return Fail(f"scripted agent {self.name!r} has no reply left for step {step_id!r}")

    def remaining(self) -> dict[str, int]:
        return {step: len(queue) for step, queue in self._queues.items() if queue}

    def prompts(self, step_id: str | None = None) -> list[str]:
        return [t.prompt for t in self.calls if step_id is None or t.step_id == step_id]

    async def cancel(self, run_id: str | None = None) -> None:
        return None


def _unscoped(step_id: str) -> str:
    """``outer.fan[2].stage`` -> ``stage``: the last segment without item indexes."""
    last = step_id.rsplit(".", 1)[-1].rsplit("/", 1)[-1]
    return last.split("[", 1)[0]

