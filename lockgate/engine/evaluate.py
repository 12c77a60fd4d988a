"""``evaluate`` steps: the engine runs an external checker itself (reference §1.7, §6.11).

Render ``in`` (recursively, like ``with``: a full reference keeps its JSON type; no ``in`` is
``null``), run the command through the run's evaluator, check its result against the fixed
evaluator-result contract ``{status: closed|open|failed, children: any[], reason: string,
score?: number, route?: claude|codex}`` (``closed`` has no children, ``open`` at least one), then
against ``out``. The result is the step's output. Every failure is forced exhausted: no retry,
and an evaluate step has no ``on_fail`` (the validator refuses one), so it fails its scope.

**The evaluator** is pluggable: ``Engine(evaluator=...)`` takes a callable (sync or async)
``evaluator(command, input_value, timeout_ms, workspace)`` that returns the envelope
``{"ok": True, "result": value}`` or ``{"ok": False, "kind": "exit" | "timeout" | "parse",
"reason": str}``. The default is :func:`run_command`; ``evaluator=None`` configures none, and
every evaluate step then fails with "evaluate: no evaluate runner configured".

**Never inside a transaction.** The reference runs the step with no intermediate persisted
state; Lockgate persists one, so that nothing reported is lost to a crash. The transition that
reaches the step renders its input and marks it ``running`` under a fresh token
(:func:`start`) and commits; the command then runs outside any transaction, and its answer is
settled in a transaction of its own (:func:`settle`, fenced by the token like a step's result),
which may start more. A process killed while a command runs loses nothing that was reported:
``resume`` starts the command again under a new token (:func:`restart`), so evaluate commands
should be checks without side effects. Who runs the command: the :class:`~lockgate.engine.Engine`
itself, before its call returns, by default (a server serialising engine calls leaves its lock
meanwhile, see ``Engine.around_commands``); the caller, when the call is made in a
:func:`deferred` block: the runner awaits the command on its loop like an agent call, so other
calls and runs go on, and cancelling the run kills the command's process group.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..dsl.contracts import ContractSet
from ..dsl.refs import render_value
from ..dsl.values import UNDEFINED
from ..errors import EngineError, RefError, StaleToken, UnstorableValue
from . import budget
from .advance import (
    fail_attempt,
    output_source_failure,
    resolver,
    spend_unbudgeted,
    succeed,
)
from .ensures import call_sync, contract_violations
from .judge import call_async
from .live import LiveRun, Located
from .model import RUN_RUNNING, RUNNING, StepState, now
from .results import refuse_cancelled, refuse_duplicate, refuse_finished

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


def start(run: LiveRun, loc: Located, st: StepState) -> None:
    """Start an evaluate step the run reached: render ``in`` and mark the step running under a
    fresh token (its command runs once this transaction has committed), or fail it now."""
    spec = loc.cstep.step.evaluate
    assert spec is not None and spec.command is not None and spec.timeout_ms is not None
    st.started_at = now()
    if run.env.evaluator is None:
        _fail(run, loc, st, NO_RUNNER)
        return
    try:
        value = None if spec.in_ is None else render_value(spec.in_, resolver(run, loc.scope))
    except RefError as exc:
        _fail(run, loc, st, f"evaluate: input render failed: {exc.message}")
        return
    st.command_input = value
    _issue(run, st, restarted=False)


def restart(run: LiveRun, key: str) -> None:
    """Issue a running evaluate step again under a fresh token (``resume``, ``revert``): its
    command runs again, and an answer from the process that started it before is refused."""
    _issue(run, run.steps[key], restarted=True)


def _issue(run: LiveRun, st: StepState, *, restarted: bool) -> None:
    """Mark ``st`` running under a fresh token; refused, failing nothing, where its command
    cannot run (the run's workspace is another machine's: a shared PostgreSQL store)."""
    workspace = run.workspace()
    if workspace is not None and not workspace.is_dir():
        raise EngineError(f"evaluate step {st.key} runs its command in the run's workspace {workspace}, which "
                          "does not exist here; continue the run where it does", error_type="workspace_missing",
                          run_id=run.header.id, step_id=st.key, workspace=str(workspace))
    run.issue(st, RUNNING)
    run.evaluating[st.key] = None
    run.event("evaluate_started", st.key, restarted=restarted)


def call_entry(run: LiveRun, key: str) -> dict[str, Any]:
    """Everything needed to run the command of running evaluate step ``key`` and report its
    answer: ``{step_id, token, command, input, timeout_ms, workspace, started_at}``."""
    st = run.steps[key]
    loc = run.locate(key)
    spec = loc.cstep.step.evaluate
    assert spec is not None and spec.timeout_ms is not None
    return {"step_id": key, "token": st.token, "command": spec.command, "input": st.command_input,
            "timeout_ms": _timeout_ms(run, loc, spec.timeout_ms), "workspace": run.header.workspace,
            "started_at": st.issued_at}


def _timeout_ms(run: LiveRun, loc: Located, timeout_ms: int) -> int:
    """The step's ``timeout_ms``, cut to what the flow's (and a subflow's) ``ms`` budget has
    left: a command is charged its running time, so it may not run past the budget."""
    left = budget.remaining(run, loc.scope, "ms")
    return timeout_ms if left is None else max(1, min(timeout_ms, math.ceil(left)))


@dataclass(frozen=True)
class Evaluated:
    """What an evaluator answered (``envelope``) or raised (``error``), and in how long."""

    envelope: Any
    error: Exception | None
    took_ms: float


def _arguments(call: Mapping[str, Any]) -> tuple[str, Any, int, Path | None]:
    """The evaluator's arguments for ``call``; the input is a copy, so an evaluator that changes
    its argument reaches nothing of the run."""
    workspace = call.get("workspace")
    return (call["command"], copy.deepcopy(call["input"]), call["timeout_ms"],
            Path(workspace) if workspace else None)


def evaluate_now(evaluator: Evaluator, call: Mapping[str, Any]) -> Evaluated:
    """Run ``evaluator`` for ``call`` (an entry of :func:`call_entry`) in this thread, blocking."""
    started = time.perf_counter()
    try:
        envelope, error = call_sync(evaluator, *_arguments(call)), None
    except Exception as exc:  # noqa: BLE001 - the step fails with it (see settle)
        envelope, error = None, exc
    return Evaluated(envelope, error, (time.perf_counter() - started) * 1000)


async def evaluate_async(evaluator: Evaluator, call: Mapping[str, Any]) -> Evaluated:
    """Run ``evaluator`` for ``call`` on the running loop without blocking it: the built-in
    :func:`run_command` as a subprocess awaited here, an async evaluator awaited (cancelled with
    the run, see :func:`lockgate.engine.judge.call_async`), a sync one in a worker thread.
    Cancelling this kills the built-in runner's process group."""
    args = _arguments(call)
    started = time.perf_counter()
    try:
        if evaluator is run_command:
            envelope, error = await run_command_async(*args), None
        else:
            envelope, error = await call_async(evaluator, *args), None
    except Exception as exc:  # noqa: BLE001 - the step fails with it (see settle)
        envelope, error = None, exc
    return Evaluated(envelope, error, (time.perf_counter() - started) * 1000)


def settle(run: LiveRun, key: Any, token: Any, answer: Evaluated) -> None:
    """Settle running evaluate step ``key`` with its command's ``answer``: its time is charged to
    the flow's (and a subflow's) ``ms`` budget, then success or a forced failure. Refused,
    changing nothing, when the run ended or the step no longer runs under ``token`` (cancelled,
    reset, or started again by a resume)."""
    st = _running(run, key, token)
    loc = run.locate(st.key)
    spec = loc.cstep.step.evaluate
    assert spec is not None and spec.command is not None
    if answer.error is not None:  # an evaluator is foreign code: its failure is the step's
        error = _clean(str(answer.error) or type(answer.error).__name__)
        result, problem, outcome = UNDEFINED, f"evaluate: runner threw: {error}", "threw"
    else:
        result, problem, outcome = _opened(answer.envelope)
    _event(run, st, spec.command, answer.took_ms, outcome)
    if not spend_unbudgeted(run, loc, st, {"ms": round(answer.took_ms, 3)}):
        return
    if problem is not None:
        _fail(run, loc, st, problem)
        return
    failure = checked(run, loc.cstep.step.out, result)
    if failure is None:
        failure = output_source_failure(run, loc.scope, loc.cstep, result)
    if failure is not None:
        fail_attempt(run, loc, st, failure, output=result, forced=True)
        return
    st.attempts.append({"attempt": len(st.attempts) + 1, "at": now(), "result": result})
    succeed(run, loc, st, result)


def runs_under(run: LiveRun, key: str, token: str) -> bool:
    """Whether evaluate step ``key`` of the running ``run`` runs its command under ``token``."""
    st = run.steps.get(key)
    return (run.header.status == RUN_RUNNING and st is not None and key in run.evaluating
            and st.token == token)


def _running(run: LiveRun, key: Any, token: Any) -> StepState:
    """The evaluate step running under ``token``; raise (as ``step_done`` refuses a result) if
    there is none."""
    rid = run.header.id
    refuse_cancelled(run)
    st = run.steps.get(key) if isinstance(key, str) else None
    if st is None or key.startswith("@"):
        raise EngineError(f"run {rid} has no step {key!r}", error_type="unknown_step", run_id=rid, step_id=key)
    if run.locate(key).cstep.kind != "evaluate":
        raise EngineError(f"step {key} is not an evaluate step: it runs no command", error_type="not_awaiting",
                          run_id=rid, step_id=key, step_status=st.status)
    refuse_duplicate(run, st, token, f"evaluate step {key} already settled the command's answer")
    refuse_finished(run)
    if not (isinstance(token, str) and token):
        raise StaleToken(f"missing token for evaluate step {key}", run_id=rid, step_id=key, reason="missing")
    if st.dropped or key not in run.evaluating or st.token != token:
        raise StaleToken(f"evaluate step {key} no longer runs the command started under this token (the step "
                         f"was reset, closed or started again; it is {st.status}); nothing changed",
                         run_id=rid, step_id=key, reason="stale", step_status=st.status)
    return st


#: Seconds past its timeout after which a running command is taken as left behind by a process
#: that is gone (its kill grace, and the clocks of other hosts, fit well within).
LEFT_BEHIND_GRACE_S = 60.0


def left_behind(response: Mapping[str, Any]) -> bool:
    """Whether every command ``response`` shows running (its ``evaluating`` entries) is past its
    timeout and the grace: no process still alive can be running them, and a resume should
    start them again."""
    running = response.get("evaluating")
    return bool(running) and all(_past_timeout(entry) for entry in running)


def _past_timeout(entry: Mapping[str, Any]) -> bool:
    started, timeout_ms = entry.get("started_at"), entry.get("timeout_ms")
    if not isinstance(started, int | float) or not isinstance(timeout_ms, int | float):
        return False
    return time.time() > started + timeout_ms / 1000 + LEFT_BEHIND_GRACE_S


# -- who runs the commands ------------------------------------------------------------------------

_DEFERRED: ContextVar[bool] = ContextVar("lockgate_evaluations_deferred", default=False)


class deferred:
    """Within the block, engine calls leave the commands of the evaluate steps they start to the
    caller (a runner, which awaits them on its loop): they are listed in the response's
    ``evaluate`` entries, to be answered with :meth:`~lockgate.engine.Engine.evaluated`. (A
    class, not a generator: the runner enters it for every engine call.)"""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _DEFERRED.set(True)

    def __exit__(self, *exc: object) -> None:
        _DEFERRED.reset(self._token)


def is_deferred() -> bool:
    """Whether the current engine call leaves evaluate commands to its caller."""
    return _DEFERRED.get()


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


