"""The drawn DAG stays readable at every size: nodes and labels never overlap and stay on a
canvas that grows with the flow (within the pixel limits), wide layers wrap or rotate their
labels, a drawing too big to read becomes the overview, and text is drawn as written."""

from __future__ import annotations

import io
import itertools
import random

import networkx as nx
import numpy as np
import pytest
from PIL import Image

from lockgate.kernel_ext.dag import DPI, MAX_PIXELS, DagPicture, text_width
from lockgate.kernel_ext.layout import SCALES


def chain(n: int, label=None) -> nx.DiGraph:
    """``n`` steps one after another, every seventh a gate."""
    g = nx.DiGraph()
    for i in range(n):
        g.add_node(f"s{i}", kind="gate" if i % 7 == 6 else "do", label=label(i) if label else None)
        if i:
            g.add_edge(f"s{i - 1}", f"s{i}", kind="data")
    return g


def wide(n: int, label=None) -> nx.DiGraph:
    """``n`` steps side by side in one layer, all joined by one step after them."""
    g = nx.DiGraph()
    for i in range(n):
        g.add_node(f"s{i}", kind="do", label=label(i) if label else None)
        g.add_edge(f"s{i}", "join", kind="after")
    return g


def flow_like(n: int, seed: int = 1) -> nx.DiGraph:
    """Mostly chains with some fan-in and a few gates, and a revise edge back to the start."""
    rng = random.Random(seed)
    g = nx.DiGraph()
    for v in range(n):
        g.add_node(f"step_{v:03d}", kind="gate" if v % 17 == 16 else "do")
        for u in rng.sample(range(max(0, v - 8), v), k=min(v, rng.randint(1, 2))):
            g.add_edge(f"step_{u:03d}", f"step_{v:03d}", kind=rng.choice(["data", "after"]))
    g.add_edge(f"step_{n - 1:03d}", "step_000", kind="revise")
    return g


def long_name(i: int) -> str:
    return f"prepare_release_notes_{i}"


def rendered(picture: DagPicture):
    """(PNG size, node discs as (x, y, radius) in pixels, label boxes as (x0, y0, x1, y1) pixels)."""
    png = Image.open(io.BytesIO(picture.png()))
    renderer = picture._canvas.get_renderer()
    discs = []
    for group in picture._groups:
        centres = picture.ax.transData.transform(group.collection.get_offsets())
        radius = np.sqrt(group.size) / 2 * DPI / 72 * (np.sqrt(2) if group.marker == "D" else 1.0)
        discs += [(x, y, radius) for x, y in centres]
    boxes = [tuple(t.get_window_extent(renderer).extents) for t in picture.ax.texts]
    return png.size, discs, boxes


