"""JSON values as the spec language sees them.

Specs, expressions and references work over plain JSON data: ``dict``, ``list``, ``str``,
``int``, ``float``, ``bool`` and ``None``. :data:`UNDEFINED` stands for "no value at all" (a
skipped step's output, ``prev`` at a fanout's first stage, a path that leads nowhere), which is
different from JSON ``null``.
"""

from __future__ import annotations

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
