"""Every RUN argument of %flow takes a run id, a variable holding a run or a run id, ``$name``
and ``{expression}`` (a real kernel)."""

from __future__ import annotations

import json

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

DONE = {"result": "done", "quality_score": 0.9}
# How a cell names run ``r`` (its id is in ``rid``); the literal id is filled in by the test.
FORMS = ["r", "rid", "$r", "$rid", "{r}", "{rid}", "{runs['r']}", "ID"]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = KernelSession(cwd)
    session.bind(rw=REVIEWED_WORK)
    session.run(DONE_AGENTS)
    yield session
    session.close()


def _waiting_run(kernel) -> str:
    """Start ``r`` (also ``runs['r']``), wait for its gate; its run id."""
    out = kernel.run('r = rw.start({"text": "t"}, agents=agents)\nrid = None\nruns = {"r": r}\n'
                     'await r.wait_until(lambda run: "review" in run.waiting_gates())\nrid = r.run_id')
    assert out.error is None, out.traceback
    return kernel.value("rid")


def _named(form: str, run_id: str) -> str:
    return run_id if form == "ID" else form


def _ok(out):
    assert out.error is None and "UsageError" not in out.stderr, out.shown
    return out


@pytest.mark.parametrize("form", FORMS)
def test_show_audit_and_graph_take_every_form(kernel, form):
    run_id = _waiting_run(kernel)
    name = _named(form, run_id)
    shown = _ok(kernel.run(f"%flow show {name}"))
    assert f"run {run_id} of rw: await_gate" in shown.shown  # the live view of the run here
    assert json.loads(_ok(kernel.run(f"%flow audit {name}")).stdout)["run_id"] == run_id
    assert any("image/png" in d for d in _ok(kernel.run(f"%flow graph {name}")).data)
    kernel.run('r.approve("review")')
    assert kernel.value("await r") == DONE


@pytest.mark.parametrize("form", FORMS)
def test_gate_decisions_take_every_form(kernel, form):
    run_id = _waiting_run(kernel)
    _ok(kernel.run(f"%flow approve {_named(form, run_id)} review --note ok"))
    assert kernel.value("await r") == DONE
    decisions = kernel.value('r.audit()["trace"][1]["decisions"]')
    assert [(d["decision"], d["rationale"]) for d in decisions] == [("approve", "ok")]


@pytest.mark.parametrize("verb, status", [("kill", "killed"), ("cancel", "cancelled")])
@pytest.mark.parametrize("form", ["$r", "{rid}", "ID"])
def test_kill_and_cancel_take_every_form(kernel, verb, status, form):
    run_id = _waiting_run(kernel)
    step = " review" if verb == "kill" else ""
    _ok(kernel.run(f"%flow {verb} {_named(form, run_id)}{step}"))
    kernel.run("await r.wait_until(lambda run: run.done)")
    assert kernel.value('r.audit()["status"]') == status


@pytest.mark.parametrize("form", ["r", "$rid", "{r}", "ID"])
def test_resuming_a_run_driven_here_gives_that_run(kernel, form):
    run_id = _waiting_run(kernel)
    _ok(kernel.run(f"%flow resume {_named(form, run_id)} --as again"))
    assert kernel.value("again is r")
    kernel.run('r.approve("review")')
    assert kernel.value("await r") == DONE


def test_resuming_a_stored_run_by_a_variable_holding_its_id(kernel):
    kernel.run("from lockgate.engine.engine import Engine\nfrom lockgate.engine.store import open_store\n"
               'pid = Engine(store=open_store(None)).plan(rw.spec, {"text": "t"})["run_id"]')
    _ok(kernel.run("%flow resume pid --agents agents --as p"))
    assert kernel.value("p.run_id == pid")
    kernel.run('await p.wait_until(lambda run: "review" in run.waiting_gates())')
    _ok(kernel.run("%flow resume $pid --as p2"))
    assert kernel.value("p2 is p")  # driven here already
    _ok(kernel.run("%flow approve pid review"))
    assert kernel.value("await p") == DONE


def test_a_run_id_no_run_here_has_is_looked_up_in_the_store(kernel):
    run_id = _waiting_run(kernel)
    kernel.run("held = [r]\ndel r, runs")  # no variable holds the run object itself now
    out = _ok(kernel.run("%flow show rid"))
    assert out.stdout.startswith(f"run {run_id}  flow ")  # what `lockgate show` prints of it
    assert "review" in out.stdout and "waiting_gate" in out.stdout
    assert any("image/svg+xml" in d for d in out.data)  # and its graph by step status
    kernel.run('held[0].approve("review")')
    assert kernel.value("await held[0]") == DONE


@pytest.mark.parametrize("line, message", [
    ("%flow show $nope", "%flow show: no variable named 'nope'"),
    ("%flow audit {1/0}", "%flow audit: {1/0} failed: ZeroDivisionError: division by zero"),
    ("%flow approve rw review", "%flow approve: rw is a FlowSpec, not a run or a run id"),
    ("%flow show {agents}", "%flow show: {agents} is a dict, not a run or a run id"),
    ("%flow show nope", "%flow show: no run with id 'nope'"),
])
def test_a_reference_to_no_run_is_a_one_line_message(kernel, line, message):
    out = kernel.run(line)
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown  # the cell failed
    assert out.traceback.startswith("FlowCellError: ") and len(out.error["traceback"]) == 1, out.traceback
    assert message in out.traceback
