"""DAG drawing cost: first draw and one recolour (PNG) of 50- and 200-node flow graphs.

Targets (issue 5): recolour <= 150 ms at 200 nodes; first draw <= 1 s at 200 nodes.
Run: python benchmarks/render.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).parent))
from _util import fmt_time, median_seconds, print_table  # noqa: E402

from lockgate.kernel_ext.dag import STATUS_STYLES, DagPicture  # noqa: E402

TARGETS = {"first draw": 1.0, "recolour": 0.150}


def flow_like_graph(n: int, seed: int = 1) -> nx.DiGraph:
    """A layered DAG shaped like a real flow: mostly chains, some fan-in, a few gates."""
    rng = random.Random(seed)
    g = nx.DiGraph()
    for v in range(n):
        g.add_node(f"step_{v:03d}", kind="gate" if v % 17 == 16 else "do")
        if v:
            for u in rng.sample(range(max(0, v - 8), v), k=min(v, rng.randint(1, 2))):
                g.add_edge(f"step_{u:03d}", f"step_{v:03d}", kind=rng.choice(["data", "data", "after"]))
    return g


def main() -> None:
    statuses = list(STATUS_STYLES)
    rows = []
    for n in (50, 200):
        graph = flow_like_graph(n)

        def first_draw():
            DagPicture(graph).png()

        picture = DagPicture(graph)
        rng = random.Random(n)

        def recolour():
            picture.recolor({node: rng.choice(statuses) for node in graph.nodes})
            picture.png()

        for label, fn in (("first draw", first_draw), ("recolour", recolour)):
            t = median_seconds(fn, repeat=5)
            target = TARGETS[label]
            rows.append((f"{n} nodes", label, fmt_time(t), f"target {fmt_time(target)}", f"{t / target:.2f}x of target"))
    print_table("DAG rendering (median of 5)", rows, ("graph", "operation", "median", "target", "ratio"))


if __name__ == "__main__":
    main()
