"""``evaluate`` steps: the engine runs an external checker itself (reference §1.7, §6.11).

The step runs synchronously inside ``advance``, with no intermediate persisted state: render
``in`` (recursively, like ``with``: a full reference keeps its JSON type; no ``in`` is ``null``),
call the run's evaluator, check its result against the fixed evaluator-result contract
``{status: closed|open|failed, children: any[], reason: string, score?: number, route?:
claude|codex}`` (``closed`` has no children, ``open`` at least one), then against ``out``. The
result is the step's output. Every failure is forced exhausted: no retry, and an evaluate step
has no ``on_fail`` (the validator refuses one), so it fails its scope.

**The evaluator** is pluggable: ``Engine(evaluator=...)`` takes a callable (sync or async)
``evaluator(command, input_value, timeout_ms, workspace)`` that returns the envelope
``{"ok": True, "result": value}`` or ``{"ok": False, "kind": "exit" | "timeout" | "parse",
"reason": str}``. The default is :func:`run_command`; ``evaluator=None`` configures none, and
every evaluate step then fails with "evaluate: no evaluate runner configured".

Because the command runs inside the engine transaction, a transaction replayed after a
concurrent write runs it again: evaluate commands should be checks without side effects.

**Under the runner** the engine's evaluator is an :class:`EvaluatorBridge`: the command is not run
inside the transition (which runs on the runner's event loop and would block it, and every other
run and agent call on it, for up to ``timeout_ms``) but awaited on the loop like an agent call
(:func:`evaluate_async`), the transition being abandoned unsaved and replayed with the result
(:func:`lockgate.engine.judge.settle`, the judge's machinery). Cancelling the run kills the
command's process group.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..dsl.contracts import ContractSet
from ..dsl.refs import render_value
from ..dsl.values import UNDEFINED
from ..errors import EngineError, RefError, UnstorableValue
from .advance import fail_attempt, output_source_failure, resolver, succeed
from .ensures import call_sync, contract_violations
from .judge import AnswerNeeded, SettlePass, call_async, settling
from .live import LiveRun, Located
from .model import StepState, now

Evaluator = Callable[[str, Any, int, "Path | None"], Any]

#: a timeout_ms beyond this (a week) is taken as this: a float of seconds cannot hold every int
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000
REASON_CHARS = 2000
SHELL = "/bin/sh"

NO_RUNNER = "evaluate: no evaluate runner configured"
_KIND_REASONS = {
    "exit": "command exited with a non-zero status ({})",
    "timeout": "command timed out ({})",
    "parse": "output was not valid JSON ({})",
}
RESULT_CONTRACT = "EvaluatorResult"
_RESULT_FIELDS = {
    "status": "closed|open|failed", "children": "array", "reason": "string",
    "score": "number?", "route": "claude|codex?",
}


@cache
def _result_contract() -> Any:
    """The evaluator-result contract, built on first use (its type parser is not needed to
    import the engine)."""
    return ContractSet.from_decls({RESULT_CONTRACT: _RESULT_FIELDS})[RESULT_CONTRACT]


#: Evaluate commands one engine call awaits off its transition (each costs a replay of it); any
#: more in the same call run in place, blocking, as without a runner.
MAX_AWAITED = 64


# -- the default runner -------------------------------------------------------------------------


def run_command(command: str, input_value: Any, timeout_ms: int, workspace: Path | None, *,
                max_stdout: int | None = None) -> dict[str, Any]:
    """The built-in evaluator: ``/bin/sh -c command`` in its own process group, with cwd the
    workspace (None: the engine process's cwd) and the environment inherited, JSON of
    ``input_value`` on stdin. Its whole stdout must be one JSON value (UTF-8, no NaN or
    Infinity, storable, at most ``max_stdout`` bytes: by default 32 MiB, as for command
    agents). On timeout the process group is killed (SIGTERM, a grace period, SIGKILL),
    grandchildren too. Raises when the shell cannot be started (the engine reports that as
    "evaluate: runner threw: ...")."""
    return call_sync(_run, command, _payload(input_value), timeout_ms, workspace, max_stdout)


async def _run(command: str, payload: bytes, timeout_ms: int, workspace: Path | None,
               max_stdout: int | None) -> dict[str, Any]:
    from .agents.process import (
        MAX_STDOUT,
        ProcessGroup,
        ProcessOutputTooLarge,
        ProcessTimeout,
    )

    max_stdout = MAX_STDOUT if max_stdout is None else max_stdout
    try:
        done = await ProcessGroup().run(
            [SHELL, "-c", command], stdin=payload, cwd=None if workspace is None else str(workspace),
            timeout=min(timeout_ms, MAX_TIMEOUT_MS) / 1000, max_stdout=max_stdout)
    except ProcessTimeout:
        return failed("timeout", f"after {timeout_ms} ms; its process group was killed")
    except ProcessOutputTooLarge:
        return failed("parse", f"more than {max_stdout} bytes on stdout; the command was killed")
    return _interpret(done)


def _interpret(done: Any) -> dict[str, Any]:
    from .agents.command import preview
    from .agents.jsontext import NotJSON, loads

    if done.returncode != 0:
        status = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"status {done.returncode}"
        tail = done.stderr_tail(REASON_CHARS)
        return failed("exit", f"{status}: {tail}" if tail else f"{status}, no stderr")
    if done.bad_utf8_at is not None:
        return failed("parse", f"stdout is not UTF-8 at byte {done.bad_utf8_at}")
    try:
        value = loads(done.stdout)
    except NotJSON as exc:
        return failed("parse", f"{exc}: {preview(done.stdout)}")
    value, problem = storable(value)
    if problem is not None:
        return failed("parse", problem)
    return {"ok": True, "result": value}


async def run_command_async(command: str, input_value: Any, timeout_ms: int, workspace: Path | None, *,
                            max_stdout: int | None = None) -> dict[str, Any]:
    """:func:`run_command` awaited on the running loop (the runner's path): cancelling it kills
    the command's process group."""
    return await _run(command, _payload(input_value), timeout_ms, workspace, max_stdout)


def _payload(input_value: Any) -> bytes:
    """The command's stdin: ``input_value`` as UTF-8 JSON."""
    return json.dumps(input_value, allow_nan=False, ensure_ascii=False).encode()


def failed(kind: str, reason: str) -> dict[str, Any]:
    """A failure envelope (for evaluators to build theirs with)."""
    return {"ok": False, "kind": kind, "reason": reason}


def storable(value: Any) -> tuple[Any, str | None]:
    """(``value`` as the plain JSON a store gives back, None), or (UNDEFINED, why no store
    could keep it: not JSON, NaN, U+0000, a lone surrogate, nested too deeply)."""
    from .store.codec import encode_storable

    try:
        text = encode_storable(value, "the result")
    except UnstorableValue as exc:
        return UNDEFINED, f"the result cannot be stored: {exc}"
    return json.loads(text), None


# -- the step -----------------------------------------------------------------------------------

#: What the evaluator answered so far in this engine call, by step, epoch, command and input: a
#: transition replayed after another process wrote the run reuses the answer instead of running
#: the command again (every replay ran it, so a run other processes kept writing could starve
#: its evaluate step, and the result that released it was never saved).
_ANSWERED: ContextVar[dict[str, tuple[Any, Exception | None, float]] | None] = ContextVar(
    "lockgate_evaluate_answered", default=None)


@contextmanager
def replays_share_answers() -> Iterator[None]:
    """Within the block (one engine call and its replays), each evaluate command runs once."""
    if _ANSWERED.get() is not None:
        yield
        return
    token = _ANSWERED.set({})
    try:
        yield
    finally:
        _ANSWERED.reset(token)


def _answer(run: LiveRun, st: StepState, evaluator: Evaluator, command: str, value: Any,
            timeout_ms: int) -> tuple[Any, Exception | None, float]:
    """(the evaluator's envelope, the Exception it raised instead, milliseconds it took)."""
    answered = _ANSWERED.get()
    key = json.dumps([st.key, st.epoch, command, value, timeout_ms], sort_keys=True, default=repr)
    if answered is not None and key in answered:
        return answered[key]
    call = Evaluation(st.key, replayable=not run.irreversible)
    current = _EVALUATING.set(call)
    started = time.perf_counter()
    try:
        envelope, error = call_sync(evaluator, command, value, timeout_ms, run.workspace()), None
    except Exception as exc:  # noqa: BLE001 - the step fails with it (see run_evaluate)
        envelope, error = None, exc
    finally:
        _EVALUATING.reset(current)
    answer = (envelope, error, call.took(started))
    if answered is not None:
        answered[key] = answer
    return answer


def run_evaluate(run: LiveRun, loc: Located, st: StepState) -> None:
    """Run one evaluate step to success or to a forced failure."""
    scope, cstep = loc.scope, loc.cstep
    spec = cstep.step.evaluate
    assert spec is not None and spec.command is not None and spec.timeout_ms is not None
    st.started_at = now()
    evaluator = run.env.evaluator
    if evaluator is None:
        _fail(run, loc, st, NO_RUNNER)
        return
    try:
        # a copy: the rendered value shares the run's live outputs and inputs, which an
        # evaluator changing its argument must not reach
        value = None if spec.in_ is None else copy.deepcopy(render_value(spec.in_, resolver(run, scope)))
    except RefError as exc:
        _fail(run, loc, st, f"evaluate: input render failed: {exc.message}")
        return
    workspace = run.workspace()
    if workspace is not None and not workspace.is_dir():
        # another machine's run (a shared PostgreSQL store): refuse here, failing nothing
        raise EngineError(f"evaluate step {st.key} runs its command in the run's workspace {workspace}, which "
                          "does not exist here; continue the run where it does", error_type="workspace_missing",
                          run_id=run.header.id, step_id=st.key, workspace=str(workspace))
    envelope, error, took = _answer(run, st, evaluator, spec.command, value, spec.timeout_ms)
    if error is not None:  # an evaluator is foreign code: its failure is the step's
        _event(run, st, spec.command, took, "threw")
        _fail(run, loc, st, f"evaluate: runner threw: {_clean(str(error) or type(error).__name__)}")
        return
    result, problem, outcome = _opened(envelope)
    _event(run, st, spec.command, took, outcome)
    if problem is not None:
        _fail(run, loc, st, problem)
        return
    failure = checked(run, cstep.step.out, result)
    if failure is None:
        failure = output_source_failure(run, scope, cstep, result)
    if failure is not None:
        fail_attempt(run, loc, st, failure, output=result, forced=True)
        return
    st.attempts.append({"attempt": len(st.attempts) + 1, "at": now(), "result": result})
    succeed(run, loc, st, result)


def _opened(envelope: Any) -> tuple[Any, str | None, str]:
    """(the result as plain JSON, None, "ok") of a success envelope; otherwise (UNDEFINED, the
    failure reason, the outcome: the envelope's kind, or "malformed")."""
    malformed = UNDEFINED, f"evaluate: malformed result envelope: {_shape(envelope)}", "malformed"
    if not isinstance(envelope, Mapping) or not isinstance(envelope.get("ok"), bool):
        return malformed
    if envelope["ok"]:
        if envelope.keys() != {"ok", "result"}:
            return malformed
        result, problem = storable(envelope["result"])
        if problem is not None:
            return UNDEFINED, _KIND_REASONS["parse"].format(problem), "parse"
        return result, None, "ok"
    kind, reason = envelope.get("kind"), envelope.get("reason")
    if envelope.keys() != {"ok", "kind", "reason"} or kind not in _KIND_REASONS or not isinstance(reason, str):
        return malformed
    return UNDEFINED, _KIND_REASONS[kind].format(_clean(reason)), kind


def checked(run: LiveRun, out: str | None, result: Any) -> dict[str, Any] | None:
    """The evaluator-result contract, its cross-field rules, then ``out``: the first failure."""
    violations = contract_violations(_result_contract(), result)
    if not violations:
        violations = _cross_field(result)
    if violations:
        return _schema_failure("the evaluator-result contract", violations)
    if out is not None:
        violations = contract_violations(run.cspec.contract(out), result)
        if violations:
            return _schema_failure(f"the {out} contract", violations)
    return None


def _cross_field(result: dict[str, Any]) -> list[dict[str, str]]:
    status, children = result["status"], result["children"]
    if status == "closed" and children:
        return [{"path": "result.children", "message": f"a closed result has no children, found {len(children)}"}]
    if status == "open" and not children:
        return [{"path": "result.children", "message": "an open result needs at least one child"}]
    return []


def _schema_failure(what: str, violations: list[dict[str, str]]) -> dict[str, Any]:
    summary = "; ".join(f"{v['path']}: {v['message']}" for v in violations[:5])
    return {"kind": "schema", "reason": f"evaluate: the result failed {what}: {summary}", "violations": violations}


def _fail(run: LiveRun, loc: Located, st: StepState, reason: str) -> None:
    fail_attempt(run, loc, st, {"kind": "evaluate", "reason": reason, "violations": []}, forced=True)


def _event(run: LiveRun, st: StepState, command: str, duration_ms: float, outcome: str) -> None:
    """An ``evaluated`` event: what ran, for how long, and how it ended (ok, exit, timeout,
    parse, malformed or threw)."""
    run.event("evaluated", st.key, command=command, outcome=outcome, duration_ms=round(duration_ms, 3))


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object with keys " + ", ".join(sorted(map(str, value))) if value else "an empty object"
    return f"a {type(value).__name__}, not an object"


def _clean(text: str) -> str:
    """``text`` made storable (it may come from a command's stderr: U+0000 and lone surrogates
    are replaced) and cut to REASON_CHARS characters."""
    text = text.replace("\0", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "..."


# -- the evaluator under a runner ---------------------------------------------------------------


@dataclass
class Evaluation:
    """The evaluate step calling its evaluator now, as an :class:`EvaluatorBridge` sees it:
    its key, whether the transition may still be abandoned and replayed (not once it did
    something outside the store: git worktrees, merges), and ``took_ms``, set by a bridge that
    answers with a result awaited earlier, so the ``evaluated`` event says how long the command
    really ran."""

    step: str
    replayable: bool = True
    took_ms: float | None = None

    def took(self, started: float) -> float:
        """Milliseconds the evaluation took: the bridge's figure, else since ``started``."""
        return self.took_ms if self.took_ms is not None else (time.perf_counter() - started) * 1000


_EVALUATING: ContextVar[Evaluation | None] = ContextVar("lockgate_evaluating", default=None)


@dataclass(frozen=True)
class EvaluateQuestion:
    """One evaluator call the engine needs answered, for :func:`evaluate_async`; ``key``
    identifies it across replays (the nth same call of a pass is the nth question)."""

    command: str
    input: Any
    timeout_ms: int
    workspace: Path | None
    step: str
    key: str


@dataclass(frozen=True)
class Evaluated:
    """What an evaluator answered (``envelope``) or raised (``error``), and in how long."""

    envelope: Any
    error: Exception | None
    took_ms: float


class EvaluationNeeded(AnswerNeeded):
    """An evaluate command's result is needed (see :class:`EvaluatorBridge`)."""

    def beyond_limit(self, gathered: int, state: SettlePass) -> None:
        if gathered >= MAX_AWAITED:  # each costs a replay: the rest of this call run in place
            state.in_place.add("evaluate")


class EvaluatorBridge:
    """The evaluator as the engine sees it while a runner drives it.

    Called by an evaluate step inside :func:`~lockgate.engine.judge.settle`, it answers with the
    result awaited so far for that call or raises :class:`EvaluationNeeded`; called anywhere
    else (a sync caller of the engine, another thread), or in a transition that can no longer be
    abandoned, it runs the evaluator in place, blocking, exactly as ``Engine(evaluator=...)``.
    """

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def __call__(self, command: str, input_value: Any, timeout_ms: int, workspace: Path | None) -> Any:
        state, call = settling(), _EVALUATING.get()
        if state is None or call is None or not call.replayable:
            return call_sync(self.evaluator, command, input_value, timeout_ms, workspace)
        base = json.dumps([call.step, command, input_value, timeout_ms, str(workspace)], sort_keys=True,
                          default=repr)
        nth = 0
        while f"{base}#{nth}" in state.asked:
            nth += 1
        question = EvaluateQuestion(command, input_value, timeout_ms, workspace, call.step, f"{base}#{nth}")
        state.asked.add(question.key)
        if question.key not in state.memo and "evaluate" in state.in_place:
            return call_sync(self.evaluator, command, input_value, timeout_ms, workspace)
        answered: Evaluated = state.answer(question, EvaluationNeeded)
        call.took_ms = answered.took_ms
        if answered.error is not None:
            raise answered.error
        return answered.envelope

    def __repr__(self) -> str:
        return f"EvaluatorBridge({self.evaluator!r})"


async def evaluate_async(evaluator: Evaluator, question: EvaluateQuestion) -> Evaluated:
    """Run ``evaluator`` for ``question`` on the running loop without blocking it: the built-in
    :func:`run_command` as a subprocess awaited here, an async evaluator awaited (cancelled with
    the run, see :func:`lockgate.engine.judge.call_async`), a sync one in a worker thread."""
    args = (question.command, question.input, question.timeout_ms, question.workspace)
    started = time.perf_counter()
    try:
        if evaluator is run_command:
            envelope, error = await run_command_async(*args), None
        else:
            envelope, error = await call_async(evaluator, *args), None
    except Exception as exc:  # re-raised in the step, which fails it as "runner threw"
        envelope, error = None, exc
    return Evaluated(envelope, error, (time.perf_counter() - started) * 1000)
