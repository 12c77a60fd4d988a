"""The shared :class:`~lockgate.engine.store.base.Store`: PostgreSQL through psycopg 3.

Tables live in their own schema (``lockgate`` by default): ``runs`` (header as JSONB, status and
flow in indexed columns, the version, the chain head and count), ``steps`` (one JSONB record per
step) and ``events``. An event's ``detail`` is kept in a ``json`` column, not JSONB, because the
chain hashes the exact canonical text and JSONB rewrites numbers (``1e100`` comes back as an
integer) and key order.

A transition is a single statement with three parameters that matter (the header, the changed
step records as one JSON object, the events as one JSON array): a data-modifying CTE updates the run row
``WHERE run_id = $1 AND version = $2`` and inserts the step records and events only through the
updated row, so a stale version writes nothing and two racing writers serialise on the row lock
(the loser re-checks the version and updates nothing). With the chain head of the expected
version cached from the last load or save, a transition is one round trip.

A trigger notifies ``<schema>_runs`` on every run change, so :meth:`PostgresStore.wait_for_change`
sleeps on LISTEN instead of polling.

Rights. The first store opened on a database sets the schema up (``CREATE SCHEMA``, tables, the
trigger and its function), so that role needs CREATE on the database (or to own the schema). A
store opened on a schema already at :data:`SCHEMA_VERSION` runs no DDL: a team member's role
needs only CONNECT on the database, USAGE on the schema and SELECT, INSERT, UPDATE on its tables
(``meta``, ``runs``, ``steps``, ``events``): ``GRANT USAGE ON SCHEMA lockgate TO alice; GRANT
SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA lockgate TO alice``. Nothing is ever deleted.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, TypeVar

from lockgate.engine.store import codec
from lockgate.engine.store.base import Event, RunSummary, StoredRun, VerifyReport
from lockgate.engine.store.chain import (
    GENESIS_HASH,
    Link,
    chain_events,
    head_hash,
    stored_event,
    verify_chain,
)
from lockgate.errors import StoreError, StoreUnavailable

try:
    import psycopg
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise StoreError("the PostgreSQL store needs psycopg 3, in the postgres extra: pip install 'lockgate[postgres]' "
                     "(from a clone: pip install -e '.[postgres]')") from exc

SCHEMA_VERSION = 1

#: How long a store keeps trying to reconnect after the server closed its connection: a
#: restart (``pg_ctl restart``, a failover) refuses connections for a second or two, and a
#: runner waiting at a gate should carry on through it, not die; a server down for longer is
#: StoreUnavailable (the runner then says how to resume).
REOPEN_WINDOW = 10.0

#: How long one statement may take. A healthy server answers every statement the store sends far
#: sooner (each is one round trip: milliseconds; a long run's whole chain, well under a second),
#: even behind another writer's row lock (held for one statement). The server bounds its own
#: work by it (``statement_timeout`` and ``lock_timeout`` on each session, unless the connection
#: string sets them): a statement waiting on a lock another session holds (LOCK TABLE, VACUUM
#: FULL, ALTER TABLE) is cancelled and rolled back by the server, so nothing was written.
#: Also the TCP user timeout: unacknowledged data for that long.
CALL_TIMEOUT = 30.0

#: How much longer than the server's statement timeout the store waits for an answer before it
#: gives the connection up (StoreUnavailable): only a server that cannot answer at all (a network
#: outage, a stopped or hung host) is still silent then, and a runner should say so and how to
#: resume rather than hang. A busy server has cancelled its own statement by then.
WATCHDOG_GRACE = 5.0

#: After a call found the server unreachable (no answer, or connecting timed out), the store's
#: calls fail at once (StoreUnavailable) until this long has passed; then one call tries to
#: connect again. Each attempt costs the connect timeout, and a runner cleaning up after an
#: outage makes several calls in a row: they should not each wait for a server already known gone.
UNREACHABLE_RETRY = 3.0

#: TCP keepalives, so that an idle connection (a LISTEN waiting at a gate) to a host that
#: vanished is found dead in about 25 s (10 s idle, then 3 probes 5 s apart). A connection
#: string's own values win.
_KEEPALIVES = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3"}

_T = TypeVar("_T")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")

_DDL = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.runs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id text NOT NULL UNIQUE,
    flow text NOT NULL,
    status text NOT NULL,
    header jsonb NOT NULL,
    version integer NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    event_count integer NOT NULL,
    head_hash text NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON {s}.runs (status, id);
CREATE TABLE IF NOT EXISTS {s}.steps (
    run_id text NOT NULL,
    step_id text NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (run_id, step_id)
);
CREATE TABLE IF NOT EXISTS {s}.events (
    run_id text NOT NULL,
    seq integer NOT NULL,
    at text NOT NULL,
    type text NOT NULL,
    step_id text,
    detail json NOT NULL,
    prev_hash text NOT NULL,
    hash text NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE OR REPLACE FUNCTION {s}.notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{s}_runs', NEW.run_id || ' ' || NEW.version);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER runs_notify AFTER INSERT OR UPDATE ON {s}.runs
    FOR EACH ROW EXECUTE FUNCTION {s}.notify_run();
"""

