"""Commands whose optional extra is missing say which extra to install, both from the package
index and from a clone, instead of failing with an internal error or configuring a server that
cannot start. Each runs the real command in a subprocess whose import system refuses the extra's
modules (a meta path finder ahead of the others), so nothing is uninstalled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_support import lockgate_env

# Installs a finder that makes every module under the names in argv[1] (comma-separated)
# unimportable, drops that argument, then runs `python -m lockgate` with the rest.
BLOCKED_RUN = """
import importlib.abc, runpy, sys

blocked = set(sys.argv.pop(1).split(","))

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Block())
sys.argv[0] = "lockgate"
runpy.run_module("lockgate", run_name="__main__", alter_sys=True)
"""


def _lockgate(blocked: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKED_RUN, blocked, *args], cwd=cwd, env=lockgate_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def _names_both_installs(text: str, extra: str) -> None:
    assert f"pip install 'lockgate[{extra}]'" in text
    assert f"from a clone: pip install -e '.[{extra}]'" in text


def test_lsp_without_pygls_names_the_lsp_extra(tmp_path: Path) -> None:
    done = _lockgate("pygls", "lsp", cwd=tmp_path)
    assert done.returncode == 1
    assert "the language server needs the lsp extra" in done.stderr
    _names_both_installs(done.stderr, "lsp")
    assert "internal error" not in done.stderr


def test_mcp_without_the_sdk_names_the_mcp_extra(tmp_path: Path) -> None:
    done = _lockgate("mcp", "mcp", cwd=tmp_path)
    assert done.returncode == 1
    assert "the MCP server needs the `mcp` package" in done.stderr
    _names_both_installs(done.stderr, "mcp")


def test_codex_config_without_tomlkit_names_the_mcp_extra_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    for args in (["--write", "--path", str(target)], []):
        done = _lockgate("tomlkit", "mcp", "config", "--codex", *args, cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert "the Codex configuration needs tomlkit, part of the mcp extra" in done.stderr
        _names_both_installs(done.stderr, "mcp")
        assert "internal error" not in done.stderr and done.stdout == ""
    assert not target.exists()


def test_claude_config_without_the_sdk_is_written_with_a_warning(tmp_path: Path) -> None:
    done = _lockgate("mcp", "mcp", "config", "--claude", "--write", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["lockgate"]
    assert entry["args"] == ["-m", "lockgate", "mcp"]
    assert "added MCP server 'lockgate'" in done.stdout
    assert f"warning: the server needs the mcp extra, which {sys.executable} does not have" in done.stderr
    _names_both_installs(done.stderr, "mcp")


def test_claude_snippet_without_the_sdk_keeps_stdout_clean_and_warns(tmp_path: Path) -> None:
    done = _lockgate("mcp", "mcp", "config", "--claude", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mcpServers"]["lockgate"]["type"] == "stdio"
    assert "warning: the server needs the mcp extra" in done.stderr


def test_no_warning_when_the_sdk_is_there(tmp_path: Path) -> None:
    done = _lockgate("nothing_blocked", "mcp", "config", "--claude", "--write", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr and "restart Claude Code to load it" in done.stderr
