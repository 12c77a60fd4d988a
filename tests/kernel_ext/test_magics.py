"""%%flow and %flow in a real IPython shell."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from lockgate.kernel_ext.spec_view import FlowSpec


def test_valid_cell_binds_a_flowspec(shell, reviewed_work):
    result = shell.run_cell_magic("flow", "rw", reviewed_work)
    assert isinstance(shell.user_ns["rw"], FlowSpec)
    assert result is shell.user_ns["rw"]
    assert result.flow == "reviewed_work"
    bundle = result._repr_mimebundle_()
    assert "2 steps" in bundle["text/plain"]
    assert "data:image/png;base64," in bundle["text/html"]


def test_invalid_cell_shows_diagnostics_with_cell_lines_and_binds_nothing(shell, reviewed_work, capsys):
    bad = reviewed_work.replace("on_revise: work", "on_revise: wrok")
    assert not shell.run_cell("%%flow bad\n" + bad).success  # the cell fails
    assert "bad" not in shell.user_ns
    err = capsys.readouterr().out  # an in-process shell prints the error's lines to stdout
    assert "Traceback" not in err
    assert "FlowCellError: the spec has 1 error; bad was not bound" in err
    line = 1 + bad.splitlines().index("          on_revise: wrok") + 1
    assert f"cell:{line}:22: error LG502" in err
    assert "^^^^" in err and "did you mean 'work'" in err


def test_invalid_yaml_is_a_diagnostic_not_a_traceback(shell, capsys):
    assert not shell.run_cell("%%flow broken\nversion: 1\nflows: [unclosed\n").success
    err = capsys.readouterr().out
    assert "Traceback" not in err and "LG103" in err
    assert "broken" not in shell.user_ns


def test_name_must_be_an_identifier(shell, reviewed_work):
    with pytest.raises(UsageError, match="not a valid Python name"):
        shell.run_cell_magic("flow", "not-a-name", reviewed_work)


def test_unknown_flow_option(shell, reviewed_work):
    with pytest.raises(UsageError, match="no flow named 'nope'"):
        shell.run_cell_magic("flow", "rw --flow nope", reviewed_work)


def test_help_is_available(shell):
    assert "Validate a spec written in the cell" in shell.find_cell_magic("flow").__doc__
    assert "%flow run NAME" in shell.find_line_magic("flow").__doc__


def test_line_magic_runs_approves_and_audits(shell, reviewed_work, capsys):
    shell.run_cell_magic("flow", "rw", reviewed_work)
    shell.user_ns["agents"] = {"codex": lambda task: {"result": "done", "quality_score": 0.9}}
    run = shell.run_line_magic("flow", "run rw --input text=hello --agents agents --as r")
    assert shell.user_ns["r"] is run
    assert run.status == "await_gate"
    assert run.rows["work"].status == "succeeded" and run.rows["review"].status == "waiting"
    response = shell.run_line_magic("flow", f"approve r review --note 'looks right'")
    assert response["status"] == "complete"
    assert run.result() == {"result": "done", "quality_score": 0.9}
    shell.run_line_magic("flow", "audit r")
    out = capsys.readouterr().out
    assert '"gate_resolved"' in out and '"looks right"' in out


def test_line_magic_usage_errors(shell):
    with pytest.raises(UsageError, match="invalid choice"):
        shell.run_line_magic("flow", "explode now")
    with pytest.raises(UsageError, match="not a spec bound by %%flow"):
        shell.run_line_magic("flow", "run missing")


def test_reload_extension(shell):
    shell.run_line_magic("reload_ext", "lockgate")
    assert shell.find_cell_magic("flow") is not None


def test_resume_after_a_kernel_restart(shell, reviewed_work, tmp_path):
    """A run waiting at a gate survives the kernel: a fresh shell resumes it from the store."""
    from IPython.core.interactiveshell import InteractiveShell

    calls = []

    def work(task):
        calls.append(task.attempt)
        return {"result": "done", "quality_score": 0.9}

    shell.run_cell_magic("flow", "rw", reviewed_work)
    shell.user_ns["agents"] = {"codex": work}
    run = shell.run_line_magic("flow", "run rw --input text=hello --agents agents")
    assert run.status == "await_gate"
    run_id = run.run_id

    shell.run_line_magic("unload_ext", "lockgate")  # "restart": a new shell, nothing in memory
    InteractiveShell.clear_instance()
    fresh = InteractiveShell.instance()
    fresh.run_line_magic("load_ext", "lockgate")
    fresh.user_ns["agents"] = {"codex": work}
    resumed = fresh.run_line_magic("flow", f"resume {run_id} --agents agents --as again")
    assert fresh.user_ns["again"] is resumed
    assert resumed.rows["work"].status == "succeeded"
    assert resumed.status == "await_gate"
    fresh.run_line_magic("flow", f"approve again review --note resumed")
    assert resumed.status == "complete"
    assert resumed.result() == {"result": "done", "quality_score": 0.9}
    assert calls == [1]  # nothing completed was redone


def test_graph_line_magic_for_a_spec_and_a_run(shell, reviewed_work):
    from IPython.display import SVG, Image, Markdown

    shell.run_cell_magic("flow", "rw", reviewed_work)
    assert isinstance(shell.run_line_magic("flow", "graph rw"), Image)
    assert isinstance(shell.run_line_magic("flow", "graph rw --format svg"), SVG)
    shell.user_ns["agents"] = {"codex": lambda task: {"result": "done", "quality_score": 0.9}}
    shell.run_line_magic("flow", "run rw --input text=hi --agents agents --as r")
    mermaid = shell.run_line_magic("flow", "graph r --format mermaid")
    assert isinstance(mermaid, Markdown)
    assert "class n0_work succeeded" in mermaid.data and "class n1_review waiting" in mermaid.data
    with pytest.raises(UsageError, match="neither a bound spec"):
        shell.user_ns["x"] = 3
        shell.run_line_magic("flow", "graph x")
