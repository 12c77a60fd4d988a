"""What the CLI tells the user to do next, spelled so that it works when typed.

A resume command needs the options the run was driven with: its store, the ``--judge`` it was
given (recorded with its claim; one from lockgate.toml needs no flag) and, when its agents
are Python functions, the ``--agents`` module. ``lockgate run`` knows them (it was given them);
the other commands know the store, and the module from the run's claim record with the names
of the agents the run took from it (a run driven by an older Lockgate has no module, or no
names: its module is then named whenever it is there; one driven from Python code names its
agents and, from a notebook, the variable that held them: they write a placeholder for the
module and say so), unless every agent of the run's flow resolves without one (configured in
lockgate.toml, or built in) and none of them came from the module or Python code (a resume
would quietly swap them: see :mod:`lockgate.engine.agentorigin`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

AGENTS_PLACEHOLDER = "<your agents module>"
NOT_RECORDED = "the store does not record the --agents module a run was started with: give the same one"
GONE = "the run was driven with --agents {}, which is not there any more: give the module that defines its agents"


def command(*words: str, **options: str | None) -> str:
    """``lockgate WORDS... --OPTION VALUE...`` quoted for a POSIX shell (options given None
    left out; an underscore in an option's name is a dash; a store's password hidden;
    :data:`AGENTS_PLACEHOLDER` shown as it is, a part the user replaces)."""
    parts = ["lockgate", *words]
    for name, value in options.items():
        if value is not None:
            parts += [f"--{name.replace('_', '-')}", shown_store(value) if name == "store" else value]
    return " ".join(part if part == AGENTS_PLACEHOLDER else shlex.quote(part) for part in parts)


def shown_store(store: str) -> str:
    """``store`` as a hint may print it: a database URL's password replaced by ``****`` (hints
    end up in terminals' scrollback and CI logs; whoever types the command knows it, or sets
    ``LOCKGATE_STORE``)."""
    if "://" not in store:
        return store
    try:
        parts = urlsplit(store)
        password = parts.password
    except ValueError:  # not a URL urllib can read (libpq may still): hide all after the scheme
        return store.split("://", 1)[0] + "://****"
    query = _QUERY_PASSWORD.sub(r"\1****", parts.query)
    if password is None and query == parts.query:
        return store  # nothing to hide: as given
    netloc = parts.netloc
    if password is not None:
        user = f"{parts.username}:" if parts.username else ":"
        netloc = f"{user}****@{netloc.rsplit('@', 1)[1]}"
    # not urlunsplit: it drops an empty host's // (postgresql:///db, a local socket, would
    # become postgresql:/db; sqlite:///abs.db a relative path)
    return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))


_QUERY_PASSWORD = re.compile(r"((?:^|&)password=)[^&]*", re.IGNORECASE)


def resume_command(run_id: str, *, agents: str | None = None, store: str | None = None,
                   judge: str | None = None, config: str | None = None) -> str:
    """The command that continues run ``run_id`` with these options (those given)."""
    return command("run", "--resume", run_id, agents=agents, store=store, judge=judge, config=config)


def cancel_command(run_id: str, *, store: str | None = None) -> str:
    """The command that cancels run ``run_id`` for good."""
    return command("cancel", run_id, store=store)


def gate_commands(run_id: str, step_id: str, *, store: str | None = None,
                  decisions: Sequence[str] | None = None, agents: str | None = None) -> list[str]:
    """The commands that decide gate ``step_id`` of run ``run_id``: approve, revise (with its
    note to fill in) and reject; revise only when ``decisions`` (the engine's for the waiting
    gate; None: all three) offers it, since a revise it leaves out would fail the run.
    ``agents``: the module that defines the run's judge (:func:`judge_module`)."""
    approve, revise, reject = (command("gate", verb, run_id, step_id, agents=agents, store=store)
                               for verb in ("approve", "revise", "reject"))
    if decisions is not None and "revise" not in decisions:
        return [approve, reject]
    return [approve, f"{revise} --note '...'", reject]


def decide_lines(run_id: str, gate: Mapping[str, Any], *, store: str | None = None,
                 agents: str | None = None) -> list[str]:
    """The lines that say how to decide waiting ``gate`` (an engine gate entry) of run
    ``run_id``: its commands, and why revise is left out when it is."""
    note = revise_note(gate)
    return [*gate_commands(run_id, gate["step_id"], store=store, decisions=gate.get("decisions"), agents=agents),
            *([note] if note else [])]


def revise_note(gate: Mapping[str, Any]) -> str | None:
    """Why a gate with a revise route does not offer revise now (its rounds are used up: a
    revise would fail the run), in parentheses to print under its commands; None when it offers
    revise or never could (no ``on_revise``: nothing to explain)."""
    unavailable = gate.get("revise_unavailable")
    return f"({unavailable})" if unavailable and (gate.get("routes") or {}).get("revise") else None


