"""Where a run's agents came from, as its drive's claim records it, and a resume that would
quietly take them from somewhere else.

A drive records with its claim (see :mod:`.drivers`) where the agents it was given came from:
an ``--agents`` module (``lockgate run``: a file's resolved path or a dotted name), or Python
code (``agents=`` of the library, a notebook's ``start`` or ``%flow run --agents VAR``), recorded
as ``python:`` and a JSON object naming the agents and, when known, the notebook variable that
held them. Functions given in Python are gone with the process (a kernel restart): a resume
given none for those names would resolve them from lockgate.toml, the registry or the built-ins
(a notebook's ``codex`` function would become the Codex CLI), so it is refused, as a resume that
would read another configuration file is.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

#: how a claim's ``agents`` record starts when the agents were given in Python code
PYTHON = "python:"
#: ``detail["problem"]`` of the ConfigError refusing a resume without the run's Python agents
AGENTS_NOT_GIVEN = "agents_not_given"


@dataclass(frozen=True)
class PythonAgents:
    """Agents given in Python: their ``names``, and the notebook ``variable`` that held them."""

    names: tuple[str, ...]
    variable: str | None = None

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


def python_agents(engine: Any, run_id: str) -> PythonAgents | None:
    """The Python agents run ``run_id``'s last drive was given, None when it was given none (or
    the engine keeps no claims)."""
    if not hasattr(engine, "last_agents"):
        return None
    return PythonAgents.parse(engine.last_agents(run_id))


def missing_agents(engine: Any, run_id: str, given: Collection[str]) -> tuple[PythonAgents, list[str]] | None:
    """(the Python agents the run's last drive was given, those of them its flow uses that
    ``given`` lacks), or None when it lacks none: a resume given only ``given`` would take those
    from another adapter."""
    from .flowneeds import agent_names

    origin = python_agents(engine, run_id)
    if origin is None or not origin.names:
        return None
    spec, flow = engine.spec_of(run_id)
    missing = [name for name in agent_names(spec, flow) if name in origin.names and name not in given]
    return (origin, missing) if missing else None


def refusal(run_id: str, origin: PythonAgents, missing: list[str]) -> ConfigError:
    """The error refusing a resume of run ``run_id`` given none of the Python agents ``missing``
    (its ``detail`` holds the facts, for callers with other words for the remedy)."""
    names = ", ".join(missing)
    held = f", from the variable {origin.variable}" if origin.variable else ""
    variable = origin.variable or "VAR"
    functions = ", ".join(f"{name.replace('-', '_')}()" for name in missing)
    error = ConfigError(
        f"run {run_id} was driven with agents given in Python ({names}{held}), and this resume was "
        f"given none for {names}: another adapter (lockgate.toml, a registered agent or a built-in) "
        f"would answer instead. Give them again: `%flow resume {run_id} --agents {variable}` in a "
        f"notebook{'' if origin.variable else f' (VAR: a dict naming {names})'}, agents= in Python, "
        f"or `lockgate run --resume {run_id} --agents FILE.py` with a module defining {functions}")
    error.detail = {"problem": AGENTS_NOT_GIVEN, "run_id": run_id, "agents": missing,
                    "variable": origin.variable}
    return error
