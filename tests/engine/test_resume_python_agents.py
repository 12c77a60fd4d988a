"""A run driven with agents given in Python (a notebook's functions) is resumed only with them:
a resume given none for its agent names would quietly take them from another adapter (a
notebook's ``codex`` function would become the built-in Codex CLI). The claim records the
names (and the notebook variable that held them: the notebook passes that record as
``agents_module``), the resume is refused saying what to give, and the CLI's hints treat such
a run as needing ``--agents``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.cli import hints
from lockgate.engine.agentorigin import AGENTS_NOT_GIVEN, PythonAgents, module_of
from lockgate.engine.runner import make_runner
from lockgate.errors import ConfigError

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${write.output}", contract: Note}
    steps:
      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}
      - {id: write, agent: writer, do: "write", out: Note}
"""


def writer(task):
    return {"text": "from my function"}


def other_writer(task):
    return {"text": "from another function"}


async def _waiting_run(tmp_path: Path, variable: str | None = None) -> tuple[str, Path]:
    """A run driven with Python agents as a notebook drives it, left waiting at its gate, then
    approved (nobody drives it)."""
    store = tmp_path / "runs.db"
    agents = {"writer": writer}
    first = make_runner(store=store, workspace=tmp_path, agents=agents,
                        agents_module=PythonAgents.given(agents, variable).record())
    waiting = await first.start(SPEC, {})
    assert waiting.status == "await_gate"
    first.engine.resolve_waiting_gate(waiting.run_id, "ok", "approve")
    return waiting.run_id, store


async def test_a_resume_given_none_of_the_python_agents_the_run_was_driven_with_is_refused(tmp_path: Path) -> None:
    run_id, store = await _waiting_run(tmp_path)
    bare = make_runner(store=store, workspace=tmp_path)
    with pytest.raises(ConfigError) as refused:
        await bare.resume(run_id)
    message = str(refused.value)
    assert message.startswith(f"run {run_id} was driven with agents given in Python (writer), and this resume "
                              "was given none for writer")
    assert f"`%flow resume {run_id} --agents VAR`" in message and "agents= in Python" in message
    assert f"`lockgate run --resume {run_id} --agents FILE.py` with a module defining writer()" in message
    assert refused.value.detail == {"problem": AGENTS_NOT_GIVEN, "run_id": run_id, "agents": ["writer"],
                                    "variable": None}
    assert bare.engine.status(run_id)["status"] == "execute_step"  # nothing changed
    assert bare.engine.driver_of(run_id) is None


async def test_the_same_names_given_again_resume_the_run(tmp_path: Path) -> None:
    run_id, store = await _waiting_run(tmp_path)
    again = make_runner(store=store, workspace=tmp_path, agents={"writer": other_writer})
    result = await again.resume(run_id)
    assert (result.status, result.response["output"]) == ("complete", {"text": "from another function"})


async def test_the_notebook_variable_recorded_is_named_in_the_refusal(tmp_path: Path) -> None:
    run_id, store = await _waiting_run(tmp_path, "my_agents")
    with pytest.raises(ConfigError, match=r"\(writer, from the variable my_agents\).*"
                                          rf"`%flow resume {run_id} --agents my_agents` in a notebook, agents="):
        make_runner(store=store, workspace=tmp_path).check_resumable(run_id)


async def test_the_cli_hints_ask_for_an_agents_module_and_name_none(tmp_path: Path) -> None:
    run_id, store = await _waiting_run(tmp_path)
    engine = make_runner(store=store, workspace=tmp_path).engine
    assert engine.last_agents(run_id).startswith("python:")
    assert hints.recorded_agents(engine, run_id) is None  # no command can name a notebook's functions
    assert hints.agents_needed(engine, run_id) is True
    command, note = hints.resume_hint(run_id, store=None, agents_needed=True, recorded=None)
    assert command == f"lockgate run --resume {run_id} --agents <your agents module>" and note


def test_the_origin_record_reads_back_and_a_module_stays_a_module() -> None:
    record = PythonAgents.given({"b": 1, "a": 2, 3: 4}, "ag").record()
    assert PythonAgents.parse(record) == PythonAgents(("a", "b"), "ag")
    assert PythonAgents.parse("/work/agents.py") is None and module_of("/work/agents.py") == "/work/agents.py"
    assert module_of(record) is None and module_of(None) is None
    assert PythonAgents.parse("python:{not json") == PythonAgents(())
