"""A careless user in a real kernel: every mistake ends in a short message, the kernel lives on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernel_session import KernelSession

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENTS = 'agents = {"codex": lambda task: {"result": "done", "quality_score": 0.9}}'


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    shutil.copy(EXAMPLES / "reviewed-work.stratum.yaml", cwd / "rw.yaml")
    session = KernelSession(cwd)
    session.run('import pathlib\nget_ipython().run_cell_magic("flow", "rw", pathlib.Path("rw.yaml").read_text());')
    session.run(AGENTS)
    yield session
    session.close()


def _short_usage_error(out, *expected: str) -> None:
    assert out.error is None or out.error["ename"] == "UsageError", out.traceback
    assert "Traceback" not in out.shown
    assert len(out.stderr) < 600, out.stderr
    for text in expected:
        assert text in out.stderr, out.stderr


@pytest.mark.parametrize("line", ["%flow", "%flow --help", "%flow help", "%flow -h"])
def test_bare_line_magic_and_help_list_the_subcommands(kernel, line):
    out = kernel.run(line)
    assert out.error is None and out.stderr == ""
    assert "%flow SUBCOMMAND" in out.stdout and "approve|revise|kill RUN STEP" in out.stdout


def test_a_subcommands_help_is_not_an_error(kernel):
    out = kernel.run("%flow run --help")
    assert out.error is None and out.stderr == ""
    assert "--agents VAR" in out.stdout


@pytest.mark.parametrize("line, message", [
    ("%flow show nope", "%flow show: no run with id 'nope'"),
    ("%flow audit nope", "%flow audit: no run with id 'nope'"),
    ("%flow cancel nope", "%flow cancel: no run with id 'nope'"),
    ("%flow resume nope", "%flow resume: no run with id 'nope'"),
    ("%flow graph nope", "%flow graph: no run with id 'nope'"),
    ("%flow run rw --inputs AGENTS_TEXT", "no variable named 'AGENTS_TEXT'"),
    ("%flow run rw --input text=hi --agents rw", "--agents rw must name a dict, not a FlowSpec"),
    ("%flow run 'unclosed", "%flow: No closing quotation"),
])
def test_unknown_runs_and_wrong_variables_are_one_line_messages(kernel, line, message):
    _short_usage_error(kernel.run(line), message)
    assert kernel.value("1 + 1") == 2


def test_refused_gate_decisions_are_one_line_messages(kernel):
    kernel.run("%flow run rw --input text=hi --agents agents --as r")
    kernel.run('await r.wait_until(lambda run: "review" in run.waiting_gates())')
    _short_usage_error(kernel.run("%flow revise r review"), "a revision needs a note")
    assert kernel.value("r.waiting_gates()") == ["review"]  # nothing was decided
    assert kernel.run("%flow approve r review --note ok").error is None
    _short_usage_error(kernel.run("%flow approve r review"), "%flow approve: step review of run",
                       "is not a waiting gate")


def test_control_characters_of_a_cell_are_escaped_in_the_report(kernel):
    out = kernel.run('%%flow junk\nversion: 1\n\x00\x1b[31m flows: x\n')
    _short_usage_error(out, "LG102", "\\x00\\x1b[31m flows: x")
    assert "\x1b[31m" not in out.stderr
