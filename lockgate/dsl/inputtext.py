"""Flow inputs typed as text (``lockgate run --input KEY=VALUE``, ``%flow run --input``), read
by the type the flow declares for the key, so the command line and the notebook agree."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ContractError
from .types import Enum, Scalar, parse_type, strip_optional


class InputPairError(ValueError):
    """An ``--input`` text that is not ``KEY=VALUE``; the message names the option and the text,
    and each front end puts its own prefix before it."""


def inputs_from_pairs(pairs: Iterable[str], declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The inputs ``--input KEY=VALUE`` texts give, each VALUE read by :func:`input_from_text`
    as the type ``declared`` (the flow's ``input``) gives KEY.

    The text splits at its first ``=``. KEY is trimmed of surrounding whitespace: an input name
    never holds any, so ``"topic =x"`` is a slip for ``topic``, not another key. VALUE is kept
    verbatim, spaces included, as a string input takes its text verbatim: quoting is the only
    way to pass leading or trailing spaces, and trimming would lose them. A later pair for a
    KEY wins, as a pair wins over an ``--inputs`` mapping.

    Raises :class:`InputPairError` for a text with no ``=`` or an empty KEY.
    """
    declared = declared or {}
    inputs: dict[str, Any] = {}
    for pair in pairs:
        key, value = _split(pair)
        kind = declared.get(key)
        inputs[key] = input_from_text(value, kind if isinstance(kind, str) else None)
    return inputs


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    key = key.strip()
    if not sep:
        raise InputPairError(f"--input expects KEY=VALUE, got {pair!r}")
    if not key:
        raise InputPairError(f"--input expects KEY=VALUE, got {pair!r} (the KEY is empty)")
    return key, value


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
