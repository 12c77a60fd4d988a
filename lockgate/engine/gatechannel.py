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
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .termlines import (
    Ask,
    AskedLines,
    LineReader,
    PromptedLines,
    TerminalLines,
    fileno,
    write_prompt,
)

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
        """A one-paragraph description for a person: the gate, the revision limit that applies to
        it (worded as ``lockgate why`` words it: the gate's or the flow's ``max_rounds``), and what
        it follows. A gate with no such limit says the flow's round."""
        # imported here: explain pulls in the whole engine, which this module does not need
        from .explain import round_limit_words

        lines = [f"Gate {self.step_id!r} of run {self.run_id} is waiting for a decision."]
        limit = round_limit_words(self.response)
        if limit is not None:
            lines.append(f"{limit[0].upper()}{limit[1:]}.")
        elif self.round is not None:
            lines.append(f"Round {self.round}.")
        for key in ("prompt", "context", "previous"):
            if self.response.get(key):
                lines.append(f"{key}: {self.response[key]}")
        return " ".join(lines)


@dataclass(frozen=True)
class Decision:
    """A gate decision. ``applied`` is true when it was already made through the engine by
    someone else (the runner must not resolve the gate again, only continue). ``ended``: no
    decision was made, the run ended elsewhere while the gate waited (``cancelled``,
    ``killed``, ``failed`` or ``completed``); the gate stops waiting as if killed, and whoever
    shows it says how the run ended, not that the gate was decided."""

    outcome: str
    rationale: str = ""
    resolved_by: str = "human"
    applied: bool = False
    ended: str | None = None

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


def offered(response: Mapping[str, Any]) -> tuple[str, ...]:
    """The decisions a waiting gate offers: the engine's ``decisions`` for it (revise is left out
    when it would fail the run, ``revise_unavailable`` saying why), all three when it does not
    say."""
    listed = response.get("decisions")
    return tuple(o for o in OUTCOMES if o in listed) if isinstance(listed, (list, tuple)) else OUTCOMES


def decided_elsewhere(request: GateRequest, decision: Decision) -> str:
    """One line for a person: the gate was decided by someone else (or its run ended)."""
    if decision.ended:
        return f"run {request.run_id} was {decision.ended} elsewhere: gate {request.step_id} no longer waits"
    if decision.resolved_by == "system":
        return f"gate {request.step_id} was decided elsewhere: {decision.rationale}"
    return f"gate {request.step_id} was decided elsewhere: {decision.outcome} by {decision.resolved_by}"


