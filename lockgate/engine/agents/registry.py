"""Which adapter answers for an agent name.

Precedence, highest first: the ``agents=`` mapping passed to the run, Python callables registered
by name (notebooks: ``@lockgate.engine.agents.register("writer")``), the project configuration
file, then the built-ins ``claude`` and ``codex``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...errors import ConfigError
from .base import Agent
from .config import AGENT_NAME, BUILTIN_AGENTS, ProjectConfig, load_config
from .python import PythonAgent

AgentLike = Agent | Callable[..., Any]


class AgentRegistry:
    """Python callables (or ready adapters) registered by agent name."""

    def __init__(self) -> None:
        self._agents: dict[str, AgentLike] = {}

    def register(self, name: str, fn: AgentLike | None = None) -> Any:
        """``register("writer", fn)``, or ``@register("writer")`` as a decorator."""
        _check_name(name)
        if fn is None:
            def decorate(target: AgentLike) -> AgentLike:
                self._agents[name] = target
                return target
            return decorate
        self._agents[name] = fn
        return fn

    def unregister(self, name: str) -> None:
        self._agents.pop(name, None)

    def get(self, name: str) -> Agent | None:
        target = self._agents.get(name)
        return None if target is None else as_agent(name, target)

    def names(self) -> list[str]:
        return sorted(self._agents)

    def clear(self) -> None:
        self._agents.clear()


DEFAULT_REGISTRY = AgentRegistry()


def register(name: str, fn: AgentLike | None = None) -> Any:
    """Register a Python callable (or an adapter) under ``name`` in the default registry."""
    return DEFAULT_REGISTRY.register(name, fn)


def as_agent(name: str, target: AgentLike) -> Agent:
    """An adapter as is; any other callable wrapped as a :class:`PythonAgent`."""
    if isinstance(target, Agent):
        return target
    if callable(target):
        return PythonAgent(name, target)
    raise ConfigError(f"agent {name!r}: expected an agent adapter or a callable, "
                      f"got {type(target).__name__}")


def resolve_agent(name: str, *, explicit: Mapping[str, AgentLike] | None = None,
                  registry: AgentRegistry | None = None,
                  config: ProjectConfig | None = None) -> Agent:
    """The adapter for ``name`` by precedence; ConfigError when nothing provides it."""
    if explicit and name in explicit:
        return as_agent(name, explicit[name])
    found = (registry or DEFAULT_REGISTRY).get(name)
    if found is not None:
        return found
    config = config if config is not None else load_config()
    from_config = config.agent(name)
    if from_config is not None:
        return from_config
    raise _unknown_agent(name, explicit=explicit, registry=registry, config=config)


#: ``detail["problem"]`` of the ConfigError :func:`resolve_agent` raises for a name nothing provides
UNKNOWN_AGENT = "unknown_agent"


def _unknown_agent(name: str, *, explicit: Mapping[str, AgentLike] | None,
                   registry: AgentRegistry | None, config: ProjectConfig) -> ConfigError:
    """The error for agent ``name`` that no source provides, worded for Python callers.

    Its ``detail`` holds the facts (the name, every agent name that does resolve, the
    configuration file read or None) so that a caller with other words for the same remedy
    (the CLI's ``--agents``) need not read them back out of the message."""
    where = f" in {config.path}" if config.path else " (no lockgate.toml found)"
    error = ConfigError(
        f"no agent named {name!r}: pass it in agents=, register a Python callable with "
        f"lockgate.engine.agents.register({name!r}, fn), or add [agents.{name}] to the "
        f"project configuration{where}")
    error.detail = {  # type: ignore[attr-defined]  # ConfigError takes a message only
        "problem": UNKNOWN_AGENT, "agent": name,
        "known": known_agents(explicit=explicit, registry=registry, config=config),
        "config_path": str(config.path) if config.path else None}
    return error


def known_agents(*, explicit: Mapping[str, AgentLike] | None = None,
                 registry: AgentRegistry | None = None,
                 config: ProjectConfig | None = None) -> list[str]:
    """Every agent name that resolves from these sources (the built-ins included), sorted."""
    config = config if config is not None else load_config()
    names = {*(explicit or {}), *(registry or DEFAULT_REGISTRY).names(), *config.agents, *BUILTIN_AGENTS}
    return sorted(names)


def resolve_agents(names: Iterable[str], **sources: Any) -> dict[str, Agent]:
    """Adapters for every name (one instance per name, shared by that name's steps)."""
    if sources.get("config") is None:
        sources["config"] = load_config()
    return {name: resolve_agent(name, **sources) for name in dict.fromkeys(names)}


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not AGENT_NAME.match(name):
        raise ConfigError(f"invalid agent name {name!r}: it must match ^[a-z][a-z0-9_-]*$")
