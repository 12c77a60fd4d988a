"""Claude Code as an agent: ``claude -p PROMPT --output-format json [--json-schema SCHEMA]``.

The JSON result envelope carries ``structured_output`` when a schema was given (the CLI enforces
it), otherwise the final text in ``result``, which must then be JSON. ``is_error`` or a
``subtype`` other than ``success`` (``error_max_turns``, ``error_during_execution``, ...) is the
task's failure. ``total_cost_usd`` and ``usage`` feed the budget. The working directory is the
task's (workspace or worktree); ``permission_mode`` defaults to ``acceptEdits`` because nobody can
answer a permission prompt in print mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .base import AgentResult, Task, Telemetry, Usage
from .command import clip, preview
from .harness import HarnessAgent, credentials_file
from .jsontext import NotJSON, amount, count, loads
from .process import ProcessResult

MAX_ARG_PROMPT = 100_000  # longer prompts go on stdin (Linux caps one argument at 128 KiB)
_CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")


class ClaudeCodeAgent(HarnessAgent):
    harness = "claude"
    install_hint = "install Claude Code (npm install -g @anthropic-ai/claude-code)"

    def __init__(self, name: str = "claude", *, permission_mode: str | None = "acceptEdits",
                 allowed_tools: Sequence[str] | None = None,
                 disallowed_tools: Sequence[str] | None = None, max_turns: int | None = None,
                 json_schema: bool = True, **options: Any) -> None:
        super().__init__(name, **options)
        self.permission_mode = permission_mode
        self.allowed_tools = list(allowed_tools) if allowed_tools is not None else None
        self.disallowed_tools = list(disallowed_tools) if disallowed_tools is not None else None
        self.max_turns = max_turns
        self.json_schema = json_schema

    def _credentials_problem(self, env: Mapping[str, str]) -> str | None:
        if any(env.get(var) for var in _CREDENTIAL_VARS) or sys.platform == "darwin":
            return None  # on macOS the login lives in the Keychain, which we cannot inspect
        path = credentials_file(env, "CLAUDE_CONFIG_DIR", ".claude", ".credentials.json")
        if os.path.exists(path):
            return None
        return (f"no Claude credentials: set ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN) or run "
                f"`{self.binary} login` (no {path})")

    @contextlib.contextmanager
    def _prepared(self, task: Task) -> Iterator[tuple[list[str], bytes]]:
        native = self.json_schema and task.schema is not None
        prompt = task.instructed_prompt(native_schema=native)
        argv = [self.binary, "-p"]
        stdin = b""
        if len(prompt) <= MAX_ARG_PROMPT:
            argv.append(prompt)
        else:
            stdin = prompt.encode()
        argv += ["--output-format", "json"]
        if native:
            argv += ["--json-schema", json.dumps(task.schema)]
        argv += self._options()
        yield argv, stdin

    def _options(self) -> list[str]:
        argv: list[str] = []
        for flag, value in (("--model", self.model), ("--effort", self.effort),
                            ("--permission-mode", self.permission_mode)):
            if value:
                argv += [flag, value]
        if self.allowed_tools is not None:
            argv += ["--allowedTools", ",".join(self.allowed_tools)]
        if self.disallowed_tools:
            argv += ["--disallowedTools", ",".join(self.disallowed_tools)]
        if self.max_turns:
            argv += ["--max-turns", str(self.max_turns)]
        return argv + list(self.extra_args)

    def _parse(self, result: ProcessResult) -> AgentResult:
        envelope = _result_envelope(result.stdout)
        if envelope is None:
            return self._fail(f"printed output that is not a JSON result: "
                              f"{preview(result.stdout)}", result)
        usage = _usage(envelope)
        model = _model(envelope) or self.model
        if envelope.get("is_error") or envelope.get("subtype", "success") != "success":
            reason = envelope.get("result") or envelope.get("error") or "no details"
            return self._fail(f"reported {envelope.get('subtype', 'an error')}: {clip(reason)}",
                              result, usage=usage, model=model)
        if envelope.get("structured_output") is not None:
            return AgentResult.success(envelope["structured_output"], usage=usage,
                                       telemetry=Telemetry(model=model))
        return self._answer(envelope.get("result"), usage=usage, model=model)


def _result_envelope(stdout: str) -> dict[str, Any] | None:
    """The ``{"type": "result", ...}`` object (a list of messages ends with one)."""
    try:
        data = loads(stdout)
    except NotJSON:
        return None
    if isinstance(data, list):
        results = [m for m in data if isinstance(m, dict) and m.get("type") == "result"]
        data = results[-1] if results else None
    if isinstance(data, dict) and data.get("type", "result") == "result":
        return data
    return None


def _usage(envelope: Mapping[str, Any]) -> Usage:
    raw = envelope.get("usage") if isinstance(envelope.get("usage"), dict) else {}
    tokens = sum(count(raw.get(k)) for k in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return Usage(tokens=tokens, usd=amount(envelope.get("total_cost_usd")))


def _model(envelope: Mapping[str, Any]) -> str | None:
    models = envelope.get("modelUsage")
    if isinstance(models, dict) and models:
        return str(next(iter(models)))
    return None
