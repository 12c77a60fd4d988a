"""``lockgate run --resume`` of a run held by a process that does not drive it is refused with
words for what that process does: one whose drive is stopping (Ctrl-C) "is stopping (Ctrl-C);
resume once it has exited", one that only runs an evaluate command (``lockgate gate approve``)
"is running the command of step c1; resume once it ends". Neither is offered to be stopped (it
gives the run up on its own): the resume is offered for then.

Every process is real; the command and the agent wait on FIFOs the test writes."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest
from claim_holders import SPEC, VERDICT, project, started, until_released
from processes import GUARD_S, wait_until

from lockgate.engine import Engine
from lockgate.engine.drivers import Driver, ended
from lockgate.engine.store import open_store
from lockgate.errors import RunDriven

ARGS = ("--agents", "agents.py", "--store", "runs.db", "--no-prompt")


def refused_resume(folder: Path, run_id: str) -> str:
    """What ``lockgate run --resume RUN`` prints on stderr, refused (exit 4)."""
    resume = started(folder, "run", "--resume", run_id, *ARGS)
    _, err = resume.communicate(timeout=GUARD_S * 4)
    assert resume.returncode == 4, err
    return err


def test_a_resume_of_a_run_whose_drive_is_stopping_says_to_resume_once_it_has_exited(tmp_path: Path) -> None:
    project(tmp_path)
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run = started(tmp_path, "run", "flow.stratum.yaml", *ARGS)
    with until_released(run, tmp_path / "release", "go"):
        wait_until(lambda: (tmp_path / "started").exists() and (tmp_path / "started").read_text(), "the agent")
        run_id = (tmp_path / "started").read_text()
        run.send_signal(signal.SIGINT)
        wait_until(lambda: engine.claim_of(run_id).stopping, "the drive to stop")

        err = refused_resume(tmp_path, run_id)

        assert (f"error: run {run_id}: process {run.pid} on this host is stopping (Ctrl-C); resume once it has "
                "exited.") in err
        assert f"  then resume: lockgate run --resume {run_id} --agents agents.py --store runs.db" in err
        assert "being driven" not in err and "or stop process" not in err
    assert run.returncode == 130, run.stderr
    engine.close()


def test_a_resume_of_a_run_whose_command_runs_elsewhere_says_to_resume_once_it_ends(tmp_path: Path) -> None:
    project(tmp_path)
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(SPEC, {})["run_id"]  # x dispatched, g1 waiting: nobody drives it
    approve = started(tmp_path, "gate", "approve", run_id, "g1", "--store", "runs.db")
    with until_released(approve, tmp_path / "verdict", VERDICT):
        wait_until(lambda: (tmp_path / "ran").exists(), "the command")
        words = f"run {run_id}: process {approve.pid} on this host is running the command of step c1; resume once " \
                "it ends"

        err = refused_resume(tmp_path, run_id)

        assert f"error: {words}." in err
        assert f"  then resume: lockgate run --resume {run_id} --agents agents.py --store runs.db" in err
        assert "being driven" not in err and "or stop process" not in err
        claimant = Driver.here()
        try:  # a claim refused in its transaction says the same
            with pytest.raises(RunDriven, match=re.escape(words)):
                engine.claim(run_id, claimant)
        finally:
            ended(claimant)
    assert approve.returncode == 0, approve.stderr
    engine.close()
