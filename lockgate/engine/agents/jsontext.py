"""Strict parsing of what an agent sends back: JSON text, token counts and costs.

Python's ``json.loads`` accepts ``NaN`` and ``Infinity`` (not JSON: such a value cannot be stored
or validated) and raises RecursionError, not a decode error, for text nested deeper than its
parser goes. Replies come from processes and servers nobody here controls, so both become a
:class:`NotJSON` with a one-line reason, and numbers meant as counts are read defensively.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any


class NotJSON(ValueError):
    """The text is not one JSON value; ``str(exc)`` says why in one line."""


def loads(text: str | bytes) -> Any:
    """``text`` as a JSON value; NotJSON for anything RFC 8259 does not allow (bytes must be
    UTF-8: ``json.loads`` would guess UTF-16 or UTF-32 from the first bytes)."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise NotJSON(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise NotJSON("nested too deeply to parse") from None
    except UnicodeDecodeError as exc:
        raise NotJSON(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except NotJSON:  # from _reject_constant or _finite
        raise
    except ValueError:  # Python's bound on the digits it converts to an int, whose advice is for Python
        raise NotJSON(f"an integer has more than {sys.get_int_max_str_digits():,} digits, "
                      "too many to read") from None


def _reject_constant(name: str) -> Any:
    raise NotJSON(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotJSON(f"{text[:40]} is out of the range of a JSON number")
    return number


_MAX_COUNT = 2 ** 53  # the largest integer every JSON reader keeps exact


def count(value: Any) -> int:
    """A token count from an untrusted reply: the number if it is one in 0..2**53, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not 0 <= value <= _MAX_COUNT:  # also false for NaN
        return 0
    return int(value)


def amount(value: Any) -> float:
    """A cost in USD from an untrusted reply: the number if it is a finite one >= 0, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else 0.0
