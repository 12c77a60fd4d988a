"""A SQLite database that is some other program's (tables, none of them Lockgate's schema
version) is refused by the store itself, whichever surface opens it (the CLI, the MCP server,
a notebook), and left byte for byte as it was; an empty file or a Lockgate store opens."""

from __future__ import annotations

import sqlite3

import pytest

from lockgate.engine.store import open_store
from lockgate.errors import NotAStore


def test_another_programs_database_is_refused_unchanged(tmp_path):
    app = tmp_path / "app.db"
    with sqlite3.connect(app) as db:
        db.executescript("CREATE TABLE users (id INTEGER PRIMARY KEY); CREATE TABLE meta (k TEXT);")
    db.close()
    before = app.read_bytes()
    with pytest.raises(NotAStore, match=r"app\.db is an SQLite database but not a Lockgate run store "
                                        r"\(its tables: meta, users\); nothing was changed in it"):
        open_store(app)
    assert app.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_an_empty_file_and_a_lockgate_store_open(tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    open_store(empty).close()
    store = open_store(empty)  # now a Lockgate store: opens again
    assert store.list_runs(limit=5) == []
    store.close()
