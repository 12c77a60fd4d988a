"""Codex as an agent: ``codex exec --json ... -`` with the prompt on stdin.

``--json`` prints JSON Lines events: ``thread.started``, ``turn.started``, ``item.*``,
``turn.completed`` (with ``usage``), ``turn.failed`` / ``error`` (with a message). The answer is
the text of the last ``agent_message`` item and must be JSON. When the contract's schema meets
the strict structured-output rules it also goes to ``--output-schema FILE``; otherwise the prompt
carries the schema as a strict instruction. The run happens in the task's directory (``--cd``) with
``sandbox`` (default ``workspace-write``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import AgentResult, Task, Usage, strict_compatible
from .command import clip, preview
from .harness import HarnessAgent, credentials_file
from .jsontext import NotJSON, count, loads
from .process import ProcessResult

_CREDENTIAL_VARS = ("OPENAI_API_KEY", "CODEX_API_KEY")


class CodexAgent(HarnessAgent):
    harness = "codex"
    install_hint = "install Codex (npm install -g @openai/codex)"

    def __init__(self, name: str = "codex", *, sandbox: str | None = "workspace-write",
                 output_schema: bool = True, **options: Any) -> None:
        super().__init__(name, **options)
        self.sandbox = sandbox
        self.output_schema = output_schema

    def _credentials_problem(self, env: Mapping[str, str]) -> str | None:
        if any(env.get(var) for var in _CREDENTIAL_VARS):
            return None
        path = credentials_file(env, "CODEX_HOME", ".codex", "auth.json")
        if os.path.exists(path):
            return None
        return (f"no Codex credentials: set OPENAI_API_KEY (or CODEX_API_KEY) or run "
                f"`{self.binary} login` (no {path})")

    @contextlib.contextmanager
    def _prepared(self, task: Task) -> Iterator[tuple[list[str], bytes]]:
        native = (self.output_schema and task.schema is not None
                  and strict_compatible(task.schema))
        argv = [self.binary, "exec", "--json", "--skip-git-repo-check"]
        with contextlib.ExitStack() as stack:
            if native:
                argv += ["--output-schema", stack.enter_context(_schema_file(task.schema))]
            if self.model:
                argv += ["--model", self.model]
            if self.effort:
                argv += ["-c", f"model_reasoning_effort={json.dumps(self.effort)}"]
            if self.sandbox:
                argv += ["--sandbox", self.sandbox]
            if task.cwd:
                argv += ["--cd", task.cwd]
            argv += [*self.extra_args, "-"]
            yield argv, task.instructed_prompt(native_schema=native).encode()

    def _parse(self, result: ProcessResult) -> AgentResult:
        events = _Events.read(result.stdout)
        usage = events.usage()
        if events.failure:
            return self._fail(events.failure, result, usage=usage)
        if events.message is None:
            if events.errors:
                return self._fail(events.errors[-1], result, usage=usage)
            if not events.parsed:
                return self._fail(f"printed output that is not JSON Lines: "
                                  f"{preview(result.stdout)}", result)
            return self._fail("finished without a final agent message", result, usage=usage)
        if result.returncode != 0:
            return self._fail("exited with an error after answering", result, usage=usage)
        return self._answer(events.message, usage=usage, model=self.model)


@dataclass
class _Events:
    """What matters in a ``codex exec --json`` event stream."""

    parsed: int = 0
    message: str | None = None
    failure: str | None = None
    errors: list[str] = field(default_factory=list)  # may be transient (reconnects)
    tokens: list[int] = field(default_factory=list)

    @classmethod
    def read(cls, stdout: str) -> _Events:
        events = cls()
        for line in stdout.splitlines():
            try:
                event = loads(line)
            except NotJSON:
                continue  # stray non-event lines never become the answer
            if isinstance(event, dict):
                events.parsed += 1
                events._take(event)
        return events

    def _take(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                self.message = item.get("text")
        elif kind == "turn.completed":
            usage = event.get("usage")
            usage = usage if isinstance(usage, dict) else {}
            self.tokens.append(count(usage.get("input_tokens"))
                               + count(usage.get("output_tokens")))
        elif kind == "turn.failed":
            self.failure = _message(event.get("error")) or "the turn failed"
        elif kind == "error":
            self.errors.append(_message(event) or "error")

    def usage(self) -> Usage:
        return Usage(tokens=sum(self.tokens))


def _message(obj: Any) -> str | None:
    if isinstance(obj, dict):
        return clip(obj.get("message")) if obj.get("message") else None
    return clip(obj) if obj else None


@contextlib.contextmanager
def _schema_file(schema: Any) -> Iterator[str]:
    fd, path = tempfile.mkstemp(prefix="lockgate-schema-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(schema, handle)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