_WRITE = """
WITH run AS ({run_statement} RETURNING run_id),
step_rows AS (
    INSERT INTO {s}.steps (run_id, step_id, record)
    SELECT run.run_id, s.step_id, s.record
    FROM run, jsonb_each(%(steps)s::jsonb) AS s(step_id, record)
    ON CONFLICT (run_id, step_id) DO UPDATE SET record = excluded.record
),
event_rows AS (
    INSERT INTO {s}.events (run_id, seq, at, type, step_id, detail, prev_hash, hash)
    SELECT run.run_id, e.seq, e.at, e.type, e.step_id, e.detail, e.prev_hash, e.hash
    FROM run, json_to_recordset(%(events)s::json)
         AS e(seq integer, at text, type text, step_id text, detail json, prev_hash text, hash text)
)
SELECT count(*) FROM run
"""

_CREATE = """INSERT INTO {s}.runs
    (run_id, flow, status, header, version, created_at, updated_at, event_count, head_hash)
    VALUES (%(run_id)s, %(flow)s, %(status)s, %(header)s::jsonb, 1, %(now)s::timestamptz,
            %(now)s::timestamptz, %(count)s, %(head)s)
    ON CONFLICT (run_id) DO NOTHING"""

_UPDATE = """UPDATE {s}.runs SET flow = %(flow)s, status = %(status)s, header = %(header)s::jsonb,
    version = version + 1, updated_at = %(now)s::timestamptz, event_count = %(count)s,
    head_hash = %(head)s
    WHERE run_id = %(run_id)s AND version = %(expected)s AND head_hash = %(prev_head)s"""


