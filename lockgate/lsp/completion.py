"""Context-aware completion: schema keys with snippets, enum values, step ids, contract and
flow names, ``${...}`` references with their fields, and expression bindings, members and
builtins.

:func:`complete` is pure: (analysis, cursor context, settings) -> candidates. The analysis may
be stale (the last good IR while the buffer is half-typed); the cursor context always comes from
the current text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range, YamlPath
from lockgate.dsl.ir import STEP_KINDS, Flow, Spec, Step
from lockgate.dsl.types import SCALARS, Named, TypeExpr

from . import builtins, shapes, tails
from . import schema as S
from .context import CursorContext
from .documents import Analysis
from .fields import inputs_to_pass
from .positions import Encoding

TRIGGER_CHARACTERS = ["$", "{", "."]
DEFAULT_AGENTS = ("claude", "codex")
TYPE_WORDS = (*SCALARS, "object", "array")

_ROUTE_FIELDS = ("on_fail", "on_approve", "on_revise", "on_kill")
_SNIPPETS = {
    "do": 'id: ${1:step}\ndo: "${2:Describe the task}"\nagent: ${3:claude}\nout: ${4:Result}\nensure:\n  - expr: "${5:result.ok == true}"',
    "set": 'id: ${1:step}\nset:\n  ${2:field}: "${3:expression}"\nout: ${4:Result}',
    "gate": "id: ${1:review}\nafter: [${2:step}]\ngate:\n  on_approve: ${3:null}\n  on_revise: ${4:null}\n  on_kill: ${5:null}",
    "fanout": 'id: ${1:each}\nfanout:\n  over: "\\${${2:input.items}}"\n  concurrency: ${3:2}\n  isolation: ${4:none}\n'
              '  require: ${5:all}\n  merge: sequential\n  steps:\n    - do: "${6:Handle \\${item\\}}"\n      out: ${7:Result}',
    "run": 'id: ${1:sub}\nrun: ${2:flow}\nwith:\n  ${3:field}: "\\${input.${4:field}\\}"',
    "evaluate": 'id: ${1:check}\nevaluate:\n  command: "${2:./check.sh}"\n  in: "\\${${3:input.text}}"\n  timeout_ms: ${4:60000}',
}
_ENSURE_SNIPPETS = {
    "expr": 'expr: "${1:result.ok == true}"',
    "file_exists": 'file_exists: "${1:path/to/file}"',
    "file_contains": 'file_contains:\n  path: "${1:path/to/file}"\n  text: "${2:text}"',
    "judged": 'judged:\n  statement: "${1:what must be true}"\n  stakes: ${2:default}',
}
_KEY_SNIPPETS = {
    "gate": "gate:\n  on_approve: ${1:null}\n  on_revise: ${2:null}\n  on_kill: ${3:null}",
    "output": 'output:\n  from: "\\${${1:step}.output\\}"\n  contract: ${2:Result}',
    "iterate": 'iterate:\n  max: ${1:3}\n  until: "${2:result.done == true}"',
    "file_contains": 'file_contains:\n  path: "${1:path/to/file}"\n  text: "${2:text}"',
    "judged": 'judged:\n  statement: "${1:what must be true}"\n  stakes: ${2:default}',
}
_FLOW_SNIPPET = 'input:\n  ${2:text}: string\noutput:\n  from: "\\${${3:step}.output\\}"\n  contract: ${4:Result}\nsteps:\n  - id: ${3:step}\n    do: "${5:Describe the task}"\n    out: ${4:Result}'
_CONTRACT_SNIPPET = "${1:summary}: ${2:string}\n${3:confidence}: ${4:number}"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One completion: ``insert`` is a snippet when ``snippet`` is true; ``replace`` is the
    document range the text replaces (code points): the word at the cursor, the part after the
    cursor included. ``insert_end`` is the cursor's column when the word goes on past it (the
    end of an InsertReplaceEdit's insert range)."""

    label: str
    kind: str
    insert: str
    replace: Range
    detail: str = ""
    documentation: str = ""
    snippet: bool = False
    sort: str = "5"
    insert_end: int | None = None


