"""A store that cannot be reached right now raises StoreUnavailable, and the runs it holds are
intact: the write that failed goes through once the store is back. Damage stays a plain
StoreError (retrying will not cure it). Real components: a SQLite lock held by another
connection, a write refused by the operating system (a file size limit), a PostgreSQL backend
terminated and a PostgreSQL server stopped."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from lockgate.engine.store import SQLiteStore, open_store
from lockgate.errors import StoreError, StoreUnavailable

HEADER = {"status": "running", "flow": "main"}
AT = "2025-03-01T12:00:00+00:00"


def event(i: int) -> dict:
    return {"type": "t", "detail": {"i": i}, "at": AT}


def test_a_lock_held_past_the_busy_timeout_is_unavailable_and_the_save_goes_through_later(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    store.create_run("r", HEADER, {"x": {"n": 1}}, [event(1)])
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    with pytest.raises(StoreUnavailable, match="database is locked"):
        store.save_run("r", expected_version=1, header=HEADER, steps={"x": {"n": 2}}, events=[event(2)])
    other.execute("ROLLBACK")
    other.close()
    assert store.save_run("r", expected_version=1, header=HEADER, steps={"x": {"n": 2}}, events=[event(2)]) == 2
    assert store.verify("r").ok and store.load_run("r").steps == {"x": {"n": 2}}
    store.close()


# Writes past a file size limit fail with EFBIG, as a full disk fails them with ENOSPC: SQLite
# reports a disk I/O error (or "database or disk is full"). In a child process, so that the limit
# cannot reach pytest's own files.
DISK_FAILS = textwrap.dedent("""
    import os, resource, signal, sys
    from lockgate.engine.store import SQLiteStore
    from lockgate.errors import StoreUnavailable

    path, header, at = sys.argv[1], {"status": "running", "flow": "main"}, "2025-03-01T12:00:00+00:00"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing us
    store = SQLiteStore(path)
    store.create_run("r", header, {}, [{"type": "t", "at": at}])
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    largest = max(os.path.getsize(f) for f in (path, path + "-wal") if os.path.exists(f))
    resource.setrlimit(resource.RLIMIT_FSIZE, (largest + 65536, hard))
    big = {"x": {"text": "y" * 1_000_000}}
    try:
        store.save_run("r", expected_version=1, header=header, steps=big, events=[{"type": "u", "at": at}])
    except StoreUnavailable as exc:
        print("unavailable:", exc)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    print("saved:", store.save_run("r", expected_version=1, header=header, steps=big,
                                   events=[{"type": "u", "at": at}]))
    print("intact:", store.verify("r").ok)
    """)


def test_a_write_the_disk_refuses_is_unavailable_and_the_save_goes_through_later(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", DISK_FAILS, str(tmp_path / "s.db")], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("unavailable: ") and ("disk I/O error" in lines[0] or "is full" in lines[0]), lines
    assert lines[1:] == ["saved: 2", "intact: True"]


def test_a_damaged_sqlite_file_is_a_plain_store_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.create_run("r", HEADER, {}, [event(1)])
    store.close()
    with open(path, "r+b") as file:  # the file header overwritten
        file.write(b"garbage, not SQLite" * 8)
    with pytest.raises(StoreError, match="file is not a database") as caught:
        SQLiteStore(path)
    assert not isinstance(caught.value, StoreUnavailable)


@pytest.mark.postgres
def test_a_dropped_postgres_connection_is_reopened_and_the_save_goes_through(pg_dsn: str) -> None:
    import psycopg

    schema, name = f"t_{uuid.uuid4().hex[:12]}", f"lockgate-test-{uuid.uuid4().hex[:12]}"
    store = open_store(f"{pg_dsn}{'&' if '?' in pg_dsn else '?'}application_name={name}", schema=schema)
    try:
        store.create_run("r", HEADER, {"x": {"n": 1}}, [event(1)])
        with psycopg.connect(pg_dsn, autocommit=True) as admin:  # the server drops the store's connection
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                          (name,))
        assert store.save_run("r", expected_version=1, header=HEADER, steps={"x": {"n": 2}},
                              events=[event(2)]) == 2  # on a reopened connection, once
        assert store.verify("r").ok and store.load_run("r").version == 2
    finally:
        store.close()
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.mark.postgres
def test_a_dropped_postgres_table_is_a_plain_store_error(pg_dsn: str) -> None:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = open_store(pg_dsn, schema=schema)
    try:
        store.create_run("r", HEADER, {}, [event(1)])
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(f"DROP TABLE {schema}.events")
        with pytest.raises(StoreError, match="events") as caught:
            store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)])
        assert not isinstance(caught.value, StoreUnavailable)
    finally:
        store.close()
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.mark.postgres
def test_a_stopped_postgres_server_is_unavailable_to_writes_reads_and_new_stores() -> None:
    from lockgate.engine.store.pgserver import TempPostgres

    server = TempPostgres()
    try:
        dsn = server.start()
    except (StoreError, OSError) as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        store = open_store(dsn)
        store.create_run("r", HEADER, {}, [event(1)])
        server.stop()
        with pytest.raises(StoreUnavailable):
            store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)])
        with pytest.raises(StoreUnavailable, match="cannot connect to PostgreSQL"):
            store.load_run("r")  # the broken connection is opened again: refused
        with pytest.raises(StoreUnavailable, match="cannot connect to PostgreSQL"):
            open_store(dsn)
        store.close()
    finally:
        server.stop()
