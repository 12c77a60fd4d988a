"""The read-side commands, run as the real ``lockgate`` command (review s11, findings 2, 3, 5, 8,
9): they read a store another process is writing to without waiting for its lock; refuse an
empty store file and leave it as it is; end on Ctrl-C with exit status 130 and one line; and
say which file (or standard output) a write failed on, and that a mistyped spec file does not
exist."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_support import gate_spec, lockgate_argv, lockgate_env
from test_runs_cli import gate_run

# Holds a write transaction on the database named by argv[1] until its stdin is closed.
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""


def lockgate(cwd: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True, text=True,
                          timeout=120, check=False, **kwargs)


def test_reads_do_not_wait_for_another_process_holding_a_write_transaction(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = gate_run(db)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        for command, shown in ((("runs",), run), (("show", run), "waiting_gate"), (("audit", run), "gate_waiting"),
                               (("verify", run), "audit chain intact"), (("why", run), "lockgate gate approve"),
                               (("graph", run), "flowchart")):
            done = lockgate(tmp_path, *command, "--store", str(db))
            assert done.returncode == 0 and shown in done.stdout, (command, done.stderr)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


@pytest.mark.parametrize("named", [True, False])
def test_an_empty_store_file_is_refused_by_the_read_commands_and_left_as_it_is(tmp_path: Path, named: bool) -> None:
    folder = tmp_path / ".lockgate"
    folder.mkdir()
    empty = folder / "lockgate.db"  # the default store, or one named by --store
    empty.touch()
    store = ("--store", str(empty)) if named else ()
    for command in (("runs",), ("verify", "abc123"), ("show", "abc123"), ("audit", "abc123"), ("graph", "abc123")):
        done = lockgate(tmp_path, *command, *store)
        assert done.returncode == 1, (command, done.stdout)
        assert f"{empty} is an empty file (0 bytes), not a Lockgate run store" in done.stderr, (command, done.stderr)
        assert "no runs" not in done.stdout
    assert sorted(path.name for path in folder.iterdir()) == ["lockgate.db"]
    assert empty.stat().st_size == 0


def test_lockgate_run_still_makes_an_empty_file_a_new_store(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(gate_spec())
    (tmp_path / "agents.py").write_text("def writer(task):\n    return {'text': 'done'}\n")
    db = tmp_path / "made_by_mktemp"
    db.touch()
    done = lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "topic=x", "--agents", "agents.py",
                    "--store", str(db), "--no-prompt")
    assert "waits at gate 'review'" in done.stderr, done.stderr
    listed = lockgate(tmp_path, "runs", "--store", str(db))
    assert listed.returncode == 0 and "running" in listed.stdout


def open_when_read(fifo: Path, proc: subprocess.Popen) -> int:
    """The FIFO ``fifo`` opened to write, once ``proc`` has opened it to read (the test fails
    if ``proc`` ends first: a watcher then opens it to read itself, ending the wait)."""
    def release_if_ended() -> None:
        proc.wait()
        with contextlib.suppress(OSError):  # gone with the test's folder
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))

    threading.Thread(target=release_if_ended, daemon=True).start()
    writer = os.open(fifo, os.O_WRONLY)
    if proc.poll() is not None:
        os.close(writer)
        pytest.fail(f"the command ended before it read its spec: {proc.communicate()}")
    return writer


@pytest.mark.parametrize("command", ["validate", "graph"])
def test_ctrl_c_while_a_command_reads_its_spec_exits_130_with_one_line(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "spec.stratum.yaml"
    os.mkfifo(fifo)
    proc = subprocess.Popen(lockgate_argv(command, str(fifo)), cwd=tmp_path, env=lockgate_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = open_when_read(fifo, proc)
    try:
        os.write(writer, b"version: 1\n")  # and it waits for the rest
        proc.send_signal(signal.SIGINT)
        # Python acts on a signal between bytecodes: one that lands just before the command
        # blocks in read() waits for the read to return, which this line makes it do.
        with contextlib.suppress(BrokenPipeError):  # the command has closed the spec already
            os.write(writer, b"flows: {}\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(writer)
    assert proc.returncode == 130, err
    assert err.strip() == f"lockgate {command}: interrupted"
    assert out == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_failed_write_names_standard_output_or_the_output_file(tmp_path: Path) -> None:
    """... and exits 74, not 1, which validate and verify use to say they found errors or a
    broken chain (review s12 late #3: a valid spec, an intact chain, written to a full disk)."""
    (tmp_path / "flow.stratum.yaml").write_text(gate_spec())
    db = tmp_path / "runs.db"
    run = gate_run(db)
    with open("/dev/full", "w") as full:
        for command in (("validate", "flow.stratum.yaml", "--format", "json"), ("validate", "flow.stratum.yaml"),
                        ("graph", "flow.stratum.yaml"), ("graph", "flow.stratum.yaml", "--format", "png"),
                        ("schema",), ("verify", run, "--store", str(db)), ("show", run, "--store", str(db))):
            done = subprocess.run(lockgate_argv(*command), cwd=tmp_path, env=lockgate_env(), stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=120, check=False)
            assert done.returncode == 74, command
            assert done.stderr == "error: cannot write to standard output: No space left on device\n", command
    done = lockgate(tmp_path, "schema", "-o", "/dev/full")
    assert done.returncode == 74 and done.stderr == "error: cannot write /dev/full: No space left on device\n"
    assert lockgate(tmp_path, "verify", run, "--store", str(db)).returncode == 0  # the chain is intact


def test_graph_refuses_flow_for_a_run_and_says_a_missing_spec_file_does_not_exist(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = gate_run(db)
    done = lockgate(tmp_path, "graph", run, "--flow", "nope", "--store", str(db))
    assert done.returncode == 2 and done.stdout == ""
    assert f"nope: {run} is a run, drawn as the flow it runs; --flow chooses a flow of a spec file" in done.stderr
    done = lockgate(tmp_path, "graph", "helth.stratum.yaml", "--store", str(db))
    assert done.returncode == 1
    assert done.stderr == "error: helth.stratum.yaml: no such file, and no run with this id in the store\n"
