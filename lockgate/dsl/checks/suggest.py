"""Did-you-mean suggestions for misspelt names (step ids, contracts, flows, carry, builtins)."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

#: Up to this many candidates, difflib compares the word with each of them. A larger pool (a
#: generated spec's thousands of step ids) is first cut down to the candidates sharing the most
#: informative trigrams with the word, so a spec full of misspelt references is not quadratic:
#: 3,000 steps each with an unknown ``after`` took 113 s.
FULL_COMPARE = 100
SHORTLIST = 20
#: A trigram in more than this share of the pool tells the candidates apart too little to count.
COMMON_SHARE = 0.25


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
    if len(pool) > FULL_COMPARE:
        pool = _shortlist(word, tuple(pool))
    best = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    return best[0] if best else None


def suffix(suggestion: str | None) -> str:
    """``"; did you mean 'x'?"`` or the empty string, to end a message with."""
    return f"; did you mean '{suggestion}'?" if suggestion else ""


def _shortlist(word: str, pool: tuple[str, ...]) -> list[str]:
    """The :data:`SHORTLIST` candidates of ``pool`` sharing the most informative trigrams with
    ``word``."""
    index = _trigram_index(pool)
    shared = Counter(i for gram in _trigrams(word) for i in index.get(gram, ()))
    return [pool[i] for i, _ in shared.most_common(SHORTLIST)]


@lru_cache(maxsize=32)
def _trigram_index(pool: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """trigram -> the positions in ``pool`` of the names holding it, for the trigrams held by at
    most :data:`COMMON_SHARE` of the pool."""
    postings: dict[str, list[int]] = {}
    for i, name in enumerate(pool):
        for gram in _trigrams(name):
            postings.setdefault(gram, []).append(i)
    most = max(1, int(len(pool) * COMMON_SHARE))
    return {gram: tuple(at) for gram, at in postings.items() if len(at) <= most}


def _trigrams(name: str) -> set[str]:
    padded = f"  {name.lower()} "
    return {padded[i:i + 3] for i in range(len(padded) - 2)}
