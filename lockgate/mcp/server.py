"""``lockgate mcp``: the consumer protocol as MCP tools over stdio (the ``mcp`` SDK's low-level server).

The low-level server lets the tool list carry the exact schemas of :mod:`lockgate.mcp.tools`;
every call's arguments are validated against them here (all problems reported at once, nothing
run on bad input), then the handler runs in a worker thread so a slow store never blocks the
protocol loop. Results carry the engine's dict as structured content and as JSON text (where a
long value is written once, its repeats elided), plus one line of guidance; refusals are tool
errors (``isError``) whose text says how to recover.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator, ValidationError
from mcp.server import Server

from .. import __version__
from ..engine.engine import Engine
from ..engine.judge import JudgeBridge, project_judge
from ..errors import ConfigError
from .advice import IN_MEMORY, next_steps, tool_error
from .handlers import HANDLERS, ToolContext, invalid
from .instructions import SERVER_INSTRUCTIONS
from .requestsize import RequestLines, wire_stdin
from .tools import BY_NAME, TOOLS, ToolSpec
from .unreadable import answering_unreadable, forward_streams
from .values import unrepresentable

SERVER_NAME = "lockgate"
_T = TypeVar("_T")
# lockgate_status calls waiting for a gate decision at once; more queue, other tools never do
MAX_WAITING_CALLS = 8
# a value this long is written once in a result's text; a repeat names where it is
ELIDED_CHARS = 4096
# long strings searched for a later long value they contain (bounds the search on many of them)
MAX_CONTAINING = 16
_VALIDATORS = {tool.name: Draft202012Validator(tool.schema) for tool in TOOLS}
# the tools whose answer asks something of the agent get a line saying what
_GUIDED = frozenset({"lockgate_plan", "lockgate_step_done", "lockgate_gate_resolve", "lockgate_status",
                     "lockgate_revert", "lockgate_resume", "lockgate_cancel"})


def listed_tools() -> list[types.Tool]:
    """The tools as MCP ``Tool`` values."""
    return [types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.schema,
                       annotations=types.ToolAnnotations(title=t.title, read_only_hint=t.read_only,
                                                         destructive_hint=t.destructive,
                                                         idempotent_hint=t.idempotent, open_world_hint=False))
            for t in TOOLS]


def check_arguments(tool: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments as a dict, or EngineError(invalid_arguments) naming every problem (schema
    violations, and values strict JSON cannot store: NaN, Infinity, lone surrogates)."""
    args = dict(arguments or {})
    errors = sorted(_VALIDATORS[tool.name].iter_errors(args), key=lambda e: (list(e.absolute_path), e.message))
    problems = [_describe(tool, e) for e in errors] + unrepresentable(args)
    if problems:
        raise invalid(f"{tool.name}: " + "; ".join(problems), problems=problems)
    return args


def _describe(tool: ToolSpec, error: ValidationError) -> str:
    where = "argument " + ".".join(str(p) for p in error.absolute_path) if error.absolute_path else "arguments"
    kind, limit, value = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"missing required argument `{missing}`"
    if kind == "additionalProperties" and not error.absolute_path:
        takes = ", ".join(tool.properties)
        return _unknown("unknown argument", value, tool.properties) + f"; {tool.name} takes: {takes}"
    if kind == "additionalProperties":
        known = error.schema.get("properties", {})
        return _unknown(f"{where} has an unknown key", value, known) + f"; it takes: {', '.join(known)}"
    if kind == "type":
        return f"{where} must be of type {limit}, not {_json_type(value)}"
    if kind == "enum":
        return f"{where} must be one of {', '.join(map(str, limit))}, not {value!r}"
    if kind in ("minimum", "maximum"):
        return f"{where} must be {'at least' if kind == 'minimum' else 'at most'} {limit}, not {value!r}"
    if kind in ("minLength", "maxLength") and isinstance(value, str):  # the text itself may be huge
        return (f"{where} must be {'at least' if kind == 'minLength' else 'at most'} {limit} characters long, "
                f"not {len(value)}")
    return f"{where}: {error.message}"


def _unknown(what: str, given: Mapping[str, Any], known: Mapping[str, Any]) -> str:
    """``what `name``` for each key of ``given`` not in ``known``, with the closest known one."""
    notes = []
    for name in sorted(set(given) - set(known)):
        close = difflib.get_close_matches(name, known, n=1)
        notes.append(f"{what} `{name}`" + (f" (did you mean `{close[0]}`?)" if close else ""))
    return "; ".join(notes)


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
             int: "integer", float: "number"}
    return names.get(type(value), type(value).__name__)


