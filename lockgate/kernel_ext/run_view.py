"""A run in a notebook: an asyncio task on the kernel's loop with a live view.

The view shows the DAG coloured by step status (redrawn at most four times a second), a progress
bar, a step table with attempts and the latest violations, gate cards, and the audit log. The DAG
is also a plain image output updated through a display handle, so the final picture stays in the
saved notebook. ``await run`` waits for the result; ``run.approve(...)`` and friends decide gates
from code (papermill, VS Code, tests).
"""

from __future__ import annotations

import asyncio
import html
import json
import sys
from collections.abc import Mapping
from typing import Any

from ..engine.progress import ProgressEvent
from .cellparent import executing_cell, in_cell
from .gates import GateCard, WidgetGates, refuse_unoffered, waiting_gate
from .storeplace import notebook_store

REDRAW_INTERVAL = 0.25
FINAL = ("complete", "error", "killed", "cancelled")

#: a row's status in a run that ended, for the statuses of steps that were still going
_ENDED_ROW = {"waiting": "stopped", "running": "stopped", "retrying": "stopped", "ready": "stopped"}

_EVENT_STATUS = {
    "step_started": "running",
    "step_succeeded": "succeeded",
    "step_failed": "failed",
    "step_retrying": "retrying",
    "step_skipped": "skipped",
    "gate_waiting": "waiting",
}


class StepRow:
    __slots__ = ("status", "attempts", "violations", "message", "agent")

    def __init__(self) -> None:
        self.status = "pending"
        self.attempts = 0
        self.violations: list[Mapping[str, Any]] = []
        self.message = ""
        self.agent = ""


