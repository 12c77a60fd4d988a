"""The commands the CLI prints for going on with a run work when typed: a resume command carries
``--store`` when one was named and ``--agents`` when the run needs a module (the one given to
``lockgate run``, which its claim records; a placeholder, said to be one, where the store cannot
tell), and an agent nobody defines is explained in command-line terms."""

from __future__ import annotations

import json
import shlex
import sys
import textwrap

import pytest
from cli_support import gate_spec, in_project
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.dsl.loader import load
from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store

SPEC = gate_spec(revise_to="draft")

AGENTS = "def writer(task):\n    return {'text': task.prompt}\n"
PLACEHOLDER_NOTE = "(the store does not record the --agents module a run was started with: give the same one)"


@pytest.fixture
def project(tmp_path, monkeypatch):
    return in_project(tmp_path, monkeypatch, SPEC, AGENTS)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def at_gate(store: str) -> str:
    """A run of SPEC in ``store`` waiting at its gate, driven through the engine (no agent)."""
    engine = Engine(store=open_store(store))
    first = engine.plan(load(SPEC).spec, {"topic": "x"})
    engine.step_done(first["run_id"], "draft", {"text": "t"}, first["token"])
    engine.close()
    return first["run_id"]


def configure_writer(project) -> None:
    (project / "lockgate.toml").write_text(textwrap.dedent(f"""
        [agents.writer]
        type = "command"
        command = [{json.dumps(sys.executable)}, "-c", "print('{{}}')"]
        """))


def test_run_at_a_gate_prints_commands_with_its_own_options(project):
    result = invoke("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                    "--store", "runs.db", "--no-prompt")
    assert result.exit_code == 3, result.stderr
    rid = json.loads(result.stdout)["run_id"]
    assert result.stderr.splitlines()[-5:] == [
        f"run {rid} waits at gate 'review'; decide with:",
        f"  lockgate gate approve {rid} review --store runs.db",
        f"  lockgate gate revise {rid} review --store runs.db --note '...'",
        f"  lockgate gate reject {rid} review --store runs.db",
        f"then continue it with: lockgate run --resume {rid} --agents agents.py --store runs.db",
    ]


def test_a_steering_command_prints_the_decisions_run_prints_and_they_work_typed(project):
    rid = at_gate("runs.db")
    shown = invoke("resume", rid, "--store", "runs.db")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        f"run {rid}: gate review waits for a decision; decide with:",
        f"  lockgate gate approve {rid} review --store runs.db",
        f"  lockgate gate revise {rid} review --store runs.db --note '...'",
        f"  lockgate gate reject {rid} review --store runs.db",
        f"then continue it with: lockgate run --resume {rid} --store runs.db --agents <your agents module>",
        f"  {PLACEHOLDER_NOTE}",
    ]
    revise = shlex.split(shown.stdout.splitlines()[2])
    revised = invoke(*revise[1:])
    assert revised.exit_code == 0, revised.stderr
    assert revised.stdout.splitlines()[0] == f"run {rid}: 1 step(s) to execute: draft"


def test_after_a_revise_the_resume_command_asks_for_the_agents_module(project):
    rid = at_gate("runs.db")
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--note", "more", "--store", "runs.db")
    assert revised.exit_code == 0, revised.stderr
    command = f"lockgate run --resume {rid} --store runs.db --agents <your agents module>"
    assert revised.stdout.splitlines()[-2:] == [f"continue with agents: {command}",
                                               f"  {PLACEHOLDER_NOTE}"]
    # with the module filled in, the command carries the run on
    resumed = invoke(*command.replace("<your agents module>", "agents.py").split()[1:], "--no-prompt")
    assert resumed.exit_code == 3, resumed.stderr
    assert f"run {rid} waits at gate 'review'" in resumed.stderr


def test_why_spells_the_resume_command_the_same_way(project):
    rid = at_gate("runs.db")
    invoke("gate", "revise", rid, "review", "--note", "again", "--store", "runs.db")
    why = invoke("why", rid, "--store", "runs.db")
    assert why.exit_code == 0, why.stderr
    assert why.stdout.splitlines()[-3:] == [
        f"    lockgate run --resume {rid} --store runs.db --agents <your agents module>",
        f"    {PLACEHOLDER_NOTE}",
        f"    lockgate cancel {rid} --store runs.db",
    ]
    # tools get the engine's data as it is
    data = json.loads(invoke("why", rid, "--store", "runs.db", "--format", "json").stdout)
    assert data["waits"][0]["commands"] == [f"lockgate run --resume {rid}", f"lockgate cancel {rid}"]


