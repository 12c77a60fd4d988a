"""Did-you-mean suggestions for misspelt names (step ids, contracts, flows, carry, builtins)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The candidate closest to ``word``, or None when nothing is close enough.

    Case differences count as close (``Draft`` for ``draft``), and ``word`` itself is never
    suggested.
    """
    pool = [c for c in dict.fromkeys(candidates) if c != word]
    if not pool or not word:
        return None
    folded = {c.lower(): c for c in pool}
    if word.lower() in folded:
        return folded[word.lower()]
    best = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    return best[0] if best else None


def suffix(suggestion: str | None) -> str:
    """``"; did you mean 'x'?"`` or the empty string, to end a message with."""
    return f"; did you mean '{suggestion}'?" if suggestion else ""
