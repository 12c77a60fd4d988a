"""Flow graphs as text: Mermaid (for Markdown, MCP hosts, the language server) and Graphviz DOT.

Pure functions over the DiGraph of :func:`lockgate.dsl.graph.flow_graph`; statuses, when given,
colour the nodes with the same palette as the drawn picture.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping

import networkx as nx

_FILL = {
    "pending": "#e1e4e8", "ready": "#cfe5fa", "running": "#4f9dde", "retrying": "#a371f7",
    "waiting": "#f2cc60", "succeeded": "#3fb950", "failed": "#e5534b", "skipped": "#ffffff",
    "killed": "#6e7781", "stopped": "#c4a7a0", "not_reached": "#f0f2f4",
}
_MERMAID_ARROW = {
    "data": "-->", "after": "-.->", "on_fail": "-. on_fail .->", "approve": "-- approve -->",
    "kill": "-- kill -->", "revise": "-. revise .->",
}


def to_mermaid(graph: nx.DiGraph, statuses: Mapping[Hashable, str] | None = None) -> str:
    """A ``flowchart TD`` with gates as rhombi and one class per status."""
    ids = {node: _mermaid_id(node, i) for i, node in enumerate(graph.nodes)}
    lines = ["flowchart TD"]
    for node, data in graph.nodes(data=True):
        label = _mermaid_label(str(data.get("label") or node))
        shape = "{%s}" % label if data.get("kind") == "gate" else "([%s])" % label if data.get("kind") == "run" else "[%s]" % label
        lines.append(f"    {ids[node]}{shape}")
    for u, v, kind in graph.edges(data="kind", default="data"):
        lines.append(f"    {ids[u]} {_MERMAID_ARROW.get(kind, '-->')} {ids[v]}")
    if statuses:
        used = sorted({s for s in statuses.values() if s in _FILL})
        for status in used:
            stroke = "stroke-dasharray: 4 3," if status == "skipped" else ""
            lines.append(f"    classDef {status} fill:{_FILL[status]},{stroke}stroke:#57606a")
        for status in used:
            members = [ids[n] for n, s in statuses.items() if s == status and n in ids]
            if members:
                lines.append(f"    class {','.join(members)} {status}")
    return "\n".join(lines) + "\n"


def to_dot(graph: nx.DiGraph, statuses: Mapping[Hashable, str] | None = None, *, name: str = "flow") -> str:
    """Graphviz DOT text, top to bottom, styled like the drawn picture."""
    lines = [f"digraph {_dot_quote(name)} {{", "  rankdir=TB;", '  node [style=filled, fontname="Helvetica"];']
    for node, data in graph.nodes(data=True):
        status = (statuses or {}).get(node, "pending")
        shape = "diamond" if data.get("kind") == "gate" else "box"
        style = "filled,dashed" if status == "skipped" else "filled"
        label = str(data.get("label") or node)
        lines.append(
            f"  {_dot_quote(node)} [label={_dot_quote(label)}, shape={shape}, style=\"{style}\", "
            f"fillcolor=\"{_FILL.get(status, _FILL['pending'])}\"];"
        )
    styles = {"data": "solid", "after": "dotted"}
    for u, v, kind in graph.edges(data="kind", default="data"):
        attrs = f"style={styles.get(kind, 'dashed')}"
        if kind not in styles:
            attrs += f", label={_dot_quote(kind)}"
        if kind == "revise":
            attrs += ", constraint=false"
        lines.append(f"  {_dot_quote(u)} -> {_dot_quote(v)} [{attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_id(node: Hashable, index: int) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", str(node))
    return f"n{index}_{text}"[:60]


def _mermaid_label(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def _dot_quote(value: Hashable) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
