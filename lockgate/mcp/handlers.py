"""What each MCP tool does: validated arguments in, the engine's JSON-ready dict out.

Handlers are plain synchronous functions over a :class:`ToolContext` (one engine, one workspace),
so they are testable without a transport. Engine responses pass through unchanged; lists are
wrapped in an object (``{"runs": [...]}``) because MCP structured content is an object. A refusal
raises :class:`~lockgate.errors.EngineError` (bad arguments: ``error_type="invalid_arguments"``)
or :class:`~lockgate.errors.SpecError`; :mod:`lockgate.mcp.advice` turns them into tool errors.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..dsl.codes import AGENT_CONFIG_CODES
from ..dsl.loader import LoadResult, load
from ..engine.engine import Engine
from ..engine.evaluate import left_behind
from ..engine.judge import JudgeBridge, Question, ask_judge, settle_blocking
from ..errors import EngineError, SpecError
from .runners import GONE, gone_in, marked
from .specfile import SpecFileError, read_spec_file, spec_path
from .waits import for_agent
from .watch import RunWatches

Args = Mapping[str, Any]
#: Seconds between looks at whether the process running a run's evaluate commands still lives,
#: while ``lockgate_status`` waits for their outcome.
RECHECK_S = 2.0


@dataclass
class ToolContext:
    """The engine the tools drive and the directory relative spec paths are read from.

    ``lock`` serialises engine calls (handlers run in worker threads; the engine's cache of live
    runs is not thread-safe); waiting for a decision made elsewhere happens outside it, and so
    does every evaluate command the engine runs (it commits first, and settles the answer under
    the lock again), so one slow command does not hold up the other tools, and so does waiting
    for a stopping driver to give a run up (``Engine.around_waits``). So does asking the
    judge: an engine whose judge is a :class:`~lockgate.engine.judge.JudgeBridge` has its calls
    settled by :func:`~lockgate.engine.judge.settle_blocking`, which abandons a transition that
    needs a verdict (unsaved; the result it reports was held on its step first), asks the judge
    with the lock left, and replays the transition on the state then.
    """

    engine: Engine
    root: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the ``--store`` a person's ``lockgate`` command needs to reach this server's store (None:
    #: the default one, as the CLI's hints leave it out)
    store_shown: str | None = None
    #: the dead claim last seen on each run, and since when (see :mod:`lockgate.mcp.runners`)
    dead_since: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: the cancel event of the tool call each worker thread runs (see :meth:`cancelling`)
    _calls: threading.local = field(default_factory=threading.local, init=False, repr=False)
    #: the runs waiting tool calls wait on (see :meth:`wait_for_change`)
    watches: RunWatches = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.watches = RunWatches(self.engine.store)
        self.engine.around_commands = self.unlocked
        self.engine.around_waits = self.unlocked

    @contextmanager
    def cancelling(self, cancelled: threading.Event | None) -> Iterator[None]:
        """The block of one tool call in this thread; ``cancelled`` is set when the client
        cancels the call, which ends its waits (:meth:`wait_for_change`) early."""
        self._calls.cancelled = cancelled
        try:
            yield
        finally:
            del self._calls.cancelled

    def cancelled(self) -> bool:
        """Whether the client cancelled the tool call running in this thread."""
        event = getattr(self._calls, "cancelled", None)
        return event is not None and event.is_set()

    def wait_for_change(self, run_id: str, version: int, timeout: float) -> None:
        """Wait, outside the lock, until run ``run_id`` moves off ``version``, ``timeout`` seconds
        pass or the client cancels the call. The wait is shared with every call waiting on the
        run, and costs one store wait per few seconds, not per cancel check (see
        :mod:`lockgate.mcp.watch`): a call the client gave up on still gives its thread (and its
        wait slot, see ``server.MAX_WAITING_CALLS``) back within ``watch.CANCEL_CHECK_S``."""
        self.watches.wait(run_id, version, timeout, self.cancelled)

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            if isinstance(self.engine.judge, JudgeBridge):
                return settle_blocking(partial(method, *args, **kwargs), self._verdict)
            return method(*args, **kwargs)

    def _verdict(self, question: Question) -> Any:
        """The judge's verdict on ``question``, asked with the lock left (entered only inside
        :meth:`call`): other tools go on while the judge thinks."""
        assert isinstance(self.engine.judge, JudgeBridge)
        judge = self.engine.judge.judge
        with self.unlocked():
            return asyncio.run(ask_judge(judge, question, step_id=question.step_id, cwd=question.cwd))

    @contextmanager
    def unlocked(self, call: Any = None) -> Iterator[None]:
        """Leave the lock for the block (entered only inside :meth:`call`, which holds it);
        ``call``: the evaluate command run meanwhile (see ``Engine.around_commands``)."""
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()


def invalid(message: str, **detail: Any) -> EngineError:
    """A refusal of the arguments themselves (nothing was read or changed)."""
    return EngineError(message, error_type="invalid_arguments", **detail)


# -- specs ----------------------------------------------------------------------------------------


def _source(ctx: ToolContext, args: Args) -> tuple[str | bytes, str | None]:
    """(text, path) of the spec given as exactly one of ``spec`` / ``path`` (a file inside the
    workspace, read by :mod:`lockgate.mcp.specfile`; its bytes are decoded by the loader, which
    reports bad encodings as diagnostics)."""
    given = [k for k in ("spec", "path") if k in args]
    if len(given) != 1:
        what = "neither" if not given else "both"
        raise invalid(f"give exactly one of `spec` (inline YAML) or `path` (a spec file); got {what}")
    if "spec" in args:
        return args["spec"], None
    try:
        path = spec_path(ctx.root, args["path"])
        return read_spec_file(path), str(path)
    except SpecFileError as exc:
        raise invalid(str(exc), path=str(exc.path)) from exc


def _load(ctx: ToolContext, args: Args) -> LoadResult:
    text, path = _source(ctx, args)
    return load(text, path)


def validate(ctx: ToolContext, args: Args) -> dict[str, Any]:
    result = _load(ctx, args)
    return {"valid": result.ok, "errors": [d.to_dict() for d in result.errors],
            "warnings": [d.to_dict() for d in result.warnings if d.code not in AGENT_CONFIG_CODES]}


def plan(ctx: ToolContext, args: Args) -> dict[str, Any]:
    result = _load(ctx, args)
    if result.spec is None:
        raise SpecError(f"the spec is invalid ({len(result.errors)} errors); nothing was started",
                        result.diagnostics)
    return ctx.call(ctx.engine.plan, result.spec, args.get("inputs", {}), args.get("flow"))


# -- the consumer protocol --------------------------------------------------------------------------


def _checked(ctx: ToolContext, run_id: str, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` marked ``runner_gone`` when the process running the evaluate commands it shows is
    gone (see :mod:`lockgate.mcp.runners`): they wait for a resume, not for time to pass."""
    return marked(out, ctx.call(gone_in, ctx.engine, run_id, out, ctx.dead_since))


