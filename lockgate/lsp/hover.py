"""Hover: a step's summary, a contract's shape, a reference's resolved type, a builtin's
documentation, the type of an expression member, and schema descriptions of keys.

:func:`hover` is pure: (analysis, position) -> (markdown, range) or None. It looks only at what
is under the cursor (the string there, the step there), never at the whole document. On a
``stale`` view (the current text is not analysed yet, or is not valid YAML) a cursor on a line
that is unchanged since the last good analysis is answered from that analysis.
"""

from __future__ import annotations

from lockgate.dsl.diagnostics import Position, Range
from lockgate.dsl.ir import Flow, Spec, Step
from lockgate.dsl.refs import scan
from lockgate.dsl.types import Named

from . import builtins, shapes
from . import fields as F
from . import schema as S
from .context import is_expression_path
from .documents import Analysis
from .index import occurrence_at, parse_expression
from .positions import LineMap

Hover = tuple[str, Range | None]


def hover(analysis: Analysis, pos: Position) -> Hover | None:
    """Markdown describing what is under the cursor, and the range it describes (None when
    that range cannot be placed in the current text)."""
    if analysis.parsed:
        return _exact(analysis, pos)
    base = analysis.base
    if analysis.stale and base is not None and base.parsed:
        lines = LineMap(base.doc.raw_lines, analysis.doc.raw_lines)
        old = lines.to_old(pos.line)
        found = _exact(base, Position(old, pos.character)) if old is not None else None
        if found is not None:
            text, rng = found
            return text, lines.range_to_new(rng) if rng is not None else None
    return _key(analysis, pos)


def _exact(analysis: Analysis, pos: Position) -> Hover | None:
    """Hover from an analysis of exactly the text ``pos`` is in."""
    for finder in (_embedded, _symbol, _key):
        found = finder(analysis, pos)
        if found is not None:
            return found
    return None


# -- symbols ---------------------------------------------------------------------------------------


def _symbol(analysis: Analysis, pos: Position) -> Hover | None:
    spec = analysis.ir
    occ = occurrence_at(analysis, pos)
    if occ is None or spec is None:
        return None
    if occ.kind == "step":
        flow = spec.flows.get(occ.key[1])
        step = flow.step(occ.name) if flow else None
        return (step_summary(spec, flow, step), occ.range) if flow and step else None
    if occ.kind == "contract":
        if occ.name not in spec.contracts:
            return None
        return f"**contract** `{occ.name}`\n```\n{shapes.describe(spec, Named(occ.name), depth=2)}\n```", occ.range
    if occ.kind == "flow":
        flow = spec.flows.get(occ.name)
        return (flow_summary(spec, flow), occ.range) if flow else None
    if occ.kind == "input":
        flow = spec.flows.get(occ.key[1])
        t = shapes.input_fields(spec, flow).get(occ.name) if flow else None
        return f"**input** `{occ.name}`: `{t.describe() if t else '?'}`", occ.range
    if occ.kind == "carry":
        return f"**carry variable** `{occ.name}`", occ.range
    return None


def step_summary(spec: Spec, flow: Flow, step: Step) -> str:
    """Markdown: construct, agent, output contract and its shape, dependencies, retries."""
    from lockgate.dsl.graph import dependencies

    lines = [f"**step** `{step.id}` · {step.kind or 'no construct yet'}"]
    if step.kind == "do":
        lines.append(f"- agent: `{step.agent or 'claude'}`")
    if step.kind == "run" and step.run:
        lines.append(f"- runs flow `{step.run}`")
    out = shapes.step_output(spec, flow, step)
    if out is not None:
        lines.append(f"- output: `{out.describe()}`")
    deps = sorted(dependencies(flow, step.id)) if step.id else []
    lines.append("- after: " + (", ".join(f"`{d}`" for d in deps) if deps else "nothing (a root step)"))
    if step.kind in ("do", "fanout"):
        lines.append(f"- attempts: {step.max_attempts}" + (f", then `{step.on_fail}`" if step.on_fail else ""))
    if step.ensure:
        lines.append(f"- ensure: {len(step.ensure)} postcondition(s)")
    if step.when:
        lines.append(f"- when: `{step.when}`")
    if step.gate is not None:
        routes = ", ".join(f"{k}: `{v}`" for k, v in step.gate.routes().items())
        lines.append(f"- routes: {routes}")
    text = "\n".join(lines)
    if out is not None and shapes.fields_of(spec, out) is not None:
        text += f"\n```\n{shapes.describe(spec, out, depth=2)}\n```"
    return text


