"""The claim an engine holds on a run while it runs commands for a caller (``lockgate gate
approve``, the MCP server) is renewed while they run, as a drive's is: on another host (or pid
namespace) a claim lapses by age, and a resume there would start a long command a second time."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from processes import GUARD_S, wait_until
from specs import note_flow

from lockgate.engine import Engine, drivers
from lockgate.engine.store import open_store

#: the command runs (a real process) until the test writes its verdict into the FIFO ``verdict``
HELD = note_flow("""      - id: g1
        gate: {on_approve: c1, on_revise: null, on_kill: null}
      - id: c1
        evaluate: {command: "cat > /dev/null; echo $$ >> ran; cat verdict", timeout_ms: 60000}
        out: Verdict
""", output="c1", contract="Verdict")


def test_a_command_claim_is_renewed_while_its_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drivers, "RENEW_S", 0.05)
    os.mkfifo(tmp_path / "verdict")
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(HELD, {})["run_id"]
    approving = threading.Thread(target=engine.resolve_waiting_gate, args=(run_id, "g1", "approve"))
    approving.start()
    try:
        wait_until(lambda: (tmp_path / "ran").exists(), "the command")
        claimed = other.claim_of(run_id)
        seen = {claimed.renewed_at}
        wait_until(lambda: seen.add(other.claim_of(run_id).renewed_at) or len(seen) > 2, "two renewals")
        assert other.claim_of(run_id).owner == claimed.owner
    finally:
        (tmp_path / "verdict").write_text('{"status": "closed", "children": [], "reason": "ok"}')
        approving.join(GUARD_S)
    assert other.status(run_id)["status"] == "complete" and other.driver_of(run_id) is None
    assert len((tmp_path / "ran").read_text().split()) == 1
    engine.close()
    other.close()