class NotebookRun:
    """A live run. Create with :meth:`FlowSpec.start` or ``%flow run``."""

    def __init__(self, flowspec: Any, engine: Any, *, agents: Mapping[str, Any] | None = None,
                 workspace: Any = None, agents_variable: str | None = None) -> None:
        from ..engine.agentorigin import PythonAgents
        from ..engine.runner import make_runner
        from .childsteps import Children
        from .nextstep import agents_variable as variable_holding

        self.flowspec = flowspec
        self.engine = engine
        self.agents = agents  # what agents= gave, for %flow resume of this run
        #: the user's variable holding ``agents``, recorded with the run's claim: after a kernel
        #: restart, the resume that needs them names it (``%flow resume RUN --agents VAR``)
        self.agents_variable = agents_variable or variable_holding(_shell(), agents)
        origin = PythonAgents.given(agents, self.agents_variable).record() if agents else None
        self.run_id: str | None = None
        self.status = "starting"
        self.response: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.rows: dict[str, StepRow] = {node: StepRow() for node in flowspec.graph().nodes}
        self.gates = WidgetGates(self._show_gate, engine.store)
        self.runner = make_runner(engine=engine, agents=agents, gates=self.gates, agents_module=origin,
                                  on_event=self._on_event, workspace=workspace)
        self._children = Children()  # fanout items and subflow steps at work, by node
        self._to_look_up: set[str] = set()  # nodes whose children stopped: the store says how they stand
        self._look_up_scheduled = False
        self._task: asyncio.Task | None = None
        self._view = None  # the RunWidget: one widget model, shown by every display of the run
        self._picture = None
        self._view_id: str | None = None  # display ids shared by every display of the run, so
        self._image_id: str | None = None  # that each one (not only the newest) stays live
        self._redraw_scheduled = False
        self._final_in: Any = None  # the cell whose output carried the final view (see _show_final_here)
        self._waiters: list[asyncio.Future] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def _launch(self, coro) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:  # a terminal IPython or a script: run to the first wait, synchronously
            asyncio.run(self._drive(coro, blocking=True))
            return
        self._task = loop.create_task(self._drive(coro))

    async def _drive(self, coro, blocking: bool = False) -> None:
        if blocking:
            self.gates = WidgetGates(self._show_gate, None)  # nobody can click: leave gates waiting
            self.runner.gates = None
        try:
            result = await coro
            self.run_id = result.run_id
            self.response = result.response
            self.status = result.status
        except asyncio.CancelledError:
            self.status = "cancelled"
            raise
        except Exception as exc:  # an agent or engine failure shows in the view, never kills the kernel
            self.error = exc
            self.status = "error"
            self.response = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
        finally:
            if self.done:
                self._settle_view()
            self._redraw(final=True)
            self._notify()

    def _settle_view(self) -> None:
        """The run ended: the view shows what the store recorded, whatever the drive heard. Rows
        of a run that stopped early (cancelled, failed) no longer say "running"; a gate decided
        from a terminal, whose decision the drive can end without hearing of (it saw the run
        complete first), shows decided, its card with the decision; the cards of gates left
        undecided stop taking clicks."""
        from ..engine.graphs import picture_statuses
        from .gates import stored_decisions

        record = self._stored_record()
        self.gates.close(self.status, stored_decisions(record.get("events", [])) if record else None)
        if record is None:  # the view stays as it was; the run's own status says what happened
            return
        for node, status in picture_statuses(record).items():
            # nothing waits or runs in a run that ended: a gate it left waiting is stopped
            self.rows.setdefault(node, StepRow()).status = _ENDED_ROW.get(status, status)

    def _stored_record(self) -> dict[str, Any] | None:
        """The run's audit record, or None when it was never planned or cannot be read."""
        from ..errors import LockgateError

        if self.run_id is None:
            return None
        try:
            return self.engine.audit(self.run_id)
        except LockgateError:
            return None

    def __await__(self):
        if self._task is None:
            async def done():
                return self.result()
            return done().__await__()
        return self._await_task().__await__()

    async def _await_task(self):
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            self._stopped_waiting()
            raise
        self._show_final_here()
        return self.result()

    def _stopped_waiting(self) -> None:
        """Say so when a wait is interrupted (the kernel's stop button) while the run goes on."""
        if self._task is not None and not self._task.done():
            print(f"Stopped waiting; run {self.run_id or '(starting)'} goes on in the background "
                  "(%flow cancel RUN stops it).", file=sys.stderr)

    async def wait_until(self, predicate, timeout: float | None = 60) -> None:
        """Wait until ``predicate(run)`` holds, re-checking on every change of the run; a
        RuntimeError if the run ends first (nothing changes after that: waiting would only time
        out); a TimeoutError saying so after ``timeout`` seconds (None: no limit), the run going on."""

        async def watch():
            while not predicate(self):
                if self.done and (self._task is None or self._task.done()):
                    raise RuntimeError(f"run {self.run_id} ended {self.status} before the condition held"
                                       + (f": {self.failure}" if self.failure else ""))
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter

        try:
            await asyncio.wait_for(watch(), timeout)
        except asyncio.CancelledError:
            self._stopped_waiting()
            raise
        except TimeoutError:
            raise TimeoutError(
                f"stopped waiting after {timeout:g} s: the condition did not hold yet; run "
                f"{self.run_id or '(starting)'} goes on (it is {self.status}). Wait longer with "
                f"wait_until(..., timeout=SECONDS), or timeout=None for no limit") from None
        self._show_final_here()  # the condition held in a run that ended: this cell shows its end

    def waiting_gates(self) -> list[str]:
        """Gates of this run waiting for a decision here (cards shown, not yet decided)."""
        return list(self.gates.waiting)

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def result(self) -> Any:
        """The flow's output once complete; raises RuntimeError if the run is not complete."""
        if self.status != "complete":
            raise RuntimeError(f"run {self.run_id} is {self.status}" + (f": {self.failure}" if self.failure else ""))
        return self.response.get("output")

    @property
    def failure(self) -> str | None:
        return self.response.get("message") or self.response.get("failure") or self.response.get("reason")

    @property
    def done(self) -> bool:
        return self.status in FINAL

    def cancel(self) -> dict[str, Any]:
        """Stop the run here (its agent calls are killed) and record it cancelled in the store
        (final: a cancelled run is not resumed; what it completed stays in its audit record)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self.run_id is None:  # stopped before it was planned: the store has nothing
            self.status = "cancelled"
            return {"status": "cancelled"}
        return self.engine.cancel(self.run_id)

    def audit(self) -> dict[str, Any]:
        """The durable audit record of this run (events hash-chained)."""
        self._need_id()
        return self.engine.audit(self.run_id)

    # -- gates ----------------------------------------------------------------------------------

    def approve(self, step: str, note: str = "") -> dict[str, Any] | None:
        return self.decide(step, "approve", note)

    def revise(self, step: str, note: str) -> dict[str, Any] | None:
        if not note:
            raise ValueError("a revision needs a note saying what to change")
        return self.decide(step, "revise", note)

    def kill(self, step: str, note: str = "") -> dict[str, Any] | None:
        return self.decide(step, "kill", note)

    def decide(self, step: str, outcome: str, note: str = "") -> dict[str, Any] | None:
        """Decide a gate: through its waiting card when this kernel is driving the run, else
        through the engine (and then continue driving the run here). Refused with an EngineError,
        nothing changed: a decision the gate does not offer (a revise once its revision rounds are
        used up, which would fail the run: its card hides Revise, ``%flow revise`` refuses it in
        the same words), and a gate decided here whose decision is still being applied (the
        first decision taken stands)."""
        refuse_unoffered(waiting_gate(self.gates, self.engine, self.run_id, step), step, outcome)
        if self.gates.settle(step, outcome, note, resolved_by="human"):
            return None
        taken = self.gates.pending_decision(step)
        if taken is not None:
            from ..errors import EngineError

            raise EngineError(f"gate {step} was already decided here: {taken.outcome}, being applied; your "
                              f"{outcome} was not applied and nothing changed", error_type="already_decided",
                              run_id=self.run_id, step_id=step)
        self._need_id()
        response = self.engine.resolve_waiting_gate(self.run_id, step, outcome, note, "human")
        self.rows.setdefault(step, StepRow()).status = "killed" if outcome == "kill" else "succeeded"
        if response.get("status") not in FINAL and (self._task is None or self._task.done()):
            self._launch(self.runner.resume(self.run_id))
        else:
            self.status = response.get("status", self.status)
            self.response = response
            self._redraw(final=True)
        return response

    def _show_gate(self, card: GateCard) -> None:
        if self._view is not None:
            self._view.show_cards(self.gates.cards)
        self._update_live_status()
        self._redraw()
        self._notify()

    def _update_live_status(self) -> None:
        """While the run is driven here: ``await_gate`` when only gates are waiting (nothing
        running), else ``running``; what the header says, as a finished run's result would."""
        if self.status not in ("starting", "running", "await_gate"):
            return
        busy = any(row.status in ("running", "retrying") for row in self.rows.values())
        self.status = "await_gate" if self.gates.waiting and not busy else "running"

    # -- progress -------------------------------------------------------------------------------

    def _on_event(self, event: ProgressEvent) -> None:
        self.run_id = self.run_id or event.run_id
        if event.step_id:
            self._apply(event)
        if event.kind == "run_finished":
            self.status = event.status or self.status
        else:
            self._update_live_status()
        self._redraw()
        self._notify()

    def _apply(self, event: ProgressEvent) -> None:
        node, _, child = event.step_id.partition("/")
        row = self.rows.setdefault(node, StepRow())
        data = event.data or {}
        if child:  # a fanout item or a subflow's step: the node runs until the step itself ends
            status, look_up = self._children.status(node, child, event.kind)
            row.status = status or row.status
            if look_up:
                self._look_up_later(node)
        elif event.kind in _EVENT_STATUS:
            row.status = _EVENT_STATUS[event.kind]
        elif event.kind == "gate_resolved" and node in self.gates.run_ended_at:
            pass  # nobody decided: the run ended elsewhere (the view settles as it ends)
        elif event.kind == "gate_resolved":
            row.status = "killed" if data.get("decision") == "kill" else "succeeded"
        if event.kind == "gate_resolved" and not data.get("elsewhere"):
            self.gates.applied(event.step_id)  # its card shows it decided, no longer being applied
        if event.attempt:
            row.attempts = max(row.attempts, event.attempt)
        if event.agent:
            row.agent = event.agent
        if event.violations:
            row.violations = list(event.violations)
        if event.message:
            row.message = event.message

    def _look_up_later(self, node: str) -> None:
        """Read how ``node`` stands in the store soon (the runner reports no event for the end
        of a fanout or a subflow step), with any other node to look up then: one read per
        redraw interval at most."""
        self._to_look_up.add(node)
        if self._look_up_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._look_up_nodes()
            return
        self._look_up_scheduled = True
        loop.call_later(REDRAW_INTERVAL, self._look_up_nodes)

    def _look_up_nodes(self) -> None:
        """Each node to look up whose children are still all stopped takes the store's status."""
        from ..engine.graphs import picture_statuses

        self._look_up_scheduled = False
        nodes = [node for node in self._to_look_up if self._children.idle(node)]
        self._to_look_up.clear()
        record = self._stored_record() if nodes and not self.done else None
        if record is None:  # an ended run's view is settled from the store as it ends
            return
        stored = picture_statuses(record)
        for node in nodes:
            if node in stored:
                self.rows[node].status = stored[node]
        self._update_live_status()
        self._redraw()
        self._notify()

    # -- rendering ------------------------------------------------------------------------------

    def statuses(self) -> dict[str, str]:
        return {node: row.status for node, row in self.rows.items()}

    def png(self) -> bytes:
        if self._picture is None:
            from .dag import DagPicture

            self._picture = DagPicture(self.flowspec.graph(), title=f"{self.flowspec.name}: {self.flowspec.flow}")
        self._picture.recolor(self.statuses(), {n: r.attempts for n, r in self.rows.items()})
        return self._picture.png()

    def _redraw(self, final: bool = False) -> None:
        if final:
            self._flush()
            return
        if self._redraw_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush()
            return
        self._redraw_scheduled = True
        loop.call_later(REDRAW_INTERVAL, self._flush)

    def _flush(self) -> None:
        """Update every display of the run, as output of the cell executing now (see
        :mod:`.cellparent`)."""
        self._redraw_scheduled = False
        if self._view_id is None:  # never displayed
            return
        cell = executing_cell()
        in_cell(cell, self._publish)
        if self.done:
            self._final_in = cell

    def _show_final_here(self) -> None:
        """The run ended: its final view goes out (again) as output of the cell that reads its
        end, unless it went out in that cell already. A run that ended between cells had no
        cell to carry it, and a headless executor kept its views as they were."""
        if self.done and self._final_in is not executing_cell():
            self._flush()

    def _publish(self) -> None:
        from IPython.display import Image, update_display

        png = self.png()
        update_display(Image(png), display_id=self._image_id)
        if self._view is not None:
            self._view.refresh(self, png)
            if self.done:
                update_display(self._view_bundle(), display_id=self._view_id, raw=True)
        else:  # no widgets: the text summary is the live view
            update_display({"text/plain": self.text_summary()}, display_id=self._view_id, raw=True)

    def _ipython_display_(self) -> None:
        """Show the live view. Every display of the run shows the same widget (one model, so a
        click in one disables the card in all) under the same display ids (so every output,
        the first as the newest, is updated while the run goes on and in the saved notebook)."""
        from IPython.display import Image, display

        if self._view is None:
            try:
                from .widgets import RunWidget

                self._view = RunWidget(self)
            except ImportError:  # IPython without ipywidgets: text and picture, gates decided in code
                pass
        if self._view is not None:
            self._view.refresh(self, None)
            bundle = self._view_bundle()
        else:
            bundle = {"text/plain": self.text_summary()}
        self._view_id = display(bundle, raw=True, display_id=self._view_id or True).display_id
        self._image_id = display(Image(self.png()), display_id=self._image_id or True).display_id

    def _view_bundle(self) -> dict[str, Any]:
        """The widget plus a text summary, which is what a saved notebook or a log shows."""
        bundle = dict(self._view.widget._repr_mimebundle_() or {})
        bundle["text/plain"] = self.text_summary()
        return bundle

    def text_summary(self) -> str:
        lines = [f"run {self.run_id or '(starting)'} of {self.flowspec.name}: {self.status}"]
        shown, hidden = shown_rows(self)
        for node, row in shown:
            extra = f" attempts={row.attempts}" if row.attempts > 1 else ""
            if row.violations:
                extra += f" violations={json.dumps([v.get('message') for v in row.violations])}"
            lines.append(f"  {node:<24} {row.status}{extra}")
        if hidden:
            lines.append(f"  ... {hidden}")
        if self.failure and self.status != "complete":  # an agent's traceback: lines of its own
            lines.append("  failure: " + str(self.failure).replace("\n", "\n    "))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text_summary()

    def _need_id(self) -> None:
        if self.run_id is None:
            raise RuntimeError("the run has not been planned yet")