class PostgresStore:
    """A store in a PostgreSQL database, shared by every process and machine that reaches it."""

    def __init__(self, dsn: str, *, schema: str = "lockgate", connect_timeout: float = 10.0) -> None:
        if not _IDENTIFIER.match(schema):
            raise StoreError(f"schema must be a lower-case SQL identifier, not {schema!r}")
        self.dsn, self.schema = dsn, schema
        self._lock = threading.RLock()
        # a LISTEN connection per wait in progress, so that waits on different runs (or the same
        # one) from several threads each wake on their own notifications and timeouts; kept for
        # the next wait when done: as many as waits ever ran at once, whichever threads ran them
        self._listen_lock = threading.Lock()
        self._listeners: list[psycopg.Connection[Any]] = []  # every one open
        self._idle: list[psycopg.Connection[Any]] = []  # those no wait holds now
        self._heads: dict[str, tuple[int, int, str]] = {}
        self._closed = False
        self._connect_timeout = connect_timeout
        self._sql_create = (_WRITE.format(s=schema, run_statement=_CREATE.format(s=schema)))
        self._sql_update = (_WRITE.format(s=schema, run_statement=_UPDATE.format(s=schema)))
        self._watchdog = _Watchdog()
        self._reach = _Reachability()
        # the server's own bounds (seconds; 0: none) by SQLSTATE, read from each new session
        self._server_timeouts = {"57014": CALL_TIMEOUT, "55P03": CALL_TIMEOUT}
        try:
            self._db = self._connect(connect_timeout)
            self._create_schema()
        except BaseException:
            if hasattr(self, "_db"):
                self._db.close()
            self._watchdog.stop()
            raise

    def __repr__(self) -> str:
        return f"PostgresStore(schema={self.schema!r})"

    # -- writes ---------------------------------------------------------------------------------

    def create_run(
        self, run_id: str, header: dict[str, Any], steps: dict[str, dict[str, Any]], events: list[dict[str, Any]]
    ) -> int:
        codec.check_run_id(run_id)
        params = _params(run_id, header, steps)
        links = chain_events(run_id, events, GENESIS_HASH, 1, params["now"])
        params.update(_link_params(links, 0, GENESIS_HASH))
        written, repeated = self._run_statement(self._sql_create, params)
        if written == 1:
            self._heads[run_id] = (1, params["count"], params["head"])
        elif not (repeated and self._is_own_write(run_id, 1, params, links)):
            raise StoreError(f"run {run_id!r} already exists")
        return 1

    def save_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        header: dict[str, Any],
        steps: dict[str, dict[str, Any]],
        events: list[dict[str, Any]],
    ) -> int:
        codec.check_run_id(run_id, existing=True)
        codec.check_version(expected_version)
        params = _params(run_id, header, steps)
        count, head = self._head_at(run_id, expected_version)
        links = chain_events(run_id, events, head, count + 1, params["now"])
        params.update(_link_params(links, count, head), expected=expected_version, prev_head=head)
        try:
            written, repeated = self._run_statement(self._sql_update, params)
        except StoreError as exc:
            if _taken_seq(exc):
                raise codec.events_behind(run_id, count) from exc
            raise
        if written == 1:
            self._heads[run_id] = (expected_version + 1, params["count"], params["head"])
        else:
            own = self._is_own_write(run_id, expected_version + 1, params, links)  # reads the head either way
            if not (repeated and own):
                raise codec.conflict(run_id, expected_version, self._heads[run_id][0])
        return expected_version + 1

    def _head_at(self, run_id: str, version: int) -> tuple[int, str]:
        """(event count, head hash) at ``version``: cached or read; the version check of the
        write statement proves it is still current."""
        cached = self._heads.get(run_id)
        if cached is None or cached[0] != version:
            cached = self._head_row(run_id)
            self._heads[run_id] = cached
            if cached[0] != version:
                raise codec.conflict(run_id, version, cached[0])
        return cached[1], cached[2]

    def _head_row(self, run_id: str) -> tuple[int, int, str]:
        row = self._one(f"SELECT version, event_count, head_hash FROM {self.schema}.runs WHERE run_id = %s", (run_id,))
        if row is None:
            raise codec.not_found(run_id)
        return row

    def _is_own_write(self, run_id: str, version: int, params: dict[str, Any], links: list[Link]) -> bool:
        """Whether a repeated write that changed no row is the write itself, committed on a
        connection the server closed before answering (else another writer got there first):
        the run is as it meant to leave it (at ``version`` with its chain head, which hashes its
        own events), or, when another writer moved the run on during the reopen, its last event
        is stored (the chain is deterministic and each hash covers every event before it: that
        seq with that hash is this write's alone, unless another writer sent the very same events,
        timestamps included, which only a caller stamping its own events could).
        A write with no events leaves no such trace: once the run moved on it is taken for a
        conflict, and the caller replays on what is stored, as for any conflict. (Caches the
        run's current head, which a conflict reports and against which the caller's next save,
        expecting ``version``, conflicts when the run moved on.)"""
        actual = self._head_row(run_id)
        self._heads[run_id] = actual
        if actual == (version, params["count"], params["head"]):
            return True
        return bool(links) and actual[0] > version and self._has_event(run_id, links[-1])

    def _has_event(self, run_id: str, link: Link) -> bool:
        sql = f"SELECT 1 FROM {self.schema}.events WHERE run_id = %s AND seq = %s AND hash = %s"
        return self._one(sql, (run_id, link.seq, link.hash)) is not None

    def _run_statement(self, sql: str, params: dict[str, Any]) -> tuple[int, bool]:
        """Run a write (create or update): the rows it changed (0 or 1) and whether it was
        repeated on a reopened connection. Safe to repeat: it applies only to a run at the
        version and head it expects (a create, only to a run that does not exist), so a repeat
        of a write that did commit changes nothing, and the caller recognises its own write
        (:meth:`_is_own_write`) instead of reporting a conflict."""
        attempts = 0

        def write(cur: psycopg.Cursor[Any]) -> int:
            nonlocal attempts
            attempts += 1
            cur.execute(sql, params)
            row = cur.fetchone()
            return row[0] if row else 0

        written = self._call(write)
        return written, attempts > 1

    # -- reads ----------------------------------------------------------------------------------

    def load_run(self, run_id: str) -> StoredRun:
        codec.check_run_id(run_id, existing=True)
        s = self.schema
        row = self._one(
            f"""SELECT header, version, event_count, head_hash,
                   (SELECT coalesce(jsonb_object_agg(step_id, record), '{{}}'::jsonb)
                    FROM {s}.steps WHERE steps.run_id = runs.run_id)
                FROM {s}.runs WHERE run_id = %s""",
            (run_id,),
        )
        if row is None:
            raise codec.not_found(run_id)
        header, version, count, head, steps = row
        self._heads[run_id] = (version, count, head)
        return StoredRun(run_id=run_id, header=header, steps=steps, version=version)

    def current_version(self, run_id: str) -> int:
        codec.check_run_id(run_id, existing=True)
        row = self._one(f"SELECT version FROM {self.schema}.runs WHERE run_id = %s", (run_id,))
        if row is None:
            raise codec.not_found(run_id)
        return row[0]

    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunSummary]:
        codec.check_listing(status, limit)
        where = "" if status is None else "WHERE status = %(status)s"
        sql = f"""SELECT run_id, flow, status, created_at, updated_at, version FROM {self.schema}.runs
                  {where} ORDER BY id DESC LIMIT %(limit)s"""
        rows = self._call(lambda cur: cur.execute(sql, {"status": status, "limit": limit}).fetchall())
        return [RunSummary(r, f, st, _iso(c), _iso(u), v) for r, f, st, c, u, v in rows]

    def events(self, run_id: str, since_seq: int = 0) -> list[Event]:
        codec.check_run_id(run_id, existing=True)
        codec.check_seq(since_seq)
        def read(cur: psycopg.Cursor[Any]) -> list[Any]:
            self._require_run(cur, run_id)
            return cur.execute(self._select_events(), (run_id, since_seq)).fetchall()

        return [stored_event(row) for row in self._call(read, snapshot=True)]

    def verify(self, run_id: str) -> VerifyReport:
        codec.check_run_id(run_id, existing=True)
        def read(cur: psycopg.Cursor[Any]) -> tuple[Any, list[Link]]:
            row = cur.execute(f"SELECT event_count, head_hash FROM {self.schema}.runs WHERE run_id = %s",
                              (run_id,)).fetchone()
            if row is None:
                raise codec.not_found(run_id)
            return row, [Link(*link) for link in cur.execute(self._select_events(), (run_id, 0)).fetchall()]

        row, links = self._call(read, snapshot=True)
        return verify_chain(run_id, links, row[1], row[0])

    def wait_for_change(self, run_id: str, version: int, timeout: float) -> int:
        """Wait on LISTEN ``<schema>_runs`` until ``run_id`` moves off ``version`` or
        ``timeout`` seconds pass; the version is always re-read from the table."""
        codec.check_run_id(run_id, existing=True)
        deadline = time.monotonic() + codec.check_wait(version, timeout)
        listener = self._listening()
        try:
            current = self.current_version(run_id)
            reopened = False
            while current == version:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    for note in listener.notifies(timeout=remaining, stop_after=1):
                        del note
                    reopened = False
                except psycopg.Error as exc:
                    # the server closed it (a restart): listen again, once; the version read next
                    # covers a change notified while no one listened
                    if reopened or not listener.broken:
                        raise _failure(exc, "lost the PostgreSQL notification connection") from exc
                    listener, reopened = self._listening(replacing=listener), True
                current = self.current_version(run_id)
            return current
        finally:
            self._done_listening(listener)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._db.close()
        with self._listen_lock:
            for listener in self._listeners:
                listener.close()
            self._listeners.clear()
            self._idle.clear()
        self._watchdog.stop()

    # -- plumbing -------------------------------------------------------------------------------

    def _connect(self, timeout: float) -> psycopg.Connection[Any]:
        """A new session, set up (:meth:`_set_up_session`); at once StoreUnavailable while the
        server is known unreachable (:class:`_Reachability`), and a connect that times out
        makes it so."""
        self._reach.check()
        try:
            given = psycopg.conninfo.conninfo_to_dict(self.dsn)
            tcp = {**_KEEPALIVES, "tcp_user_timeout": str(int(CALL_TIMEOUT * 1000))}
            db = psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(1, int(timeout)),
                                 **{key: value for key, value in tcp.items() if key not in given})
        except psycopg.Error as exc:
            failure = _failure(exc, "cannot connect to PostgreSQL", self.dsn)
            if isinstance(exc, psycopg.errors.ConnectionTimeout) or "timeout expired" in str(exc):
                self._reach.lost(f"connecting timed out after {max(1, int(timeout))} s")
            else:  # refused or turned away: the host answers (a restart, a wrong password)
                self._reach.reached()
            raise failure from exc
        try:
            self._set_up_session(db, given)
        except psycopg.Error as exc:
            db.close()
            raise _failure(exc, "cannot connect to PostgreSQL", self.dsn) from exc
        except BaseException:
            db.close()
            raise
        self._reach.reached()
        return db

    def _set_up_session(self, db: psycopg.Connection[Any], given: dict[str, Any]) -> None:
        """UTC times, and the server's own bounds on a statement and a lock wait
        (:data:`CALL_TIMEOUT`) unless the connection string's options (or ``PGOPTIONS``) set
        them; the bounds in force are read back: the watchdog waits longer than they do, and a
        statement they cancel is reported with them."""
        options = str(given.get("options", os.environ.get("PGOPTIONS", "")))
        bound = int(CALL_TIMEOUT * 1000)
        settings = ["SET TIME ZONE 'UTC'"] + [
            f"SET {name} = {bound}" for name in ("statement_timeout", "lock_timeout") if name not in options]
        with self._bounded(db):
            db.execute("; ".join(settings))
            rows = db.execute("SELECT name, setting FROM pg_settings"
                              " WHERE name IN ('statement_timeout', 'lock_timeout')").fetchall()
        in_force = {name: int(setting) / 1000 for name, setting in rows}
        self._server_timeouts = {"57014": in_force["statement_timeout"], "55P03": in_force["lock_timeout"]}

    def _reopen(self, timeout: float) -> psycopg.Connection[Any]:
        """A connection in place of one the server closed: a server restarting refuses
        connections for a second or two, so a refusal is tried again until
        :data:`REOPEN_WINDOW` has passed; then it is StoreUnavailable (at once when the server
        proved unreachable: a connect timed out)."""
        deadline, delay = time.monotonic() + REOPEN_WINDOW, 0.05
        while True:
            try:
                return self._connect(timeout)
            except StoreUnavailable:
                if self._reach.is_lost() or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(2 * delay, 1.0)

    def _listening(self, replacing: psycopg.Connection[Any] | None = None) -> psycopg.Connection[Any]:
        """A LISTEN connection for one wait: an idle one, else a new one (in place of one the
        server closed, ``replacing`` or an idle one, :meth:`_reopen` tries again while the server
        restarts; with ``replacing``, the idle ones are dropped too). Handed back with
        :meth:`_done_listening`."""
        with self._listen_lock:
            if self._closed:
                raise StoreError("the store is closed")
            lost = replacing is not None  # a connection the server closed: it may be restarting
            if replacing is not None:
                # a restart closed the idle ones too, though psycopg learns it only on using them
                for listener in (replacing, *self._idle):
                    self._drop_listener(listener)
                self._idle.clear()
            while self._idle:
                listener = self._idle.pop()
                if not (listener.closed or listener.broken):
                    return listener
                self._drop_listener(listener)
                lost = True
            listener = self._reopen(10) if lost else self._connect(10)
            self._listeners.append(listener)
            try:
                with self._bounded(listener):
                    listener.execute(f"LISTEN {self.schema}_runs")
            except psycopg.Error as exc:
                self._drop_listener(listener)
                raise _failure(exc, "cannot listen for run changes") from exc
            return listener

    def _done_listening(self, listener: psycopg.Connection[Any]) -> None:
        """Keep ``listener`` for the next wait; close it when broken or the store closed."""
        with self._listen_lock:
            if listener not in self._listeners:
                return  # closed with the store (or replaced) meanwhile
            if self._closed or listener.closed or listener.broken:
                self._drop_listener(listener)
            else:
                self._idle.append(listener)

    def _drop_listener(self, listener: psycopg.Connection[Any]) -> None:
        """Close ``listener`` and forget it (under the listen lock)."""
        if listener in self._listeners:
            self._listeners.remove(listener)
        with contextlib.suppress(psycopg.Error):
            listener.close()

    def _create_schema(self) -> None:
        """Set the schema up unless it is there at this version already: a team member's role
        that may only use the tables (see the module docstring) opens the store without DDL."""
        if self._schema_version() == SCHEMA_VERSION:
            return
        s = self.schema
        with self._lock:
            try:
                with self._bounded(self._db), self._db.transaction():
                    self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"lockgate-schema:{s}",))
                    self._db.execute(_DDL.format(s=s))
                    row = self._db.execute(f"SELECT value FROM {s}.meta WHERE key = 'schema_version'").fetchone()
                    if row is None:
                        self._db.execute(
                            f"INSERT INTO {s}.meta (key, value) VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),)
                        )
                    else:
                        self._check_version(row[0])
            except psycopg.errors.InsufficientPrivilege as exc:
                raise _setup_refused(exc, s) from exc
            except psycopg.Error as exc:
                raise _failure(exc, f"cannot create the Lockgate schema {s}") from exc

    def _schema_version(self) -> int | None:
        """The version ``meta`` records, or None when the schema or its tables are missing (set-up
        needed); a role that may not read it is told which rights to ask for."""
        s = self.schema
        try:
            with self._lock, self._bounded(self._db):
                row = self._db.execute(f"SELECT value FROM {s}.meta WHERE key = 'schema_version'").fetchone()
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
            return None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(f"cannot read the Lockgate schema {s}: {exc}; ask the database owner to grant this role "
                             f"{_RIGHTS.format(s=s)}") from exc
        except psycopg.Error as exc:
            raise _failure(exc, f"cannot read the Lockgate schema {s}") from exc
        return None if row is None else self._check_version(row[0])

    def _check_version(self, value: str) -> int:
        """``meta.schema_version`` as a number this Lockgate understands, else StoreError."""
        s = self.schema
        if not value.strip().isdigit():
            raise StoreError(
                f"the store's schema version is unreadable: {s}.meta holds schema_version {value!r}, not a number; "
                f"it was edited outside Lockgate: set it back to {SCHEMA_VERSION} "
                f"(UPDATE {s}.meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version') if the tables are "
                f"Lockgate's, else use another schema"
            )
        if int(value) > SCHEMA_VERSION:
            raise StoreError(
                f"schema {s} has version {value}, newer than this Lockgate understands "
                f"({SCHEMA_VERSION}); upgrade Lockgate"
            )
        return int(value)

    def _call(self, work: Callable[[psycopg.Cursor[Any]], _T], *, snapshot: bool = False) -> _T:
        """``work(cursor)`` on the store's connection, under the store's lock; ``snapshot``: in one
        REPEATABLE READ transaction (several reads, one snapshot). psycopg errors become
        StoreError.

        When the server closed the connection (a restart, a terminated backend), it is opened
        again (:meth:`_reopen`) and ``work`` run once more, which every caller's work allows:
        reads, and writes that apply only at the version they expect (:meth:`_run_statement`),
        so a write that did commit before the connection was lost is not applied twice, and one
        that did not goes through. A server still unreachable is StoreUnavailable."""
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            if self._db.broken or self._db.closed:
                self._db = self._connect(self._connect_timeout)
            try:
                return self._attempt(work, snapshot)
            except psycopg.Error as exc:
                if not self._db.broken:
                    raise _failure(exc, "PostgreSQL error") from exc
                self._db.close()
            self._db = self._reopen(self._connect_timeout)
            try:
                return self._attempt(work, snapshot)
            except psycopg.Error as exc:
                raise _failure(exc, "PostgreSQL error") from exc

    def _attempt(self, work: Callable[[psycopg.Cursor[Any]], _T], snapshot: bool) -> _T:
        with self._bounded(self._db), self._db.cursor() as cur:
            if not snapshot:
                return work(cur)
            with self._db.transaction():
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                return work(cur)

    @contextmanager
    def _bounded(self, db: psycopg.Connection[Any]) -> Iterator[None]:
        """Statements on ``db`` that the server must answer within its own statement timeout
        and :data:`WATCHDOG_GRACE`: else the watchdog shuts the connection and the call is
        StoreUnavailable (not repeated: the server did not close it, it is unreachable; the
        store's next calls fail at once for a while, :class:`_Reachability`). A statement the
        server cancelled at its own timeout is StoreUnavailable too: it is busy."""
        started = time.monotonic()
        waited = (self._server_timeouts["57014"] or CALL_TIMEOUT) + WATCHDOG_GRACE
        call = self._watchdog.arm(db.fileno(), waited)
        try:
            yield
        except psycopg.Error as exc:
            self._watchdog.disarm(call)
            if call.fired:
                db.close()
                self._reach.lost(f"it did not answer a statement within {waited:g} s")
                raise StoreUnavailable(
                    f"PostgreSQL did not answer within {waited:g} s (a network outage, or a server stopped or hung): "
                    f"gave the connection up; whether the statement took effect is unknown (a resume reads what "
                    f"was stored)"
                ) from exc
            timeout = self._server_timeouts.get(exc.sqlstate or "")
            if timeout and time.monotonic() - started >= timeout:
                raise StoreUnavailable(
                    f"PostgreSQL did not finish within {timeout:g} s — the server is busy (a lock held by another "
                    f"session, maintenance); nothing was written"
                ) from exc
            raise
        except BaseException:
            # interrupted (Ctrl-C): psycopg asked the server to cancel the statement and closed
            # the connection when it did not answer that either
            if db.closed:
                self._reach.lost("it did not answer a cancel request")
            raise
        finally:
            self._watchdog.disarm(call)

    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        return self._call(lambda cur: cur.execute(sql, params).fetchone())

    def _select_events(self) -> str:
        return (
            f"SELECT seq, at, type, step_id, detail::text, prev_hash, hash FROM {self.schema}.events"
            " WHERE run_id = %s AND seq > %s ORDER BY seq"
        )

    def _require_run(self, cur: psycopg.Cursor[Any], run_id: str) -> None:
        cur.execute(f"SELECT 1 FROM {self.schema}.runs WHERE run_id = %s", (run_id,))
        if cur.fetchone() is None:
            raise codec.not_found(run_id)


