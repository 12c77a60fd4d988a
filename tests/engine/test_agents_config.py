"""Project configuration, the registry and the precedence of agent sources."""

from __future__ import annotations

import asyncio
import textwrap
import threading

import pytest

from lockgate.engine.agents import (AgentRegistry, AgentResult, ClaudeCodeAgent, CodexAgent,
                                    CommandAgent, Fail, OpenAIAgent, PythonAgent, ScriptedAgent,
                                    Task, find_config, load_config, resolve_agent, resolve_agents)
from lockgate.engine.agents.python import split_traceback
from lockgate.errors import ConfigError


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def task(step="write", **kw) -> Task:
    return Task(run_id="r", step_id=step, prompt="p", **kw)


CONFIG = """
[agents.reviewer]
type = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5-coder"
max_retries = 1

[agents.lint]
type = "command"
command = ["python", "lint_agent.py"]
timeout = 60
cwd = "tools"

[agents.claude]
model = "opus"
effort = "high"

[runner]
max_running = 4
max_outstanding = 20
"""


def test_lockgate_toml_found_upward_and_built(tmp_path):
    write(tmp_path / "lockgate.toml", CONFIG)
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_config(nested) == tmp_path / "lockgate.toml"
    config = load_config(start=nested)
    assert config.runner.max_running == 4 and config.runner.max_outstanding == 20
    reviewer = config.agent("reviewer")
    assert isinstance(reviewer, OpenAIAgent)
    assert (reviewer.model, reviewer.base_url, reviewer.max_retries) == (
        "qwen2.5-coder", "http://127.0.0.1:11434/v1", 1)
    lint = config.agent("lint")
    assert isinstance(lint, CommandAgent)
    assert lint.command == ("python", "lint_agent.py") and lint.timeout == 60
    assert lint.cwd == str((tmp_path / "tools").resolve())
    claude = config.agent("claude")
    assert isinstance(claude, ClaudeCodeAgent) and (claude.model, claude.effort) == ("opus", "high")
    assert isinstance(config.agent("codex"), CodexAgent)
    assert config.agent("nobody") is None


def test_pyproject_tool_table(tmp_path):
    write(tmp_path / "pyproject.toml", """
        [project]
        name = "demo"
        [tool.lockgate.agents.fmt]
        type = "command"
        command = "black --quiet -"
    """)
    config = load_config(start=tmp_path)
    assert config.path == tmp_path / "pyproject.toml"
    assert config.agent("fmt").command == ("black", "--quiet", "-")


def test_pyproject_without_the_table_is_skipped(tmp_path):
    write(tmp_path / "lockgate.toml", "[agents.x]\ntype = 'command'\ncommand = ['x']\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    write(inner / "pyproject.toml", "[project]\nname = 'inner'\n")
    assert find_config(inner) == tmp_path / "lockgate.toml"


def test_no_config_means_built_ins_only(tmp_path):
    config = load_config(start=tmp_path)
    assert config.path is None and isinstance(config.agent("claude"), ClaudeCodeAgent)


@pytest.mark.parametrize("text, message", [
    ("[agents.lint]\ntype = 'command'\ncommand = ['x']\ntimout = 5\n",
     "agents.lint: unknown key 'timout' (did you mean 'timeout'?)"),
    ("[agents.lint]\ntype = 'command'\ncommand = ['x']\ntimeout = 'soon'\n",
     "agents.lint.timeout: expected a number, got 'soon'"),
    ("[agents.lint]\ntype = 'command'\ncommand = ['x']\ntimeout = -1\n",
     "agents.lint.timeout: expected a positive number, got -1"),
    ("[agents.lint]\ntype = 'command'\n", "agents.lint.command: missing (required for type"),
    ("[agents.lint]\ntype = 'comand'\ncommand = ['x']\n",
     "agents.lint.type: unknown adapter type 'comand' (did you mean 'command'?)"),
    ("[agents.lint]\ncommand = ['x']\n", "agents.lint.type: missing; expected one of"),
    ("[agents.r]\ntype = 'openai'\n", "agents.r.model: missing"),
    ("[agents.r]\ntype = 'openai'\nmodel = 'm'\nstructured = 'yes'\n",
     "agents.r.structured: expected one of auto, json_schema, json_object, got 'yes'"),
    ("[agents.Bad]\ntype = 'command'\ncommand = ['x']\n", "agents.Bad: an agent name must match"),
    ("[agents.claude]\nallowed_tools = 'Read'\n",
     "agents.claude.allowed_tools: expected a list of strings"),
    ("[runner]\nmax_running = 0\n", "runner.max_running: expected an integer >= 1, got 0"),
    ("[runner]\nmax_running = 10\nmax_outstanding = 5\n",
     "runner.max_outstanding: must be >= max_running (10)"),
    ("[agent.x]\n", "unknown key 'agent' (did you mean 'agents'?)"),
    ("[agents\n", "invalid TOML"),
])
def test_config_errors_name_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path / "lockgate.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(start=tmp_path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_pyproject_errors_use_the_tool_prefix(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.lockgate.agents.x]\ntype = 'python'\n")
    with pytest.raises(ConfigError, match=r"tool\.lockgate\.agents\.x\.callable: missing"):
        load_config(start=tmp_path)


