"""The JSON Schema (2020-12) of a ``version: 1`` spec document, loaded once.

``spec.v1.schema.json`` is the single definition of the document structure: the structure pass
(:mod:`lockgate.dsl.structure`), the language server's completion and hover, and other editors
(through a ``# yaml-language-server: $schema=`` comment) all read it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "spec.v1.schema.json"


@cache
def spec_schema() -> dict[str, Any]:
    """The parsed schema (shared; do not mutate)."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def schema_path() -> str:
    """The file system path of the schema file, for ``$schema=`` modelines."""
    return str(resources.files(__package__).joinpath(SCHEMA_FILE))


def subschema(pointer: str) -> dict[str, Any]:
    """The subschema at a JSON pointer such as ``#/$defs/step``."""
    node: Any = spec_schema()
    for part in pointer.lstrip("#/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


__all__ = ["SCHEMA_FILE", "schema_path", "spec_schema", "subschema"]
