"""Shared machinery of the coding-agent CLI adapters (Claude Code, Codex).

Each adapter builds an argv for the CLI's non-interactive JSON mode and parses that JSON; this
base runs it in the task's working directory under the adapter's process group (killed on
timeout and cancel), checks the binary and credentials in ``preflight``, and turns the CLI's
final answer into the step output strictly (JSON or a failure, never prose clean-up).
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import AgentError, AgentUnavailable
from .base import AgentResult, Task, Telemetry, Usage
from .command import preview
from .jsontext import NotJSON, loads
from .process import ProcessGroup, ProcessResult, find_program


class HarnessAgent(ABC):
    """Base of CLI harness adapters; subclasses define ``harness``, ``_argv`` and ``_parse``."""

    harness = "harness"
    install_hint = ""

    def __init__(self, name: str, *, binary: str | None = None, model: str | None = None,
                 effort: str | None = None, timeout: float | None = 1800.0,
                 extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 check_credentials: bool = True) -> None:
        self.name = name
        self.binary = binary or self.harness
        self.model = model
        self.effort = effort
        self.timeout = timeout
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self.check_credentials = check_credentials
        self._processes = ProcessGroup()

    def preflight(self) -> None:
        """Raise AgentUnavailable naming the missing binary or credentials."""
        if find_program(self.binary, self._environ()) is None:
            raise AgentUnavailable(
                f"agent {self.name!r}: the {self.harness} binary {self.binary!r} is not on PATH"
                f"{'; ' + self.install_hint if self.install_hint else ''}")
        if self.check_credentials:
            problem = self._credentials_problem(self._environ())
            if problem:
                raise AgentUnavailable(f"agent {self.name!r}: {problem}")

    @abstractmethod
    def _credentials_problem(self, env: Mapping[str, str]) -> str | None:
        """What is missing for the CLI to authenticate, or None."""

    def _environ(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    async def execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        limits = [t for t in (task.timeout, self.timeout) if t is not None]
        try:
            with self._prepared(task) as (argv, stdin):
                result = await self._processes.run(
                    argv, stdin=stdin, cwd=task.cwd, env=self._environ(),
                    timeout=min(limits) if limits else None, run_id=task.run_id)
        except AgentError as exc:
            return AgentResult.failed(f"agent {self.name!r} ({self.harness}): {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        if result.returncode < 0:  # killed by a signal: what it printed, if anything, is cut short
            parsed = self._fail(f"its process {result.ended()} before it finished", result)
        elif result.bad_utf8_at is not None:
            parsed = self._fail(f"printed bytes that are not UTF-8 on stdout (at byte "
                                f"{result.bad_utf8_at})", result)
        else:
            parsed = self._parse(result)
        return parsed.with_duration(elapsed)

    @abstractmethod
    def _prepared(self, task: Task) -> Any:
        """A context manager yielding ``(argv, stdin bytes)`` and cleaning up temp files."""

    @abstractmethod
    def _parse(self, result: ProcessResult) -> AgentResult:
        """The CLI's JSON output as an AgentResult (never prose parsing)."""

    async def cancel(self, run_id: str | None = None) -> None:
        """Kill every call's process group, or only those of run ``run_id``."""
        await self._processes.kill_all(run_id)

    def _fail(self, message: str, result: ProcessResult | None = None, *,
              usage: Usage | None = None, model: str | None = None) -> AgentResult:
        detail = ""
        if result is not None and result.returncode != 0:
            tail = result.stderr_tail(800)
            if result.returncode > 0:
                detail = f" (exit status {result.returncode}{': ' + tail if tail else ''})"
            elif tail:  # killed by a signal: the message itself says so
                detail = f" (stderr: {tail})"
        return AgentResult.failed(f"agent {self.name!r} ({self.harness}): {message}{detail}",
                                  usage=usage, telemetry=Telemetry(model=model or self.model))

    def _answer(self, text: Any, *, usage: Usage, model: str | None) -> AgentResult:
        """The final answer text as the step output: strict JSON or a failure."""
        if not isinstance(text, str):
            return self._fail("the final answer is missing", usage=usage, model=model)
        try:
            output = loads(text)
        except NotJSON:
            return self._fail(f"the final answer is not JSON: {preview(text)}", usage=usage,
                              model=model)
        return AgentResult.success(output, usage=usage, telemetry=Telemetry(model=model))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, model={self.model!r})"


def credentials_file(env: Mapping[str, str], home_var: str, default_dir: str, name: str) -> str:
    base = env.get(home_var) or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                             default_dir)
    return os.path.join(base, name)
