"""Every ``%%flow`` cell that binds nothing fails the cell with a FlowCellError (still a
UsageError for callers), shown as its message alone."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from lockgate.kernel_ext.cellerror import FlowCellError


@pytest.mark.parametrize("line, body, message", [
    ("bad", "version: 1\nflows: [unclosed\n", "the spec has 1 error; bad was not bound"),
    ("not-a-name", "version: 1\n", "%%flow: 'not-a-name' is not a valid Python name"),
    ("rw --flow nope", None, "no flow named 'nope'"),
    ("", "version: 1\n", "the following arguments are required: name"),
    ("rw --bogus", None, "unrecognized arguments: --bogus"),
])
def test_a_cell_that_binds_nothing_fails_without_a_traceback(shell, reviewed_work, capsys, line, body, message):
    result = shell.run_cell(f"%%flow {line}\n{reviewed_work if body is None else body}")
    assert isinstance(result.error_in_exec, FlowCellError) and isinstance(result.error_in_exec, UsageError)
    shown = capsys.readouterr()
    assert f"FlowCellError: {message}" in shown.out and "Traceback" not in shown.out + shown.err
    assert not {"bad", "rw"} & set(shell.user_ns)


def test_the_rendered_error_is_the_message_line_by_line():
    error = FlowCellError("the spec has 1 error; x was not bound\n\ncell:2:1: error LG203: missing")
    assert error._render_traceback_() == [
        "FlowCellError: the spec has 1 error; x was not bound", "", "cell:2:1: error LG203: missing"]