def complete(analysis: Analysis, ctx: CursorContext, agents: tuple[str, ...] = ()) -> list[Candidate]:
    """Completion candidates at the cursor described by ``ctx``."""
    margin = "\n" + " " * ctx.word_start
    cursor = ctx.position.character
    return [_placed(c, margin, cursor) for c in _candidates(analysis, ctx, agents)]


def _placed(c: Candidate, margin: str, cursor: int) -> Candidate:
    """``c`` with its later lines indented to the word's column and ``insert_end`` set; the
    candidate itself when neither changes it (a ``${`` in a large flow lists thousands, and
    copying each was a third of the request's time)."""
    insert_end = cursor if c.replace.end.character != cursor else None
    if insert_end == c.insert_end and "\n" not in c.insert:
        return c
    return Candidate(c.label, c.kind, c.insert.replace("\n", margin), c.replace, c.detail, c.documentation,
                     c.snippet, c.sort, insert_end)


def _candidates(analysis: Analysis, ctx: CursorContext, agents: tuple[str, ...]) -> list[Candidate]:
    spec = analysis.ir
    if ctx.where == "other":
        return []
    if ctx.ref is not None and ctx.where == "value":
        return _references(spec, ctx) if spec is not None else []
    if ctx.in_expression:
        return _expression(spec, ctx) if spec is not None else []
    if ctx.where == "key":
        return _keys(spec, ctx)
    if ctx.where == "item" and S.item_is_object(ctx.path[:-1]):
        return _item_keys(spec, ctx)
    return _values(spec, ctx, agents)


# -- keys ------------------------------------------------------------------------------------------


_VALUE_TAIL = re.compile(r"[A-Za-z0-9_-]*")
_SEGMENT_TAIL = re.compile(r"[\w-]*")
_IDENT_TAIL_AFTER = re.compile(r"\w*")


def _replace(ctx: CursorContext, start: int | None = None, tail: re.Pattern[str] | None = None) -> Range:
    """From ``start`` (default: the word's start) to the cursor, and on through the rest of
    the word after it when ``tail`` says what the word is made of: picking a candidate in the
    middle of ``claude`` or ``${plan.output}`` replaces the whole word, not just its head."""
    line = ctx.position.line
    end = ctx.position.character + (len(tail.match(ctx.after).group(0)) if tail is not None else 0)
    return Range(Position(line, ctx.word_start if start is None else start), Position(line, end))


def _keys(spec: Spec | None, ctx: CursorContext) -> list[Candidate]:
    path = ctx.path
    replace = _replace(ctx)
    out = []
    allowed = _step_keys(ctx.present_keys) if _is_step_path(path) else None
    for name, sub in S.properties(path).items():
        if name in ctx.present_keys or (allowed is not None and name not in allowed):
            continue
        if name == "carry" and not _may_declare_carry(spec, path):
            continue
        snippet = None if ctx.inline else _KEY_SNIPPETS.get(name)  # block-style bodies
        body = snippet or _key_body(name, sub, ctx.inline)
        doc = S.description(sub) or ""
        out.append(Candidate(name, "property", body, replace, _short(doc), doc, snippet=True, sort="1"))
    if spec is not None and path[-1:] == ("with",) and _is_step_path(path[:-1]):
        out.extend(_with_keys(spec, ctx, replace))
    if spec is not None and _is_carry_path(path[:-1]) and path[-1] == "on_revise":
        out.extend(_revising_gates(spec, ctx, replace))
    if ctx.inline:  # the snippets below are block-style: they do not fit in a flow mapping
        return out
    if _is_step_path(path) and not (ctx.present_keys & set(STEP_KINDS)):
        for kind, body in _SNIPPETS.items():
            text = body if "id" not in ctx.present_keys else body.split("\n", 1)[1]
            out.append(Candidate(f"{kind} step", "snippet", text, replace, f"a new {kind} step", snippet=True, sort="0"))
    if len(path) >= 2 and path[-2] == "ensure" and isinstance(path[-1], int) and not ctx.present_keys:
        out.extend(Candidate(f"ensure {k}", "snippet", b, replace, f"an ensure of kind {k}", snippet=True, sort="0")
                   for k, b in _ENSURE_SNIPPETS.items())
    if path == ("flows",):
        out.append(Candidate("flow", "snippet", "${1:name}:\n" + _indent(_FLOW_SNIPPET), replace, "a new flow", snippet=True, sort="0"))
    if path == ("contracts",):
        out.append(Candidate("contract", "snippet", "${1:Result}:\n" + _indent(_CONTRACT_SNIPPET.replace("${1", "${5").replace("${2", "${6").replace("${3", "${7").replace("${4", "${8")), replace, "a new contract", snippet=True, sort="0"))
    return out