def step_done(ctx: ToolContext, args: Args) -> dict[str, Any]:
    has_result, has_failure = "result" in args, "failure" in args
    if has_result == has_failure:
        raise invalid("give exactly one of `result` (the step's output) or `failure` (why it could not be done)")
    return _checked(ctx, args["run_id"], ctx.call(
        ctx.engine.step_done, args["run_id"], args["step_id"], args.get("result"), args["token"],
        failure=args.get("failure"), usage=args.get("usage")))


def gate_resolve(ctx: ToolContext, args: Args) -> dict[str, Any]:
    """Decide a gate; its audit event says the decision came through MCP (``decided_via``), since
    ``resolved_by`` is whatever the calling agent says."""
    return _checked(ctx, args["run_id"], ctx.call(
        ctx.engine.gate_resolve, args["run_id"], args["step_id"], args["outcome"], args["rationale"],
        args["resolved_by"], args["token"], via="mcp"))


def status(ctx: ToolContext, args: Args) -> dict[str, Any]:
    """The current response; with ``wait_seconds``, wait while only gate decisions (or evaluate
    commands running elsewhere, unless they were left behind by a process that is gone) are
    awaited. A process that dies writes nothing, so while commands run elsewhere the wait looks
    again every :data:`RECHECK_S` seconds whether their process still lives. A call the client
    cancels stops waiting (its answer goes nowhere)."""
    run_id = args["run_id"]
    deadline = time.monotonic() + float(args.get("wait_seconds", 0))
    store = ctx.engine.store
    while True:
        version = ctx.call(store.current_version, run_id)
        out = ctx.call(ctx.engine.status, run_id)
        gone = ctx.call(gone_in, ctx.engine, run_id, out, ctx.dead_since)
        out = marked(out, gone)
        remaining = deadline - time.monotonic()
        if (out["status"] not in ("await_gate", "evaluating") or remaining <= 0 or left_behind(out)
                or out.get(GONE) or ctx.cancelled()):
            return out
        look = remaining if not out.get("evaluating") else min(remaining, RECHECK_S if gone is None else gone)
        ctx.wait_for_change(run_id, version, look)


