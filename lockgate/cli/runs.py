"""Run inspection and steering: ``runs``, ``show``, ``audit``, ``why``, ``gate``, ``commit``,
``revert``, ``cancel``, ``resume``, ``verify``.

Every command opens the store named by ``--store`` (or ``LOCKGATE_STORE``, else
``.lockgate/lockgate.db`` here), which must exist (see :mod:`lockgate.cli.stores`), and calls
:class:`lockgate.engine.Engine`. Exit status: 0 done,
1 the engine refused (the message says why) or ``verify`` found tampering, 2 usage errors, 74 a
file or standard output could not be written (a full disk).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import click
from click.core import ParameterSource

from . import hints
from .stores import absent
from .text import one_line, with_frames

STORE_HELP = "Run store: a SQLite path, sqlite://, postgresql://... or memory (default: $LOCKGATE_STORE or .lockgate/lockgate.db)."


# The engine's run statuses (lockgate.engine.model.RUN_STATUSES), spelled out to keep this import cheap.
RUN_STATUSES = ("running", "complete", "failed", "killed", "cancelled")

# What `lockgate run` (the protocol's responses) calls a stored status by another name: a failed
# run answers "error" (lockgate.engine.responses.error_response). The waiting statuses
# (execute_step, await_gate) are not here: both are "running" in the store; `runs` reads what a
# running run waits on from its records (lockgate.cli.waiting), and --status await_gate lists
# the ones a gate holds.
STATUS_ALIASES = {"error": "failed"}


def store_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--store", metavar="URL", envvar="LOCKGATE_STORE", help=STORE_HELP)(fn)


def agents_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--agents", "agents_module", metavar="MODULE",
                        help="The --agents module (a Python file or dotted module) the run was driven with, "
                             "when its judge (--judge) was one of its functions: the judge this command's "
                             "transition may need.")(fn)


def format_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                        show_default=True, help="text for people, json for tools.")(fn)


def _engine(store: str | None, *, judge: Any = None, opened: Any = None) -> Any:
    """An engine on the existing store (these commands never create one), or on the store
    ``opened`` already, with ``judge`` (the commands that move a run on: :func:`_judging`)."""
    from pathlib import Path

    from ..engine import Engine
    from .stores import open_existing

    engine = _call(lambda: Engine(store=opened if opened is not None else open_existing(store), workspace=Path.cwd(),
                                  judge=judge))
    engine.around_commands = _announced
    return engine


def _judging(store: str | None, run_id: str, decision: tuple[str, str] | None = None, *,
             rehydrate: bool = False, reverting: bool = False, agents_module: str | None = None) -> Any:
    """An engine (see :func:`_engine`) judging run ``run_id`` as it is judged from here, for the
    commands that move a run on, whose transition may reach a ``judged`` ensure (a set step after
    a gate): with the judge the run was driven with (``--judge NAME``, resolved through its own
    lockgate.toml), else lockgate.toml's ``judge`` (see :mod:`lockgate.engine.runjudge`).
    When no judge of the run can be had here, refuse (exit 1) before anything is decided, with
    the command that moves the run on where its judge is (``decision``: a gate's (step,
    outcome), which needs none when it cannot reach a judged ensure here; ``rehydrate``: ``lockgate resume``,
    which needs one only for the evaluate commands it runs again; ``reverting``: ``lockgate revert``;
    ``agents_module``: the command's ``--agents``, where a judge that was one of the run's Python
    functions is found)."""
    from pathlib import Path

    from ..engine.runjudge import PYTHON_JUDGE, run_judge
    from .run import module_agents
    from .runargs import agents_source

    given = module_agents(agents_module)[0] if agents_module else None
    reader = _engine(store)  # a run it loads keeps the judge it had: the engine that decides is made after
    answer = run_judge(reader, run_id, Path.cwd(), decision=decision, rehydrate=rehydrate, reverting=reverting,
                       given=given, given_source=agents_source(agents_module) if agents_module else None)
    if answer.refusal is not None:
        detail = getattr(answer.refusal, "detail", {})
        named = detail.get("module") and (not agents_module or detail.get("other"))
        shown = hints.shown_module(detail["module"]) if named else None
        module = shlex.quote(shown) if shown else hints.AGENTS_PLACEHOLDER if named else None  # gone: theirs
        again = f"run this command again with --agents {module}" if module else None
        if detail.get("problem") == PYTHON_JUDGE and again and reverting:  # a resume would not revert
            how, notes = again, []
        else:
            command, *notes = _resume_lines(reader, run_id, _named_store(store))
            how = (f"decide it where its judge is: resume the run with {command} and answer the gate's prompt "
                   "there" if decision is not None else f"continue the run where its judge is: {command}")
            if detail.get("problem") == PYTHON_JUDGE and again:
                how += f"; or {again}"
        click.echo(f"error: {answer.refusal}. Nothing was changed; {how}", err=True)
        for line in notes:
            click.echo(f"  {line}", err=True)
        sys.exit(1)
    if answer.problem:
        click.echo(f"warning: no judge for judged ensures: {answer.problem}", err=True)
    return _engine(store, judge=answer.judge, opened=reader.store)


@contextmanager
def _announced(call: Any) -> Iterator[None]:
    """Say on stderr which evaluate command a steering command runs before it waits for it (a
    command may take minutes): the commands a transition starts run in the process making it
    when no other process drives the run."""
    seconds = call.get("timeout_ms", 0) / 1000
    click.echo(f"running the command of evaluate step {call.get('step_id')} (up to {seconds:g} s): "
               f"{one_line(str(call.get('command')))}", err=True)
    yield


def _call(action: Callable[[], Any]) -> Any:
    from ..errors import LockgateError

    try:
        return action()
    except LockgateError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


def _named_store(store: str | None) -> str | None:
    """``--store`` when given on the command line, for the commands this one prints: they then
    reach the same store (a store from $LOCKGATE_STORE reaches them the same way)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or ctx.get_parameter_source("store") != ParameterSource.COMMANDLINE:
        return None
    return store


