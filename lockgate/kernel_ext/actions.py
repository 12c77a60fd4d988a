"""What each ``%flow`` subcommand does: look up the objects it names, call the library."""

from __future__ import annotations

import argparse
import json
import keyword
from collections.abc import Mapping
from typing import Any

from IPython.core.error import UsageError

from ..errors import EngineError
from .runref import is_run, live_run, referenced, run_target
from .storeplace import notebook_store


def dispatch(shell: Any, args: argparse.Namespace) -> Any:
    handler = _HANDLERS[args.command]
    return handler(shell, args)


def _run(shell, args):
    from ..dsl.inputtext import InputPairError, inputs_from_pairs
    from .run_view import start_run

    _check_bind(args, "started")
    spec = _flowspec(shell, args.name)
    inputs = dict(_mapping(shell, args, "--inputs") if args.inputs else {})
    try:  # read as `lockgate run --input` reads them
        inputs.update(inputs_from_pairs(args.input, spec.spec.flows[spec.flow].input))
    except InputPairError as exc:
        raise UsageError(f"%flow run: {exc}") from None
    agents = _mapping(shell, args, "--agents") if args.agents else None
    run = start_run(spec, inputs, agents=agents, agents_variable=args.agents)  # refusals: LockgateErrors
    if args.bind:
        shell.user_ns[args.bind] = run
    return run


def _gate(shell, args):
    from .gates import refuse_unoffered, waiting_gate

    if args.command == "revise" and not args.note.strip():
        raise UsageError("%flow revise: a revision needs a note saying what to change (--note TEXT)")
    run, run_id = run_target(shell, args.run, args.command)
    if run is not None:  # refusals (a decision the gate does not offer...): EngineErrors
        return _planned(run, args.command).decide(args.step, args.command, args.note)
    try:
        engine = _judging(run_id, args)
        refuse_unoffered(waiting_gate(None, engine, run_id, args.step), args.step, args.command)
        response = engine.resolve_waiting_gate(run_id, args.step, args.command, args.note, "human")
    except EngineError as exc:
        raise UsageError(f"%flow {args.command}: {exc.message}") from None
    _say_next(engine, response)
    return None


def _judging(run_id: str, args):
    """An engine judging run ``run_id`` (which no kernel drives) as it is judged from here: with
    the judge it was driven with (``--judge NAME``), else lockgate.toml's ``judge``; a decision
    that would reach a judged ensure without that judge is refused before it is made (see
    :mod:`lockgate.engine.runjudge`)."""
    from pathlib import Path

    from ..cli.hints import shown_store
    from ..engine.runjudge import PYTHON_JUDGE, resume_command, run_judge

    reader = _engine()  # a run it loads keeps the judge it had: the deciding engine is made after
    answer = run_judge(reader, run_id, Path.cwd(), decision=(args.step, args.command))
    if answer.refusal is not None:
        detail = answer.refusal.detail
        how = (f"resume it here with its judge: `%flow resume {run_id} --agents VAR` (VAR: a dict giving "
               f"{detail['judge']!r} and the flow's agents) and decide on its card"
               if detail["problem"] == PYTHON_JUDGE else
               f"continue it where its judge is: {resume_command(run_id, detail, store=shown_store(notebook_store()))}")
        raise UsageError(f"%flow {args.command}: {answer.refusal}. Nothing was decided; {how}")
    if answer.problem:
        print(f"warning: no judge for judged ensures: {answer.problem}")
    return _engine(answer.judge, reader.store)


def _say_next(engine, response) -> None:
    """A decision on a run no kernel drives: what the run does now and the ``%flow`` line that
    continues it (nothing goes on by itself), as ``lockgate gate approve`` says it."""
    from .nextstep import decided_lines

    print("\n".join(decided_lines(engine, response)))


def _runs(shell, args):
    """The store's runs as ``lockgate runs`` lists them: a table with a header, times to the
    second, and what each running run waits on."""
    from ..cli.runs import listed_runs, print_runs

    rows = listed_runs(_engine())
    if not rows:
        print("no runs")
        return
    print_runs(rows)


def _show(shell, args):
    """A run of this kernel: its live view. Another's (a run id from the store): what `lockgate
    show` prints of it, and its graph coloured by step status."""
    run, run_id = run_target(shell, args.run, "show")
    if run is not None:
        return run
    from IPython.display import SVG, display

    from ..cli.runs import print_show
    from ..engine.graphs import run_graph
    from .dag import draw

    engine = _engine()
    print_show(run_id, engine.audit(run_id))
    graph, statuses, title = run_graph(engine.store, run_id)
    display(SVG(draw(graph, statuses, title=title).svg()))
    return None


def _audit(shell, args):
    run, run_id = run_target(shell, args.run, "audit")
    record = _planned(run, "audit").audit() if run is not None else _engine().audit(run_id)
    print(json.dumps(record, indent=2, default=str))


