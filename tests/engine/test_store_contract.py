"""The Store contract, run against the memory, SQLite and PostgreSQL backends alike."""

from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest

from lockgate.engine.store import Event, RunSummary, Store, StoredRun
from lockgate.engine.store.chain import GENESIS_HASH
from lockgate.errors import ConcurrencyConflict, RunNotFound, StoreError

AT = "2025-03-01T12:00:00+00:00"


def header(status: str = "running", **extra: object) -> dict[str, object]:
    return {"status": status, "flow": "main", **extra}


def event(type_: str, step_id: str | None = None, **detail: object) -> dict[str, object]:
    return {"type": type_, "step_id": step_id, "detail": detail, "at": AT}


def test_every_backend_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_create_then_load_round_trips_header_and_steps(store: Store) -> None:
    head = header(spec={"flows": {"main": [1, 2.5, None, True]}}, note="héllo ✓")
    steps = {"draft": {"status": "pending", "attempts": 0}, "review": {"status": "blocked"}}
    assert store.create_run("r1", head, steps, [event("run_started")]) == 1
    assert store.load_run("r1") == StoredRun("r1", head, steps, 1)


def test_create_refuses_an_existing_id_and_keeps_the_first(store: Store) -> None:
    store.create_run("r1", header(), {"a": {"n": 1}}, [])
    with pytest.raises(StoreError, match="already exists"):
        store.create_run("r1", header("other"), {"a": {"n": 2}}, [event("x")])
    assert store.load_run("r1").steps == {"a": {"n": 1}}
    assert store.events("r1") == []


def test_save_replaces_header_upserts_only_given_steps_and_bumps_version(store: Store) -> None:
    store.create_run("r1", header(), {"a": {"n": 0}, "b": {"n": 0}}, [])
    version = store.save_run("r1", expected_version=1, header=header("paused", gate="b"),
                             steps={"b": {"n": 1}, "c": {"n": 1}}, events=[event("step_done", "b")])
    assert version == 2
    loaded = store.load_run("r1")
    assert loaded.header == header("paused", gate="b")
    assert loaded.steps == {"a": {"n": 0}, "b": {"n": 1}, "c": {"n": 1}}
    assert loaded.version == 2 == store.current_version("r1")


def test_stale_version_conflicts_and_writes_nothing(store: Store) -> None:
    store.create_run("r1", header(), {"a": {"n": 0}}, [event("start")])
    store.save_run("r1", expected_version=1, header=header(), steps={"a": {"n": 1}}, events=[event("e1")])
    with pytest.raises(ConcurrencyConflict) as caught:
        store.save_run("r1", expected_version=1, header=header("lost"), steps={"a": {"n": 99}, "z": {}},
                       events=[event("lost")])
    assert caught.value.detail == {"run_id": "r1", "expected_version": 1, "actual_version": 2}
    assert caught.value.to_dict()["error_type"] == "concurrency_conflict"
    loaded = store.load_run("r1")
    assert (loaded.version, loaded.header["status"], loaded.steps) == (2, "running", {"a": {"n": 1}})
    assert [e.type for e in store.events("r1")] == ["start", "e1"]
    assert store.verify("r1").ok


def test_a_conflict_from_a_second_store_object_is_seen(backend) -> None:
    first, second = backend.open(), backend.open()
    first.create_run("r1", header(), {}, [])
    assert first.load_run("r1").version == 1
    assert second.save_run("r1", expected_version=1, header=header(), steps={}, events=[event("b")]) == 2
    with pytest.raises(ConcurrencyConflict):
        first.save_run("r1", expected_version=1, header=header(), steps={}, events=[event("a")])
    assert first.save_run("r1", expected_version=2, header=header(), steps={}, events=[event("a")]) == 3
    assert [e.type for e in second.events("r1")] == ["b", "a"]
    assert second.verify("r1").ok


def test_events_are_numbered_chained_and_filtered_by_seq(store: Store) -> None:
    store.create_run("r1", header(), {}, [event("run_started", detail_n=0)])
    store.save_run("r1", expected_version=1, header=header(), steps={},
                   events=[event("step_started", "a"), event("step_done", "a", output={"x": [1, 2]})])
    events = store.events("r1")
    assert [e.seq for e in events] == [1, 2, 3]
    assert events[0].prev_hash == GENESIS_HASH
    assert all(later.prev_hash == earlier.hash for earlier, later in zip(events, events[1:]))
    assert events[2] == Event(3, AT, "step_done", "a", {"output": {"x": [1, 2]}}, events[1].hash, events[2].hash)
    assert store.events("r1", since_seq=2) == events[2:]
    assert store.events("r1", since_seq=3) == []
    assert store.verify("r1").to_dict() == {"run_id": "r1", "ok": True, "count": 3, "first_bad_seq": None,
                                            "problem": None, "message": None}


