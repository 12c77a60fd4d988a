"""Checking a result: its output contract, then its ``ensure`` predicates in order.

Expression and file predicates are evaluated by :mod:`lockgate.dsl.expr` (file predicates become
``file_exists``/``file_contains`` calls jailed to the workspace). A ``judged`` predicate asks the
configured judge, an agent callable ``judge(statement, stakes, result, input) -> {holds, reason}``
(sync or async); with no judge, or a judge that fails or answers malformed, it fails closed.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dsl.expr import Bindings
from ..dsl.expr import compile as compile_expr
from ..dsl.expr import reason as expr_reason
from ..dsl.refrender import SPACED, json_writer
from ..errors import ExprError, LockgateError
from .budget import finite_number
from .compiled import CEnsure, CExpr


@dataclass(frozen=True, slots=True)
class Subject:
    """The step a judge is asked about, for a judge that wants to know (an agent judge sends
    its task as that step, in its working directory). ``replayable`` is False once the
    transition asking has done something outside the store (git worktrees, merges): it must not
    be abandoned and replayed for the verdict (see :class:`lockgate.engine.judge.JudgeBridge`)."""

    step_id: str
    cwd: str | None = None
    replayable: bool = True


_SUBJECT: ContextVar[Subject | None] = ContextVar("lockgate_judged_subject", default=None)


def judged_subject() -> Subject | None:
    """The step the judge being called right now is asked about (None outside a judge call)."""
    return _SUBJECT.get()


def contract_violations(contract: Any, value: Any, root: str = "result") -> list[dict[str, str]]:
    """The contract's violations of ``value`` as ``{path, message}`` dicts (paths from ``root``)."""
    return [{"path": v.path, "message": v.message} for v in contract.check(value, root)]


def first_failed_ensure(
    ensures: tuple[CEnsure, ...],
    bindings: Mapping[str, Any],
    workspace: Path | None,
    judge: Callable[..., Any] | None,
    judged: list[dict[str, Any]] | None = None,
    subject: tuple[str, str | None, bool] | None = None,
) -> dict[str, Any] | None:
    """The first ensure that does not hold, as a violation dict, or None when all hold.

    ``judged``, when given, receives one record per ``judged`` ensure asked (``statement``,
    ``stakes``, ``holds``, ``reason`` and the judge's reported ``usage`` if any), for the
    caller's ``judged`` event and budget settlement; ``subject`` (step id, working directory,
    replayable) is what the judge may learn of the step through :func:`judged_subject`.
    """
    shared: Bindings | None = None  # validated once for all the predicates, on first read of each name
    for ensure in ensures:
        if ensure.kind == "judged":
            holds, reason, usage = _judged(ensure, bindings, judge, Subject(*subject) if subject else None)
            if judged is not None:
                record = {"statement": ensure.statement, "stakes": ensure.stakes, "holds": holds, "reason": reason}
                judged.append({**record, "usage": usage} if usage else record)
        else:
            if shared is None:
                shared = Bindings(bindings, workspace)
            holds, reason = _holds(ensure.expression, shared, None)
        if not holds:
            return _violation(ensure, reason, shared)
    return None


def _violation(ensure: CEnsure, reason: str | None, bindings: Bindings | None) -> dict[str, Any]:
    """The violation dict of a failed ensure. A predicate that evaluated to false names the
    values it read, so whoever retries sees what was wrong, not only that something was."""
    label = ensure.source if ensure.kind != "judged" else f"judged: {ensure.statement}"
    message = f'ensure "{label}" failed: {reason}'
    read = values_read(ensure.expression, bindings) if bindings is not None and reason == FALSE else {}
    if read:
        message += " (" + ", ".join(f"{path} = {value}" for path, value in read.items()) + ")"
    # "message" is the field every violation kind carries (contract ones add "path")
    violation = {"ensure": label, "kind": ensure.kind, "message": message, "reason": message, "detail": reason}
    return {**violation, "values": read} if read else violation


FALSE = "predicate evaluated to false"
#: At most this many values are shown, each cut to this many characters of JSON.
MAX_VALUES, MAX_VALUE_TEXT = 6, 80


def values_read(expression: Any, bindings: Bindings) -> dict[str, str]:
    """``{path as written: its value as short JSON text}`` for the paths into the checked work an
    expression reads (``result.path``, ``result.items[0]``, ``item``), in source order, at most
    :data:`MAX_VALUES`; a path that does not resolve (the predicate never reached it) is left out."""
    shown: dict[str, str] = {}
    for path in expression.member_paths:
        text = expression.source[path.span[0]:path.span[1]]
        if text in shown or path.root not in _VALUE_ROOTS or not path.path and path.root == "result":
            continue
        if len(shown) == MAX_VALUES:
            break
        try:
            value = compile_expr(text).evaluate(bindings)
        except ExprError:
            continue
        shown[text] = _short_json(value)
    return shown


