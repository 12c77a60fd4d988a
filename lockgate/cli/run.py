"""``lockgate run``: run a flow with agents, a live progress display and gate prompts.

Exit status: 0 complete, 1 failed (error, killed, cancelled), 2 usage error (bad arguments, an
invalid spec, inputs or configuration, an unavailable agent), 3 waiting at a gate (``--no-prompt``,
or no terminal to ask), 4 another process is driving the same run (a step was answered or reset
there first; nothing was lost), 130 interrupted (Ctrl-C: the agent calls are stopped and the
run is left as it was, to resume or cancel), 74 a file or standard output could not be written.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import click

from . import hints
from .runargs import agents_source, load_agents, read_inputs
from .text import one_line, with_frames

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WAITING, EXIT_ELSEWHERE = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C


class Options(NamedTuple):
    """The options a run is driven with, which a command to resume it must repeat."""

    agents: str | None
    store: str | None
    judge: str | None
    config: str | None = None
    #: the run lives in memory (a memory store, SQLite's :memory:): gone with this process, so no
    #: command run later can decide, resume or cancel it
    in_memory: bool = False

    def resume(self, run_id: str) -> str:
        return hints.resume_command(run_id, agents=self.agents, store=self.store, judge=self.judge,
                                    config=self.config)

    def lost(self, run_id: str, what: str) -> str:
        """The line that replaces the commands to go on from ``what`` for an in-memory run."""
        return (f"run {run_id} {what}, but it lived in a memory store and ends with this process: nothing can "
                "decide or resume it later. Use a store that keeps it (the default: .lockgate/lockgate.db "
                "here) to go on from there.")


@click.command("run")
@click.argument("spec", required=False, metavar="SPEC")
@click.option("--input", "pairs", multiple=True, metavar="KEY=VALUE",
              help="A flow input; VALUE is taken as written for a string or enum input, else "
                   "parsed as JSON when it is valid JSON.")
@click.option("--inputs", "inputs_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Flow inputs from a JSON or YAML file (--input values override them).")
@click.option("--flow", help="The flow to run (default: the spec's entry flow).")
@click.option("--agents", "agents_module", metavar="MODULE",
              help="A Python file or dotted module whose top-level functions are agents, by name.")
@click.option("--store", metavar="URL",
              help="Run store: a SQLite path, sqlite://, postgresql://... or memory "
                   "(default: $LOCKGATE_STORE or .lockgate/lockgate.db).")
@click.option("--judge", metavar="AGENT",
              help="The agent that answers `judged` ensures (overrides `judge` in lockgate.toml); "
                   "without a judge they fail closed.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, exists=True), metavar="FILE",
              help="The lockgate.toml (or pyproject.toml) of agents, judge and runner limits "
                   "(default: the nearest above SPEC's folder; with --resume, above the current one).")
@click.option("--no-prompt", is_flag=True,
              help="Do not prompt at gates: leave them waiting for `lockgate gate ...`.")
@click.option("--resume", "resume_id", metavar="RUN",
              help="Continue an existing run (after a crash or a gate decision) instead of SPEC.")
@click.option("--take-over", is_flag=True,
              help="With --resume: drive the run even though another process seems to drive it "
                   "(one on another host that is gone for good); that process stops its agent calls.")
def run_command(spec: str | None, pairs: tuple[str, ...], inputs_file: str | None,
                flow: str | None, agents_module: str | None, store: str | None, judge: str | None,
                config_file: str | None, no_prompt: bool, resume_id: str | None, take_over: bool) -> None:
    """Run SPEC's flow with agents, checking every step.

    Steps run concurrently where the flow allows; failed checks are retried with the violations
    fed back to the agent; gates are asked at the terminal (approve / revise with a note / kill).
    The flow's output is printed as JSON on stdout; progress goes to stderr.

    Ctrl-C stops the agent calls in flight and leaves the run as it was (exit status 130): it
    prints the command that resumes it and the one that cancels it (`lockgate cancel RUN`).

    One process drives a run at a time: --resume of a run another live process drives is
    refused (exit status 4), since both would call the same agents.
    """
    from ..errors import (
        AgentUnavailable,
        ConfigError,
        EngineError,
        LockgateError,
        NotAStore,
        RunnerError,
        SpecError,
    )
    from .stores import MissingStore

    if (spec is None) == (resume_id is None):
        _usage("give a SPEC to run, or --resume RUN to continue one (not both)")
    if take_over and resume_id is None:
        _usage("--take-over goes with --resume RUN")
    if resume_id is not None and (pairs or inputs_file or flow):
        given = "--flow" if flow and not (pairs or inputs_file) else "--input/--inputs"
        _usage(f"{given} goes with SPEC: a resumed run keeps the flow and inputs it was started with")
    if spec is not None and Path(spec).is_dir():  # a missing file: the engine says "no such file"
        click.echo(f"error: is a directory, not a spec file: {spec}", err=True)
        sys.exit(EXIT_USAGE)
    options = Options(agents_module, store, judge, config_file)
    try:
        code = _run(spec, pairs, inputs_file, flow, options, no_prompt, resume_id, take_over)
    except SpecError as exc:
        _report_spec_error(spec, exc)
        code = EXIT_USAGE
    except (ConfigError, AgentUnavailable, MissingStore, NotAStore, click.BadParameter) as exc:
        message = hints.unknown_agent(exc, agents=agents_module) or _message(exc)
        click.echo(f"error: {message}", err=True)
        code = EXIT_USAGE
    except EngineError as exc:
        _report_engine_error(exc)
        code = EXIT_USAGE if exc.error_type in ("input_validation_failed", "unknown_flow",
                                                "run_not_found", "run_cancelled") else EXIT_FAILED
    except (RunnerError, LockgateError) as exc:
        click.echo(f"error: {exc}", err=True)
        code = EXIT_FAILED
    except KeyboardInterrupt:  # before the event loop started: nothing was planned or changed
        _report_interrupted(None, resume_id, options)
        code = EXIT_INTERRUPTED
    from .interrupt import exit_now

    exit_now(code)  # an agent's worker thread may still be busy (interrupted, cancelled elsewhere)


def _report_driven(exc: Any, options: Options, engine: Any) -> None:
    """Why a resume was refused, and what to do instead: a process this machine can see is
    known to be alive (its claim is free as soon as it ends), so only one elsewhere is offered
    to be taken over. One that is stopping (Ctrl-C) or only runs commands gives the run up on
    its own: the resume is offered for then (the refusal says when). Given no --agents, the
    resume offered names the module the run took agents from, or says how to give again
    those it was given in Python (no command here can name them); ``engine`` tells which of
    them the run's flow uses."""
    from ..engine.drivers import Driver, checkable_here

    run_id = str(exc.detail.get("run_id", ""))
    holder = Driver.from_dict(exc.detail.get("driver"))
    module, python = _needed_from(holder, engine, run_id) if options.agents is None else (None, None)
    options = options._replace(agents=module or options.agents)
    if python is not None:
        last = _python_resume(run_id, holder, *python, options)
    elif holder is not None and checkable_here(holder) and (holder.stopping or holder.commands_only):
        last = f"  then resume: {options.resume(run_id)}"
    elif holder is not None and checkable_here(holder):
        last = (f"  or stop process {holder.pid} (Ctrl-C in its terminal; a notebook kernel: restart it) and "
                f"resume here: {options.resume(run_id)}")
    else:
        last = f"  if that process is gone for good, drive the run here anyway:\n    {options.resume(run_id)} --take-over"
    click.echo(f"error: {exc.message}.\n"
               f"  watch it:  {hints.command('why', run_id, store=options.store)}\n"
               f"  stop it:   {hints.command('cancel', run_id, store=options.store)}\n{last}", err=True)


