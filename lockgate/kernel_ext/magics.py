"""``%%flow`` and ``%flow``: thin adapters from magic syntax to the library.

``%%flow NAME [--flow F]`` validates the cell, shows every diagnostic with the cell's own line
numbers (no traceback), and binds a :class:`FlowSpec` to NAME only when the spec is valid; a cell
that binds nothing fails (a :class:`FlowCellError`), so "Run All" and papermill stop there.
``%flow SUBCOMMAND ...`` gives every notebook action a plain-text form (papermill, VS Code,
tests): run, approve, revise, kill, runs, show, audit, graph, resume, cancel; a refused line
fails its cell too.
"""

from __future__ import annotations

import argparse
import contextvars
import re
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

@magics_class
class FlowMagics(Magics):
    """Lockgate's notebook magics."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._raw_cell: str | None = None  # the cell being run, as written (see celllines)
        #: the cell being run: its front end's id, else its text (see cellruns)
        self.cell_key: str | None = None
        #: cell -> the runs it started that went on when last looked at (see cellruns)
        self.cell_runs: dict[str, list[tuple[int | None, Any]]] = {}
        #: the context of the cell executing now, None between cells (see cellparent)
        self.cell_context: contextvars.Context | None = None
        shell.events.register("pre_run_cell", self._remember_cell)
        shell.events.register("post_run_cell", self._forget_cell)

    def _remember_cell(self, info: Any) -> None:
        """Keep the cell about to run as written: IPython gives a cell magic its body without
        the blank lines above the magic's line and without the indentation of a cell indented
        as a whole, which :func:`celllines.place` finds again. Its id too (or its text), which
        tells a cell run again (:mod:`.cellruns`), and its context, which runs publish their
        view's updates in while it executes (:mod:`.cellparent`)."""
        self._raw_cell = info.raw_cell
        self.cell_key = getattr(info, "cell_id", None) or info.raw_cell
        self.cell_context = contextvars.copy_context()

    def _forget_cell(self, result: Any) -> None:
        """The cell ended: updates of a run's view no longer go out as its output."""
        self.cell_context = None

    def detach(self) -> None:
        """Stop listening to the shell's cells (the extension is unloaded)."""
        self.shell.events.unregister("pre_run_cell", self._remember_cell)
        self.shell.events.unregister("post_run_cell", self._forget_cell)

    @magic_arguments()
    @argument("name", help="Variable to bind the validated spec to.")
    @argument("--flow", "-f", default=None, help="Flow to run (default: the spec's entry flow).")
    @argument("--no-lint", action="store_true", help="Hide advisory warnings.")
    @no_var_expand
    @cell_magic
    def flow(self, line: str, cell: str) -> Any:
        """Validate a spec written in the cell, draw its flow, and bind it to NAME.

        Usage: %%flow NAME [--flow F] [--no-lint], then the YAML spec as the cell body.
        An invalid spec shows its diagnostics, binds nothing, and fails the cell.
        """
        from ..dsl.codes import AGENT_CONFIG_CODES
        from ..dsl.loader import load
        from ..dsl.report import format_text
        from .actions import name_refusal
        from .cellerror import FlowCellError
        from .celllines import in_cell, place
        from .spec_view import FlowSpec

        if _HELP_WORDS[1] in line.split() or _HELP_WORDS[2] in line.split():
            print(self.flow.parser.format_help().lstrip(": \n").replace("%flow", "usage: %%flow", 1))
            return None
        try:
            args = parse_argstring(self.flow, line)
        except UsageError as exc:  # no NAME, an unknown option: the cell binds nothing either
            raise FlowCellError(str(exc)) from None
        refused = name_refusal(args.name, "the spec")
        if refused:
            raise FlowCellError(f"%%flow: {refused}")
        result = load(cell, f"%%flow {args.name}", lint=not args.no_lint)
        where = place(self._raw_cell, cell)
        if not result.ok:
            shown = [in_cell(d, where.above, where.shifts) for d in result.diagnostics
                     if d.code not in AGENT_CONFIG_CODES]  # agents come with start()
            report = _printable(format_text("cell", "\n" * where.above + where.text, shown))
            count = len(result.errors)
            raise FlowCellError(f"the spec has {count} error{'s' * (count != 1)}; {args.name} was not bound\n\n{report}")
        if args.flow and args.flow not in result.spec.flows:
            raise FlowCellError(f"no flow named {args.flow!r}; flows: {', '.join(result.spec.flows)}")
        spec = FlowSpec(args.name, result, args.flow, lines_above=where.above)
        self.shell.user_ns[args.name] = spec
        return spec

    @no_var_expand
    @line_magic("flow")
    def flow_line(self, line: str) -> Any:
        """Notebook actions in plain text.

        %flow run NAME [--input k=v ...] [--inputs VAR] [--agents VAR] [--as VAR]
        %flow approve|revise|kill RUN STEP [--note TEXT]
        %flow runs | show RUN | audit RUN | resume RUN [--as VAR] | cancel RUN
        %flow graph NAME|RUN [--format png|svg|mermaid]

        RUN is a run id in the store, or a variable holding a run or a run id (also as $name
        or {expression}).

        A refusal (a line that does not parse, a bad step, a run that cannot start) fails the
        cell with a :class:`FlowCellError`, its message alone, as a ``%%flow`` cell's does.
        """
        from .cellerror import FlowCellError

        try:
            return self._flow_line(line)
        except FlowCellError:
            raise
        except UsageError as exc:  # IPython would print a plain one and leave the cell succeeded
            raise FlowCellError(str(exc)) from None

    def _flow_line(self, line: str) -> Any:
        """``%flow LINE``: help, or the subcommand's action; a UsageError when it is refused."""
        from ..errors import LockgateError
        from . import actions

        try:
            words = _words(line)
        except ValueError as exc:
            raise UsageError(f"%flow: {exc}") from None
        if not words or words[0] in _HELP_WORDS:
            print(_LINE_HELP)
            return None
        try:
            args = _PARSER.parse_args(words)
        except SystemExit as exc:  # only --help exits, after printing the subcommand's help
            if exc.code in (0, None):
                return None
            raise UsageError(f"%flow: could not parse {line!r}\n\n{_PARSER.format_usage()}") from None
        try:
            return actions.dispatch(self.shell, args)
        except LockgateError as exc:  # a refusal or a missing run: the message is the whole story
            raise UsageError(f"%flow {args.command}: {_message(exc, getattr(args, 'agents', None))}") from None


