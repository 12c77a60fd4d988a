"""A SQLite store that may not be written (its file or its folder without write permission, as
a store copied off a CI artifact often is) is read by ``runs``, ``show``, ``audit`` and
``verify``; a command that would change it says the store is read-only (exit 1) and changes
nothing. Permission bits count even for root, so this holds as root (CI) too."""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_support import gate_spec, lockgate_argv, lockgate_env
from test_runs_cli import cli, gate_run


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` without write permission for anyone while inside (restored after)."""
    mode = path.stat().st_mode
    path.chmod(mode & ~0o222)
    try:
        yield
    finally:
        path.chmod(mode)


@pytest.mark.parametrize("made_read_only", ["file", "folder"])
def test_a_read_only_store_is_read_and_a_change_is_refused_saying_so(tmp_path: Path, made_read_only: str) -> None:
    folder = tmp_path / "artifact"
    folder.mkdir()
    db = folder / "runs.db"
    run = gate_run(db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    reason = f"the file {db} is not writable" if made_read_only == "file" else f"its folder {folder} is not writable"
    with read_only(db if made_read_only == "file" else folder):
        for command, shown in ((("runs",), run), (("show", run), "waiting_gate"), (("audit", run), "gate_waiting"),
                               (("verify", run), "audit chain intact")):
            code, output = cli(db, *command)
            assert code == 0 and shown in output, (command, output)
        for command in (("gate", "approve", run, "review"), ("cancel", run)):
            code, output = cli(db, *command)
            assert code == 1, (command, output)
            assert output.startswith(f"error: the store {db} is read-only ({reason}): nothing was written"), output
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_new_run_or_a_resume_on_a_read_only_store_is_refused_saying_so(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    (tmp_path / "flow.stratum.yaml").write_text(gate_spec())
    (tmp_path / "agents.py").write_text("def writer(task):\n    open('called', 'a').write('x')\n"
                                        "    return {'text': 'done'}\n")

    def lockgate_run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(lockgate_argv("run", *args, "--agents", "agents.py", "--store", str(db), "--no-prompt"),
                              cwd=tmp_path, env=lockgate_env(), capture_output=True, text=True, timeout=120,
                              check=False)

    waiting = lockgate_run("flow.stratum.yaml", "--input", "topic=t")
    assert waiting.returncode == 3, waiting.stderr  # at its gate
    run = re.search(r"^run (\S+) await_gate$", waiting.stderr, re.MULTILINE).group(1)
    for command in (("flow.stratum.yaml", "--input", "topic=t"), ("--resume", run)):
        with read_only(db):
            done = lockgate_run(*command)
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"error: the store {db} is read-only (the file {db} is not writable): "
                                      "nothing was written"), done.stderr
        assert "lockgate why" not in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "called").read_text() == "x"  # the agent ran for the first run only
