"""A notebook executed headless (nbclient, as nbconvert --execute and papermill run it) saves the
final view of a run it completed (review s11 finding 3): the run's status, its step rows and its
picture as they ended, in the output of the cell that started the run.

Before, the view's updates went out with the starting cell as their parent (the run's task
copied that cell's context), and nbclient, which applies only messages of the cell it executes,
dropped them: the saved notebook said "starting", every step pending.
"""

from __future__ import annotations

import base64
import hashlib

import nbformat
import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK
from nbclient import NotebookClient

START = f"{DONE_AGENTS}\nrun = rw.start({{'text': 'a'}}, agents=agents)\nrun"
AT_GATE = 'await run.wait_until(lambda r: "review" in r.waiting_gates())'
#: what the last cell prints: the run's end and a digest of its final picture
REPORT = "import hashlib\nprint(run.run_id, run.status, hashlib.sha256(run.png()).hexdigest())"

#: the ways a notebook decides the gate and reads the run's end
ENDINGS = {
    "approve and await in one cell": [f'{AT_GATE}\nrun.approve("review")\nprint(await run)'],
    "approve, then await in the next cell": [f'{AT_GATE}\nrun.approve("review")', "print(await run)"],
    "%flow approve, then wait_until in the next cell": [AT_GATE, "%flow approve run review",
                                                       "await run.wait_until(lambda r: r.done)"],
}


def _executed(folder, *cells: str) -> nbformat.NotebookNode:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in
                  ("%load_ext lockgate", f"%%flow rw\n{REVIEWED_WORK}", START, *cells, REPORT)]
    NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    nbformat.write(book, folder / "executed.ipynb")
    return nbformat.read(folder / "executed.ipynb", as_version=4)  # as saved


@pytest.mark.parametrize("ending", ENDINGS)
def test_the_saved_notebook_shows_the_run_as_it_ended(tmp_path, ending):
    book = _executed(tmp_path, *ENDINGS[ending])
    run_id, status, digest = book.cells[-1].outputs[0]["text"].split()
    assert status == "complete"
    view, picture = book.cells[2].outputs
    lines = view["data"]["text/plain"].splitlines()
    assert lines[0] == f"run {run_id} of rw: complete", lines
    assert [line.split() for line in lines[1:]] == [["work", "succeeded"], ["review", "succeeded"]]
    assert hashlib.sha256(base64.b64decode(picture["data"]["image/png"])).hexdigest() == digest