def _with_keys(spec: Spec, ctx: CursorContext, replace: Range) -> list[Candidate]:
    """Under a run step's ``with``: the called flow's inputs not given yet, valued with the
    caller's input of the same name when it has one."""
    flow = _flow(spec, ctx)
    step = _current_step(flow, ctx) if flow is not None else None
    if step is None:
        return []
    out = []
    for name, type_text, passed in inputs_to_pass(spec, flow, step, ctx.present_keys):
        value = f'"\\${{input.{name}\\}}"' if passed else "$0"
        out.append(Candidate(name, "property", f"{name}: {value}", replace, f"input of flow '{step.run}': {type_text}",
                             snippet=True, sort="1"))
    return out


def _may_declare_carry(spec: Spec | None, path: YamlPath) -> bool:
    """Whether the flow at ``path`` may declare ``carry``: only the entry flow (LG711)."""
    entry = spec.entry_flow if spec is not None else None
    return not (len(path) == 2 and path[0] == "flows") or entry is None or entry.name == path[1]


def _is_carry_path(path: YamlPath) -> bool:
    """Whether ``path`` is a carry variable (``flows.<flow>.carry.<name>``)."""
    return len(path) == 4 and path[0] == "flows" and path[2] == "carry"


def _revising_gates(spec: Spec, ctx: CursorContext, replace: Range) -> list[Candidate]:
    """Under a carry's ``on_revise``: the flow's gates not listed yet that can revise (a gate
    with a null ``on_revise`` never does, LG717), each valued with a reference to fill in."""
    flow = _flow(spec, ctx)
    if flow is None:
        return []
    gates = [s for s in flow.steps if s.kind == "gate" and s.id and s.gate is not None and s.gate.on_revise is not None
             and s.id not in ctx.present_keys]
    return [Candidate(s.id, "reference", f'{s.id}: "\\${{$1\\}}"', replace, "gate step: the carry's value when it revises",
                      snippet=True, sort="1") for s in gates]


def _is_step_path(path: YamlPath) -> bool:
    return len(path) == 4 and path[0] == "flows" and path[2] == "steps" and isinstance(path[3], int)


def _step_keys(present: frozenset[str]) -> frozenset[str] | None:
    """The keys a step whose construct is already written may take: the validator's own
    per-kind sets (LG205); None when the step has no construct yet (or several: the
    diagnostics say which)."""
    kinds = [k for k in STEP_KINDS if k in present]
    if len(kinds) != 1:
        return None
    from lockgate.dsl.structure import kind_fields

    return kind_fields()[kinds[0]]


def _item_keys(spec: Spec | None, ctx: CursorContext) -> list[Candidate]:
    """A new list item (``- |``) of a list of mappings: the item's snippets and keys."""
    replace = _replace(ctx)
    parent = ctx.path[:-1]
    if parent and parent[-1] == "steps" and len(parent) == 3:
        return [Candidate(f"{k} step", "snippet", b, replace, f"a new {k} step", snippet=True, sort="0") for k, b in _SNIPPETS.items()]
    if parent and parent[-1] == "ensure":
        return [Candidate(f"ensure {k}", "snippet", b, replace, f"an ensure of kind {k}", snippet=True, sort="0") for k, b in _ENSURE_SNIPPETS.items()]
    return _keys(spec, CursorContext(ctx.position, ctx.path, "key", ctx.before, ctx.word_start))


