"""An evaluate command the MCP server runs does not hold up its other tools: while the call that
released it waits for the command, another tool call is answered and sees the released result
committed and the command running."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp_support import connect

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
      - {id: a, do: "write a note", out: Note}
      - id: check
        after: [a]
        evaluate: {command: "sh check.sh", in: "${a.output.text}", timeout_ms: 60000}
        out: Verdict
"""
# Says it started on one FIFO, then waits to be released on the other.
CHECK = """cat > /dev/null
echo go > started.fifo
read line < release.fifo
echo '{"status": "closed", "children": [], "reason": "checked"}'
"""


async def test_other_tools_answer_while_a_command_runs(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text(CHECK)
    for fifo in ("started.fifo", "release.fifo"):
        os.mkfifo(tmp_path / fifo)
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        plan = await s.ok("lockgate_plan", {"spec": SPEC})
        run_id, done = plan["run_id"], {}

        async def report() -> None:
            done.update(await s.ok("lockgate_step_done", {"run_id": run_id, "step_id": "a", "token": plan["token"],
                                                          "result": {"text": "note"}}))

        async with anyio.create_task_group() as group:
            group.start_soon(report)
            assert await anyio.to_thread.run_sync((tmp_path / "started.fifo").read_text) == "go\n"
            meanwhile = await s.ok("lockgate_status", {"run_id": run_id})
            assert meanwhile["status"] == "evaluating"
            assert [e["step_id"] for e in meanwhile["evaluating"]] == ["check"]
            why = await s.ok("lockgate_why", {"run_id": run_id})
            assert [w["kind"] for w in why["waits"]] == ["evaluate"]
            await anyio.to_thread.run_sync((tmp_path / "release.fifo").write_text, "go\n")
        assert done["status"] == "complete" and done["output"]["reason"] == "checked"


def test_a_command_left_behind_by_a_gone_process_is_answered_with_resume(tmp_path: Path, monkeypatch) -> None:
    """No transport needed: the status handler stops waiting, and the guidance says to resume,
    once every running command is long past its timeout (the process running it is gone)."""
    import time

    from lockgate.engine import evaluate
    from lockgate.engine.engine import Engine
    from lockgate.engine.evaluate import deferred
    from lockgate.mcp.advice import next_steps
    from lockgate.mcp.handlers import ToolContext, status

    engine = Engine(workspace=tmp_path)
    plan = engine.plan(SPEC, {})
    with deferred():  # a process that started the command, then died
        engine.step_done(plan["run_id"], "a", {"text": "note"}, plan["token"])
    ctx = ToolContext(engine, tmp_path)
    assert "lockgate_status with wait_seconds" in next_steps(status(ctx, {"run_id": plan["run_id"]}))
    monkeypatch.setattr(evaluate, "LEFT_BEHIND_GRACE_S", -120.0)  # its timeout is long past
    started = time.monotonic()
    out = status(ctx, {"run_id": plan["run_id"], "wait_seconds": 30})
    assert out["status"] == "evaluating" and time.monotonic() - started < 10
    assert f"Call lockgate_resume with run_id {plan['run_id']}" in next_steps(out)
