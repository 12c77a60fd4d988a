"""The PostgreSQL store keeps a LISTEN connection per wait in progress, not per thread that ever
waited: waits made one after another from many threads (each alive, as a notebook's or a
server's threads are) share one connection, and concurrent waits get one each, kept for later
waits. Before, every thread kept its own connection open until the store closed (a server
backend each). A real PostgreSQL server."""

from __future__ import annotations

import threading

import pytest
from processes import wait_until

pytestmark = pytest.mark.postgres


def _listening(backend) -> int:
    """How many server connections sit in this test's LISTEN."""
    schema = backend.options["schema"]
    rows = backend.raw("SELECT count(*) FROM pg_stat_activity WHERE query = ?", (f"LISTEN {schema}_runs",))
    return rows[0][0]


def _new_run(store) -> None:
    store.create_run("r1", {"status": "running", "flow": "main"}, {"s1": {}}, [])


def test_waits_one_after_another_from_many_live_threads_share_one_connection(pg_backend) -> None:
    store = pg_backend.open()
    _new_run(store)
    release = threading.Event()
    threads = []
    for _ in range(8):  # each waits (and times out) after the one before it, then stays alive
        waited = threading.Event()

        def wait(done: threading.Event = waited) -> None:
            store.wait_for_change("r1", 1, 0.05)
            done.set()
            release.wait()

        thread = threading.Thread(target=wait)
        thread.start()
        threads.append(thread)
        assert waited.wait(30)
    try:
        assert _listening(pg_backend) == 1
    finally:
        release.set()
        for thread in threads:
            thread.join()


def test_concurrent_waits_each_have_one_and_keep_it_for_later_waits(pg_backend) -> None:
    store = pg_backend.open()
    _new_run(store)
    ready = threading.Barrier(4)
    versions: list[int] = []

    def wait() -> None:
        ready.wait()
        versions.append(store.wait_for_change("r1", 1, 30))

    threads = [threading.Thread(target=wait) for _ in range(3)]
    for thread in threads:
        thread.start()
    ready.wait()
    store.save_run("r1", expected_version=1, header={"status": "running", "flow": "main"}, steps={}, events=[])
    for thread in threads:
        thread.join(30)
    assert versions == [2, 2, 2]
    assert _listening(pg_backend) <= 3
    before = _listening(pg_backend)
    assert store.wait_for_change("r1", 2, 0.05) == 2  # reuses one
    assert _listening(pg_backend) == before
    store.close()
    wait_until(lambda: _listening(pg_backend) == 0, "the server to see the LISTEN connections closed")