def _key_body(name: str, sub: S.Schema, inline: bool = False) -> str:
    """A key and where its value goes: on the lines below in block style, on the line (in
    brackets when it is a collection) in a flow mapping."""
    if S.is_object(sub):
        return f"{name}: {{$0}}" if inline else f"{name}:\n  $0"
    if S.is_array(sub):
        return f"{name}: [$0]" if inline else f"{name}:\n  - $0"
    return f"{name}: $0"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.split("\n"))


# -- values ----------------------------------------------------------------------------------------


def _values(spec: Spec | None, ctx: CursorContext, agents: tuple[str, ...]) -> list[Candidate]:
    path = ctx.path
    field = next((p for p in reversed(path) if isinstance(p, str)), None)
    replace = _replace(ctx, tail=_VALUE_TAIL)
    flow = _flow(spec, ctx)
    if field == "agent":
        names = dict.fromkeys([*DEFAULT_AGENTS, *(str(e) for e in S.examples(path)), *agents])
        return [Candidate(n, "value", n, replace, "agent", sort="1") for n in names]
    if spec is not None and field in (*_ROUTE_FIELDS, "after") and flow is not None:
        return _step_targets(flow, ctx, field, replace)
    if spec is not None and (field in ("out", "contract") and path[-2:-1] != ("contracts",)):
        return [Candidate(n, "class", n, replace, "contract", _contract_doc(spec, n), sort="1") for n in spec.contracts]
    if spec is not None and field in ("run", "entry") and path[0] == "flows":
        names = [n for n in spec.flows if field == "entry" or n != ctx.flow]
        return [Candidate(n, "module", n, replace, "flow", sort="1") for n in names]
    if _is_type_position(path):
        within = str(path[1]) if path[0] == "contracts" else None
        names = [*TYPE_WORDS, *(n for n in (spec.contracts if spec else ()) if n[:1].isupper()
                                and not (within and _reaches_contract(spec, n, within)))]
        return [Candidate(n, "type_parameter" if n in TYPE_WORDS else "class", n, replace, "type", sort="1") for n in names]
    values = S.enum_values(path)
    return [Candidate(_scalar(v), "enum", _scalar(v), replace, "value", sort="1") for v in values]


def _reaches_contract(spec: Spec, start: str, target: str) -> bool:
    """Whether contract ``start`` is ``target`` or names it through its field types: as a type
    inside ``target`` it would make a recursive contract (LG303)."""
    from .index import type_names

    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name == target:
            return True
        decl = spec.contracts.get(name)
        if name in seen or decl is None:
            continue
        seen.add(name)
        todo.extend(n for t in decl.fields.values() if isinstance(t, str) for n, _ in type_names(t))
    return False


def _is_type_position(path: tuple) -> bool:
    return (len(path) == 3 and path[0] == "contracts") or (len(path) == 4 and path[0] == "flows" and path[2] == "input")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _step_targets(flow: Flow, ctx: CursorContext, field: str, replace: Range) -> list[Candidate]:
    """Steps ``field`` (a route or ``after``) may name without a guaranteed error: never the
    step itself, an ``after`` entry already listed, or a step that would close a cycle (the
    validator's graph answers that); ``on_revise`` only to an upstream step."""
    current = _current_step(flow, ctx)
    own = current.id if current else None
    ids = [s.id for s in flow.steps if s.id and s.id != own]
    if own is not None and flow.step(own) is current:
        ids = [i for i in ids if _target_allowed(flow, own, i, field)]
    if field == "after" and current is not None:
        editing = ctx.path[-1] if ctx.where == "item" else ctx.item_index
        listed = {name for i, name in enumerate(current.after) if i != editing}
        ids = [i for i in ids if i not in listed]
    out = [Candidate(i, "reference", i, replace, _step_detail(flow.step(i)), sort="1") for i in ids]
    if field in ("on_approve", "on_revise", "on_kill"):
        out.append(Candidate("null", "keyword", "null", replace, "no route", sort="2"))
    return out


