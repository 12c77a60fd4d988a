"""The MCP server judges a run with the judge it was driven with by name (real ``lockgate``
processes and a real MCP client over stdio; review s10 F9).

- #5: a run started with ``lockgate run --judge verifier`` (``verifier`` defined in the
  workspace's lockgate.toml, which names no ``judge``) and resumed through ``lockgate_resume``
  has its judged ensures answered by ``verifier``; the server used lockgate.toml's judge only,
  here none, and every judged ensure failed closed ("no judge is configured");
- #2: a gate decision through MCP that runs an evaluate command keeps the recorded judge, so
  ``lockgate resume`` still prints ``--judge NAME`` and a bare resume judges with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
from judged_flows import JUDGE_AGENTS as AGENTS
from mcp_support import connect

SPEC = """version: 1
contracts:
  Answer: {answer: string}
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: research
  research:
    input: {question: string}
    output: {from: "${final.output}", contract: Answer}
    max_rounds: 2
    steps:
      - id: answer
        do: "Answer ${input.question}"
        agent: writer
        out: Answer
        ensure:
          - judged: {statement: "The answer is supported", stakes: default}
      - id: review
        after: [answer]
        gate: {on_approve: check, on_revise: answer, on_kill: null}
      - id: check
        evaluate: {command: "cat > /dev/null; cat verdict.json", timeout_ms: 60000}
        out: Verdict
      - id: final
        after: [check]
        do: "Final"
        agent: writer
        out: Answer
"""


def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def _started(tmp_path: Path) -> str:
    """A run driven with ``--judge verifier`` (lockgate.toml's agent), waiting at its gate."""
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "verdict.json").write_text('{"status": "closed", "children": [], "reason": "ok"}')
    (tmp_path / "lockgate.toml").write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "verifier", "--store", "runs.db", "--no-prompt")
    assert started.returncode == 3, started.stderr
    assert _judged(tmp_path) == 1
    return json.loads(started.stdout)["run_id"]


def _judged(tmp_path: Path) -> int:
    return (tmp_path / "judged.log").read_text().count("judged")


def test_an_mcp_resume_judges_with_the_recorded_judge(tmp_path: Path) -> None:
    run_id = _started(tmp_path)
    assert _lockgate(tmp_path, "gate", "revise", run_id, "review", "--note", "again", "--store",
                     "runs.db").returncode == 0

    async def main() -> dict:
        async with connect(tmp_path / "runs.db", tmp_path) as session:
            resumed = await session.ok("lockgate_resume", {"run_id": run_id})
            assert (resumed["status"], resumed["step_id"]) == ("execute_step", "answer")
            return await session.ok("lockgate_step_done", {"run_id": run_id, "step_id": "answer",
                                                           "token": resumed["token"], "result": {"answer": "a"}})

    done = anyio.run(main)
    assert done["status"] == "await_gate", done  # judged, held by verifier: at the gate for round 2
    assert _judged(tmp_path) == 2


def test_an_mcp_decision_running_a_command_keeps_the_recorded_judge(tmp_path: Path) -> None:
    run_id = _started(tmp_path)

    async def main() -> dict:
        async with connect(tmp_path / "runs.db", tmp_path) as session:
            gate = (await session.ok("lockgate_status", {"run_id": run_id}))["gates"][0]
            return await session.ok("lockgate_gate_resolve", {
                "run_id": run_id, "step_id": "review", "outcome": "approve", "rationale": "fine",
                "resolved_by": "agent", "token": gate["token"]})

    decided = anyio.run(main)
    assert (decided["status"], decided["step_id"]) == ("execute_step", "final"), decided  # check ran here
    shown = _lockgate(tmp_path, "resume", run_id, "--store", "runs.db")
    assert f"lockgate run --resume {run_id} --agents agents.py --store runs.db --judge verifier" in shown.stdout


OTHER = """from pathlib import Path

def other(task):
    with open(Path(__file__).with_name("other.log"), "a") as log:
        log.write("judged\\n")
    return {"holds": True, "reason": "ok"}
"""


def _revised(folder: Path, store: Path, judge: str) -> str:
    """A run driven in ``folder`` with ``--judge judge``, sent back to its answer step (a revise
    reaches no judged ensure: taken from anywhere)."""
    folder.mkdir(exist_ok=True)
    (folder / "flow.stratum.yaml").write_text(SPEC)
    (folder / "agents.py").write_text(AGENTS)
    (folder / "lockgate.toml").write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    started = _lockgate(folder, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", judge, "--store", str(store), "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    revised = _lockgate(folder, "gate", "revise", run_id, "review", "--note", "again", "--store", str(store))
    assert revised.returncode == 0, revised.stderr
    return run_id


def _step_done_refused(store: Path, workspace: Path, run_id: str) -> tuple[str, dict]:
    """lockgate_resume, then lockgate_step_done of the answer step (whose judged ensure needs the
    run's judge), which must be refused; (its message, the run's status after)."""

    async def main() -> tuple[str, dict]:
        async with connect(store, workspace) as session:
            resumed = await session.ok("lockgate_resume", {"run_id": run_id})
            assert (resumed["status"], resumed["step_id"]) == ("execute_step", "answer")
            message, _ = await session.refused("lockgate_step_done", {
                "run_id": run_id, "step_id": "answer", "token": resumed["token"], "result": {"answer": "a"}})
            return message, await session.ok("lockgate_status", {"run_id": run_id})

    return anyio.run(main)


def test_an_mcp_server_finding_another_configuration_refuses_to_judge(tmp_path: Path) -> None:
    """Review s10 F12 #3: a server in b/ judged a run driven in a/ with b/lockgate.toml's own
    ``verifier`` (another adapter), which ``lockgate run --resume`` from b/ refuses."""
    a, b, store = tmp_path / "a", tmp_path / "b", tmp_path / "runs.db"
    run_id = _revised(a, store, "verifier")
    b.mkdir()
    (b / "agents.py").write_text(OTHER)
    (b / "lockgate.toml").write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:other"\n')
    message, status = _step_done_refused(store, b, run_id)
    assert f"resolved through {a / 'lockgate.toml'}" in message, message
    assert f"--config {a / 'lockgate.toml'} --agents {a / 'agents.py'} --judge verifier" in message, message
    assert not (b / "other.log").exists()
    assert [entry["step_id"] for entry in status["ready"]] == ["answer"], status  # nothing changed
    assert _judged(a) == 1


def test_an_mcp_server_refuses_to_judge_without_the_drives_python_judge(tmp_path: Path) -> None:
    """Review s10 F12 #1: the judge was a function of the drive's --agents module, which the
    server cannot have; before, lockgate.toml's judge (here none) answered: the ensure failed."""
    store = tmp_path / "runs.db"
    run_id = _revised(tmp_path, store, "judge")
    message, status = _step_done_refused(store, tmp_path, run_id)
    assert "a Python function of the --agents module" in message, message
    assert f"--agents {tmp_path / 'agents.py'} --judge judge" in message, message
    assert [entry["step_id"] for entry in status["ready"]] == ["answer"], status