def test_python_type_imports_a_callable(tmp_path, monkeypatch):
    write(tmp_path / "my_agents.py", "def writer(task):\n    return {'echo': task.prompt}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path / "lockgate.toml", """
        [agents.writer]
        type = "python"
        callable = "my_agents:writer"
        [agents.broken]
        type = "python"
        callable = "my_agents:nothing"
    """)
    config = load_config(start=tmp_path)
    writer = config.agent("writer")
    assert asyncio.run(writer.execute(task())).output == {"echo": "p"}
    with pytest.raises(ConfigError, match="agents.broken.callable: 'my_agents' has no callable"):
        config.agent("broken")


def test_precedence_explicit_registered_config_builtin(tmp_path):
    write(tmp_path / "lockgate.toml", """
        [agents.writer]
        type = "command"
        command = ["writer"]
        [agents.claude]
        model = "haiku"
    """)
    config = load_config(start=tmp_path)
    registry = AgentRegistry()
    assert isinstance(resolve_agent("writer", registry=registry, config=config), CommandAgent)
    registry.register("writer", lambda t: "registered")
    assert isinstance(resolve_agent("writer", registry=registry, config=config), PythonAgent)
    explicit = ScriptedAgent(default="explicit")
    chosen = resolve_agent("writer", explicit={"writer": explicit}, registry=registry,
                           config=config)
    assert chosen is explicit
    assert resolve_agent("claude", registry=registry, config=config).model == "haiku"
    assert resolve_agent("codex", registry=registry, config=config).name == "codex"
    with pytest.raises(ConfigError, match=r"no agent named 'ghost'.*\[agents\.ghost\]"):
        resolve_agent("ghost", registry=registry, config=config)
    both = resolve_agents(["writer", "codex", "writer"], registry=registry, config=config)
    assert list(both) == ["writer", "codex"]


def test_register_as_decorator_and_name_rules():
    registry = AgentRegistry()

    @registry.register("summarise")
    async def summarise(task):
        return {"summary": task.prompt.upper()}

    assert registry.names() == ["summarise"]
    agent = registry.get("summarise")
    assert asyncio.run(agent.execute(task())).output == {"summary": "P"}
    with pytest.raises(ConfigError, match="invalid agent name 'Summarise'"):
        registry.register("Summarise", summarise)


# --- Python and scripted agents ----------------------------------------------------------------


async def test_python_agent_sync_runs_in_a_thread_async_on_the_loop():
    loop_thread = threading.get_ident()
    seen = {}

    def sync_fn(task):
        seen["sync"] = threading.get_ident()
        return [task.step_id]

    async def async_fn(task):
        seen["async"] = threading.get_ident()
        return {"n": task.attempt}

    assert (await PythonAgent("s", sync_fn).execute(task())).output == ["write"]
    assert (await PythonAgent("a", async_fn).execute(task(attempt=2))).output == {"n": 2}
    assert seen["sync"] != loop_thread and seen["async"] == loop_thread


async def test_python_agent_errors_and_non_json_are_failures():
    def boom(task):
        raise ValueError("no title found")

    result = await PythonAgent("w", boom).execute(task())
    assert split_traceback(result.failure)[0] == "ValueError: no title found"
    result = await PythonAgent("w", lambda t: {"when": object()}).execute(task())
    assert "returned a value that is not JSON" in result.failure
    custom = AgentResult.failed("declined")
    assert (await PythonAgent("w", lambda t: custom).execute(task())).failure == "declined"


async def test_python_agent_cancel():
    started = asyncio.Event()

    async def slow(task):
        started.set()
        await asyncio.Event().wait()

    agent = PythonAgent("slow", slow)
    call = asyncio.ensure_future(agent.execute(task()))
    await started.wait()
    await agent.cancel()
    assert "was cancelled" in (await call).failure


async def test_python_agent_cancel_of_a_sync_function_in_its_thread():
    started, release = threading.Event(), threading.Event()

    def slow(task):
        started.set()
        release.wait(30)
        return {"late": True}

    agent = PythonAgent("slow", slow)
    call = asyncio.ensure_future(agent.execute(task()))
    await asyncio.to_thread(started.wait, 30)
    await agent.cancel()
    result = await call
    release.set()
    assert "was cancelled" in result.failure and result.output is None


async def test_cancelling_the_caller_of_a_python_agent_propagates():
    """Only the agent's own cancel() turns into a failed result: cancelling the task that called
    it is the caller's cancellation, and stays one, even when both happen."""
    started = asyncio.Event()

    async def slow(task):
        started.set()
        await asyncio.Event().wait()

    for also_cancel_the_agent in (False, True):
        started.clear()
        agent = PythonAgent("slow", slow)
        call = asyncio.ensure_future(agent.execute(task()))
        await started.wait()
        call.cancel()
        if also_cancel_the_agent:
            await agent.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert call.cancelled()


async def test_python_agent_cancel_reaches_a_call_made_from_within_its_own_call():
    started = asyncio.Event()
    holder: dict[str, PythonAgent] = {}

    async def outer_or_inner(task):
        if task.step_id == "inner":
            return {"inner": True}
        await holder["agent"].execute(Task(run_id="r", step_id="inner", prompt="p"))
        started.set()
        await asyncio.Event().wait()

    agent = holder["agent"] = PythonAgent("a", outer_or_inner)
    call = asyncio.ensure_future(agent.execute(task()))
    await started.wait()
    await agent.cancel()
    assert "was cancelled" in (await call).failure


async def test_a_cancellation_the_callable_swallows_is_taken_back():
    """A callable may catch its cancellation and answer anyway: its answer stands, and the
    calling task is not left marked as being cancelled."""
    started = asyncio.Event()

    async def stubborn(task):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return {"partial": True}

    agent = PythonAgent("stubborn", stubborn)

    async def caller():
        result = await agent.execute(task())
        return result, asyncio.current_task().cancelling()

    call = asyncio.ensure_future(caller())
    await started.wait()
    await agent.cancel()
    result, cancelling = await call
    assert result.ok and result.output == {"partial": True} and cancelling == 0


async def test_a_cancelled_error_the_callable_raises_by_itself_is_its_failure():
    async def awaits_a_cancelled_task(task):
        inner = asyncio.ensure_future(asyncio.Event().wait())
        inner.cancel()
        await inner

    result = await PythonAgent("a", awaits_a_cancelled_task).execute(task())
    assert not result.ok and "was cancelled" in result.failure
    assert asyncio.current_task().cancelling() == 0


async def test_a_call_that_answers_cancel_with_another_error_leaves_no_cancellation_behind():
    started = asyncio.Event()

    async def aborts(task):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("aborted") from None

    agent = PythonAgent("a", aborts)

    async def caller():
        first = await agent.execute(task())
        return first, asyncio.current_task().cancelling()

    call = asyncio.ensure_future(caller())
    await started.wait()
    await agent.cancel()
    first, cancelling = await call
    assert split_traceback(first.failure)[0] == "RuntimeError: aborted" and cancelling == 0


def test_python_agent_rejects_non_callables():
    with pytest.raises(TypeError, match="expected a callable"):
        PythonAgent("x", 42)


async def test_scripted_agent_queues_per_step_and_records_calls():
    agent = ScriptedAgent({"write": [Fail("too short"), {"title": "ok"}],
                           "review": [lambda t: {"seen": t.attempt}]})
    assert (await agent.execute(task("write"))).failure == "too short"
    assert (await agent.execute(task("write", attempt=2))).output == {"title": "ok"}
    assert (await agent.execute(task("fan[3].review", attempt=1))).output == {"seen": 1}
    exhausted = await agent.execute(task("write"))
    assert "no reply left for step 'write'" in exhausted.failure
    assert [t.step_id for t in agent.calls] == ["write", "write", "fan[3].review", "write"]
    assert agent.remaining() == {}
    fallback = ScriptedAgent(default={"ok": True})
    assert (await fallback.execute(task("any"))).output == {"ok": True}


def test_python_callable_is_imported_from_the_config_folder(tmp_path, monkeypatch):
    (tmp_path / "team_agents.py").write_text("def tag(task):\n    return {'tag': task.prompt}\n")
    (tmp_path / "lockgate.toml").write_text('[agents.tag]\ntype = "python"\ncallable = "team_agents:tag"\n')
    monkeypatch.chdir(tmp_path.parent)  # not the config folder: plain import would fail
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))])
    from lockgate.engine.agents.config import load_config

    agent = load_config(start=tmp_path).agent("tag")
    assert agent.fn.__module__ == "team_agents"
