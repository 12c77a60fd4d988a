"""``lockgate_step_done``'s ``usage`` has its shape in the tool's schema (review s11, finding 3).

The reference fails an attempt whose usage report is invalid (semantics §6.4, "Usage"), and the
engine still does. Over MCP the schema says what a usage is (``tokens``/``usd``/``ms``, numbers
from 0 to 2**53 - 1), so a host sees it up front and a malformed one is refused as bad
arguments naming what is wrong, before a correct result could be thrown away with it."""

from __future__ import annotations

from pathlib import Path

from jsonschema import Draft202012Validator
from mcp_support import CHECKED, connect


async def test_a_malformed_usage_is_refused_up_front_and_the_result_then_counts(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        tools = {t.name: t for t in (await s.client.list_tools()).tools}
        schema = tools["lockgate_step_done"].input_schema
        usage = schema["properties"]["usage"]
        assert usage["additionalProperties"] is False
        assert {k: (v["type"], v["minimum"]) for k, v in usage["properties"].items()} == {
            "tokens": ("number", 0), "usd": ("number", 0), "ms": ("number", 0)}
        Draft202012Validator.check_schema(schema)

        plan = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run = plan["run_id"]
        report = {"run_id": run, "step_id": "a", "token": plan["token"], "result": {"text": "a good note"}}
        before = (await s.ok("lockgate_audit", {"run_id": run}))["events"]
        refusals = [
            ({"usd": "0.02"}, "argument usage.usd must be of type number, not string"),
            ({"usd": -1}, "argument usage.usd must be at least 0, not -1"),
            ({"tokens": 2**60}, "argument usage.tokens must be at most 9007199254740991"),
            ({"usd_": 0.02}, "argument usage has an unknown key `usd_` (did you mean `usd`?); it takes: tokens, "
                             "usd, ms"),
            ({"dispatches": 1}, "argument usage has an unknown key `dispatches`"),
        ]
        for bad, words in refusals:
            message, data = await s.refused("lockgate_step_done", {**report, "usage": bad})
            assert data["error_type"] == "invalid_arguments" and words in message, message
            assert "nothing was changed" in message
        assert (await s.ok("lockgate_audit", {"run_id": run}))["events"] == before

        done = await s.ok("lockgate_step_done", {**report, "usage": {"usd": 0.02, "tokens": 120, "ms": 900}})
        assert done["status"] == "execute_step" and done["step_id"] == "b"
        spent = (await s.ok("lockgate_audit", {"run_id": run}))["spent"]
        assert spent == {"dispatches": 2, "usd": 0.02, "tokens": 120, "ms": 900}
