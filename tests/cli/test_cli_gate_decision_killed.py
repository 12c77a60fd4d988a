"""A gate decision whose transition asks a judge (a ``set`` step with a judged ensure right after
the gate) is held on the gate first: ``lockgate gate approve`` killed (SIGKILL) while the judge
answers loses nothing a person decided, and ``lockgate run --resume`` applies the decision again
(asking the judge again) without asking anyone. Real subprocesses; the judge is a command agent
held on a FIFO."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_support import fifo_lines, lockgate_argv, lockgate_env
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = note_flow("""      - {id: draft, agent: writer, do: "draft", out: Note}
      - {id: ok, after: [draft], gate: {on_approve: stamp, on_revise: null, on_kill: null}}
      - id: stamp
        set: {text: "'approved'"}
        out: Note
        ensure:
          - judged: {statement: "the note is approved"}
""", output="stamp")
AGENTS = """
def writer(task):
    with open("calls.log", "a") as log:
        log.write("writer\\n")
    return {"text": "draft"}
"""
# The judge logs each call; its first call says it started, then waits on a FIFO nobody writes
# (the test kills the process meanwhile); a later call answers at once.
JUDGE = """import json, os, sys
json.load(sys.stdin)
with open("calls.log", "a") as log:
    log.write("judge\\n")
if not os.path.exists("judged-once"):
    open("judged-once", "w").close()
    with open("judging.fifo", "w") as fifo:
        fifo.write("go\\n")
    with open("never.fifo") as fifo:
        fifo.read()
print(json.dumps({"holds": True, "reason": "it says approved"}))
"""
CONFIG = """judge = "referee"

[agents.referee]
type = "command"
command = ["{python}", "judge.py"]
"""


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=tmp_path, env=lockgate_env(), capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_gate_decision_killed_while_the_judge_answers_is_applied_again_on_resume(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "judge.py").write_text(JUDGE)
    (tmp_path / "lockgate.toml").write_text(CONFIG.format(python=sys.executable))
    for fifo in ("judging.fifo", "never.fifo"):
        os.mkfifo(tmp_path / fifo)
    args = ("--agents", "agents.py", "--store", "runs.db", "--no-prompt")
    waiting = _cli(tmp_path, "run", "flow.stratum.yaml", *args)
    assert waiting.returncode == 3, waiting.stderr
    run_id = json.loads(waiting.stdout)["run_id"]

    deciding = subprocess.Popen(lockgate_argv("gate", "approve", run_id, "ok", "--note", "ship it", "--store",
                                              "runs.db"), cwd=tmp_path, env=lockgate_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert fifo_lines(tmp_path / "judging.fifo", 1, [deciding]) == "go\n"
    finally:
        deciding.kill()
        deciding.communicate()
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    (gate,) = engine.status(run_id)["gates"]
    assert gate["decided"] == {"outcome": "approve", "rationale": "ship it", "resolved_by": "human"}
    (wait,) = engine.why(run_id)["waits"]
    assert "was decided (approve, by human) before the process applying it stopped" in wait["reason"]
    assert wait["commands"][0].startswith(f"lockgate run --resume {run_id}")
    engine.close()

    resumed = _cli(tmp_path, "run", "--resume", run_id, *args)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"text": "approved"}
    assert (tmp_path / "calls.log").read_text().split() == ["writer", "judge", "judge"]
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    (ok,) = [t for t in engine.audit(run_id)["trace"] if t["step_id"] == "ok"]
    engine.close()
    assert [d["rationale"] for d in ok["decisions"]] == ["ship it"]
