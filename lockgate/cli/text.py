"""Plain-text helpers shared by the commands' human-readable output."""

from __future__ import annotations


def one_line(text: object) -> str:
    """``text`` with its line breaks and runs of spaces collapsed: an agent's multi-line message
    must not break a progress line, a table row or a list item (``--format json`` keeps it whole)."""
    return " ".join(str(text).split())
