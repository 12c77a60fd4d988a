"""An event row of a SQLite store given bytes that are not UTF-8 (an edit of the file): ``verify``
names the first bad event (exit 1) and ``audit`` names the run and the event, as for any other
tampering, instead of SQLite's "Could not decode to UTF-8 column"."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from test_runs_cli import cli, gate_run

# {"x":"<0xff>"}: JSON, but not UTF-8
NOT_UTF8 = bytes.fromhex("7b2278223a22ff227d")


def test_verify_and_audit_name_the_event_holding_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run, other = gate_run(db), gate_run(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET detail = CAST(? AS TEXT) WHERE run_id = ? AND seq = 2", (NOT_UTF8, run))
    conn.close()
    code, output = cli(db, "verify", run)
    assert code == 1, output
    assert output.startswith(f"run {run}: audit chain BROKEN at event 2 (edited): event 2 "), output
    assert "not valid UTF-8" in output
    code, output = cli(db, "audit", run)
    assert code == 1, output
    assert output.startswith(f"error: the detail of event 2 of run {run!r} in the store is not valid UTF-8 text: "
                             f"the store was edited or damaged; `lockgate verify {run}` names the damaged events")
    code, output = cli(db, "verify", other)
    assert code == 0 and "audit chain intact" in output, output
