"""The guidance an agent reads in tool results: why an attempt was rejected, a gate decision that
lost to another, and validation warnings that concern the host."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import CHECKED, REVIEWED, connect, lockgate_cli


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


async def test_a_rejection_says_why_when_there_are_no_violations(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        raw = await s.raw("lockgate_step_done", {"run_id": first["run_id"], "step_id": "a", "token": first["token"],
                                                 "failure": "could not reach the internet"})
        assert raw.structured_content["status"] == "ensure_failed"
        assert "Rejected (ensure_failed): agent reported failure: could not reach the internet." in raw.content[-1].text


async def test_a_rejection_quotes_the_failed_predicate_with_the_values_it_read(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        raw = await s.raw("lockgate_step_done", {"run_id": first["run_id"], "step_id": "a", "token": first["token"],
                                                 "result": {"text": "no"}})
        assert raw.structured_content["violations"][0]["values"] == {"result.text": '"no"'}
        assert 'predicate evaluated to false (result.text = "no").' in raw.content[-1].text


async def test_a_gate_decision_that_lost_to_another_says_so(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        first = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
        run = first["run_id"]
        gate = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": first["token"],
                                                 "result": {"result": "done", "quality_score": 0.9}})
        assert gate["status"] == "await_gate" and gate["step_id"] == "review"
        person = lockgate_cli("gate", "reject", run, "review", "--note", "not good", "--store", str(store))
        assert person.returncode == 0, person.stderr
        decision = {"run_id": run, "step_id": "review", "rationale": "", "resolved_by": "agent", "token": gate["token"]}
        message, data = await s.refused("lockgate_gate_resolve", {**decision, "outcome": "approve"})
        assert data["reason"] == "decided" and data["decision"] == "kill" and data["resolved_by"] == "human"
        assert "your approve was not applied" in message and "was taken first" in message
        message, data = await s.refused("lockgate_gate_resolve", {**decision, "outcome": "kill"})
        assert data["reason"] == "duplicate"


async def test_validation_leaves_out_agent_configuration_warnings(store, tmp_path) -> None:
    async with connect(store, tmp_path) as s:
        spec = CHECKED.replace('out: Note\n        ensure', 'agent: writer\n        out: Note\n        ensure')
        result = await s.ok("lockgate_validate", {"spec": spec})
        assert result["valid"] and "agent: writer" in spec
        assert not [w for w in result["warnings"] if w["code"] == "LG905"]


def test_a_held_result_among_the_ready_dispatches_is_pointed_at() -> None:
    from lockgate.mcp.advice import next_steps

    response = {"status": "execute_step", "run_id": "r1", "step_id": "w", "token": "t1",
                "ready": [{"step_id": "w", "token": "t1"},
                          {"step_id": "v", "token": "t2", "reported": {"result": {"text": "done"}}}]}
    advice = next_steps(response)
    assert advice is not None and advice.startswith("Step v's result was received") and "token t2" in advice