def _target_allowed(flow: Flow, own: str, target: str, field: str) -> bool:
    from lockgate.dsl.graph import reaches, upstream

    if field == "on_revise":
        return target in upstream(flow, own)
    if field == "after":  # target -> own; a cycle when own already leads to target
        return not reaches(flow, own, target)
    return not reaches(flow, target, own)  # a route own -> target


def _referable(spec: Spec, flow: Flow, own: Step | None) -> Callable[[Step], bool]:
    """Whether ``${step.output}`` may be written in ``own`` (None: outside steps): the step has
    an output (gates and steps without ``out`` have none) and does not depend on ``own``.
    What depends on ``own`` is looked up once, not once per step."""
    downstream = _downstream(flow, own)

    def referable(step: Step) -> bool:
        return (step is not own and bool(step.id) and step.id not in downstream
                and shapes.step_output(spec, flow, step) is not None)

    return referable


def _downstream(flow: Flow, own: Step | None) -> frozenset[str]:
    """The steps reachable from ``own`` in the routing graph (``own`` included): referring
    to one of them from ``own`` would close a cycle. Empty outside steps, or for a step the
    analysis does not know under its id."""
    if own is None or own.id is None or flow.step(own.id) is not own:
        return frozenset()
    from lockgate.dsl.graph import reset_closure

    return reset_closure(flow, own.id)


# -- ${...} references -----------------------------------------------------------------------------

_SEGMENT = re.compile(r"\.?([A-Za-z_][\w-]*)|\[(\d+)\]")


def _split(text: str) -> tuple[list[str | int], str]:
    """``'plan.output.items[0].na'`` -> (['plan', 'output', 'items', 0], 'na')."""
    head, dot, partial = text.rpartition(".")
    if not dot:
        return [], text
    parts: list[str | int] = []
    for m in _SEGMENT.finditer(head):
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
    return parts, partial


def _references(spec: Spec, ctx: CursorContext) -> list[Candidate]:
    ref = ctx.ref or ""
    parts, partial = _split(ref)
    start = ctx.position.character - len(partial)
    replace = _replace(ctx, start, _SEGMENT_TAIL)
    flow = _flow(spec, ctx)
    if flow is None:
        return []
    if not parts:
        return _ref_roots(spec, flow, ctx, replace)
    head, rest = parts[0], parts[1:]
    if head == "input":
        fields = shapes.input_fields(spec, flow) if not rest else shapes.fields_of(spec, shapes.input_type_at(spec, flow, tuple(rest)))
        return _field_candidates(spec, fields, replace)
    if head in ("item", "prev") and ctx.stage_index is not None:
        step = _current_step(flow, ctx)
        if step is None:  # a step the last good analysis does not have yet
            return []
        base = shapes.fanout_item(spec, flow, step) if head == "item" else shapes.stage_output(step, ctx.stage_index - 1)
        return _field_candidates(spec, shapes.fields_of(spec, shapes.type_at(spec, base, rest)), replace)
    step = flow.step(str(head))
    if step is not None:
        if not rest:
            return [Candidate("output", "field", "output", replace, _describe(spec, shapes.step_output(spec, flow, step)), sort="1")]
        if rest[0] == "output":
            target = shapes.type_at(spec, shapes.step_output(spec, flow, step), rest[1:])
            return _field_candidates(spec, shapes.fields_of(spec, target), replace)
    if str(head) in flow.carry:  # a flow's own carry: a subflow sees none (LG407)
        from lockgate.dsl.refs import scan

        source = scan(flow.carry[str(head)].initial or "").full
        base = shapes.ref_type(spec, flow, source) if source else None
        return _field_candidates(spec, shapes.fields_of(spec, shapes.type_at(spec, base, rest)), replace)
    return []