_HELP_WORDS = ("help", "-h", "--help")

_LINE_HELP = """%flow SUBCOMMAND ...   (%flow SUBCOMMAND --help for its options)

  run NAME [--input K=V ...] [--inputs VAR] [--agents VAR] [--as VAR]
                               start a run of a spec bound by %%flow NAME
  approve|revise|kill RUN STEP [--note TEXT]
                               decide a gate waiting in RUN
  runs                         list the runs in the store
  show RUN | audit RUN         a run's live view | its audit record
  cancel RUN                   stop a run and record it cancelled
  resume RUN [--agents VAR] [--as VAR]
                               continue a stored run here (e.g. after a kernel restart)
  graph NAME|RUN [--format png|svg|mermaid]
                               draw a spec or a run

RUN is a run id in the store, or a variable holding a run or a run id (also as $name or
{expression})."""


# a whole word in braces (one level of nesting: {runs[{"a": 1}["a"]]}), as IPython expands it
_BRACED = re.compile(r"(?<!\S)\{(?:[^{}]|\{[^{}]*\})*\}(?!\S)")


def _words(line: str) -> list[str]:
    """The words of a %flow line as shlex splits them, except that a word written as a braced
    expression (a RUN given as ``{runs["a"]}``) stays whole and verbatim, quotes and spaces included.
    ValueError for a line shlex cannot split, or one holding U+0000 (which marks the kept words)."""
    if "\0" in line:
        raise ValueError("the line holds the character U+0000; no run id, label or option does")
    kept: list[str] = []

    def keep(match: re.Match) -> str:
        kept.append(match.group(0))
        return f"\0{len(kept) - 1}\0"

    words = shlex.split(_BRACED.sub(keep, line))
    return [re.sub("\0(\\d+)\0", lambda m: kept[int(m.group(1))], word) for word in words]


def _message(exc: Exception, variable: str | None = None) -> str:
    """What a refused ``%flow`` line says: the error's message, in the magic's own terms for an
    agent nothing provides and for a resume whose recorded judge is not here (the engine's words
    are for Python callers and the CLI: ``agents=``, ``--judge``); ``variable``: the line's
    ``--agents VAR``."""
    from ..engine.agents.registry import UNKNOWN_AGENT
    from ..engine.runner import JUDGE_NOT_FOUND

    detail = getattr(exc, "detail", None)
    if isinstance(detail, dict) and detail.get("problem") == UNKNOWN_AGENT:
        name, where = detail["agent"], detail.get("config_path") or "lockgate.toml"
        return (f"no agent named {name!r}: pass --agents VAR (a dict mapping {name!r} to a function), "
                f"register one with lockgate.engine.agents.register({name!r}, fn), or configure it in "
                f"{where} ([agents.{name}])")
    if isinstance(detail, dict) and detail.get("problem") == JUDGE_NOT_FOUND:
        return _judge_words(detail, variable)
    return str(getattr(exc, "message", None) or exc) or type(exc).__name__


