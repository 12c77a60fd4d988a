"""`lockgate mcp config` (snippets, --write merging) and `lockgate agent-instructions`."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.mcp.instructions import SERVER_INSTRUCTIONS, agent_instructions
from lockgate.mcp.tools import TOOL_NAMES


def _run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_claude_snippet_starts_this_interpreter_with_the_servers_options() -> None:
    out = _run("mcp", "config", "--claude", "--store", "runs.db", "--workspace", "/srv/project")
    assert out.exit_code == 0
    entry = json.loads(out.output)["mcpServers"]["lockgate"]
    assert entry == {"type": "stdio", "command": sys.executable,
                     "args": ["-m", "lockgate", "mcp", "--store", "runs.db", "--workspace", "/srv/project"]}


def test_codex_snippet_is_a_toml_table_with_a_portable_command() -> None:
    out = _run("mcp", "config", "--codex", "--command", "lockgate", "--name", "gate keeper")
    assert out.exit_code == 0
    parsed = tomllib.loads(out.output)
    assert parsed == {"mcp_servers": {"gate keeper": {"command": "lockgate", "args": ["mcp"]}}}


def test_a_host_must_be_chosen() -> None:
    out = _run("mcp", "config")
    assert out.exit_code == 2 and "--claude or --codex" in out.output


def test_write_merges_into_mcp_json_keeping_other_servers_and_extra_keys(tmp_path: Path) -> None:
    target = tmp_path / ".mcp.json"
    target.write_text(json.dumps({
        "mcpServers": {"other": {"command": "other-server", "args": ["--x"]},
                       "lockgate": {"command": "old", "args": [], "env": {"LOCKGATE_STORE": "team.db"}}},
        "extra": {"kept": True},
    }))
    out = _run("mcp", "config", "--claude", "--write", "--path", str(target), "--command", "lockgate")
    assert out.exit_code == 0 and "updated" in out.output
    doc = json.loads(target.read_text())
    assert doc["extra"] == {"kept": True}
    assert doc["mcpServers"]["other"] == {"command": "other-server", "args": ["--x"]}
    assert doc["mcpServers"]["lockgate"] == {"command": "lockgate", "args": ["mcp"], "type": "stdio",
                                             "env": {"LOCKGATE_STORE": "team.db"}}
    again = _run("mcp", "config", "--claude", "--write", "--path", str(target), "--command", "lockgate")
    assert "unchanged" in again.output and json.loads(target.read_text()) == doc


def test_write_creates_the_project_file_in_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = _run("mcp", "config", "--claude", "--write")
    assert out.exit_code == 0 and "added" in out.output
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["lockgate"]["command"] == sys.executable


def test_write_merges_into_codex_config_keeping_comments_and_other_tables(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    config = home / "config.toml"
    original = ('# my settings\nmodel = "o4-mini"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"  # keep me\n'
                'args = ["serve"]\n')
    config.write_text(original)
    out = _run("mcp", "config", "--codex", "--write", "--command", "lockgate", env={"CODEX_HOME": str(home)})
    assert out.exit_code == 0 and "added" in out.output and str(config) in out.output
    text = config.read_text()
    assert text.startswith(original) and text.endswith("\n")
    assert "# keep me" in text
    parsed = tomllib.loads(text)
    assert parsed["model"] == "o4-mini"
    assert parsed["mcp_servers"]["docs"] == {"command": "docs-mcp", "args": ["serve"]}
    assert parsed["mcp_servers"]["lockgate"] == {"command": "lockgate", "args": ["mcp"]}
    assert "unchanged" in _run("mcp", "config", "--codex", "--write", "--command", "lockgate",
                               env={"CODEX_HOME": str(home)}).output


def test_write_updates_an_existing_codex_entry_but_keeps_its_settings(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[mcp_servers.lockgate]\ncommand = "old"\nargs = []\nstartup_timeout_sec = 30\n\n'
                      '[mcp_servers.lockgate.env]\nLOCKGATE_STORE = "x.db"\n')
    out = _run("mcp", "config", "--codex", "--write", "--path", str(config), "--store", "runs.db")
    assert out.exit_code == 0 and "updated" in out.output
    entry = tomllib.loads(config.read_text())["mcp_servers"]["lockgate"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "lockgate", "mcp", "--store", "runs.db"]
    assert entry["startup_timeout_sec"] == 30 and entry["env"] == {"LOCKGATE_STORE": "x.db"}


@pytest.mark.parametrize("host, name, content, words", [
    ("--claude", ".mcp.json", "{not json", "not valid JSON"),
    ("--claude", ".mcp.json", "[1, 2]", "must hold a JSON object"),
    ("--claude", ".mcp.json", '{"mcpServers": []}', "`mcpServers` must be an object"),
    ("--codex", "config.toml", "[mcp_servers\n", "not valid TOML"),
    ("--codex", "config.toml", 'mcp_servers = "x"\n', "`mcp_servers` must be a table"),
])
def test_an_unparseable_config_is_reported_and_left_untouched(tmp_path: Path, host, name, content, words) -> None:
    target = tmp_path / name
    target.write_text(content)
    out = _run("mcp", "config", host, "--write", "--path", str(target))
    assert out.exit_code == 1 and words in out.output
    assert target.read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left behind


def test_the_instructions_teach_every_tool() -> None:
    block = agent_instructions()
    assert block.startswith("## Lockgate Execution Model")
    for name in TOOL_NAMES:
        assert f"`{name}`" in block, name
        assert name in SERVER_INSTRUCTIONS, name
    for word in ("token", "violations", "ensure_failed", "await_gate", "lockgate gate approve"):
        assert word in block
    out = _run("agent-instructions")
    assert out.exit_code == 0 and out.output == block


def test_the_server_refuses_a_bad_store_before_serving() -> None:
    out = CliRunner().invoke(main, ["mcp", "--store", "foo://nowhere"])
    assert out.exit_code == 1 and "unknown store URL scheme" in out.output
