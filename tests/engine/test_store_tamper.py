"""``verify`` against real tampering: SQL run straight on the SQLite file or the PostgreSQL schema."""

from __future__ import annotations

import pytest

from lockgate.engine.store import Store
from lockgate.engine.store.chain import chain_events
from lockgate.errors import ConcurrencyConflict

AT = "2025-03-01T12:00:00+00:00"
RUN = "audited"


@pytest.fixture
def audited(durable_backend) -> Store:
    """A run with 10 events: 2 at creation, then 4 transitions of 2 events each."""
    store = durable_backend.open()
    store.create_run(RUN, {"status": "running", "flow": "main"}, {},
                     [{"type": "run_started", "detail": {"n": 0}, "at": AT},
                      {"type": "plan", "detail": {"n": 1}, "at": AT}])
    for version in range(1, 5):
        store.save_run(RUN, expected_version=version, header={"status": "running", "flow": "main"},
                       steps={f"s{version}": {"done": True}},
                       events=[{"type": "step_started", "step_id": f"s{version}", "detail": {"v": version}, "at": AT},
                               {"type": "step_done", "step_id": f"s{version}", "detail": {"v": version}, "at": AT}])
    assert store.verify(RUN).ok and store.verify(RUN).count == 10
    return store


def _problem(store: Store) -> tuple[bool, int | None, str | None]:
    report = store.verify(RUN)
    assert report.ok or report.message
    return report.ok, report.first_bad_seq, report.problem


def _shift(backend, first_seq: int, by: int) -> None:
    """Renumber events ``seq >= first_seq`` by ``by`` (through negatives: no key collisions)."""
    backend.raw("UPDATE {events} SET seq = -seq WHERE run_id = ? AND seq >= ?", (RUN, first_seq))
    backend.raw("UPDATE {events} SET seq = -seq + ? WHERE run_id = ? AND seq < 0", (by, RUN))


def test_edited_detail(durable_backend, audited: Store) -> None:
    durable_backend.raw("UPDATE {events} SET detail = ? WHERE run_id = ? AND seq = 6", ('{"v":99}', RUN))
    assert _problem(audited) == (False, 6, "edited")


def test_edited_type_and_time(durable_backend, audited: Store) -> None:
    durable_backend.raw("UPDATE {events} SET type = 'step_skipped' WHERE run_id = ? AND seq = 9", (RUN,))
    assert _problem(audited) == (False, 9, "edited")
    durable_backend.raw("UPDATE {events} SET at = ? WHERE run_id = ? AND seq = 4", ("2020-01-01T00:00:00", RUN))
    assert _problem(audited) == (False, 4, "edited")


def test_deleted_row(durable_backend, audited: Store) -> None:
    durable_backend.raw("DELETE FROM {events} WHERE run_id = ? AND seq = 5", (RUN,))
    assert _problem(audited) == (False, 5, "deleted")


def test_deleted_row_with_the_rest_renumbered(durable_backend, audited: Store) -> None:
    durable_backend.raw("DELETE FROM {events} WHERE run_id = ? AND seq = 5", (RUN,))
    _shift(durable_backend, 6, -1)
    assert _problem(audited) == (False, 5, "deleted")


def test_truncated_tail(durable_backend, audited: Store) -> None:
    durable_backend.raw("DELETE FROM {events} WHERE run_id = ? AND seq > 7", (RUN,))
    assert _problem(audited) == (False, 8, "deleted")


def test_forged_row_inserted_in_the_middle(durable_backend, audited: Store) -> None:
    events = audited.events(RUN)
    (forged,) = chain_events(RUN, [{"type": "gate_approved", "step_id": "s2", "detail": {}, "at": AT}],
                             events[3].hash, 5, AT)
    _shift(durable_backend, 5, 1)
    durable_backend.raw("INSERT INTO {events} (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (RUN, *forged))
    assert _problem(audited) == (False, 5, "inserted")


def test_a_replayed_copy_of_an_event_is_the_one_named(durable_backend, audited: Store) -> None:
    """Event 3 copied in as event 4 (the rest pushed down): the copy is inserted, not event 3."""
    third = audited.events(RUN)[2]
    _shift(durable_backend, 4, 1)
    durable_backend.raw("INSERT INTO {events} (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (RUN, 4, third.at, third.type, third.step_id, '{"v":1}', third.prev_hash, third.hash))
    assert _problem(audited) == (False, 4, "inserted")


def test_a_forgery_with_a_made_up_hash_is_the_one_named(durable_backend, audited: Store) -> None:
    third = audited.events(RUN)[2]
    _shift(durable_backend, 4, 1)
    durable_backend.raw("INSERT INTO {events} (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (RUN, 4, AT, "gate_approved", None, "{}", third.prev_hash, "f" * 64))
    assert _problem(audited) == (False, 4, "inserted")


def test_forged_row_appended(durable_backend, audited: Store) -> None:
    last = audited.events(RUN)[-1]
    (forged,) = chain_events(RUN, [{"type": "run_complete", "detail": {}, "at": AT}], last.hash, 11, AT)
    durable_backend.raw("INSERT INTO {events} (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (RUN, *forged))
    assert _problem(audited) == (False, 11, "inserted")


def test_two_rows_swapped(durable_backend, audited: Store) -> None:
    durable_backend.raw("UPDATE {events} SET seq = -1 WHERE run_id = ? AND seq = 3", (RUN,))
    durable_backend.raw("UPDATE {events} SET seq = 3 WHERE run_id = ? AND seq = 4", (RUN,))
    durable_backend.raw("UPDATE {events} SET seq = 4 WHERE run_id = ? AND seq = -1", (RUN,))
    assert _problem(audited) == (False, 3, "reordered")


def test_bad_genesis(durable_backend, audited: Store) -> None:
    durable_backend.raw("UPDATE {events} SET prev_hash = ? WHERE run_id = ? AND seq = 1", ("1" * 64, RUN))
    assert _problem(audited) == (False, 1, "bad_genesis")


def test_whole_suffix_rewritten_with_valid_hashes_is_caught_by_the_run_head(durable_backend, audited: Store) -> None:
    events = audited.events(RUN)
    durable_backend.raw("DELETE FROM {events} WHERE run_id = ? AND seq > 6", (RUN,))
    rewritten = chain_events(RUN, [{"type": "step_done", "detail": {"v": 0}, "at": AT}] * 4, events[5].hash, 7, AT)
    for link in rewritten:
        durable_backend.raw("INSERT INTO {events} (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (RUN, *link))
    ok, _, problem = _problem(audited)
    assert (ok, problem) == (False, "edited")


def test_tampering_one_run_leaves_others_verifiable(durable_backend, audited: Store) -> None:
    audited.create_run("other", {"status": "running", "flow": "main"}, {}, [{"type": "x", "at": AT}])
    durable_backend.raw("DELETE FROM {events} WHERE run_id = ? AND seq = 2", (RUN,))
    assert not audited.verify(RUN).ok
    assert audited.verify("other").ok


def test_a_moved_chain_head_under_a_cached_one_is_a_conflict_not_a_fork(durable_backend, audited: Store) -> None:
    version = audited.current_version(RUN)
    durable_backend.raw("UPDATE {runs} SET head_hash = ? WHERE run_id = ?", ("e" * 64, RUN))
    with pytest.raises(ConcurrencyConflict, match="changed underneath"):
        audited.save_run(RUN, expected_version=version, header={"status": "running", "flow": "main"}, steps={},
                         events=[{"type": "late", "at": AT}])
    assert len(audited.events(RUN)) == 10
