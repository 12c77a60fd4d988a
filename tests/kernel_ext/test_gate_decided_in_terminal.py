"""A gate of a notebook run decided from a terminal (``lockgate gate approve``): once the run has
ended, its view shows what the store recorded, not the gate still waiting (a real kernel).

Two watchers in the kernel race to notice the terminal's decision: the gate channel's watch of
the store (which reports the decision) and the drive's watch of the run (which sees the run
complete and ends the drive, the gate's question cancelled unanswered). Taking the gate
channel's watcher away, before the run's task first runs, makes the second the winner every
time: the case where the view was left showing ``review: waiting``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = KernelSession(cwd)
    session.bind(rw=REVIEWED_WORK)
    session.run(DONE_AGENTS)
    yield session
    session.close()


def test_a_run_completed_by_a_terminal_decision_shows_the_gate_decided(kernel):
    out = kernel.run('r = rw.start({"text": "t"}, agents=agents)\n'
                     'r.gates._store_gates = None  # only the drive notices the terminal: see the module doc\n'
                     'await r.wait_until(lambda r: "review" in r.waiting_gates())')
    assert out.error is None, out.traceback
    run_id = kernel.value("r.run_id")
    approved = subprocess.run([sys.executable, "-m", "lockgate", "gate", "approve", run_id, "review",
                               "--note", "fine from here"],
                              cwd=kernel.cwd, capture_output=True, text=True, timeout=60)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert kernel.value("await r") == {
        "result": "done", "quality_score": 0.9}
    assert kernel.value("r.status, r.statuses()") == ("complete", {"work": "succeeded", "review": "succeeded"})
    assert "waiting" not in kernel.value("repr(r)")
    shown = kernel.run("%flow show r")
    assert "review" in shown.shown and "waiting" not in shown.shown, shown.shown
    card = kernel.value("r.gates.cards[-1].message.value")
    assert "approve" in card and "decided elsewhere" in card and "fine from here" in card, card
