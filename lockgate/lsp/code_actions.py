"""Quick fixes for dsl diagnostics, and the "show flow graph" command.

Each action is a minimal text edit computed from the analysis: the diagnostic's own ``fix``
(did-you-mean), a ``max_rounds`` for a flow whose gate can revise (LG506), a stub for an
unknown contract (LG302), the missing ``after`` of a step whose ``when``, ``set`` value or
stage ``when`` reads a step it does not depend on (LG904), and a subflow call's missing or
unknown ``with`` inputs (LG703). The lines a fix inserts end as the document's own lines do
(:func:`_newline`): editors that apply edits verbatim would otherwise mix CRLF and LF.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lockgate.dsl.diagnostics import Diagnostic, Position, Range, TextEdit

from .documents import Analysis
from .fields import inputs_to_pass, step_at

SHOW_GRAPH = "lockgate.showFlowGraph"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WHEN_READ = re.compile(r"result\s*\.\s*([a-z][a-z0-9_-]*)")


@dataclass(frozen=True, slots=True)
class Action:
    title: str
    edits: tuple[TextEdit, ...]
    diagnostic: Diagnostic | None = None
    preferred: bool = False


def quick_fixes(analysis: Analysis, rng: Range) -> list[Action]:
    """Fixes for the diagnostics overlapping ``rng``."""
    out: list[Action] = []
    for diag in analysis.diagnostics:
        if diag.range.end < rng.start or rng.end < diag.range.start:
            continue
        if diag.fix is not None:
            out.append(Action(diag.fix.title, diag.fix.edits, diag, preferred=True))
        maker = _MAKERS.get(diag.code)
        action = maker(analysis, diag) if maker and analysis.parsed else None
        if action is not None:
            out.append(action)
    return out


def _add_max_rounds(analysis: Analysis, diag: Diagnostic) -> Action | None:
    if len(diag.path) < 2 or diag.path[0] != "flows":
        return None
    outline = analysis.outline
    line = outline.line_of.get(diag.path[:2])
    info = outline.lines[line] if line is not None else None
    if info is None or info.key is None or _inline(analysis, line) is not None:
        return None  # a flow written inline ({input: ..., steps: [...]}) takes no line under it
    child = _child_indent(analysis, line, info.key_col)
    edit = TextEdit(Range(Position(line + 1, 0), Position(line + 1, 0)), f"{' ' * child}max_rounds: 3{_newline(analysis)}")
    return Action(f"Add max_rounds to flow '{diag.path[1]}'", (edit,), diag)


def _contract_stub(analysis: Analysis, diag: Diagnostic) -> Action | None:
    spec = analysis.ir
    name = _covered(analysis, diag.range)
    if spec is None or not _NAME.fullmatch(name) or name in spec.contracts:
        return None
    outline, newline = analysis.outline, _newline(analysis)
    line = outline.line_of.get(("contracts",))
    if line is None:
        stub = newline.join(("contracts:", f"  {name}:", "    result: string", ""))
        edit = TextEdit(Range(Position(0, 0), Position(0, 0)), stub)
        top = outline.line_of.get(("flows",))
        if top is not None:
            edit = TextEdit(Range(Position(top, 0), Position(top, 0)), edit.new_text)
        return Action(f"Create contract '{name}'", (edit,), diag)
    indent = _child_indent(analysis, line, 0)
    stub = f"{' ' * indent}{name}:{newline}{' ' * (indent * 2)}result: string"
    inline = _inline(analysis, line)
    if inline is not None:  # `contracts: {}` becomes a block holding the stub; other inline maps are left
        start, value = inline
        if value != "{}":
            return None
        colon = analysis.outline.lines[line].colon + 1  # the spaces before `{}` go with it
        edit = TextEdit(Range(Position(line, colon), Position(line, start + len(value))), newline + stub)
        return Action(f"Create contract '{name}'", (edit,), diag)
    end = outline.ends[line] + 1
    return Action(f"Create contract '{name}'", (TextEdit(Range(Position(end, 0), Position(end, 0)), stub + newline),),
                  diag)


def _add_after(analysis: Analysis, diag: Diagnostic) -> Action | None:
    """LG904: the step whose ``when``, ``set`` value or fanout stage ``when`` reads
    ``result.<target>`` runs after ``target``: added to the step's own ``after`` (a key inside
    ``set`` or a stage is not a step's), in the style the step is written in."""
    read = _WHEN_READ.search(_covered(analysis, diag.range))
    found = step_at(analysis.ir, diag.path) if analysis.ir is not None else None
    if read is None or found is None:
        return None
    target, step_path = read.group(1), diag.path[:4]
    source = analysis.source_map
    if source.exists((*step_path, "after")):
        edit = _extend_after(analysis, source.value_range((*step_path, "after")), target)
    else:
        edit = _new_after(analysis, step_path, diag.path[:5], target)
    return Action(f"Run after '{target}'", (edit,), diag) if edit is not None else None


