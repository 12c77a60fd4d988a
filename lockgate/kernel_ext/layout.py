"""Layered layout of a flow graph: topological generations, then barycenter sweeps.

A small Sugiyama-style pass: layer 0 on top, each layer a row, and the order inside a row chosen
to cut edge crossings. Back edges (``revise``) are left out of the layering so the flow stays a
DAG top to bottom. Then :func:`place` turns those grid positions into a physical placement
(inches): node sizes, label lines and the room between rows and columns chosen so that nodes and
labels never overlap. Pure: graph in, coordinates out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import networkx as nx

BACK_EDGE_KINDS = frozenset({"revise"})


def layers(graph: nx.DiGraph) -> list[list[Hashable]]:
    """Nodes grouped by topological generation over the forward edges.

    If the forward edges still hold a cycle (an invalid spec being drawn anyway), the nodes of
    the cycle go into one extra layer rather than failing.
    """
    forward = nx.DiGraph()
    forward.add_nodes_from(graph.nodes)
    forward.add_edges_from(
        (u, v) for u, v, kind in graph.edges(data="kind") if kind not in BACK_EDGE_KINDS and u != v
    )
    try:
        return [list(gen) for gen in nx.topological_generations(forward)]
    except nx.NetworkXUnfeasible:
        placed: list[list[Hashable]] = []
        acyclic = forward.copy()
        cyclic = set()
        while True:
            try:
                cycle = nx.find_cycle(acyclic)
            except nx.NetworkXNoCycle:
                break
            cyclic.update(u for u, _ in cycle)
            acyclic.remove_edges_from(cycle)
        placed = [[n for n in gen if n not in cyclic] for gen in nx.topological_generations(acyclic)]
        return [layer for layer in placed if layer] + [sorted(cyclic, key=str)]


def order_layers(graph: nx.DiGraph, rows: list[list[Hashable]], sweeps: int = 4) -> list[list[Hashable]]:
    """Reorder each row by the mean position of its neighbours in the row above, then below."""
    rows = [list(r) for r in rows]
    depth = {n: d for d, row in enumerate(rows) for n in row}
    position = {n: i - (len(row) - 1) / 2 for row in rows for i, n in enumerate(row)}

    def sweep(indices, neighbours, step):
        for r in indices:
            row = rows[r]
            keyed = []
            for i, node in enumerate(row):
                near = [m for m in neighbours(node) if m in position]
                adjacent = [m for m in near if depth[m] == r - step]
                xs = [position[m] for m in (adjacent or near)]
                keyed.append((sum(xs) / len(xs) if xs else position[node], i, node))
            keyed.sort(key=lambda t: (t[0], t[1]))
            rows[r] = [node for _, _, node in keyed]
            offset = (len(row) - 1) / 2
            position.update({node: i - offset for i, node in enumerate(rows[r])})

    best, best_count = [list(r) for r in rows], _row_crossings(graph, rows)
    for _ in range(sweeps):
        for indices, neighbours, step in (
            (range(1, len(rows)), graph.predecessors, 1),
            (range(len(rows) - 2, -1, -1), graph.successors, -1),
        ):
            sweep(indices, neighbours, step)
            count = _row_crossings(graph, rows)
            if count < best_count:
                best, best_count = [list(r) for r in rows], count
    return best


def _row_crossings(graph: nx.DiGraph, rows: list[list[Hashable]]) -> int:
    return crossings(graph, {n: (float(i), -float(d)) for d, row in enumerate(rows) for i, n in enumerate(row)})


def layered_positions(graph: nx.DiGraph) -> dict[Hashable, tuple[float, float]]:
    """Coordinates with rows centred on x = 0, one unit apart; row 0 at the top (y = 0)."""
    rows = order_layers(graph, layers(graph))
    pos: dict[Hashable, tuple[float, float]] = {}
    for depth, row in enumerate(rows):
        offset = (len(row) - 1) / 2
        for i, node in enumerate(row):
            pos[node] = (i - offset, -float(depth))
    return pos


def overview_positions(graph: nx.DiGraph) -> dict[Hashable, tuple[float, float]]:
    """Nodes on a near-square grid in layer order (read left to right, top to bottom).

    For graphs too big to draw edges and names readably: no crossing reduction (its cost grows
    with the square of a row's edges and nothing would show it), one unit between cells.
    """
    ordered = [node for layer in layers(graph) for node in layer]
    columns = max(10, math.ceil(math.sqrt(len(ordered) * 1.6)))
    return {node: (float(i % columns), -float(i // columns)) for i, node in enumerate(ordered)}


def crossings(graph: nx.DiGraph, pos: dict[Hashable, tuple[float, float]]) -> int:
    """Count crossings between edges that join adjacent rows (for tests and benchmarks)."""
    spans = []
    for u, v in graph.edges:
        (xu, yu), (xv, yv) = pos[u], pos[v]
        if abs(yu - yv) == 1:
            top, bottom = (xu, xv) if yu > yv else (xv, xu)
            spans.append((max(yu, yv), top, bottom))
    count = 0
    for i, (row, a1, b1) in enumerate(spans):
        for row2, a2, b2 in spans[i + 1 :]:
            if row == row2 and (a1 - a2) * (b1 - b2) < 0:
                count += 1
    return count


# -- physical placement -------------------------------------------------------------------------

POINT = 1 / 72  # inches
LINE_SPACING = 1.3  # a label line's height, in font sizes (matplotlib's 1.2 spacing, plus descent)
LABEL_DROP = 2.0  # points between a node and the top of its label
GATE_WIDTH = 1.2  # a gate's diamond is this much wider (and taller) than a step's circle
MARGIN = 6.0  # points around everything drawn


@dataclass(frozen=True, slots=True)
class Scale:
    """One density of the detailed drawing, sizes in points. :func:`place` takes the first of
    :data:`SCALES` whose drawing fits a comfortable canvas, else the last if it fits at all."""

    node: float  # a step's circle diameter
    font: float  # label font size
    chars: int  # a longer label is cut, ending in "…"
    gap: float  # clear height between a row's labels and the next row's nodes, where edges run
    edge: float  # edge line width

    @property
    def line(self) -> float:
        return self.font * LINE_SPACING


# The last scale is the smallest that stays legible at the picture's 100 dpi: 6-point labels are
# 8 px tall (rendered side by side, DejaVu Sans runs its letters together at 5 points and below)
# and 9.5-point nodes 13 px across, enough to tell the status colours and the gate diamond apart.
#: The longest a label is drawn where its row has room (a longer name is cut around "…").
FULL_CHARS = 40

SCALES = (
    Scale(node=23.0, font=8.0, chars=24, gap=28.0, edge=1.1),
    Scale(node=14.0, font=6.5, chars=16, gap=16.0, edge=0.9),
    Scale(node=9.5, font=6.0, chars=12, gap=11.0, edge=0.7),
)


@dataclass(frozen=True, slots=True)
class Label:
    """A node's name as drawn: its text (lines joined by newlines), the top centre of its block
    and the box it covers (x0, y0, x1, y1 in inches, y up). A rotated label reads bottom to top
    below its node."""

    text: str
    x: float
    y: float
    rotated: bool
    box: tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where everything of a detailed drawing goes, in inches (y up): node centres, each node's
    drawn width in points, labels, the x of each back edge's run beside the rows it spans, and
    the bounds of it all (margins included)."""

    scale: Scale
    pos: dict[Hashable, tuple[float, float]]
    extent: dict[Hashable, float]
    labels: dict[Hashable, Label]
    back_edges: dict[tuple[Hashable, Hashable], float]
    bounds: tuple[float, float, float, float]

    @property
    def size(self) -> tuple[float, float]:
        x0, y0, x1, y1 = self.bounds
        return x1 - x0, y1 - y0


@dataclass(frozen=True, slots=True)
class _RowStyle:
    texts: list[str]
    sizes: list[tuple[float, float]]  # each label's box as drawn (width, height), points
    pitch: float  # points between neighbouring node centres
    block: float  # how far the row's labels reach below their top, points
    rotated: bool


def place(
    graph: nx.DiGraph,
    grid: Mapping[Hashable, tuple[float, float]],
    texts: Mapping[Hashable, str],
    width_of: Callable[[str], float],
    *,
    comfortable: tuple[float, float],
    largest: tuple[float, float],
) -> Placement | None:
    """The drawing at the largest scale that fits ``comfortable`` (width, height in inches),
    else at the smallest scale if that fits ``largest``, else None: too big to read.

    ``grid`` is a :func:`layered_positions` result (not empty), ``texts`` each node's label and
    ``width_of`` a text's width in ems (its width in points at a 1-point font). A row too wide
    for the comfortable width has its labels wrapped onto two lines, or failing that rotated.
    """
    rows = _grid_rows(grid)
    placement = None
    for scale in SCALES:
        placement = _place_at(graph, rows, texts, width_of, scale, comfortable[0] / POINT)
        if _fits(placement.size, comfortable):
            return placement
    assert placement is not None
    return placement if _fits(placement.size, largest) else None


def badge_box(x: float, y: float, extent: float, font: float) -> tuple[float, float, float, float]:
    """Where a node's retry badge (``↻3``) goes: its box in inches, at the node's top right."""
    left, bottom = x + extent * 0.35 * POINT, y + extent * 0.3 * POINT
    return left, bottom, left + font * 1.7 * POINT, bottom + font * LINE_SPACING * POINT


def leave_label(start: tuple[float, float], end: tuple[float, float], box: tuple[float, float, float, float]):
    """Where the segment ``start``-``end`` leaves ``box`` (a label under ``start``'s node), so an
    edge is drawn from below its source's label rather than through it; ``start`` if it misses."""
    (x, y), (dx, dy) = start, (end[0] - start[0], end[1] - start[1])
    enter, leave = 0.0, 1.0
    for delta, low, high, at in ((dx, box[0], box[2], x), (dy, box[1], box[3], y)):
        if delta == 0:
            if not low <= at <= high:
                return start
            continue
        t0, t1 = sorted(((low - at) / delta, (high - at) / delta))
        enter, leave = max(enter, t0), min(leave, t1)
    return (x + dx * leave, y + dy * leave) if enter < leave else start


def _fits(size: tuple[float, float], box: tuple[float, float]) -> bool:
    return size[0] <= box[0] and size[1] <= box[1]


def _grid_rows(grid: Mapping[Hashable, tuple[float, float]]) -> list[list[tuple[Hashable, float]]]:
    """(node, grid x) of each row, the top row first, left to right."""
    rows: dict[float, list[tuple[Hashable, float]]] = {}
    for node, (x, y) in grid.items():
        rows.setdefault(y, []).append((node, x))
    return [sorted(rows[y], key=lambda item: item[1]) for y in sorted(rows, reverse=True)]


def _place_at(graph, rows, texts, width_of, scale: Scale, budget: float) -> Placement:
    """Each row's labels styled and its nodes spread by its pitch; then the rows top to bottom,
    each as far below the last as that one's labels and the edges between them need."""
    pos, extent, labels = {}, {}, {}
    xs: dict[Hashable, float] = {}  # points
    styles = []
    for row in rows:
        widths = {n: scale.node * (GATE_WIDTH if graph.nodes[n].get("kind") == "gate" else 1.0) for n, _ in row}
        style = _row_style([texts[n] for n, _ in row], max(widths.values()), scale, width_of, budget)
        styles.append(style)
        extent.update(widths)
        xs.update((node, unit * style.pitch) for node, unit in row)
    y = below = 0.0  # points; below: how far the previous row reaches under its node centres
    for index, (row, style) in enumerate(zip(rows, styles)):
        widest = max(extent[n] for n, _ in row)
        if index:
            y -= below + _gap(graph, rows[index - 1], xs, scale) + widest / 2
        top = y - widest / 2 - LABEL_DROP
        for (node, _), text, (w, h) in zip(row, style.texts, style.sizes):
            x = xs[node]
            pos[node] = (x * POINT, y * POINT)
            box = ((x - w / 2) * POINT, (top - h) * POINT, (x + w / 2) * POINT, top * POINT)
            labels[node] = Label(text, x * POINT, top * POINT, style.rotated, box)
        below = widest / 2 + LABEL_DROP + style.block
    back = _back_edges(graph, pos, extent, labels)
    return Placement(scale, pos, extent, labels, back, _bounds(pos, extent, labels, back, scale))


def _gap(graph: nx.DiGraph, row: list[tuple[Hashable, float]], xs: Mapping[Hashable, float], scale: Scale) -> float:
    """The clear height under ``row``'s labels: the scale's gap, taller where the row's edges run
    far sideways (a wide fan-in), so they reach their nodes at angles that can be told apart."""
    spans = [abs(xs[u] - xs[v]) for u, _ in row for _, v, kind in graph.out_edges(u, data="kind")
             if kind not in BACK_EDGE_KINDS]
    return min(max(scale.gap, 0.12 * max(spans, default=0.0)), 96.0)


def _row_style(texts: list[str], node: float, scale: Scale, width_of, budget: float) -> _RowStyle:
    """Labels on one line; if the row is then wider than ``budget`` points, on two; if still,
    cut to the scale's length and tried again, then rotated (their width becomes one line's
    height). A scale is often chosen for a tall picture: names keep their length (up to
    :data:`FULL_CHARS`) wherever the row has room for them."""
    for chars in (FULL_CHARS, scale.chars):
        cut = [_cut(t, chars) for t in texts]
        flat = _lines_style(cut, node, scale, width_of)
        if len(cut) * flat.pitch <= budget:
            return flat
        wrapped = _lines_style([_wrap(t) for t in cut], node, scale, width_of)
        if len(cut) * wrapped.pitch <= budget:
            return wrapped
    sizes = [(scale.line, _length(width_of, t, scale.font)) for t in cut]
    pitch = max(node, scale.line) + max(3.0, scale.font / 2)
    return _RowStyle(cut, sizes, pitch, max(h for _, h in sizes), rotated=True)


def _lines_style(texts: list[str], node: float, scale: Scale, width_of) -> _RowStyle:
    sizes = []
    for text in texts:
        lines = text.split("\n")
        sizes.append((max(_length(width_of, line, scale.font) for line in lines), len(lines) * scale.line))
    pitch = max(node, max(w for w, _ in sizes)) + max(6.0, scale.font)
    return _RowStyle(texts, sizes, pitch, max(h for _, h in sizes), rotated=False)


def _length(width_of, text: str, font: float) -> float:
    """``text``'s drawn length in points: its advances plus the few percent (and a point) that
    hinting at small sizes adds on screen."""
    return width_of(text) * font * 1.04 + 1.0


def _cut(text: str, chars: int) -> str:
    """``text`` in at most ``chars`` characters: its start and its end around "…" (names in one
    flow often differ only at the end: ``fetch-part-07``)."""
    if len(text) <= chars:
        return text
    tail = (chars - 1) // 3
    return text[: chars - 1 - tail] + "…" + text[len(text) - tail:]


def _wrap(text: str) -> str:
    """``text`` on two lines, broken after the separator nearest its middle (else mid-word)."""
    if len(text) < 8:
        return text
    middle = len(text) / 2
    breaks = [i for i in range(2, len(text) - 1) if text[i - 1] in " _-/.>"]
    at = min(breaks, key=lambda i: abs(i - middle), default=None)
    if at is None or abs(at - middle) > len(text) / 4:
        at = math.ceil(middle)
    return text[:at].rstrip() + "\n" + text[at:].lstrip()


def _back_edges(graph, pos, extent, labels) -> dict[tuple[Hashable, Hashable], float]:
    """Each back edge (``revise``) runs up left of every node and label of the rows it spans,
    out of its ends far enough that its arrow head shows."""
    side = {}
    for u, v, kind in graph.edges(data="kind"):
        if kind in BACK_EDGE_KINDS and u != v and u in pos and v in pos:
            low, high = sorted((pos[u][1], pos[v][1]))
            spanned = [n for n, (_, y) in pos.items() if low <= y <= high]
            left = min(min(pos[n][0] - extent[n] / 2 * POINT, labels[n].box[0]) for n in spanned)
            reach = min(pos[n][0] - (extent[n] / 2 + 16) * POINT for n in (u, v))
            side[(u, v)] = min(left - 8 * POINT, reach)
    return side


def _bounds(pos, extent, labels, back, scale: Scale) -> tuple[float, float, float, float]:
    boxes = [label.box for label in labels.values()]
    for node, (x, y) in pos.items():
        r = extent[node] / 2 * POINT
        boxes += [(x - r, y - r, x + r, y + r), badge_box(x, y, extent[node], scale.font)]
    boxes += [(x, pos[u][1], x, pos[u][1]) for (u, _), x in back.items()]
    pad = MARGIN * POINT
    return (min(b[0] for b in boxes) - pad, min(b[1] for b in boxes) - pad,
            max(b[2] for b in boxes) + pad, max(b[3] for b in boxes) + pad)
