"""Starting a run in a notebook makes the agents' synchronous preflights in the cell, the judge's
included when a judged ensure may be reached: an agent that cannot run here is a one-line error
of the cell that started the run (an in-process IPython shell)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from lockgate.errors import AgentUnavailable


class Offline:
    """An agent whose preflight finds it cannot run here."""

    def __init__(self, name: str) -> None:
        self.name = name

    def preflight(self) -> None:
        raise AgentUnavailable(f"{self.name}: no binary here")

    async def execute(self, task):
        raise AssertionError("not called")

    async def cancel(self) -> None:
        pass


def work(task):
    return {"result": "done", "quality_score": 0.9}


JUDGED = """
          - judged:
              statement: "The result answers the request"
              stakes: default"""


@pytest.fixture
def judged_here(shell, reviewed_work, tmp_path):
    """``rw`` (no judged ensure) and ``judged`` (rw with a judged ensure on its work) bound, a
    lockgate.toml naming agent ``checker`` the judge, and ``agents`` where checker is offline."""
    (tmp_path / "lockgate.toml").write_text('judge = "checker"\n')
    shell.run_cell_magic("flow", "rw", reviewed_work)
    anchor = '          - expr: "result.quality_score >= 0.8"'
    shell.run_cell_magic("flow", "judged", reviewed_work.replace(anchor, anchor + JUDGED))
    shell.user_ns["agents"] = {"codex": work, "checker": Offline("checker")}
    return shell


def test_the_judge_that_cannot_run_is_refused_when_a_judged_ensure_may_be_reached(judged_here):
    with pytest.raises(UsageError, match=r"^%flow run: checker: no binary here$"):
        judged_here.run_line_magic("flow", "run judged --input text=t --agents agents --as bad")
    assert "bad" not in judged_here.user_ns
    run = judged_here.run_line_magic("flow", "run rw --input text=t --agents agents --as fine")
    assert run.status == "await_gate"  # no judged ensure: the judge is never asked, nor checked