def test_why_adds_the_named_store_to_each_command_the_engine_suggests(project):
    rid = at_gate("my runs.db")
    waiting = invoke("why", rid, "--store", "my runs.db")
    assert waiting.stdout.splitlines()[-2:] == [
        f"""    lockgate gate revise {rid} review --note "..." --store 'my runs.db'""",
        f"""    lockgate gate reject {rid} review --note "..." --store 'my runs.db'""",
    ]
    engine = Engine(store=open_store("my runs.db"))
    engine.commit(rid, "before review")
    engine.resolve_waiting_gate(rid, "review", "kill", "no", "human")
    engine.close()
    killed = invoke("why", rid, "--store", "my runs.db")
    assert killed.stdout.splitlines()[-1] == f"    lockgate revert {rid} 'before review' --store 'my runs.db'"
    # tools get the commands as data too, without the store
    (wait,) = json.loads(invoke("why", rid, "--store", "my runs.db", "--format", "json").stdout)["waits"]
    assert wait["actions"] == [{"command": ["revert"], "args": [rid, "before review"], "options": {}}]
    revert = shlex.split(killed.stdout.splitlines()[-1])
    reverted = invoke(*revert[1:])
    assert reverted.stdout.splitlines()[0] == f"run {rid}: gate review waits for a decision; decide with:"


def test_a_store_from_the_environment_is_not_repeated(project, monkeypatch):
    monkeypatch.setenv("LOCKGATE_STORE", str(project / "runs.db"))
    rid = at_gate(str(project / "runs.db"))
    waiting = invoke("why", rid)
    assert f'    lockgate gate approve {rid} review --note "..."' in waiting.stdout.splitlines()
    revised = invoke("gate", "revise", rid, "review", "--note", "again")
    assert (f"continue with agents: lockgate run --resume {rid} --agents <your agents module>"
            in revised.stdout.splitlines())


def driven_at_gate(*agents: str) -> str:
    """A run of SPEC in runs.db waiting at its gate, driven by ``lockgate run --agents AGENTS``."""
    started = invoke("run", "flow.stratum.yaml", "--agents", *agents, "--input", "topic=x",
                     "--store", "runs.db", "--no-prompt")
    assert started.exit_code == 3, started.stderr
    return json.loads(started.stdout)["run_id"]


def test_the_commands_name_the_agents_module_the_run_was_driven_with(project):
    rid = driven_at_gate("agents.py")
    resume = f"lockgate run --resume {rid} --agents agents.py --store runs.db"
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--note", "more", "--store", "runs.db")
    assert revised.stdout.splitlines()[-1] == f"continue with agents: {resume}"
    why = invoke("why", rid, "--store", "runs.db")
    assert f"    {resume}" in why.stdout.splitlines()
    assert "<your agents module>" not in why.stdout
    resumed = invoke(*shlex.split(resume)[1:], "--no-prompt")
    assert resumed.exit_code == 3, resumed.stderr
    assert f"run {rid} waits at gate 'review'" in resumed.stderr


def test_a_module_outside_the_current_folder_is_named_by_its_path(project, monkeypatch):
    rid = driven_at_gate("agents.py")
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--store", "../runs.db")
    assert revised.stdout.splitlines()[-1] == (
        f"continue with agents: lockgate run --resume {rid} --agents {project / 'agents.py'} --store ../runs.db")


def test_a_dotted_module_is_named_as_it_was_given(project):
    (project / "writers.py").write_text(AGENTS)
    rid = driven_at_gate("writers")
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--store", "runs.db")
    assert revised.stdout.splitlines()[-1] == (
        f"continue with agents: lockgate run --resume {rid} --agents writers --store runs.db")


