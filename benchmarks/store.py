"""What one persisted engine transition costs in each store, next to the SQLite WAL commit floor.

A transition here is what the engine writes per step event: ``save_run`` with the new header,
one changed step record and two events (hash-chained). The floor is the cheapest possible
durable write in the same mode: ``BEGIN IMMEDIATE; INSERT one row; COMMIT`` on a WAL database
with ``synchronous=NORMAL``. PostgreSQL is measured on ``LOCKGATE_PG_DSN`` or a throwaway local
server with default durability settings, once with ``synchronous_commit=on`` (fsync per commit)
and once with it off (the same guarantee as SQLite's NORMAL: a crash of the client never loses
a commit, a crash of the machine may lose the last ones).

Also printed: the pages each SQLite commit writes to the log (its main cost: ~4 µs a page on top of
a ~2 µs floor), counted from the growth of the ``-wal`` file with checkpoints off.

Run: ``python benchmarks/store.py [--n 3000]``. Prints medians, p90, means and ratios; no assertions.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lockgate.engine.store import MemoryStore, SQLiteStore, Store

TARGET_US = 150.0
RUN = "bench"


def _header(version: int) -> dict[str, Any]:
    return {
        "status": "running", "flow": "main", "spec_digest": "ab" * 32, "inputs": {"topic": "stores", "n": 3},
        "current": f"step_{version % 50}", "budget": {"usd": 1.5, "tokens": 12000 + version, "dispatches": version},
        "carry": {"notes": ["a", "b"], "round": version},
    }


def _step(version: int) -> dict[str, Any]:
    return {
        "status": "complete", "attempt": 1, "token": f"tok-{version:08d}", "agent": "claude",
        "output": {"summary": "done", "items": [1, 2, 3], "score": 0.93}, "violations": [],
        "started_at": "2025-03-01T12:00:00+00:00", "duration_ms": 812,
    }


def _events(version: int) -> list[dict[str, Any]]:
    step = f"step_{version % 50}"
    return [
        {"type": "step_done", "step_id": step, "detail": {"attempt": 1, "ensures": 2},
         "at": "2025-03-01T12:00:01+00:00"},
        {"type": "step_dispatched", "step_id": f"step_{version % 50 + 1}", "detail": {"token": f"tok-{version}"},
         "at": "2025-03-01T12:00:01+00:00"},
    ]


def time_transitions(store: Store, n: int) -> list[float]:
    """Microseconds per save_run over ``n`` transitions (after a short warm-up)."""
    store.create_run(RUN, _header(1), {f"step_{i}": {"status": "pending"} for i in range(50)}, [])
    version, samples = 1, []
    payloads = [(_header(v), {f"step_{v % 50}": _step(v)}, _events(v)) for v in range(1, n + 101)]
    for index, (header, steps, events) in enumerate(payloads):
        started = time.perf_counter_ns()
        version = store.save_run(RUN, expected_version=version, header=header, steps=steps, events=events)
        if index >= 100:
            samples.append((time.perf_counter_ns() - started) / 1000)
    assert store.verify(RUN).ok
    return samples


def wal_pages_per_commit(path: Path, n: int) -> float:
    """Log pages written per save_run, over ``n`` transitions of a fresh SQLite store at ``path``."""
    store = SQLiteStore(path)
    try:
        store._db.execute("PRAGMA wal_autocheckpoint=0")
        wal = Path(f"{path}-wal")
        page_size = store._db.execute("PRAGMA page_size").fetchone()[0]
        store.create_run(RUN, _header(1), {f"step_{i}": {"status": "pending"} for i in range(50)}, [])
        before = wal.stat().st_size
        for version in range(1, n + 1):
            store.save_run(RUN, expected_version=version, header=_header(version),
                           steps={f"step_{version % 50}": _step(version)}, events=_events(version))
        return (wal.stat().st_size - before) / (page_size + 24) / n  # each frame: 24-byte header + page
    finally:
        store.close()


def time_wal_floor(path: Path, n: int) -> list[float]:
    """Microseconds per bare WAL commit of one small row."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    samples = []
    for k in range(n + 100):
        started = time.perf_counter_ns()
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t (k, v) VALUES (?, ?)", (k, "x" * 64))
        db.execute("COMMIT")
        if k >= 100:
            samples.append((time.perf_counter_ns() - started) / 1000)
    db.close()
    return samples


def _postgres_dsns(stack: ExitStack) -> tuple[str, str] | None:
    dsn = os.environ.get("LOCKGATE_PG_DSN")
    if not dsn:
        try:
            from lockgate.engine.store.pgserver import TempPostgres

            dsn = stack.enter_context(TempPostgres(fast=False)).dsn
        except Exception as exc:  # noqa: BLE001 - the benchmark reports and carries on
            print(f"(PostgreSQL skipped: {exc})")
            return None
    separator = "&" if "?" in dsn else "?"
    return dsn, f"{dsn}{separator}options={quote('-c synchronous_commit=off')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="transitions per store (default 3000)")
    args = parser.parse_args()
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        tmpdir = Path(tmp)
        rows.append(("SQLite WAL commit floor (bare INSERT)", time_wal_floor(tmpdir / "floor.db", args.n)))
        runs: list[tuple[str, Callable[[], Store], int]] = [
            ("memory", MemoryStore, args.n),
            ("sqlite (WAL, synchronous=NORMAL)", lambda: SQLiteStore(tmpdir / "normal.db"), args.n),
            ("sqlite (WAL, synchronous=FULL)",
             lambda: SQLiteStore(tmpdir / "full.db", synchronous="FULL"), args.n // 3),
        ]
        dsns = _postgres_dsns(stack)
        if dsns is not None:
            from lockgate.engine.store.postgres import PostgresStore

            runs.append(("postgres (synchronous_commit=on)",
                         lambda: PostgresStore(dsns[0], schema="bench_on"), args.n // 3))
            runs.append(("postgres (synchronous_commit=off)",
                         lambda: PostgresStore(dsns[1], schema="bench_off"), args.n))
        for name, factory, n in runs:
            store = factory()
            try:
                rows.append((f"save_run: {name}", time_transitions(store, n)))
            finally:
                store.close()
        pages = wal_pages_per_commit(tmpdir / "pages.db", min(args.n, 1000))
    _report(rows)
    print(f"SQLite WAL pages written per save_run: {pages:.2f}")


def _report(rows: list[tuple[str, list[float]]]) -> None:
    floor = statistics.median(rows[0][1])
    print(f"{'':44} {'median µs':>10} {'p90 µs':>9} {'mean µs':>9} {'× floor':>8} {'/ target':>9}")
    for name, samples in rows:
        median = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        mean = statistics.fmean(samples)
        print(f"{name:44} {median:10.1f} {p90:9.1f} {mean:9.1f} {median / floor:8.2f} {median / TARGET_US:9.2f}")
    print("(the mean includes the checkpoints SQLite runs inside some commits; the median does not)")
    print(f"(1 changed step + 2 chained events per save_run; target ≤ {TARGET_US:.0f} µs persisted)")


if __name__ == "__main__":
    main()
