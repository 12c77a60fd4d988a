"""The ``version: 1`` spec language: parsing, validation, expressions, references, contracts.

Pure functions over text; no I/O beyond reading a spec, no engine, LSP or IPython imports.
"""

from __future__ import annotations

from .diagnostics import Diagnostic, Finding, Position, Range, Severity

__all__ = ["Diagnostic", "Finding", "Position", "Range", "Severity", "load", "LoadResult"]


def __getattr__(name: str):  # lazy: importing lockgate.dsl stays cheap
    if name in ("load", "LoadResult"):
        from . import loader

        return getattr(loader, name)
    raise AttributeError(name)
