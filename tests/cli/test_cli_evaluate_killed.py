"""``lockgate run`` killed (SIGKILL) while an evaluate command runs loses nothing reported: the
result that released the command was committed before the command started, so ``lockgate run
--resume`` runs the command again and asks no agent again. The killed runner's command does not
run on beside the new one: it dies with the runner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from cli_support import fifo_lines, lockgate_argv, lockgate_env
from processes import running, wait_until

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${check.output}", contract: Verdict}
    steps:
      - {id: write, agent: writer, do: "write", out: Note}
      - id: check
        after: [write]
        evaluate: {command: "sh check.sh", in: "${write.output.text}", timeout_ms: 120000}
        out: Verdict
"""
AGENTS = """
def writer(task):
    with open("calls.log", "a") as log:
        log.write(task.step_id + "\\n")
    return {"text": "written"}
"""
# The first run reads its input, says it started (its pid in `started`, a line on the FIFO) and
# never ends on its own; the run after a resume answers at once.
CHECK = """
if [ -f started ]; then cat > seen; echo '{"status": "closed", "children": [], "reason": "checked"}'; exit 0; fi
cat > /dev/null
echo $$ > started
echo go > running.fifo
exec sleep 600
"""


def test_a_run_killed_during_a_command_resumes_without_asking_the_agent_again(tmp_path: Path) -> None:
    for name, text in (("flow.stratum.yaml", SPEC), ("agents.py", AGENTS), ("check.sh", CHECK)):
        (tmp_path / name).write_text(text)
    os.mkfifo(tmp_path / "running.fifo")
    args = ("--agents", "agents.py", "--store", "runs.db", "--no-prompt")
    first = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", *args), cwd=tmp_path, env=lockgate_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert fifo_lines(tmp_path / "running.fifo", 1, [first]) == "go\n"
    command = int((tmp_path / "started").read_text())
    first.kill()
    first.communicate()
    try:  # the command dies with the runner (its guardian kills it): none is left running
        wait_until(lambda: not running(command), "the killed runner's command to die with it")
    finally:
        if running(command):
            os.kill(command, signal.SIGKILL)
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    (run,) = engine.runs()
    status = engine.status(run["run_id"])
    assert status["status"] == "evaluating" and [e["step_id"] for e in status["evaluating"]] == ["check"]
    engine.close()

    resumed = subprocess.run(lockgate_argv("run", "--resume", run["run_id"], *args), cwd=tmp_path, env=lockgate_env(),
                             capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["reason"] == "checked"
    assert (tmp_path / "calls.log").read_text() == "write\n"  # the agent was asked once
    assert (tmp_path / "seen").read_text() == '"written"'
