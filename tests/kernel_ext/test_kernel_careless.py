"""A careless user in a real kernel: every mistake ends in a short message, the kernel lives on."""

from __future__ import annotations

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


def _short_usage_error(out, *expected: str) -> None:
    """A refused %flow line fails the cell (a FlowCellError, which papermill sees), shown as a
    short message without a traceback."""
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    assert "Traceback" not in out.shown
    assert len(out.traceback) < 600, out.traceback
    for text in expected:
        assert text in out.traceback, out.traceback


@pytest.mark.parametrize("line", ["%flow", "%flow --help", "%flow help", "%flow -h"])
def test_bare_line_magic_and_help_list_the_subcommands(kernel, line):
    out = kernel.run(line)
    assert out.error is None and out.stderr == ""
    assert "%flow SUBCOMMAND" in out.stdout and "approve|revise|kill RUN STEP" in out.stdout


def test_a_subcommands_help_is_not_an_error(kernel):
    out = kernel.run("%flow run --help")
    assert out.error is None and out.stderr == ""
    assert "--agents VAR" in out.stdout


@pytest.mark.parametrize("line, message", [
    ("%flow show nope", "%flow show: no run with id 'nope'"),
    ("%flow audit nope", "%flow audit: no run with id 'nope'"),
    ("%flow cancel nope", "%flow cancel: no run with id 'nope'"),
    ("%flow resume nope", "%flow resume: no run with id 'nope'"),
    ("%flow graph nope", "%flow graph: no run with id 'nope'"),
    ("%flow run rw --inputs AGENTS_TEXT", "no variable named 'AGENTS_TEXT'"),
    ("%flow run rw --input text=hi --agents rw", "--agents rw must name a dict, not a FlowSpec"),
    ("%flow run 'unclosed", "%flow: No closing quotation"),
])
def test_unknown_runs_and_wrong_variables_are_one_line_messages(kernel, line, message):
    _short_usage_error(kernel.run(line), message)
    assert kernel.value("1 + 1") == 2


def test_refused_gate_decisions_are_one_line_messages(kernel):
    kernel.run("%flow run rw --input text=hi --agents agents --as r")
    kernel.run('await r.wait_until(lambda run: "review" in run.waiting_gates())')
    _short_usage_error(kernel.run("%flow revise r review"), "a revision needs a note")
    assert kernel.value("r.waiting_gates()") == ["review"]  # nothing was decided
    assert kernel.run("%flow approve r review --note ok").error is None
    _short_usage_error(kernel.run("%flow approve r review"), "%flow approve: run",
                       "is complete; its gates take no more decisions")


def test_control_characters_of_a_cell_are_escaped_in_the_report(kernel):
    out = kernel.run('%%flow junk\nversion: 1\n\x00\x1b[31m flows: x\n')
    assert out.error["ename"] == "FlowCellError" and "Traceback" not in out.shown  # a failed cell, no traceback
    assert "LG102" in out.traceback and "\u2400\u241b[31m flows: x" in out.traceback  # control pictures
    assert "\x1b[31m" not in out.traceback


BLOCKING_AGENT = '''
import threading
release = threading.Event()
def slow(task):
    print("AGENT STARTED", flush=True)
    release.wait(60)
    return {"result": "slow", "quality_score": 0.9}
'''


def test_cancelling_a_run_with_an_agent_in_flight_records_it_cancelled(kernel):
    kernel.run(BLOCKING_AGENT + 'c = rw.start({"text": "t"}, agents={"codex": slow})')
    kernel.run('await c.wait_until(lambda run: run.rows["work"].status == "running")')
    assert kernel.run("%flow cancel c").error is None
    kernel.run("await c.wait_until(lambda run: run.done)")
    assert kernel.value('c.status, c.audit()["status"]') == ("cancelled", "cancelled")
    assert kernel.value('c.rows["work"].status') != "running"  # what the store says, not a stale view
    kernel.run("release.set()")
    kernel.run('c_id = c.run_id')
    out = kernel.run('get_ipython().run_line_magic("flow", f"resume {c_id} --agents agents")')
    _short_usage_error(out, "%flow resume: run ", "is cancelled; it cannot be resumed")
    assert kernel.value("1 + 1") == 2


def test_waiting_for_a_condition_a_finished_run_cannot_reach_fails_at_once(kernel):
    out = kernel.run('w = rw.start({"text": "t"}, agents={"codex": lambda task: 1 / 0})\n'
                     'await w.wait_until(lambda run: "review" in run.waiting_gates(), timeout=None)')
    assert out.error["ename"] == "RuntimeError"
    assert "ended error before the condition held" in out.error["evalue"]