def _judge_words(detail: dict, variable: str | None) -> str:
    """A resume refused because no agent here has the name of the judge the run was driven with
    (``lockgate run --judge NAME``): a notebook gives that agent with the others (``%flow
    resume`` has no judge option; the recorded name is the run's judge)."""
    run_id, name = detail["run_id"], detail["judge"]
    known = ", ".join(detail.get("agents") or ())
    given = (f"add {name!r} to {variable} (a dict: agent name -> function) and run `%flow resume {run_id} "
             f"--agents {variable}` again" if variable else
             f"`%flow resume {run_id} --agents VAR` (VAR: a dict mapping {name!r} and the flow's agents to functions)")
    return (f"run {run_id} was driven with the judge {name!r}, and no agent named {name!r} is here to be it (the "
            f"agents are: {known}): without it the run's judged ensures fail closed. Give it: {given}, register one "
            f"with lockgate.engine.agents.register({name!r}, fn), or configure it in lockgate.toml ([agents.{name}])")


def _printable(text: str) -> str:
    """``text`` with control characters (an ANSI escape in a pasted cell...) shown as escapes,
    so echoing a line of the cell cannot recolour or garble the output."""
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in text)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print and exit
        raise UsageError(f"%flow: {message}\n\n{self.format_usage()}")


_RUN_HELP = "a run id in the store, or a variable holding a run or a run id (also as $name or {expression})"
_AGENTS_HELP = "a variable holding a dict: agent name -> function, for the flow's agents"
_NOTE_HELP = {"approve": "the rationale, recorded in the audit trail (optional)",
              "revise": "what to change (required): the feedback the revised steps' agents get, recorded in the "
                        "audit trail",
              "kill": "the rationale, recorded in the audit trail (optional)"}
_GATE_SUMMARY = {"approve": "approve a gate waiting in RUN: the run goes on past it",
                 "revise": "send the work of a gate waiting in RUN back for revision",
                 "kill": "kill a gate waiting in RUN: the run ends killed"}


def _build_parser() -> argparse.ArgumentParser:
    """The ``%flow`` line's parser: each subcommand's ``--help`` describes every argument."""
    parser = _Parser(prog="%flow", add_help=False)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = _add(sub, "run", "start a run of a spec bound by %%flow NAME and show its live view")
    run.add_argument("name", metavar="NAME", help="the variable a %%%%flow NAME cell bound the spec to")
    run.add_argument("--input", "-i", action="append", default=[], metavar="K=V",
                     help="a flow input (repeat for each); V is read as the flow declares K, as `lockgate run "
                          "--input` reads it")
    run.add_argument("--inputs", metavar="VAR", help="a variable holding a dict of inputs (--input wins over it)")
    run.add_argument("--agents", metavar="VAR", help=_AGENTS_HELP)
    run.add_argument("--as", dest="bind", metavar="VAR", help="bind the run to this variable (a Python name)")
    for verb in ("approve", "revise", "kill"):
        gate = _add(sub, verb, _GATE_SUMMARY[verb])
        gate.add_argument("run", metavar="RUN", help=_RUN_HELP)
        gate.add_argument("step", metavar="STEP", help="the gate step waiting for a decision")
        gate.add_argument("--note", "-m", default="", metavar="TEXT", help=_NOTE_HELP[verb])
    _add(sub, "runs", "list the runs in the store, with what each running run waits on")
    for verb, summary in (("show", "a run's live view (another kernel's run: its record and graph)"),
                          ("audit", "print a run's audit record (JSON, hash-chained events)"),
                          ("cancel", "stop a run and record it cancelled (final: it cannot be resumed)")):
        _add(sub, verb, summary).add_argument("run", metavar="RUN", help=_RUN_HELP)
    resume = _add(sub, "resume", "continue a stored run here and drive it (e.g. after a kernel restart)")
    resume.add_argument("run", metavar="RUN", help=_RUN_HELP)
    resume.add_argument("--agents", metavar="VAR",
                        help=_AGENTS_HELP + "; after a kernel restart, the functions the run was driven with "
                                            "(a resume without them is refused)")
    resume.add_argument("--as", dest="bind", metavar="VAR", help="bind the run to this variable (a Python name)")
    graph = _add(sub, "graph", "draw a spec, or a run coloured by step status")
    graph.add_argument("target", metavar="NAME|RUN",
                       help="a spec bound by %%%%flow NAME, or a run: a run id in the store, or a variable holding a "
                            "run or a run id (also as $name or {expression})")
    graph.add_argument("--format", choices=("png", "svg", "mermaid"), default="png", metavar="png|svg|mermaid",
                       help="a PNG image (the default), an SVG image, or mermaid text")
    return parser


def _add(sub: Any, verb: str, summary: str) -> argparse.ArgumentParser:
    """Subcommand ``verb``, whose ``--help`` starts with ``summary``."""
    return sub.add_parser(verb, help=summary, description=summary[0].upper() + summary[1:] + ".")


_PARSER = _build_parser()
