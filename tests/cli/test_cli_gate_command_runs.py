"""A steering command whose decision starts an evaluate command (no other process drives the
run) runs it, saying on stderr which command it waits for."""

from __future__ import annotations

import json

from cli_support import in_project
from click.testing import CliRunner
from specs import note_flow

from lockgate.cli import main

SPEC = note_flow("""      - id: ok
        gate: {on_approve: check, on_revise: null, on_kill: null}
      - id: check
        evaluate: {command: "cat > /dev/null; cat verdict.json", timeout_ms: 60000}
        out: Verdict
""", output="check", contract="Verdict")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_gate_approve_says_which_command_it_runs(tmp_path, monkeypatch):
    in_project(tmp_path, monkeypatch, SPEC, "")
    (tmp_path / "verdict.json").write_text('{"status": "closed", "children": [], "reason": "fine"}')
    started = invoke("run", "flow.stratum.yaml", "--store", "runs.db", "--no-prompt")
    assert started.exit_code == 3, started.stderr
    rid = json.loads(started.stdout)["run_id"]
    approved = invoke("gate", "approve", rid, "ok", "--store", "runs.db")
    assert approved.exit_code == 0, approved.stderr
    assert approved.stderr.splitlines()[0] == (
        "running the command of evaluate step check (up to 60 s): cat > /dev/null; cat verdict.json")
    assert approved.stdout.splitlines()[0] == f"run {rid}: complete"
