"""Where a run's agents came from is recorded with its claim, and a resume that would resolve
those names to other adapters is refused, whoever drove the run:

- ``agents=`` of the library: recorded by their names (they were not: a resume without them
  quietly took a registered agent or a built-in of the same name), also over a notebook's
  record by a library resume;
- an ``--agents`` module (``lockgate run``): recorded with the names the drive took from it
  (the mapping it was given, and what the module registered as it loaded), nothing guessed from
  its source: a resume given none for those its flow uses is refused (it called the built-in
  Codex CLI instead of the module's ``codex``), whether or not the module is still there; a
  resume of a run whose module gave none of them is not (it asked for the module for good);
  an older Lockgate's record of a module alone names no agents, and refuses nothing;
- a run another live process drives is refused as such first: giving the agents would not
  help, so asking for them first sent the user round twice.

Here a registry answering for ``writer`` stands for the other adapter (lockgate.toml, a
registered agent or a built-in) a resume without the run's agents would take.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.engine import Engine
from lockgate.engine.agentorigin import (
    AGENTS_NOT_GIVEN,
    PythonAgents,
    module_of,
    names_recorded,
    record_of,
)
from lockgate.engine.agents.registry import AgentRegistry
from lockgate.engine.drivers import Driver
from lockgate.engine.runner import make_runner, resume, run
from lockgate.engine.store import open_store
from lockgate.errors import ConfigError, RunDriven

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
# a second gate after the writer: a resume that ran it leaves the run waiting again
TWO_GATES = SPEC.replace('output: {from: "${write.output}"', 'output: {from: "${again.output}"') + (
    '      - {id: check, after: [write], gate: {on_approve: again, on_revise: null, on_kill: null}}\n'
    '      - {id: again, agent: writer, do: "write again", out: Note}\n')


def writer(task):
    return {"text": "from the run's function"}


def stand_in(task):
    return {"text": "from another adapter"}


def others() -> AgentRegistry:
    """A registry with its own ``writer``: what a resume given none would quietly take."""
    registry = AgentRegistry()
    registry.register("writer", stand_in)
    return registry


def _approve(store: Path, run_id: str, gate: str = "ok") -> Engine:
    engine = Engine(store=open_store(store))
    engine.resolve_waiting_gate(run_id, gate, "approve")
    return engine


async def _refused(run_id: str, store: Path, tmp_path: Path, **options) -> ConfigError:
    """The refusal of a resume of ``run_id`` with ``options``, which changed nothing."""
    version = Engine(store=open_store(store)).store.current_version(run_id)
    with pytest.raises(ConfigError) as refused:
        await resume(run_id, store=store, workspace=tmp_path, registry=others(), **options)
    engine = Engine(store=open_store(store))
    assert engine.store.current_version(run_id) == version and engine.driver_of(run_id) is None
    return refused.value


async def test_a_library_run_records_its_agents_and_a_resume_without_them_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    waiting = await run(SPEC, {}, agents={"writer": writer}, store=store, workspace=tmp_path, gates=None)
    assert waiting.status == "await_gate"
    engine = _approve(store, waiting.run_id)
    assert PythonAgents.parse(engine.last_agents(waiting.run_id)) == PythonAgents(("writer",))

    refused = await _refused(waiting.run_id, store, tmp_path)
    assert str(refused).startswith(f"run {waiting.run_id} was driven with agents given in Python (writer), and "
                                   "this resume was given none for writer")
    assert refused.detail == {"problem": AGENTS_NOT_GIVEN, "run_id": waiting.run_id, "agents": ["writer"],
                              "variable": None}

    done = await resume(waiting.run_id, store=store, workspace=tmp_path, registry=others(),
                        agents={"writer": writer})
    assert (done.status, done.output) == ("complete", {"text": "from the run's function"})


async def test_a_library_resume_records_its_agents_over_a_notebooks_record(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    agents = {"writer": writer}
    notebook = make_runner(store=store, workspace=tmp_path, agents=agents,
                           agents_module=PythonAgents.given(agents, "my_agents").record())
    waiting = await notebook.start(TWO_GATES, {})
    _approve(store, waiting.run_id)

    again = await resume(waiting.run_id, store=store, workspace=tmp_path, gates=None, agents={"writer": writer})
    assert again.status == "await_gate"
    engine = _approve(store, waiting.run_id, "check")
    # this drive's agents, by their names (no variable held them): not None, as before
    assert PythonAgents.parse(engine.last_agents(waiting.run_id)) == PythonAgents(("writer",))
    refused = await _refused(waiting.run_id, store, tmp_path)
    assert refused.detail["agents"] == ["writer"]


async def _module_run(tmp_path: Path, agents: dict, registry: AgentRegistry | None = None,
                      registered: tuple[str, ...] = ()) -> str:
    """A run driven as ``lockgate run --agents agents.py`` drives it (the module's functions,
    and the names it ``registered``, recorded with its resolved path), approved at its gate:
    nobody drives it."""
    module = str((tmp_path / "agents.py").resolve())
    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents=agents, registry=registry,
                        agents_module=record_of(agents, module, registered))
    waiting = await first.start(SPEC, {})
    _approve(tmp_path / "runs.db", waiting.run_id)
    return waiting.run_id


async def test_a_module_run_records_the_names_it_took_from_the_module(tmp_path: Path) -> None:
    module = str((tmp_path / "agents.py").resolve())
    first = make_runner(store=tmp_path / "runs.db", workspace=tmp_path, agents={"writer": writer, "a_b": writer},
                        agents_module=module)  # a module's name, as callers of make_runner give it
    waiting = await first.start(SPEC, {})
    recorded = first.engine.last_agents(waiting.run_id)
    assert recorded == 'python:{"names":["a_b","writer"],"module":"' + module + '"}'
    assert PythonAgents.parse(recorded) == PythonAgents(("a_b", "writer"), module=module)
    assert module_of(recorded) == module and names_recorded(recorded)


async def test_a_run_driven_with_a_modules_agents_is_resumed_only_with_agents_of_those_names(tmp_path: Path) -> None:
    run_id = await _module_run(tmp_path, {"writer": writer})
    store, module = tmp_path / "runs.db", str((tmp_path / "agents.py").resolve())

    refused = await _refused(run_id, store, tmp_path)
    assert str(refused).startswith(f"run {run_id} was driven with the agents of --agents {module} (writer), and "
                                   "this resume was given none for writer: another adapter")
    assert f"`lockgate run --resume {run_id} --agents {module}`" in str(refused)
    assert refused.detail == {"problem": AGENTS_NOT_GIVEN, "run_id": run_id, "agents": ["writer"],
                              "variable": None, "module": module}
    # another module's agents, without a writer, are none for it either
    assert (await _refused(run_id, store, tmp_path, agents={"helper": stand_in})).detail["agents"] == ["writer"]

    done = await resume(run_id, store=store, workspace=tmp_path, registry=others(), agents={"writer": writer})
    assert done.output == {"text": "from the run's function"}


async def test_a_name_the_module_registered_is_asked_for_and_given_by_a_module_registering_it(
        tmp_path: Path) -> None:
    # register("writer", fn) as the module loads: lockgate run records it with the module's functions
    run_id = await _module_run(tmp_path, {"helper": stand_in}, registry=others(), registered=("writer",))
    store, module = tmp_path / "runs.db", str((tmp_path / "agents.py").resolve())
    assert (await _refused(run_id, store, tmp_path)).detail["agents"] == ["writer"]
    # the module named again registers it again: its registry answers
    done = await resume(run_id, store=store, workspace=tmp_path, registry=others(), agents={"helper": stand_in},
                        agents_module=record_of({"helper": stand_in}, module, ("writer",)))
    assert done.output == {"text": "from another adapter"}


async def test_a_module_defining_none_of_the_flows_agents_is_not_asked_for(tmp_path: Path) -> None:
    # what lockgate run does not take from a module (a class instance, a functools.partial, a
    # function defined under an if that did not run) was resolved elsewhere, and is again
    run_id = await _module_run(tmp_path, {"helper": stand_in}, others())
    done = await resume(run_id, store=tmp_path / "runs.db", workspace=tmp_path, registry=others())
    assert done.output == {"text": "from another adapter"}


async def test_the_record_not_the_modules_file_says_what_a_resume_needs(tmp_path: Path) -> None:
    # the module's file is never read again: gone or not, the names the run took are asked for
    (tmp_path / "agents.py").write_text("def writer(task):\n    return {'text': 'module'}\n")
    run_id = await _module_run(tmp_path, {"writer": writer})
    (tmp_path / "agents.py").unlink()
    assert (await _refused(run_id, tmp_path / "runs.db", tmp_path)).detail["agents"] == ["writer"]


async def test_an_older_record_of_a_module_alone_refuses_nothing(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    (tmp_path / "agents.py").write_text("def writer(task):\n    return {'text': 'module'}\n")
    waiting = await run(SPEC, {}, agents={"writer": writer}, store=store, workspace=tmp_path, gates=None)
    engine = _approve(store, waiting.run_id)
    module = str((tmp_path / "agents.py").resolve())
    older = Driver.here("", module)  # what a Lockgate before the names were recorded wrote
    engine.claim(waiting.run_id, older)
    engine.release(waiting.run_id, older)
    assert engine.last_agents(waiting.run_id) == module and not names_recorded(module)
    assert module_of(module) == module and PythonAgents.parse(module) is None
    # which agents it gave is not known: the resume goes on, as before such resumes were refused
    done = await resume(waiting.run_id, store=store, workspace=tmp_path, registry=others())
    assert done.output == {"text": "from another adapter"}


async def test_a_run_another_process_drives_is_refused_as_driven_before_its_agents_are_asked_for(
        tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    agents = {"writer": writer}
    notebook = make_runner(store=store, workspace=tmp_path, agents=agents,
                           agents_module=PythonAgents.given(agents, "my_agents").record())
    waiting = await notebook.start(SPEC, {})
    holder = _approve(store, waiting.run_id)
    # a live process (this one, through another engine) drives it with the same agents
    holder.claim(waiting.run_id, Driver.here(None, holder.last_agents(waiting.run_id)))
    bare = make_runner(store=store, workspace=tmp_path)
    with pytest.raises(RunDriven, match=f"run {waiting.run_id} is being driven by process"):
        bare.check_resumable(waiting.run_id)
    with pytest.raises(ConfigError, match="was driven with agents given in Python"):
        bare.check_resumable(waiting.run_id, take_over=True)  # taking it over: the agents are asked for
