"""The MCP server asks the judge its workspace's lockgate.toml names for ``judged`` ensures (a
real MCP client over stdio, the judge a real command agent): a verdict that holds passes the
step, one that does not hands its reason back as the violation, and while the judge thinks the
other tools answer (the server's lock is left for the wait)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp_support import connect
from specs import note_flow

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Note}
    steps:
      - id: a
        do: "write a note"
        out: Note
        ensure:
          - judged: {statement: "the note is polite"}
        attempts: 2
"""
# The judge (a command agent): says it started on one FIFO, waits to be released on the other,
# then judges: a note holding "please" is polite.
JUDGE = """import json, sys
task = json.load(sys.stdin)
with open("started.fifo", "w") as fifo:
    fifo.write("go\\n")
with open("release.fifo") as fifo:
    fifo.read()
polite = "please" in json.dumps(task["inputs"]["result"])
print(json.dumps({"holds": polite, "reason": "it says please" if polite else "it does not say please"}))
"""
CONFIG = """judge = "referee"

[agents.referee]
type = "command"
command = ["{python}", "judge.py"]
"""


def _project(folder: Path) -> None:
    (folder / "judge.py").write_text(JUDGE)
    (folder / "lockgate.toml").write_text(CONFIG.format(python=sys.executable))
    for fifo in ("started.fifo", "release.fifo"):
        os.mkfifo(folder / fifo)


async def test_the_workspaces_judge_answers_judged_ensures_while_other_tools_go_on(tmp_path: Path) -> None:
    _project(tmp_path)
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        plan = await s.ok("lockgate_plan", {"spec": SPEC})
        run_id, answers = plan["run_id"], []

        async def report(token: str, text: str) -> None:
            answers.append(await s.ok("lockgate_step_done", {"run_id": run_id, "step_id": "a", "token": token,
                                                             "result": {"text": text}}))

        async def judged(token: str, text: str) -> dict:
            async with anyio.create_task_group() as group:
                group.start_soon(report, token, text)
                assert await anyio.to_thread.run_sync((tmp_path / "started.fifo").read_text) == "go\n"
                meanwhile = await s.ok("lockgate_status", {"run_id": run_id})  # the judge is thinking
                (held,) = meanwhile["ready"]
                assert held["reported"] == {"result": {"text": text}}  # held on its step while judged
                await anyio.to_thread.run_sync((tmp_path / "release.fifo").write_text, "go\n")
            return answers[-1]

        refused = await judged(plan["token"], "hand it over")
        assert refused["status"] == "ensure_failed"
        assert any("it does not say please" in str(v) for v in refused["violations"])
        done = await judged(refused["token"], "hand it over, please")
        assert done["status"] == "complete" and done["output"] == {"text": "hand it over, please"}


AFTER_A_COMMAND = note_flow("""      - {id: a, do: "write a note", out: Note}
      - id: c
        after: [a]
        evaluate: {command: "cat > /dev/null; echo ran >> runs.log; cat verdict.json", timeout_ms: 20000}
        out: Verdict
      - id: s
        after: [c]
        set: {status: "result.c.status", children: "result.c.children", reason: "'judged'"}
        out: Verdict
        ensure:
          - judged: {statement: "the verdict is fine"}
""", output="s", contract="Verdict")
JUDGE_AT_ONCE = """import json, sys
json.load(sys.stdin)
print(json.dumps({"holds": True, "reason": "fine"}))
"""


async def test_a_judged_ensure_reached_after_a_command_the_server_ran_is_judged_in_the_same_call(
        tmp_path: Path) -> None:
    """The command's answer is settled in a transaction after the call's first one; the verdict
    it needs is asked there (replaying the whole call found its result a duplicate, and the
    command's answer was lost with the run stuck evaluating)."""
    (tmp_path / "judge.py").write_text(JUDGE_AT_ONCE)
    (tmp_path / "lockgate.toml").write_text(CONFIG.format(python=sys.executable))
    (tmp_path / "verdict.json").write_text('{"status": "closed", "children": [], "reason": "ok"}')
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        plan = await s.ok("lockgate_plan", {"spec": AFTER_A_COMMAND})
        done = await s.ok("lockgate_step_done", {"run_id": plan["run_id"], "step_id": "a", "token": plan["token"],
                                                 "result": {"text": "hi"}})
    assert done["status"] == "complete" and done["output"] == {"status": "closed", "children": [], "reason": "judged"}
    assert (tmp_path / "runs.log").read_text() == "ran\n"
