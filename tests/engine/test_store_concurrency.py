"""Writers racing on one run: real processes on SQLite and PostgreSQL, threads on memory.

Exactly one of two writers holding the same version wins; the loser gets ConcurrencyConflict
and writes nothing; retried read-modify-write loops lose no update; the chain stays valid.
"""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

from lockgate.engine.store import Store, open_store
from lockgate.errors import ConcurrencyConflict

RUN = "contended"
ROUNDS = 15
INCREMENTS = 60
_ctx = multiprocessing.get_context("spawn")


def _open(target: str, options: dict[str, Any]) -> Store:
    return open_store(target, **options)


def _save_racer(store: Store, name: str, rounds: int, barrier: Any, results: Any) -> None:
    """Each round: load together, save together, report whether this writer won."""
    for round_ in range(rounds):
        barrier.wait()
        loaded = store.load_run(RUN)
        barrier.wait()
        try:
            store.save_run(RUN, expected_version=loaded.version,
                           header={**loaded.header, "last": name}, steps={name: {"round": round_}},
                           events=[{"type": "won", "step_id": name, "detail": {"round": round_}}])
            results.put((round_, name, "won"))
        except ConcurrencyConflict:
            results.put((round_, name, "conflict"))


def _incrementer(store: Store, name: str, increments: int) -> int:
    """Read-modify-write ``increments`` times, retrying on conflict; return the conflicts seen."""
    conflicts = 0
    done = 0
    while done < increments:
        run = store.load_run(RUN)
        header = {**run.header, "counter": run.header["counter"] + 1}
        try:
            store.save_run(RUN, expected_version=run.version, header=header, steps={},
                           events=[{"type": "inc", "step_id": name, "detail": {"counter": header["counter"]}}])
            done += 1
        except ConcurrencyConflict:
            conflicts += 1
    return conflicts


def _process_racer(target: str, options: dict[str, Any], name: str, rounds: int, barrier: Any, results: Any) -> None:
    store = _open(target, options)
    try:
        _save_racer(store, name, rounds, barrier, results)
    finally:
        store.close()


def _process_incrementer(target: str, options: dict[str, Any], name: str, increments: int, results: Any) -> None:
    store = _open(target, options)
    try:
        results.put((name, _incrementer(store, name, increments)))
    finally:
        store.close()


def _new_run(store: Store) -> None:
    store.create_run(RUN, {"status": "running", "flow": "main", "counter": 0}, {}, [])


def _run_workers(workers: list[Any]) -> None:
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    for worker in workers:
        assert not worker.is_alive(), "a racing worker hung"
        if hasattr(worker, "exitcode"):
            assert worker.exitcode == 0, f"a racing process failed with exit code {worker.exitcode}"


def _check_rounds(store: Store, outcomes: list[tuple[int, str, str]]) -> None:
    by_round: dict[int, list[str]] = {}
    for round_, _, outcome in outcomes:
        by_round.setdefault(round_, []).append(outcome)
    assert sorted(by_round) == list(range(ROUNDS))
    assert all(sorted(results) == ["conflict", "won"] for results in by_round.values()), by_round
    assert store.current_version(RUN) == ROUNDS + 1
    events = store.events(RUN)
    assert [e.detail["round"] for e in events] == list(range(ROUNDS))
    winners = {round_: name for round_, name, outcome in outcomes if outcome == "won"}
    assert [e.step_id for e in events] == [winners[r] for r in range(ROUNDS)]
    assert store.verify(RUN).ok


def test_two_processes_saving_the_same_version_exactly_one_wins(durable_backend) -> None:
    store = durable_backend.open()
    _new_run(store)
    barrier, results = _ctx.Barrier(2), _ctx.Queue()
    workers = [_ctx.Process(target=_process_racer,
                            args=(durable_backend.target, durable_backend.options, name, ROUNDS, barrier, results))
               for name in ("alpha", "beta")]
    _run_workers(workers)
    _check_rounds(store, [results.get(timeout=10) for _ in range(2 * ROUNDS)])


def test_two_processes_incrementing_lose_no_update(durable_backend) -> None:
    store = durable_backend.open()
    _new_run(store)
    results = _ctx.Queue()
    workers = [_ctx.Process(target=_process_incrementer,
                            args=(durable_backend.target, durable_backend.options, name, INCREMENTS, results))
               for name in ("alpha", "beta")]
    _run_workers(workers)
    conflicts = dict(results.get(timeout=10) for _ in workers)
    run = store.load_run(RUN)
    assert run.header["counter"] == 2 * INCREMENTS
    assert run.version == 2 * INCREMENTS + 1
    events = store.events(RUN)
    assert [e.detail["counter"] for e in events] == list(range(1, 2 * INCREMENTS + 1))
    assert {name: sum(e.step_id == name for e in events) for name in conflicts} == {
        "alpha": INCREMENTS, "beta": INCREMENTS}
    assert store.verify(RUN).ok


def test_threads_sharing_one_store_object_race_safely(backend) -> None:
    """One store object used by two threads (the lock), plus the memory backend's semantics."""
    store = backend.open()
    _new_run(store)
    barrier = threading.Barrier(2)
    outcomes: list[tuple[int, str, str]] = []

    class _Results:
        @staticmethod
        def put(item: tuple[int, str, str]) -> None:
            outcomes.append(item)

    threads = [threading.Thread(target=_save_racer, args=(store, name, ROUNDS, barrier, _Results))
               for name in ("alpha", "beta")]
    _run_workers(threads)
    _check_rounds(store, outcomes)


def test_threads_incrementing_lose_no_update(backend) -> None:
    store = backend.open()
    _new_run(store)
    stores = [backend.open(), backend.open()]
    threads = [threading.Thread(target=_incrementer, args=(s, name, INCREMENTS))
               for s, name in zip(stores, ("alpha", "beta"))]
    _run_workers(threads)
    assert store.load_run(RUN).header["counter"] == 2 * INCREMENTS
    assert store.verify(RUN).ok