def _needed_from(holder: Any, engine: Any, run_id: str) -> tuple[str | None, tuple[Any, list[str]] | None]:
    """(the --agents module a resume must name, (the agents given in Python it must be given
    again, those of them the run's flow uses)), as the claim ``holder`` records them: the
    module when the flow uses agents the run took from it, or the record names a module alone
    (an older Lockgate's: which agents it gave is not known); all recorded names count when
    the run's flow cannot be read back."""
    from ..engine.agentorigin import PythonAgents, missing_from, module_of

    recorded = holder.agents if holder is not None else None
    origin = PythonAgents.parse(recorded)
    if origin is None:
        return module_of(recorded), None
    used = _flow_agents(engine, run_id)
    missing = missing_from(recorded, origin.names if used is None else used, ())
    if missing is None:
        return None, None
    return (origin.module, None) if origin.module else (None, missing)


def _flow_agents(engine: Any, run_id: str) -> list[str] | None:
    """The agent names run ``run_id``'s flow uses; None when they cannot be told."""
    from ..engine.flowneeds import agent_names

    try:
        return agent_names(*engine.spec_of(run_id))
    except Exception:  # noqa: BLE001 - a hint must not hide the refusal it follows
        return None


def _python_resume(run_id: str, holder: Any, origin: Any, names: list[str], options: Options) -> str:
    """The refusal's last line for a run that needs the agents ``names`` its drive was given in
    Python (``origin``: the notebook variable that held them, when recorded): no ``lockgate``
    command can name them, so a notebook's ``%flow resume`` with them, or Python's ``agents=``;
    to take over a drive on another host, a module defining them."""
    from ..engine.drivers import checkable_here

    listed = ", ".join(names)
    given = (f"`%flow resume {run_id} --agents {origin.variable}` in a notebook" if origin.variable else
             f"`%flow resume {run_id} --agents VAR` in a notebook (VAR: a dict naming {listed}), or agents= in Python")
    if holder is not None and checkable_here(holder) and (holder.stopping or holder.commands_only):
        return f"  then resume it with its agents, given in Python ({listed}): {given}"
    if holder is not None and checkable_here(holder):
        return (f"  or stop process {holder.pid} (Ctrl-C in its terminal; a notebook kernel: restart it) and resume "
                f"it with its agents, given in Python ({listed}): {given}")
    from ..engine.agentorigin import function_names

    functions = function_names(names)
    return (f"  if that process is gone for good, drive the run here anyway, with a module defining {functions} "
            f"(its agents were given in Python):\n    {options.resume(run_id)} --take-over --agents "
            f"{hints.AGENTS_PLACEHOLDER}")


