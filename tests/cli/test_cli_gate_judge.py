"""A gate decided from another terminal can release a ``set`` step with a judged ensure: the
decision's command asks the project's judge (``judge`` in lockgate.toml), as ``lockgate run``
would; without one the ensure fails closed and the run fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import in_project
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${sign.output}", contract: Note}
    steps:
      - id: review
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: sign
        after: [review]
        set: {text: "'signed'"}
        out: Note
        ensure:
          - judged: {statement: "the note is signed"}
"""
JUDGES = "def judge(task):\n    return {'holds': True, 'reason': 'it is signed'}\n"


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run waiting at its gate in runs.db; the project's judge is a Python function."""
    in_project(tmp_path, monkeypatch, SPEC, "")
    (tmp_path / "gate_judges.py").write_text(JUDGES)  # a module name no other test imports
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "lockgate.toml").write_text('judge = "judge"\n\n[agents.judge]\ntype = "python"\n'
                                            'callable = "gate_judges:judge"\n')
    engine = Engine(store=open_store("runs.db"))
    run_id = engine.plan(load(SPEC).spec, {})["run_id"]
    engine.close()
    return run_id


def test_a_gate_approved_from_the_cli_asks_the_projects_judge(waiting: str) -> None:
    approved = CliRunner().invoke(main, ["gate", "approve", waiting, "review", "--store", "runs.db",
                                         "--format", "json"])
    assert approved.exit_code == 0, approved.stderr
    out = json.loads(approved.stdout)
    assert out["status"] == "complete" and out["output"] == {"text": "signed"}


def test_without_a_judge_the_ensure_fails_closed(waiting: str) -> None:
    Path("lockgate.toml").write_text("")
    approved = CliRunner().invoke(main, ["gate", "approve", waiting, "review", "--store", "runs.db",
                                         "--format", "json"])
    out = json.loads(approved.stdout)
    assert out["status"] == "error" and "judge" in out["message"]
