"""The object a ``%%flow NAME`` cell binds: a validated spec that draws itself and starts runs."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from typing import Any

from ..dsl.codes import AGENT_CONFIG_CODES
from ..dsl.loader import LoadResult
from .celllines import MAGIC_LINE, in_cell


class FlowSpec:
    """A valid spec from a notebook cell, bound to a name in the user namespace.

    ``spec`` is the typed IR; ``flow`` the flow that :meth:`start` runs (the entry flow unless
    the cell said ``--flow``); ``lines_above`` the cell's lines above the spec (the ``%%flow``
    line, and blank lines above it), so that warnings name the cell's own lines. Rendering
    shows the flow graph, a one-line summary and the warnings.
    """

    def __init__(self, name: str, result: LoadResult, flow: str | None = None, *,
                 lines_above: int = MAGIC_LINE) -> None:
        if result.spec is None:
            raise ValueError("FlowSpec needs a valid spec")
        self.name = name
        self.result = result
        self.spec = result.spec
        self.text = result.text
        self.flow = flow or self.spec.entry
        self.lines_above = lines_above
        self._graph = None
        self._png: bytes | None = None

    @property
    def warnings(self):
        """Advisory warnings, in the cell's line numbers, without "agent not configured":
        notebooks pass agents to start()."""
        return [in_cell(w, self.lines_above) for w in self.result.warnings if w.code not in AGENT_CONFIG_CODES]

    def graph(self):
        """The flow as a networkx DiGraph (edges labelled by kind), built once; do not mutate."""
        if self._graph is None:
            from ..dsl.graph import flow_graph

            self._graph = flow_graph(self.spec, self.flow)
        return self._graph

    def mermaid(self) -> str:
        from ..dsl.graphtext import to_mermaid

        return to_mermaid(self.graph())

    def png(self) -> bytes:
        """The flow drawn as PNG, rendered once (every display of the spec shows the same picture)."""
        if self._png is None:
            from .dag import draw

            self._png = draw(self.graph(), title=f"{self.name}: {self.flow}").png()
        return self._png

    def start(self, inputs: Mapping[str, Any] | None = None, *, agents: Mapping[str, Any] | None = None, **options: Any):
        """Start a run as an asyncio task on the kernel's loop and return its live view at once.

        Inputs the flow's input contract refuses, an agent the flow uses that is neither in
        ``agents`` nor registered nor configured, one whose (synchronous) preflight finds it
        cannot run here, and ``agents`` that is not a mapping fail the cell here with a one-line
        :class:`FlowCellError` (an ``error`` output, as a refused ``%flow run`` line; the engine's
        error is its ``__cause__``); nothing starts."""
        from ..errors import LockgateError
        from .cellerror import FlowCellError
        from .run_view import start_run
        from .startcheck import agents_mapping

        agents = agents_mapping(agents, f"{self.name}.start")
        try:
            return start_run(self, {} if inputs is None else inputs, agents=agents, **options)
        except LockgateError as exc:
            raise FlowCellError(f"{self.name}.start: {getattr(exc, 'message', None) or exc}") from exc

    def summary(self) -> str:
        flow = self.spec.flows[self.flow]
        kinds: dict[str, int] = {}
        for step in flow.steps:
            kinds[step.kind or "?"] = kinds.get(step.kind or "?", 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        inputs = ", ".join(flow.input) or "none"
        return f"flow {self.flow!r}: {_counted(len(flow.steps), 'step')} ({parts}); inputs: {inputs}"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        text = f"FlowSpec {self.name}: {self.summary()}"
        if self.warnings:
            text += f"\n{_counted(len(self.warnings), 'warning')}:\n" + "\n".join(
                f"  line {w.range.start.line + 1}: {w.code} {w.message}" for w in self.warnings
            )
        png = self.png()
        warn_html = "".join(
            f"<li><code>{w.code}</code> line {w.range.start.line + 1}: {html.escape(w.message)}</li>"
            for w in self.warnings
        )
        body = (
            f"<div><b>{html.escape(self.name)}</b> — {html.escape(self.summary())}"
            + (f"<ul style='color:#9a6700'>{warn_html}</ul>" if warn_html else "")
            + f"<br><img src='data:image/png;base64,{base64.b64encode(png).decode()}'/></div>"
        )
        return {"text/plain": text, "text/html": body}

    def __repr__(self) -> str:
        return f"<FlowSpec {self.name}: {self.summary()}>"


def _counted(count: int, noun: str) -> str:
    """``1 step``, ``2 steps``: a count and its (regular) noun."""
    return f"{count} {noun}{'s' * (count != 1)}"