def test_a_resume_without_the_module_it_needs_is_told_which_one(project):
    rid = driven_at_gate("agents.py")
    invoke("gate", "revise", rid, "review", "--note", "again", "--store", "runs.db")
    before = invoke("show", rid, "--store", "runs.db", "--format", "json").stdout
    resumed = invoke("run", "--resume", rid, "--store", "runs.db")
    assert (resumed.exit_code, resumed.stderr.strip()) == (2, (
        f"error: run {rid} was driven with the agents of --agents agents.py: give it again: "
        f"lockgate run --resume {rid} --agents agents.py --store runs.db"))
    assert invoke("show", rid, "--store", "runs.db", "--format", "json").stdout == before  # nothing changed
    # a configured writer is another agent than the module's: the run is not resumed with it
    # (its steps would silently go to another adapter: 4d434e8)
    configure_writer(project)
    resumed = invoke("run", "--resume", rid, "--store", "runs.db", "--config", "lockgate.toml", "--no-prompt")
    assert resumed.exit_code == 2, resumed.stderr
    assert resumed.stderr.strip() == (f"error: run {rid} was driven with the agents of --agents agents.py: give it "
                                      f"again: lockgate run --resume {rid} --agents agents.py --store runs.db "
                                      "--config lockgate.toml")


def test_a_module_that_is_gone_is_said_to_be(project):
    rid = driven_at_gate("agents.py")
    invoke("gate", "revise", rid, "review", "--note", "again", "--store", "runs.db")
    (project / "agents.py").unlink()
    gone = (f"the run was driven with --agents {project / 'agents.py'}, which is not there any more: "
            "give the module that defines its agents")
    why = invoke("why", rid, "--store", "runs.db")
    assert why.stdout.splitlines()[-3:-1] == [
        f"    lockgate run --resume {rid} --store runs.db --agents <your agents module>",
        f"    ({gone})"]
    resumed = invoke("run", "--resume", rid, "--store", "runs.db")
    assert (resumed.exit_code, resumed.stderr.strip()) == (2, f"error: {gone}")


def test_agents_from_the_configuration_need_no_module(project):
    configure_writer(project)
    rid = at_gate("runs.db")
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--store", "runs.db")
    assert revised.stdout.splitlines()[-1] == (
        f"continue with agents: lockgate run --resume {rid} --store runs.db")
    why = invoke("why", rid, "--store", "runs.db")
    assert f"    lockgate run --resume {rid} --store runs.db" in why.stdout.splitlines()
    assert "--agents" not in why.stdout


@pytest.mark.parametrize(("args", "message"), [
    ((), ("no agent named 'writer': pass --agents FILE.py defining writer(), "
          "or configure it in lockgate.toml ([agents.writer])")),
    (("--agents", "other.py"), ("no agent named 'writer': define writer() in other.py (--agents), "
                                "or configure it in lockgate.toml ([agents.writer])")),
])
def test_an_unknown_agent_is_explained_for_the_command_line(project, args, message):
    (project / "other.py").write_text("def reviewer(task):\n    return {}\n")
    started = invoke("run", "flow.stratum.yaml", "--input", "topic=x", "--store", "runs.db", *args)
    assert (started.exit_code, started.stderr.strip()) == (2, f"error: {message}")
    engine = Engine(store=open_store("runs.db"))
    rid = engine.plan(load(SPEC).spec, {"topic": "x"})["run_id"]
    engine.close()
    resumed = invoke("run", "--resume", rid, "--store", "runs.db", *args)
    assert (resumed.exit_code, resumed.stderr.strip()) == (2, f"error: {message}")


def test_an_unknown_agent_names_the_configuration_read(project):
    (project / "lockgate.toml").write_text('[agents.reviewer]\ntype = "command"\ncommand = ["true"]\n')
    started = invoke("run", "flow.stratum.yaml", "--input", "topic=x", "--store", "runs.db")
    assert started.exit_code == 2
    assert started.stderr.strip() == (
        "error: no agent named 'writer': pass --agents FILE.py defining writer(), or configure it "
        f"in {project / 'lockgate.toml'} ([agents.writer])")