def _run(spec: str | None, pairs: tuple[str, ...], inputs_file: str | None, flow: str | None,
         options: Options, no_prompt: bool, resume_id: str | None, take_over: bool = False) -> int:
    from ..engine.agentorigin import record_of
    from ..engine.admission import OutstandingLimit
    from ..engine.agents.config import ProjectConfig, find_config, load_config
    from ..engine.engine import Engine
    from ..engine.flowneeds import as_spec
    from ..engine.gatechannel import TerminalGates
    from ..engine.runner import config_file_for, make_runner
    from ..engine.store import open_store
    from ..errors import (
        DrivenElsewhere,
        ReadOnlyStore,
        RunDriven,
        RunNotFound,
        StoreError,
    )
    from . import interrupt
    from .stores import ephemeral, open_existing

    loaded = as_spec(Path(spec)) if spec else None
    inputs = read_inputs(pairs, inputs_file, _declared_inputs(loaded, flow))
    agents, registered = module_agents(options.agents) if options.agents else ({}, [])
    here = find_config()  # the configuration a resume from this folder finds
    found = Path(options.config) if options.config else config_file_for(Path(spec) if spec else None, here)
    config = load_config(found) if found else ProjectConfig()
    if found is not None and found != here:  # a resume from here would not find it
        options = options._replace(config=os.path.relpath(found))
    # a resume opens the store the run is in; only a new run creates one
    store = open_existing(options.store) if resume_id else open_store(options.store)
    options = options._replace(in_memory=ephemeral(store))
    engine = Engine(store=store, workspace=Path.cwd())
    kept_judge = _recorded_judge(engine, resume_id) if resume_id and options.judge is None else None
    options = options._replace(judge=kept_judge or options.judge)  # the commands printed name it
    if resume_id and not options.agents:
        _check_agents_given(engine, resume_id, options, found, take_over)
    display = Progress()
    # the prompt reads stdin through a selector and also watches the store, so a decision made
    # in another terminal ends it (and a late answer is reported as not applied)
    gates = None if no_prompt else TerminalGates(
        ask=_ask, say=lambda text: click.echo(text, err=True), pause=display.paused, store=engine.store,
        watch_stdin=True, prompt=lambda text: click.echo(text, err=True, nl=False))
    runner = make_runner(engine=engine, config=config, config_chosen=options.config is not None, agents=agents,
                         agents_module=record_of(agents, agents_source(options.agents), registered)
                         if options.agents else None,
                         gates=gates, on_event=display.update,
                         judge=options.judge if kept_judge is None else None)  # kept: by the runner itself
    announce = kept_judge is not None and _to_drive(engine, resume_id, take_over)
    if announce:
        _check_judge_here(runner, resume_id, options)

    async def main() -> Any:
        with display:
            if resume_id:
                if announce:  # said once the resume is taken (its refusals come first)
                    runner.check_resumable(resume_id, take_over=take_over)
                    click.echo(f"judging with --judge {kept_judge}, the judge run {resume_id} was driven with",
                               err=True)
                return await runner.resume(resume_id, take_over=take_over)
            return await runner.start(loaded, inputs, flow=flow)

    try:
        # stdout carries only the flow's output (for `> out.json` or `| jq`): what agents print
        # while the run is going goes to stderr, with the progress
        with _stdout_to_stderr():
            result = interrupt.run(main(), on_interrupt=runner.detach)
    except KeyboardInterrupt:
        _report_interrupted(engine, runner.run_ids[-1] if runner.run_ids else resume_id, options)
        return EXIT_INTERRUPTED
    except OutstandingLimit as limit:  # the drive stopped: the resume command with this command's options
        if limit.run_id is None:
            raise
        if options.in_memory:
            click.echo(f"error: {limit.stopped}", err=True)
            click.echo(options.lost(limit.run_id, "stopped"), err=True)
        else:
            click.echo(f"error: {limit.stopped}, then: {options.resume(limit.run_id)}", err=True)
        return EXIT_FAILED
    except RunDriven as driven:  # reported here: the engine tells which of the run's agents a resume needs
        _report_driven(driven, options, engine)
        return EXIT_ELSEWHERE
    except DrivenElsewhere as elsewhere:
        click.echo(f"{elsewhere}: see `{hints.command('show', elsewhere.run_id, store=options.store)}`", err=True)
        return EXIT_ELSEWHERE
    except StoreError as exc:  # the store went away (a server stopped, a full disk) or was damaged mid-run
        run_id = runner.run_ids[-1] if runner.run_ids else resume_id
        if run_id is None or isinstance(exc, RunNotFound | ReadOnlyStore):  # nothing to say of the run
            raise
        _report_store_failed(exc, run_id, options)
        return EXIT_FAILED
    else:
        judged_by = hints.judge_module(engine, result.run_id) if result.status == "await_gate" else None
    finally:
        with contextlib.suppress(StoreError):  # a store that failed may fail to close too
            engine.close()
    return _conclude(result, options, judged_by)


