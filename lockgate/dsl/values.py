"""JSON values as the spec language sees them.

Specs, expressions and references work over plain JSON data: ``dict``, ``list``, ``str``,
``int``, ``float``, ``bool`` and ``None``. :data:`UNDEFINED` stands for "no value at all" (a
skipped step's output, ``prev`` at a fanout's first stage, a path that leads nowhere), which is
different from JSON ``null``.
"""

from __future__ import annotations

import math
from typing import Final


class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()


def integer_too_large(value: int) -> str | None:
    """What the integer ``value`` is ("integer of about 5001 digits") when it is too large to be
    a JSON number, or None when it is one.

    A JSON number is a double (JavaScript's): an integer beyond the largest double (about
    1.8e308) has no value there, so contracts and expressions both refuse it, naming its size
    rather than printing it (Python refuses to print more than 4300 digits).
    """
    try:
        float(value)
    except OverflowError:
        digits = math.floor(math.log10(abs(value))) + 1
        return f"integer of about {digits} digits"
    return None
