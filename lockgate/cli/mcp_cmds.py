"""``lockgate mcp`` (serve the MCP server over stdio), ``lockgate mcp config`` and
``lockgate agent-instructions``."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group("mcp", invoke_without_command=True)
@click.option("--store", metavar="URL",
              help="Run store: a SQLite path, sqlite://, postgresql://... or memory "
                   "(default: $LOCKGATE_STORE or .lockgate/lockgate.db).")
@click.option("--workspace", type=click.Path(file_okay=False), metavar="DIR",
              help="Directory file predicates are jailed to and spec paths are read from "
                   "(default: the current directory).")
@click.pass_context
def mcp(ctx: click.Context, store: str | None, workspace: str | None) -> None:
    """Serve the consumer protocol as MCP tools over stdio, for Claude Code, Codex and any MCP host.

    Hosts start this command themselves; `lockgate mcp config --claude` or `--codex` prints (or
    `--write`s) the configuration that makes them do so.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..errors import LockgateError
    from ..mcp.config import INSTALL_MCP

    try:
        from ..mcp.server import serve
    except ModuleNotFoundError as exc:
        raise click.ClickException(f"the MCP server needs the `mcp` package ({exc}); "
                                   f"install it with: {INSTALL_MCP}") from exc
    try:
        serve(store, workspace)
    except LockgateError as exc:
        raise click.ClickException(str(exc)) from exc


@mcp.command("config")
@click.option("--claude", "host", flag_value="claude", help="Claude Code (.mcp.json in the project).")
@click.option("--codex", "host", flag_value="codex", help="Codex ($CODEX_HOME/config.toml, default ~/.codex).")
@click.option("--write", is_flag=True, help="Merge the entry into the host's configuration file.")
@click.option("--path", "path", type=click.Path(dir_okay=False), metavar="FILE",
              help="The configuration file to write (default: the host's usual file).")
@click.option("--name", default="lockgate", show_default=True, help="The server's name in the host.")
@click.option("--command", "command", metavar="CMD",
              help="Launch command (default: this Python running `-m lockgate`); `lockgate` makes a portable entry.")
@click.option("--store", metavar="URL", help="Pass --store URL to the server.")
@click.option("--workspace", metavar="DIR", help="Pass --workspace DIR to the server.")
def mcp_config(host: str | None, write: bool, path: str | None, name: str, command: str | None,
               store: str | None, workspace: str | None) -> None:
    """Print the MCP configuration for Claude Code or Codex, or merge it in with --write.

    Writing keeps every other server and setting (and comments, in TOML); an existing entry of
    the same name keeps its extra keys (env, timeouts) and gets the new command. Without the mcp
    extra the configuration is still given, with a warning that the server cannot start yet.
    """
    from ..errors import ConfigError
    from ..mcp import config

    if host is None:
        raise click.UsageError("choose a host: --claude or --codex")
    if not name.strip():
        raise click.UsageError("--name must not be empty")
    try:
        entry = config.server_entry(command=command, store=store, workspace=workspace)
        if not write:
            click.echo(config.claude_snippet(entry, name) if host == "claude" else config.codex_snippet(entry, name),
                       nl=False)
            _warn_without_server()
            return
        target = Path(path) if path else config.default_path(host)  # type: ignore[arg-type]
        outcome = config.write_config(host, entry, target, name)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    verb = {"added": "added", "updated": "updated", "unchanged": "already present, unchanged:"}[outcome.action]
    click.echo(f"{verb} MCP server {outcome.name!r} in {outcome.path}")
    if outcome.action != "unchanged":
        click.echo(f"restart {'Claude Code' if host == 'claude' else 'Codex'} to load it", err=True)
    _warn_without_server()


def _warn_without_server() -> None:
    """Say on stderr when the configured server cannot start here: this Python lacks the MCP SDK,
    so a host would only see ``lockgate mcp`` exit with the install hint."""
    from ..mcp import config

    if not config.server_importable():
        click.echo(f"warning: the server needs the mcp extra, which {sys.executable} does not have; "
                   f"install it with: {config.INSTALL_MCP}", err=True)


@click.command("agent-instructions")
def agent_instructions() -> None:
    """Print the CLAUDE.md / AGENTS.md block that teaches an agent the Lockgate execution model."""
    from ..mcp.instructions import agent_instructions as block

    click.echo(block(), nl=False)


def register(main: click.Group) -> None:
    main.add_command(mcp)
    main.add_command(agent_instructions)