def module_agents(target: str) -> tuple[dict[str, Any], list[str]]:
    """The agents of --agents module ``target`` (its top-level functions), and the names it
    registered as it loaded (``register("writer", fn)``): the run takes those from it too,
    and its claim records both (a resume without the module is refused for them)."""
    from ..engine.agents.registry import DEFAULT_REGISTRY

    before = set(DEFAULT_REGISTRY.names())
    agents = load_agents(target)
    return agents, sorted(set(DEFAULT_REGISTRY.names()) - before)


def _report_store_failed(exc: Exception, run_id: str, options: Options) -> None:
    """The store failed while the run went on. When it could not be reached (a server stopped,
    a lock held too long, a disk that failed or filled up: :class:`StoreUnavailable`), the run
    goes on from its last saved transition once the store is back (each is saved whole): say
    the command that resumes it. Else the store was found edited or damaged (the error says
    how), and ``why`` says what can continue the run, if anything."""
    from ..errors import StoreUnavailable

    if isinstance(exc, StoreUnavailable):
        click.echo(f"error: the run store could not be reached: {exc}", err=True)
        if not options.in_memory:
            click.echo(f"  run {run_id} is as the store last saved it; once the store is back, continue it with: "
                       f"{options.resume(run_id)}", err=True)
        return
    click.echo(f"error: the run store failed: {exc}", err=True)
    if options.in_memory:
        return
    click.echo(f"  run {run_id} is as the store last saved it; once the store can be read, "
               f"{hints.command('why', run_id, store=options.store)} says what continues it", err=True)


