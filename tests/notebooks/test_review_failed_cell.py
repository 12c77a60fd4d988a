"""A ``%%flow`` cell with an invalid spec fails the cell: nbclient (nbconvert --execute, papermill)
stops there with the diagnostics as the error, not at the next cell's NameError."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

BROKEN = "%%flow broken\nversion: 1\nflows:\n  entry: main\n  main:\n    steps:\n      - id: a\n        do: x\n"


def _book(*sources: str) -> nbformat.NotebookNode:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return book


def test_run_all_stops_at_the_broken_flow_cell_with_an_error_output(tmp_path):
    book = _book("%load_ext lockgate", BROKEN, "broken")
    client = NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as caught:
        client.execute()
    assert "FlowCellError: the spec has" in str(caught.value) and "NameError" not in str(caught.value)
    [error] = book.cells[1].outputs
    assert error.output_type == "error" and error.ename == "FlowCellError"
    assert error.traceback[0] == "FlowCellError: the spec has 3 errors; broken was not bound"
    assert any(line.startswith("cell:5:3: error LG203") for line in error.traceback)
    assert "Traceback" not in "\n".join(error.traceback)
    assert book.cells[2].outputs == []  # never run


def test_with_allow_errors_every_failed_cell_is_recorded_as_failed(tmp_path):
    """What papermill's check reads: an ``error`` output in the cell that failed."""
    book = _book("%load_ext lockgate", BROKEN, "%%flow not-a-name\nversion: 1\n", "%%flow nope --flow other\n"
                 "version: 1\ncontracts: {R: {value: string}}\nflows:\n  entry: main\n  main:\n    input: {}\n"
                 "    output: {from: '${a.output}', contract: R}\n    steps:\n      - id: a\n        do: x\n"
                 "        agent: a\n        out: R\n")
    client = NotebookClient(book, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [[o for o in cell.outputs if o.output_type == "error"] for cell in book.cells[1:]]
    assert [[e.ename for e in found] for found in errors] == [["FlowCellError"]] * 3
    assert "not a valid Python name" in errors[1][0].evalue and "no flow named 'other'" in errors[2][0].evalue
