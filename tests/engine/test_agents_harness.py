"""Claude Code and Codex adapters against fake executables on PATH.

The fakes reproduce the CLIs' non-interactive JSON formats (``claude -p --output-format json``
result envelopes, ``codex exec --json`` JSON Lines events); ``FAKE_MODE`` picks the behaviour and
each run writes what it received (argv, cwd, stdin, the schema file) to ``FAKE_LOG``.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from lockgate.engine.agents import ClaudeCodeAgent, CodexAgent, Task
from lockgate.errors import AgentUnavailable

from agent_support import pid_alive, wait_until, write_script

FAKE_CLAUDE = r"""
import json, os, sys, time
args = sys.argv[1:]
prompt = args[args.index("-p") + 1] if not args[args.index("-p") + 1].startswith("--") else sys.stdin.read()
log = {"argv": args, "cwd": os.getcwd(), "prompt": prompt, "pid": os.getpid()}
schema = json.loads(args[args.index("--json-schema") + 1]) if "--json-schema" in args else None
log["schema"] = schema
with open(os.environ["FAKE_LOG"] + ".tmp", "w") as f:  # whole or absent: tests wait for the file
    json.dump(log, f)
os.replace(os.environ["FAKE_LOG"] + ".tmp", os.environ["FAKE_LOG"])
mode = os.environ.get("FAKE_MODE", "structured")
envelope = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 812,
            "num_turns": 2, "result": "", "session_id": "5f1c", "total_cost_usd": 0.0123,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 5,
                      "cache_read_input_tokens": 100, "output_tokens": 20},
            "modelUsage": {"claude-sonnet-4-6": {"costUSD": 0.0123}}}
out = json.loads(os.environ.get("FAKE_OUTPUT", '{"title": "From Claude"}'))
if mode == "structured":
    envelope["structured_output"] = out
elif mode == "text":
    envelope["result"] = json.dumps(out)
elif mode == "prose":
    envelope["result"] = "I updated the file. Here is the JSON: " + json.dumps(out)
elif mode == "error":
    envelope.update(subtype="error_max_turns", is_error=True, result="Reached max turns (3)")
    print(json.dumps(envelope)); sys.exit(1)
elif mode == "malformed":
    print("Error: unexpected token in stream"); sys.stderr.write("fatal: session crashed\n"); sys.exit(2)
elif mode == "hang":
    time.sleep(300)
elif mode == "oom":
    sys.stdout.write('{"type": "res'); sys.stdout.flush(); sys.stderr.write("out of memory\n"); sys.stderr.flush()
    os.kill(os.getpid(), 9)
print(json.dumps(envelope))
"""

FAKE_CODEX = r"""
import json, os, sys, time
args = sys.argv[1:]
assert args[:2] == ["exec", "--json"], args
prompt = sys.stdin.read()
schema = None
if "--output-schema" in args:
    schema = json.load(open(args[args.index("--output-schema") + 1]))
with open(os.environ["FAKE_LOG"] + ".tmp", "w") as f:  # whole or absent: tests wait for the file
    json.dump({"argv": args, "cwd": os.getcwd(), "prompt": prompt, "schema": schema, "pid": os.getpid()}, f)
os.replace(os.environ["FAKE_LOG"] + ".tmp", os.environ["FAKE_LOG"])
mode = os.environ.get("FAKE_MODE", "ok")
out = os.environ.get("FAKE_OUTPUT", '{"title": "From Codex"}')
def emit(event): print(json.dumps(event), flush=True)
emit({"type": "thread.started", "thread_id": "0199a213-81c0"})
emit({"type": "turn.started"})
if mode == "hang":
    time.sleep(300)
if mode == "malformed":
    print("panicked at codex-rs/exec/src/lib.rs: oh no"); sys.exit(101)
if mode == "transient":
    emit({"type": "error", "message": "Reconnecting... 1/5"})
if mode == "failed":
    emit({"type": "turn.failed", "error": {"message": "stream disconnected: 401 Unauthorized"}})
    sys.exit(1)
emit({"type": "item.started", "item": {"id": "item_0", "type": "command_execution",
      "command": "bash -lc ls", "status": "in_progress"}})
emit({"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
      "command": "bash -lc ls", "aggregated_output": "README.md\n", "exit_code": 0,
      "status": "completed"}})