def flow_summary(spec: Spec, flow: Flow) -> str:
    entry = " (entry)" if spec.entry == flow.name else ""
    inputs = ", ".join(f"{k}: {v}" for k, v in flow.input.items()) or "none"
    output = flow.output.contract if flow.output and flow.output.contract else "?"
    return f"**flow** `{flow.name}`{entry}\n- input: {inputs}\n- output: `{output}`\n- {len(flow.steps)} steps"


# -- inside strings: references and expressions ------------------------------------------------------


def _embedded(analysis: Analysis, pos: Position) -> Hover | None:
    source, spec = analysis.source_map, analysis.ir
    located = source.path_at(pos)
    if located is None or located[1] != "value" or spec is None:
        return None
    path = located[0]
    offset = source.offset_in_value(path, pos)
    found = F.field_at(spec, path)
    value = found.value if found is not None else None
    if offset is None or value is None or "flows" != path[0]:
        return None
    flow = spec.flows.get(str(path[1]))
    for ref in scan(value).refs:
        if ref.span[0] <= offset < ref.span[1]:
            t = shapes.ref_type(spec, flow, ref, **_fanout_types(spec, flow, path))
            text = f"`{ref.text}`: `{t.describe() if t else 'unknown'}`"
            if t is not None and shapes.fields_of(spec, t):
                text += f"\n```\n{shapes.describe(spec, t, depth=1)}\n```"
            return text, source.span_range(path, *ref.span)
    if is_expression_path(path):
        return _expression_hover(analysis, spec, flow, path, value, offset)
    return None


def _expression_hover(analysis: Analysis, spec: Spec, flow: Flow | None, path, value: str, offset: int) -> Hover | None:
    from lockgate.dsl.expr.nodes import FunctionCall, Member, walk

    tree = parse_expression(value)
    if tree is None:
        return None
    source = analysis.source_map
    best = None
    for node in walk(tree):
        if isinstance(node, FunctionCall) and node.name_span[0] <= offset < node.name_span[1]:
            return builtins.markdown(node.name), source.span_range(path, *node.name_span)
        if isinstance(node, Member) and node.span[0] <= offset < node.span[1]:
            best = node  # innermost chain wins: walk is pre-order, outer chains come first
    if best is None or flow is None:
        return None
    chain = value[best.span[0]:best.span[1]]
    t = _chain_type(spec, flow, path, chain)
    return f"`{chain}`: `{t.describe() if t else 'unknown'}`", source.span_range(path, *best.span)


def _chain_type(spec: Spec, flow: Flow, path, chain: str):
    from .completion import _SEGMENT

    parts = [m.group(1) or int(m.group(2)) for m in _SEGMENT.finditer(chain.replace(" ", ""))]
    if not parts:
        return None
    root, rest = parts[0], parts[1:]
    step = flow.steps[path[3]] if len(path) > 3 and isinstance(path[3], int) and path[3] < len(flow.steps) else None
    if root == "input":
        return shapes.input_type_at(spec, flow, tuple(rest))
    if root == "result":
        if path[-1] == "when" or (len(path) > 1 and path[-2] == "set"):
            return shapes.type_at(spec, shapes.step_output(spec, flow, flow.step(str(rest[0]))) if rest else None, tuple(rest[1:]))
        stage = path[6] if len(path) > 6 and path[4] == "fanout" else None
        out = shapes.stage_output(step, stage) if stage is not None and step else shapes.step_output(spec, flow, step)
        return shapes.type_at(spec, out, tuple(rest))
    return None


def _fanout_types(spec: Spec, flow: Flow | None, path) -> dict:
    if flow is None or len(path) < 7 or path[4] != "fanout" or not isinstance(path[3], int) or path[3] >= len(flow.steps):
        return {}
    step = flow.steps[path[3]]
    stage = path[6] if isinstance(path[6], int) else 0
    return {"item": shapes.fanout_item(spec, flow, step), "prev": shapes.stage_output(step, stage - 1)}


# -- keys: schema descriptions ---------------------------------------------------------------------


def _key(analysis: Analysis, pos: Position) -> Hover | None:
    outline = analysis.outline
    line = outline.lines[pos.line] if 0 <= pos.line < len(outline.lines) else None
    if line is None or line.key is None or not line.key_col <= pos.character <= line.key_col + len(line.key):
        return None
    path = outline.key_path(pos.line)
    text = S.key_description(path)
    if not text:
        return None
    rng = Range(Position(pos.line, line.key_col), Position(pos.line, line.key_col + len(line.key)))
    return f"**{path[-1]}**\n\n{text}", rng

