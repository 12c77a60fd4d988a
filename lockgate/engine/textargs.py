"""Text a caller hands the engine to keep: a gate decision's rationale and who made it, a
checkpoint label.

Refused at once, naming the argument, when no store could keep it (U+0000, which PostgreSQL
refuses; a lone surrogate, which is not Unicode: what a command line's bytes that are not UTF-8
become), rather than by the store, naming a record the caller never saw.
"""

from __future__ import annotations

from ..errors import EngineError


def storable_text(text: str, what: str, *, max_bytes: int | None = None) -> str:
    """``text``, if a store can keep it (and it is at most ``max_bytes`` long in UTF-8);
    EngineError ``invalid_arguments`` naming ``what`` otherwise."""
    if "\0" in text:
        raise EngineError(f"{what} holds the character U+0000, which no store keeps; remove it",
                          error_type="invalid_arguments")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise EngineError(f"{what} is not valid Unicode: it holds a lone surrogate (on a command line: bytes "
                          "that are not UTF-8)", error_type="invalid_arguments") from None
    if max_bytes is not None and size > max_bytes:
        raise EngineError(f"{what} is {size} bytes long in UTF-8; it may have at most {max_bytes}",
                          error_type="invalid_arguments")
    return text


def decision_text(rationale: object, resolved_by: object) -> tuple[str, str]:
    """A gate decision's rationale and decider as the engine keeps them (text; "" and "human"
    when not given), refused (:func:`storable_text`) when no store could keep them."""
    return (storable_text(str(rationale or ""), "the decision's rationale"),
            storable_text(str(resolved_by or "human"), "who decided (resolved_by)"))
