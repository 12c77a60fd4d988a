"""Did-you-mean among a pool of names, in time that does not grow with the pool for each question.

A :class:`NamePool` is prepared once (names deduplicated, case-folded, and trigram-indexed when
first needed) and answers each distinct question once. Up to :data:`FULL_COMPARE` names, a word
is compared with every one of them by :func:`difflib.get_close_matches`, as always; a larger pool
(a generated spec's thousands of step ids or contracts) is first cut down to the
:data:`SHORTLIST` names sharing the word's most informative trigrams. Comparing every name for
every unknown one made such specs quadratic: 3,000 steps each with a misspelt ``after`` took
113 s to validate, 4,000 contracts each naming a missing one 42 s.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable

__all__ = ["FULL_COMPARE", "SHORTLIST", "NamePool"]

FULL_COMPARE = 100
SHORTLIST = 20
#: A trigram held by more than this share of the pool, or by more than :data:`MAX_POSTINGS`
#: names, tells them apart too little to shortlist by, and would make every question scan a
#: large part of the pool.
COMMON_SHARE = 0.25
MAX_POSTINGS = 100
#: Longer words get no suggestion: no name is a typo away from them, and comparing them costs
#: time in proportion to their length.
MAX_WORD = 200
#: Answers remembered per pool; beyond this many distinct questions they are worked out again.
KEPT_ANSWERS = 10_000


class NamePool:
    """Names to suggest from; :meth:`closest` answers which one a misspelt word meant."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(name for name in dict.fromkeys(names) if isinstance(name, str))
        self._folded: dict[str, list[str]] = {}
        for name in self.names:
            self._folded.setdefault(name.lower(), []).append(name)
        self._grams: dict[str, tuple[int, ...]] | None = None
        self._answers: dict[tuple[str, float], str | None] = {}

    def closest(self, word: str, cutoff: float = 0.6) -> str | None:
        """The name closest to ``word`` (a name differing only in case first, then the best
        :func:`difflib.get_close_matches` with ``cutoff``), or None when nothing is close
        enough. ``word`` itself is never suggested."""
        key = (word, cutoff)
        if key in self._answers:
            return self._answers[key]
        answer = self._closest(word, cutoff)
        if len(self._answers) < KEPT_ANSWERS:
            self._answers[key] = answer
        return answer

    def _closest(self, word: str, cutoff: float) -> str | None:
        if not word or len(word) > MAX_WORD:
            return None
        same_letters = self._folded.get(word.lower(), [])
        other_cases = [name for name in same_letters if name != word]
        if other_cases:
            return other_cases[-1]
        if len(self.names) - (word in same_letters) <= FULL_COMPARE:
            pool = [name for name in self.names if name != word]
        else:
            pool = self._shortlist(word, cutoff)
        best = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
        return best[0] if best else None

    def _shortlist(self, word: str, cutoff: float) -> list[str]:
        """The :data:`SHORTLIST` names sharing the most informative trigrams with ``word``,
        among those whose length lets them reach ``cutoff`` (difflib's ratio is at most
        2*shorter/(shorter+longer))."""
        if self._grams is None:
            self._grams = _trigram_index(self.names)
        low, high = len(word) * cutoff / (2 - cutoff), len(word) * (2 - cutoff) / cutoff
        shared = Counter(i for gram in _trigrams(word) for i in self._grams.get(gram, ())
                         if low <= len(self.names[i]) <= high and self.names[i] != word)
        return [self.names[i] for i, _ in shared.most_common(SHORTLIST)]


def _trigram_index(names: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """trigram -> the positions in ``names`` of the names holding it, for the informative
    trigrams only (see :data:`COMMON_SHARE`)."""
    postings: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        for gram in _trigrams(name):
            postings.setdefault(gram, []).append(i)
    most = max(1, min(MAX_POSTINGS, int(len(names) * COMMON_SHARE)))
    return {gram: tuple(at) for gram, at in postings.items() if len(at) <= most}


def _trigrams(name: str) -> set[str]:
    padded = f"  {name.lower()} "
    return {padded[i:i + 3] for i in range(len(padded) - 2)}