def engine_command(action: Mapping[str, Any], *, store: str | None, agents: str | None = None) -> str:
    """A command the engine suggests (an action of ``Engine.why``: ``{"command": ["gate",
    "approve"], "args": [R, S], "options": {"note": "..."}}``) as the engine writes it, with
    ``--agents`` (the module defining the run's judge: :func:`judge_module`) and ``--store``
    added when given (the command then has the judge and reaches the same store)."""
    from ..engine.explain import render

    placeholder = agents == AGENTS_PLACEHOLDER  # shown unquoted, as the other hints show it
    more = {"agents": agents} if agents and not placeholder else {}
    if store is not None:
        more["store"] = shown_store(store)
    return render(action, **more) + (f" --agents {AGENTS_PLACEHOLDER}" if placeholder else "")


def resume_hint(run_id: str, *, store: str | None, agents_needed: bool,
                config: str | None = None, recorded: str | None = None,
                python: tuple[Any, list[str]] | None = None, names_known: bool = True,
                judge: str | None = None) -> tuple[str, str | None]:
    """(the resume command, a note about it or None) for a command that was not given the
    ``--agents`` module: ``agents_needed`` when some agent of the run can come only from one
    (see :func:`agents_needed`); ``config``: the configuration file to name (the run's, when a
    resume from here would not find it: see :func:`config_to_name`); ``recorded``: the module
    the run was last driven with (:func:`recorded_agents`); ``python``: (the agents given in
    Python code it was driven with instead, those its flow uses: :func:`python_driven`);
    ``names_known``: the run's record says which agents it took from ``recorded`` (an older
    Lockgate's does not: see :func:`names_recorded`), else the module is named whenever it is
    there, as the run may need it; ``judge``: the judge the run was driven with
    (:func:`recorded_judge`), named with ``--judge``."""
    shown = shown_module(recorded) if recorded and (agents_needed or not names_known) else None
    resume = resume_command(run_id, agents=shown, store=store, judge=judge, config=config)
    if not agents_needed or shown:
        return resume, None
    if recorded:
        note = GONE.format(recorded)
    elif python is not None:
        note = python_note(run_id, *python)
    else:
        note = NOT_RECORDED
    return f"{resume} --agents {AGENTS_PLACEHOLDER}", note


def python_note(run_id: str, origin: Any, names: list[str]) -> str:
    """What to give a resume of run ``run_id``, driven with agents ``names`` given in Python
    (``origin``: :class:`~lockgate.engine.agentorigin.PythonAgents`, with the notebook variable
    that held them when recorded): no command can name those, so a module defining them, or
    the notebook's or the library's own resume."""
    listed = ", ".join(names)
    from ..engine.agentorigin import function_names

    functions = function_names(names)
    if origin.variable:
        return (f"the run was driven with agents given in a notebook ({listed}, from the variable "
                f"{origin.variable}): resume it there with `%flow resume {run_id} --agents {origin.variable}`, "
                f"or here with a module defining {functions}")
    return (f"the run was driven with agents given in Python ({listed}): resume it with agents= in Python, "
            f"in a notebook with `%flow resume {run_id} --agents VAR` (VAR: a dict naming {listed}), "
            f"or here with a module defining {functions}")


def shown_module(recorded: str) -> str | None:
    """A recorded ``--agents`` module as a command typed here names it: a file relative to the
    current folder when it is below it, a dotted name as it is; None for a file that is gone."""
    import os

    if not os.path.isabs(recorded):  # a dotted name (a file is recorded by its resolved path)
        return recorded
    if not os.path.isfile(recorded):
        return None
    relative = _relative(recorded)
    return recorded if relative.startswith(os.pardir) else relative


def config_to_name(engine: Any, run_id: str) -> tuple[str | None, str | None]:
    """(the configuration file a resume command must name with ``--config``, a note about it)
    for the run: (None, None) when a resume from here finds the one it was driven with anyway,
    or none is recorded. A run driven without one, resumed from a folder that has one, names
    that one, saying it is then chosen on purpose (a resume without ``--config`` is refused:
    the run's agents could resolve to other adapters). A recorded file that is gone (the
    project moved) is not named: a resume then takes the one found from here."""
    from pathlib import Path

    from ..engine.agents.config import find_config

    try:
        recorded = engine.last_config(run_id)
        here = find_config()
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return None, None
    if recorded is None or (here is None and not recorded):
        return None, None
    if not recorded:
        return _relative(str(here)), NO_CONFIG.format(_relative(str(here)))
    if here is not None and str(Path(here).resolve()) == recorded:
        return None, None
    if not Path(recorded).exists():  # the project moved: a resume takes the file found from here
        return None, None
    return _relative(recorded), None


NO_CONFIG = ("the run was driven without a configuration file: --config {} takes this folder's on purpose; "
             "or resume from a folder without one")


def _relative(path: str) -> str:
    """``path`` relative to the current folder (as it is on another drive: Windows)."""
    import os

    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def recorded_agents(engine: Any, run_id: str) -> str | None:
    """The ``--agents`` module run ``run_id`` was last driven with, None when not recorded (or
    its agents were given in Python: no command can name those, see :func:`agents_needed`)."""
    from ..engine.agentorigin import module_of

    try:
        return module_of(engine.last_agents(run_id))
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return None


