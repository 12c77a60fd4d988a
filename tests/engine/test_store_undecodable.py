"""Bytes that are not UTF-8 edited into a SQLite store (the file changed with a hex editor):
``verify`` names the first bad event, as for any other edit, and reading the events says which
event of which run is damaged, instead of SQLite's "Could not decode to UTF-8 column" for the
whole read. The edit is made in the file's bytes, with no SQLite in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.engine.store import SQLiteStore
from lockgate.errors import StoreError

HEADER = {"status": "running", "flow": "main"}
AT = "2025-03-01T12:00:00+00:00"


def stored(path: Path, marked: int) -> None:
    """A run ``r`` of four events, the ``marked`` one's detail holding a unique marker; the
    store is closed, so that every byte is in the database file (no write-ahead log)."""
    store = SQLiteStore(path)
    events = [{"type": "t", "detail": {"note": "MARKER-q7" if i == marked else f"n{i}"}, "at": AT}
              for i in range(1, 5)]
    store.create_run("r", HEADER, {"x": {"n": 1}}, events[:2])
    store.save_run("r", expected_version=1, header=HEADER, steps={}, events=events[2:])
    store.close()


def edit_bytes(path: Path, marker: bytes, replacement: bytes) -> None:
    """Overwrite ``marker``, found once in the file, with as many other bytes."""
    data = path.read_bytes()
    assert data.count(marker) == 1 and len(replacement) == len(marker)
    path.write_bytes(data.replace(marker, replacement))


@pytest.mark.parametrize("marked", [1, 3])
def test_verify_names_the_first_event_holding_bytes_that_are_not_utf8(tmp_path: Path, marked: int) -> None:
    path = tmp_path / "s.db"
    stored(path, marked)
    edit_bytes(path, b"MARKER-q7", b"MARKER\xff\xfe7")
    report = SQLiteStore(path).verify("r")
    assert (report.ok, report.first_bad_seq, report.problem, report.count) == (False, marked, "edited", 4)
    assert f"event {marked}" in report.message and "not valid UTF-8" in report.message


def test_reading_the_events_names_the_run_and_the_event_holding_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    stored(path, 3)
    edit_bytes(path, b"MARKER-q7", b"MARKER\xff\xfe7")
    store = SQLiteStore(path)
    with pytest.raises(StoreError, match=r"the detail of event 3 of run 'r' in the store is not valid UTF-8 text: "
                                         r"the store was edited or damaged; `lockgate verify r` names"):
        store.events("r")
    assert [e.seq for e in store.events("r", since_seq=3)] == [4]  # the events after it still read
    assert store.load_run("r").steps == {"x": {"n": 1}}
