"""Flow inputs typed as text (``lockgate run --input KEY=VALUE``, ``%flow run --input``), read
by the type the flow declares for the key, so the command line and the notebook agree."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ContractError
from .types import Enum, Scalar, parse_type, strip_optional


def input_from_text(text: str, declared: str | None) -> Any:
    """The value ``text`` stands for as an input declared ``declared`` (None: not declared).

    A ``string`` or enum input takes the text verbatim, so ``version=1.10`` stays ``"1.10"``
    and ``pr=42`` stays ``"42"``. Any other input takes the text as JSON when it parses
    (``42``, ``true``, ``[1, 2]``, ``{"a": 1}``; not ``NaN`` nor ``1e400``) and as the text itself otherwise, which the
    flow's input contract then refuses with a message naming the key and the type.
    """
    if declared is not None and _is_text(declared):
        return text
    try:
        return json.loads(text, parse_constant=_refuse, parse_float=_finite)
    except ValueError:
        return text


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(literal: str) -> float:
    """A JSON number with a fraction or exponent, refused (the text is kept) when it overflows
    to infinity, as ``1e400`` does."""
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{literal} is too large for a number")
    return value


def _is_text(declared: str) -> bool:
    try:
        kind = strip_optional(parse_type(declared))
    except ContractError:
        return False
    return isinstance(kind, Enum) or (isinstance(kind, Scalar) and kind.name == "string")
