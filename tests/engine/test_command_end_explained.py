"""A command agent's failure says why the command could not run or how it ended: a script whose
``#!`` interpreter is missing is not reported as a missing file, and a command killed by a
signal is not reported as an exit status. Real files and real subprocesses."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from agent_support import write_script

from lockgate.engine.agents import CommandAgent, Task


def task(cwd: Path) -> Task:
    return Task(run_id="r1", step_id="write", prompt="Write", agent="lint", cwd=str(cwd))


def script(directory: Path, name: str, text: bytes) -> Path:
    path = directory / name
    path.write_bytes(text)
    path.chmod(0o755)
    return path


async def failure_of(command: list[str], workspace: Path, **kw) -> str:
    result = await CommandAgent("lint", command, **kw).execute(task(workspace))
    assert not result.ok
    return result.failure


async def test_a_missing_interpreter_is_named(tmp_path):
    script(tmp_path, "tool2.sh", b"#!/no/interp\necho '{}'\n")
    failure = await failure_of(["./tool2.sh"], tmp_path)
    assert failure == ("command `./tool2.sh`: cannot run './tool2.sh': the interpreter its first line "
                       "names, '/no/interp', was not found")


async def test_a_missing_interpreter_with_arguments_and_spaces(tmp_path):
    path = script(tmp_path, "tool.sh", b"#! \t/no/such/python3 -u -X dev\nprint('{}')\n")
    failure = await failure_of([str(path)], tmp_path)
    assert failure.endswith(": the interpreter its first line names, '/no/such/python3', was not found")


async def test_a_script_on_path_with_a_missing_interpreter(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir, "team-agent", b"#!/opt/missing/node\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    failure = await failure_of(["team-agent"], tmp_path, env=env)
    assert failure.endswith("cannot run 'team-agent': the interpreter its first line names, "
                            "'/opt/missing/node', was not found")


async def test_windows_line_endings_are_pointed_out(tmp_path):
    script(tmp_path, "crlf.sh", b"#!/bin/sh\r\necho '{}'\r\n")
    failure = await failure_of(["./crlf.sh"], tmp_path)
    assert failure.endswith("the interpreter its first line names, '/bin/sh\\r', was not found "
                            "(the line ends in a carriage return: give the file Unix line endings)")


LOADER = b"/lib64/ld-linux-x86-64.so.2"


@pytest.mark.skipif(LOADER not in Path("/bin/true").read_bytes(), reason="needs an x86-64 glibc /bin/true")
async def test_a_binary_whose_loader_is_missing(tmp_path):
    script(tmp_path, "true", Path("/bin/true").read_bytes().replace(LOADER, b"/lib64/no-such-ld-x86-64.so"))
    failure = await failure_of(["./true"], tmp_path)
    assert failure.endswith("cannot run './true': the file exists, but the interpreter or loader it "
                            "needs was not found")


async def test_a_missing_program_and_a_missing_folder_keep_their_messages(tmp_path):
    assert (await failure_of(["./nothing-here.sh"], tmp_path)).endswith(
        "cannot run './nothing-here.sh': not found")
    gone = tmp_path / "gone"
    assert (await failure_of([sys.executable, "-c", "pass"], tmp_path, cwd=str(gone))).endswith(
        f"not found (working directory {gone})")


@pytest.mark.parametrize(("signal_name", "expected"), [
    ("SIGKILL", "was killed by signal 9 (SIGKILL) (no stderr)"),
    ("SIGTERM", "was killed by signal 15 (SIGTERM): going down"),
])
async def test_a_command_killed_by_a_signal_says_so(tmp_path, signal_name, expected):
    path = write_script(tmp_path, "dies.py", f"""
        import os, signal, sys
        sys.stderr.write("going down" if signal.{signal_name} != signal.SIGKILL else "")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.{signal_name})
    """)
    failure = await failure_of([sys.executable, str(path)], tmp_path)
    assert failure == f"command `{sys.executable} {path}` {expected}"


async def test_an_exit_status_is_still_an_exit_status(tmp_path):
    path = write_script(tmp_path, "exits.py", "import sys; sys.exit(3)\n")
    failure = await failure_of([sys.executable, str(path)], tmp_path)
    assert failure.endswith("exited with status 3 (no stderr)")