def start_run(flowspec: Any, inputs: Mapping[str, Any], *, agents: Mapping[str, Any] | None = None,
              store: Any = None, workspace: Any = None, agents_variable: str | None = None) -> NotebookRun:
    """Plan and drive a run of ``flowspec`` as a task on the running loop; returns at once.

    Inputs the flow refuses, agents that resolve from nowhere and agents whose (synchronous)
    preflight finds they cannot run here raise here (a LockgateError), not when the run is awaited.
    A run this cell started before and that still goes on (the cell was run again) is named, with
    how to stop it: nothing else shows it any more."""
    from ..engine.engine import check_inputs
    from .cellruns import started_in_cell
    from .startcheck import check_agents, check_preflights

    inputs = check_inputs(flowspec.spec, inputs, flowspec.flow)
    run = _notebook_run(flowspec, agents, store, workspace, agents_variable)
    check_agents(run.runner, flowspec.spec, flowspec.flow)
    check_preflights(run.runner, flowspec.spec, flowspec.flow)
    run._launch(run.runner.start(flowspec.spec, inputs, flow=flowspec.flow))
    started_in_cell(_shell(), run)
    return run


def resume_run(flowspec: Any, run_id: str, *, agents: Mapping[str, Any] | None = None,
               store: Any = None, workspace: Any = None, agents_variable: str | None = None) -> NotebookRun:
    """Continue a stored run (after a kernel restart) and drive it here.

    Agents of its flow that resolve from nowhere, or whose (synchronous) preflight finds they
    cannot run here, raise here (a LockgateError), as at its start; so does a run another
    process drives, or one driven with another lockgate.toml than this kernel finds."""
    from ..engine.graphs import picture_statuses
    from .startcheck import check_agents, check_preflights

    run = _notebook_run(flowspec, agents, store, workspace, agents_variable)
    if run.engine.status(run_id).get("status") not in FINAL:
        # another process drives it, another lockgate.toml, or its Python agents are not given
        run.runner.check_resumable(run_id)
    check_agents(run.runner, flowspec.spec, flowspec.flow)
    check_preflights(run.runner, flowspec.spec, flowspec.flow)
    run.run_id = run_id
    for node, status in picture_statuses(run.engine.audit(run_id)).items():
        run.rows.setdefault(node, StepRow()).status = status
    run._launch(run.runner.resume(run_id))
    return run


