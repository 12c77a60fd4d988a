"""Fixtures for the engine tests: an in-memory engine, stores on every backend, and a real
PostgreSQL server.

``pg_dsn`` is ``LOCKGATE_PG_DSN`` when set, else a throwaway server started once per session
(``initdb`` + ``postgres`` on a free port, as the ``postgres`` user under root) and stopped at
the end. Tests that need it are marked ``postgres`` and skip, saying why, only if no server can
be started. Each PostgreSQL-backed test gets its own schema, dropped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import MemoryStore, Store, open_store
from lockgate.errors import StoreError


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A DSN of a PostgreSQL server usable for the whole session."""
    configured = os.environ.get("LOCKGATE_PG_DSN")
    if configured:
        yield configured
        return
    from lockgate.engine.store.pgserver import TempPostgres

    server = TempPostgres()
    try:
        dsn = server.start()
    except (StoreError, OSError, ImportError) as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        yield dsn
    finally:
        server.stop()


@dataclass
class Backend:
    """One store backend under test: ``open()`` gives a new Store over the same data."""

    kind: str
    target: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    _memory: MemoryStore | None = None
    _opened: list[Store] = field(default_factory=list)

    def open(self) -> Store:
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemoryStore()
            return self._memory
        store = open_store(self.target, **self.options)
        self._opened.append(store)
        return store

    def raw(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run SQL straight on the database, bypassing the store (to tamper with it).

        Write ``{runs}``, ``{steps}``, ``{events}`` for the tables and ``?`` for parameters.
        """
        if self.kind == "sqlite":
            sql = sql.format(runs="runs", steps="steps", events="events")
            with sqlite3.connect(self.target) as db:
                rows = db.execute(sql, params).fetchall()
            db.close()
            return rows
        if self.kind == "postgres":
            import psycopg

            schema = self.options["schema"]
            sql = sql.format(runs=f"{schema}.runs", steps=f"{schema}.steps", events=f"{schema}.events")
            with psycopg.connect(self.target, autocommit=True) as db:
                cur = db.execute(sql.replace("?", "%s"), params)
                return cur.fetchall() if cur.description else []
        raise AssertionError("the memory store has no database to tamper with")

    def close(self) -> None:
        for store in self._opened:
            with contextlib.suppress(StoreError):
                store.close()


def _postgres_backend(dsn: str) -> Iterator[Backend]:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    backend = Backend("postgres", dsn, {"schema": schema})
    try:
        yield backend
    finally:
        backend.close()
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _make_backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if kind == "postgres":
        yield from _postgres_backend(request.getfixturevalue("pg_dsn"))
        return
    backend = Backend(kind, str(tmp_path / "lockgate.db") if kind == "sqlite" else "")
    try:
        yield backend
    finally:
        backend.close()


ALL_BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
DURABLE_BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=ALL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Every backend in turn."""
    yield from _make_backend(request.param, request, tmp_path)


@pytest.fixture(params=DURABLE_BACKENDS)
def durable_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The backends with a database behind them (SQLite, PostgreSQL)."""
    yield from _make_backend(request.param, request, tmp_path)


@pytest.fixture
def pg_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """PostgreSQL only (mark the test ``postgres``)."""
    yield from _make_backend("postgres", request, tmp_path)


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.open()


@pytest.fixture
def engine() -> Engine:
    """A fresh engine over an in-memory store."""
    return Engine()
