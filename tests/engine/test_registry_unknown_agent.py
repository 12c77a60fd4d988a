"""An agent name nothing provides: the registry's ConfigError says so for Python callers and
carries the facts (the name, the names that do resolve, the configuration read) as data, for
callers that word the remedy their own way (the CLI)."""

from __future__ import annotations

import pytest

from lockgate.engine.agents import AgentRegistry, ProjectConfig, load_config, resolve_agent
from lockgate.engine.agents.registry import UNKNOWN_AGENT, resolve_agents
from lockgate.errors import ConfigError


def unknown(name: str, **sources) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        resolve_agent(name, **sources)
    return raised.value


def test_the_error_carries_the_name_the_known_agents_and_the_configuration_read(tmp_path):
    (tmp_path / "lockgate.toml").write_text('[agents.reviewer]\ntype = "command"\ncommand = ["true"]\n')
    registry = AgentRegistry()
    registry.register("helper", lambda task: {})
    error = unknown("ghost", explicit={"writer": lambda task: {}}, registry=registry,
                    config=load_config(start=tmp_path))
    assert error.detail == {
        "problem": UNKNOWN_AGENT, "agent": "ghost",
        "known": ["claude", "codex", "helper", "reviewer", "writer"],
        "config_path": str(tmp_path / "lockgate.toml"),
    }
    assert str(error).startswith("no agent named 'ghost': pass it in agents=")
    assert str(error).endswith(f"[agents.ghost] to the project configuration in {tmp_path / 'lockgate.toml'}")


def test_without_a_configuration_file_the_path_is_none():
    error = unknown("ghost", registry=AgentRegistry(), config=ProjectConfig())
    assert error.detail["config_path"] is None
    assert error.detail["known"] == ["claude", "codex"]
    assert str(error).endswith("(no lockgate.toml found)")


def test_resolving_many_names_stops_at_the_first_unknown_one():
    with pytest.raises(ConfigError) as raised:
        resolve_agents(["claude", "ghost", "phantom"], registry=AgentRegistry(), config=ProjectConfig())
    assert raised.value.detail["agent"] == "ghost"