def overlapping(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def disc_meets_box(disc, box) -> bool:
    x, y, r = disc
    nearest_x, nearest_y = min(max(x, box[0]), box[2]), min(max(y, box[1]), box[3])
    return (x - nearest_x) ** 2 + (y - nearest_y) ** 2 < r**2


SHAPES = {
    "chain of 30": lambda: chain(30),
    "chain of 60": lambda: chain(60),
    "chain of 100": lambda: chain(100),
    "100 in one layer": lambda: wide(100),
    "18 long names in one layer": lambda: wide(18, long_name),
    "40 long names in one layer": lambda: wide(40, long_name),
    "200-step flow": lambda: flow_like(200),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_nodes_and_labels_never_overlap_and_stay_on_the_canvas(shape):
    picture = DagPicture(SHAPES[shape](), title=shape)
    assert not picture.overview
    (width, height), discs, boxes = rendered(picture)
    assert (width, height) == picture._canvas.get_width_height()
    assert max(width, height) <= MAX_PIXELS
    assert len(discs) == len(picture.nodes) and len(boxes) == len(picture.nodes)
    for (x1, y1, r1), (x2, y2, r2) in itertools.combinations(discs, 2):
        assert (x1 - x2) ** 2 + (y1 - y2) ** 2 >= (r1 + r2) ** 2, (shape, (x1, y1), (x2, y2))
    for box in boxes:
        assert 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height, (shape, box)
        assert not any(disc_meets_box(disc, box) for disc in discs), (shape, box)
    for a, b in itertools.combinations(boxes, 2):
        assert not overlapping(a, b), (shape, a, b)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_legend_and_title_stay_clear_of_the_drawing(shape):
    picture = DagPicture(SHAPES[shape](), title=shape)
    picture.png()
    renderer = picture._canvas.get_renderer()
    drawing = picture.ax.get_window_extent(renderer)
    legend = picture.figure.legends[0].get_window_extent(renderer)
    title = picture.figure._suptitle.get_window_extent(renderer)
    width, height = picture._canvas.get_width_height()
    assert legend.x0 >= drawing.x1 - 0.5 and legend.y0 >= 0 and legend.y1 <= height
    assert title.y0 >= drawing.y1 - 0.5 and title.y1 <= height and title.x1 <= width


def test_the_canvas_grows_with_the_flow_and_sizes_shrink_only_as_needed():
    heights = {n: DagPicture(chain(n))._canvas.get_width_height()[1] for n in (10, 30, 60, 100)}
    assert heights[10] < heights[30] < heights[60] < heights[100] <= MAX_PIXELS
    assert DagPicture(chain(30)).placement.scale == SCALES[0]
    assert DagPicture(chain(100)).placement.scale == SCALES[-1]
    assert SCALES[-1].font >= 6.0  # the smallest type still legible at 100 dpi


def test_the_placement_holds_what_is_drawn():
    """The placement's label boxes (what the overlap checks above rely on) contain the rendered
    labels, flat, wrapped and rotated alike, and its node positions are where nodes are drawn."""
    for graph in (chain(40, long_name), wide(18, long_name), wide(40, long_name)):
        picture = DagPicture(graph)
        picture.png()
        renderer = picture._canvas.get_renderer()
        drawn = {(t.get_position(), t.get_text()): t for t in picture.ax.texts}
        for node, label in picture.placement.labels.items():
            extent = drawn[((label.x, label.y), label.text)].get_window_extent(renderer)
            (x0, y0), (x1, y1) = picture.ax.transData.transform([label.box[:2], label.box[2:]])
            assert x0 - 0.5 <= extent.x0 and extent.x1 <= x1 + 0.5, node
            assert y0 - 0.5 <= extent.y0 and extent.y1 <= y1 + 0.5, node
        for group in picture._groups:
            assert group.collection.get_offsets().tolist() == [list(picture.placement.pos[n]) for n in group.nodes]


def test_a_wide_layer_wraps_then_rotates_its_labels():
    wrapped = DagPicture(wide(18, long_name)).placement.labels
    for i in range(18):
        lines = wrapped[f"s{i}"].text.split("\n")
        assert len(lines) == 2 and "".join(lines) == long_name(i)  # broken after a separator, nothing lost
    rotated = DagPicture(wide(100)).placement.labels
    assert all(rotated[f"s{i}"].rotated for i in range(100)) and not rotated["join"].rotated


def ladder(rows: int) -> nx.DiGraph:
    """Two chains of ``rows`` steps side by side, rung by rung."""
    g = nx.DiGraph()
    for i in range(1, rows):
        for side in "ab":
            g.add_edge(f"{side}{i - 1}", f"{side}{i}", kind="data")
        g.add_edge(f"a{i - 1}", f"b{i}", kind="after")
    return g


@pytest.mark.parametrize("graph", [chain(200), ladder(150)], ids=["chain of 200", "ladder of 150 rows"])
def test_a_drawing_too_big_to_read_becomes_the_overview(graph):
    picture = DagPicture(graph, title="big")
    assert picture.overview
    assert max(Image.open(io.BytesIO(picture.png())).size) <= MAX_PIXELS


def test_the_longest_readable_chain_is_drawn_in_detail_within_the_limit():
    picture = DagPicture(chain(120), title="long")
    assert not picture.overview
    assert max(picture._canvas.get_width_height()) <= MAX_PIXELS


def test_a_revise_edge_runs_beside_the_rows_it_spans():
    picture = DagPicture(flow_like(40))
    side = picture.placement.back_edges[("step_039", "step_000")]
    ys = sorted((picture.pos["step_039"][1], picture.pos["step_000"][1]))
    spanned = [n for n, (_, y) in picture.pos.items() if ys[0] <= y <= ys[1]]
    assert all(side < picture.placement.labels[n].box[0] for n in spanned)
    x0, _, x1, _ = picture.placement.bounds
    assert x0 < side < x1


@pytest.mark.parametrize("title", ["cost $5 to $10.stratum.yaml: main", r"x $\foo$.stratum.yaml: main",
                                   "price_$a^b$.stratum.yaml: main"])
def test_text_is_drawn_as_written_not_as_mathtext(title):
    g = chain(3)
    g.nodes["s1"]["label"] = "pay $1 or $2"
    picture = DagPicture(g, title=title)
    assert picture.png().startswith(b"\x89PNG")
    picture.svg()
    texts = [picture.figure._suptitle, *picture.figure.legends[0].get_texts(), *picture.ax.texts]
    assert all(not t.get_parse_math() for t in texts)
    shown = picture.figure._suptitle.get_window_extent(picture._canvas.get_renderer()).width
    assert shown == pytest.approx(text_width(title) * 11 * DPI / 72, rel=0.05)


def test_the_overview_note_and_title_are_drawn_as_written():
    picture = DagPicture(chain(400), title="cost $5 to $10")
    picture.png()
    assert all(not t.get_parse_math() for t in [*picture.figure.texts, picture.figure._suptitle])


def test_the_png_is_the_canvas_exactly():
    picture = DagPicture(flow_like(30), title="t")
    picture.recolor({"step_001": "stopped", "step_002": "not_reached"}, {"step_003": 2})
    decoded = np.asarray(Image.open(io.BytesIO(picture.png())).convert("RGB"))
    assert np.array_equal(decoded, np.asarray(picture._canvas.buffer_rgba())[:, :, :3])


@pytest.mark.parametrize("n", [60, 120])
def test_a_tall_pictures_names_are_drawn_whole_where_their_rows_have_room(n: int) -> None:
    picture = DagPicture(chain(n, label=lambda i: f"fetch-source-file-{i:03d}"))
    assert picture.placement.scale.chars < len("fetch-source-file-000")  # a smaller scale, for the height
    drawn = sorted(label.text for label in picture.placement.labels.values())
    assert drawn == [f"fetch-source-file-{i:03d}" for i in range(n)]
