"""A gate card shows a decision only once the runner has applied it (a real kernel):

- a click shows the decision as being applied; a decision made from a terminal first (``lockgate
  gate kill``) makes the card say the click was not applied, and why;
- a second decision of the same gate from code (``run.kill``) while the card's is being applied
  is refused, nothing changed: the first decision taken stands;
- a run cancelled from elsewhere while its gate waits: the card says the run was cancelled (no
  decision was made, none is shown), and the step table does not leave the gate waiting.
"""

from __future__ import annotations

import re

import pytest
from kernel_session import KernelSession

SPEC = """version: 1
contracts:
  W: {result: string, quality_score: number}
flows:
  entry: pub
  pub:
    input: {text: string}
    output: {from: "${publish.output}", contract: W}
    steps:
      - {id: work, do: "Produce ${input.text}", agent: codex, out: W}
      - id: review
        after: [work]
        gate: {on_approve: publish, on_revise: null, on_kill: null}
      - {id: publish, do: "Publish ${work.output.result}", agent: codex, out: W}
"""
SETUP = '''
import re, subprocess, sys
calls = []
def codex(task):
    calls.append(task.prompt)
    return {"result": "done", "quality_score": 0.9}
def lockgate(*args):
    done = subprocess.run([sys.executable, "-m", "lockgate", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
def text(html):
    return re.sub("<[^>]+>", "", html)
'''
WAITING = ('run = pub.start({"text": "t"}, agents={"codex": codex})\n'
           'await run.wait_until(lambda r: "review" in r.waiting_gates())\n'
           'card = run.gates.waiting["review"][1]')


@pytest.fixture()
def kernel(tmp_path):
    session = KernelSession(tmp_path)
    session.bind(pub=SPEC)
    session.run(SETUP)
    out = session.run(WAITING)
    assert out.error is None, out.traceback
    yield session
    session.close()


def _card(kernel) -> tuple[str, str]:
    return kernel.value("text(card.title.value), text(card.message.value)")


def test_a_click_beaten_by_a_terminals_decision_says_it_was_not_applied(kernel):
    # the cell holds the loop: the card's question cannot hear of the terminal's kill before the click
    out = kernel.run('lockgate("gate", "kill", run.run_id, "review", "--note", "from a terminal")\n'
                     'card.click("approve")\nprint(text(card.message.value))')
    assert out.error is None, out.traceback
    assert out.stdout.strip() == "approve: being applied…"
    out = kernel.run("await run.wait_until(lambda r: r.done)")
    assert out.error is None, out.traceback
    title, message = _card(kernel)
    assert title == "Gate review: decision not applied"
    assert message == "your approve was not applied: the gate was killed from elsewhere (from a terminal)"
    assert kernel.value("run.status, calls") == ("killed", ["Produce t"])


def test_a_second_decision_while_the_first_is_applied_is_refused(kernel):
    out = kernel.run('card.click("approve")\nrun.kill("review")')
    assert out.error is not None and out.error["ename"] == "EngineError"
    assert out.error["evalue"] == ("gate review was already decided here: approve, being applied; "
                                   "your kill was not applied and nothing changed")
    assert kernel.value("(await run)['result'], run.status") == ("done", "complete")
    assert _card(kernel) == ("Gate review decided", "approve by human")
    refused = kernel.run("%flow kill run review")  # the gate is no longer waiting: the engine says so
    assert refused.error is not None


def test_a_run_cancelled_elsewhere_at_its_gate_shows_no_decision(kernel):
    out = kernel.run('lockgate("cancel", run.run_id)\nawait run.wait_until(lambda r: r.done)')
    assert out.error is None, out.traceback
    title, message = _card(kernel)
    assert title == "Gate review was not decided"
    assert "cancelled" in message and "decided elsewhere" not in message and "kill" not in message
    assert kernel.value("run.status, run.rows['review'].status") == ("cancelled", "stopped")
    summary = kernel.value("run.text_summary()")
    assert not re.search(r"review\s+waiting", summary), summary
