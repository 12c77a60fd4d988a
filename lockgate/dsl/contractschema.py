"""JSON Schema (2020-12) emission for contracts: what a step's output contract becomes when it is
shipped to an agent (structured outputs) or to any outside validator.

This module owns the translation of type expressions into schema fragments and the assembly of
one contract's schema with the contracts it uses under ``$defs``. Which contracts those are is
the caller's business (:class:`lockgate.dsl.contracts.Contract` asks its contract set).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .types import AnyArray, AnyObject, ArrayOf, Enum, Named, OptionalOf, Scalar, TypeExpr

__all__ = ["SCHEMA_DIALECT", "contract_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def contract_schema(title: str | None, fields: Mapping[str, TypeExpr],
                    defs: Mapping[str, Mapping[str, TypeExpr]], *, strict: bool) -> dict[str, Any]:
    """The schema of an object with ``fields``, titled ``title`` when given, with each of
    ``defs`` (name -> fields, in the order given) under ``$defs`` when there are any.

    Optional fields are ``anyOf [T, null]`` and, unless ``strict``, not required; ``strict``
    lists every field as required and leaves out ``$schema`` (OpenAI structured outputs).
    """
    schema: dict[str, Any] = {} if strict else {"$schema": SCHEMA_DIALECT}
    if title:
        schema["title"] = title
    schema.update(_object_schema(fields, strict=strict))
    if defs:
        schema["$defs"] = {name: _object_schema(d, strict=strict) for name, d in defs.items()}
    return schema


def _schema(expr: TypeExpr) -> dict[str, Any]:
    if isinstance(expr, Scalar):
        return {"type": expr.name}
    if isinstance(expr, AnyObject):
        return {"type": "object"}
    if isinstance(expr, AnyArray):
        return {"type": "array"}
    if isinstance(expr, Enum):
        return {"type": "string", "enum": list(dict.fromkeys(expr.members))}
    if isinstance(expr, ArrayOf):
        return {"type": "array", "items": _schema(expr.element)}
    if isinstance(expr, Named):
        return {"$ref": f"#/$defs/{expr.name}"}
    if isinstance(expr, OptionalOf):
        return {"anyOf": [_schema(expr.inner), {"type": "null"}]}
    return {}


def _object_schema(fields: Mapping[str, TypeExpr], *, strict: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: _schema(t) for name, t in fields.items()},
        "required": [name for name, t in fields.items() if strict or not t.optional],
        "additionalProperties": False,
    }
