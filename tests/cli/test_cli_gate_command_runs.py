"""A steering command whose decision starts an evaluate command (no other process drives the
run) runs it, saying on stderr which command it waits for."""

from __future__ import annotations

import json
import os
import signal
import subprocess

from cli_support import fifo_lines, in_project, lockgate_argv, lockgate_env
from click.testing import CliRunner
from specs import note_flow

from lockgate.cli import main

SPEC = note_flow("""      - id: ok
        gate: {on_approve: check, on_revise: null, on_kill: null}
      - id: check
        evaluate: {command: "cat > /dev/null; cat verdict.json", timeout_ms: 60000}
        out: Verdict
""", output="check", contract="Verdict")


# the command says it started on a FIFO, then runs until it is stopped
SLOW_SPEC = SPEC.replace('"cat > /dev/null; cat verdict.json"',
                         '"cat > /dev/null; echo $$ > started.fifo; exec sleep 120"')


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_gate_approve_says_which_command_it_runs(tmp_path, monkeypatch):
    in_project(tmp_path, monkeypatch, SPEC, "")
    (tmp_path / "verdict.json").write_text('{"status": "closed", "children": [], "reason": "fine"}')
    started = invoke("run", "flow.stratum.yaml", "--store", "runs.db", "--no-prompt")
    assert started.exit_code == 3, started.stderr
    rid = json.loads(started.stdout)["run_id"]
    approved = invoke("gate", "approve", rid, "ok", "--store", "runs.db")
    assert approved.exit_code == 0, approved.stderr
    assert approved.stderr.splitlines()[0] == (
        "running the command of evaluate step check (up to 60 s): cat > /dev/null; cat verdict.json")
    assert approved.stdout.splitlines()[0] == f"run {rid}: complete"


def test_ctrl_c_on_gate_approve_says_where_the_run_stands(tmp_path, monkeypatch):
    """Ctrl-C while ``gate approve`` runs the command its decision started: the decision stands,
    the command is stopped, and the interrupted command says what continues the run (exit 130),
    not click's bare "Aborted!"."""
    in_project(tmp_path, monkeypatch, SLOW_SPEC, "")
    os.mkfifo(tmp_path / "started.fifo")
    started = invoke("run", "flow.stratum.yaml", "--store", "runs.db", "--no-prompt")
    assert started.exit_code == 3, started.stderr
    rid = json.loads(started.stdout)["run_id"]
    approving = subprocess.Popen(lockgate_argv("gate", "approve", rid, "ok", "--store", "runs.db"), cwd=tmp_path,
                                 env=lockgate_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        shell = int(fifo_lines(tmp_path / "started.fifo", 1, [approving]))
        approving.send_signal(signal.SIGINT)
        out, err = approving.communicate(timeout=60)
    finally:
        approving.kill()
    assert approving.returncode == 130, err
    assert "Aborted!" not in err
    assert f"interrupted; what was saved stands. Run {rid} now:" in err
    assert f"lockgate run --resume {rid} --store runs.db" in err, err
    with open(f"/proc/{shell}/stat") if os.path.exists(f"/proc/{shell}") else open(os.devnull) as stat:
        state = stat.read().split(")")[-1].split()[:1]
    assert state in ([], ["Z"]), f"the command (pid {shell}) still runs: {state}"
    status = invoke("why", rid, "--store", "runs.db", "--format", "json")
    assert "ok" not in [w.get("step_id") for w in json.loads(status.stdout)["waits"] if w.get("kind") == "gate"]


def test_gate_approve_whose_command_is_taken_over_says_who_runs_it_now(tmp_path, monkeypatch):
    """``lockgate run --resume --take-over`` while ``gate approve`` runs the command its decision
    started: the approve's command is stopped, and it says which process runs it now (it said
    only "run R: evaluating"; review s8-r5)."""
    in_project(tmp_path, monkeypatch, SLOW_SPEC, "")
    os.mkfifo(tmp_path / "started.fifo")
    started = invoke("run", "flow.stratum.yaml", "--store", "runs.db", "--no-prompt")
    rid = json.loads(started.stdout)["run_id"]

    def lockgate(*args: str) -> subprocess.Popen:
        return subprocess.Popen(lockgate_argv(*args, "--store", "runs.db"), cwd=tmp_path, env=lockgate_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    approving = lockgate("gate", "approve", rid, "ok")
    taker = None
    try:
        fifo_lines(tmp_path / "started.fifo", 1, [approving])
        taker = lockgate("run", "--resume", rid, "--take-over", "--no-prompt")
        fifo_lines(tmp_path / "started.fifo", 1, [taker])  # the taker runs the command afresh
        out, err = approving.communicate(timeout=60)
    finally:
        for proc in (approving, taker):
            if proc is not None:
                proc.kill()
                proc.communicate()
    assert approving.returncode == 0, err
    assert out.splitlines()[-1] == (f"run {rid}: the command of evaluate step check runs in process {taker.pid} "
                                    f"on this host; follow it with: lockgate why {rid} --store runs.db")
