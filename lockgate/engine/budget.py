"""Budget ledgers: the flow's, a subflow's (its run step) and a task's (a ``do`` or fanout step).

A ledger enforces only the keys its budget declares (``usd``, ``tokens``, ``dispatches``,
``ms``), but every ledger records everything spent. *Reserve* (before a dispatch) debits one
dispatch only if no ledger would overflow (one dispatch too many, or a key already spent past
its limit); *settle* (after work ran) records the reported usage in every ledger even over the
limit, then says which ledger overflowed. The flow ledger wins over the subflow's, which wins
over the task's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from .live import LiveRun, Scope
from .model import StepState

KEYS = ("usd", "tokens", "dispatches", "ms")
USAGE_KEYS = frozenset({"usd", "tokens", "ms"})


class Ledger(NamedTuple):
    """One budget a dispatch debits (a tuple: built twice or thrice per dispatch)."""

    level: str  # "flow" | "subflow" | "task"
    spent: dict[str, float]
    limits: Mapping[str, float]
    owner: StepState | None


def ledgers(run: LiveRun, scope: Scope, task: StepState | None, limits: Mapping[str, float]) -> list[Ledger]:
    """The ledgers a dispatch in ``scope`` for ``task`` (the step or fanout record) debits."""
    out = [Ledger("flow", run.header.spent, run.root.flow.budget, None)]
    if scope.parent is not None:
        parent = run.steps[scope.parent]
        out.append(Ledger("subflow", parent.spent, run.root.flow.steps[scope.parent].budget, parent))
    if task is not None:
        out.append(Ledger("task", task.spent, limits, task))
    return out


def reserve(run: LiveRun, scope: Scope, task: StepState, limits: Mapping[str, float]) -> Ledger | None:
    """Reserve one dispatch for ``task`` in ``scope`` (see :func:`reserve_dispatch`)."""
    if scope.parent is None and not limits and not run.root.flow.budget:
        # no ledger has a limit to check: count the dispatch in the flow's and the task's
        for spent in (run.header.spent, task.spent):
            spent["dispatches"] = spent.get("dispatches", 0) + 1
        run.touch(task)
        return None
    return reserve_dispatch(run, ledgers(run, scope, task, limits))


def reserve_dispatch(run: LiveRun, books: list[Ledger]) -> Ledger | None:
    """Debit one dispatch from every ledger, or nothing and return the first that refuses it
    (see :func:`refuses`)."""
    for book in books:
        if refuses(book):
            return book
    for book in books:
        book.spent["dispatches"] = book.spent.get("dispatches", 0) + 1
        if book.owner is not None:
            run.touch(book.owner)
    return None


def refuses(book: Ledger) -> bool:
    """Whether ``book`` refuses one more dispatch: the check is ``spent + amount <= limit`` for
    every declared key, the amount being one dispatch, so a ledger already spent past its
    ``usd``, ``tokens`` or ``ms`` limit refuses it too."""
    return _overflowing(book, dispatch=True) is not None


def exhausted(book: Ledger, *, dispatch: bool = False) -> str:
    """Why ``book`` ran out, naming its level, the key and the limit ("flow budget exhausted:
    usd 1.2 spent of 1"); ``dispatch``: it refused one more dispatch, rather than overflowed
    when work settled."""
    key = _overflowing(book, dispatch=dispatch)
    if key is None:
        return f"{book.level} budget exhausted"
    return f"{book.level} budget exhausted: {key} {figure(book.spent.get(key, 0))} spent of {figure(book.limits[key])}"


def _overflowing(book: Ledger, *, dispatch: bool) -> str | None:
    """The first declared key of ``book`` past its limit (``dispatch``: with one more dispatch
    counted), or None."""
    spent = book.spent
    for key, limit in book.limits.items():
        if over(spent.get(key, 0) + (dispatch and key == "dispatches"), limit):
            return key
    return None


def over(spent: float, limit: float) -> bool:
    """Whether ``spent`` passes ``limit``. A sum of floats is not exact (0.1 + 0.1 + 0.1 is
    0.30000000000000004): one within a billionth of the limit is at it, not past it."""
    return spent > limit and not (isinstance(spent, float) and math.isclose(spent, limit, rel_tol=1e-9))


def figure(amount: float) -> str:
    """``amount`` as a message shows it: a whole number without decimals, else ten significant
    digits (enough for any limit, short of the float noise of a sum such as 0.4 * 3)."""
    if isinstance(amount, int) or float(amount).is_integer():
        return str(int(amount))
    return f"{amount:.10g}"


def charge(run: LiveRun, key: str, books: list[Ledger], spend: Mapping[str, float]) -> Ledger | None:
    """Settle what ``key`` spent in ``books`` and record it as a ``usage_debit`` event; the first
    ledger now over a declared limit (see :func:`settle`)."""
    over = settle(run, books, spend)
    run.event("usage_debit", key, usage=spend)
    return over


def settle(run: LiveRun, books: list[Ledger], usage: Mapping[str, float]) -> Ledger | None:
    """Record ``usage`` in every ledger; return the first ledger now over a declared limit."""
    if not usage:
        return None
    for book in books:
        for key, amount in usage.items():
            book.spent[key] = book.spent.get(key, 0) + amount
        if book.owner is not None:
            run.touch(book.owner)
    return next((book for book in books if _overflowing(book, dispatch=False) is not None), None)


def remaining(run: LiveRun, scope: Scope, key: str) -> float | None:
    """How much of ``key`` the flow's and (in a subflow) its run step's budgets still allow:
    the least left of those that declare it, or None when neither does."""
    left = [book.limits[key] - book.spent.get(key, 0) for book in ledgers(run, scope, None, {})
            if key in book.limits]
    return min(left) if left else None


#: Integers beyond this are not exact as JSON numbers elsewhere (and overflow a float sum).
MAX_SAFE_INTEGER = 2**53 - 1


def finite_number(value: Any) -> bool:
    """A number a budget can add: a finite float, or an int within JSON's safe range (checked
    without converting it to float, which overflows for huge ints); not a bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    return isinstance(value, float) and math.isfinite(value)