def _notebook_run(flowspec: Any, agents: Mapping[str, Any] | None, store: Any, workspace: Any,
                  agents_variable: str | None = None) -> NotebookRun:
    """A NotebookRun on an engine over ``store`` (a Store object, or a URL/path/None to open)."""
    from ..engine.engine import Engine
    from ..engine.store import open_store

    if store is None:
        store = notebook_store()
    engine = Engine(store=store if not isinstance(store, str) else open_store(store),
                    workspace=workspace or ".")
    return NotebookRun(flowspec, engine, agents=agents, workspace=workspace, agents_variable=agents_variable)


def _shell() -> Any:
    """The running IPython shell, None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


MAX_ROWS_SHOWN = 100


def shown_rows(run: NotebookRun, limit: int = MAX_ROWS_SHOWN) -> tuple[list[tuple[str, StepRow]], str]:
    """The rows worth showing of a big run, and a note counting the others ("" when all show).

    Up to ``limit`` rows: the eventful ones first (running, waiting, failed...), then the rest in
    flow order; a table of thousands of rows, re-sent four times a second, helps nobody.
    """
    rows = list(run.rows.items())
    if len(rows) <= limit:
        return rows, ""
    quiet = ("pending", "succeeded", "skipped")
    eventful = [item for item in rows if item[1].status not in quiet]
    picked = {node for node, _ in (eventful + [item for item in rows if item[1].status in quiet])[:limit]}
    shown = [item for item in rows if item[0] in picked]
    counts: dict[str, int] = {}
    for node, row in rows:
        if node not in picked:
            counts[row.status] = counts.get(row.status, 0) + 1
    detail = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return shown, f"{len(rows) - len(shown)} more steps not listed ({detail})"


def html_table(run: NotebookRun) -> str:
    cells = []
    shown, hidden = shown_rows(run)
    for node, row in shown:
        violations = "<br>".join(html.escape(str(v.get("message", v))) for v in row.violations[-3:])
        cells.append(
            f"<tr><td><code>{html.escape(node)}</code></td><td>{html.escape(row.status)}</td>"
            f"<td style='text-align:right'>{row.attempts or ''}</td><td>{html.escape(row.agent)}</td>"
            f"<td style='color:#a40e26'>{violations}</td></tr>"
        )
    if hidden:
        cells.append(f"<tr><td colspan='5' style='color:#57606a'>… {html.escape(hidden)}</td></tr>")
    return (
        f"<style>{TABLE_CSS}</style><table class='lockgate-steps'><thead><tr><th>step</th><th>status</th>"
        "<th>attempts</th><th>agent</th><th>latest violations</th></tr></thead><tbody>"
        + "".join(cells) + "</tbody></table>"
    )


TABLE_CSS = (
    ".lockgate-steps{border-collapse:collapse;margin:4px 0}"
    ".lockgate-steps th,.lockgate-steps td{padding:2px 12px 2px 0;text-align:left;vertical-align:top}"
    ".lockgate-steps th{border-bottom:1px solid #d0d7de;font-weight:600}"
)
