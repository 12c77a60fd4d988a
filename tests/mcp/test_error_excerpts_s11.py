"""Tool errors quote a long value of the call as an excerpt with its length (review s11, finding
4): a 5 MiB argument came back in full, several times over, in the error's text and again in its
structured content (an unknown input key made 40 MiB and took 25 s), from the schema check, the
engine and the spec file reader alike."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_support import CHECKED, connect

BIG = "x" * (1024 * 1024)
LENGTH = f"({len(BIG)} characters)"
# an error's text and structured content, each; the advice sentence is the longest part
SMALL = 1500


async def test_long_values_are_quoted_as_an_excerpt_with_their_length(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        plan = await s.ok("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "tea"}})
        run, token = plan["run_id"], plan["token"]
        calls = [
            ("lockgate_status", {"run_id": BIG}, "run_not_found"),
            ("lockgate_step_done", {"run_id": run, "step_id": BIG, "token": token, "result": {}}, "unknown_step"),
            ("lockgate_commit", {"run_id": run, "label": BIG}, "invalid_arguments"),
            ("lockgate_plan", {"spec": CHECKED, "inputs": {"topic": "t", BIG: 1}}, "input_validation_failed"),
            ("lockgate_plan", {"spec": CHECKED, "flow": BIG}, "unknown_flow"),
            ("lockgate_validate", {"path": BIG}, "invalid_arguments"),
            ("lockgate_cancel", {"run_id": run, BIG: 1}, "invalid_arguments"),
        ]
        for tool, arguments, kind in calls:
            result = await s.raw(tool, arguments)
            text = "\n".join(block.text for block in result.content)
            data = json.dumps(result.structured_content, ensure_ascii=False)
            assert result.is_error and result.structured_content["error_type"] == kind, text[:300]
            assert len(text) < SMALL and len(data) < SMALL, (tool, len(text), len(data))
            # the label's limit is told as lengths; every other refusal quotes the start of the value
            assert (LENGTH in text or "at most 200 characters long, not 1048576" in text), (tool, text)
        assert "no run with id 'xxxxxxxxxx" in (await s.raw("lockgate_status", {"run_id": BIG})).content[0].text

        short = await s.raw("lockgate_status", {"run_id": "no-such-run"})  # a short value is quoted whole
        assert "no run with id 'no-such-run'" in short.content[0].text
