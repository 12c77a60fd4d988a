"""Text a store cannot keep, refused alike by every backend before anything is written: U+0000
(PostgreSQL cannot store it; found by the backend-equivalence property test; the text
``\\u0000`` stays legal) and strings that are not Unicode (lone surrogates)."""

from __future__ import annotations

import pytest

from lockgate.engine.store import Store
from lockgate.errors import StoreError

HEADER = {"status": "running", "flow": "main"}


@pytest.mark.parametrize(("header", "steps", "events", "where"), [
    ({**HEADER, "note": "a\x00b"}, {}, [], "header"),
    (HEADER, {"s1": {"out": ["\x00"]}}, [], r"steps\['s1'\]"),
    (HEADER, {}, [{"type": "t", "detail": {"x": "\\\x00"}}], r"events\[0\]\.detail"),
])
def test_nul_is_refused_everywhere_and_changes_nothing(store: Store, header, steps, events, where) -> None:
    with pytest.raises(StoreError, match=where + ".*U\\+0000"):
        store.create_run("r", header, steps, events)
    store.create_run("r", HEADER, {}, [])
    with pytest.raises(StoreError, match=where + ".*U\\+0000"):
        store.save_run("r", expected_version=1, header=header, steps=steps, events=events)
    assert store.current_version("r") == 1 and store.load_run("r").steps == {} and store.events("r") == []


def test_a_literal_backslash_u0000_is_ordinary_text(store: Store) -> None:
    text = "C:\\u0000 and \\\\u0000"
    store.create_run("r", {**HEADER, "note": text}, {"s1": {"v": text}}, [{"type": "t", "detail": {"v": text}}])
    stored = store.load_run("r")
    assert stored.header["note"] == text and stored.steps["s1"]["v"] == text
    assert store.events("r")[0].detail == {"v": text} and store.verify("r").ok


@pytest.mark.parametrize("event", [{"type": "t", "detail": {"x": "\ud800"}}, {"type": "t\udfff"},
                                   {"type": "t", "step_id": "s\ud800"}])
def test_text_that_is_not_unicode_is_refused_when_saved(store: Store, event) -> None:
    store.create_run("r", HEADER, {}, [])
    with pytest.raises(StoreError, match="not valid Unicode"):
        store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event])
    assert store.current_version("r") == 1 and store.events("r") == [] and store.verify("r").ok
