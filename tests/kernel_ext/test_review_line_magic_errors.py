"""A refused ``%flow`` line fails its cell, as a ``%%flow`` cell that binds nothing does: a
FlowCellError (still a UsageError for callers that catch one) shown as its message alone, so
papermill and a saved notebook see an ``error`` output instead of a line on stderr (a real kernel).
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

from lockgate.kernel_ext.cellerror import FlowCellError


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = KernelSession(cwd)
    session.bind(rw=REVIEWED_WORK)
    session.run(DONE_AGENTS)
    out = session.run('r = rw.start({"text": "t"}, agents=agents)\n'
                      'await r.wait_until(lambda run: "review" in run.waiting_gates())')
    assert out.error is None, out.traceback
    yield session
    session.close()


def _failed(out, *expected: str) -> None:
    """The cell failed with a FlowCellError whose traceback is its message, nothing on stderr."""
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    assert out.error["traceback"][0].startswith("FlowCellError: "), out.traceback
    assert "Traceback" not in out.shown and out.stderr == "", out.shown
    for text in expected:
        assert text in out.traceback, out.traceback


@pytest.mark.parametrize("line, expected", [
    ("%flow approve r nosuch", ["%flow approve: step nosuch of run", "is not a waiting gate",
                                "(waiting gates: review)"]),
    ("%flow revise r review", ["%flow revise: a revision needs a note"]),
    ("%flow runs --bad", ["%flow: unrecognized arguments: --bad", "usage: %flow"]),
    ("%flow frobnicate", ["%flow: argument command: invalid choice: 'frobnicate'"]),
    ("%flow show 'unclosed", ["%flow: No closing quotation"]),
    ("%flow show nope", ["%flow show: no run with id 'nope'"]),
    ("%flow run nobody", ["'nobody' is not a spec bound by %%flow"]),
])
def test_a_refused_line_fails_the_cell(kernel, line, expected):
    _failed(kernel.run(line), *expected)
    assert kernel.value('r.waiting_gates(), r.status') == (["review"], "await_gate")  # nothing decided


def test_a_refusal_from_code_fails_the_cell_too(kernel):
    out = kernel.run('get_ipython().run_line_magic("flow", "kill r nosuch")')
    _failed(out, "%flow kill: step nosuch of run", "is not a waiting gate")


def test_lines_that_are_not_refused_do_not_fail(kernel):
    for line in ("%flow runs", "%flow runs --help", "%flow help", "%flow show r"):
        out = kernel.run(line)
        assert out.error is None and out.stderr == "", (line, out.shown)


def test_the_refusal_is_a_usage_error_for_callers_that_catch_one(shell):
    result = shell.run_cell("%flow approve nope review")
    assert isinstance(result.error_in_exec, FlowCellError) and isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec).startswith("%flow approve: no run with id 'nope'")
    with pytest.raises(UsageError, match="^%flow: unrecognized arguments: --bad"):
        shell.run_line_magic("flow", "runs --bad")


def test_a_line_holding_nul_is_refused_not_a_traceback(kernel):
    """U+0000 marks the braced words kept whole while the line is split: a line holding it (here
    NUL, digit, NUL, as a kept word is marked) is refused instead of raising IndexError."""
    out = kernel.run('get_ipython().run_line_magic("flow", "show {r} \\x000\\x00")')
    _failed(out, "%flow: the line holds the character U+0000")
