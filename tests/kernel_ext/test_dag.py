"""The DAG picture: layered layout, crossing reduction, recolouring, text formats."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import networkx as nx
import pytest
from matplotlib.collections import LineCollection

from lockgate.dsl.graphtext import to_dot, to_mermaid
from lockgate.kernel_ext.dag import STATUS_STYLES, DagPicture, draw
from lockgate.kernel_ext.layout import crossings, layered_positions, layers, order_layers

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def release_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for node, kind in [("plan", "do"), ("build", "do"), ("test", "do"), ("review", "gate"), ("ship", "run"), ("fix", "do")]:
        g.add_node(node, kind=kind)
    g.add_edge("plan", "build", kind="data")
    g.add_edge("build", "test", kind="data")
    g.add_edge("test", "review", kind="after")
    g.add_edge("review", "ship", kind="approve")
    g.add_edge("review", "build", kind="revise")
    g.add_edge("test", "fix", kind="on_fail")
    return g


def random_layered_dag(n: int, seed: int) -> nx.DiGraph:
    rng = random.Random(seed)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for v in range(1, n):
        for u in rng.sample(range(v), k=min(v, rng.randint(1, 3))):
            g.add_edge(u, v, kind="data")
    return g


def test_layers_follow_forward_edges_and_ignore_revise():
    rows = layers(release_graph())
    assert rows[0] == ["plan"]
    depth = {n: i for i, row in enumerate(rows) for n in row}
    assert depth["build"] < depth["test"] < depth["review"] < depth["ship"]


def test_layers_survive_a_cycle():
    g = nx.DiGraph()
    g.add_edges_from([("a", "b"), ("b", "c"), ("c", "b")], kind="data")
    rows = layers(g)
    assert sorted(n for row in rows for n in row) == ["a", "b", "c"]


def test_barycenter_sweeps_cut_crossings():
    g = random_layered_dag(60, seed=7)
    rows = layers(g)
    before = {n: (i, -d) for d, row in enumerate(rows) for i, n in enumerate(row)}
    after_rows = order_layers(g, rows)
    after = {n: (i, -d) for d, row in enumerate(after_rows) for i, n in enumerate(row)}
    assert crossings(g, after) < crossings(g, before)


def test_positions_put_the_first_layer_on_top():
    pos = layered_positions(release_graph())
    assert pos["plan"][1] == 0
    assert all(y <= 0 for _, y in pos.values())


def test_recolor_changes_fill_per_status():
    picture = DagPicture(release_graph())
    picture.recolor({"plan": "succeeded", "review": "waiting", "unknown-node": "failed"})
    circles, diamonds = picture._groups
    fills = dict(zip(circles.nodes, circles.collection.get_facecolor().tolist()))
    from matplotlib.colors import to_rgba

    assert fills["plan"] == list(to_rgba(STATUS_STYLES["succeeded"].fill))
    assert fills["build"] == list(to_rgba(STATUS_STYLES["pending"].fill))
    assert diamonds.nodes == ["review"]
    assert diamonds.collection.get_facecolor().tolist()[0] == list(to_rgba(STATUS_STYLES["waiting"].fill))


def test_png_and_svg_render():
    picture = draw(release_graph(), {"plan": "succeeded"}, title="release")
    picture.recolor({}, {"test": 3})
    assert picture.png().startswith(PNG_MAGIC)
    svg = picture.svg()
    ET.fromstring(svg.encode())  # well-formed XML
    assert "↻3" in svg or "8635" in svg  # the badge text (glyph or its codepoint)


@pytest.mark.parametrize("n", [0, 1, 200])
def test_sizes_from_empty_to_large(n):
    g = random_layered_dag(n, seed=n) if n else nx.DiGraph()
    assert DagPicture(g).png().startswith(PNG_MAGIC)


def test_mermaid_marks_gates_and_statuses():
    text = to_mermaid(release_graph(), {"plan": "succeeded", "review": "waiting"})
    assert text.startswith("flowchart TD")
    assert '{"review"}' in text
    assert "-. revise .->" in text
    assert "class n0_plan succeeded" in text


def test_dot_quotes_names_and_keeps_revise_out_of_ranking():
    g = release_graph()
    g.add_node('we"ird', kind="do")
    text = to_dot(g)
    assert '"we\\"ird"' in text
    assert '"review" -> "build" [style=dashed, label="revise", constraint=false];' in text


@pytest.mark.parametrize("n", [301, 2000])
def test_a_graph_too_big_to_read_is_drawn_as_an_overview_that_says_so(n):
    g = random_layered_dag(n, seed=n)
    picture = DagPicture(g, title="big")
    assert picture.overview
    assert not any(isinstance(c, LineCollection) for c in picture.ax.collections)  # no edges
    assert len(picture.ax.texts) == 0  # no names
    notes = [t.get_text() for t in picture.figure.texts]
    assert any(f"{n} steps: too many to draw with edges and names" in t for t in notes)
    order = [node for row in layers(g) for node in row]
    reading = sorted(g.nodes, key=lambda node: (-picture.pos[node][1], picture.pos[node][0]))
    assert reading == order  # the grid reads in flow order
    picture.recolor({0: "succeeded"}, {0: 3})
    assert picture.png().startswith(PNG_MAGIC)


def test_the_full_drawing_is_kept_up_to_the_overview_threshold():
    picture = DagPicture(random_layered_dag(300, seed=1))
    assert not picture.overview
    assert any(isinstance(c, LineCollection) for c in picture.ax.collections)
