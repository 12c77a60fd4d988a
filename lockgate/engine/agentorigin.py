"""Where a run's agents came from, as its drive's claim records it, and a resume that would
quietly take them from somewhere else.

A drive records with its claim (see :mod:`.drivers`) where the agents it was given came from:
an ``--agents`` module (``lockgate run``: a file's resolved path or a dotted name), or Python
code (``agents=`` of the library, a notebook's ``start`` or ``%flow run --agents VAR``), recorded
as ``python:`` and a JSON object naming the agents and, when known, the notebook variable that
held them (:func:`record_of`). Functions given in Python are gone with the process (a kernel
restart), and a module's are not loaded unless it is named again: a resume given none for those
names would resolve them from lockgate.toml, the registry or the built-ins (a notebook's or a
module's ``codex`` function would become the Codex CLI), so it is refused, as a resume that
would read another configuration file is.

A module is recorded by its name only (what commands print to resume the run); the agents it
defines are read from its source when a resume is checked, without running it
(:func:`module_agents`). A module that cannot be read any more (deleted, not Python source)
cannot tell: as for a configuration file that is gone, the resume is not refused for it.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import sys
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

#: how a claim's ``agents`` record starts when the agents were given in Python code
PYTHON = "python:"
#: ``detail["problem"]`` of the ConfigError refusing a resume without the run's Python agents
AGENTS_NOT_GIVEN = "agents_not_given"


@dataclass(frozen=True)
class PythonAgents:
    """Agents given in Python: their ``names``, and the notebook ``variable`` that held them;
    or (``module``) the agents an ``--agents`` module defines, as recorded."""

    names: tuple[str, ...]
    variable: str | None = None
    module: str | None = None

    @classmethod
    def given(cls, agents: Mapping[Any, Any], variable: str | None = None) -> PythonAgents:
        return cls(tuple(sorted(name for name in agents if isinstance(name, str))), variable)

    def record(self) -> str:
        """The claim's ``agents`` record of these agents."""
        body = {"names": list(self.names), **({"variable": self.variable} if self.variable else {})}
        return PYTHON + json.dumps(body, separators=(",", ":"))

    @classmethod
    def parse(cls, recorded: str | None) -> PythonAgents | None:
        """The Python agents a claim's ``agents`` record names; None for a module, or none."""
        if not recorded or not recorded.startswith(PYTHON):
            return None
        try:
            body = json.loads(recorded[len(PYTHON):])
            names = tuple(str(name) for name in body.get("names") or ())
            variable = body.get("variable")
        except (ValueError, AttributeError, TypeError):
            return cls(())
        return cls(names, variable if isinstance(variable, str) and variable else None)


def module_of(recorded: str | None) -> str | None:
    """The ``--agents`` module a claim's ``agents`` record names; None when it names none (no
    record, or agents given in Python: no command can name those)."""
    return None if not recorded or recorded.startswith(PYTHON) else recorded


def record_of(agents: Mapping[Any, Any] | None, agents_module: str | None) -> str | None:
    """The claim's ``agents`` record of a drive given ``agents``, which came from
    ``agents_module`` (a module's name, or a notebook's own ``python:`` record); for agents
    given in Python without one (``agents=`` of the library), their names. None for no agents."""
    if agents_module is not None:
        return agents_module
    given = PythonAgents.given(agents or {})
    return given.record() if given.names else None


def python_agents(engine: Any, run_id: str) -> PythonAgents | None:
    """The Python agents run ``run_id``'s last drive was given, None when it was given none (or
    the engine keeps no claims)."""
    if not hasattr(engine, "last_agents"):
        return None
    return PythonAgents.parse(engine.last_agents(run_id))