def test_a_gate_card_of_a_cancelled_run_takes_no_clicks(kernel):
    kernel.run('g = rw.start({"text": "t"}, agents=agents)')
    kernel.run('await g.wait_until(lambda run: "review" in run.waiting_gates())')
    kernel.run("card = g.gates.waiting['review'][1]\ng.cancel()")
    kernel.run("await g.wait_until(lambda run: run.done)")
    assert kernel.value("all(b.disabled for b in card.buttons)")
    kernel.run("card.approve.click(); card.click('revise')")
    assert "can no longer be decided" in kernel.value("card.message.value")
    assert kernel.value('[e["type"] for e in g.audit()["events"] if e["type"] == "gate_resolved"]') == []
    assert kernel.value('g.audit()["status"]') == "cancelled"


def test_interrupting_a_cell_that_awaits_a_run_leaves_the_run_going(kernel):
    out = kernel.run(BLOCKING_AGENT + 'i = rw.start({"text": "t"}, agents={"codex": slow})\nawait i',
                     interrupt_on="AGENT STARTED")
    assert out.error is not None
    assert "Stopped waiting; run " in out.stderr and "goes on in the background" in out.stderr
    assert kernel.value("i.status") == "running"
    kernel.run("release.set()")
    kernel.run('await i.wait_until(lambda run: "review" in run.waiting_gates())')
    kernel.run('i.approve("review")')
    assert kernel.value("await i") == {"result": "slow", "quality_score": 0.9}


def test_cell_magic_help_shows_its_usage(kernel):
    out = kernel.run("%%flow rw --help\nversion: 1\n")
    assert out.error is None and out.stderr == ""
    assert out.stdout.startswith("usage: %%flow [--flow FLOW] [--no-lint] name") and "--no-lint" in out.stdout


def test_without_ipywidgets_a_run_shows_text_and_its_gates_are_decided_in_code(kernel):
    kernel.run('import sys\nsaved_widgets = sys.modules["ipywidgets"]\nsys.modules["ipywidgets"] = None')
    try:
        out = kernel.run('p = rw.start({"text": "t"}, agents=agents)\np')
        assert out.error is None, out.traceback
        assert "run (starting) of rw" in out.shown
        kernel.run('await p.wait_until(lambda run: "review" in run.waiting_gates())')
        kernel.run('p.approve("review", "plain")')
        assert kernel.value("await p") == {"result": "done", "quality_score": 0.9}
    finally:
        kernel.run('sys.modules["ipywidgets"] = saved_widgets')


def test_interrupting_a_cell_that_waits_at_a_gate_leaves_the_gate_waiting(kernel):
    kernel.run('q = rw.start({"text": "t"}, agents=agents)')
    kernel.run('await q.wait_until(lambda run: "review" in run.waiting_gates())')
    out = kernel.run('print("WAITING", flush=True)\nawait q.wait_until(lambda run: run.done, timeout=None)',
                     interrupt_on="WAITING")
    assert "Stopped waiting; run " in out.stderr
    assert kernel.value("q.waiting_gates()") == ["review"]
    kernel.run("q.gates.waiting['review'][1].approve.click()")
    assert kernel.value("await q") == {"result": "done", "quality_score": 0.9}


def test_the_status_says_await_gate_while_only_a_gate_waits(kernel):
    kernel.run('s = rw.start({"text": "t"}, agents=agents)')
    kernel.run('await s.wait_until(lambda run: "review" in run.waiting_gates())')
    assert kernel.value("s.status") == "await_gate"
    assert kernel.value("s.text_summary().splitlines()[0]").endswith("of rw: await_gate")
    kernel.run('s.approve("review")')
    assert kernel.value("(await s, s.status)") == ({"result": "done", "quality_score": 0.9}, "complete")


def test_a_run_of_2000_steps_lists_its_eventful_steps_and_counts_the_rest(kernel, tmp_path):
    steps = "".join(
        f"      - id: s{i}\n        do: \"step {i}\"\n        agent: codex\n        out: Out\n"
        + (f"        after: [s{i - 1}]\n" if i else "")
        for i in range(2000)
    )
    spec = ("version: 1\ncontracts:\n  Out:\n    result: string\nflows:\n  entry: big\n  big:\n"
            "    input:\n      text: string\n    output:\n      from: \"${s1999.output}\"\n      contract: Out\n"
            "    steps:\n" + steps)
    (tmp_path / "big.yaml").write_text(spec)
    path = str(tmp_path / "big.yaml")
    out = kernel.run(f'get_ipython().run_cell_magic("flow", "big", pathlib.Path({path!r}).read_text())')
    assert out.error is None and "2000 steps" in out.shown
    kernel.run('b = big.start({"text": "t"}, agents={"codex": lambda task: 1 / 0 if "1500" in task.prompt else {"result": "ok"}})')
    kernel.run("await b.wait_until(lambda run: run.done)")
    summary = kernel.value("b.text_summary()")
    assert len(summary.splitlines()) < 110
    assert "s1500" in summary and "failed" in summary  # the eventful step is listed
    assert "more steps not listed (" in summary and "succeeded" in summary
    kernel.run("from lockgate.kernel_ext.run_view import html_table")
    assert "more steps not listed" in kernel.value("html_table(b)")