def test_event_hash_follows_the_documented_formula(store: Store) -> None:
    """sha256(prev_hash + canonical JSON of {run_id, seq, at, type, step_id, detail}): any
    backend, or anyone with the rows, can recompute it."""
    store.create_run("same", header(), {}, [event("a", None, n=1.5, s="ü", big=10**20)])
    (stored,) = store.events("same")
    body = json.dumps(
        {"run_id": "same", "seq": 1, "at": AT, "type": "a", "step_id": None,
         "detail": {"n": 1.5, "s": "ü", "big": 10**20}},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )
    assert stored.hash == hashlib.sha256(("0" * 64 + body).encode("utf-8")).hexdigest()


def test_event_time_defaults_to_now_and_detail_to_empty(store: Store) -> None:
    store.create_run("r1", header(), {}, [{"type": "run_started"}])
    (only,) = store.events("r1")
    assert only.detail == {} and only.step_id is None
    assert only.at.endswith("+00:00")


def test_list_runs_newest_first_with_status_filter_and_limit(store: Store) -> None:
    for index, status in enumerate(["complete", "running", "complete", "await_gate"]):
        store.create_run(f"r{index}", header(status), {}, [])
    store.save_run("r0", expected_version=1, header={"status": "killed", "flow": "other"}, steps={}, events=[])
    runs = store.list_runs()
    assert [r.run_id for r in runs] == ["r3", "r2", "r1", "r0"]
    assert runs[3].status == "killed" and runs[3].flow == "other" and runs[3].version == 2
    assert runs[3].updated_at >= runs[3].created_at
    assert [r.run_id for r in store.list_runs(status="complete")] == ["r2"]
    assert [r.run_id for r in store.list_runs(limit=2)] == ["r3", "r2"]
    assert isinstance(runs[0], RunSummary) and runs[0].to_dict()["flow"] == "main"


def test_callers_cannot_mutate_stored_state(store: Store) -> None:
    head, steps = header(items=[1]), {"a": {"list": [1]}}
    detail = {"k": [1]}
    store.create_run("r1", head, steps, [{"type": "t", "detail": detail, "at": AT}])
    head["items"].append(2)
    steps["a"]["list"].append(2)
    detail["k"].append(2)
    loaded = store.load_run("r1")
    loaded.header["items"].append(3)
    loaded.steps["a"]["list"].append(3)
    store.events("r1")[0].detail["k"].append(3)
    again = store.load_run("r1")
    assert again.header["items"] == [1] and again.steps["a"]["list"] == [1]
    assert store.events("r1")[0].detail == {"k": [1]}
    assert store.verify("r1").ok


@pytest.mark.parametrize("call", ["load_run", "current_version", "events", "verify"])
def test_unknown_run_raises_run_not_found(store: Store, call: str) -> None:
    with pytest.raises(RunNotFound, match="nope"):
        getattr(store, call)("nope")


def test_saving_an_unknown_run_raises_run_not_found(store: Store) -> None:
    with pytest.raises(RunNotFound):
        store.save_run("nope", expected_version=1, header=header(), steps={}, events=[])
    with pytest.raises(RunNotFound):
        store.wait_for_change("nope", 1, 0)


@pytest.mark.parametrize(
    ("head", "steps", "events", "message"),
    [
        ({"status": "s", "flow": "f", "bad": {1, 2}}, {}, [], "header is not JSON-serialisable"),
        ({"status": "s", "flow": "f", "nan": float("nan")}, {}, [], "header is not JSON-serialisable"),
        ({"flow": "f"}, {}, [], r"header\['status'\]"),
        (["status"], {}, [], "header must be a dict"),
        (header(), {"a": object()}, [], r"steps\['a'\] must be a dict"),
        (header(), {"a": {"f": object()}}, [], r"steps\['a'\] is not JSON-serialisable"),
        (header(), {"": {}}, [], "step ids must be non-empty strings"),
        (header(), [], [], "steps must be a dict"),
        (header(), {}, [{"step_id": "a"}], r"events\[0\].type"),
        (header(), {}, [{"type": "t", "detail": []}], r"events\[0\].detail must be a dict"),
        (header(), {}, [{"type": "t", "at": "yesterday"}], r"events\[0\].at must be an ISO-8601"),
        (header(), {}, [{"type": "t", "detail": {"x": b"raw"}}], r"events\[0\].detail is not JSON"),
        (header(), {}, [{"type": "t", "oops": 1}], "unknown keys"),
        (header(), {}, {"type": "t"}, "events must be a list"),
    ],
)
def test_bad_input_is_a_clear_store_error_and_changes_nothing(store: Store, head, steps, events, message) -> None:
    with pytest.raises(StoreError, match=message):
        store.create_run("bad", head, steps, events)
    with pytest.raises(RunNotFound):
        store.load_run("bad")
    store.create_run("good", header(), {"a": {"n": 1}}, [])
    with pytest.raises(StoreError, match=message):
        store.save_run("good", expected_version=1, header=head, steps=steps, events=events)
    assert store.load_run("good") == StoredRun("good", header(), {"a": {"n": 1}}, 1)
    assert store.save_run("good", expected_version=1, header=header(), steps={}, events=[event("ok")]) == 2


