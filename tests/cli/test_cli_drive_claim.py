"""One process drives a run at a time: ``lockgate run --resume`` of a run another live
``lockgate run`` drives is refused at once (exit 4, nothing changed, its agent not called again),
with the commands that watch, stop or take over the run; once that process is killed, the same
resume drives the run to its end without waiting."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_support import fifo_lines, lockgate_argv, lockgate_env
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = note_flow('      - {id: write, agent: writer, do: "write", out: Note}\n', output="write")
# The writer logs each call. Its first call says it started, then waits on a FIFO nobody writes
# (the test kills the process meanwhile); a later call answers at once.
AGENTS = """
import os

def writer(task):
    with open("calls.log", "a") as log:
        log.write("writer\\n")
    if not os.path.exists("started-once"):
        open("started-once", "w").close()
        with open("started.fifo", "w") as fifo:
            fifo.write(task.run_id + "\\n")
        with open("never.fifo") as fifo:
            fifo.read()
    return {"text": "written"}
"""
ARGS = ("--agents", "agents.py", "--store", "runs.db", "--no-prompt")


def _resume(tmp_path: Path, run_id: str, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv("run", "--resume", run_id, *ARGS, *more), cwd=tmp_path,
                          env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)


def test_a_resume_of_a_run_another_process_drives_is_refused_until_that_process_is_gone(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    for fifo in ("started.fifo", "never.fifo"):
        os.mkfifo(tmp_path / fifo)
    first = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", *ARGS), cwd=tmp_path, env=lockgate_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        run_id = fifo_lines(tmp_path / "started.fifo", 1, [first]).strip()
        engine = Engine(store=open_store(tmp_path / "runs.db"))
        version = engine.store.current_version(run_id)

        refused = _resume(tmp_path, run_id)

        assert refused.returncode == 4, refused.stderr
        assert f"run {run_id} is being driven by process {first.pid} on this host" in refused.stderr
        assert f"lockgate why {run_id} --store runs.db" in refused.stderr
        assert "--take-over" not in refused.stderr  # alive on this machine: its claim frees itself
        assert f"or stop process {first.pid} (Ctrl-C in its terminal; a notebook kernel: restart it)" in refused.stderr
        assert (tmp_path / "calls.log").read_text().split() == ["writer"]  # not called a second time
        assert engine.store.current_version(run_id) == version  # nothing written
        why = engine.why(run_id)
        assert why["summary"] == (f"run {run_id} is running: 0 gates and 1 dispatch outstanding; "
                                  f"process {first.pid} on this host is driving it")
        (wait,) = why["waits"]  # the agent is at work there: no resume offered
        assert f"process {first.pid} on this host" in wait["reason"]
        assert wait["commands"] == [f"lockgate cancel {run_id}"]
        engine.close()
    finally:
        first.kill()
        first.communicate()

    resumed = _resume(tmp_path, run_id)  # its driver is dead: no waiting for its claim to lapse

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"text": "written"}
    assert (tmp_path / "calls.log").read_text().split() == ["writer", "writer"]


def test_take_over_goes_with_resume(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    done = subprocess.run(lockgate_argv("run", "flow.stratum.yaml", "--take-over"), cwd=tmp_path,
                          env=lockgate_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--take-over goes with --resume RUN" in done.stderr


GATED = note_flow("""      - {id: ok, gate: {on_approve: write, on_revise: null, on_kill: null}}
      - {id: write, agent: writer, do: "write", out: Note}
""", output="write")
PROJECT = """[agents.writer]
type = "command"
command = ["sh", "-c", "cat >/dev/null; echo '{\\"text\\": \\"from the project\\"}'"]
"""


def test_a_resume_from_a_folder_that_finds_another_configuration_names_the_one_the_run_used(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "flow.stratum.yaml").write_text(GATED)
    (project / "lockgate.toml").write_text(PROJECT)
    run = lockgate_argv("run", "proj/flow.stratum.yaml", "--store", "runs.db", "--no-prompt")
    waiting = subprocess.run(run, cwd=tmp_path, env=lockgate_env(), capture_output=True, text=True, timeout=120,
                             check=False)
    assert waiting.returncode == 3, waiting.stderr
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    (summary,) = engine.runs()
    run_id = summary["run_id"]
    engine.resolve_waiting_gate(run_id, "ok", "approve")
    engine.close()

    def resume(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(lockgate_argv("run", "--resume", run_id, "--store", "runs.db", *more), cwd=tmp_path,
                              env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)

    refused = resume()  # from tmp_path, which has no lockgate.toml
    assert refused.returncode == 2, refused.stderr
    assert (f"run {run_id} was driven with the configuration {(project / 'lockgate.toml').resolve()}, but this "
            "resume found no configuration file") in refused.stderr
    done = resume("--config", "proj/lockgate.toml")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"text": "from the project"}


def test_the_resume_commands_printed_for_a_run_name_the_configuration_it_was_driven_with(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "flow.stratum.yaml").write_text(GATED)
    (project / "lockgate.toml").write_text(PROJECT)
    waiting = subprocess.run(lockgate_argv("run", "proj/flow.stratum.yaml", "--store", "runs.db", "--no-prompt"),
                             cwd=tmp_path, env=lockgate_env(), capture_output=True, text=True, timeout=120,
                             check=False)
    assert waiting.returncode == 3, waiting.stderr
    run_id = json.loads(waiting.stdout)["run_id"]
    approved = subprocess.run(lockgate_argv("gate", "approve", run_id, "ok", "--store", "runs.db"), cwd=tmp_path,
                              env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)
    expected = f"lockgate run --resume {run_id} --store runs.db --config proj/lockgate.toml"
    assert approved.returncode == 0 and expected in approved.stdout, approved.stdout + approved.stderr
    resumed = subprocess.run(lockgate_argv(*expected.split()[1:]), cwd=tmp_path,
                             env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr  # the printed command works as printed
    assert json.loads(resumed.stdout) == {"text": "from the project"}


def test_a_run_driven_from_another_machine_may_be_taken_over(tmp_path: Path) -> None:
    from dataclasses import replace

    from lockgate.engine.drivers import Driver

    (tmp_path / "agents.py").write_text("def writer(task):\n    return {'text': 'here'}\n")
    engine = Engine(store=open_store(tmp_path / "runs.db"))
    elsewhere = replace(Driver.here(), host="another-host.example")  # renewed just now
    run_id = engine.plan(SPEC, {}, driver=elsewhere)["run_id"]
    engine.close()
    refused = _resume(tmp_path, run_id)
    assert refused.returncode == 4
    assert f"run {run_id} is being driven by process {elsewhere.pid} on host another-host.example" in refused.stderr
    assert f"lockgate run --resume {run_id} --agents agents.py --store runs.db --take-over" in refused.stderr
    taken = _resume(tmp_path, run_id, "--take-over")
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout) == {"text": "here"}