class _Call:
    """One statement the watchdog bounds: its deadline, its connection's socket, whether it fired."""

    __slots__ = ("deadline", "fd", "fired")

    def __init__(self, deadline: float, fd: int) -> None:
        self.deadline, self.fd, self.fired = deadline, fd, False


class _Watchdog:
    """Shuts down the socket of a call the server has not answered by its deadline, so that the
    call fails at once (libpq: the server closed the connection) instead of waiting forever.
    psycopg sets no deadline on a statement, and TCP keepalives and the TCP user timeout cannot
    tell a server whose host still acknowledges packets (a stopped or hung process) from a busy
    one. One daemon thread per store, started on the first call, asleep until the nearest
    deadline (woken only when a call's deadline comes before that)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._calls: set[_Call] = set()
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None
        self._stopped = False

    def arm(self, fd: int, seconds: float) -> _Call:
        call = _Call(time.monotonic() + seconds, fd)
        with self._cond:
            self._calls.add(call)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lockgate-pg-watchdog", daemon=True)
                self._thread.start()
            elif call.deadline < self._wake_at:
                self._cond.notify()
        return call

    def disarm(self, call: _Call) -> None:
        with self._cond:
            self._calls.discard(call)

    def stop(self) -> None:
        """Stop the thread and wait for it to end (it wakes at once)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                now = time.monotonic()
                for call in [call for call in self._calls if call.deadline <= now]:
                    self._calls.discard(call)
                    call.fired = True
                    _shut(call.fd)
                self._wake_at = min((call.deadline for call in self._calls), default=math.inf)
                self._cond.wait(None if self._wake_at == math.inf else self._wake_at - now)


