"""Where the runner gets gate decisions from.

A :class:`GateChannel` answers one :class:`GateRequest` with a :class:`Decision`, or with None to
leave the gate waiting (the runner then stops and reports ``await_gate``; anyone can resolve the
gate later through the engine, e.g. ``lockgate gate approve RUN STEP``). Implementations:

- :class:`CallbackGates`: a Python function decides (notebooks, tests);
- :class:`TerminalGates`: a person at the terminal (the CLI);
- :class:`StoreGates`: waits for a decision that any other process makes through the engine on
  the same store (the notebook of a colleague, the CLI in another terminal, an MCP host).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

OUTCOMES = ("approve", "revise", "kill")


@dataclass(frozen=True)
class GateRequest:
    """A gate waiting for a decision: the engine's ``await_gate`` response, with its token."""

    run_id: str
    step_id: str
    token: str
    response: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_response(cls, response: Mapping[str, Any]) -> GateRequest:
        return cls(run_id=str(response["run_id"]), step_id=str(response["step_id"]),
                   token=str(response.get("token") or response.get("gate_token") or ""),
                   response=dict(response))

    @property
    def round(self) -> int | None:
        value = self.response.get("round")
        return value if isinstance(value, int) else None

    def summary(self) -> str:
        """A one-paragraph description for a person: the gate and what it follows."""
        lines = [f"Gate {self.step_id!r} of run {self.run_id} is waiting for a decision."]
        if self.round is not None:
            lines.append(f"Round {self.round}.")
        for key in ("prompt", "context", "previous"):
            if self.response.get(key):
                lines.append(f"{key}: {self.response[key]}")
        return " ".join(lines)


@dataclass(frozen=True)
class Decision:
    """A gate decision. ``applied`` is true when it was already made through the engine by
    someone else (the runner must not resolve the gate again, only continue)."""

    outcome: str
    rationale: str = ""
    resolved_by: str = "human"
    applied: bool = False

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"a gate decision is approve, revise or kill, not {self.outcome!r}")


@runtime_checkable
class GateChannel(Protocol):
    async def decide(self, request: GateRequest) -> Decision | None: ...


DecideFn = Callable[[GateRequest], Any]


class CallbackGates:
    """Decisions from ``fn(request)`` (sync or async), returning a Decision, an outcome string
    (``"approve"``), a ``(outcome, rationale)`` pair, or None to leave the gate waiting."""

    def __init__(self, fn: DecideFn, *, resolved_by: str = "human") -> None:
        self.fn = fn
        self.resolved_by = resolved_by

    async def decide(self, request: GateRequest) -> Decision | None:
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return as_decision(answer, resolved_by=self.resolved_by)


def as_decision(answer: Any, *, resolved_by: str = "human") -> Decision | None:
    if answer is None or isinstance(answer, Decision):
        return answer
    if isinstance(answer, str):
        return Decision(answer, resolved_by=resolved_by)
    if isinstance(answer, tuple) and len(answer) == 2:
        return Decision(answer[0], str(answer[1]), resolved_by=resolved_by)
    raise TypeError(f"a gate callback returns a Decision, an outcome, (outcome, rationale) or "
                    f"None, not {answer!r}")


Ask = Callable[[str], str]


class TerminalGates:
    """A person decides at the terminal: approve, revise (with a note) or kill.

    ``ask`` reads one line (``input`` by default) and runs in a worker thread so running agents
    keep going; ``pause`` returns a context manager that suspends any live display meanwhile.
    End of input (no terminal) leaves the gate waiting.
    """

    CHOICES = {"a": "approve", "approve": "approve", "r": "revise", "revise": "revise",
               "k": "kill", "kill": "kill", "reject": "kill"}

    def __init__(self, *, ask: Ask = input, say: Callable[[str], Any] = print,
                 pause: Callable[[], AbstractContextManager[Any]] = nullcontext,
                 resolved_by: str = "human") -> None:
        self.ask = ask
        self.say = say
        self.pause = pause
        self.resolved_by = resolved_by
        self._lock = asyncio.Lock()

    async def decide(self, request: GateRequest) -> Decision | None:
        async with self._lock:  # one prompt at a time when several gates wait
            with self.pause():
                return await asyncio.to_thread(self._prompt, request)

    def _prompt(self, request: GateRequest) -> Decision | None:
        self.say(request.summary())
        try:
            while True:
                choice = self.ask("Decision [a]pprove / [r]evise / [k]ill: ").strip().lower()
                outcome = self.CHOICES.get(choice)
                if outcome:
                    break
                self.say(f"Please answer a, r or k (got {choice!r}).")
            label = "Revision note" if outcome == "revise" else "Rationale (optional)"
            note = self.ask(f"{label}: ").strip()
        except EOFError:
            self.say("No terminal input: the gate stays waiting.")
            return None
        return Decision(outcome, note, resolved_by=self.resolved_by)


RUN_ENDED = ("completed", "flow_cancelled", "killed", "failed")


class StoreGates:
    """Waits for a decision made by any other process through the engine on the same store.

    It watches the run's durable event log (``Store.wait_for_change`` in a worker thread, woken
    at most every ``interval`` seconds so cancellation stays prompt) for the ``gate_resolved``
    event of the waiting gate, and returns it as an ``applied`` Decision: the runner continues
    from the engine's state and does not resolve the gate again. A run ended elsewhere (cancelled,
    killed) also ends the wait.
    """

    def __init__(self, store: Any, *, interval: float = 0.5) -> None:
        self.store = store
        self.interval = interval

    async def decide(self, request: GateRequest) -> Decision | None:
        version = await asyncio.to_thread(self.store.current_version, request.run_id)
        while True:
            found = await asyncio.to_thread(self._lookup, request)
            if found is not None:
                return found
            version = await asyncio.to_thread(self.store.wait_for_change, request.run_id,
                                              version, self.interval)

    def _lookup(self, request: GateRequest) -> Decision | None:
        events = self.store.events(request.run_id)
        since = max((e.seq for e in events
                     if e.step_id == request.step_id and e.type == "gate_waiting"), default=0)
        for event in events:
            if event.seq <= since:
                continue
            if event.step_id == request.step_id and event.type == "gate_resolved":
                detail = event.detail
                outcome = detail.get("decision")
                return Decision(outcome if outcome in OUTCOMES else "kill",
                                str(detail.get("rationale") or ""),
                                str(detail.get("resolved_by") or "human"), applied=True)
            if event.type in RUN_ENDED:
                return Decision("kill", f"the run ended elsewhere ({event.type})", "system",
                                applied=True)
        return None
