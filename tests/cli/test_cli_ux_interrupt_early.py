"""Ctrl-C before ``lockgate run`` drives anything: a new run was not planned, so nothing is left
behind; a resumed run is as it was, and the command says how to go on with it, as it does
after a Ctrl-C in the middle of a run. The interrupt is raised where the command would meet it
(reading the agents module, or the event loop before the run is driven), in process."""

from __future__ import annotations

import pytest
from cli_support import gate_spec, in_project
from click.testing import CliRunner

from lockgate.cli import interrupt, main
from lockgate.cli import run as run_module
from lockgate.dsl.loader import load
from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store

SPEC = gate_spec(revise_to="draft")


@pytest.fixture
def project(tmp_path, monkeypatch):
    return in_project(tmp_path, monkeypatch, SPEC, "def writer(task):\n    return {'text': task.prompt}\n")


def planned(store: str) -> str:
    """A run of SPEC planned in ``store`` and waiting for its first step."""
    engine = Engine(store=open_store(store))
    try:
        return engine.plan(load(SPEC).spec, {"topic": "x"})["run_id"]
    finally:
        engine.close()


def interrupt_loading_agents(monkeypatch) -> None:
    def interrupted(module: str) -> dict:
        raise KeyboardInterrupt
    monkeypatch.setattr(run_module, "load_agents", interrupted)


def interrupt_the_loop(monkeypatch) -> None:
    """Ctrl-C as the event loop starts: the runner is detached, the run not driven."""
    def interrupted(coro, on_interrupt):
        coro.close()
        on_interrupt()
        raise KeyboardInterrupt
    monkeypatch.setattr(interrupt, "run", interrupted)


def lockgate(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def resumed_stderr(rid: str) -> list[str]:
    """What ``lockgate run --resume RID --agents agents.py --store runs.db`` writes when it is
    interrupted, with RID planned in runs.db; its exit status is checked."""
    result = lockgate("run", "--resume", rid, "--agents", "agents.py", "--store", "runs.db")
    assert result.exit_code == 130, result.stderr
    return result.stderr.splitlines()


def go_on(rid: str) -> list[str]:
    """The lines after the first of the report of an interrupted resume of ``rid``."""
    return [f"  continue it with: lockgate run --resume {rid} --agents agents.py --store runs.db",
            f"  or cancel it for good: lockgate cancel {rid} --store runs.db"]


@pytest.mark.parametrize("where", [interrupt_loading_agents, interrupt_the_loop])
def test_a_new_run_interrupted_before_it_started_leaves_nothing(project, monkeypatch, where):
    where(monkeypatch)
    result = lockgate("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                      "--store", "runs.db", "--no-prompt")
    assert (result.exit_code, result.stderr) == (130, "interrupted before the run started\n")
    assert result.stdout == ""


def test_a_resume_interrupted_before_the_loop_says_how_to_go_on(project, monkeypatch):
    """Interrupted before the store was opened: where the run stands is not known, so the
    report says how to find out, and how to go on if it is still running."""
    rid = planned("runs.db")
    interrupt_loading_agents(monkeypatch)
    assert resumed_stderr(rid) == [
        f"interrupted before run {rid} was driven; nothing changed",
        f"  see where it stands: lockgate show {rid} --store runs.db",
        f"  if it is still running, continue it with: lockgate run --resume {rid} --agents agents.py --store runs.db"]


def test_a_resume_interrupted_before_it_is_driven_is_not_said_to_be_unstarted(project, monkeypatch):
    rid = planned("runs.db")
    interrupt_the_loop(monkeypatch)
    assert resumed_stderr(rid) == [
        f"interrupted: run {rid} is left as it was (its agent calls were stopped; nothing recorded is lost)",
        *go_on(rid)]
    engine = Engine(store=open_store("runs.db"))
    assert engine.status(rid)["status"] == "execute_step"
    engine.close()
