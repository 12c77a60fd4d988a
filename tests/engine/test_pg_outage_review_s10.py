"""The PostgreSQL store under the trouble a team sharing one server meets (review, session 10):
passwords that libpq splits, a role that may only read and write the tables, a schema version
edited into nonsense, a server that restarts under a long-lived store, a server that stops
answering. All against real PostgreSQL servers (the session's, or one of their own when the
test stops or restarts it)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from lockgate.engine.store.pgserver import TempPostgres, _server_user, find_bindir
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


@pytest.fixture
def role(pg_dsn: str) -> Iterator[str]:
    """A login role with no rights beyond PUBLIC's, dropped afterwards (the server trusts it)."""
    name = f"r_{uuid.uuid4().hex[:12]}"
    _admin(pg_dsn, f"CREATE ROLE {name} LOGIN")
    yield name
    _admin(pg_dsn, f"DROP OWNED BY {name}", f"DROP ROLE {name}")


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


def test_a_password_pasted_as_printed_placeholder_is_named(pg_dsn: str) -> None:
    """A command Lockgate printed hides the password as ****; pasted as it is, it cannot connect,
    and the error says why instead of leaving a person to guess at a wrong password."""
    with pytest.raises(StoreError) as caught:
        PostgresStore(_with_user(pg_dsn, "nobody-here:****"), schema=f"t_{uuid.uuid4().hex[:12]}")
    assert "the password **** is what Lockgate prints in commands in place of the real one" in str(caught.value)


