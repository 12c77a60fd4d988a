"""Plain-text helpers shared by the commands' human-readable output."""

from __future__ import annotations


def one_line(text: object) -> str:
    """``text`` with its line breaks and runs of spaces collapsed: an agent's multi-line message
    must not break a progress line, a table row or a list item (``--format json`` keeps it whole)."""
    return " ".join(str(text).split())


def with_frames(text: str) -> list[str]:
    """``text``, which may end with a Python agent's failure, as lines to print: the message on
    one line (line breaks collapsed, as :func:`one_line`), then the agent's frames below it as
    Python shows a traceback (see
    :func:`lockgate.engine.agents.python.split_traceback`), rather than flattened into it."""
    text = str(text)
    if "\n" not in text:  # no frames (and the agents package need not be imported for that)
        return [one_line(text)]
    from ..engine.agents.python import split_traceback

    message, frames = split_traceback(text)
    return [one_line(message), *frames.splitlines()]
