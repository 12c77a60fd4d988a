"""The commands the CLI prints keep a store URL as given when there is no password to hide (review
s10 F7 #2): ``sqlite:///ABS/PATH.db`` and ``postgresql:///db`` (a local socket) lost their empty
``//`` host when the URL was rebuilt (``sqlite:/ABS/PATH.db``, refused as a mistyped URL), so a
pasted command did not reach the run. Pasted here: the printed lines run as printed."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from cli_support import gate_spec, lockgate_argv, lockgate_env

from lockgate.cli.hints import shown_store

AGENTS = "def writer(task):\n    return {'text': 'draft'}\n"


def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True,
                          text=True, timeout=120)


def _printed(text: str, start: str) -> list[str]:
    """The words of the first printed command line that starts with ``start``."""
    line = next(line.strip() for line in text.splitlines() if line.strip().startswith(start))
    return shlex.split(line.removeprefix("then continue it with: "))


def test_printed_commands_with_an_absolute_sqlite_url_run_as_printed(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "flow.stratum.yaml").write_text(gate_spec())
    (project / "agents.py").write_text(AGENTS)
    url = f"sqlite:///{(tmp_path / 'runs.db').as_posix().lstrip('/')}"
    started = _lockgate(project, "run", "flow.stratum.yaml", "--input", "topic=t", "--agents", "agents.py",
                        "--store", url, "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]

    approve = _printed(started.stderr, f"lockgate gate approve {run_id}")
    assert approve[approve.index("--store") + 1] == url
    approved = _lockgate(elsewhere, *approve[1:])  # from another folder: only the URL finds the store
    assert approved.returncode == 0, approved.stderr

    resume = _printed(started.stderr, "then continue it with:")
    assert resume[resume.index("--store") + 1] == url
    resumed = _lockgate(project, *resume[1:])
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"text": "draft"}


def test_urls_without_a_password_are_shown_as_given_and_passwords_still_hidden() -> None:
    for url in ("sqlite:////tmp/runs.db", "postgresql:///lockgate", "postgresql://me@db.example/lockgate",
                "postgresql:///lockgate?host=/run/postgresql"):
        assert shown_store(url) == url
    assert shown_store("postgresql:///lockgate?password=secret&host=/run") == \
        "postgresql:///lockgate?password=****&host=/run"
    assert shown_store("postgresql://me:secret@db.example:5432/lockgate") == \
        "postgresql://me:****@db.example:5432/lockgate"
