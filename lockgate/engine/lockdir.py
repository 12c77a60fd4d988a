"""The ``.lockgate`` folder of a project: Lockgate's own files (the default run store, unmerged
patches), kept out of the project's git by a ``.gitignore`` of its own."""

from __future__ import annotations

from pathlib import Path

NAME = ".lockgate"

_IGNORE = "# Lockgate's own files (run stores, unmerged patches): not the project's\n*\n"


def keep_out_of_git(folder: Path) -> None:
    """Give ``folder`` (a ``.lockgate`` folder) a ``.gitignore`` ignoring everything in it, unless
    it has one: ``git status`` should not list a run database, and ``git add -A`` must not commit
    it. Best effort: a folder that cannot take the file still holds the store."""
    ignore = folder / ".gitignore"
    if ignore.exists():
        return
    try:
        ignore.write_text(_IGNORE)
    except OSError:
        pass
