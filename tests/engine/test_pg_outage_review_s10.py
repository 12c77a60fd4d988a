"""The PostgreSQL store under the trouble a team sharing one server meets (review, session 10):
passwords that libpq splits, a role that may only read and write the tables, a schema version
edited into nonsense, a server that restarts under a long-lived store, a server that stops
answering. All against real PostgreSQL servers (the session's, or one of their own when the
test stops or restarts it)."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest

from lockgate.engine.store.postgres import PostgresStore
from lockgate.errors import StoreError

pytestmark = pytest.mark.postgres


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
