"""Starting a run refuses bad inputs, missing agents, agents that cannot run here and a bare
agents= function at once, in one line, as the CLI and the MCP server do; resuming one refuses
missing agents the same way (a real kernel)."""

from __future__ import annotations

import pytest
from kernel_session import REVIEWED_WORK, KernelSession

WORK = 'def work(task):\n    return {"result": "done", "quality_score": 0.9}\nagents = {"codex": work}'
RUNS = ("from lockgate.engine.engine import Engine\nfrom lockgate.engine.store import open_store\n"
        "def stored_runs():\n    return len(Engine(store=open_store(None)).runs())")
UNAVAILABLE = '''
from lockgate.errors import AgentUnavailable
class Offline:
    """An agent whose preflight finds it cannot run (a missing binary, credentials)."""
    name = "codex"
    def preflight(self):
        raise AgentUnavailable("codex: no binary here")
    async def execute(self, task):
        raise AssertionError("not called")
    async def cancel(self):
        pass
class Unreachable(Offline):
    """An agent whose preflight awaits an answer (an endpoint), which says it is down."""
    async def preflight(self):
        raise AgentUnavailable("codex: endpoint down")
offline = {"codex": Offline()}
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("kernel")
    session = KernelSession(cwd)
    # scribe: an agent name nothing provides (codex is built in: it resolves, then its preflight runs)
    session.bind(rw=REVIEWED_WORK, scribed=REVIEWED_WORK.replace("agent: codex", "agent: scribe"))
    session.run(WORK + "\n" + RUNS + "\n" + UNAVAILABLE)
    yield session
    session.close()


def _one_line_refused_line(out, *expected: str) -> None:
    """A refused %flow line or Python call (``rw.start``): the cell fails with a FlowCellError,
    an ``error`` output a saved notebook and papermill see, shown as one line."""
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    assert out.traceback.startswith("FlowCellError: ") and len(out.error["traceback"]) == 1, out.traceback
    assert "Traceback" not in out.shown
    for text in expected:
        assert text in out.traceback, out.traceback


@pytest.mark.parametrize("code, expected", [
    ('bad = rw.start({"txet": "t"}, agents=agents)',
     ["rw.start: inputs do not match flow 'reviewed_work': input.text: missing required field",
      'input.txet: unknown field "txet"']),
    ('bad = rw.start({"text": 42}, agents=agents)', ["rw.start: inputs do not match flow", "input.text"]),
    ('bad = rw.start("t", agents=agents)', ["rw.start: flow inputs must be an object"]),
    ('bad = scribed.start({"text": "t"})', ["scribed.start: no agent named 'scribe': pass it in agents="]),
    ('bad = scribed.start({"text": "t"}, agents=agents)', ["scribed.start: no agent named 'scribe'"]),
    ('bad = rw.start({"text": "t"}, agents=work)',
     ["rw.start: agents= takes a mapping {name: callable}, e.g. agents={'work': work}, not a function"]),
    ('bad = rw.start({"text": "t"}, agents=[work])', ["agents= takes a mapping", "not a list"]),
    ("%flow run rw --input txet=t --agents agents --as bad",
     ["%flow run: inputs do not match flow 'reviewed_work': input.text: missing required field"]),
    ("%flow run scribed --input text=t --as bad", ["%flow run: no agent named 'scribe': pass --agents VAR"]),
    ('bad = rw.start({"text": "t"}, agents=offline)', ["rw.start: codex: no binary here"]),
    ("%flow run rw --input text=t --agents offline --as bad", ["%flow run: codex: no binary here"]),
])
def test_a_run_that_cannot_start_is_refused_at_once(kernel, code, expected):
    before = kernel.value("stored_runs()")
    _one_line_refused_line(kernel.run(code), *expected)
    assert kernel.value('"bad" in globals()') is False  # nothing bound, nothing started
    assert kernel.value("stored_runs()") == before


def test_the_engines_error_is_kept_as_the_cause(kernel):
    kernel.run('try:\n    rw.start({"txet": "t"}, agents=agents)\nexcept Exception as exc:\n    refused = exc')
    assert kernel.value("type(refused.__cause__).__name__") == "InputValidationError"
    assert kernel.value('refused.__cause__.detail["violations"][0]["path"]') == "input.text"


def test_agents_registered_or_passed_are_found(kernel):
    kernel.run('import lockgate.engine.agents as la\nla.register("scribe", work)')
    try:
        out = kernel.run('s = scribed.start({"text": "t"})\nawait s.wait_until(lambda r: "review" in r.waiting_gates())')
        assert out.error is None, out.traceback
        kernel.run('s.approve("review")')
        assert kernel.value("await s") == {"result": "done", "quality_score": 0.9}
    finally:
        kernel.run('la.DEFAULT_REGISTRY.unregister("scribe")')
    _one_line_refused_line(kernel.run('scribed.start({"text": "t"})'), "no agent named 'scribe'")


def test_a_run_whose_agent_is_found_down_later_fails_before_it_is_planned(kernel):
    """An asynchronous preflight cannot be awaited by the cell that starts the run: the run's
    task makes it, and the run ends in error without a plan."""
    out = kernel.run('n = rw.start({"text": "t"}, agents={"codex": Unreachable()})\n'
                     'await n.wait_until(lambda run: run.done)')
    assert out.error is None, out.traceback
    assert kernel.value("n.status") == "error"
    _one_line_refused_line(kernel.run("%flow audit n"),
                           "%flow audit: the run has not been planned (it is error: ", "endpoint down")
    _one_line_refused_line(kernel.run("%flow approve n review"), "%flow approve: the run has not been planned")


def test_a_resumed_run_whose_agent_is_nowhere_is_refused_at_once(kernel):
    kernel.run('from lockgate.engine.engine import Engine\nfrom lockgate.engine.store import open_store\n'
               'stored = Engine(store=open_store(None))\n'
               'rid = stored.plan(scribed.spec, {"text": "t"})["run_id"]\n'
               'def events():\n    return len(stored.audit(rid)["events"])')
    before = kernel.value("events()")
    _one_line_refused_line(kernel.run("%flow resume $rid --as bad"),
                           "%flow resume: no agent named 'scribe': pass --agents VAR (a dict mapping 'scribe'")
    assert kernel.value('"bad" in globals()') is False
    assert kernel.value("events()") == before  # nothing driven: the run waits as it did
    kernel.run('scribes = {"scribe": work}')
    out = kernel.run("%flow resume $rid --agents scribes --as resumed")
    assert out.error is None, out.traceback
    kernel.run('await resumed.wait_until(lambda r: "review" in r.waiting_gates())\nresumed.approve("review")')
    assert kernel.value("await resumed") == {"result": "done", "quality_score": 0.9}


def test_a_resumed_run_whose_agent_cannot_run_here_is_refused_at_once(kernel):
    kernel.run('from lockgate.engine.engine import Engine\nfrom lockgate.engine.store import open_store\n'
               'kept = Engine(store=open_store(None))\n'
               'kept_id = kept.plan(rw.spec, {"text": "t"})["run_id"]')
    before = kernel.value('len(kept.audit(kept_id)["events"])')
    _one_line_refused_line(kernel.run("%flow resume $kept_id --agents offline --as bad"),
                           "%flow resume: codex: no binary here")
    assert kernel.value('"bad" in globals()') is False
    assert kernel.value('len(kept.audit(kept_id)["events"])') == before


def test_a_resumed_run_another_process_drives_is_refused_at_once(kernel):
    import json
    import subprocess
    import sys
    import textwrap

    # another process plans the run, claiming it as a drive would, and lives on until told to end
    script = textwrap.dedent(f"""
        import json, sys
        from lockgate.engine.drivers import Driver
        from lockgate.engine.engine import Engine
        from lockgate.engine.store import open_store
        from lockgate.dsl.loader import load
        engine = Engine(store=open_store({str(kernel.cwd / ".lockgate" / "lockgate.db")!r}))
        spec = load({REVIEWED_WORK!r}).spec
        print(json.dumps(engine.plan(spec, {{"text": "t"}}, driver=Driver.here())["run_id"]), flush=True)
        sys.stdin.read()
    """)
    other = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        run_id = json.loads(other.stdout.readline())
        out = kernel.run(f"%flow resume {run_id} --as elsewhere")
        _one_line_refused_line(out, f"%flow resume: run {run_id} is being driven by process {other.pid} on this host")
        assert kernel.value('"elsewhere" in globals()') is False
    finally:
        other.communicate("", timeout=60)
