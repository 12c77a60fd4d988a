"""The MCP server driven by a real MCP client over stdio: full flows, gates decided by another
process, checkpoints, resume from a new session, token fencing."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp_support import CHECKED, REVIEWED, connect, lockgate_cli
from specs import fan_spec

from lockgate.engine import Engine
from lockgate.engine.store import open_store

BRIEF_TOOLS = {"lockgate_validate", "lockgate_plan", "lockgate_step_done", "lockgate_gate_resolve",
               "lockgate_audit", "lockgate_commit", "lockgate_revert", "lockgate_cancel", "lockgate_resume",
               "lockgate_runs", "lockgate_gates", "lockgate_graph", "lockgate_why"}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def _events(store: Path, run_id: str) -> list[dict]:
    engine = Engine(store=open_store(store))
    try:
        return [e.to_dict() for e in engine.store.events(run_id)]
    finally:
        engine.close()


async def test_tools_are_listed_with_strict_schemas_and_the_server_teaches_the_protocol(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        listed = (await s.client.list_tools()).tools
        instructions = s.client.instructions or ""
    names = {t.name for t in listed}
    assert BRIEF_TOOLS <= names
    for tool in listed:
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert not {"anyOf", "oneOf", "allOf"} & set(tool.input_schema)
        assert all("description" in p for p in tool.input_schema["properties"].values())
        assert len(tool.description or "") > 60
        assert tool.name in instructions
    by_name = {t.name: t for t in listed}
    assert by_name["lockgate_audit"].annotations.read_only_hint is True
    assert by_name["lockgate_revert"].annotations.destructive_hint is True
    assert "lockgate_step_done" in by_name["lockgate_plan"].description
    assert "violations" in by_name["lockgate_step_done"].description


async def test_a_flow_with_a_rejected_result_a_stale_token_and_a_retry_completes(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run = first["run_id"]
        assert first["status"] == "execute_step" and first["step_id"] == "a"
        assert first["ensure"] == ["len(result.text) > 3"] and first["retries_remaining"] == 1
        assert first["output_schema"]["properties"] == {"text": {"type": "string"}}

        rejected = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": first["token"],
                                                     "result": {"text": "no"}})
        assert rejected["status"] == "ensure_failed" and rejected["step_id"] == "a"
        assert rejected["violations"][0]["ensure"] == "len(result.text) > 3"
        assert rejected["retries_remaining"] == 0 and rejected["token"] != first["token"]
        before = _events(store, run)
        message, data = await s.refused("lockgate_step_done", {"run_id": run, "step_id": "a",
                                                                "token": first["token"], "result": {"text": "long"}})
        assert data["error_type"] == "stale_token" and data["reason"] == "stale"
        assert message.startswith("stale_token:") and "lockgate_status" in message
        assert _events(store, run) == before

        raw = await s.raw("lockgate_step_done", {"run_id": run, "step_id": "a", "token": rejected["token"],
                                                 "result": {"text": "tiny"}})
        guidance = raw.content[-1].text
        assert "lockgate_step_done" in guidance and raw.structured_content["step_id"] == "b"
        message, data = await s.refused("lockgate_step_done", {"run_id": run, "step_id": "a",
                                                                "token": rejected["token"], "result": {"text": "tiny"}})
        assert data["error_type"] == "stale_token" and data["reason"] == "duplicate"
        assert "already accepted" in message

        second = raw.structured_content
        done = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "b", "token": second["token"],
                                                 "result": {"text": "A polished note"}})
        assert done["status"] == "complete" and done["output"] == {"text": "A polished note"}
        assert [t["step_id"] for t in done["trace"]] == ["a", "b"]

        audit = await s.ok("lockgate_audit", {"run_id": run})
        assert audit["status"] == "complete" and audit["steps_completed"] == 2
        assert audit["trace"][0]["attempts"] == 2
        assert [e["seq"] for e in audit["events"]] == list(range(1, len(audit["events"]) + 1))
        listed = await s.ok("lockgate_runs", {"status": "complete"})
        assert [r["run_id"] for r in listed["runs"]] == [run]


async def test_schema_failures_and_exhausted_retries_report_the_engines_statuses(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run = first["run_id"]
        bad = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": first["token"],
                                                "result": {"text": 5, "extra": True}})
        assert bad["status"] == "schema_failed"
        paths = {v["path"] for v in bad["violations"]}
        assert {"result.text", "result.extra"} <= paths
        failed = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": bad["token"],
                                                   "failure": "the tool crashed"})
        assert failed["status"] == "error" and failed["error_type"] == "retries_exhausted"
        message, data = await s.refused("lockgate_step_done", {"run_id": run, "step_id": "a",
                                                                "token": bad["token"], "failure": "again"})
        assert data["error_type"] in ("run_finished", "stale_token")
        why = await s.ok("lockgate_why", {"run_id": run})
        assert why["status"] == "failed" and why["waits"][0]["kind"] == "finished"


async def test_invalid_specs_and_inputs_start_nothing_and_say_what_to_fix(store, tmp_path) -> None:
    broken = CHECKED.replace("${a.output.text}", "${a.output.txt}")
    async with connect(store, tmp_path) as s:
        report = await s.ok("lockgate_validate", {"spec": broken})
        assert report["valid"] is False
        error = report["errors"][0]
        assert error["code"].startswith("LG") and "txt" in error["message"]
        assert error["range"]["start"]["line"] == CHECKED.splitlines().index('        do: "Polish ${a.output.text}"')
        message, data = await s.refused("lockgate_plan", {"spec": broken, "inputs": {"topic": "tea"}})
        assert data["error_type"] == "spec_invalid" and data["errors"][0]["code"] == error["code"]
        assert f"{error['range']['start']['line'] + 1}:" in message and "lockgate_validate" in message
        message, data = await s.refused("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": 3}})
        assert data["error_type"] == "input_validation_failed"
        assert "input.topic" in message and "no run was started" in message
        message, data = await s.refused("lockgate_plan", {"spec": CHECKED, "flow": "other"})
        assert data["error_type"] == "unknown_flow" and "main" in message
        assert (await s.ok("lockgate_runs"))["runs"] == []
        assert (await s.ok("lockgate_validate", {"spec": CHECKED}))["valid"] is True


async def test_a_spec_file_relative_to_the_workspace_and_graphs_of_specs_and_runs(store, tmp_path) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "review.stratum.yaml").write_text(REVIEWED)
    async with connect(store, tmp_path) as s:
        assert (await s.ok("lockgate_validate", {"path": "flows/review.stratum.yaml"}))["valid"] is True
        drawn = await s.ok("lockgate_graph", {"path": "flows/review.stratum.yaml"})
        assert drawn["flow"] == "reviewed_work" and drawn["mermaid"].startswith("flowchart TD")
        assert "review" in drawn["mermaid"] and "revise" in drawn["mermaid"]  # the gate and its back-edge
        first = await s.ok("lockgate_plan", {"path": "flows/review.stratum.yaml", "inputs": {"text": "a poem"}})
        run_graph = await s.ok("lockgate_graph", {"run_id": first["run_id"]})
        assert run_graph["statuses"] == {"work": "ready", "review": "pending"}
        assert "classDef ready" in run_graph["mermaid"]
        message, data = await s.refused("lockgate_plan", {"path": "flows/missing.yaml"})
        assert data["error_type"] == "invalid_arguments" and "cannot read spec file" in message


async def test_a_gate_decided_by_a_person_at_the_cli_is_seen_by_the_agent(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "a poem"}})
        run = first["run_id"]
        gate = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": first["token"],
                                                 "result": {"result": "roses", "quality_score": 0.9}})
        assert gate["status"] == "await_gate" and gate["step_id"] == "review"
        pending = await s.ok("lockgate_gates", {"run_id": run})
        assert [g["step_id"] for g in pending["gates"]] == ["review"]
        assert (await s.ok("lockgate_gates"))["gates"][0]["token"] == gate["token"]

        cli = lockgate_cli("gate", "revise", run, "review", "--note", "more colour", "--store", str(store))
        assert cli.returncode == 0, cli.stderr
        raw = await s.raw("lockgate_status", {"run_id": run})
        revised = raw.structured_content
        assert revised["status"] == "execute_step" and revised["step_id"] == "work"
        assert raw.content[-1].text == "Step work was sent back by gate review for revision: more colour"
        assert revised["attempt"] == 1 and revised["token"] != first["token"]
        message, data = await s.refused("lockgate_gate_resolve", {
            "run_id": run, "step_id": "review", "outcome": "approve", "rationale": "late", "resolved_by": "agent",
            "token": gate["token"]})
        assert data["error_type"] in ("not_awaiting", "stale_token") and "lockgate_status" in message

        again = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": revised["token"],
                                                  "result": {"result": "crimson roses", "quality_score": 0.95}})
        assert again["status"] == "await_gate"

        async def approve_elsewhere() -> None:
            done = await anyio.to_thread.run_sync(
                lambda: lockgate_cli("gate", "approve", run, "review", "--note", "lovely", "--store", str(store)))
            assert done.returncode == 0, done.stderr

        async with anyio.create_task_group() as tg:
            tg.start_soon(approve_elsewhere)
            waited = await s.ok("lockgate_status", {"run_id": run, "wait_seconds": 30})
        assert waited["status"] == "complete"
        assert waited["output"] == {"result": "crimson roses", "quality_score": 0.95}
        audit = await s.ok("lockgate_audit", {"run_id": run})
        decisions = [e["detail"]["decision"] for e in audit["events"] if e["type"] == "gate_resolved"]
        assert decisions == ["revise", "approve"]


async def test_the_agent_decides_a_gate_and_a_kill_ends_the_run(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "a poem"}})
        run = first["run_id"]
        gate = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": first["token"],
                                                 "result": {"result": "roses", "quality_score": 0.9}})
        killed = await s.ok("lockgate_gate_resolve", {"run_id": run, "step_id": "review", "outcome": "kill",
                                                       "rationale": "off topic", "resolved_by": "human",
                                                       "token": gate["token"]})
        assert killed["status"] == "killed" and killed["rationale"] == "off topic"
        drawn = await s.ok("lockgate_graph", {"run_id": run})
        assert drawn["statuses"]["review"] == "killed"


async def test_checkpoint_and_revert_replace_tokens_and_revive_a_finished_run(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run = first["run_id"]
        second = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": first["token"],
                                                   "result": {"text": "a first note"}})
        committed = await s.ok("lockgate_commit", {"run_id": run, "label": "after-a"})
        assert committed == {"status": "committed", "run_id": run, "label": "after-a", "step_number": 2,
                             "current_step_id": "b", "checkpoints": ["after-a"]}
        done = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "b", "token": second["token"],
                                                 "result": {"text": "done"}})
        assert done["status"] == "complete"
        reverted = await s.ok("lockgate_revert", {"run_id": run, "label": "after-a"})
        assert reverted["reverted_to"] == "after-a" and reverted["status"] == "execute_step"
        assert reverted["step_id"] == "b" and reverted["token"] != second["token"]
        _, data = await s.refused("lockgate_step_done", {"run_id": run, "step_id": "b", "token": second["token"],
                                                         "result": {"text": "old"}})
        assert data["error_type"] == "stale_token"
        message, data = await s.refused("lockgate_revert", {"run_id": run, "label": "nowhere"})
        assert data["error_type"] == "checkpoint_not_found" and "lockgate_commit" in message
        final = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "b", "token": reverted["token"],
                                                  "result": {"text": "redone"}})
        assert final["status"] == "complete" and final["output"] == {"text": "redone"}


async def test_a_new_session_resumes_a_run_it_did_not_start(store, tmp_path) -> None:
    async with connect(store, tmp_path, mode="legacy") as s:
        assert s.client.server_info.name == "lockgate"
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run = first["run_id"]
        second = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "a", "token": first["token"],
                                                   "result": {"text": "a first note"}})
    async with connect(store, tmp_path) as fresh:
        assert [r["run_id"] for r in (await fresh.ok("lockgate_runs", {"status": "running"}))["runs"]] == [run]
        resumed = await fresh.ok("lockgate_resume", {"run_id": run})
        assert resumed["status"] == "execute_step" and resumed["step_id"] == "b"
        assert resumed["token"] == second["token"] and resumed["digest"] == first["digest"]
        done = await fresh.ok("lockgate_step_done", {"run_id": run, "step_id": "b", "token": resumed["token"],
                                                     "result": {"text": "finished by another session"}})
        assert done["status"] == "complete"
        message, data = await fresh.refused("lockgate_resume", {"run_id": "0123456789abcdef"})
        assert data["error_type"] == "run_not_found" and "lockgate_runs" in message


async def test_cancel_burns_tokens_and_reports_finished_runs(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run = first["run_id"]
        assert (await s.ok("lockgate_cancel", {"run_id": run}))["status"] == "cancelled"
        again = await s.ok("lockgate_cancel", {"run_id": run})
        assert again["reason"] == "already_cancelled"
        message, data = await s.refused("lockgate_step_done", {"run_id": run, "step_id": "a",
                                                                "token": first["token"], "result": {"text": "late"}})
        assert data["error_type"] == "run_cancelled" and "lockgate_plan" in message
        # the JSON text block carries the same dict as the structured content
        raw = await s.raw("lockgate_audit", {"run_id": run})
        assert json.loads(raw.content[0].text) == raw.structured_content


WRITES_A_FILE = """
version: 1
contracts:
  Written:
    path: string