if mode != "silent":
    emit({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": out}})
emit({"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 1000,
      "output_tokens": 34}})
"""

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}},
          "required": ["title"], "additionalProperties": False}


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_script(bindir, "claude", FAKE_CLAUDE)
    write_script(bindir, "codex", FAKE_CODEX)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log.json"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    workspace = tmp_path / "work"
    workspace.mkdir()
    return workspace


def received(tmp_path) -> dict:
    return json.loads((tmp_path / "log.json").read_text())


def task(cwd, **kw) -> Task:
    base = dict(run_id="r", step_id="draft", prompt="Draft a title", agent="claude",
                contract="Draft", schema=SCHEMA, cwd=str(cwd))
    base.update(kw)
    return Task(**base)


# --- Claude Code -----------------------------------------------------------------------------


async def test_claude_structured_output(fake_bin, tmp_path):
    claude = ClaudeCodeAgent(model="sonnet", effort="high", allowed_tools=["Read", "Edit"])
    result = await claude.execute(task(fake_bin))
    assert result.ok, result.failure
    assert result.output == {"title": "From Claude"}
    assert result.usage.tokens == 135 and result.usage.usd == pytest.approx(0.0123)
    assert result.telemetry.model == "claude-sonnet-4-6"
    log = received(tmp_path)
    assert log["cwd"] == str(fake_bin)
    assert log["argv"][:2] == ["-p", "Draft a title"]
    assert log["schema"] == SCHEMA
    argv = log["argv"]
    for flag, value in [("--output-format", "json"), ("--model", "sonnet"), ("--effort", "high"),
                        ("--permission-mode", "acceptEdits"), ("--allowedTools", "Read,Edit")]:
        assert argv[argv.index(flag) + 1] == value


async def test_claude_text_result_must_be_json(fake_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "text")
    result = await ClaudeCodeAgent(json_schema=False).execute(task(fake_bin))
    assert result.output == {"title": "From Claude"}
    log = received(tmp_path)
    assert log["schema"] is None and "--json-schema" not in log["argv"]
    assert "JSON Schema" in log["prompt"] and '"title"' in log["prompt"]


async def test_claude_prose_is_a_failure(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "prose")
    result = await ClaudeCodeAgent().execute(task(fake_bin, schema=None))
    assert "the final answer is not JSON" in result.failure
    assert "I updated the file" in result.failure


async def test_claude_error_result(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "error")
    result = await ClaudeCodeAgent().execute(task(fake_bin))
    assert result.failure.startswith("agent 'claude' (claude): reported error_max_turns: "
                                     "Reached max turns (3)")
    assert "exit status 1" in result.failure
    assert result.usage.usd == pytest.approx(0.0123)


async def test_claude_malformed_output(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "malformed")
    result = await ClaudeCodeAgent().execute(task(fake_bin))
    assert "not a JSON result" in result.failure and "unexpected token" in result.failure
    assert "exit status 2: fatal: session crashed" in result.failure


async def test_claude_killed_by_a_signal_says_so_first(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "oom")
    result = await ClaudeCodeAgent().execute(task(fake_bin))
    assert result.failure == ("agent 'claude' (claude): its process was killed by signal 9 (SIGKILL) before it "
                              "finished (stderr: out of memory)")


async def test_claude_hang_times_out_and_is_killed(fake_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    result = await ClaudeCodeAgent(timeout=0.5).execute(task(fake_bin))
    assert "timed out after 0.5s" in result.failure
    assert not pid_alive(received(tmp_path)["pid"])


async def test_claude_retry_prompt_carries_violations(fake_bin, tmp_path):
    retry = task(fake_bin, attempt=2, violations=({"path": "result.title", "message": "empty"},))
    await ClaudeCodeAgent().execute(retry)
    prompt = received(tmp_path)["prompt"]
    assert "- result.title: empty" in prompt and "JSON Schema" not in prompt


async def test_claude_long_prompt_goes_on_stdin(fake_bin, tmp_path):
    long_prompt = "x" * 150_000
    result = await ClaudeCodeAgent().execute(task(fake_bin, prompt=long_prompt))
    assert result.ok
    assert received(tmp_path)["prompt"] == long_prompt


async def test_claude_cancel_kills_the_process(fake_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    claude = ClaudeCodeAgent()
    call = asyncio.ensure_future(claude.execute(task(fake_bin)))
    await wait_until(lambda: (tmp_path / "log.json").exists())
    await claude.cancel()
    result = await call
    assert "cancelled" in result.failure
    assert not pid_alive(received(tmp_path)["pid"])


def test_claude_preflight(fake_bin, tmp_path, monkeypatch):
    ClaudeCodeAgent().preflight()
    with pytest.raises(AgentUnavailable, match="binary 'claude-nightly' is not on PATH"):
        ClaudeCodeAgent(binary="claude-nightly").preflight()
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(AgentUnavailable, match="no Claude credentials: set ANTHROPIC_API_KEY"):
        ClaudeCodeAgent().preflight()
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    ClaudeCodeAgent().preflight()


# --- Codex -----------------------------------------------------------------------------------


async def test_codex_output_schema_and_flags(fake_bin, tmp_path):
    codex = CodexAgent(model="gpt-5-codex", effort="high")
    result = await codex.execute(task(fake_bin, agent="codex"))
    assert result.ok, result.failure
    assert result.output == {"title": "From Codex"}
    assert result.usage.tokens == 1234
    log = received(tmp_path)
    assert log["schema"] == SCHEMA
    argv = log["argv"]
    assert argv[argv.index("--model") + 1] == "gpt-5-codex"
    assert argv[argv.index("-c") + 1] == 'model_reasoning_effort="high"'
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert argv[argv.index("--cd") + 1] == str(fake_bin)
    assert argv[-1] == "-" and log["prompt"] == "Draft a title"
    schema_file = argv[argv.index("--output-schema") + 1]
    assert not os.path.exists(schema_file)


async def test_codex_non_strict_schema_goes_in_the_prompt(fake_bin, tmp_path):
    loose = {"type": "object", "properties": {"title": {"type": "string"}}}
    await CodexAgent().execute(task(fake_bin, schema=loose))
    log = received(tmp_path)
    assert "--output-schema" not in log["argv"] and "JSON Schema" in log["prompt"]


async def test_codex_turn_failed(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "failed")
    result = await CodexAgent().execute(task(fake_bin))
    assert "stream disconnected: 401 Unauthorized" in result.failure
    assert "exit status 1" in result.failure


async def test_codex_transient_errors_do_not_fail_a_finished_turn(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "transient")
    result = await CodexAgent().execute(task(fake_bin))
    assert result.output == {"title": "From Codex"}


async def test_codex_malformed_output(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "malformed")
    result = await CodexAgent().execute(task(fake_bin))
    assert "finished without a final agent message" in result.failure
    assert "exit status 101" in result.failure


async def test_codex_prose_answer_is_a_failure(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_OUTPUT", "Done! I renamed the files.")
    result = await CodexAgent().execute(task(fake_bin))
    assert "the final answer is not JSON: 'Done! I renamed the files.'" in result.failure


async def test_codex_without_a_message(fake_bin, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "silent")
    result = await CodexAgent().execute(task(fake_bin))
    assert "finished without a final agent message" in result.failure


async def test_codex_hang_times_out(fake_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    result = await CodexAgent(timeout=60).execute(task(fake_bin, timeout=0.5))
    assert "timed out after 0.5s" in result.failure
    assert not pid_alive(received(tmp_path)["pid"])


def test_codex_preflight(fake_bin, tmp_path, monkeypatch):
    CodexAgent().preflight()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    with pytest.raises(AgentUnavailable, match="no Codex credentials.*codex login"):
        CodexAgent().preflight()
    (tmp_path / "codex-home").mkdir()
    (tmp_path / "codex-home" / "auth.json").write_text("{}")
    CodexAgent().preflight()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(AgentUnavailable, match="the codex binary 'codex' is not on PATH; install"):
        CodexAgent().preflight()


@pytest.mark.skipif(os.environ.get("LOCKGATE_LIVE_AGENTS") != "1",
                    reason="live CLI test: set LOCKGATE_LIVE_AGENTS=1")
@pytest.mark.parametrize("adapter", [ClaudeCodeAgent, CodexAgent])
async def test_live_cli(adapter, tmp_path):
    agent = adapter()
    agent.preflight()
    result = await agent.execute(Task(run_id="live", step_id="hello", cwd=str(tmp_path),
                                      prompt="Give a one-word title for a poem about rain.",
                                      contract="Draft", schema=SCHEMA, timeout=300))
    assert result.ok, result.failure
    assert isinstance(result.output["title"], str)