class _Reachability:
    """Whether the server proved unreachable lately (a statement unanswered, a connect timed
    out): then connecting fails at once with StoreUnavailable until :data:`UNREACHABLE_RETRY`
    has passed, and the next attempt either reaches the server (all is well again, even when it
    refuses the connection: a restart) or proves it unreachable once more. So a caller making
    several calls after an outage (a runner cleaning up, a Ctrl-C) is answered at once instead of
    waiting out a connect timeout on each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._why = ""
        self._retry_at = 0.0

    def check(self) -> None:
        with self._lock:
            wait = self._retry_at - time.monotonic()
            if self._why and wait > 0:
                raise StoreUnavailable(f"PostgreSQL is unreachable: {self._why} (a network outage, or a server "
                                       f"stopped or hung); the store tries again in {math.ceil(wait)} s")

    def lost(self, why: str) -> None:
        with self._lock:
            self._why, self._retry_at = why, time.monotonic() + UNREACHABLE_RETRY

    def reached(self) -> None:
        with self._lock:
            self._why, self._retry_at = "", 0.0

    def is_lost(self) -> bool:
        with self._lock:
            return bool(self._why)


def _shut(fd: int) -> None:
    """Shut the socket ``fd`` down for both directions (the connection's own descriptor stays
    open: its owner closes it), waking whoever waits on it."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