@pytest.mark.parametrize("run_id", ["", None, "x" * 201, "tab\there"])
def test_bad_run_ids_are_refused(store: Store, run_id) -> None:
    with pytest.raises(StoreError, match="run id"):
        store.create_run(run_id, header(), {}, [])


@pytest.mark.parametrize("version", [0, -1, True, "1", None])
def test_bad_expected_versions_are_refused(store: Store, version) -> None:
    store.create_run("r1", header(), {}, [])
    with pytest.raises(StoreError, match="expected_version"):
        store.save_run("r1", expected_version=version, header=header(), steps={}, events=[])


def test_wait_for_change_times_out_with_the_current_version(store: Store) -> None:
    store.create_run("r1", header(), {}, [])
    started = time.monotonic()
    assert store.wait_for_change("r1", 1, 0.05) == 1
    assert 0.04 <= time.monotonic() - started < 2
    assert store.wait_for_change("r1", 7, 5) == 1


def test_wait_for_change_wakes_when_another_store_object_writes(backend) -> None:
    waiter, writer = backend.open(), backend.open()
    waiter.create_run("r1", header(), {}, [])
    writing = threading.Event()
    got: list[int] = []

    def wait() -> None:
        writing.set()
        got.append(waiter.wait_for_change("r1", 1, 10))

    thread = threading.Thread(target=wait)
    started = time.monotonic()
    thread.start()
    writing.wait()
    writer.save_run("r1", expected_version=1, header=header("done"), steps={}, events=[])
    thread.join(10)
    assert got == [2]
    assert time.monotonic() - started < 5


def test_a_wait_in_one_thread_does_not_hold_up_a_wait_in_another(backend) -> None:
    """Two threads sharing one store wait on different runs: each keeps its own timeout and
    wakes on its own run's change (on PostgreSQL the first wait held the listener)."""
    store, writer = backend.open(), backend.open()
    store.create_run("a", header(), {}, [])
    store.create_run("b", header(), {}, [])
    entered = threading.Event()
    got: list[int] = []

    def long_wait() -> None:
        entered.set()
        got.append(store.wait_for_change("a", 1, 30))

    thread = threading.Thread(target=long_wait)
    thread.start()
    entered.wait()
    started = time.monotonic()
    assert store.wait_for_change("b", 1, 0.2) == 1
    assert time.monotonic() - started < 5
    writer.save_run("b", expected_version=1, header=header("done"), steps={}, events=[])
    assert store.wait_for_change("b", 1, 10) == 2
    writer.save_run("a", expected_version=1, header=header("done"), steps={}, events=[])
    thread.join(30)
    assert got == [2]


def test_closed_store_refuses_work(backend) -> None:
    store = backend.open()
    store.create_run("r1", header(), {}, [])
    store.close()
    with pytest.raises(StoreError):
        store.load_run("r1")


@pytest.mark.parametrize(("kwargs", "message"), [({"limit": -1}, "limit"), ({"limit": "5"}, "limit"),
                                                 ({"status": 3}, "status")])
def test_bad_listing_arguments_are_refused(store: Store, kwargs, message) -> None:
    with pytest.raises(StoreError, match=message):
        store.list_runs(**kwargs)


def test_zero_limit_lists_nothing(store: Store) -> None:
    store.create_run("r1", header(), {}, [])
    assert store.list_runs(limit=0) == []


@pytest.mark.parametrize("since", [-1, "2", None])
def test_bad_since_seq_is_refused(store: Store, since) -> None:
    store.create_run("r1", header(), {}, [])
    with pytest.raises(StoreError, match="since_seq"):
        store.events("r1", since)
