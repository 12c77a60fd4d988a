"""What a newcomer's review found about the CLI's messages: a resume refuses inputs (they are
fixed when the run starts) instead of ignoring them, a missing spec file is named as such, and
every command's error line starts ``error:`` (``graph``'s included), with the exit codes as
before."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from lockgate.cli import main


@pytest.fixture(autouse=True)
def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize(("options", "named"), [
    (["--input", "topic=x"], "--input/--inputs"),
    (["--inputs", "inputs.json"], "--input/--inputs"),
    (["--flow", "main"], "--flow"),
])
def test_a_resume_refuses_inputs_and_flow(options, named):
    resumed = invoke("run", "--resume", "abc123", *options)
    assert resumed.exit_code == 2
    assert resumed.stderr.splitlines()[-1] == (f"error: {named} goes with SPEC: a resumed run keeps the flow and "
                                               "inputs it was started with")


def test_a_missing_spec_file_is_named(scratch):
    missing = invoke("run", "nosuch.yaml")
    assert (missing.exit_code, missing.stderr) == (2, "error: no such file: nosuch.yaml\n")
    folder = invoke("run", str(scratch))
    assert (folder.exit_code, folder.stderr) == (2, f"error: is a directory, not a spec file: {scratch}\n")


def test_graph_errors_read_like_the_other_commands():
    graphed = invoke("graph", "nosuch.yaml")
    assert graphed.exit_code == 1
    assert graphed.stderr == "error: nosuch.yaml: no such file, and no run with this id in the store\n"


def test_a_store_error_names_no_python_class():
    listed = invoke("runs", "--store", "typo.db")
    assert listed.exit_code == 1
    assert listed.stderr.startswith("error: no run store at typo.db")