class TerminalGates:
    """A person decides at the terminal: approve, revise (with a note) or kill, among the
    decisions the gate offers (a revise that would fail the run is not offered, and the prompt
    says why).

    Lines are read from standard input on the event loop, through a selector
    (:class:`TerminalLines`), when ``ask`` is the default ``input`` or ``watch_stdin`` is true and
    stdin has a file descriptor; otherwise ``ask`` reads each line in a worker thread, so
    running agents keep going either way. ``pause`` returns a context manager that suspends any
    live display meanwhile.

    With a ``store``, the prompt also watches the store (:class:`StoreGates`): when the gate is
    decided elsewhere (``lockgate gate approve`` in another terminal, a notebook, an MCP host)
    the prompt ends with a line saying so and the run goes on; a line typed after that is
    reported as not applied, never dropped in silence. (A line ``ask`` is still reading in its
    thread is reported when it arrives.)

    End of input at the decision prompt leaves the gate waiting; at the (optional) note prompt
    it is an empty note, and the decision stands.
    """

    CHOICES = {"a": "approve", "approve": "approve", "r": "revise", "revise": "revise",
               "k": "kill", "kill": "kill", "reject": "kill"}

    def __init__(self, *, ask: Ask = input, say: Callable[[str], Any] = print,
                 pause: Callable[[], AbstractContextManager[Any]] = nullcontext,
                 resolved_by: str = "human", store: Any = None, watch_stdin: bool | None = None,
                 prompt: Callable[[str], Any] | None = None, stdin: Any = None) -> None:
        self.ask = ask
        self.say = say
        self.pause = pause
        self.resolved_by = resolved_by
        self.store = store
        self.watch_stdin = ask is input if watch_stdin is None else watch_stdin
        self.prompt = prompt or write_prompt
        self.stdin = stdin
        self._lines: TerminalLines | None = None
        self._asked: AskedLines | None = None
        self._abandoned: set[str] = set()  # runs with a prompt ended by a decision made elsewhere
        self._lock = asyncio.Lock()

    async def decide(self, request: GateRequest) -> Decision | None:
        async with self._lock:  # one prompt at a time when several gates wait
            with self.pause():
                return await self._race(request)

    async def _race(self, request: GateRequest) -> Decision | None:
        """The decision typed, or one made elsewhere first (then said, and the prompt ended)."""
        reader = self._reader()
        conversation = asyncio.ensure_future(self._converse(request, reader))
        if self.store is None:
            return await conversation
        elsewhere = asyncio.ensure_future(StoreGates(self.store).decide(request))
        try:
            done, _ = await asyncio.wait({conversation, elsewhere}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (conversation, elsewhere):
                if not task.done():
                    task.cancel()
        if conversation in done:
            return conversation.result()
        decision = elsewhere.result()
        note = decided_elsewhere(request, decision)
        reader.interrupt()
        self.say(note)
        reader.abandon(lambda line: self.say(f"your answer {line!r} was not applied: {note}"))
        self._abandoned.add(request.run_id)
        return decision

    def run_ended(self, run_id: str) -> None:
        """Run ``run_id`` ended: stop reading the terminal for answers after a prompt of it was
        abandoned (what is typed now is for whatever reads the terminal next)."""
        if run_id in self._abandoned:
            self._abandoned.discard(run_id)
            if self._lines is not None and not self._abandoned:
                self._lines.stop()

    def not_applied(self, request: GateRequest, decision: Decision, refusal: Exception) -> None:
        """The decision typed lost to one made elsewhere at the same moment: say so."""
        why = str(refusal)
        self.say(why if "was not applied" in why else
                 f"your {decision.outcome} of gate {request.step_id} was not applied: {why}")

    def _reader(self) -> LineReader:
        """Where this prompt's lines come from: stdin through a selector, or ``ask``."""
        stdin = self.stdin if self.stdin is not None else sys.stdin
        fd = fileno(stdin) if self.watch_stdin else None
        if fd is None:
            if self._asked is None:
                self._asked = AskedLines(self.ask, self.say)
            return self._asked
        if self._lines is None or self._lines.fd != fd:
            self._lines = TerminalLines(fd)
        return PromptedLines(self._lines, self.prompt)

    async def _converse(self, request: GateRequest, lines: LineReader) -> Decision | None:
        self.say(request.summary())
        choices = offered(request.response)
        unavailable = request.response.get("revise_unavailable")
        if "revise" not in choices and unavailable:
            self.say(f"revise is not offered: {unavailable}")
        menu = " / ".join(f"[{o[0]}]{o[1:]}" for o in choices)
        letters = " or ".join(filter(None, (", ".join(o[0] for o in choices[:-1]), choices[-1][0])))
        try:
            while True:
                choice = (await lines.read(f"Decision {menu}: ")).strip().lower()
                outcome = self.CHOICES.get(choice)
                if outcome in choices:
                    break
                if outcome == "revise" and unavailable:
                    self.say(f"revise is not offered: {unavailable}")
                else:
                    self.say(f"Please answer {letters} (got {choice!r}).")
        except EOFError:
            self.say("No terminal input: the gate stays waiting.")
            return None
        if outcome == "revise":  # the note is what the step is told to change: it is required
            return await self._revision(lines)
        try:
            note = (await lines.read("Rationale (optional): ")).strip()
        except EOFError:  # nothing more to say: the decision stands, with no note
            note = ""
        return Decision(outcome, note, resolved_by=self.resolved_by)

    async def _revision(self, lines: LineReader) -> Decision | None:
        try:
            while not (note := (await lines.read("Revision note (what to change): ")).strip()):
                self.say("A revision needs a note saying what to change.")
        except EOFError:
            self.say("No revision note: the gate stays waiting.")
            return None
        return Decision("revise", note, resolved_by=self.resolved_by)


RUN_ENDED = ("completed", "flow_cancelled", "killed", "failed")
#: how a run ended (the type of the event that ended it), for a person
ENDED_WORDS = {"completed": "completed", "flow_cancelled": "cancelled", "killed": "killed", "failed": "failed"}


class StoreGates:
    """Waits for a decision made by any other process through the engine on the same store.

    It watches the run's durable event log (``Store.wait_for_change`` in a worker thread, woken
    at most every ``interval`` seconds so cancellation stays prompt) for the ``gate_resolved``
    event of the waiting gate, and returns it as an ``applied`` Decision: the runner continues
    from the engine's state and does not resolve the gate again. A run ended elsewhere (cancelled,
    killed) also ends the wait, with a Decision saying so (``ended``), nobody having decided.
    """

    def __init__(self, store: Any, *, interval: float = 0.5) -> None:
        self.store = store
        self.interval = interval

    async def decide(self, request: GateRequest) -> Decision | None:
        version = await asyncio.to_thread(self.store.current_version, request.run_id)
        while True:
            found = await asyncio.to_thread(self.lookup, request)
            if found is not None:
                return found
            version = await asyncio.to_thread(self.store.wait_for_change, request.run_id,
                                              version, self.interval)

    def lookup(self, request: GateRequest) -> Decision | None:
        """The decision the store recorded for ``request``'s gate since it last began to wait
        (or the run's end, as a Decision saying so), None while it waits."""
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
                                applied=True, ended=ENDED_WORDS[event.type])
        return None
