"""The ipywidgets layout of a run's live view: header, progress bar, gate cards, step table, audit."""

from __future__ import annotations

import html
import json
from typing import Any

_STATUS_COLOUR = {
    "complete": "#1a7f37", "error": "#a40e26", "killed": "#32383f", "cancelled": "#57606a",
    "await_gate": "#9a6700", "running": "#1f6feb", "starting": "#57606a",
}


class RunWidget:
    """Widgets of one :class:`~lockgate.kernel_ext.run_view.NotebookRun`."""

    def __init__(self, run: Any) -> None:
        import ipywidgets as w

        self.header = w.HTML()
        self.progress = w.IntProgress(min=0, max=max(1, len(run.rows)), value=0,
                                      layout=w.Layout(width="60%"))
        self.gates = w.VBox([])
        self.show_cards(run.gates.cards)  # gates already waiting when the run is first shown
        self.table = w.HTML()
        self.audit = w.HTML("<i>Open to load the audit log.</i>")
        self.audit_box = w.Accordion(children=[self.audit], selected_index=None)
        self.audit_box.set_title(0, "Audit log")
        self.audit_box.observe(lambda change: self._load_audit(run, change), names="selected_index")
        self.widget = w.VBox([self.header, self.progress, self.gates, self.table, self.audit_box])

    def show_cards(self, cards: Any) -> None:
        """Show the card of every gate of the run so far, waiting or decided, in order."""
        self.gates.children = tuple(card.widget for card in cards if card.widget is not None)

    def refresh(self, run: Any, png: bytes | None) -> None:
        from .run_view import html_table

        done = sum(1 for r in run.rows.values() if r.status in ("succeeded", "skipped", "failed", "killed"))
        self.progress.value = min(done, self.progress.max)
        self.progress.bar_style = {"complete": "success", "error": "danger", "killed": "danger"}.get(run.status, "info")
        colour = _STATUS_COLOUR.get(run.status, "#57606a")
        failure = run.failure if run.status in ("error", "killed") else None
        self.header.value = (
            f"<b>run {html.escape(run.run_id or '(starting)')}</b> of <code>{html.escape(run.flowspec.name)}</code>: "
            f"<span class='lockgate-status' style='color:{colour}'><b>{html.escape(run.status)}</b></span>"
            f" — {done}/{len(run.rows)} steps"
            + (f"<br><span style='color:#a40e26;white-space:pre-wrap'>{html.escape(str(failure))}</span>"
               if failure else "")
        )
        self.table.value = html_table(run)
        if self.audit_box.selected_index == 0:
            self._load_audit(run, None)

    def _load_audit(self, run: Any, change: Any) -> None:
        if self.audit_box.selected_index != 0 or run.run_id is None:
            return
        record = run.audit()
        rows = "".join(
            f"<tr><td>{e['seq']}</td><td>{html.escape(str(e['at']))}</td><td>{html.escape(e['type'])}</td>"
            f"<td>{html.escape(str(e.get('step_id') or ''))}</td>"
            f"<td><code>{html.escape(json.dumps(e.get('detail') or {})[:200])}</code></td></tr>"
            for e in record.get("events", [])
        )
        self.audit.value = (
            "<table><thead><tr><th>#</th><th>at</th><th>event</th><th>step</th><th>detail</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