def call_tool(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None,
              cancelled: threading.Event | None = None) -> types.CallToolResult:
    """Run one tool call to completion: a result, or a tool error that says what to do.
    ``cancelled``: set when the client cancels the call, which then stops waiting."""
    tool = BY_NAME.get(name)
    try:
        if tool is None:
            raise invalid(f"unknown tool {name!r}; the tools are: {', '.join(BY_NAME)}")
        with _judging(ctx, name, arguments), ctx.cancelling(cancelled):
            result = HANDLERS[name](ctx, check_arguments(tool, arguments))
    except Exception as exc:  # every failure becomes a tool error the model can read, never a crash
        message, data = tool_error(exc, quoting=(name, arguments))
        return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                    structured_content=data, is_error=True)
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=result_text(result))]
    if name in _GUIDED:
        guidance = [next_steps(result, store=ctx.store_shown), *_revisions(result)]
        content.extend(types.TextContent(type="text", text=line) for line in guidance if line)
    return types.CallToolResult(content=content, structured_content=result, is_error=False)


def _judging(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None) -> AbstractContextManager[Any]:
    """The block of a tool call judged as its run says (see :class:`RunJudges`); a context made
    otherwise (a test's own engine) keeps its engine's judge."""
    judges = getattr(ctx.engine, "judges", None)
    return judges.calling(ctx, name, arguments) if isinstance(judges, RunJudges) else nullcontext()


def result_text(result: dict[str, Any]) -> str:
    """The result as JSON text for clients that read no structured content, each long value in it
    once: the engine's answer repeats a dispatch's task, inputs and schema in its ``ready`` list (and
    a task embeds its inputs), so a 6 MB input made a 48 MB answer. A repeat of at least
    :data:`ELIDED_CHARS` characters is a note naming where the value is written in full above; a
    shorter answer is the plain JSON of the structured content."""
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) < 2 * ELIDED_CHARS:
        return text
    try:
        return json.dumps(_Once().copy(result, None), ensure_ascii=False, default=str)
    except RecursionError:  # nested deeper than the walk goes: the full text, repeats and all
        return text


class _Once:
    """A copy of a result whose long values are written once; repeats become notes. A path is
    (parent path, key), made into text only for a note."""

    def __init__(self) -> None:
        self.containers: dict[int, Any] = {}  # id of a dict or list -> the path it is written at
        self.strings: dict[str, Any] = {}  # long string -> the path it is written at

    def copy(self, value: Any, path: Any) -> Any:
        if isinstance(value, str):
            return self._string(value, path)
        first = self.containers.setdefault(id(value), path)
        if first is not path and len(json.dumps(value, ensure_ascii=False, default=str)) >= ELIDED_CHARS:
            return _note("the same as", first)
        if isinstance(value, dict):
            return {key: self.copy(item, (path, key)) if _walked(item) else item for key, item in value.items()}
        return [self.copy(item, (path, i)) if _walked(item) else item for i, item in enumerate(value)]

    def _string(self, value: str, path: Any) -> str:
        first = self.strings.get(value)
        if first is None:  # the few first long values are searched for ones that are part of them
            for text, at in islice(self.strings.items(), MAX_CONTAINING):
                offset = text.find(value)
                if offset >= 0:  # where, so that a client reading only the text can take it out (in code
                    # points, as JSON text counts characters; a JS string counts UTF-16 units)
                    return _note(f"the {len(value)} code points from code point {offset} (counting from 0) of", at)
            self.strings[value] = path
            return value
        return _note(f"{len(value)} characters, the same as", first)


def _walked(value: Any) -> bool:
    """Whether a value may hold or be a long value: containers and long strings."""
    return isinstance(value, (dict, list)) or (isinstance(value, str) and len(value) >= ELIDED_CHARS)


def _note(what: str, path: Any) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return f"[elided: {what} `{''.join(reversed(parts)).lstrip('.')}` above; structuredContent has it in full]"


def _revisions(result: dict[str, Any]) -> list[str]:
    """A line per dispatched step that a gate's revise sent back, with the gate's note (the
    engine's ``revision`` on the dispatch; it survives restarts and decisions made elsewhere)."""
    if result.get("status") not in ("execute_step", "ensure_failed", "schema_failed"):
        return []
    notes: dict[str, Mapping[str, Any]] = {}
    for entry in (result, *(result.get("ready") or ())):
        revision = entry.get("revision") if isinstance(entry, Mapping) else None
        if isinstance(revision, Mapping) and entry.get("step_id"):
            notes[str(entry["step_id"])] = revision
    return [f"Step {step} was sent back by gate {rev.get('gate')} for revision: {rev.get('note') or '(no note given)'}"
            for step, rev in sorted(notes.items())]


