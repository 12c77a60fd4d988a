"""The ``lockgate`` console script and ``python -m lockgate``.

Loading the CLI (click, rich, the command modules) takes a noticeable part of a second, and a
Ctrl-C in that moment would print a KeyboardInterrupt traceback from deep inside an import. Here
it ends the command as a Ctrl-C anywhere else does: one line, exit status 130
(``LOCKGATE_DEBUG`` set: the traceback).
"""

from __future__ import annotations

import os
import sys

#: The exit status of a command ended by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def main() -> None:
    """Load the CLI and run it; a Ctrl-C while it loads exits 130 without a traceback."""
    try:
        from lockgate.cli import main as cli
    except KeyboardInterrupt:
        if os.environ.get("LOCKGATE_DEBUG"):  # as for an interrupted command (cli.failures)
            raise
        sys.stderr.write("\nlockgate: interrupted\n")
        sys.exit(INTERRUPTED)
    cli()