def _check_agents_given(engine: Any, run_id: str, options: Options, config: Path | None,
                        take_over: bool = False) -> None:
    """Refuse a resume given no --agents module of a run still going that was driven with one
    (recorded with its claim) and took agents its flow uses from it (by the names the claim
    records), or whose agents come only from it:
    name that module in the command to type, before any agent is looked up (the lookup would
    say "no agent named X", or quietly take a built-in of the same name). A run another live
    process drives is left to the resume, whose refusal says so first (not with --take-over).
    The judge the resume judges with (``options.judge``) counts as one of the flow's agents."""
    recorded = hints.recorded_agents(engine, run_id)
    if not recorded or not hints.agents_needed(engine, run_id, str(config) if config else None, options.judge):
        return
    if not _to_drive(engine, run_id, take_over):
        return
    shown = hints.shown_module(recorded)
    if shown is None:
        raise click.BadParameter(hints.GONE.format(recorded))
    raise click.BadParameter(f"run {run_id} was driven with the agents of --agents {shown}: give it again: "
                             f"{options._replace(agents=shown).resume(run_id)}")


def _recorded_judge(engine: Any, run_id: str) -> str | None:
    """The agent name run ``run_id``'s last drive was given as its judge (``--judge``), which a
    resume given none keeps (its judged ensures would fail closed, or take lockgate.toml's
    judge); None when none is recorded (a judge from lockgate.toml needs no flag), the flow has
    no judged ensures (it needs none), or the run cannot be read (the resume then says what is
    wrong)."""
    from ..engine.runner import recorded_judge
    from ..errors import LockgateError

    try:
        return recorded_judge(engine, run_id)
    except LockgateError:
        return None


def _check_judge_here(runner: Any, run_id: str, options: Options) -> None:
    """Refuse a resume that kept the run's recorded judge when no agent here has its name
    (its --agents module not given, or gone): the command names the judge, the module and, from
    a folder that does not find the run's lockgate.toml (which may define the judge), that one."""
    known = runner.known_agents()
    if options.judge in known:
        return
    config, note = (None, None) if options.config else hints.config_to_name(runner.engine, run_id)
    if config is not None and note is None:  # the run's own (not this folder's, chosen anew)
        options = options._replace(config=config)
    command = options.resume(run_id) + ("" if options.agents else f" --agents {hints.AGENTS_PLACEHOLDER}")
    raise click.BadParameter(
        f"run {run_id} was driven with --judge {options.judge}, and no agent named {options.judge!r} is here "
        f"(the agents are: {', '.join(known)}): without it its judged ensures fail closed. Give the agents that "
        f"define it: {command}, or choose another judge with --judge")


def _to_drive(engine: Any, run_id: str, take_over: bool) -> bool:
    """Whether this resume is to drive run ``run_id``: it is still going, and no other live
    process drives it (or ``take_over``); else the resume only reports it, or is refused."""
    from ..engine.drive import TERMINAL

    if engine.status(run_id).get("status") in TERMINAL:  # nothing left to dispatch
        return False
    return take_over or engine.driver_of(run_id) is None


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Standard output goes to stderr while the run goes on, ``print`` in agents and what their
    child processes write to file descriptor 1 alike: stdout carries only the flow's JSON."""
    try:
        fd = sys.stdout.fileno()
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's capture)
        with redirect_stdout(sys.stderr):
            yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    os.dup2(sys.stderr.fileno(), fd)
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, fd)
        os.close(saved)