#: Roots whose values are shown: the work being checked (``result``, a bare one being the whole
#: output) and a fanout's ``item`` and ``prev``; not ``input`` or other steps' outputs, which may
#: hold what a flow was given in confidence (a key, a customer's data).
_VALUE_ROOTS = frozenset({"result", "item", "prev"})
#: C1 controls and DEL, which JSON leaves raw: a terminal may act on them.
_RAW_CONTROLS = re.compile("[\x7f-\x9f]")


#: A value as JSON text spaced for reading, its numbers as JavaScript writes them (2, not 2.0).
_spaced_json = json_writer(SPACED)


def _short_json(value: Any) -> str:
    try:
        text = _spaced_json(value)
    except (TypeError, ValueError, RecursionError):  # not JSON all the way down; bindings refuse it anyway
        return "…"
    text = _RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text if len(text) <= MAX_VALUE_TEXT else text[:MAX_VALUE_TEXT - 1] + "…"


def until_holds(until: CExpr, bindings: Mapping[str, Any], workspace: Path | None) -> tuple[bool, str | None]:
    return _holds(until.expression, bindings, workspace)


def value_or_false(cexpr: CExpr, bindings: Mapping[str, Any], workspace: Path | None) -> tuple[Any, str | None]:
    """The engine adapter for ``when`` and ``set`` (reference §5.7): (the value, None), or
    (False, the error's reason) when the expression fails. The reason is for messages only: a
    ``when`` that fails skips its step and a ``set`` value that fails is false, as the reference
    says, but saying why keeps a broken expression from passing for an ordinary outcome."""
    try:
        return cexpr.expression.evaluate(bindings, workspace=workspace), None
    except ExprError as exc:
        return False, expr_reason(exc)


def when_skips(cexpr: CExpr, bindings: Mapping[str, Any], workspace: Path | None) -> str | None:
    """Why a ``when`` (a step's or a fanout stage's) skips its step, or None when it is true."""
    value, error = value_or_false(cexpr, bindings, workspace)
    if error is not None:
        return f'when "{cexpr.source}" failed: {error}'
    return None if value is True else not_true(cexpr.source)


def not_true(source: str) -> str:
    """Why a ``when`` that did not hold skipped its step."""
    return f'when "{source}" is not true'


def _holds(expression: Any, bindings: Mapping[str, Any], workspace: Path | None) -> tuple[bool, str | None]:
    try:
        return expression.holds(bindings, workspace=workspace)
    except ExprError as exc:
        return False, f"{exc.kind}: {exc.message}"


def _judged(ensure: CEnsure, bindings: Mapping[str, Any], judge: Callable[..., Any] | None,
            subject: Subject | None = None) -> tuple[bool, str, dict[str, float]]:
    """(holds, reason, usage) of asking ``judge``; usage is what a verdict's ``usage`` reported."""
    if judge is None:
        return False, "no judge is configured (judged predicates fail closed)", {}
    token = _SUBJECT.set(subject)
    try:
        verdict = call_sync(judge, ensure.statement, ensure.stakes, bindings.get("result"), bindings.get("input"))
    # A judge is foreign code: any failure fails closed. Exception only, never BaseException:
    # the runner's judge bridge raises a BaseException (VerdictNeeded) through here to await
    # the verdict outside the transition (see lockgate.engine.judge).
    except (LockgateError, Exception) as exc:  # what a failed judge agent spent is charged still
        return False, f"the judge failed: {exc}", judge_usage(getattr(exc, "usage", None))
    finally:
        _SUBJECT.reset(token)
    usage = judge_usage(verdict.get("usage")) if isinstance(verdict, Mapping) else {}
    if not isinstance(verdict, Mapping) or not isinstance(verdict.get("holds"), bool):
        answer = {k: v for k, v in verdict.items() if k != "usage"} if isinstance(verdict, Mapping) else verdict
        return False, f"the judge answered malformed {answer!r} (expected {{holds: bool, reason}})", usage
    reason = verdict.get("reason")
    if verdict["holds"]:
        return True, str(reason or ""), usage
    return False, str(reason or "the judge found the statement does not hold"), usage


def judge_usage(usage: Any) -> dict[str, float]:
    """The spend a verdict reports under ``usage``: its ``usd``, ``tokens`` and ``ms`` that are
    finite non-negative numbers, above zero (anything else is ignored: a judge's bookkeeping
    cannot fail the step it judges)."""
    if not isinstance(usage, Mapping):
        return {}
    return {key: value for key in ("usd", "tokens", "ms")
            if finite_number(value := usage.get(key)) and value > 0}


def call_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a sync or async callable from synchronous code, even inside a running event loop."""
    result = fn(*args)
    if not inspect.isawaitable(result):
        return result
    import asyncio  # only for async callables: most processes never need the event loop machinery

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(result))
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(_await(result))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _await(awaitable: Any) -> Any:
    return await awaitable
