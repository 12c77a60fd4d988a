"""Draw a flow graph with matplotlib, and recolour it cheaply as a run progresses.

Shared by the notebook's live view and ``lockgate graph``. Uses a bare ``Figure`` (no pyplot
state, safe from background tasks). The layout and every artist are built once; a status change
only updates the node colour arrays and re-renders, which keeps a recolour of a 200-node graph
well under the cost of a first draw. Each visual channel has one meaning: fill colour is the
status, the diamond marks a gate, line style is the edge kind.
"""

from __future__ import annotations

import io
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import networkx as nx
from PIL import Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch

from .layout import BACK_EDGE_KINDS, layered_positions, overview_positions


@dataclass(frozen=True, slots=True)
class StatusStyle:
    fill: str
    edge: str
    linestyle: str = "solid"
    label: str = ""


STATUS_STYLES: dict[str, StatusStyle] = {
    "pending": StatusStyle("#e1e4e8", "#8c959f", label="pending"),
    "ready": StatusStyle("#cfe5fa", "#4f9dde", label="ready"),
    "running": StatusStyle("#4f9dde", "#1f6feb", label="running"),
    "retrying": StatusStyle("#a371f7", "#6e40c9", label="retrying"),
    "waiting": StatusStyle("#f2cc60", "#9a6700", label="waiting at a gate"),
    "succeeded": StatusStyle("#3fb950", "#1a7f37", label="succeeded"),
    "failed": StatusStyle("#e5534b", "#a40e26", label="failed"),
    "skipped": StatusStyle("#ffffff", "#8c959f", "dashed", label="skipped"),
    "killed": StatusStyle("#6e7781", "#32383f", label="killed"),
}

EDGE_STYLES: dict[str, tuple[str, str]] = {
    "data": ("solid", "#57606a"),
    "after": ("dotted", "#57606a"),
    "on_fail": ("dashed", "#cf222e"),
    "approve": ("dashed", "#1a7f37"),
    "kill": ("dashed", "#6e7781"),
    "revise": ("dashed", "#9a6700"),
}

_FULL_LABELS_UP_TO = 60
_FULL_GRAPH_UP_TO = 300  # beyond this, edges and names are an unreadable mass: draw an overview


