"""Deep JSON equality (``==``, ``!=`` and ``in`` over arrays), linear even for shared parts.

A caller can bind values whose containers are shared (``x = [a, a]; a = [b, b]; ...``): a
tree walk over such a DAG is exponential in its depth. Comparison first walks plainly (fastest
for ordinary values); once it has visited ``_PLAIN_BUDGET`` container pairs it restarts with a
memo of the pairs already decided, keyed by ``(id(a), id(b))``, so each pair of containers is
compared once. Both values stay alive (and unmodified) during the call, so ids are stable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_NUMBER_TYPES = (int, float)
_PLAIN_BUDGET = 50_000  # as the validation scan's budget in jsonvalues


class _OverBudget(Exception):
    """Internal: the plain walk gave up; the memoised walk takes over."""


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: same type and value; arrays element-wise; objects by own key set."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is not tb or (ta is not list and ta is not dict):
        return _scalar_equal(a, b, ta, tb)
    try:
        return _plain(a, b, [_PLAIN_BUDGET])
    except _OverBudget:
        return _shared(a, b, {})


def json_in(a: Any, items: Iterable[Any]) -> bool:
    """Whether any of ``items`` deep-equals ``a``, one budget and one memo for all of them."""
    try:
        budget = [_PLAIN_BUDGET]
        return any(_plain_any(a, item, budget) for item in items)
    except _OverBudget:
        decided: dict[tuple[int, int], bool] = {}
        return any(_shared(a, item, decided) for item in items)


def _scalar_equal(a: Any, b: Any, ta: type, tb: type) -> bool:
    """Equality of two values that are not both lists or both objects."""
    if ta is tb:
        return a == b
    return ta in _NUMBER_TYPES and tb in _NUMBER_TYPES and a == b  # bool is not in it


def _plain_any(a: Any, b: Any, budget: list[int]) -> bool:
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is not tb or (ta is not list and ta is not dict):
        return _scalar_equal(a, b, ta, tb)
    return _plain(a, b, budget)


def _plain(a: Any, b: Any, budget: list[int]) -> bool:
    """Two lists or two dicts (of one type), walked as trees; scalar members compared inline."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _OverBudget
    if type(a) is list:
        if len(a) != len(b):
            return False
        pairs: Iterable[tuple[Any, Any]] = zip(a, b)
    else:
        if a.keys() != b.keys():
            return False
        pairs = ((item, b[key]) for key, item in a.items())
    for x, y in pairs:
        if x is y:
            continue
        tx = type(x)
        if tx is not type(y) or (tx is not list and tx is not dict):
            if not _scalar_equal(x, y, tx, type(y)):
                return False
        elif not _plain(x, y, budget):
            return False
    return True


def _shared(a: Any, b: Any, decided: dict[tuple[int, int], bool]) -> bool:
    """:func:`_plain_any` with every container pair's verdict remembered."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is not tb or (ta is not list and ta is not dict):
        return _scalar_equal(a, b, ta, tb)
    pair = (id(a), id(b))
    known = decided.get(pair)
    if known is not None:
        return known
    if ta is list:
        equal = len(a) == len(b) and all(_shared(x, y, decided) for x, y in zip(a, b))
    else:
        equal = a.keys() == b.keys() and all(_shared(v, b[k], decided) for k, v in a.items())
    decided[pair] = equal
    return equal