def test_the_unknown_agent_hint_reads_the_error_s_facts_not_its_words(tmp_path):
    from lockgate.cli import hints
    from lockgate.engine.agents import AgentRegistry, ProjectConfig, resolve_agent
    from lockgate.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        resolve_agent("fact-checker", registry=AgentRegistry(),
                      config=ProjectConfig(path=tmp_path / "lockgate.toml"))
    raised.value.args = ("reworded by the engine",)
    assert hints.unknown_agent(raised.value, agents="mine.py") == (
        "no agent named 'fact-checker': define fact_checker() in mine.py (--agents), "
        f"or configure it in {tmp_path / 'lockgate.toml'} ([agents.fact-checker])")
    # the same words without the facts (the runner's judge) are left as they are
    judge = ConfigError("no agent named 'nobody' to be the judge; the agents are: claude, codex")
    assert hints.unknown_agent(judge, agents=None) is None


@pytest.mark.parametrize(("store", "shown"), [
    ("postgresql://lg:s3cret@db.internal:5432/runs", "postgresql://lg:****@db.internal:5432/runs"),
    ("postgresql://:s3cret@db/runs?sslmode=require", "postgresql://:****@db/runs?sslmode=require"),
    ("postgresql://lg@db/runs", "postgresql://lg@db/runs"),
    ("postgresql://db/runs?sslmode=require&password=s3cret", "postgresql://db/runs?sslmode=require&password=****"),
    ("postgresql://lg:s3cret@[::1/runs", "postgresql://****"),
    ("runs.db", "runs.db"),
])
def test_printed_commands_hide_a_store_password(store, shown):
    from lockgate.cli import hints
    from lockgate.engine.explain import action

    assert hints.shown_store(store) == shown
    assert "s3cret" not in hints.resume_command("R", store=store) + hints.engine_command(action("audit", "R"),
                                                                                          store=store)


def test_a_configuration_beside_the_spec_goes_into_the_resume_command(project):
    flows = project / "flows"
    flows.mkdir()
    (project / "flow.stratum.yaml").rename(flows / "flow.stratum.yaml")
    (flows / "beside_agents.py").write_text(AGENTS)  # a module name no other test imports
    (flows / "lockgate.toml").write_text('[agents.writer]\ntype = "python"\ncallable = "beside_agents:writer"\n')
    result = invoke("run", "flows/flow.stratum.yaml", "--input", "topic=x", "--store", "runs.db", "--no-prompt")
    assert result.exit_code == 3, result.stderr
    rid = json.loads(result.stdout)["run_id"]
    command = f"lockgate run --resume {rid} --store runs.db --config flows/lockgate.toml"
    assert result.stderr.splitlines()[-1] == f"then continue it with: {command}"
    invoke("gate", "approve", rid, "review", "--store", "runs.db")
    resumed = invoke(*command.split()[1:])
    assert resumed.exit_code == 0, resumed.stderr


def test_a_gate_that_cannot_send_work_back_is_not_offered_a_revise(tmp_path, monkeypatch):
    in_project(tmp_path, monkeypatch, gate_spec(), AGENTS)  # on_revise: null
    result = invoke("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                    "--store", "runs.db", "--no-prompt")
    assert result.exit_code == 3, result.stderr
    rid = json.loads(result.stdout)["run_id"]
    assert result.stderr.splitlines()[-4:-1] == [
        f"run {rid} waits at gate 'review'; decide with:",
        f"  lockgate gate approve {rid} review --store runs.db",
        f"  lockgate gate reject {rid} review --store runs.db",
    ]
    shown = invoke("resume", rid, "--store", "runs.db")
    assert "revise" not in shown.stdout and f"lockgate gate approve {rid} review" in shown.stdout


def test_a_run_driven_without_a_configuration_is_resumed_from_a_folder_with_one_on_purpose(project, monkeypatch):
    rid = driven_at_gate("agents.py")
    (project / "other").mkdir()
    monkeypatch.chdir(project / "other")
    (project / "other" / "lockgate.toml").write_text('[agents.reviewer]\ntype = "command"\ncommand = ["true"]\n')
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--store", "../runs.db")
    command, note = revised.stdout.splitlines()[-2:]
    assert command == (f"continue with agents: lockgate run --resume {rid} --agents {project / 'agents.py'} "
                       "--store ../runs.db --config lockgate.toml")
    assert note == ("  (the run was driven without a configuration file: --config lockgate.toml takes this "
                    "folder's on purpose; or resume from a folder without one)")
    resumed = invoke(*shlex.split(command.removeprefix("continue with agents: "))[1:], "--no-prompt")
    assert resumed.exit_code == 3, resumed.stderr  # the writer drafted again; the gate waits
