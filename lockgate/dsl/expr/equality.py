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
    try:
        return _plain(a, b, [_PLAIN_BUDGET])
    except _OverBudget:
        return _shared(a, b, {})


def json_in(a: Any, items: Iterable[Any]) -> bool:
    """Whether any of ``items`` deep-equals ``a``, one budget and one memo for all of them."""
    try:
        budget = [_PLAIN_BUDGET]
        return any(_plain(a, item, budget) for item in items)
    except _OverBudget:
        decided: dict[tuple[int, int], bool] = {}
        return any(_shared(a, item, decided) for item in items)


def _scalar_equal(a: Any, b: Any, ta: type, tb: type) -> bool:
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in _NUMBER_TYPES and tb in _NUMBER_TYPES:
        return a == b
    return ta is tb and a == b


def _plain(a: Any, b: Any, budget: list[int]) -> bool:
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is not tb or (ta is not list and ta is not dict):
        return _scalar_equal(a, b, ta, tb)
    budget[0] -= 1
    if budget[0] < 0:
        raise _OverBudget
    if ta is list:
        return len(a) == len(b) and all(_plain(x, y, budget) for x, y in zip(a, b))
    return a.keys() == b.keys() and all(_plain(v, b[k], budget) for k, v in a.items())


def _shared(a: Any, b: Any, decided: dict[tuple[int, int], bool]) -> bool:
    """:func:`_plain` with every container pair's verdict remembered."""
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
