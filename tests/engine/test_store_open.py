"""``open_store`` routing, SQLite settings and schema versioning, and failures to open."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from lockgate.engine.store import MemoryStore, SQLiteStore, open_store
from lockgate.errors import StoreError

HEADER = {"status": "running", "flow": "main"}


def test_default_is_sqlite_under_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    store = open_store()
    assert isinstance(store, SQLiteStore)
    assert store.path == tmp_path / ".lockgate" / "lockgate.db"
    store.create_run("r1", HEADER, {}, [])
    store.close()
    assert open_store().load_run("r1").version == 1


def test_environment_variable_overrides_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCKGATE_STORE", str(tmp_path / "elsewhere" / "runs.db"))
    store = open_store()
    assert store.path == tmp_path / "elsewhere" / "runs.db"
    monkeypatch.setenv("LOCKGATE_STORE", "memory")
    assert isinstance(open_store(), MemoryStore)
    assert isinstance(open_store(tmp_path / "explicit.db"), SQLiteStore)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("memory", MemoryStore), ("memory://", MemoryStore), (":memory:", MemoryStore), ("x.db", SQLiteStore),
     ("sqlite://y.db", SQLiteStore)],
)
def test_names_select_the_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, kind: type) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(open_store(name), kind)


def test_sqlite_url_with_an_absolute_path(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path}/abs.db")
    assert store.path == tmp_path / "abs.db"


def test_a_path_from_the_home_folder_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # as an MCP host's config passes --store, no shell
    monkeypatch.chdir(tmp_path)
    store = open_store("~/runs.db")
    assert store.path == tmp_path / "home" / "runs.db" and not (tmp_path / "~").exists()
    store.close()


@pytest.mark.parametrize("name", ["mysql://host/db", "", "   "])
def test_unknown_names_are_refused(name: str) -> None:
    with pytest.raises(StoreError):
        open_store(name)


def test_sqlite_runs_in_wal_mode_with_normal_sync(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    assert store._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert store._db.execute("PRAGMA synchronous").fetchone() == (1,)
    assert SQLiteStore(tmp_path / "f.db", synchronous="full")._db.execute("PRAGMA synchronous").fetchone() == (2,)
    with pytest.raises(StoreError, match="synchronous"):
        SQLiteStore(tmp_path / "o.db", synchronous="OFF")


def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.close()
    with pytest.raises(StoreError, match="schema version 99"):
        SQLiteStore(path)


def test_sqlite_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open SQLite store"):
        SQLiteStore(path)


def test_sqlite_refuses_an_unusable_path(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot open SQLite store"):
        SQLiteStore(tmp_path / "file" / "sub" / "s.db")


def test_postgres_unreachable_is_a_store_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        open_store(f"postgresql://nobody@127.0.0.1:{port}/none", connect_timeout=2)


@pytest.mark.postgres
def test_postgres_schema_is_created_once_and_versioned(pg_backend) -> None:
    pg_backend.open().create_run("r1", HEADER, {}, [])
    assert pg_backend.open().load_run("r1").version == 1
    pg_backend.raw("UPDATE {runs} SET status = status")  # the notify trigger is harmless
    schema = pg_backend.options["schema"]
    pg_backend.raw(f"UPDATE {schema}.meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="version 99"):
        pg_backend.open()


@pytest.mark.parametrize("schema", ["Bad", "x;drop", "1abc", ""])
def test_postgres_schema_names_are_identifiers(schema: str) -> None:
    from lockgate.engine.store.postgres import PostgresStore

    with pytest.raises(StoreError, match="schema must be"):
        PostgresStore("postgresql://unused", schema=schema)


@pytest.mark.postgres
def test_postgres_store_recovers_after_its_connection_is_killed(pg_backend) -> None:
    store = pg_backend.open()
    store.create_run("r1", HEADER, {}, [])
    pg_backend.raw("SELECT pg_terminate_backend(?)", (store._db.info.backend_pid,))
    assert store.load_run("r1").version == 1  # the closed connection is reopened and the read repeated
    assert store.save_run("r1", expected_version=1, header=HEADER, steps={}, events=[]) == 2


def test_a_connection_error_hides_the_password_libpq_quotes():
    """libpq repeats a connection string it cannot read; the StoreError must not show its password."""
    from lockgate.engine.store.postgres import PostgresStore

    with pytest.raises(StoreError) as failed:
        PostgresStore("postgresql://lg:S3cret%zz@localhost:1/db", connect_timeout=1)
    assert "S3cret" not in str(failed.value) and "****" in str(failed.value)