def _resume_lines(engine: Any, run_id: str, store: str | None) -> list[str]:
    """The command that continues ``run_id`` with agents, and when it needs an --agents module
    this command cannot tell, the line that says so."""
    config, config_note = hints.config_to_name(engine, run_id)
    judge = hints.recorded_judge(engine, run_id)
    command, note = hints.resume_hint(run_id, store=store, config=config, judge=judge,
                                      agents_needed=hints.agents_needed(engine, run_id, config, judge),
                                      recorded=hints.recorded_agents(engine, run_id),
                                      python=hints.python_driven(engine, run_id, judge),
                                      names_known=hints.names_recorded(engine, run_id))
    return [command, *(f"({line})" for line in (note, config_note) if line)]


def _json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def when(stamp: Any) -> str:
    """A stored time (epoch seconds or ISO text) as ``YYYY-MM-DD HH:MM:SS`` (UTC), as listings show it."""
    if isinstance(stamp, (int, float)):
        return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(stamp or "")[:19].replace("T", " ")


def _spent(spent: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(spent.items())) or "nothing"


def table(rows: list[list[str]], header: list[str]) -> None:
    """Print ``rows`` under ``header`` in aligned columns, each cell on one line (``lockgate runs``,
    ``%flow runs``)."""
    rows = [[one_line(cell) for cell in row] for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


# -- listing and reading ---------------------------------------------------------------------------


@click.command("runs")
@click.option("--status", type=click.Choice([*RUN_STATUSES, *STATUS_ALIASES, "await_gate"]),
              help="Only runs with this status (error: failed, as `lockgate run` reports it; "
                   "await_gate: running runs waiting for a person's gate decision).")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True,
              help="At most this many runs.")
@store_option
@format_option
def runs_cmd(status: str | None, limit: int, store: str | None, fmt: str) -> None:
    """List runs, newest first; a running run says what it waits on: a gate (a person's
    decision), the live process driving it, or nobody (idle: resume it)."""
    engine = _engine(store)
    found = _call(lambda: listed_runs(engine, status, limit))
    if fmt == "json":
        _json(found)
        return
    if not found:
        gone = absent(store)
        click.echo(f"no runs (no run store here: {gone} does not exist; run this where the runs were "
                   "started, or pass --store)" if gone else "no runs")
        return
    print_runs(found)


