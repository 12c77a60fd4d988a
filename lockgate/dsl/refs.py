"""``${...}`` references (Stratum v1 §3): the one import for finding, classifying, resolving and
rendering them.

The work is split by responsibility, and this module re-exports it so callers need not know
where each part lives:

- :mod:`.refsyntax`: the syntax of one reference (the finding rule, the template grammar's
  parser, the canonical spelling);
- :mod:`.refscan`: the model (:class:`Ref`, :class:`Template`) and :func:`scan`, which never
  raises and is cached by text;
- :mod:`.refslips`: the friendly messages for malformed references, common slips and
  look-alikes such as ``{{input.x}}``;
- :mod:`.refrender`: :class:`Resolver` and rendering (:func:`render_text` for ``do``,
  :func:`render_value` for ``with``).

Rendering needs scanning, so the re-exports live here rather than in :mod:`.refscan` (that
would be an import cycle). Internals (the caches :func:`lockgate.dsl.loader.clear_caches`
clears, the helpers tests compare) are imported from the module that owns them.
"""

from __future__ import annotations

# Besides the public names (__all__), the type aliases stay importable from here.
from .refrender import (  # noqa: F401
    UNAVAILABLE,
    Resolve,
    Resolver,
    render_text,
    render_value,
    resolver,
    walk_path,
)
from .refscan import Ref, Template, scan
from .refsyntax import PathPart, RefKind, Span, format_path  # noqa: F401

__all__ = [
    "UNAVAILABLE",
    "Ref",
    "RefKind",
    "Resolver",
    "Template",
    "format_path",
    "render_text",
    "render_value",
    "resolver",
    "scan",
    "walk_path",
]