flows:
  entry: main
  main:
    input:
      name: string
    output:
      from: "${write.output}"
      contract: Written
    steps:
      - id: write
        do: "Write a greeting for ${input.name} into a file and report its path"
        out: Written
        ensure:
          - expr: "file_exists(result.path)"
          - expr: "file_contains(result.path, 'hello')"
"""


async def test_file_postconditions_check_the_agents_work_in_the_workspace(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": WRITES_A_FILE, "inputs": {"name": "Ada"}})
        run = first["run_id"]
        missing = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "write", "token": first["token"],
                                                    "result": {"path": "greeting.txt"}})
        assert missing["status"] == "ensure_failed"
        assert [v["ensure"] for v in missing["violations"]][0] == "file_exists(result.path)"
        (tmp_path / "greeting.txt").write_text("hello, Ada\n")
        done = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "write", "token": missing["token"],
                                                 "result": {"path": "greeting.txt"}})
        assert done["status"] == "complete"
        escaped = await s.ok("lockgate_plan", {"spec": WRITES_A_FILE, "inputs": {"name": "Eve"}})
        outside = await s.ok("lockgate_step_done", {"run_id": escaped["run_id"], "step_id": "write",
                                                    "token": escaped["token"], "result": {"path": "../../etc/passwd"}})
        assert outside["status"] == "ensure_failed"


async def test_an_agent_works_through_parallel_fanout_dispatches_by_their_ready_lists(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        response = await s.ok("lockgate_plan", {"spec": fan_spec(), "inputs": {"words": ["a", "b", "c"]}})
        run = response["run_id"]
        assert [r["step_id"] for r in response["ready"]] == ["fan/0", "fan/1"]
        queue = list(response["ready"])
        done: list[str] = []
        while queue:
            entry = queue.pop(0)
            response = await s.ok("lockgate_step_done", {"run_id": run, "step_id": entry["step_id"],
                                                         "token": entry["token"], "result": {"word": entry["item"]}})
            done.append(entry["step_id"])
            queue.extend(response.get("ready", []))
        assert done == ["fan/0", "fan/1", "fan/2"]
        assert response["status"] == "complete" and response["output"] == {"word": "a"}