def listed_runs(engine: Any, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """The runs ``lockgate runs`` lists (newest first, ``status`` a status, an alias or
    ``await_gate``), each running one with what it waits on (``waiting``)."""
    from ..errors import StoreError
    from .waiting import AWAIT_GATE, at_gates, unreadable, waits_of

    if status == AWAIT_GATE:
        return [{**run, "waiting": waits.to_dict()} for run, waits in at_gates(engine.store, limit)]
    found = engine.runs(status=STATUS_ALIASES.get(status, status) if status else None, limit=limit)
    for run in found:
        if run["status"] == "running":
            try:
                run["waiting"] = waits_of(engine.store, run["run_id"]).to_dict()
            except StoreError as exc:  # one damaged run is flagged, not every other one hidden
                run["waiting"] = unreadable(run["run_id"], exc)
    return found


def print_runs(found: list[dict[str, Any]]) -> None:
    """The table of ``lockgate runs`` (and ``%flow runs``)."""
    table([[r["run_id"], r["flow"], r["status"], when(r["updated_at"]), r.get("waiting", {}).get("waiting_on", "")]
           for r in found], ["RUN", "FLOW", "STATUS", "UPDATED", "WAITING ON"])


@click.command("show")
@click.argument("run_id", metavar="RUN")
@store_option
@format_option
def show_cmd(run_id: str, store: str | None, fmt: str) -> None:
    """Show a run: its status, spend, output, and every step (`lockgate why RUN` says what it waits on)."""
    engine = _engine(store)
    audit = _call(lambda: engine.audit(run_id))
    if fmt == "json":
        _json({"status": _call(lambda: engine.status(run_id)), "trace": audit["trace"]})
        return
    print_show(run_id, audit)


def print_show(run_id: str, audit: dict[str, Any]) -> None:
    """What ``lockgate show`` (and ``%flow show`` of a run another process started) prints of a
    run, from its ``audit`` record: status, spend, failure, output, a row per step, then why
    each skipped step was skipped and what the steps a gate's revise reset did before."""
    click.echo(f"run {run_id}  flow {audit['flow']}  status {audit['status']}"
               + (f" ({audit['error_type']})" if audit.get("error_type") else ""))
    click.echo(f"steps {audit['steps_completed']}/{audit['total_steps']} done  spent {_spent(audit['spent'])}"
               f"  rounds {audit['rounds']}")
    if audit.get("failure"):
        click.echo("\n".join(with_frames(f"failure: {audit['failure'].get('reason')}")))
    if "output" in audit:
        click.echo("output: " + json.dumps(audit["output"], sort_keys=True))
    click.echo()
    table([[t["step_id"], t["kind"], _shown_status(t, audit["status"]), str(t["attempts"]),
            f"{t['duration_ms']:.0f} ms" if "duration_ms" in t else "",
            with_frames((t.get("failure") or {}).get("reason", ""))[0][:70]] for t in audit["trace"]],
          ["STEP", "KIND", "STATUS", "ATTEMPTS", "TIME", "LAST FAILURE"])
    for section in _step_notes(audit):
        click.echo()
        click.echo("\n".join(section))


def _step_notes(audit: dict[str, Any]) -> list[list[str]]:
    """What the table has no room for, as sections of lines: why each skipped step was skipped
    (the reason of its ``skipped`` event, which only the audit trail had) and, for each step a
    gate's revise reset, what it did in the rounds before (the table shows the current one)."""
    reasons = {event["step_id"]: event["detail"].get("reason") for event in audit["events"]
               if event["type"] in ("skipped", "fanout_item_skipped")}
    skipped = [(t["step_id"], one_line(str(reasons[t["step_id"]]))) for t in audit["trace"]
               if t["status"] == "skipped" and reasons.get(t["step_id"])]
    earlier = [(t["step_id"], _earlier_rounds(t["earlier_rounds"], t.get("earlier_rounds_left_out", 0)))
               for t in audit["trace"] if t.get("earlier_rounds")]
    return [[title, *_aligned(rows)] for title, rows in (("why skipped:", skipped),
                                                          ("earlier rounds:", earlier)) if rows]


def _aligned(rows: list[tuple[str, str]]) -> list[str]:
    width = max(len(step) for step, _ in rows)
    return [f"  {step.ljust(width)}  {text}" for step, text in rows]


def _earlier_rounds(rounds: list[dict[str, Any]], left_out: int) -> str:
    """``3 rounds: failed ×2, succeeded; 5 attempts; last failure: ...`` for a step's ``earlier_rounds``
    (and the count of those before them that the run no longer keeps)."""
    statuses: list[list[Any]] = []  # [status, how many in a row]
    for summary in rounds:
        status = _DECIDED.get(summary.get("decision"), summary.get("status"))
        if statuses and statuses[-1][0] == status:
            statuses[-1][1] += 1
        else:
            statuses.append([status, 1])
    total = len(rounds) + left_out
    text = f"{total} round{'s' if total != 1 else ''}: " + ", ".join(
        f"{status} ×{n}" if n > 1 else str(status) for status, n in statuses)
    if left_out:
        text += f" (the last {len(rounds)}; {left_out} before them not kept)"
    attempts = sum(summary.get("attempts", 0) for summary in rounds)
    if attempts:
        text += f"; {attempts} attempt{'s' if attempts != 1 else ''}"
    failures = [f for summary in rounds if (f := summary.get("failure") or _inner_failure(summary))]
    if failures:
        text += f"; last failure: {with_frames(str(failures[-1].get('reason', '')))[0][:120]}"
    return text


#: How an earlier round of a gate ended, by the decision it took in it.
_DECIDED = {"approve": "approved", "revise": "revised", "kill": "killed"}


def _inner_failure(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The first failure of a fanout's items or a run step's children in an earlier round."""
    inner = summary.get("items") or summary.get("children") or {}
    return inner.get("first_failure")


def _why_revise_ended(result: dict[str, Any], gate: dict[str, Any] | None, step_id: str) -> str:
    """Why a revise ended the run: the gate had no round left (semantics §6.7: such a revise is
    taken, and fails the run), or a step the revise started failed it."""
    blocked = (gate or {}).get("revise_unavailable")
    if blocked or result.get("error_type") == "rounds_exhausted":
        why = (blocked or one_line(result.get("message"))).removeprefix("revise would fail the run: ")
        return f"gate {step_id} had no revision round left ({why})"
    return one_line(result.get("message")) or "a step it started failed"


# A step a finished run left unfinished, as `show` (and `lockgate graph`'s legend) names it:
# nothing waits at the gate or runs the step any more (lockgate.engine.graphs.ENDED_RUN).
_ENDED_RUN_STEPS = {"waiting_gate": "stopped", "running": "stopped", "ready": "stopped", "pending": "not reached"}


def _shown_status(step: dict[str, Any], run_status: str) -> str:
    """A step's status as ``show`` prints it: a dispatched step names the attempt its agent is on
    (ATTEMPTS counts the finished ones, so it reads 0 during the first), as ``why`` does; in a
    run that has ended, a step it left unfinished says so (a gate there waits for nothing)."""
    if run_status != "running" and step["status"] in _ENDED_RUN_STEPS:
        return _ENDED_RUN_STEPS[step["status"]]
    if step["status"] == "ready":
        return f"dispatched, attempt {step['attempts'] + 1}"
    return str(step["status"])


@click.command("audit")
@click.argument("run_id", metavar="RUN")
@store_option
@format_option
def audit_cmd(run_id: str, store: str | None, fmt: str) -> None:
    """Print a run's audit trail: every event, in order, with its hash."""
    audit = _call(lambda: _engine(store).audit(run_id))
    if fmt == "json":
        _json(audit)
        return
    for event in audit["events"]:
        detail = json.dumps(event["detail"], sort_keys=True)
        if len(detail) > 100:
            detail = detail[:97] + "..."
        click.echo(f"{event['seq']:>5}  {when(event['at'])}  {event['type']:<22} {event['step_id'] or '-':<16} "
                   f"{detail}  {event['hash'][:12]}")


@click.command("why")
@click.argument("run_id", metavar="RUN")
@store_option
@format_option
def why_cmd(run_id: str, store: str | None, fmt: str) -> None:
    """Say what a run is waiting on and the exact command that unblocks it."""
    engine = _engine(store)
    why = _call(lambda: engine.why(run_id))
    if fmt == "json":
        _json(why)
        return
    for line in _why_lines(engine, why, _named_store(store)):
        click.echo(line)


def _why_lines(engine: Any, why: dict[str, Any], named: str | None) -> list[str]:
    """``why``'s answer in words: the summary, then each wait with the commands that end it."""
    lines = with_frames(why["summary"])
    resume: list[str] = []  # the resume command's lines, worked out once
    module = hints.judge_module(engine, why["run_id"]) if why.get("run_id") else None
    for wait in why["waits"]:
        lines.append(f"- {one_line(wait['reason'])}")
        for action in wait["actions"]:
            if action["command"] == ["run"]:  # continuing with agents: the run's own options
                resume = resume or _resume_lines(engine, action["options"]["resume"], named)
                lines += [f"    {line}" for line in resume]
            else:
                judged = module if action["command"][:1] == ["gate"] else None
                lines.append(f"    {hints.engine_command(action, store=named, agents=judged)}")
    return lines


@contextmanager
def _steering(run_id: str, store: str | None) -> Iterator[None]:
    """The body of a command that moves a run on. Ctrl-C may land before it decided anything,
    while it runs an evaluate command (minutes, maybe) or after its transition was saved; in
    each case the run is left as the store has it, so say where it stands and what continues it
    (as ``why`` does), rather than click's bare "Aborted!". Exit status 130, as for any
    interrupted command."""
    try:
        yield
    except KeyboardInterrupt:
        click.echo(f"\ninterrupted; what was saved stands. Run {run_id} now:", err=True)
        try:
            engine = _engine(store)
            lines = _why_lines(engine, engine.why(run_id), _named_store(store))
        except Exception as exc:  # noqa: BLE001 - the store is what it is; say what `why` would
            lines = [f"(could not read it: {exc}); `lockgate why {run_id}` says later"]
        for line in lines:
            click.echo(f"  {line}", err=True)
        sys.exit(130)


@click.command("verify")
@click.argument("run_id", metavar="RUN")
@store_option
@format_option
def verify_cmd(run_id: str, store: str | None, fmt: str) -> None:
    """Check a run's event log against its hash chain; exit 1 naming the first bad event.

    Every event must match its hash and link to the one before it, and the last one must be the
    chain head the run's row records. The run's current state (its status, output and step
    records, as `show` and `runs` print them) is not hashed, so it is not checked: an edit of
    that alone is not detected.
    """
    report = _call(lambda: _engine(store).verify(run_id))
    if fmt == "json":
        _json(report)
    elif report["ok"]:
        click.echo(f"run {run_id}: audit chain intact ({report['count']} events)")
        click.echo("checked: the event log only; the run's current state (its status, output and step records, "
                   "as show and runs print them) is not hashed and was not checked")
    else:
        seq = report["first_bad_seq"]  # None when the run's row itself was edited
        where = f" at event {seq}" if seq is not None else ""
        click.echo(f"run {run_id}: audit chain BROKEN{where} ({report['problem']}): "
                   f"{report.get('message') or ''}".rstrip())
    sys.exit(0 if report["ok"] else 1)


# -- steering ---------------------------------------------------------------------------------------


@click.group("gate")
def gate_group() -> None:
    """Decide a waiting gate: approve, revise or reject (kill)."""


NOTE_HELP = {"revise": "What to change (required): the feedback the revised steps' agents get, recorded in the "
                      "audit trail."}


def _gate_command(decision: str, summary: str) -> click.Command:
    @click.command(decision, help=summary)
    @click.argument("run_id", metavar="RUN")
    @click.argument("step_id", metavar="STEP")
    @click.option("--note", default="", help=NOTE_HELP.get(decision, "The rationale, recorded in the audit trail."))
    @click.option("--by", "resolved_by", default="human", show_default=True, help="Who decided.")
    @agents_option
    @store_option
    @format_option
    def command(run_id: str, step_id: str, note: str, resolved_by: str, agents_module: str | None,
                store: str | None, fmt: str) -> None:
        if decision == "revise" and not note.strip():  # as the prompt, the buttons and %flow revise refuse it
            raise click.UsageError("a revision needs a note saying what to change (--note TEXT): it is the "
                                   "feedback the revised steps' agents get")
        with _steering(run_id, store):
            engine = _judging(store, run_id, (step_id, decision), agents_module=agents_module)
            gate = _open_gate(engine, run_id, step_id)
            result = _call(lambda: engine.resolve_waiting_gate(run_id, step_id, decision, note, resolved_by,
                                                               via="cli"))
        _print_response(result, fmt, engine, store)
        if decision == "revise" and result.get("status") == "error":
            click.echo(f"error: the revise ended run {run_id}: {_why_revise_ended(result, gate, step_id)}", err=True)
            sys.exit(1)

    return command


def _open_gate(engine: Any, run_id: str, step_id: str) -> dict[str, Any] | None:
    """The waiting gate ``step_id`` of run ``run_id`` (None when it does not wait: the engine's
    refusal of the decision then says which gates do, or how the run ended)."""
    status = _call(lambda: engine.status(run_id))
    return next((g for g in status.get("gates", []) if g["step_id"] == step_id), None)


gate_group.add_command(_gate_command("approve", "Approve a waiting gate (it takes its on_approve route)."))
gate_group.add_command(_gate_command("revise", "Send the work back to the gate's on_revise step (a revise "
                                               "past the gate's or the flow's max_rounds fails the run)."))
gate_group.add_command(_gate_command("reject", "Reject (kill): take on_kill, or end the run."))
gate_group.add_command(_gate_command("kill", "The same as reject: take on_kill, or end the run."))


@click.command("commit")
@click.argument("run_id", metavar="RUN")
@click.argument("label")
@store_option
@format_option
def commit_cmd(run_id: str, label: str, store: str | None, fmt: str) -> None:
    """Save a named checkpoint of a run's state."""
    result = _call(lambda: _engine(store).commit(run_id, label))
    if fmt == "json":
        _json(result)
    else:
        click.echo(f"checkpoint {result['label']!r} saved at step {result['step_number']} "
                   f"({result['current_step_id'] or 'end'}); checkpoints: {', '.join(result['checkpoints'])}")


@click.command("revert")
@click.argument("run_id", metavar="RUN")
@click.argument("label")
@agents_option
@store_option
@format_option
def revert_cmd(run_id: str, label: str, agents_module: str | None, store: str | None, fmt: str) -> None:
    """Restore a checkpoint (spend is not rolled back) and continue from there."""
    with _steering(run_id, store):
        engine = _judging(store, run_id, reverting=True, agents_module=agents_module)
        result = _call(lambda: engine.revert(run_id, label))
    _print_response(result, fmt, engine, store)


@click.command("cancel")
@click.argument("run_id", metavar="RUN")
@store_option
@format_option
def cancel_cmd(run_id: str, store: str | None, fmt: str) -> None:
    """Cancel a running run; outstanding results and decisions are refused afterwards."""
    engine = _engine(store)
    _print_response(_call(lambda: engine.cancel(run_id)), fmt, engine, store)


@click.command("resume")
@click.argument("run_id", metavar="RUN")
@agents_option
@store_option
@format_option
def resume_cmd(run_id: str, agents_module: str | None, store: str | None, fmt: str) -> None:
    """Rehydrate a run from the store and show what it waits on (same tokens as before).

    An evaluate command found running (the process running it stopped) is run again here first.
    """
    with _steering(run_id, store):
        engine = _judging(store, run_id, rehydrate=True, agents_module=agents_module)
        result = _call(lambda: engine.resume(run_id))
    _print_response(result, fmt, engine, store)


def _print_response(resp: dict[str, Any], fmt: str, engine: Any, store: str | None) -> None:
    if fmt == "json":
        _json(resp)
        return
    status = resp["status"]
    rid = resp.get("run_id")
    named = _named_store(store)
    if status in ("execute_step", "ensure_failed", "schema_failed"):
        ready = resp.get("ready") or [resp]
        click.echo(f"run {rid}: {len(ready)} step(s) to execute: " + ", ".join(r["step_id"] for r in ready))
        if resp.get("driven_by"):  # its agents are called there: a resume here would be refused
            click.echo(f"{resp['driven_by']} is driving the run: it carries on there")
            return
        command, *note = _resume_lines(engine, str(rid), named)
        click.echo(f"{_until_free(resp)}continue with agents: {command}")
        for line in note:
            click.echo(f"  {line}")
    elif status == "await_gate":
        click.echo(f"run {rid}: gate {resp['step_id']} waits for a decision; decide with:")
        for line in hints.decide_lines(str(rid), resp, store=named, agents=hints.judge_module(engine, str(rid))):
            click.echo(f"  {line}")
        if not resp.get("driven_by"):  # else the process driving it carries on once decided
            command, *note = _resume_lines(engine, str(rid), named)
            until = _until_free(resp)
            click.echo(f"then, {until}continue it with agents: {command}" if until else
                       f"then continue it with: {command}")
            for line in note:
                click.echo(f"  {line}")
    elif status == "evaluating":
        _print_evaluating(resp, engine, named)
    elif status == "complete":
        click.echo(f"run {rid}: complete\noutput: " + json.dumps(resp.get("output"), sort_keys=True))
    elif status == "error":
        click.echo("\n".join(with_frames(f"run {rid}: failed ({resp.get('error_type')}): {resp.get('message')}")))
    else:
        extra = f" ({resp['reason']})" if resp.get("reason") else ""
        click.echo(f"run {rid}: {status}{extra}")


def _until_free(resp: dict[str, Any]) -> str:
    """What a resume waits for while another process holds the run without driving it (a
    resume is refused meanwhile), to put before the resume command: its drive stopping, or the
    evaluate commands it runs (the dispatched steps are nobody's until a resume); else ""."""
    from ..engine.explain import commands_words, stopping_words

    if resp.get("stopping_by"):
        return f"{stopping_words(resp['stopping_by'])}; once it has exited, "
    if resp.get("commands_by"):
        steps = [str(e.get("step_id")) for e in resp.get("evaluating") or ()]
        return f"{commands_words(resp['commands_by'], steps)}; once it ends, resume the run to "
    return ""


def _print_evaluating(resp: dict[str, Any], engine: Any, named: str | None) -> None:
    """A run whose only work left is evaluate commands running: who runs them (another process,
    after it took the run over, or this one's command was stopped), or that nobody does."""
    rid = str(resp.get("run_id"))
    steps = ", ".join(str(call.get("step_id")) for call in resp.get("evaluating") or ()) or "?"
    holder = resp.get("driven_by") or resp.get("commands_by") or resp.get("stopping_by")
    if holder:
        click.echo(f"run {rid}: the command of evaluate step {steps} runs in {holder}; follow it with: "
                   f"{hints.command('why', rid, store=named)}")
        return
    command, *note = _resume_lines(engine, rid, named)
    click.echo(f"run {rid}: the command of evaluate step {steps} is left with nobody running it; run it with: "
               f"{command}")
    for line in note:
        click.echo(f"  {line}")


COMMANDS = (runs_cmd, show_cmd, audit_cmd, why_cmd, verify_cmd, gate_group, commit_cmd, revert_cmd, cancel_cmd,
            resume_cmd)


def register(main: click.Group) -> None:
    for command in COMMANDS:
        main.add_command(command)