def _new_after(analysis: Analysis, step_path: tuple[Any, ...], key_path: tuple[Any, ...], target: str) -> TextEdit | None:
    """``after: [target]`` added to a step that has no ``after``: first in a flow mapping
    (``{after: [target], id: ...}``); in a block mapping, on a line of its own before the key
    that reads ``target``, or, when that key opens the item (``- when: ...``), before it on the
    dash line. An anchor or tag (``- &s``, ``- !!map``) before the mapping stays where it is."""
    start = analysis.source_map.value_range(step_path).start
    start, props = _past_properties(analysis, start)
    opening = _covered(analysis, Range(start, Position(start.line, start.character + 1)))
    if opening == "{":
        at = Position(start.line, start.character + 1)
        return TextEdit(Range(at, at), f"after: [{target}], ")
    if opening in ("*", "[") or (opening == "" and not props):
        return None  # an alias or no mapping: no place to write a key
    newline = _newline(analysis)
    line = analysis.outline.line_of.get(key_path)
    info = analysis.outline.lines[line] if line is not None else None
    if info is not None and info.dash is None and info.key is not None:
        at = Position(line, 0)
        return TextEdit(Range(at, at), f"{' ' * info.key_col}after: [{target}]{newline}")
    if props:
        return None  # the key opens the item after an anchor or tag: `after` would take them
    return TextEdit(Range(start, start), f"after: [{target}]{newline}{' ' * start.character}")


_PROPERTY = re.compile(r"[&!]\S*\s*")


def _past_properties(analysis: Analysis, start: Position) -> tuple[Position, bool]:
    """Where the node at ``start`` begins past its anchor and tag (``&s !!map``), and whether it
    had any."""
    text = analysis.lines.line(start.line)
    column = start.character
    while (found := _PROPERTY.match(text, column)) is not None:
        column = found.end()
    return Position(start.line, column), column != start.character


def _extend_after(analysis: Analysis, rng: Range, target: str) -> TextEdit | None:
    """``target`` appended to the ``after`` list at ``rng``: inside ``[...]`` after its last
    item (or the comma that ends it), or as a new ``- target`` item below a block-style list."""
    written = _covered(analysis, rng)
    if written.startswith("[") and written.endswith("]"):
        close = Position(rng.end.line, rng.end.character - 1)
        inner = _COMMENT.sub(lambda m: " " * len(m.group()), written[1:-1]).rstrip()
        if not inner.strip():
            return TextEdit(Range(close, close), target)
        at = analysis.lines.position(analysis.lines.offset(rng.start) + 1 + len(inner))
        end = close if at.line == close.line else at  # spaces before a `]` on the same line go
        return TextEdit(Range(at, end), f" {target}" if inner.endswith(",") else f", {target}")
    if written.startswith("-"):  # a block list: after its last item's line, at its items' column
        eol = Position(rng.end.line, len(analysis.lines.line(rng.end.line)))
        return TextEdit(Range(eol, eol), f"{_newline(analysis)}{' ' * rng.start.character}- {target}")
    return None


#: A comment inside a flow list of step ids (which hold no ``#``).
_COMMENT = re.compile(r"(?:^|(?<=\s))#[^\r\n]*", re.MULTILINE)


def _newline(analysis: Analysis) -> str:
    """The document's line ending (its first line's), for the lines a fix inserts."""
    text = analysis.text
    end = text.find("\n")
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _inline(analysis: Analysis, line: int) -> tuple[int, str] | None:
    """(its column, the text) of the value written on the key line ``line`` after its colon
    (less a comment and surrounding spaces); None when the line opens a block (or is no key)."""
    info = analysis.outline.lines[line]
    if info is None or info.colon is None:
        return None
    raw = analysis.outline.raw[line]
    after = _inline_value(raw, info.colon)
    value = after.strip()
    return (info.colon + 1 + after.index(value), value) if value else None


def _inline_value(raw: str, colon: int) -> str:
    """What follows a key's colon on its line, less a trailing comment."""
    return raw[colon + 1 :].split("#", 1)[0]


