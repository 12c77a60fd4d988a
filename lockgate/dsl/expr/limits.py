"""The resource limits of the expression language (semantics reference, section 5.3).

Exceeding any of them is an ``ExprError`` of kind ``resource_limit``, except the file size cap,
which is a ``validation`` error as in the reference. ``MAX_JSON_TEXT_LENGTH`` is Lockgate's own
(the reference has no cap on ``str()`` nor on ``+``). So is running out of memory anyway: it is
a ``resource_limit`` too, never a type error.
"""

from __future__ import annotations

from typing import Final

MAX_DEPTH: Final = 128
"""Nesting depth: each parenthesised group, unary operator and call argument adds a level."""

MAX_NODES: Final = 4096
"""Syntax nodes: literals, identifiers, members, indexes, calls, unary and binary operators."""

MAX_JSON_DEPTH: Final = 128
"""Nesting depth of a bound value, checked on the whole value whenever its identifier is read."""

MAX_PATTERN_LENGTH: Final = 256
"""``matches`` pattern length in UTF-16 code units."""

MAX_MATCH_INPUT_LENGTH: Final = 4096
"""``matches`` subject length in UTF-16 code units."""

MAX_FILE_BYTES: Final = 16 * 1024 * 1024
"""The largest file ``file_contains`` reads."""

MAX_JSON_TEXT_LENGTH: Final = 16 * 1024 * 1024
"""The longest text an expression builds, in UTF-16 code units: the JSON text ``str()`` of an
array or object builds (a bound value with shared parts can stand for an exponentially long
text) and the string ``+`` joins (a 16 MiB result added to itself a hundred times is 1.6 GiB);
the same 16 Mi as files."""

MAX_QUANTIFIERS: Final = 32
"""Quantifiers allowed in one ``matches`` pattern by the safety filter."""