def test_a_role_that_may_only_use_the_tables_lists_runs_and_drives_them(pg_dsn: str, schema: str, role: str) -> None:
    owner = PostgresStore(pg_dsn, schema=schema)
    owner.create_run("r", HEADER, {"x": {"n": 1}}, [event(1)])
    _admin(pg_dsn, f"GRANT USAGE ON SCHEMA {schema} TO {role}",
           f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA {schema} TO {role}")
    member = PostgresStore(_with_user(pg_dsn, role), schema=schema)
    try:
        assert [run.run_id for run in member.list_runs()] == ["r"]
        assert member.save_run("r", expected_version=1, header=HEADER, steps={"x": {"n": 2}}, events=[event(2)]) == 2
        member.create_run("s", HEADER, {}, [event(1)])
        owner.save_run("r", expected_version=2, header=HEADER, steps={}, events=[event(3)])
        assert member.wait_for_change("r", 2, 5.0) == 3
        assert member.verify("r").ok and member.load_run("r").steps == {"x": {"n": 2}}
    finally:
        member.close()
        owner.close()


def test_a_role_that_may_not_set_the_schema_up_is_told_what_to_ask_for(pg_dsn: str, schema: str, role: str) -> None:
    with pytest.raises(StoreError) as caught:
        PostgresStore(_with_user(pg_dsn, role), schema=schema)
    message = str(caught.value)
    assert message.startswith(f"cannot set up the Lockgate schema {schema}: permission denied for database"), message
    assert "CREATE on the database" in message and "ask the database owner to run lockgate once" in message
    assert f"USAGE on schema {schema} and SELECT, INSERT, UPDATE on its tables" in message


def test_a_role_without_usage_on_the_schema_is_told_which_grants_to_ask_for(pg_dsn: str, schema: str,
                                                                            role: str) -> None:
    PostgresStore(pg_dsn, schema=schema).close()
    with pytest.raises(StoreError) as caught:
        PostgresStore(_with_user(pg_dsn, role), schema=schema)
    message = str(caught.value)
    assert message.startswith(f"cannot read the Lockgate schema {schema}: permission denied for schema"), message
    assert f"ask the database owner to grant this role USAGE on schema {schema}" in message


def test_a_schema_version_that_is_not_a_number_is_a_store_error_saying_what_to_do(pg_dsn: str, schema: str) -> None:
    PostgresStore(pg_dsn, schema=schema).close()
    _admin(pg_dsn, f"UPDATE {schema}.meta SET value = 'one' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="the store's schema version is unreadable") as caught:
        PostgresStore(pg_dsn, schema=schema)
    assert "'one', not a number" in str(caught.value) and "set it back to 1" in str(caught.value)
    assert not isinstance(caught.value, StoreUnavailable)


class RestartablePostgres(TempPostgres):
    """A throwaway server these tests may restart (on the same port and data) or freeze."""

    def restart(self) -> None:
        """A fast shutdown (the server closes every connection) and a start, as ``pg_ctl restart``."""
        assert self._process is not None and self._dir is not None and self.dsn is not None
        self._process.send_signal(signal.SIGINT)
        self._process.wait(timeout=30)
        bindir = find_bindir()
        assert bindir is not None
        self._process = self._spawn(_server_user(), bindir, self._dir / "data", urlsplit(self.dsn).port or 0)
        self._wait_ready()


@pytest.fixture(scope="module")
def server() -> Iterator[RestartablePostgres]:
    own = RestartablePostgres()
    try:
        own.start()
    except (StoreError, OSError) as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        yield own
    finally:
        own.stop()


def _until(condition, seconds: float = 30.0) -> None:
    """Wait until ``condition()`` holds, failing the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_a_long_lived_store_carries_on_after_a_server_restart(server: RestartablePostgres) -> None:
    store = PostgresStore(server.dsn, schema=f"t_{uuid.uuid4().hex[:12]}")
    try:
        store.create_run("r", HEADER, {"x": {"n": 1}}, [event(1)])
        server.restart()
        assert [run.run_id for run in store.list_runs()] == ["r"]
        server.restart()  # a write first: it goes through once
        assert store.save_run("r", expected_version=1, header=HEADER, steps={"x": {"n": 2}}, events=[event(2)]) == 2
        server.restart()
        assert [e.seq for e in store.events("r")] == [1, 2] and store.verify("r").ok
        assert store.load_run("r").version == 2
    finally:
        store.close()


def test_a_wait_for_change_carries_on_through_a_server_restart(server: RestartablePostgres) -> None:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    waiter, writer = PostgresStore(server.dsn, schema=schema), PostgresStore(server.dsn, schema=schema)
    outcome: list[object] = []

    def wait() -> None:
        try:
            outcome.append(waiter.wait_for_change("r", 1, 60.0))
        except StoreError as exc:
            outcome.append(exc)

    def listening() -> bool:
        with psycopg.connect(server.dsn, autocommit=True) as db:
            return db.execute("SELECT count(*) FROM pg_stat_activity WHERE query = %s",
                              (f"LISTEN {schema}_runs",)).fetchone()[0] > 0

    try:
        writer.create_run("r", HEADER, {}, [event(1)])
        thread = threading.Thread(target=wait)
        thread.start()
        _until(listening)
        server.restart()
        _until(listening)  # listening again on the restarted server
        assert not outcome, outcome
        writer.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)])
        thread.join(30)
        assert outcome == [2]
    finally:
        waiter.close()
        writer.close()


def _server_pids(server: RestartablePostgres) -> list[int]:
    """The postmaster and its children (the backends)."""
    assert server._process is not None
    root, pids = server._process.pid, []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) == root:
                    pids.append(int(entry))
    return [root, *pids]


@contextlib.contextmanager
def _frozen(server: RestartablePostgres) -> Iterator[None]:
    """The server stopped with SIGSTOP (its host still acknowledges packets), as an outage looks."""
    pids = _server_pids(server)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def test_a_server_that_stops_answering_is_unavailable_within_the_call_timeout(
        server: RestartablePostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    import lockgate.engine.store.postgres as postgres

    monkeypatch.setattr(postgres, "CALL_TIMEOUT", 2.0)
    monkeypatch.setattr(postgres, "WATCHDOG_GRACE", 1.0)
    monkeypatch.setattr(postgres, "UNREACHABLE_RETRY", 0.5)
    store = PostgresStore(server.dsn, schema=f"t_{uuid.uuid4().hex[:12]}", connect_timeout=2)
    try:
        store.create_run("r", HEADER, {}, [event(1)])
        with _frozen(server):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="PostgreSQL did not answer within 3 s .* whether the "
                                                       "statement took effect is unknown"):
                store.list_runs()
            assert time.monotonic() - started < 10
            for call in (lambda: store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)]),
                         lambda: PostgresStore(server.dsn, connect_timeout=2)):
                started = time.monotonic()
                with pytest.raises(StoreUnavailable):  # connecting again: the connect timeout
                    call()
                assert time.monotonic() - started < 10
        _until(lambda: _answers(store))  # thawed: the store reconnects
        assert store.current_version("r") in (1, 2)
    finally:
        store.close()


def _answers(store: PostgresStore) -> bool:
    """Whether a call on ``store`` is answered (False: StoreUnavailable)."""
    try:
        store.list_runs()
    except StoreUnavailable:
        return False
    return True


def _statements_on(dsn: str, schema: str) -> int:
    """How many statements other sessions are running on ``schema``'s tables."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        return db.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()"
                          " AND query LIKE %s", (f"%{schema}.runs%",)).fetchone()[0]


@pytest.mark.parametrize(("options", "seconds"), [
    ("", "1"),  # the store's own bounds: CALL_TIMEOUT
    ("?options=-c%20statement_timeout%3D0%20-c%20lock_timeout%3D1500", "1.5"),  # the connection string's
])
def test_a_write_waiting_on_a_lock_is_cancelled_by_the_server_and_writes_nothing(
        pg_dsn: str, schema: str, options: str, seconds: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An admin's LOCK TABLE (as VACUUM FULL or ALTER TABLE take) held past the call timeout: the
    server cancels the waiting write itself and rolls it back, so the caller's 'nothing was
    written' is true and a retry goes through. Before, the watchdog cut the connection off with
    'did not answer' while the backend kept waiting, and the write committed after the lock."""
    import psycopg

    import lockgate.engine.store.postgres as postgres

    monkeypatch.setattr(postgres, "CALL_TIMEOUT", 1.0)
    store = PostgresStore(pg_dsn + options, schema=schema)
    try:
        store.create_run("r", HEADER, {}, [event(1)])
        with psycopg.connect(pg_dsn) as admin:  # commits, releasing the lock, on leaving
            admin.execute(f"LOCK TABLE {schema}.runs IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreUnavailable) as caught:
                store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)])
        assert str(caught.value) == (f"PostgreSQL did not finish within {seconds} s — the server is busy (a lock "
                                     "held by another session, maintenance); nothing was written")
        _until(lambda: _statements_on(pg_dsn, schema) == 0)
        assert store.load_run("r").version == 1 and [e.seq for e in store.events("r")] == [1]
        assert store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)]) == 2
    finally:
        store.close()


def test_after_a_server_stopped_answering_the_next_calls_fail_at_once(
        server: RestartablePostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner giving up on a frozen server makes several cleanup calls: each failed only after
    the connect timeout (lockgate run took ~83 s to exit). Now, once a call found the server
    unreachable, the next ones are StoreUnavailable at once until a reconnect, tried every
    UNREACHABLE_RETRY seconds, reaches it again."""
    import lockgate.engine.store.postgres as postgres

    monkeypatch.setattr(postgres, "CALL_TIMEOUT", 1.0)
    monkeypatch.setattr(postgres, "WATCHDOG_GRACE", 1.0, raising=False)
    store = PostgresStore(server.dsn, schema=f"t_{uuid.uuid4().hex[:12]}", connect_timeout=2)
    try:
        store.create_run("r", HEADER, {}, [event(1)])
        with _frozen(server):
            with pytest.raises(StoreUnavailable, match="did not answer"):
                store.current_version("r")
            started = time.monotonic()
            for call in (store.list_runs, lambda: store.load_run("r"), lambda: store.verify("r"),
                         lambda: store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2)]),
                         lambda: store.wait_for_change("r", 1, 5.0)):
                with pytest.raises(StoreUnavailable, match="PostgreSQL is unreachable: it did not answer a "
                                                           "statement within 2 s"):
                    call()
            assert time.monotonic() - started < 1.5  # before: the 2 s connect timeout each
        _until(lambda: _answers(store))
        assert store.load_run("r").version == 1
    finally:
        store.close()