#: What a team member's role needs on a schema set up by another (the module docstring says why).
_RIGHTS = "USAGE on schema {s} and SELECT, INSERT, UPDATE on its tables (GRANT USAGE ON SCHEMA {s} TO <role>; " \
          "GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA {s} TO <role>)"


def _setup_refused(exc: psycopg.Error, schema: str) -> StoreError:
    """The StoreError for set-up DDL the server refused: the server's message names the right
    missing (CREATE on the database, on the schema, or owning its objects); say what to ask for."""
    return StoreError(
        f"cannot set up the Lockgate schema {schema}: {exc}; setting it up needs a role that may create schema "
        f"{schema} (CREATE on the database) or owns it: ask the database owner to run lockgate once with such a "
        f"role (that sets the schema up), then to grant this role {_RIGHTS.format(s=schema)}"
    )


#: The SQLSTATEs (or their two-character classes) of a server that cannot serve the store right
#: now but has not lost or damaged it: connection exceptions, insufficient resources (a full
#: disk, no memory, too many connections), a shutdown or restart, a statement cancelled (a
#: timeout), an I/O error.
_UNAVAILABLE_STATES = frozenset({"08", "53", "57P01", "57P02", "57P03", "57P05", "57014", "58030"})


def _failure(exc: psycopg.Error, doing: str, dsn: str | None = None) -> StoreError:
    """The StoreError for ``exc``, met while ``doing``: :class:`StoreUnavailable` when the server
    could not be reached or could not serve the statement right now (a connection lost or
    refused has no SQLSTATE), else plain. ``dsn``: a connection string whose passwords the
    message must hide (libpq quotes it)."""
    message = f"{doing}: {exc if dsn is None else _hidden(str(exc), dsn)}"
    state = exc.sqlstate
    if (isinstance(exc, psycopg.OperationalError) and state is None) or (
            state is not None and (state in _UNAVAILABLE_STATES or state[:2] in _UNAVAILABLE_STATES)):
        return StoreUnavailable(message)
    return StoreError(message)


