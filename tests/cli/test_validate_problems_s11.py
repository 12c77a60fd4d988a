"""``lockgate validate`` reports every file it could not use, in every format (review s11,
findings 6 and 10): a broken lockgate.toml that the specs would run with is an error at its line
(``lockgate run`` refuses it, so validate must not pass it), and an unreadable spec file is an
entry of the JSON and an annotation for GitHub, counted in the summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import ROOT, gate_spec, lockgate_argv, lockgate_env

BROKEN_TOML = '[agents.writer]\ntype = "command"\ncommand = ["w"]\n\n[agents.scanner\ntype = "python"\n'


def lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture
def broken_project(tmp_path: Path) -> Path:
    """Two specs (one in a subfolder) below a lockgate.toml whose fifth line lacks its ``]``."""
    (tmp_path / "lockgate.toml").write_text(BROKEN_TOML)
    (tmp_path / "flow.stratum.yaml").write_text(gate_spec())
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "other.stratum.yaml").write_text(gate_spec())
    return tmp_path


def test_a_broken_configuration_is_an_error_at_its_line_in_text(broken_project: Path) -> None:
    done = lockgate(broken_project, "validate", ".")
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("lockgate.toml:5:16: error LG111: invalid TOML: Expected ']'") == 1
    assert "5 | [agents.scanner\n  |                ^" in done.stdout
    assert "lockgate run refuses it too" in done.stdout
    assert "ignoring" not in done.stderr
    assert "2 files checked: 1 error, 0 warnings" in done.stderr
    # which agents it configures is unknown, so nothing says the spec's agent is not configured
    assert "LG905" not in done.stdout


def test_a_broken_configuration_is_an_entry_and_an_annotation(broken_project: Path) -> None:
    as_json = lockgate(broken_project, "validate", "flow.stratum.yaml", "--format", "json")
    assert as_json.returncode == 1, as_json.stderr
    entries = json.loads(as_json.stdout)
    assert [(e["file"], e["ok"]) for e in entries] == [("lockgate.toml", False), ("flow.stratum.yaml", True)]
    (problem,) = entries[0]["diagnostics"]
    assert problem["code"] == "LG111" and problem["severity"] == "error"
    assert problem["message"].startswith("invalid TOML: Expected ']'")
    assert problem["range"]["start"] == {"line": 4, "character": 15}

    github = lockgate(broken_project, "validate", "flow.stratum.yaml", "--format", "github")
    assert github.returncode == 1, github.stderr
    assert github.stdout.startswith("::error file=lockgate.toml,line=5,col=16,")
    assert "title=LG111::invalid TOML" in github.stdout


def test_the_configuration_is_the_one_run_would_use_and_run_refuses_it_too(broken_project: Path) -> None:
    """A problem without a line (an unknown key) is put at the top of the file; the spec's
    own folder decides which configuration applies, wherever validate runs from."""
    (broken_project / "lockgate.toml").write_text('[agents.writer]\ntype = "comand"\n')
    done = lockgate(ROOT, "validate", str(broken_project / "flow.stratum.yaml"), "--format", "github")
    assert done.returncode == 1, done.stderr
    assert f"::error file={broken_project / 'lockgate.toml'},line=1,col=1," in done.stdout
    assert "unknown adapter type 'comand'" in done.stdout
    run = lockgate(broken_project, "run", "flow.stratum.yaml", "--input", "topic=x")
    assert run.returncode == 2 and "unknown adapter type 'comand'" in run.stderr


def test_a_good_configuration_changes_nothing(broken_project: Path) -> None:
    (broken_project / "lockgate.toml").write_text('[agents.writer]\ntype = "command"\ncommand = ["w"]\n')
    done = lockgate(broken_project, "validate", ".", "--format", "json")
    assert done.returncode == 0, done.stdout
    assert [e["file"] for e in json.loads(done.stdout)] == ["flow.stratum.yaml", "more/other.stratum.yaml"]


@pytest.fixture
def odd_folder(tmp_path: Path) -> Path:
    """A good spec beside a dangling *.stratum.yml link and a folder named like a spec."""
    (tmp_path / "good.stratum.yaml").write_text(gate_spec())
    (tmp_path / "dangling.stratum.yml").symlink_to(tmp_path / "gone")
    (tmp_path / "sub.stratum.yaml").mkdir()
    return tmp_path


def test_unreadable_files_are_entries_of_the_json(odd_folder: Path) -> None:
    done = lockgate(odd_folder, "validate", ".", "--no-lint", "--format", "json")
    assert done.returncode == 2
    entries = {e["file"]: e for e in json.loads(done.stdout)}
    assert sorted(entries) == ["dangling.stratum.yml", "good.stratum.yaml", "sub.stratum.yaml"]
    assert entries["good.stratum.yaml"]["ok"] is True
    for name, reason in (("dangling.stratum.yml", "No such file or directory"),
                         ("sub.stratum.yaml", "Is a directory")):
        assert entries[name]["ok"] is False
        problems = [(d["code"], d["severity"], d["message"]) for d in entries[name]["diagnostics"]]
        assert problems == [("LG110", "error", f"cannot read: {reason}")]
    assert done.stderr == ""


def test_unreadable_files_are_annotations_and_counted_in_the_summary(odd_folder: Path) -> None:
    github = lockgate(odd_folder, "validate", ".", "--no-lint", "--format", "github")
    assert github.returncode == 2
    assert github.stdout.splitlines() == [
        "::error file=dangling.stratum.yml,line=1,col=1,endLine=1,endColumn=1,title=LG110::"
        "cannot read: No such file or directory",
        "::error file=sub.stratum.yaml,line=1,col=1,endLine=1,endColumn=1,title=LG110::"
        "cannot read: Is a directory",
    ]
    text = lockgate(odd_folder, "validate", ".", "--no-lint")
    assert text.returncode == 2
    assert text.stderr.splitlines() == [
        "dangling.stratum.yml: cannot read: No such file or directory",
        "sub.stratum.yaml: cannot read: Is a directory",
        "1 file checked: 0 errors, 0 warnings; 2 unreadable",
    ]
