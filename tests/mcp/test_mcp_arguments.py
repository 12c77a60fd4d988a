"""Malformed tool arguments: clear tool errors naming each problem, and nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import CHECKED, REVIEWED, connect

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError
from lockgate.mcp.handlers import ToolContext
from lockgate.mcp.server import call_tool, check_arguments
from lockgate.mcp.tools import BY_NAME

RUN = "@run"
TOKEN = "@token"


def _fill(arguments: dict, run: str, token: str) -> dict:
    return {k: (run if v == RUN else token if v == TOKEN else v) for k, v in arguments.items()}


# (tool, arguments, words the message must contain)
MALFORMED = [
    ("lockgate_step_done", {"run_id": RUN, "step_id": "a", "result": {"text": "long enough"}},
     ["missing required argument `token`"]),
    ("lockgate_step_done", {"run_id": RUN, "step_id": "a", "tokn": TOKEN, "result": {"text": "long enough"}},
     ["unknown argument `tokn`", "did you mean `token`"]),
    ("lockgate_step_done", {"run_id": RUN, "step_id": "a", "token": TOKEN},
     ["exactly one of `result`", "`failure`"]),
    ("lockgate_step_done", {"run_id": RUN, "step_id": "a", "token": TOKEN, "result": {"text": "ok!"},
                            "failure": "both"}, ["exactly one of `result`"]),
    ("lockgate_step_done", {"run_id": RUN, "step_id": 7, "token": TOKEN, "result": {}},
     ["argument step_id must be of type string, not integer"]),
    ("lockgate_step_done", {"run_id": RUN, "step_id": "a", "token": "", "result": {}}, ["argument token"]),
    ("lockgate_step_done", {"run_id": RUN, "step_id": "a", "token": TOKEN, "result": {}, "usage": [1]},
     ["argument usage must be of type object, not array"]),
    ("lockgate_gate_resolve", {"run_id": RUN, "step_id": "a", "outcome": "maybe", "rationale": "",
                               "resolved_by": "human", "token": TOKEN},
     ["argument outcome must be one of approve, revise, kill, reject, not 'maybe'"]),
    ("lockgate_gate_resolve", {"run_id": RUN, "step_id": "a", "outcome": "approve", "token": TOKEN},
     ["missing required argument `rationale`", "missing required argument `resolved_by`"]),
    ("lockgate_commit", {"run_id": RUN, "label": ""}, ["argument label"]),
    ("lockgate_commit", {"run_id": RUN, "label": ["x"]}, ["argument label must be of type string, not array"]),
    ("lockgate_revert", {"run_id": RUN}, ["missing required argument `label`"]),
    ("lockgate_cancel", {"run": RUN}, ["missing required argument `run_id`", "unknown argument `run`"]),
    ("lockgate_status", {"run_id": RUN, "wait_seconds": 100000}, ["argument wait_seconds"]),
    ("lockgate_status", {"run_id": RUN, "wait_seconds": "soon"}, ["must be of type number"]),
    ("lockgate_plan", {"spec": CHECKED, "path": "x.yaml", "inputs": {"topic": "t"}},
     ["exactly one of `spec`", "got both"]),
    ("lockgate_plan", {"inputs": {"topic": "t"}}, ["exactly one of `spec`", "got neither"]),
    ("lockgate_plan", {"spec": CHECKED, "inputs": "topic=t"}, ["argument inputs must be of type object, not string"]),
    ("lockgate_runs", {"limit": 0}, ["argument limit"]),
    ("lockgate_runs", {"status": "done"}, ["must be one of"]),
    ("lockgate_graph", {}, ["give `spec`", "`run_id`"]),
    ("lockgate_graph", {"run_id": RUN, "flow": "main"}, ["give `run_id` alone"]),
    ("lockgate_nope", {"run_id": RUN}, ["unknown tool 'lockgate_nope'", "lockgate_plan"]),
]


async def test_malformed_arguments_are_refused_clearly_and_change_nothing(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run, token = first["run_id"], first["token"]
        gate_run = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
        before = {r: (await s.ok("lockgate_audit", {"run_id": r}))["events"] for r in (run, gate_run["run_id"])}
        for tool, arguments, words in MALFORMED:
            message, data = await s.refused(tool, _fill(arguments, run, token))
            assert data["error_type"] == "invalid_arguments", (tool, message)
            assert "nothing was changed" in message
            for word in words:
                assert word in message, (tool, message)
        raw = await s.raw("lockgate_step_done", None)
        assert raw.is_error and "missing required argument `run_id`" in raw.content[0].text
        after = {r: (await s.ok("lockgate_audit", {"run_id": r}))["events"] for r in before}
        assert after == before
        assert len((await s.ok("lockgate_runs"))["runs"]) == 2
        # the run still takes the original, untouched dispatch
        done = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": token,
                                                 "result": {"text": "long enough"}})
        assert done["status"] == "execute_step" and done["step_id"] == "b"


async def test_engine_refusals_keep_their_machine_readable_form(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        message, data = await s.refused("lockgate_step_done", {"run_id": first["run_id"], "step_id": "zz",
                                                                "token": first["token"], "result": {}})
        assert data == {"status": "error", "error_type": "unknown_step", "run_id": first["run_id"],
                        "step_id": "zz", "message": f"run {first['run_id']} has no step 'zz'"}
        assert "lockgate_status" in message
        message, data = await s.refused("lockgate_gate_resolve", {
            "run_id": first["run_id"], "step_id": "a", "outcome": "approve", "rationale": "",
            "resolved_by": "agent", "token": first["token"]})
        assert data["error_type"] == "not_awaiting" and "is ready" in message
        message, data = await s.refused("lockgate_commit", {"run_id": first["run_id"], "label": "   "})
        assert data["error_type"] == "invalid_label"


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(EngineError) as caught:
        check_arguments(BY_NAME["lockgate_gate_resolve"], {"run_id": 3, "outcome": "yes", "extra": 1})
    problems = caught.value.detail["problems"]
    assert "argument run_id must be of type string, not integer" in problems
    assert any("outcome must be one of" in p for p in problems)
    assert any(p.startswith("unknown argument `extra`") for p in problems)
    assert {"missing required argument `step_id`", "missing required argument `token`"} <= set(problems)


def test_a_failing_handler_is_an_internal_tool_error_not_a_crash(tmp_path: Path) -> None:
    ctx = ToolContext(Engine(store=open_store("memory")), tmp_path)
    ctx.engine.why = lambda run_id: 1 / 0  # type: ignore[method-assign]
    failed = call_tool(ctx, "lockgate_why", {"run_id": "r"})
    assert failed.is_error and failed.content[0].text.startswith("internal_error: ZeroDivisionError")
    assert failed.structured_content["error_type"] == "internal_error"