def _with_inputs(analysis: Analysis, diag: Diagnostic) -> Action | None:
    """LG703: a ``with`` key that is no input (and has no did-you-mean) is removed; a ``with``
    missing inputs gets them, from the caller's input of the same name where there is one."""
    if len(diag.path) >= 2 and diag.path[-2] == "with":
        return _remove_key(analysis, diag) if diag.fix is None else None
    found = step_at(analysis.ir, diag.path) if analysis.ir is not None and diag.path[-1:] == ("with",) else None
    if found is None:
        return None
    flow, step = found
    given = step.with_ if isinstance(step.with_, dict) else {}
    missing = inputs_to_pass(analysis.ir, flow, step, given)
    line = analysis.outline.line_of.get(diag.path)
    info = analysis.outline.lines[line] if line is not None else None
    if not missing or info is None or info.colon is None or _inline_value(analysis.outline.raw[line], info.colon).strip():
        return None
    indent = " " * _child_indent(analysis, line, info.key_col)
    values = {k: f"${{input.{k}}}" if passed else "" for k, _, passed in missing}
    newline = _newline(analysis)
    text = "".join(f'{indent}{k}: "{value}"{newline}' for k, value in values.items())
    names = ", ".join(f"'{k}'" for k in values)
    title = f"Add input{'s' if len(missing) > 1 else ''} {names} to 'with'"
    return Action(title, (TextEdit(Range(Position(line + 1, 0), Position(line + 1, 0)), text),), diag)


def _remove_key(analysis: Analysis, diag: Diagnostic) -> Action | None:
    """The key's lines removed; the mapping's own line gets ``{}`` when that was its only key (an
    empty block mapping would read as null)."""
    outline = analysis.outline
    line = outline.line_of.get(diag.path)
    info = outline.lines[line] if line is not None else None
    if info is None or info.dash is not None:
        return None
    end = outline.ends[line] + 1
    edits = [TextEdit(Range(Position(line, 0), Position(end, 0)), "")]
    parent = outline.line_of.get(diag.path[:-1])
    above = outline.lines[parent] if parent is not None and parent != line else None
    if above is not None and above.colon is not None and _only_key(analysis, diag.path):
        colon = Position(parent, above.colon + 1)
        edits.insert(0, TextEdit(Range(colon, colon), " {}"))
    return Action(f"Remove '{diag.path[-1]}'", tuple(edits), diag)


def _only_key(analysis: Analysis, path: tuple[Any, ...]) -> bool:
    """Whether ``path`` names the only key of its mapping in the document."""
    outline = analysis.outline
    return not any(other[:-1] == path[:-1] and other != path and len(other) == len(path)
                   for other in outline.line_of)


_MAKERS = {"LG506": _add_max_rounds, "LG302": _contract_stub, "LG904": _add_after, "LG703": _with_inputs}


def _child_indent(analysis: Analysis, line: int, column: int) -> int:
    """The indentation of ``line``'s children (two more than ``column`` when it has none)."""
    outline = analysis.outline
    for number in range(line + 1, min(outline.ends[line], line + 50) + 1):
        info = outline.lines[number]
        if info is not None:
            return info.first if info.dash is None else info.dash
    return column + 2


def _covered(analysis: Analysis, rng: Range) -> str:
    lines = analysis.lines
    return analysis.text[lines.offset(rng.start) : lines.offset(rng.end)]


def flow_at(analysis: Analysis, pos: Position) -> str | None:
    """The flow whose block holds ``pos`` (or the entry flow)."""
    spec = analysis.ir
    if spec is None:
        return None
    from .context import context_at

    name = context_at(analysis.outline, pos).flow
    if isinstance(name, str) and name in spec.flows:
        return name
    return spec.entry if spec.entry in spec.flows else next(iter(spec.flows), None)


def flow_graph_text(analysis: Analysis, flow: str | None, fmt: str = "mermaid") -> dict[str, str]:
    """The flow's graph as Mermaid (or DOT) text, for the ``lockgate.showFlowGraph`` command."""
    from lockgate.dsl.graph import flow_graph
    from lockgate.dsl.graphtext import to_dot, to_mermaid

    spec = analysis.ir
    if spec is None or not spec.flows:
        raise ValueError("the document has no flows to draw")
    if flow is not None and flow not in spec.flows:
        raise ValueError(f"no flow named {flow!r}; flows: {', '.join(spec.flows)}")
    name = flow if flow is not None else (spec.entry if spec.entry in spec.flows else next(iter(spec.flows)))
    graph = flow_graph(spec, name)
    text = to_dot(graph, name=name) if fmt == "dot" else to_mermaid(graph)
    return {"flow": name, "format": "dot" if fmt == "dot" else "mermaid", "text": text}