def reported_spend(usage: Mapping[str, Any]) -> dict[str, Any]:
    """What a reported usage adds to the ledgers: every key but ``dispatches``, which the engine
    counts itself when it dispatches."""
    return {k: v for k, v in usage.items() if k != "dispatches"}


def usage_problem(usage: Any) -> str | None:
    """Why a reported usage dict is unacceptable, or None. ``dispatches`` is checked apart."""
    fault = _usage_fault(usage)
    return None if fault is None else fault[1]


def _usage_fault(usage: Any) -> tuple[str, str] | None:
    """(where, why) a reported usage dict is unacceptable (see :func:`usage_problem`), or None."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        return "usage", "usage must be an object of budget keys"
    for key, value in usage.items():
        if key not in KEYS:
            return f"usage.{key}", f"unknown usage key {key!r} (expected one of {', '.join(KEYS)})"
        if not finite_number(value) or value < 0:
            return (f"usage.{key}",
                    f"usage {key} must be a finite number >= 0 (integers up to 2**53 - 1), got {value!r:.80}")
    return None


#: Why an attempt whose usage reported ``dispatches`` fails (semantics §6.4 step 4).
ENGINE_ACCOUNTED = "dispatches are engine-accounted; do not report them in usage (other keys were recorded)"


def invalid_usage(usage: Any) -> dict[str, Any] | None:
    """The failure of an attempt whose reported usage is unacceptable, or None. Checked before
    anything of it settles, so nothing of it is recorded (semantics §6.4 step 2)."""
    fault = _usage_fault(usage)
    if fault is None:
        return None
    reason = f"invalid usage (nothing recorded): {fault[1]}"
    return {"kind": "usage", "reason": reason, "violations": [{"path": fault[0], "message": reason}]}


def reported_dispatches(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The failure of an attempt whose usage reported ``dispatches``, which the engine counts
    itself (one per dispatch), or None. Checked once the other keys have settled, which still
    count (semantics §6.4 step 4, §8.18); a ``do`` step and a fanout item stage alike (§6.8)."""
    if not usage or "dispatches" not in usage:
        return None
    return {"kind": "usage", "reason": ENGINE_ACCOUNTED,
            "violations": [{"path": "usage.dispatches", "message": ENGINE_ACCOUNTED}]}
