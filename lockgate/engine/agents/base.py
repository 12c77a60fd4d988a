"""The agent protocol: what the runner hands an agent and what it gets back.

An agent turns one :class:`Task` (a rendered ``do`` step) into one :class:`AgentResult`. Adapters
never raise for an ordinary failure of the task (a non-zero exit, an HTTP error, a timeout,
output that is not JSON): they return ``AgentResult.failed(...)`` so the engine takes its
attempts path with the message. They raise :class:`~lockgate.errors.AgentUnavailable` only when
the agent cannot run here at all (a missing binary or credentials), normally from ``preflight``.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Task:
    """One dispatch of a ``do`` step to an agent.

    ``step_id`` is the engine's scoped id (a fanout item or subflow step carries its scope).
    ``violations`` and ``previous_failure`` describe why the previous attempt was rejected, so
    the agent can correct itself on a retry; both are empty on the first attempt.
    ``schema`` is the JSON Schema of the step's output contract (None when the step has none).
    """

    run_id: str
    step_id: str
    prompt: str
    agent: str = "claude"
    attempt: int = 1
    previous_failure: str | None = None
    violations: tuple[Mapping[str, Any], ...] = ()
    contract: str | None = None
    schema: Mapping[str, Any] | None = None
    cwd: str | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The task as a JSON object (what the command adapter writes on stdin)."""
        return {
            "run_id": self.run_id,
            "step_id": self.step_id,
            "prompt": self.prompt,
            "agent": self.agent,
            "attempt": self.attempt,
            "previous_failure": self.previous_failure,
            "violations": [dict(v) for v in self.violations],
            "contract": self.contract,
            "schema": dict(self.schema) if self.schema is not None else None,
            "cwd": self.cwd,
            "inputs": dict(self.inputs),
            "timeout": self.timeout,
        }

    def retry_feedback(self) -> str | None:
        """What was wrong with the previous attempt, as text for a model; None on a first try.
        Each problem is said once: a violation the failure's reason already says (an ensure's,
        whose reason is its message; a reported failure's; a contract summary's first ones) is
        not listed again, and a violation's ensure is not named before a message quoting it."""
        if not self.violations and not self.previous_failure:
            return None
        lines = [f"Your previous attempt (attempt {self.attempt - 1}) was rejected:"
                 if self.attempt > 1 else "Your previous result was sent back:"]
        said = self.previous_failure or ""
        if said:
            lines.append(f"- {said}")
        for violation in self.violations:
            text = violation_text(violation)
            if text and text not in said:
                lines.append(f"- {text}")
        lines.append("Fix these problems and answer again.")
        return "\n".join(lines)

    def instructed_prompt(self, *, native_schema: bool) -> str:
        """The prompt for a model: the task, the retry feedback and, unless the transport
        enforces the schema natively, a strict instruction to answer with JSON only."""
        parts = [self.prompt]
        feedback = self.retry_feedback()
        if feedback:
            parts.append(feedback)
        if self.schema is not None and not native_schema:
            parts.append(json_instruction(self.schema))
        elif self.schema is None:
            parts.append("Answer with a single JSON value and nothing else.")
        return "\n\n".join(parts)


def violation_text(violation: Mapping[str, Any]) -> str:
    """One violation in words: where (its path, else its ensure or ``until`` unless the message
    quotes it) and its message (else its reason)."""
    message = str(violation.get("message") or violation.get("reason") or "")
    label = violation.get("ensure") or violation.get("until") or ""
    where = violation.get("path") or ("" if label in message else label)
    return f"{where}: {message}" if where and message else str(where or message)


def json_instruction(schema: Mapping[str, Any]) -> str:
    """A strict answer-format instruction for transports without native structured output."""
    return (
        "Answer with a single JSON value that validates against this JSON Schema, and nothing "
        "else: no prose, no code fences.\n" + json.dumps(schema, indent=2, sort_keys=True)
    )


@dataclass(frozen=True)
class Usage:
    """What a call consumed; feeds the engine's ``budget``. ``ms`` is the agent's own account of
    its time; None (the usual) charges the call's measured duration instead (see
    :meth:`AgentResult.spend`)."""

    tokens: int = 0
    usd: float = 0.0
    ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        if self.ms is None:
            return {"tokens": self.tokens, "usd": self.usd}
        return {"tokens": self.tokens, "usd": self.usd, "ms": self.ms}


@dataclass(frozen=True)
class Telemetry:
    duration_ms: float = 0.0
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"duration_ms": self.duration_ms, "model": self.model}


#: The shortest measured call charged as ``ms``: a budget's unit. Shorter calls (an instant Python
#: agent's) are not charged, which spares them a usage settlement and its event per dispatch.
CHARGED_MS = 1.0


