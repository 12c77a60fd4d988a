"""Rename a step id, contract, flow, carry variable or flow input field everywhere it is
mentioned: routing fields, ``${...}`` references, expressions and contract types.

A rename that would produce an invalid spec is refused with a message saying why: a name
outside the kind's charset, a reserved name, a name already taken in the same scope, or a step
id an expression could no longer spell (``result.my-step`` is not an expression).
"""

from __future__ import annotations

import re

import yaml

from lockgate.dsl.diagnostics import Position, Range, TextEdit

from .documents import Analysis
from .index import Occurrence, SymbolIndex, index_of

_STEP = re.compile(r"^[a-z][a-z0-9_-]*$")
_CONTRACT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLOW = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = frozenset({"__proto__", "constructor", "prototype"})
_KIND_NAMES = {"step": "step id", "contract": "contract", "flow": "flow", "carry": "carry variable", "input": "input field"}


class RenameError(ValueError):
    """A rename that is not possible; the message is shown to the user."""


def prepare(analysis: Analysis, pos: Position) -> tuple[Range, str]:
    """The range of the name under the cursor and the name itself; RenameError if nothing
    renameable is there."""
    if not analysis.parsed:
        raise RenameError("the document has YAML errors; fix them before renaming")
    occ = index_of(analysis).at(pos)
    if occ is None:
        raise RenameError("there is no step id, contract, flow, carry variable or input field here")
    return occ.range, occ.name


def rename(analysis: Analysis, pos: Position, new_name: str) -> list[TextEdit]:
    """The edits renaming the symbol under the cursor to ``new_name``."""
    prepare(analysis, pos)
    index = index_of(analysis)
    occ = index.at(pos)
    assert occ is not None
    if new_name == occ.name:
        return []
    _check(analysis, index, occ, new_name)
    return [TextEdit(o.range, new_name) for o in index.renamable(occ.key)]


def _check(analysis: Analysis, index: SymbolIndex, occ: Occurrence, new: str) -> None:
    kind = occ.kind
    what = _KIND_NAMES[kind]
    pattern = {"step": _STEP, "carry": _STEP, "contract": _CONTRACT, "flow": _FLOW, "input": _FIELD}[kind]
    if not pattern.fullmatch(new):  # not match: "$" also matches before a final newline
        raise RenameError(f"'{_shown(new)}' is not a valid {what} name (it must match {pattern.pattern})")
    if new in _RESERVED:
        raise RenameError(f"'{new}' is a reserved name")
    read_as = yaml.safe_load(new)  # as the dsl reads a plain scalar (YAML 1.1 core types)
    if not isinstance(read_as, str):
        raise RenameError(f"YAML reads '{new}' as {_yaml_word(read_as)}, not as a name")
    if kind == "step" and new == "input":
        raise RenameError("a step cannot be named 'input': ${input...} names the flow's input")
    if kind == "flow" and new == "entry":
        raise RenameError("'entry' is reserved under flows: it names the entry flow")
    if kind == "carry" and new in ("item", "prev", "input"):
        raise RenameError(f"a carry variable cannot be named '{new}'")
    if kind == "contract" and not new[0].isupper() and _used_as_type(index, occ):
        raise RenameError(f"'{new}' must start with a capital letter: contract types name it")
    new_key = (*occ.key[:-1], new)
    if index.definition(new_key) is not None:
        raise RenameError(f"a {what} named '{new}' already exists")
    if kind == "step" and occ.key[1] in _carry_flows(index, ("carry", new)) and _checked_for_carry(analysis, occ.key[1]):
        raise RenameError(f"'{new}' is a carry variable's name; step ids and carry names must differ")
    if kind == "carry" and any(_checked_for_carry(analysis, flow) and index.definition(("step", flow, new))
                               for flow in _carry_flows(index, occ.key)):
        raise RenameError(f"'{new}' is a step id; step ids and carry names must differ")
    if kind in ("step", "input") and not _IDENT.fullmatch(new) and _used_in_expression(index, occ):
        raise RenameError(f"'{new}' cannot be written in an expression (result.{new}); use letters, digits and _")


def _carry_flows(index: SymbolIndex, key: tuple[str, ...]) -> set[str]:
    """The flows declaring the carry variable ``key`` (``("flows", flow, "carry", name)``)."""
    return {str(o.path[1]) for o in index.references(key) if o.definition}


def _checked_for_carry(analysis: Analysis, flow: str) -> bool:
    """Whether the validator checks ``flow``'s carry names against its step ids (LG712): a carry
    clashes only with a step of its own flow (§1.9), and a flow known not to be the entry gets
    LG711 for declaring carry at all instead."""
    spec = analysis.ir
    entry = spec.entry_flow if spec is not None else None
    return entry is None or entry.name == flow


def _shown(name: str) -> str:
    """``name`` as a message quotes it: a newline or other control character escaped, so the
    message shows that it is there."""
    return name if name.isprintable() else repr(name)[1:-1]


def _yaml_word(value: object) -> str:
    """How YAML spells a non-string scalar (``null``, ``true``, ``false``, a number)."""
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _used_as_type(index: SymbolIndex, occ: Occurrence) -> bool:
    return any(
        o.path[:1] == ("contracts",) or (len(o.path) == 4 and o.path[2] == "input")
        for o in index.references(occ.key, include_definition=False)
    )


def _used_in_expression(index: SymbolIndex, occ: Occurrence) -> bool:
    from .context import is_expression_path

    return any(is_expression_path(o.path) and o.span for o in index.references(occ.key, include_definition=False))
