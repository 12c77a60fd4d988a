"""The Claude Code and Codex adapters against fake CLIs that print hostile output: fields of the
wrong types, floods, bytes that are not UTF-8, NaN, huge error texts. Each ends as an
AgentResult with a one-line reason, never an exception."""

from __future__ import annotations

import json
import os

import pytest
from agent_support import write_script

from lockgate.engine.agents import ClaudeCodeAgent, CodexAgent, Task

PRINTS = """
import os, sys
sys.stdin.read()
sys.stdout.buffer.write(open(os.environ["FAKE_STDOUT"], "rb").read())
sys.exit(int(os.environ.get("FAKE_STATUS", "0")))
"""

FLOODS = """
import sys
block = b"x" * (1 << 20)
for _ in range(100):
    sys.stdout.buffer.write(block)
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Puts ``claude`` and ``codex`` on PATH that print the file FAKE_STDOUT and exit
    FAKE_STATUS."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_script(bindir, "claude", PRINTS)
    write_script(bindir, "codex", PRINTS)
    write_script(bindir, "flood", FLOODS)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    def printing(stdout: str | bytes, status: int = 0) -> None:
        data = stdout if isinstance(stdout, bytes) else stdout.encode()
        (tmp_path / "stdout").write_bytes(data)
        monkeypatch.setenv("FAKE_STDOUT", str(tmp_path / "stdout"))
        monkeypatch.setenv("FAKE_STATUS", str(status))
    return printing


def task(tmp_path) -> Task:
    return Task(run_id="r", step_id="s", prompt="p", agent="claude", cwd=str(tmp_path))


def envelope(**fields) -> str:
    return json.dumps({"type": "result", "subtype": "success", "is_error": False, **fields})


def one_line(failure: str | None) -> str:
    assert failure is not None and "\n" not in failure and len(failure) < 2500, failure
    return failure


async def test_claude_usage_of_the_wrong_types_counts_zero(fake, tmp_path):
    fake(envelope(structured_output={"ok": True}, total_cost_usd="0.5",
                  usage={"input_tokens": "10", "output_tokens": [1], "cache_read_input_tokens": -3,
                         "cache_creation_input_tokens": 1e300 * 10}, modelUsage={"7": {}}))
    result = await ClaudeCodeAgent().execute(task(tmp_path))
    assert result.output == {"ok": True}
    assert result.usage.tokens == 0 and result.usage.usd == 0.0


async def test_claude_nan_in_the_envelope_is_not_a_result(fake, tmp_path):
    fake('{"type": "result", "subtype": "success", "structured_output": {"score": NaN}}')
    failure = one_line((await ClaudeCodeAgent().execute(task(tmp_path))).failure)
    assert "printed output that is not a JSON result" in failure


async def test_claude_a_huge_error_text_is_clipped(fake, tmp_path):
    fake(envelope(subtype="error_during_execution", is_error=True, result="boom\n" * 10_000), 1)
    failure = one_line((await ClaudeCodeAgent().execute(task(tmp_path))).failure)
    assert "reported error_during_execution: boom boom boom" in failure


async def test_claude_stdout_that_is_not_utf8_is_a_failure(fake, tmp_path):
    fake(b'{"type": "result", "subtype": "success", "result": "\\"caf\xe9\\""}')
    failure = one_line((await ClaudeCodeAgent().execute(task(tmp_path))).failure)
    assert "printed bytes that are not UTF-8 on stdout" in failure


async def test_claude_a_stdout_flood_is_a_failure(fake, tmp_path):
    failure = one_line((await ClaudeCodeAgent(binary="flood").execute(task(tmp_path))).failure)
    assert "printed more than 32 MiB on stdout" in failure


@pytest.mark.parametrize("events", [
    [{"type": "item.completed", "item": "agent_message"},
     {"type": "item.completed", "item": {"type": "agent_message", "text": '{"a": 1}'}}],
    [{"type": "item.completed", "item": None},
     {"type": "item.completed", "item": {"type": "agent_message", "text": '{"a": 1}'}},
     {"type": "turn.completed", "usage": ["tokens"]}],
    [{"type": "item.completed", "item": {"type": "agent_message", "text": '{"a": 1}'}},
     {"type": "turn.completed", "usage": {"input_tokens": "many", "output_tokens": None}}],
])
async def test_codex_events_of_the_wrong_shape_are_skipped(fake, tmp_path, events):
    fake("\n".join(json.dumps(e) for e in events) + "\n")
    result = await CodexAgent().execute(task(tmp_path))
    assert result.output == {"a": 1} and result.usage.tokens == 0


async def test_codex_nan_answer_is_a_failure(fake, tmp_path):
    fake(json.dumps({"type": "item.completed",
                     "item": {"type": "agent_message", "text": '{"score": NaN}'}}) + "\n")
    failure = one_line((await CodexAgent().execute(task(tmp_path))).failure)
    assert "the final answer is not JSON" in failure


async def test_codex_a_huge_turn_failure_is_clipped(fake, tmp_path):
    fake(json.dumps({"type": "turn.failed", "error": {"message": "x" * 100_000}}) + "\n", 1)
    failure = one_line((await CodexAgent().execute(task(tmp_path))).failure)
    assert "xxx..." in failure
