"""A project configuration that cannot be used is a ConfigError naming the file and the key,
never skipped for another file and never an internal error: a pyproject.toml that is not TOML,
a ``[tool]`` or ``tool.lockgate`` that is no table, a python agent whose module fails to import."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate.engine.agents import find_config, load_config, parse_config
from lockgate.errors import ConfigError

PARENT = '[agents.rev]\ntype = "command"\ncommand = ["parent-agent"]\n'
PROJECT = '[tool.lockgate.agents.rev]\ntype = "command"\ncommand = ["project-agent"]\n'

SPEC = """version: 1
contracts:
  Out:
    answer: string
flows:
  entry: main
  main:
    input:
      text: string
    output:
      from: "${work.output}"
      contract: Out
    steps:
      - id: work
        do: "Answer ${input.text}"
        agent: rev
        out: Out
"""


def project(tmp_path: Path, pyproject: str | bytes) -> Path:
    """``tmp_path/proj`` holding ``pyproject``, below a folder whose lockgate.toml maps rev."""
    (tmp_path / "lockgate.toml").write_text(PARENT)
    proj = tmp_path / "proj"
    proj.mkdir()
    target = proj / "pyproject.toml"
    target.write_bytes(pyproject if isinstance(pyproject, bytes) else pyproject.encode())
    return proj


def test_a_pyproject_that_is_not_toml_is_reported_not_walked_past(tmp_path):
    proj = project(tmp_path, '[project]\nname = "x"\nversion = 1.0.0\n\n' + PROJECT)
    assert find_config(proj) == proj / "pyproject.toml"
    with pytest.raises(ConfigError) as caught:
        load_config(start=proj)
    message = str(caught.value)
    assert message.startswith(f"{proj / 'pyproject.toml'}: invalid TOML: ")
    assert "(at line 3, column " in message
    assert "fix the file, or put a lockgate.toml beside it" in message


def test_a_pyproject_that_is_not_utf8_is_reported(tmp_path):
    proj = project(tmp_path, b"[project]\nname = \"caf\xe9\"\n" + PROJECT.encode())
    with pytest.raises(ConfigError, match=r"pyproject\.toml: invalid TOML: not UTF-8 text \(byte 21\)"):
        load_config(start=proj)


def test_a_valid_pyproject_without_the_table_is_still_walked_past(tmp_path):
    proj = project(tmp_path, '[project]\nname = "x"\n')
    assert find_config(proj) == tmp_path / "lockgate.toml"
    assert load_config(start=proj).agents["rev"].options["command"] == ["parent-agent"]


@pytest.mark.parametrize("text", ["tool = 5\n", 'tool = "lockgate"\n', "tool = ['lockgate']\n"])
def test_a_tool_key_that_is_no_table_holds_no_lockgate_table(tmp_path, text):
    proj = project(tmp_path, text)
    assert find_config(proj) == tmp_path / "lockgate.toml"
    assert load_config(start=proj).agents["rev"].options["command"] == ["parent-agent"]


@pytest.mark.parametrize(("text", "shown"), [
    ("[tool]\nlockgate = 5\n", "5"),
    ("[tool]\nlockgate = 'agents'\n", "'agents'"),
    ("[tool]\nlockgate = [1]\n", "[1]"),
])
def test_a_tool_lockgate_that_is_no_table_is_a_config_error(tmp_path, text, shown):
    proj = project(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(start=proj)
    assert str(caught.value) == f"{proj / 'pyproject.toml'}: tool.lockgate: expected a table, got {shown}"


def test_parse_config_of_something_that_is_no_table():
    with pytest.raises(ConfigError, match=r"^configuration: \(top level\): expected a table, got 5$"):
        parse_config(5)  # type: ignore[arg-type]


@pytest.fixture
def module_name(monkeypatch) -> Iterator[str]:
    """A module name no other test imports; sys.path is restored afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"agents_{uuid.uuid4().hex[:12]}"
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize(("source", "expected"), [
    ("def rev(task)\n    return {}\n", "SyntaxError: expected ':' ({module}.py, line 1)"),
    ("raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ("x = 1 / 0\n", "ZeroDivisionError: division by zero"),
])
def test_a_python_agent_whose_module_fails_is_a_config_error(tmp_path, module_name, source, expected):
    (tmp_path / f"{module_name}.py").write_text(source)
    (tmp_path / "lockgate.toml").write_text(f'[agents.rev]\ntype = "python"\ncallable = "{module_name}:rev"\n')
    config = load_config(start=tmp_path)
    with pytest.raises(ConfigError) as caught:
        config.agent("rev")
    assert str(caught.value) == (f"{tmp_path / 'lockgate.toml'}: agents.rev.callable: cannot import "
                                 f"{module_name!r}: {expected.format(module=module_name)}")


def test_a_python_agent_whose_module_lacks_a_dependency_keeps_its_message(tmp_path, module_name):
    (tmp_path / f"{module_name}.py").write_text("import definitely_not_installed_pkg\n")
    (tmp_path / "lockgate.toml").write_text(f'[agents.rev]\ntype = "python"\ncallable = "{module_name}:rev"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(start=tmp_path).agent("rev")
    assert str(caught.value).endswith(f"cannot import {module_name!r}: No module named "
                                      "'definitely_not_installed_pkg'")


def run_cli(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockgate", "run", "one.stratum.yaml", "--input", "text=hi",
                           "--no-prompt", "--store", str(cwd / "runs.db")],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_the_cli_reports_a_broken_agent_module_with_exit_status_2(tmp_path):
    (tmp_path / "one.stratum.yaml").write_text(SPEC)
    (tmp_path / "synt.py").write_text("def rev(task)\n    return {}\n")
    (tmp_path / "lockgate.toml").write_text('[agents.rev]\ntype = "python"\ncallable = "synt:rev"\n')
    done = run_cli(tmp_path)
    assert done.returncode == 2, done.stderr
    assert ("lockgate.toml: agents.rev.callable: cannot import 'synt': SyntaxError: expected ':' "
            "(synt.py, line 1)") in done.stderr
    assert "internal error" not in done.stderr


def test_the_cli_reports_a_broken_pyproject_rather_than_a_parent_config(tmp_path):
    proj = project(tmp_path, '[project]\nversion = 1.0.0\n' + PROJECT)
    (proj / "one.stratum.yaml").write_text(SPEC)
    done = run_cli(proj)
    assert done.returncode == 2, done.stderr
    assert f"{proj / 'pyproject.toml'}: invalid TOML: " in done.stderr
    assert "parent-agent" not in done.stderr