def _ref_roots(spec: Spec, flow: Flow, ctx: CursorContext, replace: Range) -> list[Candidate]:
    # a reference that goes on after the replaced name (``${pl|an.output.x}``) keeps its rest
    rest = ctx.after[replace.end.character - ctx.position.character:]
    continued = rest.startswith((".", "["))
    if ctx.path[2:] == ("output", "from"):  # exactly one step output: not input, carry or item
        referable = _referable(spec, flow, None)
        return [Candidate(s.id, "reference", s.id if continued else f"{s.id}.output", replace, _step_detail(s), sort="1")
                for s in flow.steps if referable(s)]
    out = [Candidate("input", "variable", "input" if continued else "input.", replace, "the flow's input", sort="0")]
    referable = _referable(spec, flow, _current_step(flow, ctx))
    for step in flow.steps:
        if referable(step):
            insert = step.id if continued else f"{step.id}.output"
            out.append(Candidate(step.id, "reference", insert, replace, _step_detail(step), sort="1"))
    # a flow's own carry variables: a subflow sees none (LG407), nor does a carry's own value
    # (it is one step-output or input reference, LG713)
    if not _is_carry_path(ctx.path[:4]):
        out.extend(Candidate(name, "variable", name, replace, "carry variable", sort="2") for name in flow.carry)
    if ctx.stage_index is not None:
        out.append(Candidate("item", "variable", "item", replace, "the fanout element", sort="0"))
        if ctx.stage_index > 0:
            out.append(Candidate("prev", "variable", "prev", replace, "the previous stage's output", sort="0"))
    return out


def _field_candidates(spec: Spec, fields: Mapping[str, TypeExpr | None] | None, replace: Range) -> list[Candidate]:
    if not fields:
        return []
    return [Candidate(name, "field", name, replace, _describe(spec, t), sort="1") for name, t in fields.items()]


# -- expressions -----------------------------------------------------------------------------------


def _expression(spec: Spec, ctx: CursorContext) -> list[Candidate]:
    flow = _flow(spec, ctx)
    if flow is None:
        return []
    text = ctx.before
    chain = tails.chain(text)  # linear: a long word before the cursor costs no more
    if chain is not None and not _in_string_literal(text):
        partial = chain.group(2) or ""
        replace = _replace(ctx, ctx.position.character - len(partial), _IDENT_TAIL_AFTER)
        parts = [m.group(1) or int(m.group(2)) for m in _SEGMENT.finditer(chain.group(1))]
        return _members(spec, flow, ctx, parts, replace)
    if _in_string_literal(text):
        return []
    partial = tails.ident_tail(text)
    replace = _replace(ctx, ctx.position.character - len(partial), _IDENT_TAIL_AFTER)
    out = [Candidate(b, "variable", b, replace, _binding_doc(ctx, b), sort="0") for b in _bindings(ctx)]
    for name in builtins.names():
        out.append(Candidate(name, "function", f"{name}($1)", replace, builtins.signature(name) or name,
                             builtins.description(name), snippet=True, sort="1"))
    out.extend(Candidate(k, "keyword", k, replace, "literal", sort="2") for k in ("true", "false", "null"))
    return out


def _in_string_literal(text: str) -> bool:
    quote = None
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif quote is None and ch in "'\"":
            quote = ch
        elif ch == quote:
            quote = None
    return quote is not None


def _bindings(ctx: CursorContext) -> list[str]:
    if ctx.stage_index is not None:  # no previous stage for the first one
        return ["result", "input", "item", "prev"] if ctx.stage_index > 0 else ["result", "input", "item"]
    return ["result", "input"]


def _binding_doc(ctx: CursorContext, name: str) -> str:
    if name == "result":
        return "map step id -> output" if _result_is_step_map(ctx) else "the output under test"
    return {"input": "the flow's input", "item": "the fanout element", "prev": "the previous stage's output"}[name]