def _taken_seq(exc: StoreError) -> bool:
    """Whether ``exc`` is a write refused because one of its events' numbers is taken."""
    cause = exc.__cause__
    return isinstance(cause, psycopg.errors.UniqueViolation) and cause.diag.constraint_name == "events_pkey"


def _params(run_id: str, header: Any, steps: Any) -> dict[str, Any]:
    write = codec.encode_write(header, steps)
    steps_json = ",".join(f"{encode_basestring_ascii(step_id)}:{record}" for step_id, record in write.steps)
    return {
        "run_id": run_id, "header": write.header, "status": write.status, "flow": write.flow, "now": write.now,
        "steps": f"{{{steps_json}}}",
    }


def _link_params(links: list[Link], count: int, head: str) -> dict[str, Any]:
    """The new chain head and the events as one JSON array whose ``detail`` members are the
    canonical texts verbatim (a ``json`` column read by json_to_recordset keeps them exact)."""
    rows = ",".join(
        f'{{"seq":{link.seq},"at":{_string(link.at)},"type":{_string(link.type)},'
        f'"step_id":{_string(link.step_id)},"detail":{link.detail_json},'
        f'"prev_hash":"{link.prev_hash}","hash":"{link.hash}"}}'
        for link in links
    )
    return {"count": count + len(links), "head": head_hash(links, head), "events": f"[{rows}]"}