class DagPicture:
    """A drawn flow graph whose node colours can be changed and re-rendered.

    ``graph`` is a DiGraph whose nodes may carry ``kind`` (``gate`` draws a diamond) and
    ``label``, and whose edges carry ``kind`` (data, after, on_fail, approve, kill, revise).
    A graph of more than ``_FULL_GRAPH_UP_TO`` nodes is drawn as an overview, and says so: its
    nodes on a grid in layer order, coloured by status, without edges, names or retry badges.
    """

    def __init__(self, graph: nx.DiGraph, *, title: str | None = None, legend: bool = True) -> None:
        self.graph = graph
        self.nodes: list[Hashable] = list(graph.nodes)
        self.overview = len(self.nodes) > _FULL_GRAPH_UP_TO
        self.pos = (overview_positions if self.overview else layered_positions)(graph) if self.nodes else {}
        self._statuses: dict[Hashable, str] = {n: "pending" for n in self.nodes}
        self._badges: dict[Hashable, object] = {}
        self.figure = self._new_figure()
        self._canvas = FigureCanvasAgg(self.figure)
        self._background = None
        top = (0.9 if title else 0.96) if not self.overview else 1 - 0.95 / self.figure.get_size_inches()[1]
        self.ax = self.figure.add_axes((0.02, 0.02, 0.96 if not legend else 0.74, top))
        self.ax.set_axis_off()
        if title:
            self.figure.suptitle(title, fontsize=11, x=0.02, ha="left")
        if self.overview:
            self._draw_overview_note(top)
        else:
            self._draw_edges()
            self._draw_labels()
        self._draw_nodes()
        self._frame()
        if legend:
            self._draw_legend()

    # -- public ---------------------------------------------------------------------------------

    def recolor(self, statuses: Mapping[Hashable, str], attempts: Mapping[Hashable, int] | None = None) -> None:
        """Apply step statuses (keys not in the graph are ignored) and retry badges."""
        for node, status in statuses.items():
            if node in self._statuses:
                self._statuses[node] = status if status in STATUS_STYLES else "pending"
        for group in self._groups:
            styles = [STATUS_STYLES[self._statuses[n]] for n in group.nodes]
            group.collection.set_facecolor([s.fill for s in styles])
            group.collection.set_edgecolor([s.edge for s in styles])
            group.collection.set_linestyle([s.linestyle for s in styles])
        for node, count in (attempts or {}).items():
            self._badge(node, count)

    def png(self, dpi: int | None = None) -> bytes:
        """The picture as PNG bytes.

        At the figure's own resolution only the nodes and badges are redrawn over a cached
        background of edges, labels and legend (blitting), which is what makes live recolouring
        cheap; another ``dpi`` renders the whole figure.
        """
        if dpi is not None and dpi != self.figure.dpi:
            buf = io.BytesIO()
            self.figure.savefig(buf, format="png", dpi=dpi)
            return buf.getvalue()
        self._blit()
        width, height = self._canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self._canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        image.save(buf, format="PNG", compress_level=1)
        return buf.getvalue()

    def _blit(self) -> None:
        dynamic = [g.collection for g in self._groups] + list(self._badges.values())
        if self._background is None:
            for artist in dynamic:
                artist.set_visible(False)
            self._canvas.draw()
            self._background = self._canvas.copy_from_bbox(self.figure.bbox)
            for artist in dynamic:
                artist.set_visible(True)
        else:
            self._canvas.restore_region(self._background)
        for artist in dynamic:
            self.ax.draw_artist(artist)

    def svg(self) -> str:
        buf = io.StringIO()
        self.figure.savefig(buf, format="svg")
        return buf.getvalue()

    # -- drawing --------------------------------------------------------------------------------

    def _new_figure(self) -> Figure:
        rows = {y for _, y in self.pos.values()} or {0}
        widest = max((sum(1 for _, y in self.pos.values() if y == r) for r in rows), default=1)
        column, row = (0.22, 0.26) if self.overview else (1.3, 0.9)
        width = min(16.0, max(6.0, column * widest + 3.0))
        height = min(14.0, max(2.6, row * len(rows) + 1.0 + (0.5 if self.overview else 0)))
        return Figure(figsize=(width, height), dpi=100)

    def _draw_overview_note(self, top: float) -> None:
        self.figure.text(
            0.02, top + 0.1 / self.figure.get_size_inches()[1],
            f"{len(self.nodes)} steps: too many to draw with edges and names. An overview: one square per step,\n"
            "in flow order (left to right, top to bottom), coloured by status.", fontsize=8, color="#57606a",
        )

    def _draw_edges(self) -> None:
        by_kind: dict[str, list] = {}
        heads = []
        for u, v, kind in self.graph.edges(data="kind", default="data"):
            if u not in self.pos or v not in self.pos or u == v:
                continue
            if kind in BACK_EDGE_KINDS:
                self._back_edge(u, v, kind)
                continue
            (x1, y1), (x2, y2) = self.pos[u], self.pos[v]
            by_kind.setdefault(kind, []).append(((x1, y1), (x2, y2)))
            heads.append(_arrow_head((x1, y1), (x2, y2)))
        for kind, segments in by_kind.items():
            style, colour = EDGE_STYLES.get(kind, EDGE_STYLES["data"])
            self.ax.add_collection(LineCollection(segments, linestyles=style, colors=colour, linewidths=1.1, zorder=1))
        if heads:
            self.ax.add_collection(PolyCollection(heads, facecolors="#57606a", edgecolors="none", zorder=1.5))

    def _back_edge(self, u: Hashable, v: Hashable, kind: str) -> None:
        style, colour = EDGE_STYLES.get(kind, EDGE_STYLES["revise"])
        self.ax.add_patch(
            FancyArrowPatch(
                self.pos[u], self.pos[v], connectionstyle="arc3,rad=-0.45", arrowstyle="-|>",
                mutation_scale=10, linestyle=style, color=colour, linewidth=1.1, zorder=1,
                shrinkA=14, shrinkB=14,
            )
        )

    def _draw_nodes(self) -> None:
        gates = [n for n in self.nodes if self.graph.nodes[n].get("kind") == "gate"]
        others = [n for n in self.nodes if n not in set(gates)]
        size = 520 if len(self.nodes) <= _FULL_LABELS_UP_TO else 180 if not self.overview else self._cell_size()
        marker = "s" if self.overview else "o"
        self._groups = [g for g in (_NodeGroup(others, marker, size), _NodeGroup(gates, "D", size * 0.9)) if g.nodes]
        for group in self._groups:
            xy = [self.pos[n] for n in group.nodes]
            group.collection = self.ax.scatter(
                [p[0] for p in xy], [p[1] for p in xy], s=group.size, marker=group.marker, zorder=2, linewidths=1.4
            )
        self.recolor({})

    def _cell_size(self) -> float:
        """Marker area (points²) of a square filling most of one overview grid cell."""
        columns = 1 + max(x for x, _ in self.pos.values())
        rows = 1 - min(y for _, y in self.pos.values())
        width, height = self.figure.get_size_inches()
        cell = min(width * 0.74 / (columns + 1.8), height * 0.8 / (rows + 1.25)) * 72
        return max(4.0, (cell * 0.7) ** 2)

    def _draw_labels(self) -> None:
        full = len(self.nodes) <= _FULL_LABELS_UP_TO
        limit, fontsize = (24, 8) if full else (10, 6)
        for node in self.nodes:
            label = str(self.graph.nodes[node].get("label") or node)
            if len(label) > limit:
                label = label[: limit - 1] + "…"
            x, y = self.pos[node]
            self.ax.text(x, y - 0.28, label, ha="center", va="top", fontsize=fontsize, zorder=3, clip_on=False)

    def _badge(self, node: Hashable, attempts: int) -> None:
        text = f"↻{attempts}" if attempts > 1 else ""
        badge = self._badges.get(node)
        if badge is None:
            if not text or node not in self.pos or self.overview:
                return
            x, y = self.pos[node]
            badge = self.ax.text(x + 0.18, y + 0.16, "", fontsize=7, color="#6e40c9", zorder=4)
            self._badges[node] = badge
        badge.set_text(text)

    def _frame(self) -> None:
        if not self.pos:
            self.ax.text(0.5, 0.5, "(no steps)", ha="center", va="center", transform=self.ax.transAxes)
            return
        xs = [p[0] for p in self.pos.values()]
        ys = [p[1] for p in self.pos.values()]
        self.ax.set_xlim(min(xs) - 0.9, max(xs) + 0.9)
        self.ax.set_ylim(min(ys) - 0.75, max(ys) + 0.5)

    def _draw_legend(self) -> None:
        handles = [
            Line2D([], [], marker="s" if self.overview else "o", linestyle="none", markersize=8, markerfacecolor=s.fill,
                   markeredgecolor=s.edge, label=s.label)
            for s in STATUS_STYLES.values()
        ]
        handles.append(Line2D([], [], marker="D", linestyle="none", markersize=7, markerfacecolor="white",
                              markeredgecolor="#57606a", label="gate"))
        kinds = set() if self.overview else {k for _, _, k in self.graph.edges(data="kind", default="data")}
        handles += [
            Line2D([], [], linestyle=EDGE_STYLES[k][0], color=EDGE_STYLES[k][1], label=f"{k} edge")
            for k in EDGE_STYLES if k in kinds
        ]
        self.figure.legend(handles=handles, loc="upper right", fontsize=7, frameon=False, borderaxespad=0.6)


@dataclass
class _NodeGroup:
    nodes: list[Hashable]
    marker: str
    size: float
    collection: object = None


def _arrow_head(start: tuple[float, float], end: tuple[float, float], length: float = 0.09, back: float = 0.19):
    """A small triangle just short of ``end`` pointing from ``start`` to ``end``."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    norm = math.hypot(dx, dy) or 1.0
    ux, uy = dx / norm, dy / norm
    tip = (end[0] - ux * back, end[1] - uy * back)
    base = (tip[0] - ux * length, tip[1] - uy * length)
    half = length * 0.45
    return [tip, (base[0] - uy * half, base[1] + ux * half), (base[0] + uy * half, base[1] - ux * half)]


def draw(graph: nx.DiGraph, statuses: Mapping[Hashable, str] | None = None, *, title: str | None = None) -> DagPicture:
    """Draw ``graph`` (optionally coloured by step status) and return the picture."""
    picture = DagPicture(graph, title=title)
    if statuses:
        picture.recolor(statuses)
    return picture