def _result_is_step_map(ctx: CursorContext) -> bool:
    path = ctx.path
    in_stage_when = ctx.stage_index is not None and path[-1] == "when"
    in_step = ctx.stage_index is None and (path[-1] == "when" or (len(path) > 1 and path[-2] == "set"))
    return in_stage_when or in_step


def _members(spec: Spec, flow: Flow, ctx: CursorContext, parts: list, replace: Range) -> list[Candidate]:
    if not parts:
        return []
    root, rest = parts[0], parts[1:]
    step = _current_step(flow, ctx)
    base: TypeExpr | None
    if root == "input":
        if not rest:
            return _field_candidates(spec, shapes.input_fields(spec, flow), replace)
        base = shapes.input_type_at(spec, flow, tuple(rest))
    elif root == "result" and _result_is_step_map(ctx):
        if not rest:  # not this step: it has no output before it runs (LG606)
            return [Candidate(s.id, "reference", s.id, replace, _step_detail(s), sort="1")
                    for s in flow.steps if s.id and s is not step and shapes.step_output(spec, flow, s) is not None]
        base = shapes.type_at(spec, shapes.step_output(spec, flow, flow.step(str(rest[0]))), rest[1:])
    elif root == "result":
        out_type = shapes.stage_output(step, ctx.stage_index) if ctx.stage_index is not None and step else shapes.step_output(spec, flow, step)
        base = shapes.type_at(spec, out_type, rest)
    elif root == "item" and step is not None:
        base = shapes.type_at(spec, shapes.fanout_item(spec, flow, step), rest)
    elif root == "prev" and step is not None and ctx.stage_index:
        base = shapes.type_at(spec, shapes.stage_output(step, ctx.stage_index - 1), rest)
    else:
        return []
    return _field_candidates(spec, shapes.fields_of(spec, base), replace)


# -- helpers ---------------------------------------------------------------------------------------


def _flow(spec: Spec | None, ctx: CursorContext) -> Flow | None:
    if spec is None or ctx.flow is None:
        return None
    return spec.flows.get(str(ctx.flow))


def _current_step(flow: Flow, ctx: CursorContext) -> Step | None:
    index = ctx.step_index
    return flow.steps[index] if index is not None and index < len(flow.steps) else None


def _step_detail(step: Step | None) -> str:
    if step is None:
        return ""
    kind = step.kind or "step"
    return f"{kind} step" + (f" → {step.out}" if step.out else "")


def _describe(spec: Spec, expr: TypeExpr | None) -> str:
    return expr.describe() if expr is not None else ""


def _contract_doc(spec: Spec, name: str) -> str:
    return "```\n" + shapes.describe(spec, Named(name), depth=1) + "\n```"


def _short(doc: str) -> str:
    first = doc.split("\n", 1)[0]
    return first if len(first) <= 80 else first[:77] + "..."


# -- LSP -------------------------------------------------------------------------------------------

_KINDS = {
    "property": lsp.CompletionItemKind.Property, "snippet": lsp.CompletionItemKind.Snippet,
    "value": lsp.CompletionItemKind.Value, "enum": lsp.CompletionItemKind.EnumMember,
    "reference": lsp.CompletionItemKind.Reference, "class": lsp.CompletionItemKind.Class,
    "module": lsp.CompletionItemKind.Module, "type_parameter": lsp.CompletionItemKind.TypeParameter,
    "field": lsp.CompletionItemKind.Field, "variable": lsp.CompletionItemKind.Variable,
    "function": lsp.CompletionItemKind.Function, "keyword": lsp.CompletionItemKind.Keyword,
}
# a placeholder whose default holds no other (those go first); ``{`` needs no escape in one
_PLACEHOLDER = re.compile(r"\$\{\d+:((?:[^$}\\]|\\.)*)\}|\$\{\d+\}|\$\d+")


def plain_text(snippet: str) -> str:
    """A snippet's text without tab stops, for clients without snippet support: every
    placeholder replaced by its default, innermost first, then the escapes undone."""
    previous = None
    while previous != snippet:
        previous, snippet = snippet, _PLACEHOLDER.sub(lambda m: m.group(1) or "", snippet)
    return re.sub(r"\\([$}\\])", r"\1", snippet)


