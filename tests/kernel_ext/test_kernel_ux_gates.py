"""Gate cards and %flow revise offer revise only where it sends the work back (a real kernel).

A revise of a gate with no ``on_revise`` target, or past its ``max_rounds``, fails the run
(reference semantics); the engine then leaves it out of the gate's ``decisions``, so the card
hides its Revise button and ``%flow revise`` is refused with a one-line message.
"""

from __future__ import annotations

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

ONE_WAY = REVIEWED_WORK.replace("on_revise: work", "on_revise: null")
CARD = '''
def shown(run, step):
    """The buttons a person sees on the card of waiting gate ``step``."""
    card = run.gates.waiting[step][1]
    return [b.description for b in card.buttons if b.layout.display != "none"]
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = KernelSession(cwd)
    session.bind(rw=REVIEWED_WORK, oneway=ONE_WAY)
    session.run(DONE_AGENTS + "\n" + CARD)
    yield session
    session.close()


def _one_line_refusal(out, *expected: str) -> None:
    """A refused %flow line fails the cell with a FlowCellError, shown as one line."""
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    assert out.traceback.startswith("FlowCellError: ") and len(out.error["traceback"]) == 1, out.traceback
    assert "Traceback" not in out.shown
    for text in expected:
        assert text in out.traceback, out.traceback


def _waiting(kernel, name: str, spec: str) -> None:
    out = kernel.run(f'{name} = {spec}.start({{"text": "t"}}, agents=agents)\n'
                     f'await {name}.wait_until(lambda r: "review" in r.waiting_gates())')
    assert out.error is None, out.traceback


def test_a_gate_without_on_revise_offers_no_revise(kernel):
    _waiting(kernel, "a", "oneway")
    assert kernel.value('shown(a, "review")') == ["Approve", "Kill"]
    assert "no on_revise target" in kernel.value('a.gates.waiting["review"][1].title.value')
    kernel.run('card = a.gates.waiting["review"][1]; card.note.value = "shorter"; card.click("revise")')
    assert "the gate has no on_revise target." in kernel.value("card.message.value")
    _one_line_refusal(kernel.run("%flow revise a review --note shorter"),
                      "%flow revise: gate review: the gate has no on_revise target",
                      "(it offers approve, kill)")
    assert kernel.value('a.waiting_gates(), a.status') == (["review"], "await_gate")  # nothing decided
    kernel.run('a.approve("review")')
    assert kernel.value("await a") == {"result": "done", "quality_score": 0.9}


def test_revise_is_not_offered_once_the_gates_rounds_are_used(kernel):
    _waiting(kernel, "b", "rw")
    for round_ in (1, 2):  # the gate's own max_rounds is 2
        assert kernel.value('shown(b, "review")') == ["Approve", "Revise", "Kill"]
        assert kernel.run(f"%flow revise b review --note 'round {round_}'").error is None
        kernel.run(f'await b.wait_until(lambda r: "review" in r.waiting_gates() and len(r.gates.cards) == {round_ + 1})')
    assert kernel.value('shown(b, "review")') == ["Approve", "Kill"]
    _one_line_refusal(kernel.run("%flow revise b review --note 'once more'"),
                      "%flow revise: gate review: revise would fail the run: the gate's 2 revision round(s) are used up")
    assert kernel.value("b.status") == "await_gate"
    kernel.run('b.approve("review")')
    assert kernel.value("await b") == {"result": "done", "quality_score": 0.9}


def test_revise_by_run_id_of_a_run_not_driven_here_is_refused_too(kernel):
    _waiting(kernel, "c", "oneway")
    kernel.run("c_id = c.run_id\nc.gates.waiting.clear()")  # as if another kernel drove it
    out = kernel.run('get_ipython().run_line_magic("flow", f"revise {c_id} review --note shorter")')
    _one_line_refusal(out, "%flow revise: gate review: the gate has no on_revise target")
    assert kernel.value('c.audit()["status"]') == "running"