@dataclass(frozen=True)
class AgentResult:
    """The outcome of one task: either ``output`` (a JSON value) or ``failure`` (a message)."""

    output: Any = None
    failure: str | None = None
    usage: Usage = Usage()
    telemetry: Telemetry = Telemetry()

    @property
    def ok(self) -> bool:
        return self.failure is None

    @classmethod
    def success(cls, output: Any, *, usage: Usage | None = None,
                telemetry: Telemetry | None = None) -> AgentResult:
        return cls(output=output, usage=usage or Usage(), telemetry=telemetry or Telemetry())

    @classmethod
    def failed(cls, failure: str, *, usage: Usage | None = None,
               telemetry: Telemetry | None = None) -> AgentResult:
        return cls(failure=failure, usage=usage or Usage(), telemetry=telemetry or Telemetry())

    def spend(self) -> dict[str, float]:
        """What the call costs the budgets: its non-zero ``tokens``, ``usd`` and ``ms``, the
        last being the time the agent reported, else the call's measured duration (to the
        microsecond) when it reaches :data:`CHARGED_MS`."""
        usage = self.usage
        ms = usage.ms
        if ms is None:
            measured = self.telemetry.duration_ms
            ms = round(measured, 3) if measured >= CHARGED_MS else 0
        return {key: value for key, value in (("tokens", usage.tokens), ("usd", usage.usd), ("ms", ms))
                if value}

    def with_duration(self, duration_ms: float) -> AgentResult:
        """A copy whose telemetry carries ``duration_ms`` (kept if the adapter measured one)."""
        if self.telemetry.duration_ms:
            return self
        telemetry = Telemetry(duration_ms=duration_ms, model=self.telemetry.model)
        return AgentResult(self.output, self.failure, self.usage, telemetry)


def describe_exception(exc: BaseException) -> str:
    """``ExcType: message`` of an exception an agent raised, whatever its ``__str__`` does (an
    agent's own exception class may raise there too: it is still the agent's failure)."""
    try:
        message = str(exc)
    except Exception as failed:  # noqa: BLE001 - foreign code
        message = f"<str() of it raised {type(failed).__name__}>"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    # a lone surrogate (a file name that is not UTF-8, decoded by os.fsdecode) no store keeps: escape it
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


async def timed_execute(agent: Any, task: Any) -> AgentResult:
    """``agent.execute(task)``, its result carrying the call's measured duration when the adapter
    measured none (a failure usually has none): an ``ms`` budget counts failed and timed-out calls
    too, and they are often the slowest."""
    started = time.perf_counter()
    result = await agent.execute(task)
    return result.with_duration((time.perf_counter() - started) * 1000)


@runtime_checkable
class Agent(Protocol):
    """An asynchronous agent. ``cancel()`` stops every call in flight (signal, then kill).

    An adapter may also take ``cancel(run_id=...)``: stop only the calls of tasks of that run
    (``Task.run_id``), leaving other runs' calls be. The runner uses it when a run stops while
    others share the adapter (see :func:`cancels_by_run`); every built-in adapter takes it.
    """

    name: str

    async def execute(self, task: Task) -> AgentResult: ...

    async def cancel(self) -> None: ...


def cancels_by_run(agent: Any) -> bool:
    """Whether ``agent.cancel`` takes ``run_id=``, so it can stop one run's calls only. Only a
    parameter of that name counts: a ``cancel(**options)`` may well stop every call."""
    cancel = getattr(agent, "cancel", None)
    if cancel is None:
        return False
    try:
        parameters = inspect.signature(cancel).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): assume the old form
        return False
    return any(p.name == "run_id" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               for p in parameters)


async def preflight(agent: Agent) -> None:
    """Run the agent's ``preflight`` if it has one (raises AgentUnavailable when it cannot run)."""
    check = getattr(agent, "preflight", None)
    if check is None:
        return
    result = check()
    if hasattr(result, "__await__"):
        await result


def preflight_now(agent: Agent) -> None:
    """Run the agent's ``preflight`` when it is synchronous (raises AgentUnavailable when it
    cannot run); an asynchronous one is left to whoever can await it (see :func:`preflight`)."""
    check = getattr(agent, "preflight", None)
    if check is None or inspect.iscoroutinefunction(check):
        return
    result = check()
    if inspect.iscoroutine(result):  # asynchronous after all (an async __call__)
        result.close()


def strict_compatible(schema: Any) -> bool:
    """Whether ``schema`` meets OpenAI-style strict structured output rules: every object lists
    all its properties as required and forbids additional ones. Optional contract fields break
    this; adapters then send the schema non-strict (or as an instruction) and validate after."""
    if not isinstance(schema, Mapping):
        return True
    props = schema.get("properties")
    if schema.get("type") == "object" or isinstance(props, Mapping):
        props = props if isinstance(props, Mapping) else {}
        if schema.get("additionalProperties", True) is not False:
            return False
        if set(schema.get("required", ())) != set(props):
            return False
        if not all(strict_compatible(sub) for sub in props.values()):
            return False
    children: list[Any] = [schema.get("items")]
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children.extend(schema.get(key) or ())
    for key in ("$defs", "definitions"):
        children.extend((schema.get(key) or {}).values())
    return all(strict_compatible(sub) for sub in children if sub is not None)