def _declared_inputs(spec: Any, flow: str | None) -> dict[str, Any]:
    """The ``input`` declarations of the flow to run (none when there is no such flow: the
    engine then says so)."""
    if spec is None:
        return {}
    chosen = spec.flows.get(flow or spec.entry)
    return dict(chosen.input) if chosen is not None else {}


def _conclude(result: Any, options: Options, judged_by: str | None = None) -> int:
    """Print how the run ended, or what it waits on (``judged_by``: the --agents module its
    gate decisions are to be given, see :func:`hints.judge_module`); its exit status."""
    if result.status == "complete":
        click.echo(json.dumps(result.output, indent=2, ensure_ascii=False))
        return EXIT_OK
    response = result.response
    if result.status == "await_gate" and options.in_memory:
        gates = ", ".join(repr(gate["step_id"]) for gate in result.waiting_gates)
        click.echo(options.lost(result.run_id, f"waits at gate {gates}"), err=True)
    elif result.status == "await_gate":
        for gate in result.waiting_gates:
            decide = hints.decide_lines(result.run_id, gate, store=options.store, agents=judged_by)
            click.echo("\n".join([f"run {result.run_id} waits at gate {gate['step_id']!r}; decide with:",
                                  *(f"  {line}" for line in decide),
                                  f"then continue it with: {options.resume(result.run_id)}"]), err=True)
    else:
        reason = response.get("message") or response.get("reason") or response.get("error_type")
        first, *frames = with_frames(str(reason or ""))  # a Python agent's frames below its message
        click.echo("\n".join([f"run {result.run_id} {result.status}: {first}".rstrip(": "), *frames]), err=True)
    summary = {k: response[k] for k in ("run_id", "status", "error_type", "message", "step_id",
                                         "reason", "violations") if response.get(k) is not None}
    summary["status"] = result.status
    if result.status == "await_gate":
        summary["gates"] = [{"step_id": g["step_id"], "token": g.get("token")}
                            for g in result.waiting_gates]
    click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_WAITING if result.status == "await_gate" else EXIT_FAILED


def _ask(prompt: str) -> str:
    """One line from the terminal; end of input becomes EOFError (the gate stays waiting).

    The prompt arrives with its own ": ", so click adds no second one."""
    if sys.stdin is None:  # started with its input closed (`<&-`)
        raise EOFError
    try:
        return click.prompt(prompt.rstrip(), default="", show_default=False, err=True,
                            prompt_suffix=" ")
    except click.Abort:
        raise EOFError from None


# --- reporting -----------------------------------------------------------------------------------


