"""Layered layout of a flow graph: topological generations, then barycenter sweeps.

A small Sugiyama-style pass: layer 0 on top, each layer a row, and the order inside a row chosen
to cut edge crossings. Back edges (``revise``) are left out of the layering so the flow stays a
DAG top to bottom. Pure: graph in, coordinates out.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

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
