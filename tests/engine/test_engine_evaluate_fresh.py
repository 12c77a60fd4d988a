"""An evaluate command runs only on the run as stored: it starts once the transition that
reached it has committed (so an engine whose copy of the run is out of date rereads it first,
and a run cancelled elsewhere runs nothing), and an answer settled after another process's
write is replayed on the new state without running the command again."""

import sys
from pathlib import Path

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError

OK = '{"status": "closed", "children": [], "reason": "ok"}'
SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Note}
    steps:
      - {id: a, agent: claude, do: a, out: Note}
      - {id: b, agent: claude, do: b, out: Note}
      - id: check
        after: [a]
        evaluate: {command: "sh check.sh", in: "${a.output.text}", timeout_ms: 5000}
      - {id: fin, after: [check, b], agent: claude, do: fin, out: Note}
"""


@pytest.fixture
def engines(tmp_path):
    (tmp_path / "check.sh").write_text(f"echo ran >> count; cat >> seen; echo >> seen; echo '{OK}'\n")
    first, second = (Engine(workspace=tmp_path, store=open_store(tmp_path / "runs.db")) for _ in range(2))
    yield first, second
    first.close()
    second.close()


def _runs_of_the_command(workspace: Path) -> list[str]:
    count = workspace / "count"
    return count.read_text().split() if count.exists() else []


def test_a_stale_engine_rereads_the_run_before_the_command(engines, tmp_path):
    first, second = engines
    plan = first.plan(SPEC, {})
    tokens = {entry["step_id"]: entry["token"] for entry in plan["ready"]}
    second.step_done(plan["run_id"], "b", {"text": "b"}, tokens["b"])
    first.step_done(plan["run_id"], "a", {"text": "from the first engine"}, tokens["a"])
    assert _runs_of_the_command(tmp_path) == ["ran"]
    assert (tmp_path / "seen").read_text() == '"from the first engine"\n'
    assert second.status(plan["run_id"])["step_id"] == "fin"


def test_a_run_cancelled_elsewhere_runs_no_command(engines, tmp_path):
    first, second = engines
    plan = first.plan(SPEC, {})
    tokens = {entry["step_id"]: entry["token"] for entry in plan["ready"]}
    second.cancel(plan["run_id"], "stop")
    with pytest.raises(EngineError, match="is cancelled"):
        first.step_done(plan["run_id"], "a", {"text": "a"}, tokens["a"])
    assert _runs_of_the_command(tmp_path) == []


def test_an_evaluator_changing_its_input_changes_nothing_of_the_run(tmp_path):
    def normalising(command, value, timeout_ms, workspace):
        value["text"] = "changed by the evaluator"
        return {"ok": True, "result": {"status": "closed", "children": [], "reason": "ok"}}

    engine = Engine(evaluator=normalising, store=open_store("memory"))
    spec = SPEC.replace('in: "${a.output.text}"', 'in: "${a.output}"')
    plan = engine.plan(spec, {})
    tokens = {entry["step_id"]: entry["token"] for entry in plan["ready"]}
    engine.step_done(plan["run_id"], "b", {"text": "b"}, tokens["b"])
    fin = engine.step_done(plan["run_id"], "a", {"text": "as reported"}, tokens["a"])
    assert fin["step_id"] == "fin"
    (traced,) = [entry for entry in engine.audit(plan["run_id"])["trace"] if entry["step_id"] == "a"]
    assert traced["output"] == {"text": "as reported"}


RACER = """
import sys
from lockgate.engine import Engine
from lockgate.engine.store import open_store
Engine(store=open_store(sys.argv[1])).step_done(sys.argv[2], "b", {"text": "b"}, sys.argv[3])
"""


def test_a_transition_replayed_after_another_write_does_not_run_the_command_again(engines, tmp_path, monkeypatch):
    """The command itself makes another process write the run while it runs: the settling save
    conflicts and is replayed on the new state, with the command's answer."""
    first, _ = engines
    (tmp_path / "racer.py").write_text(RACER)
    (tmp_path / "check.sh").write_text(
        f'echo ran >> count; "{sys.executable}" racer.py runs.db "$RID" "$TOK"; cat > /dev/null; echo \'{OK}\'\n')
    plan = first.plan(SPEC, {})
    tokens = {entry["step_id"]: entry["token"] for entry in plan["ready"]}
    monkeypatch.setenv("RID", plan["run_id"])
    monkeypatch.setenv("TOK", tokens["b"])
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    assert first.step_done(plan["run_id"], "a", {"text": "a"}, tokens["a"])["step_id"] == "fin"
    assert _runs_of_the_command(tmp_path) == ["ran"]
    evaluated = [e for e in first.audit(plan["run_id"])["events"] if e["type"] == "evaluated"]
    assert len(evaluated) == 1


def test_a_run_whose_workspace_is_missing_here_is_refused_not_failed(tmp_path):
    workspace = tmp_path / "elsewhere"
    workspace.mkdir()
    (workspace / "check.sh").write_text(f"echo '{OK}'\n")
    planned = Engine(workspace=workspace, store=open_store(tmp_path / "runs.db"))
    plan = planned.plan(SPEC, {})
    tokens = {entry["step_id"]: entry["token"] for entry in plan["ready"]}
    (workspace / "check.sh").unlink()
    workspace.rmdir()  # as on a teammate's machine sharing the store
    here = Engine(store=open_store(tmp_path / "runs.db"))
    with pytest.raises(EngineError, match="does not exist here") as refused:
        here.step_done(plan["run_id"], "a", {"text": "a"}, tokens["a"])
    assert refused.value.error_type == "workspace_missing"
    status = here.status(plan["run_id"])
    assert status["status"] == "execute_step" and {e["step_id"] for e in status["ready"]} == {"a", "b"}
