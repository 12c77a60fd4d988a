"""Deciding gates from code, and the kernel the buttons need (a real kernel; review s11).

Finding 2: ``run.revise(step, note)`` of a gate whose revision rounds are used up took the revise
and failed the run for good, saying nothing, where the Revise button and ``%flow revise`` refuse
it. It is refused too now, in the same words (an EngineError), and nothing changes.

Finding 1: with an ipykernel older than 7.4 a button's click waits for the cell awaiting the run,
which waits for the click; ``%load_ext lockgate`` says so in such a kernel.
"""

from __future__ import annotations

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

ONE_WAY = REVIEWED_WORK.replace("on_revise: work", "on_revise: null")
USED_UP = "gate review: revise would fail the run: the gate's 2 revision round(s) are used up (it offers approve, kill)"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    session = KernelSession(tmp_path_factory.mktemp("kernel"))
    session.bind(rw=REVIEWED_WORK, oneway=ONE_WAY)
    session.run(DONE_AGENTS)
    yield session
    session.close()


def _at_gate(kernel, name: str, spec: str, revisions: int = 0) -> None:
    """Run ``name`` of ``spec`` waiting at its gate, after ``revisions`` revise rounds."""
    out = kernel.run(f'{name} = {spec}.start({{"text": "t"}}, agents=agents)\n'
                     f'for i in range({revisions + 1}):  # each round shows a new card\n'
                     f'    await {name}.wait_until(lambda r: r.waiting_gates() and len(r.gates.cards) > i)\n'
                     f'    if i < {revisions}:\n'
                     f'        {name}.revise("review", f"round {{i}}")')
    assert out.error is None, out.shown


def _refused(out, message: str) -> None:
    assert out.error is not None, out.shown
    assert (out.error["ename"], out.error["evalue"]) == ("EngineError", message), out.shown


def _decisions(kernel, name: str) -> list[str]:
    return kernel.value(f'[e["detail"]["decision"] for e in {name}.audit()["events"] if e["type"] == "gate_resolved"]')


def test_revise_past_the_gates_rounds_is_refused_as_percent_flow_revise_refuses_it(kernel):
    _at_gate(kernel, "a", "rw", revisions=2)
    _refused(kernel.run('a.revise("review", "once more")'), USED_UP)
    flow_line = kernel.run("%flow revise a review --note 'once more'")
    assert flow_line.error["evalue"] == f"%flow revise: {USED_UP}", flow_line.shown
    assert kernel.value("a.status, a.waiting_gates(), a.failure") == ("await_gate", ["review"], None)
    assert _decisions(kernel, "a") == ["revise", "revise"]  # the refused revise was not recorded
    assert kernel.value('a.gates.waiting["review"][1].message.value') == ""  # the card still asks
    kernel.run('a.approve("review")')
    assert kernel.value("await a") == {"result": "done", "quality_score": 0.9}


def test_a_revise_the_gate_never_offers_is_refused_through_the_store_too(kernel):
    """The run's gate is not waiting on a card here (as when another kernel drives it): the
    store's list of the gate's decisions refuses it."""
    _at_gate(kernel, "b", "oneway")
    kernel.run("b.gates.waiting.clear()")
    _refused(kernel.run('b.revise("review", "shorter")'),
             "gate review: the gate has no on_revise target (it offers approve, kill)")
    assert kernel.value('b.audit()["status"]') == "running"
    assert _decisions(kernel, "b") == []


def test_loading_in_a_kernel_older_than_ipykernel_7_4_warns_about_the_buttons(kernel):
    kernel.run("%unload_ext lockgate")
    here = kernel.run("%load_ext lockgate")
    assert here.error is None and here.stderr == "", here.shown  # this kernel: a recent ipykernel
    kernel.run("%unload_ext lockgate\nimport ipykernel\nreal, ipykernel.__version__ = ipykernel.__version__, '6.29.5'")
    try:
        old = kernel.run("%load_ext lockgate")
    finally:
        kernel.run("ipykernel.__version__ = real")
    assert old.error is None, old.shown
    warning = old.stderr
    assert warning.startswith("warning: this kernel runs ipykernel 6.29.5: the Approve / Revise / Kill buttons of a "
                              "gate do not answer while a cell awaits its run"), warning
    assert "pip install 'ipykernel>=7.4'" in warning and "restart the kernel" in warning
    assert "run.approve(step)" in warning and "%flow approve RUN STEP" in warning
    assert kernel.value('"flow" in get_ipython().magics_manager.magics["line"]')  # loaded all the same
