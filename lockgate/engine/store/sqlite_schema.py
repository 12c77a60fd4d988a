"""The SQLite store's schema (version 2), its row keys, and the in-place upgrade from version 1.

Layout. Version 1 kept steps and events in ``WITHOUT ROWID`` tables keyed by ``(run_id, ...)``:
index b-trees, where every append or growing record goes through SQLite's sibling
redistribution, so a commit wrote ~2 pages for each. Version 2 keeps both in rowid tables
whose ``INTEGER PRIMARY KEY`` the store computes from the run's ``runs.id``:

- an event's ``id`` is ``run key | seq``, so a run's events lie in one key range in seq order
  and a transition's events append at the right edge of the b-tree (a page more only when the
  last leaf fills up);
- a step record's ``id`` is ``run key | slot``, slots numbered in first-write order, so new
  records append next to the run's last ones and an update rewrites one leaf in place;

where the run key is ``runs.id << 32``. Neither table has an index that every commit must
update. Events are still *found* by ``run_id`` and ordered by ``seq``, so SQL edits of those
columns stay visible to :meth:`~lockgate.engine.store.sqlite.SQLiteStore.verify`: a row is read
from its run's key range while it is as the store wrote it (its ``seq`` matches its key and its
``owner``, the run id the store wrote, matches ``run_id``), and through the partial index
``events_stray`` when it is not (renumbered, moved to another run, or inserted by hand, which
leaves ``owner`` NULL). That index holds only such rows, so it costs the store's own writes
nothing.
"""

from __future__ import annotations

import sqlite3

from lockgate.errors import StoreError

SCHEMA_VERSION = 2

#: A run's key is ``runs.id << KEY_SHIFT``; the low bits number its events and step slots.
KEY_SHIFT = 32
LOW_MASK = (1 << KEY_SHIFT) - 1
#: ``runs.id`` values that still give a 64-bit signed key.
MAX_RUN_ROWID = (1 << (63 - KEY_SHIFT)) - 1

#: Step records grow as a step advances (pending, ready, running, succeeded), and a record that
#: outgrows the free space of its page makes SQLite split it over new pages: several pages more
#: to write at that commit. A record row is therefore padded with ``slack`` zero bytes to at least
#: ``RECORD_ROOM`` bytes, and the padding shrinks as the record grows, so the row keeps its size
#: and is rewritten in place until the record itself is larger.
RECORD_ROOM = 512

#: True for an event row not as the store wrote it (the ``events_stray`` index's condition;
#: queries must repeat it verbatim for SQLite to use the index).
STRAY = f"(owner IS NOT run_id OR (id & {LOW_MASK}) != seq)"

_TABLES = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    flow TEXT NOT NULL,
    status TEXT NOT NULL,
    header TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    event_count INTEGER NOT NULL,
    head_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, id);
CREATE TABLE IF NOT EXISTS steps (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    record TEXT NOT NULL,
    slack BLOB
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    step_id TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS events_stray ON events (run_id, seq) WHERE {STRAY};
"""

# Version 1 -> 2: move the rows into the new tables, keyed as the store would have written them.
# Events whose seq cannot be a key (or whose run is gone) are copied with an automatic id and no
# owner: they are read as stray rows, so verify reports them as before. Step records of a run
# that no longer exists were unreachable and are dropped.
_UPGRADE_FROM_1 = f"""
ALTER TABLE steps RENAME TO steps_v1;
ALTER TABLE events RENAME TO events_v1;
{_TABLES}
INSERT INTO steps (id, run_id, step_id, record, slack)
    SELECT (r.id << {KEY_SHIFT}) | row_number() OVER (PARTITION BY s.run_id ORDER BY s.step_id),
           s.run_id, s.step_id, s.record, zeroblob(max(0, {RECORD_ROOM} - length(s.record)))
    FROM steps_v1 AS s JOIN runs AS r ON r.run_id = s.run_id;
CREATE TEMP VIEW events_v1_keyed AS
    SELECT e.*, CASE WHEN typeof(e.seq) = 'integer' AND e.seq BETWEEN 1 AND {LOW_MASK}
                     THEN (r.id << {KEY_SHIFT}) | e.seq END AS new_id
    FROM events_v1 AS e LEFT JOIN runs AS r ON r.run_id = e.run_id;
INSERT INTO events (id, run_id, seq, at, type, step_id, detail, prev_hash, hash, owner)
    SELECT new_id, run_id, seq, at, type, step_id, detail, prev_hash, hash, run_id
    FROM events_v1_keyed WHERE new_id IS NOT NULL ORDER BY new_id;
INSERT INTO events (run_id, seq, at, type, step_id, detail, prev_hash, hash, owner)
    SELECT run_id, seq, at, type, step_id, detail, prev_hash, hash, NULL
    FROM events_v1_keyed WHERE new_id IS NULL ORDER BY run_id, seq;
DROP VIEW events_v1_keyed;
DROP TABLE steps_v1;
DROP TABLE events_v1;
"""


def run_key(rowid: int) -> int:
    """The key base of the run whose ``runs.id`` is ``rowid``."""
    if rowid > MAX_RUN_ROWID:
        raise StoreError(f"the SQLite store has run out of run keys (runs.id {rowid} > {MAX_RUN_ROWID})")
    return rowid << KEY_SHIFT


def prepare(db: sqlite3.Connection, path: object) -> None:
    """Create the schema in an empty database or upgrade an older one; in the caller's write
    transaction, so a failed upgrade leaves the file as it was."""
    version = _version(db, path)
    if version is None:
        _script(db, _TABLES)
        db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        return
    if version == 1:
        _check_upgradable(db, path)
        _script(db, _UPGRADE_FROM_1)
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))


def is_current(db: sqlite3.Connection, path: object) -> bool:
    """Whether the database holds this Lockgate's schema already (nothing for :func:`prepare`
    to do); StoreError when its schema is newer than this Lockgate's."""
    return _version(db, path) == SCHEMA_VERSION


def check_readable(db: sqlite3.Connection, path: object) -> None:
    """Refuse a database opened read-only that the store could read only after :func:`prepare`
    wrote to it: one with no schema yet, or an older schema (upgraded in place on opening)."""
    version = _version(db, path)
    if version is None:
        raise StoreError(f"{path} is read-only and holds no Lockgate run store (it is an empty database): "
                         "name the store the runs are in with --store")
    if version < SCHEMA_VERSION:
        raise StoreError(f"{path} has schema version {version}, which this Lockgate upgrades in place on opening, "
                         "but the file is read-only: copy it to a writable folder and name the copy with --store")


def _version(db: sqlite3.Connection, path: object) -> int | None:
    """The schema version of the database (None when it has none: a new file); StoreError when
    it is newer than this Lockgate's."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if exists else None
    if row is None:
        return None
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {row[0]}, newer than this Lockgate "
            f"understands ({SCHEMA_VERSION}); upgrade Lockgate"
        )
    return version


def _check_upgradable(db: sqlite3.Connection, path: object) -> None:
    """Refuse (changing nothing) a version-1 file whose run row ids cannot become keys."""
    (top,) = db.execute("SELECT max(id) FROM runs").fetchone()
    if top is not None and top > MAX_RUN_ROWID:
        raise StoreError(f"{path}: cannot upgrade to schema {SCHEMA_VERSION}: a run row id ({top}) is above "
                         f"{MAX_RUN_ROWID}; export the runs you need and start a new store")


def _script(db: sqlite3.Connection, script: str) -> None:
    """Run ``script`` statement by statement (``executescript`` would commit the transaction)."""
    for statement in filter(str.strip, script.split(";")):
        db.execute(statement)