def build_server(ctx: ToolContext) -> Server[Any]:
    """An MCP server whose tools drive ``ctx.engine``."""

    async def on_list_tools(_rctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed_tools())

    waits = anyio.CapacityLimiter(MAX_WAITING_CALLS)

    async def on_call_tool(_rctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # a call that may wait minutes for a decision takes a thread of its own pool, so a client
        # issuing many of them cannot occupy every worker thread and stall all other calls
        limiter = waits if _may_wait(params.name, params.arguments) else None
        return await in_worker(partial(call_tool, ctx, params.name, params.arguments), limiter)

    return Server(SERVER_NAME, version=__version__, title="Lockgate",
                  description="Governed, checked workflow runs for coding agents",
                  instructions=SERVER_INSTRUCTIONS, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def in_worker(call: Callable[[threading.Event], _T], limiter: anyio.CapacityLimiter | None) -> _T:
    """``call(cancelled)`` in a worker thread (of ``limiter``'s pool, if given). A thread cannot
    be stopped from outside, so when the client cancels the tool call, ``cancelled`` is set and
    the call stops waiting; its thread and its place in the pool are given back when it returns,
    a moment later (they are not abandoned, so the pool still bounds the threads that wait)."""
    cancelled = threading.Event()

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:  # the tool call was cancelled, or it is over (then setting it changes nothing)
            cancelled.set()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            return await anyio.to_thread.run_sync(partial(call, cancelled), limiter=limiter)
        finally:
            group.cancel_scope.cancel()


def _may_wait(name: str, arguments: Mapping[str, Any] | None) -> bool:
    return name == "lockgate_status" and isinstance(arguments, Mapping) and bool(arguments.get("wait_seconds"))


def make_context(store: str | None = None, workspace: str | Path | None = None) -> ToolContext:
    """An engine over ``store`` (default: the project's SQLite store) jailed to ``workspace``
    (default: the current directory, where hosts start their MCP servers), with the judge the
    workspace's lockgate.toml names for ``judged`` ensures, or in a call about a run driven with
    a judge by name, that judge (see :class:`RunJudges`)."""
    from ..engine.store import open_store

    root = Path(workspace).expanduser().resolve() if workspace is not None else Path.cwd()
    judge, problem = project_judge(root)
    if problem:  # stderr is the host's log of the server
        print(f"lockgate mcp: no judge for judged ensures (they fail closed): {problem}", file=sys.stderr)
    judges = RunJudges(root, JudgeBridge(judge) if judge else None)
    engine = JudgingEngine(judges, store=open_store(store), workspace=root)
    return ToolContext(engine, root, store_shown=store_for_commands(store))


class RunJudges:
    """The judge of each tool call, as :func:`lockgate.engine.runjudge.run_judge` answers for the
    call's run from the workspace: the one it was driven with by name (``lockgate run --judge
    NAME``, recorded with its claim) resolved through the workspace's lockgate.toml when that is
    the run's own configuration file; else ``project``, the judge the workspace's lockgate.toml
    names (None: judged ensures fail closed). A call that moves the run on (:data:`MOVING`) and
    could reach a judged ensure without its judge (a Python function of the drive, another
    configuration file here, no agent of that name) is refused before it changes anything.

    One engine serves every run, each judged by its own judge, from worker threads at once: the
    engine's ``judge`` is the current call's (:class:`JudgingEngine`)."""

    def __init__(self, root: Path, project: JudgeBridge | None) -> None:
        self.root, self.project = root, project
        #: adapters by (configuration file, agent name), resolved once
        self._resolved: dict[tuple[str, str], Any] = {}
        self._call = threading.local()  # a tool call runs in a worker thread of its own

    @contextmanager
    def calling(self, ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None) -> Iterator[None]:
        """The block of tool call ``name``: its judge is its run's (``run_id`` in ``arguments``)."""
        args = arguments if isinstance(arguments, Mapping) else {}
        run_id = args.get("run_id")
        moving = isinstance(run_id, str) and name in MOVING
        self._call.judge = self._of_run(ctx, run_id, name, args) if moving else self.project
        try:
            yield
        finally:
            del self._call.judge

    def current(self) -> JudgeBridge | None:
        """The judge of the tool call running in this thread (``project`` outside one)."""
        return getattr(self._call, "judge", self.project)

    def _of_run(self, ctx: ToolContext, run_id: str, tool: str, args: Mapping[str, Any]) -> JudgeBridge | None:
        from ..engine.runjudge import resume_command, run_judge

        step, outcome = args.get("step_id"), args.get("outcome")
        decision = (step, outcome) if isinstance(step, str) and isinstance(outcome, str) else None
        with ctx.lock:  # the engine is one caller's at a time
            answer = run_judge(ctx.engine, run_id, self.root, decision=decision if MOVING[tool] == "decision" else None,
                               rehydrate=MOVING[tool] == "rehydrate", reverting=MOVING[tool] == "revert",
                               resolved=self._resolved, project=self.project)
        if answer.refusal is not None:
            command = resume_command(run_id, answer.refusal.detail, store=ctx.store_shown)
            raise ConfigError(f"{answer.refusal}. Nothing was changed; a person continues the run where its judge is, "
                              f"with `{command}`")
        if answer.name is None:
            return answer.judge
        return JudgeBridge(answer.judge)


#: the tools that move a run on, and what of theirs may reach a judged ensure: a gate decision
#: (its route), a rehydrate (the evaluate commands it runs again), a revert (the steps the
#: engine settles itself), or any transition
MOVING = {"lockgate_gate_resolve": "decision", "lockgate_resume": "rehydrate", "lockgate_step_done": "any",
          "lockgate_revert": "revert"}


class JudgingEngine(Engine):
    """The server's engine, whose judge is the tool call's (:class:`RunJudges`), for the engine
    and for its runs alike: a run loaded in one call is judged in the next as that call's run
    says. Setting ``judge`` sets the judge of calls about no run (or a run recorded with none)."""

    def __init__(self, judges: RunJudges, **options: Any) -> None:
        self.judges = judges
        super().__init__(judge=judges.project, **options)

    @property  # type: ignore[override]
    def judge(self) -> JudgeBridge | None:
        return self.judges.current()

    @judge.setter
    def judge(self, value: Any) -> None:
        self.judges.project = value

    def _env(self) -> Any:
        return _CallEnv(self)


class _CallEnv:
    """What a run of a :class:`JudgingEngine` needs from it, read when needed: the judge (and
    evaluator) of the tool call transitioning it, not of the call that loaded it."""

    __slots__ = ("engine",)

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def judge(self) -> Any:
        return self.engine.judge

    @property
    def evaluator(self) -> Any:
        return self.engine.evaluator


def store_for_commands(store: str | None) -> str | None:
    """The ``--store`` a person's ``lockgate`` command needs to reach this server's store: the
    one it was given (``--store`` or ``$LOCKGATE_STORE``, which a terminal may not have), a
    SQLite path made absolute (the server's directory may not be the person's), a database URL
    without its password (see :func:`lockgate.cli.hints.shown_store`); None for the default store,
    which the CLI's hints leave out too."""
    from ..cli.hints import shown_store
    from ..cli.stores import MEMORY, sqlite_path
    from ..engine.store import ENV_VAR

    given = store if store is not None else os.environ.get(ENV_VAR) or None
    if given is None:
        return None
    if given in MEMORY:
        return IN_MEMORY
    path = sqlite_path(given)
    return shown_store(given) if path is None else str(path.absolute())


async def serve_stdio(ctx: ToolContext) -> None:
    """Serve MCP over stdin/stdout until the client closes the connection; requests the
    transport cannot read, or reads only up to :data:`~lockgate.mcp.requestsize.MAX_REQUEST_BYTES`
    (:class:`~lockgate.mcp.requestsize.RequestLines`), are answered by :mod:`lockgate.mcp.unreadable`."""
    from mcp.server.stdio import stdio_server

    server = build_server(ctx)
    with wire_stdin() as wire:
        lines = RequestLines(wire)
        async with stdio_server(stdin=anyio.wrap_file(lines)) as (read_stream, write_stream):  # type: ignore[arg-type]
            sink, readable = forward_streams()
            async with anyio.create_task_group() as group:
                group.start_soon(answering_unreadable, read_stream, sink, write_stream, lines)
                await server.run(readable, write_stream, server.create_initialization_options())


def serve(store: str | None = None, workspace: str | Path | None = None) -> None:
    """Run ``lockgate mcp``: open the store, serve over stdio, close the store on exit."""
    ctx = make_context(store, workspace)
    try:
        anyio.run(serve_stdio, ctx)
    finally:
        ctx.engine.close()