def test_a_write_whose_answer_was_lost_is_recognised_when_another_writer_moved_the_run_on(
        pg_dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection breaks after a write committed but before its answer came back, and another
    writer saves while the store reopens it. The repeated write changes nothing; the store finds
    its own first event (seq and hash) and returns the version it made, instead of a conflict
    (the engine then replayed its own decision and said 'nothing changed'), or 'already exists'
    for a create. The caller's next save conflicts and replays on what is stored."""
    from lockgate.engine.store.postgres import _shut
    from lockgate.errors import ConcurrencyConflict

    other = PostgresStore(pg_dsn, schema=schema)
    store = PostgresStore(pg_dsn, schema=schema)
    original, lose = PostgresStore._attempt, []

    def answer_lost(self: PostgresStore, work, snapshot):  # noqa: ANN001 - PostgresStore._attempt's
        result = original(self, work, snapshot)
        if self is store and lose:
            lose.pop()()  # the other writer gets in
            _shut(self._db.fileno())
            self._db.execute("SELECT 1")  # raises: the connection is broken, the answer lost
        return result

    monkeypatch.setattr(PostgresStore, "_attempt", answer_lost)
    try:
        lose.append(lambda: other.save_run("r", expected_version=1, header=HEADER, steps={}, events=[]))
        assert store.create_run("r", HEADER, {}, [event(1)]) == 1
        lose.append(lambda: other.save_run("r", expected_version=3, header=HEADER, steps={}, events=[event(3)]))
        assert store.save_run("r", expected_version=2, header=HEADER, steps={"x": {"n": 1}}, events=[event(2)]) == 3
        assert [e.detail for e in store.events("r")] == [{"i": 1}, {"i": 2}, {"i": 3}] and store.verify("r").ok
        with pytest.raises(ConcurrencyConflict, match="is at version 4, not 3"):
            store.save_run("r", expected_version=3, header=HEADER, steps={}, events=[event(4)])
        # a save with no events leaves no trace to find once the run moved on: a conflict
        lose.append(lambda: other.save_run("r", expected_version=5, header=HEADER, steps={}, events=[event(5)]))
        with pytest.raises(ConcurrencyConflict, match="is at version 6, not 4"):
            store.save_run("r", expected_version=4, header=HEADER, steps={}, events=[])
    finally:
        store.close()
        other.close()


def test_a_store_that_fails_to_open_leaves_no_watchdog_thread(pg_dsn: str, schema: str, role: str) -> None:
    PostgresStore(pg_dsn, schema=schema).close()
    before = threading.active_count()
    for _ in range(5):
        with pytest.raises(StoreError, match="cannot read the Lockgate schema"):
            PostgresStore(_with_user(pg_dsn, role), schema=schema)
    assert threading.active_count() == before


def test_a_wait_after_a_restart_replaces_every_kept_listener(server: RestartablePostgres) -> None:
    """Two waits ran at once, so two LISTEN connections are kept; the server restarts, closing
    both (psycopg learns it only on using them): the next wait gets a new one instead of the
    other dead one, and rides the restart out (review s12b F1, a regression of a5faaae)."""
    store = PostgresStore(server.dsn, schema=f"t_{uuid.uuid4().hex[:12]}")
    try:
        store.create_run("r", HEADER, {}, [event(1)])
        both = threading.Barrier(2)

        def wait() -> None:
            both.wait()
            store.wait_for_change("r", 1, 0.2)

        threads = [threading.Thread(target=wait) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        server.restart()
        assert store.wait_for_change("r", 1, 0.5) == 1  # timed out on the unchanged run, no error
        assert store.wait_for_change("r", 1, 0.2) == 1
    finally:
        store.close()
