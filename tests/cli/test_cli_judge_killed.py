"""``lockgate run`` killed (SIGKILL) while a judge answers about a step's result loses nothing
reported: the result was held on its step before the judge was asked, so ``lockgate run
--resume`` reports it again (asking the judge again) without asking the agent again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_support import fifo_lines, lockgate_argv, lockgate_env

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${write.output}", contract: Note}
    steps:
      - id: write
        agent: writer
        do: "write"
        out: Note
        ensure:
          - judged: {statement: "the note is written"}
"""
# The writer logs each call. The judge's first call says it started, then waits on a FIFO nobody
# writes (the test kills the process meanwhile); a later call answers at once.
AGENTS = """
import os

def writer(task):
    with open("calls.log", "a") as log:
        log.write("writer\\n")
    return {"text": "written"}

def judge(task):
    with open("calls.log", "a") as log:
        log.write("judge\\n")
    if not os.path.exists("judged-once"):
        open("judged-once", "w").close()
        with open("judging.fifo", "w") as fifo:
            fifo.write("go\\n")
        with open("never.fifo") as fifo:
            fifo.read()
    return {"holds": True, "reason": "it is written"}
"""


def test_a_run_killed_while_the_judge_answers_resumes_without_asking_the_agent_again(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    for fifo in ("judging.fifo", "never.fifo"):
        os.mkfifo(tmp_path / fifo)
    args = ("--agents", "agents.py", "--judge", "judge", "--store", "runs.db", "--no-prompt")
    first = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", *args), cwd=tmp_path, env=lockgate_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert fifo_lines(tmp_path / "judging.fifo", 1, [first]) == "go\n"
    finally:
        first.kill()
        first.communicate()
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    (run,) = engine.runs()
    (dispatch,) = engine.status(run["run_id"])["ready"]
    held = dispatch["reported"]  # held while the judge answered, with the call's measured time if it took 1 ms or more
    assert held["result"] == {"text": "written"} and set(held) <= {"result", "usage"}
    assert set(held.get("usage", {})) <= {"ms"}
    engine.close()

    resumed = subprocess.run(lockgate_argv("run", "--resume", run["run_id"], *args), cwd=tmp_path,
                             env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"text": "written"}
    assert (tmp_path / "calls.log").read_text().split() == ["writer", "judge", "judge"]
