"""The ``lockgate`` command: thin adapters that parse arguments and call the library.

Each group of commands lives in its own module and registers itself on :data:`main` through
:func:`register`; importing a command module must stay cheap (heavy imports go inside the
command functions).
"""

from __future__ import annotations

from importlib import import_module

import click

from .. import __version__
from .failures import SafeGroup

_COMMAND_MODULES = ("validate", "runs", "run", "graph", "serve", "mcp_cmds")


@click.group(cls=SafeGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="lockgate")
def main() -> None:
    """Lockgate: declarative, governed AI-agent workflows.

    Validate specs, run flows with checked steps, inspect and steer runs, and serve the language
    server and the MCP server.

    Exit status 74 in every command: a file or standard output could not be written (a full
    disk); 130: interrupted (Ctrl-C).
    """


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        module.register(main)


_register_all()