def _string(value: str | None) -> str:
    return "null" if value is None else encode_basestring_ascii(value)


def _iso(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


#: A password in a connection string: ``user:PASSWORD@`` (up to the last ``@`` before the host, so
#: that an unescaped ``@`` in it is covered too) or ``password=PASSWORD``.
_PASSWORDS = re.compile(r"://[^:/@\s]*:([^/?#\s]+)@|password=([^&\s]+)", re.IGNORECASE)


def _hidden(message: str, dsn: str) -> str:
    """``message`` (libpq quotes the connection string it could not use) with the passwords of
    ``dsn`` replaced by ``****``: errors end up in logs. libpq ends a URI's password at its first
    ``@`` and takes the rest for the host, so the parts after an unescaped ``@`` are hidden where
    they appear before one, and the message says to percent-encode it."""
    for match in _PASSWORDS.finditer(dsn):
        secret = match.group(1) or match.group(2)
        if secret == "****":  # pasted from a printed command, which hides the password
            message += (" (the password **** is what Lockgate prints in commands in place of the real one: "
                        "give the real password, or set LOCKGATE_STORE to the whole URL and leave --store out)")
            continue
        message = message.replace(secret, "****")
        first, *rest = secret.split("@")
        message = message.replace(first, "****") if first else message
        for part in rest:
            message = message.replace(f"{part}@", "****@")
        if rest:
            message += " (write an @ in a password as %40, e.g. postgresql://user:p%40ss@host/db)"
    return message
