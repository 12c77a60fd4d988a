"""Where a run's agents came from, as its drive's claim records it, and a resume that would
quietly take them from somewhere else.

A drive records with its claim (see :mod:`.drivers`) the names of the agents it was given and
where they came from (:func:`record_of`): ``python:`` and a JSON object naming them, with the
``--agents`` module they were taken from (``lockgate run``: a file's resolved path or a dotted
name) or, from a notebook, the variable that held them. The drive knows those names exactly
(the mapping it was given, and what the module registered as it loaded); nothing is guessed
from a module's source. Functions given in Python are gone with the process (a kernel
restart), and a module's are not loaded unless it is named again: a resume given none for a
recorded name its flow uses would resolve it from lockgate.toml, the registry or the built-ins
(a notebook's or a module's ``codex`` function would become the Codex CLI), so it is refused,
as a resume that would read another configuration file is. Names the drive did not take from
there (a module's class instance or ``functools.partial``, which ``lockgate run`` does not
load) were resolved from those already, and a resume may resolve them so again.

An older Lockgate recorded an ``--agents`` module by its name alone (no ``python:``): which
agents the run took from it is not known, so a resume is not refused for it; commands that
print how to resume the run still name the module (see :func:`module_of`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

#: how a claim's ``agents`` record starts when it names the agents (given in Python or a module)
PYTHON = "python:"
#: ``detail["problem"]`` of the ConfigError refusing a resume without the run's Python agents
AGENTS_NOT_GIVEN = "agents_not_given"


@dataclass(frozen=True)
class PythonAgents:
    """The agents a drive was given, by their ``names``: from the notebook ``variable`` that
    held them, or from the ``--agents`` ``module`` (as recorded), when known."""

    names: tuple[str, ...]
    variable: str | None = None
    module: str | None = None

    @classmethod
    def given(cls, agents: Mapping[Any, Any], variable: str | None = None, *, module: str | None = None,
              registered: Iterable[str] = ()) -> PythonAgents:
        """The agents of mapping ``agents``, and those ``module`` ``registered`` as it loaded."""
        names = {name for name in agents if isinstance(name, str)} | set(registered)
        return cls(tuple(sorted(names)), variable, module)

    def record(self) -> str:
        """The claim's ``agents`` record of these agents."""
        body: dict[str, Any] = {"names": list(self.names)}
        body.update((key, value) for key, value in (("variable", self.variable), ("module", self.module)) if value)
        return PYTHON + json.dumps(body, separators=(",", ":"))

    @classmethod
    def parse(cls, recorded: str | None) -> PythonAgents | None:
        """The agents a claim's ``agents`` record names; None for none, or an older Lockgate's
        record of a module alone."""
        if not recorded or not recorded.startswith(PYTHON):
            return None
        try:
            body = json.loads(recorded[len(PYTHON):])
            names = tuple(str(name) for name in body.get("names") or ())
            variable, module = body.get("variable"), body.get("module")
        except (ValueError, AttributeError, TypeError):
            return cls(())
        return cls(names, _text(variable), _text(module))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def module_of(recorded: str | None) -> str | None:
    """The ``--agents`` module a claim's ``agents`` record names; None when it names none (no
    record, or agents given in Python: no command can name those)."""
    if not recorded:
        return None
    return recorded if not recorded.startswith(PYTHON) else PythonAgents.parse(recorded).module


def names_of(recorded: str | None) -> tuple[str, ...]:
    """The agent names a claim's ``agents`` record says the drive was given (none for no
    record, or an older Lockgate's record of a module alone)."""
    origin = PythonAgents.parse(recorded)
    return origin.names if origin is not None else ()


def names_recorded(recorded: str | None) -> bool:
    """Whether a claim's ``agents`` record says which agents the drive was given: not an older
    Lockgate's record of an ``--agents`` module alone."""
    return not recorded or recorded.startswith(PYTHON)


def record_of(agents: Mapping[Any, Any] | None, agents_module: str | None,
              registered: Iterable[str] = ()) -> str | None:
    """The claim's ``agents`` record of a drive given ``agents``, which came from
    ``agents_module`` (a module's name, whose loading ``registered`` those names too; or a
    notebook's own ``python:`` record, kept as it is) or, without one, from Python code (the
    library's ``agents=``): their names, and the module's. None for no agents."""
    if agents_module is not None and agents_module.startswith(PYTHON):
        return agents_module
    given = PythonAgents.given(agents or {}, module=agents_module, registered=registered)
    return given.record() if given.names or given.module else None


