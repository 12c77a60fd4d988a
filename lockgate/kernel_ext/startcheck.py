"""What a notebook run needs before it starts (or resumes), checked then rather than later.

A notebook run is a task on the kernel's loop: an error the runner meets before planning (inputs
the flow's input contract refuses, an agent name nothing provides, an agent whose preflight finds
it cannot run here) would show only when the run is awaited, as "run None is error: ...". These
are the engine's own checks, made up front as the CLI and the MCP server make them: the input
contract check of ``Engine.plan`` (called as :func:`lockgate.engine.engine.check_inputs`), the
runner's agent resolution, and the agents' synchronous preflights. An asynchronous preflight (an
endpoint to reach) would have to be awaited, which a cell that returns at once cannot do: it is
left to the run's task, where the runner makes every preflight (at a start and at a resume).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_agents(runner: Any, spec: Any, flow: str) -> None:
    """ConfigError naming the agent when one the flow may dispatch to (or the configured judge)
    resolves from nowhere: not in agents=, not registered, not in lockgate.toml."""
    from ..engine.flowneeds import agent_names

    runner.install_judge()
    for name in agent_names(spec, flow):
        runner.agent(name)


def check_preflights(runner: Any, spec: Any, flow: str) -> None:
    """AgentUnavailable (a LockgateError) from the first synchronous ``preflight`` that fails, of
    the agents the flow may dispatch to and, when a judged ensure may be reached, the judge's
    agent: the checks :meth:`Runner.start` makes first, made in the cell. The run's task makes
    them again (a PATH lookup, an environment or file check: about 55 µs for a built-in agent)."""
    from ..engine.agents.base import preflight_now

    for agent in runner.agents_to_check(spec, flow):
        preflight_now(agent)


def agents_mapping(agents: Any, where: str) -> Mapping[str, Any] | None:
    """``agents`` when it is a mapping (or None); otherwise a one-line FlowCellError (a
    UsageError that fails the cell) saying what agents= takes (a bare function is the usual slip)."""
    from .cellerror import FlowCellError

    if agents is None or isinstance(agents, Mapping):
        return agents
    name = getattr(agents, "__name__", None)
    example = f"{{{name!r}: {name}}}" if callable(agents) and name and name.isidentifier() else "{'writer': writer}"
    raise FlowCellError(f"{where}: agents= takes a mapping {{name: callable}}, e.g. agents={example}, "
                     f"not a {type(agents).__name__}")
