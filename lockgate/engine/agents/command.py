"""Any command line as an agent: the task as JSON on stdin, the output as JSON on stdout.

The command runs in the task's working directory (the workspace or the fanout item's worktree),
in its own process group. Its whole stdout must be one JSON value (UTF-8, no NaN or Infinity, at
most :data:`~lockgate.engine.agents.process.MAX_STDOUT` bytes): that value is the step's output.
A non-zero exit, output that is not JSON, too much output, or a timeout is the task's failure,
with a message naming the command (and the tail of its stderr).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time
from collections.abc import Mapping, Sequence

from ...errors import AgentError, AgentUnavailable
from .base import AgentResult, Task, Telemetry
from .jsontext import NotJSON, loads
from .process import ProcessGroup, ProcessResult

PREVIEW_CHARS = 300


class CommandAgent:
    """Runs ``command`` once per task."""

    def __init__(self, name: str, command: Sequence[str], *, timeout: float | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        if not command:
            raise ValueError(f"agent {name!r}: the command is empty")
        self.name = name
        self.command = tuple(command)
        self.timeout = timeout
        self.env = dict(env or {})
        self.cwd = cwd
        self._processes = ProcessGroup()

    @property
    def display(self) -> str:
        return shlex.join(self.command)

    def preflight(self) -> None:
        program = self.command[0]
        if os.sep in program:
            base = self.cwd or os.getcwd()
            path = program if os.path.isabs(program) else os.path.join(base, program)
            if not os.access(path, os.X_OK):
                raise AgentUnavailable(f"agent {self.name!r}: {program!r} is not an executable file")
        elif shutil.which(program) is None:
            raise AgentUnavailable(f"agent {self.name!r}: {program!r} is not on PATH")

    async def execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        try:
            payload = json.dumps(task.to_json(), allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            return AgentResult.failed(f"command `{self.display}`: the task is not JSON: {exc}")
        try:
            result = await self._processes.run(
                self.command, stdin=payload, cwd=self.cwd or task.cwd,
                env={**os.environ, **self.env}, timeout=_timeout(task, self.timeout),
                run_id=task.run_id)
        except AgentError as exc:
            return AgentResult.failed(f"command `{self.display}`: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        return self._interpret(result, elapsed)

    def _interpret(self, result: ProcessResult, elapsed: float) -> AgentResult:
        telemetry = Telemetry(duration_ms=elapsed)
        if result.returncode != 0:
            tail = result.stderr_tail()
            detail = f": {tail}" if tail else " (no stderr)"
            return AgentResult.failed(
                f"command `{self.display}` {result.ended()}{detail}",
                telemetry=telemetry)
        if result.bad_utf8_at is not None:
            return AgentResult.failed(
                f"command `{self.display}` printed bytes that are not UTF-8 on stdout (at byte "
                f"{result.bad_utf8_at}): {preview(result.stdout)}", telemetry=telemetry)
        try:
            output = loads(result.stdout)
        except NotJSON as exc:
            return AgentResult.failed(
                f"command `{self.display}` did not print JSON on stdout ({exc}): "
                f"{preview(result.stdout)}", telemetry=telemetry)
        return AgentResult.success(output, telemetry=telemetry)

    async def cancel(self, run_id: str | None = None) -> None:
        """Kill every call's process group, or only those of run ``run_id``."""
        await self._processes.kill_all(run_id)

    def __repr__(self) -> str:
        return f"CommandAgent({self.name!r}, {self.display!r})"


def _timeout(task: Task, default: float | None) -> float | None:
    limits = [t for t in (task.timeout, default) if t is not None]
    return min(limits) if limits else None


def preview(text: str) -> str:
    """A short quoted excerpt of ``text`` for an error message."""
    text = text.strip()
    if not text:
        return "(empty output)"
    if len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS] + "..."
    return repr(text)


def clip(value: object, limit: int = PREVIEW_CHARS) -> str:
    """``value`` as one line of at most ``limit`` characters (a message from the other side)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."