def recorded_judge(engine: Any, run_id: str) -> str | None:
    """The agent name run ``run_id``'s last drive was given as its judge (``--judge``), which
    a resume command names; None when none is recorded (one from lockgate.toml needs no flag)
    or the run's flow has no judged ensures (it needs none)."""
    from ..engine.runner import recorded_judge as recorded

    try:
        return recorded(engine, run_id)
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return None


def judge_module(engine: Any, run_id: str) -> str | None:
    """The ``--agents`` module to give the commands that decide run ``run_id``'s gates (or
    revert it), as typed here: the module whose function judges it
    (:func:`lockgate.engine.runjudge.judging_module`, which also decides whether such a command
    is refused without it); :data:`AGENTS_PLACEHOLDER` when that module is gone (the project
    moved: the refusal then asks for it so); None otherwise, or when that cannot be told."""
    from pathlib import Path

    from ..engine.runjudge import judging_module

    try:
        module = judging_module(engine, run_id, Path.cwd())
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return None
    return None if module is None else shown_module(module) or AGENTS_PLACEHOLDER


def names_recorded(engine: Any, run_id: str) -> bool:
    """Whether run ``run_id``'s claim record says which agents its last drive took from the
    ``--agents`` module it names (an older Lockgate recorded the module alone); True when that
    cannot be told."""
    from ..engine import agentorigin

    try:
        return agentorigin.names_recorded(engine.last_agents(run_id))
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return True


def python_driven(engine: Any, run_id: str, judge: str | None = None) -> tuple[Any, list[str]] | None:
    """(the agents given in Python code run ``run_id`` was last driven with, those of them its
    flow uses, its judge ``judge`` included), for :func:`resume_hint`'s note; None when it was
    driven with none (or with an ``--agents`` module, which the command names), or that cannot
    be told."""
    from ..engine.agentorigin import missing_agents

    try:
        missing = missing_agents(engine, run_id, (), judge)
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return None
    return missing if missing is not None and missing[0].module is None else None


def agents_needed(engine: Any, run_id: str, config: str | None = None, judge: str | None = None) -> bool:
    """Whether some agent of run ``run_id``'s flow can come only from an ``--agents`` module:
    none of lockgate.toml (``config``, else the nearest from here), the registry and the
    built-ins knows it, or
    the one that does cannot run here (a module's ``codex`` function stands in for the built-in
    Codex, whose binary is missing), or the run took agents its flow uses from Python code or
    the module it was driven with, as its claim records them by name (a resume without them
    is refused, as it would swap them for another adapter: see
    :mod:`lockgate.engine.agentorigin`); ``judge``, the judge a resume judges with, counts as
    one of them when the flow has judged ensures. True when that cannot be told (the spec cannot be
    read back, the configuration is broken): the placeholder then asks for the module rather
    than promising a command that may fail or call other agents."""
    from pathlib import Path

    from ..engine.agentorigin import missing_agents
    from ..engine.agents.config import load_config
    from ..engine.agents.registry import known_agents, resolve_agent
    from ..engine.flowneeds import agent_names, uses_judged
    from ..engine.graphs import stored_spec

    try:
        if missing_agents(engine, run_id, (), judge) is not None:
            return True
        spec, flow = stored_spec(engine.store, run_id), engine.status(run_id).get("flow")
        config = load_config(config) if config else load_config(start=Path.cwd())
        names = set(agent_names(spec, flow)) | ({judge} if judge and uses_judged(spec, flow) else set())
        if not names <= set(known_agents(config=config)):
            return True
        return not all(_runs_here(resolve_agent(name, config=config)) for name in names)
    except Exception:  # noqa: BLE001 - a hint must not fail the command that prints it
        return True


def _runs_here(agent: Any) -> bool:
    """Whether ``agent``'s synchronous preflight passes (one that must be awaited: assumed to)."""
    from ..engine.agents.base import preflight_now
    from ..errors import AgentUnavailable

    try:
        preflight_now(agent)
    except AgentUnavailable:
        return False
    return True


def unknown_agent(error: BaseException, *, agents: str | None) -> str | None:
    """The engine's "no agent named X" (written for Python callers: ``agents=``, ``register``)
    in command-line terms, from the facts the error carries; None for any other error."""
    from ..engine.agents.registry import UNKNOWN_AGENT

    detail = getattr(error, "detail", None)
    if not isinstance(detail, dict) or detail.get("problem") != UNKNOWN_AGENT:
        return None
    name = detail["agent"]
    function = name.replace("-", "_")
    config = detail.get("config_path") or "lockgate.toml"
    if agents:
        source = f"define {function}() in {agents} (--agents)"
    else:
        source = f"pass --agents FILE.py defining {function}()"
    return f"no agent named {name!r}: {source}, or configure it in {config} ([agents.{name}])"
