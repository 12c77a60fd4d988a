"""Host configuration for ``lockgate mcp``: the snippet for Claude Code and Codex, and merging it in.

Claude Code reads project servers from ``.mcp.json`` (``{"mcpServers": {name: {type, command,
args}}}``); Codex reads ``[mcp_servers.<name>]`` tables from ``$CODEX_HOME/config.toml``
(default ``~/.codex/config.toml``). Writing merges: other servers, other settings, comments (TOML,
through tomlkit) and any extra keys of an existing lockgate entry (``env``, timeouts) are kept;
only ``command``/``args`` (and ``type`` for Claude) are set. A file that cannot be parsed is left
untouched and reported as a :class:`~lockgate.errors.ConfigError`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError

Host = Literal["claude", "codex"]
DEFAULT_NAME = "lockgate"
#: How to install the ``mcp`` extra (the MCP SDK and tomlkit), from the index or from a clone.
INSTALL_MCP = "pip install 'lockgate[mcp]' (from a clone: pip install -e '.[mcp]')"


@dataclass(frozen=True)
class ServerEntry:
    """How a host starts the server: ``command`` with ``args``."""

    command: str
    args: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "args": list(self.args)}


@dataclass(frozen=True)
class WriteOutcome:
    """What ``write_config`` did: ``added``, ``updated`` or ``unchanged``, and where."""

    path: Path
    action: str
    name: str


def server_entry(*, command: str | None = None, store: str | None = None,
                 workspace: str | None = None) -> ServerEntry:
    """The launch command; by default this interpreter (``python -m lockgate mcp``), which works
    whatever the host's PATH is. ``command="lockgate"`` gives a portable entry for a shared file."""
    options: list[str] = ["mcp"]
    if store:
        options += ["--store", store]
    if workspace:
        options += ["--workspace", workspace]
    if command is None:
        return ServerEntry(sys.executable, ("-m", "lockgate", *options))
    if not command.strip():
        raise ConfigError("the server command must not be empty")
    return ServerEntry(command, tuple(options))


def server_importable() -> bool:
    """Whether this Python finds the MCP SDK (the ``mcp`` extra) that ``lockgate mcp`` imports:
    without it a host that starts the configured server only sees it exit."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        return False


def claude_snippet(entry: ServerEntry, name: str = DEFAULT_NAME) -> str:
    """The ``.mcp.json`` document declaring only this server."""
    return json.dumps({"mcpServers": {name: {"type": "stdio", **entry.to_dict()}}}, indent=2) + "\n"


def codex_snippet(entry: ServerEntry, name: str = DEFAULT_NAME) -> str:
    """The ``config.toml`` table declaring this server."""
    tomlkit = _tomlkit()
    doc = tomlkit.document()
    servers = tomlkit.table(is_super_table=True)
    servers.add(name, _toml_entry(entry))
    doc.add("mcp_servers", servers)
    return tomlkit.dumps(doc)


def default_path(host: Host, project: Path | None = None) -> Path:
    """Claude: ``<project>/.mcp.json``; Codex: ``$CODEX_HOME/config.toml`` or ``~/.codex/config.toml``."""
    if host == "claude":
        return (project or Path.cwd()) / ".mcp.json"
    home = os.environ.get("CODEX_HOME")
    return (Path(home) if home else Path.home() / ".codex") / "config.toml"


def write_config(host: Host, entry: ServerEntry, path: Path, name: str = DEFAULT_NAME) -> WriteOutcome:
    """Merge the server into the host's configuration file at ``path`` (created if missing)."""
    text = _read(path)
    merged, action = (_merge_claude if host == "claude" else _merge_codex)(text, entry, name, path)
    if action != "unchanged":
        _write_atomic(path, merged)
    return WriteOutcome(path, action, name)


def _merge_claude(text: str | None, entry: ServerEntry, name: str, path: Path) -> tuple[str, str]:
    try:
        doc = json.loads(text) if text and text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it or add the snippet by hand") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{path} must hold a JSON object, not {type(doc).__name__}")
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: `mcpServers` must be an object, not {type(servers).__name__}")
    old = servers.get(name)
    new = {**(old if isinstance(old, dict) else {}), "type": "stdio", **entry.to_dict()}
    if old == new:
        return text or "", "unchanged"
    servers[name] = new
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n", "updated" if old is not None else "added"


def _merge_codex(text: str | None, entry: ServerEntry, name: str, path: Path) -> tuple[str, str]:
    tomlkit = _tomlkit()
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it or add the snippet by hand") from exc
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc.add("mcp_servers", servers)
    elif not isinstance(servers, dict):
        raise ConfigError(f"{path}: `mcp_servers` must be a table")
    old = servers.get(name)
    if old is None:
        servers[name] = _toml_entry(entry)
        return _ending(tomlkit.dumps(doc)), "added"
    if not isinstance(old, dict):
        raise ConfigError(f"{path}: `mcp_servers.{name}` must be a table")
    if old.get("command") == entry.command and list(old.get("args", [])) == list(entry.args):
        return text or "", "unchanged"
    old["command"] = entry.command
    old["args"] = list(entry.args)
    return _ending(tomlkit.dumps(doc)), "updated"


def _ending(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _toml_entry(entry: ServerEntry) -> Any:
    table = _tomlkit().table()
    table.add("command", entry.command)
    table.add("args", list(entry.args))
    return table


def _tomlkit() -> Any:
    """tomlkit, which Codex's TOML needs; a ConfigError naming the extra when it is missing
    (it is not a core dependency)."""
    try:
        import tomlkit
    except ModuleNotFoundError as exc:
        raise ConfigError(f"the Codex configuration needs tomlkit, part of the mcp extra ({exc}); "
                          f"install it with: {INSTALL_MCP}") from exc
    return tomlkit


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` in one step, so a crash never leaves a half-written host config."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}") from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
