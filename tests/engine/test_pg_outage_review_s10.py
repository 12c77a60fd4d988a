"""The PostgreSQL store under the trouble a team sharing one server meets (review, session 10):
passwords that libpq splits, a role that may only read and write the tables, a schema version
edited into nonsense, a server that restarts under a long-lived store, a server that stops
answering. All against real PostgreSQL servers (the session's, or one of their own when the
test stops or restarts it)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from lockgate.engine.store.postgres import PostgresStore
from lockgate.errors import StoreError, StoreUnavailable

pytestmark = pytest.mark.postgres

HEADER = {"status": "running", "flow": "main"}
AT = "2025-03-01T12:00:00+00:00"


def event(i: int) -> dict:
    return {"type": "t", "detail": {"i": i}, "at": AT}


def _admin(dsn: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        for statement in statements:
            db.execute(statement)


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    """A fresh schema name, its schema dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    _admin(pg_dsn, f"DROP SCHEMA IF EXISTS {name} CASCADE")


def _with_user(dsn: str, userinfo: str, database: str | None = None) -> str:
    """``dsn`` with its user part replaced by ``userinfo`` (and its database by ``database``)."""
    parts = urlsplit(dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    path = parts.path if database is None else f"/{database}"
    return f"{parts.scheme}://{userinfo}@{host}{path}"


def test_a_password_with_an_unescaped_at_is_hidden_and_the_fix_is_named(pg_dsn: str) -> None:
    dsn = _with_user(pg_dsn, "alice:Secr3t@word")
    with pytest.raises(StoreError) as caught:
        PostgresStore(dsn, schema=f"t_{uuid.uuid4().hex[:12]}")
    message = str(caught.value)
    assert "Secr3t" not in message and "word@" not in message, message
    assert "****@" in message and "%40" in message, message


def test_a_schema_version_that_is_not_a_number_is_a_store_error_saying_what_to_do(pg_dsn: str, schema: str) -> None:
    PostgresStore(pg_dsn, schema=schema).close()
    _admin(pg_dsn, f"UPDATE {schema}.meta SET value = 'one' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="the store's schema version is unreadable") as caught:
        PostgresStore(pg_dsn, schema=schema)
    assert "'one', not a number" in str(caught.value) and "set it back to 1" in str(caught.value)
    assert not isinstance(caught.value, StoreUnavailable)