def driven_with(engine: Any, run_id: str) -> PythonAgents | None:
    """The agents run ``run_id``'s last drive took from Python code or an ``--agents`` module
    (the module's as its source defines them now); None when it took none, or from a module
    that cannot be read any more."""
    if not hasattr(engine, "last_agents"):
        return None
    recorded = engine.last_agents(run_id)
    origin = PythonAgents.parse(recorded)
    if origin is not None or not recorded:
        return origin
    names = module_agents(recorded)
    return PythonAgents(names, module=recorded) if names is not None else None


def missing_agents(engine: Any, run_id: str, given: Collection[str]) -> tuple[PythonAgents, list[str]] | None:
    """(the agents the run's last drive took from Python or a module, those of them its flow
    uses that ``given`` lacks), or None when it lacks none: a resume given only ``given`` would
    take those from another adapter."""
    from .flowneeds import agent_names

    origin = driven_with(engine, run_id)
    if origin is None or not origin.names:
        return None
    spec, flow = engine.spec_of(run_id)
    missing = [name for name in agent_names(spec, flow) if name in origin.names and name not in given]
    return (origin, missing) if missing else None


def module_agents(module: str) -> tuple[str, ...] | None:
    """The agent names ``--agents`` ``module`` (a file's path, or a dotted name looked up from
    the current folder as ``lockgate run`` imports it) defines, read from its source without
    running it: its top-level functions not starting with ``_`` (``a_b`` also as ``a-b``), as
    ``lockgate run`` takes them, and the names it assigns at top level other than to a literal
    (a function made by a call). None when its source cannot be read."""
    path = _module_file(module)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read(), path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    names = {name for name in _bound_at_top(tree.body) if not name.startswith("_")}
    return tuple(sorted(names | {name.replace("_", "-") for name in names}))


def _bound_at_top(body: list[ast.stmt]) -> Iterator[str]:
    """The names ``body`` (a module's) binds to a function or to something a call made, in
    blocks run as the module loads (``if``, ``try``, ``with``) too."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if not isinstance(node.value, ast.Constant):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                yield from (target.id for target in targets if isinstance(target, ast.Name))
        elif not isinstance(node, ast.ClassDef):  # a class body binds its own names
            for block in ("body", "orelse", "finalbody"):
                yield from _bound_at_top(getattr(node, block, None) or [])
            for handler in getattr(node, "handlers", None) or []:
                yield from _bound_at_top(handler.body)


def _module_file(module: str) -> str | None:
    """The source file of ``--agents`` ``module``: a path as recorded (resolved), a dotted
    name found from the current folder and ``sys.path`` without importing anything."""
    if os.path.isabs(module):
        return module if os.path.isfile(module) else None
    from importlib.machinery import PathFinder

    parts, search, spec = module.split("."), [os.getcwd(), *sys.path], None
    for depth in range(1, len(parts) + 1):
        spec = PathFinder.find_spec(".".join(parts[:depth]), search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or ())
    origin = spec.origin if spec is not None else None
    return origin if origin and origin.endswith(".py") and os.path.isfile(origin) else None


def refusal(run_id: str, origin: PythonAgents, missing: list[str]) -> ConfigError:
    """The error refusing a resume of run ``run_id`` given none of the agents ``missing`` that
    its last drive took from Python or a module (its ``detail`` holds the facts, for callers
    with other words for the remedy)."""
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


def _python_words(run_id: str, origin: PythonAgents, missing: list[str]) -> str:
    names = ", ".join(missing)
    held = f", from the variable {origin.variable}" if origin.variable else ""
    functions = ", ".join(f"{name.replace('-', '_')}()" for name in missing)
    return (f"run {run_id} was driven with agents given in Python ({names}{held}), and this resume was given "
            f"none for {names}: {_INSTEAD}. Give them again: `%flow resume {run_id} --agents "
            f"{origin.variable or 'VAR'}` in a notebook{'' if origin.variable else f' (VAR: a dict naming {names})'}, "
            f"agents= in Python, or `lockgate run --resume {run_id} --agents FILE.py` with a module defining "
            f"{functions}")
