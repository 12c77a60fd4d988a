"""What a caller hands the engine to keep, and how much of it: a step's result, a reported
failure, a gate decision's rationale and who made it, a checkpoint label.

Text is refused at once, naming the argument, when no store could keep it (U+0000, which
PostgreSQL refuses; a lone surrogate, which is not Unicode: what a command line's bytes that are
not UTF-8 become) or when it is longer than its limit, rather than by the store, naming a record
the caller never saw.

A result is the agent's answer, so one that is too large is a wrong answer, not the caller's
error: :func:`oversize_result` says so, and the step retries like any schema failure. Its size is
that of the JSON text the stores keep, measured by the C encoder on every transition: a value
that is no JSON (a cycle included) fails at once there, and the store refuses it as such.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..errors import EngineError
from .store.codec import json_encoder

#: The largest result a step may report: its compact JSON text, in UTF-8 bytes. A command's
#: stdout is its result, so a command agent reads no more than this
#: (:data:`lockgate.engine.agents.process.MAX_STDOUT`).
MAX_RESULT_BYTES: Final = 32 * 1024 * 1024
#: A gate decision's rationale (a revise's note to the agent): a long review fits many times.
MAX_RATIONALE_BYTES: Final = 64 * 1024
#: Who decided a gate: a name, as long as the longest step id a store keeps.
MAX_DECIDER_BYTES: Final = 1000
#: The part of a reported failure that is kept (the rest is cut, saying so).
MAX_FAILURE_BYTES: Final = 64 * 1024

_encode = json_encoder(sort_keys=False, ensure_ascii=False)

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
    when not given), refused (:func:`storable_text`) when no store could keep them or they are
    longer than :data:`MAX_RATIONALE_BYTES` and :data:`MAX_DECIDER_BYTES`."""
    return (storable_text(str(rationale or ""), "the decision's rationale", max_bytes=MAX_RATIONALE_BYTES),
            storable_text(str(resolved_by or "human"), "who decided (resolved_by)", max_bytes=MAX_DECIDER_BYTES))


#: What no store keeps in a text (PostgreSQL refuses U+0000, and UTF-8 a lone surrogate).
UNSTORABLE_CHARS = re.compile("[\x00\ud800-\udfff]")


def mend_unstorable(text: str) -> str:
    """``text`` with what no store keeps (:data:`UNSTORABLE_CHARS`) replaced by U+FFFD: for text
    the engine must keep whatever it holds (a failure, a cancel's reason)."""
    return UNSTORABLE_CHARS.sub("\ufffd", text)


def reported_failure(failure: Any) -> Any:
    """``failure`` as the engine keeps it: as given, or its text cut to :data:`MAX_FAILURE_BYTES`
    in UTF-8 with a note saying so when it is longer, what no store keeps replaced (U+0000, a
    lone surrogate). Cut and mended, not refused: the runner reports what an agent's exception
    said, and such a message must fail the attempt, not the run's driver."""
    text = failure if type(failure) is str else str(failure)
    if UNSTORABLE_CHARS.search(text):
        failure = text = mend_unstorable(text)
    if len(text) * 4 <= MAX_FAILURE_BYTES:  # no character is longer than 4 bytes in UTF-8
        return failure
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_FAILURE_BYTES:
        return failure
    # the note counts in the limit, so a failure cut once (held, then reported again) stays as it is
    note = f" ... [cut: the failure text was {size} bytes long in UTF-8; the first {{}} are kept]"
    room = MAX_FAILURE_BYTES - len(note.format(MAX_FAILURE_BYTES))
    kept = text[:room].encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return kept + note.format(len(kept.encode("utf-8", "surrogatepass")))


def oversize_result(result: Any) -> dict[str, Any] | None:
    """The schema failure of a result whose JSON text is longer than :data:`MAX_RESULT_BYTES`
    in UTF-8, saying how long and what to do instead; None when it is not (or it is no JSON at
    all: what the store refuses is reported as such, see :func:`lockgate.engine.results.unstorable`)."""
    try:
        text = _encode(result)
    except (TypeError, ValueError, RecursionError):
        return None
    limit = MAX_RESULT_BYTES
    if 4 * len(text) <= limit:  # no character takes more than 4 bytes in UTF-8
        return None
    size = len(text) if text.isascii() else _utf8_size(text)
    if size <= limit:
        return None
    message = (f"the result is too large: its JSON text is {size} bytes in UTF-8, and a result may have at most "
               f"{limit}{_mib(limit)}; write large outputs to a file in the workspace and return its path")
    return {"kind": "schema", "reason": message, "violations": [{"path": "result", "message": message}]}


def _mib(size: int) -> str:
    """`` (32 MiB)`` for a whole number of MiB, else nothing."""
    return f" ({size // (1024 * 1024)} MiB)" if size % (1024 * 1024) == 0 else ""


def _utf8_size(text: str, chunk: int = 1 << 20) -> int:
    """The length of ``text`` in UTF-8 (a lone surrogate as 3 bytes), a chunk at a time."""
    return sum(len(text[i:i + chunk].encode("utf-8", "surrogatepass")) for i in range(0, len(text), chunk))
