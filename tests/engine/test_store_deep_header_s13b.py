"""A run header edited in a SQLite store to nest 3,000 deep (review s13b F7): ``lockgate show``
and ``lockgate audit`` say the store was edited or damaged, as for any header that is not JSON,
instead of "internal error: RecursionError"."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lockgate.engine.store import SQLiteStore

HEADER = {"status": "complete", "flow": "main"}


def store_with_header(path: Path, header_json: str) -> None:
    """A store holding run ``r``, whose header is then replaced by ``header_json`` with sqlite3
    (a person editing the file)."""
    store = SQLiteStore(path)
    store.create_run("r", HEADER, {}, [{"type": "run_started", "detail": {}, "at": "2025-03-01T12:00:00+00:00"}])
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("update runs set header = ? where run_id = 'r'", (header_json,)).rowcount == 1
    db.close()


def lockgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockgate", *args], capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.parametrize("command", ["show", "audit"])
def test_a_header_nested_3000_deep_is_reported_as_a_damaged_store(tmp_path: Path, command: str) -> None:
    deep = '{"status":"complete","flow":"main","x":' + "[" * 3000 + "]" * 3000 + "}"
    store_with_header(tmp_path / "deep.db", deep)
    result = lockgate(command, "r", "--store", str(tmp_path / "deep.db"))
    assert result.returncode == 1, result
    assert "RecursionError" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert "the header of run 'r' in the store" in result.stderr, result.stderr
    assert "the store was edited or damaged; `lockgate verify RUN` names the damaged events" in result.stderr

    # the same words as for a header that is not JSON at all
    store_with_header(tmp_path / "junk.db", "{not json")
    junk = lockgate(command, "r", "--store", str(tmp_path / "junk.db"))
    assert junk.returncode == 1 and "the header of run 'r' in the store is not valid JSON" in junk.stderr, junk


def test_verify_names_an_event_whose_detail_was_edited_to_nest_3000_deep(tmp_path: Path) -> None:
    """`lockgate verify` printed "internal error: RecursionError" (review s13b, left after F7)."""
    store_with_header(tmp_path / "ev.db", '{"status":"complete","flow":"main"}')
    with sqlite3.connect(tmp_path / "ev.db") as db:
        deep = '{"x":' + "[" * 3000 + "]" * 3000 + "}"
        assert db.execute("update events set detail = ? where run_id = 'r'", (deep,)).rowcount == 1
    db.close()
    result = lockgate("verify", "r", "--store", str(tmp_path / "ev.db"))
    assert "RecursionError" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert result.returncode == 1, result
    assert result.stdout.strip() == "run r: audit chain BROKEN at event 1 (edited): event 1 does not match its recorded hash"