def to_lsp(items: list[Candidate], analysis: Analysis, encoding: Encoding, snippets: bool,
           as_is: bool = False, insert_replace: bool = False) -> lsp.CompletionList:
    """Candidates as an LSP completion list; multi-line texts carry absolute indentation, so
    clients that support it are told to insert them as is. A candidate whose word goes on past
    the cursor replaces the whole word: with an InsertReplaceEdit for clients that support one
    (``insert_replace``: the editor's insert mode then keeps the rest), else a plain TextEdit."""
    ranges = _EditRanges(analysis, encoding, insert_replace)
    out = []
    for c in items:
        if c.snippet and snippets:
            insert, fmt = c.insert, lsp.InsertTextFormat.Snippet
        else:
            insert, fmt = plain_text(c.insert) if c.snippet else c.insert, lsp.InsertTextFormat.PlainText
        out.append(
            lsp.CompletionItem(
                label=c.label,
                kind=_KINDS.get(c.kind, lsp.CompletionItemKind.Text),
                detail=c.detail or None,
                documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=c.documentation) if c.documentation else None,
                sort_text=f"{c.sort}{c.label}",
                filter_text=c.label if c.kind != "snippet" else None,
                insert_text_format=fmt,
                insert_text_mode=lsp.InsertTextMode.AsIs if "\n" in insert and as_is else None,
                text_edit=ranges.edit(c, insert),
            )
        )
    return lsp.CompletionList(is_incomplete=False, items=out)


class _EditRanges:
    """The client ranges of the candidates' edits, converted once per distinct range: the
    candidates of one request nearly all share one replaced word (one Range object), and
    converting it again for each of thousands of step ids was most of a ``${`` completion's
    time."""

    def __init__(self, analysis: Analysis, encoding: Encoding, insert_replace: bool) -> None:
        self._lines = analysis.lines
        self._encoding = encoding
        self._insert_replace = insert_replace
        self._last: tuple[Range, int | None, lsp.Range, lsp.Range | None] | None = None

    def edit(self, c: Candidate, text: str) -> lsp.TextEdit | lsp.InsertReplaceEdit:
        replace, head = self._ranges(c)
        if head is None:
            return lsp.TextEdit(range=replace, new_text=text)
        return lsp.InsertReplaceEdit(new_text=text, insert=head, replace=replace)

    def _ranges(self, c: Candidate) -> tuple[lsp.Range, lsp.Range | None]:
        """The replaced range and, for an InsertReplaceEdit, the inserted one (None: a TextEdit)."""
        last = self._last
        if last is not None and last[0] is c.replace and last[1] == c.insert_end:
            return last[2], last[3]
        replace = self._lines.range_to_client(c.replace, self._encoding)
        head = None
        if c.insert_end is not None and self._insert_replace:
            start = c.replace.start
            head = self._lines.range_to_client(Range(start, Position(start.line, c.insert_end)), self._encoding)
        self._last = (c.replace, c.insert_end, replace, head)
        return replace, head


def _item_caps(caps: lsp.ClientCapabilities | None) -> Any:
    """The client's completion-item capabilities; None when it sent none."""
    try:
        return caps.text_document.completion.completion_item  # type: ignore[union-attr]
    except AttributeError:
        return None


def supports_insert_replace(caps: lsp.ClientCapabilities | None) -> bool:
    """Whether the client takes InsertReplaceEdit completion edits."""
    return bool(getattr(_item_caps(caps), "insert_replace_support", None))


def supports_snippets(caps: lsp.ClientCapabilities | None) -> bool:
    return bool(getattr(_item_caps(caps), "snippet_support", None))


def supports_as_is(caps: lsp.ClientCapabilities | None) -> bool:
    modes = getattr(getattr(_item_caps(caps), "insert_text_mode_support", None), "value_set", None)
    return lsp.InsertTextMode.AsIs in (modes or ())