def python_agents(engine: Any, run_id: str) -> PythonAgents | None:
    """The Python agents run ``run_id``'s last drive was given, None when it was given none (or
    took them from an ``--agents`` module, or the engine keeps no claims)."""
    if not hasattr(engine, "last_agents"):
        return None
    origin = PythonAgents.parse(engine.last_agents(run_id))
    return origin if origin is not None and origin.module is None else None


def missing_agents(engine: Any, run_id: str, given: Collection[str],
                   judge: str | None = None) -> tuple[PythonAgents, list[str]] | None:
    """(the agents run ``run_id``'s last drive was given in Python or by a module, those of
    them its flow uses that ``given`` lacks), or None when it lacks none: a resume given only
    ``given`` would take those from another adapter. ``judge``: the agent name the resume
    judges with, used too when the flow has judged ensures (a module's ``judge`` function
    would otherwise become lockgate.toml's or a built-in agent of that name)."""
    from .flowneeds import agent_names, uses_judged

    if not hasattr(engine, "last_agents"):
        return None
    recorded = engine.last_agents(run_id)
    if PythonAgents.parse(recorded) is None:  # nothing recorded, or not which agents
        return None
    spec, flow = engine.spec_of(run_id)
    used = agent_names(spec, flow)
    if judge is not None and judge not in used and uses_judged(spec, flow):
        used.append(judge)
    return missing_from(recorded, used, given)


def missing_from(recorded: str | None, used: Iterable[str],
                 given: Collection[str]) -> tuple[PythonAgents, list[str]] | None:
    """As :func:`missing_agents`, for a claim's ``agents`` record and the agent names ``used``
    by the run's flow."""
    origin = PythonAgents.parse(recorded)
    if origin is None:
        return None
    missing = [name for name in used if name in origin.names and name not in given]
    return (origin, missing) if missing else None


def refusal(run_id: str, origin: PythonAgents, missing: list[str], given_module: str | None = None) -> ConfigError:
    """The error refusing a resume of run ``run_id`` given none of the agents ``missing`` that
    its last drive took from Python or a module (its ``detail`` holds the facts, for callers
    with other words for the remedy); ``given_module``: the ``--agents`` module this resume was
    given (when it is the run's own, it no longer defines them: giving it again is no remedy)."""
    if origin.module is not None and given_module == origin.module:
        words = _changed_module_words
    else:
        words = _module_words if origin.module is not None else _python_words
    error = ConfigError(words(run_id, origin, missing))
    error.detail = {"problem": AGENTS_NOT_GIVEN, "run_id": run_id, "agents": missing,
                    "variable": origin.variable, **({"module": origin.module} if origin.module else {})}
    return error


_INSTEAD = "another adapter (lockgate.toml, a registered agent or a built-in) would answer instead"


def _module_words(run_id: str, origin: PythonAgents, missing: list[str]) -> str:
    names = ", ".join(missing)
    return (f"run {run_id} was driven with the agents of --agents {origin.module} ({names}), and this resume was "
            f"given none for {names}: {_INSTEAD}. Give them again: `lockgate run --resume {run_id} --agents "
            f"{shlex.quote(str(origin.module))}`, `%flow resume {run_id} --agents VAR` in a notebook (VAR: a dict "
            f"naming {names}), or agents= in Python")


def _changed_module_words(run_id: str, origin: PythonAgents, missing: list[str]) -> str:
    names = ", ".join(missing)
    return (f"run {run_id} was driven with {names} from --agents {origin.module}, which no longer defines "
            f"{'it' if len(missing) == 1 else 'them'}: {_INSTEAD}. Define {names} in it again, or resume with a "
            "module (or agents= in Python) that does")


def function_names(names: Iterable[str]) -> str:
    """The Python functions a module defines to give the agents ``names`` (``a-b`` as ``a_b()``),
    listed for a message."""
    return ", ".join(f"{name.replace('-', '_')}()" for name in names)


def _python_words(run_id: str, origin: PythonAgents, missing: list[str]) -> str:
    names = ", ".join(missing)
    held = f", from the variable {origin.variable}" if origin.variable else ""
    functions = function_names(missing)
    return (f"run {run_id} was driven with agents given in Python ({names}{held}), and this resume was given "
            f"none for {names}: {_INSTEAD}. Give them again: `%flow resume {run_id} --agents "
            f"{origin.variable or 'VAR'}` in a notebook{'' if origin.variable else f' (VAR: a dict naming {names})'}, "
            f"agents= in Python, or `lockgate run --resume {run_id} --agents FILE.py` with a module defining "
            f"{functions}")
