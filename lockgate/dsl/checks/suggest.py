"""Did-you-mean suggestions for misspelt names (step ids, contracts, flows, carry, builtins)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from ..namepool import FULL_COMPARE, SHORTLIST, NamePool

__all__ = ["FULL_COMPARE", "SHORTLIST", "did_you_mean", "suffix"]


def did_you_mean(word: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The candidate closest to ``word``, or None when nothing is close enough.

    Case differences count as close (``Draft`` for ``draft``), and ``word`` itself is never
    suggested. The candidates are prepared once per distinct pool (:func:`_pool`): a spec asks
    about many unknown names among the same thousands of step ids or contracts, and preparing
    them again for each made such a spec quadratic.
    """
    return _pool(tuple(candidates)).closest(word, cutoff)


def suffix(suggestion: str | None) -> str:
    """``"; did you mean 'x'?"`` or the empty string, to end a message with."""
    return f"; did you mean '{suggestion}'?" if suggestion else ""


@lru_cache(maxsize=32)
def _pool(candidates: tuple[str, ...]) -> NamePool:
    return NamePool(candidates)