def _cancel(shell, args):
    from .cellruns import going_run

    run, run_id = run_target(shell, args.run, "cancel")
    run = run if run is not None else going_run(shell, run_id)  # a cell run again rebound its variable
    return run.cancel() if run is not None else _engine().cancel(run_id)


def _resume(shell, args):
    from ..dsl.loader import LoadResult
    from ..engine.graphs import stored_spec
    from .run_view import resume_run
    from .spec_view import FlowSpec

    _check_bind(args, "resumed")
    here, run_id = run_target(shell, args.run, "resume")
    if here is not None and here._task is not None and not here._task.done():
        run = here  # driven here already: a second driver would race it
    else:
        run_id = _planned(here, "resume").run_id if here is not None else run_id
        engine = _engine()
        record = engine.audit(run_id)
        if record["status"] in ("cancelled", "killed"):  # final: the engine refuses to go on
            raise UsageError(f"%flow resume: run {run_id} is {record['status']}; it cannot be resumed")
        spec = stored_spec(engine.store, run_id)
        flowspec = FlowSpec(f"run_{run_id}", LoadResult("", None, [], spec), record["flow"])
        agents = _mapping(shell, args, "--agents") if args.agents else getattr(here, "agents", None)
        variable = args.agents or getattr(here, "agents_variable", None)
        run = resume_run(flowspec, run_id, agents=agents, store=engine.store, agents_variable=variable)
    if args.bind:
        shell.user_ns[args.bind] = run
    return run


def _graph(shell, args):
    from IPython.display import SVG, Image, Markdown

    obj = referenced(shell, args.target, "graph")
    obj = (live_run(shell, obj) or obj) if isinstance(obj, str) else obj
    if isinstance(obj, str):
        from ..engine.graphs import run_graph
        from ..engine.store import open_store

        graph, statuses, title = run_graph(open_store(notebook_store()), obj)
    elif is_run(obj):
        graph, statuses, title = obj.flowspec.graph(), obj.statuses(), f"run {obj.run_id}"
    elif hasattr(obj, "graph"):
        graph, statuses, title = obj.graph(), None, obj.name
    else:
        raise UsageError(f"%flow graph: {args.target!r} is neither a bound spec, a run nor a run id")
    if args.format == "mermaid":
        from ..dsl.graphtext import to_mermaid

        return Markdown(f"```mermaid\n{to_mermaid(graph, statuses)}```")
    from .dag import draw

    picture = draw(graph, statuses, title=title)
    return Image(picture.png()) if args.format == "png" else SVG(picture.svg())


_HANDLERS = {
    "run": _run, "approve": _gate, "revise": _gate, "kill": _gate, "runs": _runs, "show": _show,
    "audit": _audit, "cancel": _cancel, "resume": _resume, "graph": _graph,
}


def _engine(judge=None, store=None):
    """An engine on the notebook's store (or ``store``, open already) judging with ``judge``."""
    from ..engine.engine import Engine
    from ..engine.store import open_store

    return Engine(store=store if store is not None else open_store(notebook_store()), judge=judge)


def _flowspec(shell, name: str):
    obj = shell.user_ns.get(name)
    if obj is None or not hasattr(obj, "start"):
        raise UsageError(f"%flow run: {name!r} is not a spec bound by %%flow (a %%flow {name} cell binds one)")
    return obj


def _planned(run, verb: str):
    """``run``, if the engine has planned it (a run that is starting, or that failed before it
    was planned, has no id, no gates and no audit record)."""
    if run.run_id is None and not run.gates.waiting:
        why = f": {run.failure}" if run.failure else ""
        raise UsageError(f"%flow {verb}: the run has not been planned (it is {run.status}{why})")
    return run


def _mapping(shell, args, option: str) -> Mapping[str, Any]:
    """The dict the variable named by ``option`` (--inputs, --agents) of a ``%flow`` line holds."""
    name = getattr(args, option.lstrip("-"))
    if name not in shell.user_ns:
        raise UsageError(f"%flow {args.command}: {option}: no variable named {name!r}")
    value = shell.user_ns[name]
    if not isinstance(value, Mapping):
        raise UsageError(f"%flow {args.command}: {option} {name} must name a dict, not a {type(value).__name__}")
    return value


def _check_bind(args, done: str) -> None:
    """Refuse ``--as VAR`` naming no variable a cell could use, before anything is ``done``."""
    why = name_refusal(args.bind, "the run") if args.bind else None
    if why:
        raise UsageError(f"%flow {args.command}: --as {why}; nothing was {done}")


def name_refusal(name: str, bound: str) -> str | None:
    """Why no cell could use a variable called ``name`` (``%%flow NAME``, ``--as VAR``), which
    would hold ``bound``; None when one can."""
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword, not a name to bind {bound} to"
    if not name.isidentifier():
        return (f"{name!r} is not a valid Python name to bind {bound} to (letters, digits and underscores, "
                "not starting with a digit)")
    return None
