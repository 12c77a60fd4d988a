"""Gate cards: Approve / Revise / Kill buttons with a rationale box, and the channel behind them.

A waiting gate is an :class:`asyncio.Future` on the kernel's loop; a button click (or
``run.approve(...)`` in another cell) resolves it, so the cell that started the run never blocks.
The same gate resolved from elsewhere (the CLI on the same store, another notebook) also ends the
wait: :class:`WidgetGates` races the click against the store.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..engine.gatechannel import OUTCOMES, Decision, GateRequest, StoreGates
from ..errors import EngineError

DecideCallback = Callable[[str, str], bool]


def offered(gate: Mapping[str, Any]) -> tuple[str, ...]:
    """The decisions a waiting gate offers: the engine's ``decisions`` for it (it leaves revise
    out when a revise would fail the run), all three when it does not say."""
    listed = gate.get("decisions")
    return tuple(o for o in OUTCOMES if o in listed) if listed is not None else OUTCOMES


def not_offered(gate: Mapping[str, Any], outcome: str) -> str | None:
    """Why ``outcome`` is not offered for this waiting gate (one line), or None when it is."""
    if outcome in offered(gate):
        return None
    if outcome == "revise" and gate.get("revise_unavailable"):
        return str(gate["revise_unavailable"])
    return f"the gate does not offer {outcome}"


def refuse_unoffered(gate: Mapping[str, Any] | None, step: str, outcome: str) -> None:
    """Refuse ``outcome`` on ``gate`` (waiting gate ``step`` as its card or the engine shows it;
    None: not waiting) when the gate does not offer it, a revise that would fail the run: an
    EngineError naming the decisions it offers, nothing decided. Its card hides such a button;
    ``run.revise(...)`` and ``%flow revise`` refuse in these words."""
    why = not_offered(gate, outcome) if gate is not None else None
    if why:
        choices = offered(gate)
        raise EngineError(f"gate {step}: {why} (it offers {', '.join(choices)})",
                          error_type="not_offered", step_id=step, decisions=list(choices))


def waiting_gate(gates: WidgetGates | None, engine: Any, run_id: str | None, step: str) -> Mapping[str, Any] | None:
    """Waiting gate ``step`` as its card here shows it (``gates``: the run's, when this kernel
    drives it), else as the engine lists it; None when it is not waiting (deciding it is then
    refused with the engine's own message)."""
    entry = gates.waiting.get(step) if gates is not None else None
    if entry is not None:
        return entry[1].request.response
    if run_id is None:
        return None
    return next((g for g in engine.status(run_id).get("gates", []) if g["step_id"] == step), None)


class GateCard:
    """The widget of one waiting gate. ``on_decide(outcome, note)`` returns False if the gate
    was already decided (a double click), in which case nothing happens.

    A decision taken on the card is shown as being applied (``pending``) until the runner has
    applied it (:meth:`show_decision`) or says it was not (:meth:`show_refused`): the engine may
    refuse it, another decision made elsewhere may have come first, or the run may end."""

    def __init__(self, request: GateRequest, on_decide: DecideCallback) -> None:
        import ipywidgets as w

        self.request = request
        self._on_decide = on_decide
        self.decided = False
        self.pending: Decision | None = None
        self.offered = offered(request.response)
        routes = request.response.get("routes") or {}
        detail = "; ".join(
            [", ".join(f"{k} → {v or 'end of flow'}" for k, v in routes.items() if k in self.offered)]
            + [why for why in [not_offered(request.response, "revise")] if why]
        )
        self.title = w.HTML(
            f"<b>Gate <code>{html.escape(request.step_id)}</code></b> is waiting for a decision"
            + (f" <span style='color:#57606a'>({html.escape(detail)})</span>" if detail else "")
        )
        hint = "Rationale (required to revise)" if "revise" in self.offered else "Rationale (optional)"
        self.note = w.Textarea(placeholder=hint, layout=w.Layout(width="100%", height="4em"))
        self.approve = w.Button(description="Approve", button_style="success", icon="check")
        self.revise = w.Button(description="Revise", button_style="warning", icon="undo")
        self.kill = w.Button(description="Kill", button_style="danger", icon="times")
        self.message = w.HTML("")
        for button, outcome in ((self.approve, "approve"), (self.revise, "revise"), (self.kill, "kill")):
            button.on_click(lambda _b, o=outcome: self.click(o))
            if outcome not in self.offered:  # e.g. revise where it would fail the run
                button.layout.display = "none"
        self.widget = w.VBox(
            [self.title, self.note, w.HBox([self.approve, self.revise, self.kill]), self.message],
            layout=w.Layout(border="1px solid #f2cc60", padding="6px", margin="4px 0"),
        )

    @property
    def buttons(self):
        return (self.approve, self.revise, self.kill)

    def click(self, outcome: str) -> None:
        """What a button press does: check, disable, record."""
        if any(b.disabled for b in self.buttons):
            return
        refused = not_offered(self.request.response, outcome)
        if refused:
            self.message.value = f"<span style='color:#a40e26'>{html.escape(refused)}.</span>"
            return
        note = self.note.value.strip()
        if outcome == "revise" and not note:
            self.message.value = "<span style='color:#a40e26'>A revision needs a note saying what to change.</span>"
            return
        self.disable()
        if not self._on_decide(outcome, note):
            self.message.value = "<span style='color:#57606a'>This gate was already decided.</span>"

    def show_pending(self, decision: Decision) -> None:
        """A decision taken here, not yet applied: no more clicks, and it says so."""
        self.pending = decision
        self.disable()
        self.title.value = f"<b>Gate <code>{html.escape(self.request.step_id)}</code></b>: decided here, being applied"
        self.message.value = (f"<span style='color:#57606a'><b>{html.escape(decision.outcome)}</b>: "
                              "being applied…</span>")

    def show_refused(self, decision: Decision, why: str) -> None:
        """The decision taken on this card was not applied (refused, the gate still waiting: a
        new card asks again; or another decision came first, or the run ended): say so and why."""
        self.decided = True
        self.pending = None
        self.disable()
        self.title.value = f"<b>Gate <code>{html.escape(self.request.step_id)}</code></b>: decision not applied"
        self.message.value = (f"<span style='color:#a40e26'>your <b>{html.escape(decision.outcome)}</b> was not "
                              f"applied: {html.escape(why)}</span>")

    def show_run_ended(self, how: str) -> None:
        """The run ended elsewhere (``how``: cancelled, killed...) while the gate waited: nobody
        decided it, and it can no longer be decided."""
        self.decided = True
        self.disable()
        self.title.value = f"<b>Gate <code>{html.escape(self.request.step_id)}</code></b> was not decided"
        self.note.layout.display = "none"
        self.widget.layout.border = "1px solid #d0d7de"
        self.message.value = (f"<span style='color:#57606a'>run {html.escape(how)} (elsewhere) while the gate "
                              "waited; it can no longer be decided</span>")

    def disable(self) -> None:
        for button in self.buttons:
            button.disabled = True
        self.note.disabled = True

    def show_decision(self, decision: Decision, *, elsewhere: bool = False) -> None:
        self.decided = True
        self.pending = None
        self.disable()
        self.title.value = f"<b>Gate <code>{html.escape(self.request.step_id)}</code></b> decided"
        self.note.layout.display = "none"
        self.widget.layout.border = "1px solid #d0d7de"
        where = " (decided elsewhere)" if elsewhere else ""
        note = f": {html.escape(decision.rationale)}" if decision.rationale else ""
        self.message.value = (
            f"<b>{html.escape(decision.outcome)}</b> by {html.escape(decision.resolved_by)}{where}{note}"
        )


    def close(self, run_status: str) -> None:
        """The run ended (cancelled, failed...) with this gate undecided: no button works any
        more; a decision taken here and never applied says so."""
        if self.decided:
            return
        if self.pending is not None:
            self.show_refused(self.pending, f"the run is {run_status}")
            return
        self.disable()
        self.title.value = f"<b>Gate <code>{html.escape(self.request.step_id)}</code></b> was not decided"
        self.message.value = (
            f"<span style='color:#57606a'>The run is {html.escape(run_status)}; this gate can no longer be decided.</span>"
        )


class PlainGateCard:
    """A waiting gate where ipywidgets is not installed: no buttons (the run's text summary shows
    the gate waiting; ``run.approve(...)`` or ``%flow approve`` decide it)."""

    buttons = ()
    widget = None

    def __init__(self, request: GateRequest, on_decide: DecideCallback) -> None:
        self.request = request
        self.decided = False
        self.pending: Decision | None = None

    def show_pending(self, decision: Decision) -> None:
        self.pending = decision

    def show_decision(self, decision: Decision, *, elsewhere: bool = False) -> None:
        self.decided, self.pending = True, None

    def show_refused(self, decision: Decision, why: str) -> None:
        self.decided, self.pending = True, None

    def show_run_ended(self, how: str) -> None:
        self.decided = True

    def close(self, run_status: str) -> None:
        """Nothing to disable."""


def stored_decisions(events: Iterable[Mapping[str, Any]]) -> dict[str, Decision]:
    """Gate -> the decision the store recorded, for each gate whose latest event (of an
    :meth:`Engine.audit` record's ``events``) is its ``gate_resolved``: a gate waiting again
    (after a revise) has none. Each is ``applied`` (made through the engine, here or elsewhere)."""
    decided: dict[str, Decision] = {}
    for event in events:
        step, kind, detail = event.get("step_id"), event.get("type"), event.get("detail") or {}
        if kind == "gate_waiting":
            decided.pop(step, None)
        elif kind == "gate_resolved" and detail.get("decision") in OUTCOMES:
            decided[step] = Decision(detail["decision"], str(detail.get("rationale") or ""),
                                     str(detail.get("resolved_by") or "human"), applied=True)
    return decided


def make_card(request: GateRequest, on_decide: DecideCallback) -> GateCard | PlainGateCard:
    try:
        return GateCard(request, on_decide)
    except ImportError:
        return PlainGateCard(request, on_decide)


class WidgetGates:
    """A GateChannel answered by gate cards, by :meth:`settle`, or by anyone on the store."""

    def __init__(self, show: Callable[[GateCard], None], store: Any = None, *, resolved_by: str | None = None) -> None:
        self._show = show
        self._store_gates = StoreGates(store) if store is not None else None
        self.resolved_by = resolved_by or "human"
        self.waiting: dict[str, tuple[asyncio.Future, GateCard]] = {}
        self.cards: list[GateCard] = []
        #: gates whose wait ended because the run ended elsewhere (nobody decided them)
        self.run_ended_at: set[str] = set()

    async def decide(self, request: GateRequest) -> Decision | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Decision] = loop.create_future()
        card = make_card(request, lambda outcome, note: self.settle(request.step_id, outcome, note))
        self.waiting[request.step_id] = (future, card)
        self.cards.append(card)
        self._show(card)
        waiters = {future}
        elsewhere = None
        if self._store_gates is not None:
            elsewhere = asyncio.ensure_future(self._store_gates.decide(request))
            waiters.add(elsewhere)
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if elsewhere is not None and not elsewhere.done():
                elsewhere.cancel()
            if self.waiting.get(request.step_id, (None,))[0] is future:
                del self.waiting[request.step_id]
        if future in done:
            return future.result()
        decision = elsewhere.result()
        if not future.done():
            future.cancel()
        if decision is not None and decision.ended:
            self.run_ended_at.add(request.step_id)
            card.show_run_ended(decision.ended)
        elif decision is not None:
            card.show_decision(decision, elsewhere=True)
        return decision

    def close(self, run_status: str, decided: Mapping[str, Decision] | None = None) -> None:
        """The run the cards belong to has ended: settle every card still undecided. The newest
        card of a gate ``decided`` names (the store's record: see :func:`stored_decisions`)
        shows that decision as made elsewhere (the drive can end, the run completed by a
        terminal's decision, before its gate's question hears of it); any other card is
        disabled, saying the gate can no longer be decided. A decision taken on a card and
        never applied says so, and why: the one the store recorded instead, or the run's end;
        one the store recorded as it was taken shows applied."""
        decided = decided or {}
        newest = {card.request.step_id: card for card in self.cards}
        for card in self.cards:
            step = card.request.step_id
            stored = decided.get(step) if newest[step] is card and not card.decided else None
            if card.pending is not None and stored is not None and _same(card.pending, stored):
                card.show_decision(card.pending)
            elif card.pending is not None and stored is not None:
                card.show_refused(card.pending, won(stored))
            elif stored is not None:
                card.show_decision(stored, elsewhere=True)
            else:
                card.close(run_status)

    def not_applied(self, request: GateRequest, decision: Decision, refusal: Exception) -> None:
        """The runner did not apply the decision taken on ``request``'s card: the engine refused
        it with the gate still waiting (a new card then asks again, without that outcome), or
        another decision came first, or the run ended. The card says so, and why: the decision
        the store recorded instead, or the run's end, else the engine's refusal."""
        card = next((c for c in reversed(self.cards) if c.request.token == request.token), None)
        if card is None:
            return
        found = self._store_gates.lookup(request) if self._store_gates is not None else None
        if found is not None and found.ended:
            card.show_refused(decision, f"the run was {found.ended} elsewhere")
        elif found is not None:
            card.show_refused(decision, won(found))
        else:
            card.show_refused(decision, str(refusal))

    def applied(self, step_id: str) -> None:
        """The runner applied the decision taken on the newest card of gate ``step_id``: it now
        shows it decided."""
        card = next((c for c in reversed(self.cards) if c.request.step_id == step_id), None)
        if card is not None and card.pending is not None and not card.decided:
            card.show_decision(card.pending)

    def pending_decision(self, step_id: str) -> Decision | None:
        """The decision taken here on gate ``step_id`` that the runner has not applied yet."""
        card = next((c for c in reversed(self.cards) if c.request.step_id == step_id), None)
        return card.pending if card is not None and not card.decided else None

    def settle(self, step_id: str, outcome: str, note: str = "", resolved_by: str | None = None) -> bool:
        """Decide a waiting gate; False when no such gate waits here (or it is already decided)."""
        entry = self.waiting.get(step_id)
        if entry is None or entry[0].done():
            return False
        del self.waiting[step_id]  # decided: no longer waiting, even before the run moves on
        decision = Decision(outcome, note, resolved_by or self.resolved_by)
        entry[0].set_result(decision)
        entry[1].show_pending(decision)  # decided once the runner has applied it (see applied)
        return True


#: an outcome as its past participle: "the gate was killed"
PAST = {"approve": "approved", "revise": "sent back for revision", "kill": "killed"}


def won(stored: Decision) -> str:
    """Why a decision taken here was not applied: ``stored`` came first (made elsewhere)."""
    by = f" by {stored.resolved_by}" if stored.resolved_by not in ("human", "") else ""
    note = f" ({stored.rationale})" if stored.rationale else ""
    return f"the gate was {PAST.get(stored.outcome, stored.outcome)} from elsewhere{by}{note}"


def _same(taken: Decision, stored: Decision) -> bool:
    """Whether the store's decision is the one taken here (applied, its news lost meanwhile)."""
    return (taken.outcome, taken.rationale, taken.resolved_by) == (stored.outcome, stored.rationale, stored.resolved_by)

