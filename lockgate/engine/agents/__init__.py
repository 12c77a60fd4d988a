"""Agents: the adapters that carry out ``do`` steps.

One async protocol (:class:`Agent`: ``execute(task) -> AgentResult``, ``cancel()``) and its
adapters: Python callables, a scripted agent for tests, any command line speaking JSON, an
OpenAI-compatible HTTP model, and the Claude Code and Codex CLIs. Agent names in specs map to
adapters through :func:`resolve_agent` (explicit > registered > lockgate.toml > built-ins).
"""

from __future__ import annotations

from .base import Agent, AgentResult, Task, Telemetry, Usage, preflight, strict_compatible
from .claude import ClaudeCodeAgent
from .codex import CodexAgent
from .command import CommandAgent
from .config import ProjectConfig, RunnerSettings, find_config, load_config, parse_config
from .openai import OpenAIAgent
from .python import PythonAgent
from .registry import (DEFAULT_REGISTRY, AgentRegistry, as_agent, register, resolve_agent,
                       resolve_agents)
from .scripted import Fail, ScriptedAgent

__all__ = [
    "Agent", "AgentResult", "Task", "Telemetry", "Usage", "preflight", "strict_compatible",
    "ClaudeCodeAgent", "CodexAgent", "CommandAgent", "OpenAIAgent", "PythonAgent",
    "ScriptedAgent", "Fail", "ProjectConfig", "RunnerSettings", "find_config", "load_config",
    "parse_config", "AgentRegistry", "DEFAULT_REGISTRY", "register", "as_agent",
    "resolve_agent", "resolve_agents",
]