def audit(ctx: ToolContext, args: Args) -> dict[str, Any]:
    return ctx.call(ctx.engine.audit, args["run_id"])


def commit(ctx: ToolContext, args: Args) -> dict[str, Any]:
    return ctx.call(ctx.engine.commit, args["run_id"], args["label"])


def revert(ctx: ToolContext, args: Args) -> dict[str, Any]:
    return _checked(ctx, args["run_id"], ctx.call(ctx.engine.revert, args["run_id"], args["label"]))


def cancel(ctx: ToolContext, args: Args) -> dict[str, Any]:
    return ctx.call(ctx.engine.cancel, args["run_id"])


def resume(ctx: ToolContext, args: Args) -> dict[str, Any]:
    return ctx.call(ctx.engine.resume, args["run_id"])


def why(ctx: ToolContext, args: Args) -> dict[str, Any]:
    """``Engine.why`` told for the agent doing the steps (see :mod:`lockgate.mcp.waits`)."""
    run_id = args["run_id"]
    engine = ctx.engine
    out = ctx.call(engine.why, run_id)
    current = ctx.call(engine.status, run_id)
    holder = ctx.call(engine.driver_of, run_id)
    gone = ctx.call(gone_in, engine, run_id, current, ctx.dead_since) == 0 or left_behind(current)
    return for_agent(out, current, holder, gone=gone, store=ctx.store_shown)


# -- listings and pictures ------------------------------------------------------------------------


def runs(ctx: ToolContext, args: Args) -> dict[str, Any]:
    return {"runs": ctx.call(ctx.engine.runs, args.get("status"), args.get("limit", 100))}


def gates(ctx: ToolContext, args: Args) -> dict[str, Any]:
    limit = args.get("limit", 100)
    if "run_id" not in args:
        return {"gates": ctx.call(ctx.engine.pending_gates, limit=limit)}
    current = ctx.call(ctx.engine.status, args["run_id"])
    found = [{"run_id": current["run_id"], "flow": current["flow"], **gate} for gate in current.get("gates", [])]
    return {"gates": found[:limit]}


def graph(ctx: ToolContext, args: Args) -> dict[str, Any]:
    from ..dsl.graph import flow_graph
    from ..dsl.graphtext import to_mermaid

    if "run_id" in args:
        if "spec" in args or "path" in args or "flow" in args:
            raise invalid("give `run_id` alone to draw a run (it is drawn with the flow it runs), or "
                          "`spec`/`path` with an optional `flow` to draw a spec")
        from ..engine.graphs import run_graph

        drawn, statuses, title = ctx.call(run_graph, ctx.engine.store, args["run_id"])
        return {"run_id": args["run_id"], "title": title, "statuses": statuses,
                "mermaid": to_mermaid(drawn, statuses)}
    if "spec" not in args and "path" not in args:
        raise invalid("give `spec` (inline YAML) or `path` to draw a spec, or `run_id` to draw a run")
    result = _load(ctx, args)
    spec = result.ir
    if spec is None:
        raise SpecError("the text is not a spec document", result.diagnostics)
    name = args.get("flow") or spec.entry
    if not isinstance(name, str) or name not in spec.flows:
        raise invalid(f"the spec has no flow {name!r}", flows=sorted(spec.flows))
    return {"flow": name, "valid": result.ok, "mermaid": to_mermaid(flow_graph(spec, name))}


HANDLERS: dict[str, Callable[[ToolContext, Args], dict[str, Any]]] = {
    "lockgate_validate": validate,
    "lockgate_plan": plan,
    "lockgate_step_done": step_done,
    "lockgate_gate_resolve": gate_resolve,
    "lockgate_status": status,
    "lockgate_audit": audit,
    "lockgate_commit": commit,
    "lockgate_revert": revert,
    "lockgate_cancel": cancel,
    "lockgate_resume": resume,
    "lockgate_runs": runs,
    "lockgate_gates": gates,
    "lockgate_graph": graph,
    "lockgate_why": why,
}
