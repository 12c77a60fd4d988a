"""What a notebook says of a run beyond its live view (a real kernel):

- a bug in a notebook agent (a KeyError in a helper) shows where it was raised: the failure in the
  cell's output and in the audit record carries the agent's last frames;
- ``wait_until`` giving up says that it stopped waiting, that the run goes on, and how to wait
  longer (it was a bare TimeoutError);
- running again the cell that started a run still waiting at its gate names that run and the line
  that stops it (its view was replaced, its variable rebound: nothing else shows it). A cell is
  known by the id its front end sends (JupyterLab), else by its text.
"""

from __future__ import annotations

import pytest
from kernel_session import CellOutput, KernelSession

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
AGENTS = '''
import threading
release = threading.Event()
def codex(task):
    return {"result": "done", "quality_score": 0.9}
def slow(task):
    release.wait(60)
    return {"result": "slow", "quality_score": 0.9}
def parse(reply):
    return {"result": reply["text"], "quality_score": reply["score"]}
def buggy(task):
    return parse({"text": "no score"})
'''
START = 'run = pub.start({"text": "t"}, agents={"codex": codex})\nawait run.wait_until(lambda r: "review" in r.waiting_gates())'


@pytest.fixture()
def kernel(tmp_path):
    session = KernelSession(tmp_path)
    session.bind(pub=SPEC)
    session.run(AGENTS)
    yield session
    session.run("release.set()")
    session.close()


def test_a_bug_in_a_notebook_agent_shows_where_it_was_raised(kernel):
    out = kernel.run('run = pub.start({"text": "t"}, agents={"codex": buggy})\n'
                     "await run.wait_until(lambda r: r.done)\nprint(run)")
    assert out.error is None, out.traceback
    assert "  failure: agent reported failure: KeyError: 'score'\n    Traceback (the agent's frames" in out.stdout
    assert "in buggy" in out.stdout and "in parse" in out.stdout and 'reply["score"]' in out.stdout
    reasons = kernel.value('[e["detail"]["failure"]["reason"] for e in run.audit()["events"] '
                           'if e["type"] == "result" and "failure" in e["detail"]]')
    assert reasons and all('in parse' in reason and 'reply["score"]' in reason for reason in reasons)


def test_wait_until_giving_up_says_the_run_goes_on_and_how_to_wait_longer(kernel):
    out = kernel.run('run = pub.start({"text": "t"}, agents={"codex": slow})\n'
                     "await run.wait_until(lambda r: r.done, timeout=0.2)")
    assert out.error is not None and out.error["ename"] == "TimeoutError"
    run_id = kernel.value("run.run_id")
    assert out.error["evalue"] == (
        f"stopped waiting after 0.2 s: the condition did not hold yet; run {run_id} goes on (it is running). "
        "Wait longer with wait_until(..., timeout=SECONDS), or timeout=None for no limit")
    assert kernel.value("run.done") is False


def _run_cell(kernel: KernelSession, code: str, cell_id: str) -> CellOutput:
    """``code`` executed as JupyterLab sends a cell: with the cell's id in the request's metadata."""
    client = kernel.client
    msg = client.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                 "user_expressions": {}, "allow_stdin": False,
                                                 "stop_on_error": True}, metadata={"cellId": cell_id})
    client.shell_channel.send(msg)
    out = CellOutput()
    while True:
        reply = client.get_iopub_msg(timeout=120)
        if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        kind, content = reply["msg_type"], reply["content"]
        if kind == "status" and content["execution_state"] == "idle":
            return out
        if kind == "stream":
            setattr(out, content["name"], getattr(out, content["name"]) + content["text"])
        elif kind == "error":
            out.error = content


def test_running_again_the_cell_that_started_a_waiting_run_names_that_run(kernel):
    first = _run_cell(kernel, START, "cell-1")
    assert first.error is None and "started by this cell" not in first.stderr, first.shown
    earlier = kernel.value("run.run_id")
    other = _run_cell(kernel, START.replace("run =", "other =").replace("run.", "other."), "cell-2")
    assert "started by this cell" not in other.stderr, other.shown  # another cell: nothing to say
    again = _run_cell(kernel, START + "\nprint('same cell')", "cell-1")  # edited, then run again
    assert again.error is None, again.shown
    assert again.stderr.strip() == (f"run {earlier} started by this cell earlier is still waiting at gate review: "
                                    f"%flow cancel {earlier} stops it (or decide it: %flow approve {earlier} review)")
    second = kernel.value("run.run_id")
    kernel.run(f"%flow cancel {earlier}")
    third = _run_cell(kernel, START, "cell-1")
    assert third.stderr.startswith(f"run {second} started by this cell earlier"), third.shown
    assert earlier not in third.stderr  # cancelled: it no longer goes on


def test_without_a_cell_id_the_same_text_is_the_same_cell(kernel):
    assert kernel.run(START).error is None
    earlier = kernel.value("run.run_id")
    again = kernel.run(START)
    assert f"run {earlier} started by this cell earlier is still waiting at gate review" in again.stderr, again.shown


def test_runs_a_cell_starts_together_are_not_earlier_runs_of_it(kernel):
    loop = ('runs = [pub.start({"text": t}, agents={"codex": codex}) for t in "abc"]\n'
            'for r in runs:\n    await r.wait_until(lambda r: "review" in r.waiting_gates())')
    first = _run_cell(kernel, loop, "cell-loop")
    assert first.error is None and "started by this cell" not in first.stderr, first.shown
    ids = kernel.value("[r.run_id for r in runs]")
    again = _run_cell(kernel, loop, "cell-loop")
    assert again.error is None, again.shown
    named = [line for line in again.stderr.splitlines() if "started by this cell earlier" in line]
    assert sorted(line.split()[1] for line in named) == sorted(ids), again.stderr  # each once, by its id
