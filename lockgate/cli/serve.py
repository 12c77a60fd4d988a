"""``lockgate lsp``: serve the language server over stdio (default) or TCP."""

from __future__ import annotations

import click


def register(main: click.Group) -> None:
    main.add_command(lsp_command)


@click.command("lsp")
@click.option("--tcp", "tcp", metavar="HOST:PORT", help="Listen on TCP instead of stdio.")
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write the server's log to this file.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
              show_default=True, help="Log verbosity (with --log-file).")
def lsp_command(tcp: str | None, log_file: str | None, log_level: str) -> None:
    """Run the Lockgate language server for *.stratum.yaml specs.

    Editors start it over stdio; --tcp HOST:PORT serves one client on a socket (for debugging).
    """
    import logging

    host, port = _address(tcp) if tcp else (None, None)
    handlers: list[logging.Handler] = [logging.FileHandler(log_file, encoding="utf-8")] if log_file else [logging.NullHandler()]
    logging.basicConfig(level=log_level.upper(), handlers=handlers,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    try:
        from lockgate.lsp.server import create_server
    except ImportError as exc:  # pygls is the [lsp] extra
        raise click.ClickException(f"the language server needs the lsp extra ({exc}); "
                                   "pip install 'lockgate[lsp]' (from a clone: pip install -e '.[lsp]')") from exc
    server = create_server()
    if host is not None and port is not None:
        server.start_tcp(host, port)
    else:
        server.start_io()


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="--tcp")
    return host or "127.0.0.1", int(port)
