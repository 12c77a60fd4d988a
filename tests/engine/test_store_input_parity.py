"""Bad input is refused alike by the memory, SQLite and PostgreSQL stores: the same exception
class, a message naming the field, and nothing written (the run's version, records and events
unchanged, its chain verifying, the store still usable). Found by running the same calls on the
three backends: U+0000 and lone surrogates in ids and event fields, over-long step ids, status
and flow, arguments of the wrong type or beyond SQLite's 64-bit integers, and wait timeouts that
are not finite numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from lockgate.engine.store import Store
from lockgate.engine.store.codec import MAX_FLOW, MAX_INT, MAX_STATUS, MAX_STEP_ID
from lockgate.errors import (
    ConcurrencyConflict,
    RunNotFound,
    StoreError,
    UnstorableValue,
)

AT = "2025-03-01T12:00:00+00:00"
HEADER = {"status": "running", "flow": "main"}


def head(**extra: Any) -> dict[str, Any]:
    return {**HEADER, **extra}


def event(**fields: Any) -> dict[str, Any]:
    return {"type": "t", "at": AT, **fields}


# (id, header, steps, events, exception, message): each is refused by create_run and save_run.
BAD_WRITES = [
    ("nul-step-id", HEADER, {"a\0b": {}}, [], UnstorableValue, r"step id 'a\\x00b'.*U\+0000"),
    ("nul-event-type", HEADER, {}, [event(type="t\0")], UnstorableValue, r"events\[0\]\.type.*U\+0000"),
    ("nul-event-step-id", HEADER, {}, [event(step_id="s\0")], UnstorableValue, r"events\[0\]\.step_id.*U\+0000"),
    ("nul-event-at", HEADER, {}, [event(at="2025-03-01\x0012:00:00")], UnstorableValue,
     r"events\[0\]\.at.*U\+0000"),
    ("nul-status", head(status="a\0"), {}, [], UnstorableValue, r"header.*U\+0000"),
    ("surrogate-step-id", HEADER, {"a\udcff": {}}, [], UnstorableValue, r"step id 'a\\udcff'.*not valid Unicode"),
    ("surrogate-header-value", head(k="\udcff"), {}, [], UnstorableValue, "header is not valid Unicode"),
    ("surrogate-header-key", head(**{"\ud800": 1}), {}, [], UnstorableValue, "header is not valid Unicode"),
    ("surrogate-status", head(status="\udcff"), {}, [], UnstorableValue, "header is not valid Unicode"),
    ("surrogate-record", HEADER, {"a": {"k": ["x\ud800"]}}, [], UnstorableValue,
     r"steps\['a'\] is not valid Unicode"),
    ("surrogate-record-key", HEADER, {"a": {"\udfff": 1}}, [], UnstorableValue, r"steps\['a'\] is not valid Unicode"),
    ("surrogates-reversed", HEADER, {"a": {"k": "\ude00\ud83d"}}, [], UnstorableValue,
     r"steps\['a'\] is not valid Unicode"),
    ("surrogate-after-escaped-backslash", HEADER, {"a": {"k": "\\\udcff"}}, [], UnstorableValue,
     r"steps\['a'\] is not valid Unicode"),
    ("surrogate-event-detail", HEADER, {}, [event(detail={"k": "\udcff"})], UnstorableValue,
     r"events\[0\]\.detail is not valid Unicode"),
    ("surrogate-event-type", HEADER, {}, [event(type="t\udcff")], UnstorableValue,
     r"events\[0\]\.type is not valid Unicode"),
    ("surrogate-event-at", HEADER, {}, [event(at="2025-03-01\udcff12:00:00")], UnstorableValue,
     r"events\[0\]\.at is not valid Unicode"),
    ("long-step-id", HEADER, {"s" * (MAX_STEP_ID + 1): {}}, [], StoreError, r"step id 's+'\.\.\. is 1001 bytes"),
    ("long-step-id-in-utf8", HEADER, {"é" * (MAX_STEP_ID // 2 + 1): {}}, [], StoreError, "is 1002 bytes long"),
    ("long-status", head(status="x" * (MAX_STATUS + 1)), {}, [], StoreError,
     r"header\['status'\] must be at most 200 characters"),
    ("long-flow", head(flow="x" * (MAX_FLOW + 1)), {}, [], StoreError,
     r"header\['flow'\] must be at most 200 characters"),
]


def _call(name: str, *args: Any, **kwargs: Any) -> Callable[[Store], Any]:
    return lambda store: getattr(store, name)(*args, **kwargs)


def _save(run_id: Any, version: Any = 1) -> Callable[[Store], Any]:
    return _call("save_run", run_id, expected_version=version, header=HEADER, steps={"a": {"n": 9}},
                 events=[event()])


# (id, call on a store holding run "r" at version 1, exception, message)
BAD_CALLS = [
    *[(f"{name}-int-id", _call(name, 123, *rest), StoreError, "run id must be a string, not int")
      for name, rest in [("load_run", ()), ("current_version", ()), ("events", ()), ("verify", ()),
                         ("wait_for_change", (1, 0))]],
    ("save-int-id", _save(123), StoreError, "run id must be a string, not int"),
    ("load-list-id", _call("load_run", ["r"]), StoreError, "run id must be a string, not list"),
    ("load-none-id", _call("load_run", None), StoreError, "run id must be a string, not NoneType"),
    ("create-nul-id", _call("create_run", "a\0b", HEADER, {}, []), StoreError, "run id must be printable"),
    ("create-surrogate-id", _call("create_run", "\udcff", HEADER, {}, []), StoreError, "run id must be printable"),
    *[(f"{name}-unstorable-id-{i}", call, RunNotFound, "no run with id")
      for i, run_id in enumerate(["a\0b", "\udcff", "r" * 201])
      for name, call in [("load", _call("load_run", run_id)), ("version", _call("current_version", run_id)),
                         ("events", _call("events", run_id)), ("verify", _call("verify", run_id)),
                         ("wait", _call("wait_for_change", run_id, 1, 0)), ("save", _save(run_id))]],
    ("events-huge-seq", _call("events", "r", since_seq=2**64), StoreError, "since_seq must be a non-negative"),
    ("events-float-seq", _call("events", "r", since_seq=1.0), StoreError, "since_seq must be an integer"),
    ("list-huge-limit", _call("list_runs", limit=2**64), StoreError, "limit must be a non-negative"),
    ("list-bool-limit", _call("list_runs", limit=True), StoreError, "limit must be an integer"),
    ("save-huge-version", _save("r", 2**64), StoreError, "expected_version must be a positive"),
    ("save-bool-version", _save("r", True), StoreError, "expected_version must be an integer"),
    ("save-max-version", _save("r", MAX_INT), ConcurrencyConflict, "not 9223372036854775807"),
    ("wait-huge-version", _call("wait_for_change", "r", 2**64, 0), StoreError, "version must be a non-negative"),
    ("wait-bool-version", _call("wait_for_change", "r", True, 0), StoreError, "version must be an integer"),
    *[(f"wait-timeout-{name}", _call("wait_for_change", "r", 1, timeout), StoreError, "timeout must be a")
      for name, timeout in [("nan", math.nan), ("inf", math.inf), ("negative", -1), ("none", None),
                            ("str", "1"), ("bool", False), ("huge-int", 10**400)]],
]


def _seed(store: Store) -> tuple[Any, Any]:
    """Create run "r" (version 1, one step, one event) and return its state to compare with."""
    store.create_run("r", HEADER, {"a": {"n": 1}}, [event(step_id="a", detail={"k": 1})])
    return store.load_run("r"), store.events("r")


def _assert_unchanged(store: Store, before: tuple[Any, Any]) -> None:
    """Run "r" is as seeded, verifies, and the store still takes a save."""
    assert (store.load_run("r"), store.events("r")) == before
    assert store.current_version("r") == 1 and store.verify("r").ok
    assert [run.run_id for run in store.list_runs()] == ["r"]
    assert store.save_run("r", expected_version=1, header=HEADER, steps={"b": {}}, events=[event()]) == 2
    assert store.verify("r").ok


def _refused(error: type[Exception], message: str, call: Callable[[], Any]) -> None:
    with pytest.raises(error, match=message) as caught:
        call()
    assert type(caught.value) is error


@pytest.mark.parametrize(("header", "steps", "events", "error", "message"),
                         [case[1:] for case in BAD_WRITES], ids=[case[0] for case in BAD_WRITES])
def test_a_value_no_store_can_keep_is_refused_alike_and_writes_nothing(store: Store, header, steps, events,
                                                                      error, message) -> None:
    before = _seed(store)
    _refused(error, message, lambda: store.create_run("new", header, steps, events))
    _refused(error, message,
             lambda: store.save_run("r", expected_version=1, header=header, steps=steps, events=events))
    with pytest.raises(RunNotFound):
        store.load_run("new")
    _assert_unchanged(store, before)


@pytest.mark.parametrize(("call", "error", "message"), [case[1:] for case in BAD_CALLS],
                         ids=[case[0] for case in BAD_CALLS])
def test_a_bad_argument_is_refused_alike_and_writes_nothing(store: Store, call, error, message) -> None:
    before = _seed(store)
    _refused(error, message, lambda: call(store))
    _assert_unchanged(store, before)


def test_values_at_the_limits_are_kept_by_every_store(store: Store) -> None:
    """The longest step id (in ASCII and in four-byte characters, beside the longest non-ASCII
    run id), status and flow; the largest seq and limit; a huge finite timeout."""
    run_id = "𝔸" * 200
    steps = {"s" * MAX_STEP_ID: {"n": 1}, "𝔹" * (MAX_STEP_ID // 4): {"n": 2}}
    header = {"status": "x" * MAX_STATUS, "flow": "y" * MAX_FLOW}
    assert store.create_run(run_id, header, steps, [event(step_id="𝔹" * 1000)]) == 1
    assert store.load_run(run_id).steps == steps and store.load_run(run_id).header == header
    assert store.events(run_id, since_seq=MAX_INT) == [] and len(store.events(run_id)) == 1
    assert [run.run_id for run in store.list_runs(status="x" * MAX_STATUS, limit=MAX_INT)] == [run_id]
    assert store.wait_for_change(run_id, 0, 1e300) == 1
    assert store.wait_for_change(run_id, 1, 0) == 1 and store.verify(run_id).ok


def test_text_that_only_looks_like_a_bad_escape_is_kept_and_a_surrogate_pair_is_one_character(store: Store) -> None:
    """A literal backslash before ``udcff`` is ordinary text; a valid character outside the
    BMP is kept; two surrogate code points forming a pair come back as the one character they
    spell, on every store (JSON text cannot tell them apart)."""
    texts = {"literal": "C:\\udcff \\\\ud800", "emoji": "😀 ✓", "pair": "\ud83d\ude00"}
    store.create_run("r", head(**texts), {"a": texts}, [event(detail={"v": texts["literal"]})])
    expected = {**texts, "pair": "😀"}
    stored = store.load_run("r")
    assert stored.header == head(**expected) and stored.steps == {"a": expected}
    assert store.events("r")[0].detail == {"v": texts["literal"]} and store.verify("r").ok