def _usage(message: str) -> None:
    click.echo(f"Usage: lockgate run SPEC [OPTIONS]\nerror: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, click.ClickException) else str(exc)


def _report_engine_error(exc: Any) -> None:
    """The engine's message, then each violation it does not already name."""
    click.echo(f"error: {exc.message}", err=True)
    for violation in exc.detail.get("violations", []) or []:
        line = f"{violation.get('path')}: {violation.get('message')}"
        if line not in exc.message:
            click.echo(f"  {line}", err=True)
    if exc.error_type == "input_validation_failed":
        click.echo("  give the flow's inputs with --input NAME=VALUE (repeatable) or --inputs FILE.json", err=True)


def _report_spec_error(spec: str | None, exc: Any) -> None:
    """The spec's diagnostics with their source excerpts, as ``lockgate validate`` shows them,
    less the warnings about agents the configuration does not name: a run also takes them from
    --agents and the built-ins, and says itself when one resolves from nowhere."""
    from ..dsl.codes import AGENT_CONFIG_CODES

    diagnostics = [d for d in getattr(exc, "diagnostics", None) or () if d.code not in AGENT_CONFIG_CODES]
    if diagnostics and spec:
        from ..dsl.loader import read_at_most
        from ..dsl.report import format_text
        from ..dsl.yamlsrc import MAX_DOCUMENT_CHARS

        try:
            with open(spec, "rb", buffering=0) as handle:  # no more than a spec may hold
                text = read_at_most(handle.fileno(), MAX_DOCUMENT_CHARS + 1).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        if text is not None:
            # an oversized document is reported without excerpts (its one line may be 50 MB)
            excerpted = text if len(text) <= MAX_DOCUMENT_CHARS else ""
            click.echo(format_text(spec, excerpted, diagnostics), err=True)
            return
    click.echo(f"error: {exc}", err=True)


def _report_interrupted(engine: Any | None, run_id: str | None, options: Options) -> None:
    """After Ctrl-C: what became of the run, and the commands to go on from there.

    ``run_id`` None: no run was planned (a new one was interrupted before it started).
    ``engine`` None: the command was interrupted before it drove the run, which is as it was."""
    if run_id is None:
        click.echo("interrupted before the run started", err=True)
        return
    show = hints.command("show", run_id, store=options.store)
    if engine is None:  # its store not even opened: where the run stands is not known here
        click.echo(f"interrupted before run {run_id} was driven; nothing changed\n"
                   f"  see where it stands: {show}\n"
                   f"  if it is still running, continue it with: {options.resume(run_id)}", err=True)
        return
    status = _stored_status(engine, run_id)
    if status in ("complete", "error", "killed", "cancelled"):
        click.echo(f"interrupted: run {run_id} had already ended ({status}); see: {show}", err=True)
        return
    if options.in_memory:
        click.echo(f"interrupted: {options.lost(run_id, 'was stopped')}", err=True)
        return
    click.echo(f"interrupted: run {run_id} is left as it was (its agent calls were stopped; nothing recorded "
               "is lost)\n"
               f"  continue it with: {options.resume(run_id)}\n"
               f"  or cancel it for good: {hints.cancel_command(run_id, store=options.store)}",
               err=True)


def _stored_status(engine: Any, run_id: str) -> str | None:
    """Run ``run_id``'s status in the store; None when the store cannot be read."""
    try:
        return engine.status(run_id).get("status")
    except Exception:  # noqa: BLE001 - the store is unreadable: say what we know
        return None


class Progress:
    """Progress on stderr: a live table on a terminal, one line per event otherwise."""

    STYLE = {"running": "cyan", "succeeded": "green", "failed": "red", "retrying": "yellow",
             "skipped": "dim", "waiting": "magenta", "resolved": "green"}

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.rows: dict[str, dict[str, Any]] = {}
        self.live: Any = None

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live(self._table(), console=self.console, auto_refresh=False)
            self.live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Suspend the live table while a gate prompt reads the terminal."""
        live = self.live
        if live is not None:
            live.stop()
        try:
            yield
        finally:
            if live is not None:
                live.start()

    def update(self, event: Any) -> None:
        row = self._row(event)
        if row is None:
            return
        if self.live is not None:
            self.live.update(self._table(), refresh=True)
        else:
            # soft_wrap: a pipe or a log file gets whole lines, not rich's 80-column folds
            self.console.print(self._line(event, row), highlight=False, markup=False, soft_wrap=True)

    def _row(self, event: Any) -> dict[str, Any] | None:
        if event.kind == "run_finished":
            return {"status": event.status}
        status = {"step_started": "running", "step_succeeded": "succeeded",
                  "step_failed": "failed", "step_retrying": "retrying",
                  "step_skipped": "skipped", "gate_waiting": "waiting",
                  "gate_resolved": "resolved"}[event.kind]
        row = self.rows.setdefault(event.step_id, {"attempt": "", "agent": "", "note": ""})
        row["status"] = status
        if event.attempt:
            row["attempt"] = event.attempt
        if event.agent:
            row["agent"] = event.agent
        row["note"] = _note(event)
        return row

    def _line(self, event: Any, row: dict[str, Any]) -> str:
        if event.kind == "run_finished":
            return f"run {event.run_id} {event.status}"
        parts = [f"{row['status']:<9}", str(event.step_id)]
        if event.attempt:
            parts.append(f"attempt {event.attempt}")
        if event.agent:
            parts.append(f"[{event.agent}]")
        if row["note"]:
            parts.append(f"- {row['note']}")
        return "  ".join(parts)

    def _table(self) -> Any:
        from rich.markup import escape
        from rich.table import Table
        from rich.text import Text

        room = self.console.size.height - TABLE_CHROME
        crowded = len(self.rows) > room
        table = Table(title="lockgate run", expand=False)
        for column in ("step", "status", "attempt", "agent", "notes"):
            # a crowded table keeps every row to one line, so the rows counted are the lines shown
            table.add_column(column, no_wrap=crowded, overflow="ellipsis" if crowded else "fold")
        shown, rest = visible_rows(self.rows, room) if crowded else (list(self.rows.items()), "")
        for step, row in shown:
            status = row.get("status", "")
            table.add_row(escape(str(step)), Text(status, style=self.STYLE.get(status, "")),
                          str(row["attempt"]), escape(row["agent"]), Text(row["note"]))
        if rest:
            table.add_row(Text(rest, style="dim"), "", "", "", "")
        return table


#: The lines of the live table that are not step rows (its title, the borders and the header),
#: and one spare: a table as tall as the terminal scrolls it at each refresh.
TABLE_CHROME = 6
#: The statuses of steps that are done with, which a table too tall for the terminal summarises.
FINISHED = ("succeeded", "skipped", "resolved")


def visible_rows(rows: dict[str, dict[str, Any]], room: int) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """The rows a table with ``room`` lines for rows shows, and the line summarising the others
    ("18 more finished, not shown"): the steps still in play (running, retrying, waiting at a gate, failed)
    first, then the latest finished ones that fit. Without this the terminal cut the bottom of
    the table, where the steps started last, the running ones, are."""
    active = [(k, r) for k, r in rows.items() if r.get("status") not in FINISHED]
    finished = [(k, r) for k, r in rows.items() if r.get("status") in FINISHED]
    room = max(room - 1, 1)  # the summary's line
    shown_active = active[:room]
    spare = room - len(shown_active)
    latest = finished[max(len(finished) - spare, 0):] if spare > 0 else []
    hidden_active = len(active) - len(shown_active)
    hidden_finished = len(finished) - len(latest)
    parts = [f"{hidden_active} more in play"] * bool(hidden_active) + [
        f"{hidden_finished} more finished, not shown"] * bool(hidden_finished)
    return shown_active + latest, ", ".join(parts)


def _note(event: Any) -> str:
    if event.violations:
        first = event.violations[0]
        message = first.get("message", "")
        # an ensure's message quotes the ensure; a contract violation's names only the problem
        ensure = first.get("ensure") or ""
        where = first.get("path") or ("" if ensure in message else ensure)
        more = f" (+{len(event.violations) - 1} more)" if len(event.violations) > 1 else ""
        return one_line(f"{where}: {message}{more}".strip(": "))
    if event.kind == "gate_resolved":
        return one_line(f"{event.data.get('decision')} by {event.data.get('resolved_by')}" + (
            f": {event.message}" if event.message else ""))
    if event.kind == "gate_waiting":
        return "waiting for a decision"
    if event.data.get("kind") == "evaluate" and event.kind != "step_failed":
        if event.kind == "step_started":  # the command, cut to what a progress line can hold
            command = one_line(event.message or "")
            return "command " + (command if len(command) <= COMMAND_SHOWN else command[:COMMAND_SHOWN - 3] + "...")
        return f"command ran {event.data.get('duration_ms', 0):.0f} ms"
    return with_frames(event.message or "")[0]


#: Characters of an evaluate step's command a progress line shows.
COMMAND_SHOWN = 60



def register(main: click.Group) -> None:
    main.add_command(run_command)
