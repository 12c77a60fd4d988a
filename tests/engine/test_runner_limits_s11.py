"""The runner's limits (review s11, findings 3 and 6).

A run that reaches ``max_outstanding`` part-way is not cancelled: the calls in flight end and
report, nothing more starts, and the run is left resumable, so that the remedy the error names (a
higher limit, then a resume) goes on from there. A run whose first steps alone pass the limit is
refused before anything is stored. Limits given in Python are checked before anything is stored.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lockgate.engine.admission import OutstandingLimit, first_calls
from lockgate.engine.engine import Engine
from lockgate.engine.flowneeds import as_spec
from lockgate.engine.runner import make_runner, resume, run, run_sync
from lockgate.engine.store import open_store
from lockgate.errors import RunnerError

ROOT = Path(__file__).resolve().parents[2]
GUARD = 60  # seconds: only a bound for a broken runner, never a pace

#: a list step, then a fanout over its output: how wide the fanout is is known only once it ran
LISTED = textwrap.dedent("""
    version: 1
    contracts:
      Item: {name: string}
      List: {items: "string[]"}
    flows:
      entry: main
      main:
        input: {n: integer}
        output: {from: "${list.output}", contract: List}
        steps:
          - id: list
            do: "List ${input.n}"
            agent: lister
            out: List
          - id: fan
            fanout:
              over: "${list.output.items}"
              concurrency: 3
              isolation: none
              require: all
              merge: sequential
              steps:
                - do: "Handle ${item}"
                  agent: worker
                  out: Item
    """).lstrip()


def over_input(concurrency: int, *, when: str = "", budget: str = "") -> str:
    """A flow that starts with a fanout over input ``items`` (and a step ``solo`` beside it)."""
    return textwrap.dedent(f"""
        version: 1
        contracts:
          Item: {{name: string}}
        flows:
          entry: main
          main:
            input: {{items: "string[]"}}
            output: {{from: "${{solo.output}}", contract: Item}}{budget}
            steps:
              - id: fan{when}
                fanout:
                  over: "${{input.items}}"
                  concurrency: {concurrency}
                  isolation: none
                  require: all
                  merge: sequential
                  steps:
                    - do: "Handle ${{item}}"
                      agent: worker
                      out: Item
              - id: solo
                do: "Alone"
                agent: worker
                out: Item
        """).lstrip()


class Calls:
    """Python agents that answer at once and count their calls."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def lister(self, task):
        self.seen.append(task.step_id)
        return {"items": [f"i{k}" for k in range(6)]}

    def worker(self, task):
        self.seen.append(task.step_id)
        return {"name": task.prompt}

    def agents(self) -> dict:
        return {"lister": self.lister, "worker": self.worker}


# --- finding 3: reached part-way, the run is left resumable ---------------------------------------


async def test_the_limit_reached_part_way_leaves_the_run_resumable_with_nothing_lost(tmp_path):
    db = tmp_path / "runs.db"
    calls = Calls()
    events = []
    with pytest.raises(OutstandingLimit) as raised:
        await run(LISTED, {"n": 6}, agents=calls.agents(), store=str(db), max_running=2, max_outstanding=2,
                  on_event=events.append)
    run_id = events[0].run_id
    message = str(raised.value)
    assert f"run {run_id}: starting 'fan/2' would make more than max_outstanding = 2 agent calls" in message
    assert "raise max_outstanding above 2" in message and "resumable" in message
    assert message.endswith(f"then: lockgate.resume({run_id!r}, agents=..., max_outstanding=...) with the same agents")
    # the two items started before the limit ran to the end and were reported, not thrown away
    assert calls.seen[0] == "list" and sorted(calls.seen[1:]) == ["fan/0", "fan/1"]  # those two run side by side
    seen = Engine(store=open_store(db))  # what another process reads
    shown = seen.status(run_id)
    assert [r["status"] for r in seen.runs()] == ["running"] and "run_finished" not in [e.kind for e in events]
    assert seen.driver_of(run_id) is None  # nobody claims it: a resume may go on
    assert [e["step_id"] for e in shown["ready"]] == ["fan/2", "fan/3", "fan/4"]  # issued, left to a resume
    assert "flow_cancelled" not in [e["type"] for e in seen.audit(run_id)["events"]]
    seen.close()
    # the remedy the error names: a higher limit, then a resume, which redoes nothing
    result = await resume(run_id, agents=calls.agents(), store=str(db), max_outstanding=10)
    assert result.ok, result.response
    assert calls.seen.count("list") == 1 and sorted(calls.seen[3:]) == [f"fan/{k}" for k in range(2, 6)]
    assert result.output == {"items": [f"i{k}" for k in range(6)]}


async def test_a_run_in_memory_is_resumed_on_the_same_engine():
    """A memory store's run ends with its process: the way on is a resume on the same engine."""
    engine = Engine()
    calls = Calls()
    with pytest.raises(OutstandingLimit, match=r"then: lockgate\.resume\('[0-9a-f]+', engine=\.\.\.") as raised:
        await run(LISTED, {"n": 6}, agents=calls.agents(), engine=engine, max_running=1, max_outstanding=1)
    run_id = str(raised.value).split()[1].rstrip(":")
    result = await resume(run_id, agents=calls.agents(), engine=engine, max_running=1, max_outstanding=3)
    assert result.ok and calls.seen.count("list") == 1 and len(calls.seen) == 7


def test_the_cli_says_how_to_go_on_and_the_resume_it_names_completes(tmp_path):
    """Through the real ``lockgate`` command and command agents: the error names the
    configuration file and the resume command; raised there, the resume completes the run with
    the list step's call kept."""
    (tmp_path / "spec.stratum.yaml").write_text(LISTED)
    (tmp_path / "lister.py").write_text(
        "import json, sys\njson.load(sys.stdin)\nopen('calls.log', 'a').write('lister\\n')\n"
        "print(json.dumps({'items': [f'i{k}' for k in range(6)]}))\n")
    (tmp_path / "worker.py").write_text(
        "import json, sys\nt = json.load(sys.stdin)\nopen('calls.log', 'a').write(t['step_id'] + '\\n')\n"
        "print(json.dumps({'name': t['prompt'].split()[-1]}))\n")
    config = tmp_path / "lockgate.toml"
    agents = ('[agents.lister]\ntype = "command"\ncommand = ["python3", "lister.py"]\n'
              '[agents.worker]\ntype = "command"\ncommand = ["python3", "worker.py"]\n')
    config.write_text(agents + "[runner]\nmax_running = 2\nmax_outstanding = 2\n")

    first = _cli(tmp_path, "run", "spec.stratum.yaml", "--input", "n=6", "--no-prompt")
    assert first.returncode == 1, first.stderr
    error = first.stderr.strip().splitlines()[-1]
    assert "starting 'fan/2' would make more than max_outstanding = 2 agent calls" in error
    assert f"[runner] max_outstanding in {config}" in error
    command = error.rsplit("then: ", 1)[1]
    assert command.startswith("lockgate run --resume ")
    assert "cancelled" not in first.stderr
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["fan/0", "fan/1", "lister"]

    config.write_text(agents + "[runner]\nmax_running = 2\nmax_outstanding = 10\n")
    second = _cli(tmp_path, *shlex.split(command)[1:], "--no-prompt")
    assert second.returncode == 0, second.stderr
    log = (tmp_path / "calls.log").read_text().split()
    assert log.count("lister") == 1 and sorted(log) == sorted(["lister", *(f"fan/{k}" for k in range(6))])


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    return subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=GUARD)


# --- finding 3: certain from the start, refused before anything is stored ---------------------------


async def test_a_first_fanout_wider_than_the_limit_is_refused_before_the_run_is_stored(tmp_path):
    db = tmp_path / "runs.db"
    calls = Calls()
    with pytest.raises(OutstandingLimit) as raised:
        await run(over_input(concurrency=5), {"items": list("abcdef")}, agents=calls.agents(), store=str(db),
                  max_running=1, max_outstanding=4)
    message = str(raised.value)
    assert message.startswith("the run was not started: its first steps start 6 agent calls at once "
                              "('fan': 5, 'solo': 1), which would make more than max_outstanding = 4 agent calls")
    assert "raise max_outstanding above 4" in message
    assert calls.seen == []
    engine = Engine(store=open_store(db))
    assert engine.runs() == []
    engine.close()


async def test_a_first_fanout_within_the_limit_runs():
    calls = Calls()
    result = await run(over_input(concurrency=5), {"items": list("abc")}, agents=calls.agents(), store="memory",
                       max_running=1, max_outstanding=4)  # 3 items + solo: exactly the limit
    assert result.ok and len(calls.seen) == 4


@pytest.mark.parametrize("variant, expected", [
    ({}, {"fan": 5, "solo": 1}),
    ({"when": '\n                when: "true"'}, {"solo": 1}),  # a `when` may skip it: not certain
    ({"budget": "\n            budget: {dispatches: 50}"}, {}),  # a dispatches budget may refuse issuances
])
def test_only_calls_certain_to_start_at_once_are_counted(variant, expected):
    spec = as_spec(over_input(concurrency=5, **variant))
    assert first_calls(spec, None, {"items": list("abcdefg")}) == expected
    assert first_calls(as_spec(LISTED), None, {"n": 6}) == {"list": 1}  # the fanout waits for the list


# --- finding 6: limits given in Python are checked before anything is stored ----------------------


@pytest.mark.parametrize("limits", [
    {"max_running": 0}, {"max_running": -1}, {"max_running": 2.5}, {"max_running": "3"},
    {"max_running": True}, {"max_outstanding": 0}, {"max_outstanding": 2.5},
])
def test_a_limit_that_is_not_a_positive_integer_is_refused_before_the_run_is_stored(limits, tmp_path):
    db = tmp_path / "runs.db"
    (name, value), = limits.items()
    with pytest.raises(RunnerError) as raised:
        run_sync(LISTED, {"n": 1}, agents=Calls().agents(), store=str(db), **limits)
    assert str(raised.value).startswith(f"{name}= must be an integer >= 1")
    assert repr(value) in str(raised.value)
    assert not db.exists()  # nothing opened, nothing planned: no run left "running"
    with pytest.raises(RunnerError, match=f"{name}= must be an integer >= 1"):
        make_runner(store="memory", **limits)


def test_limits_not_given_are_the_configuration_s(tmp_path):
    (tmp_path / "lockgate.toml").write_text("[runner]\nmax_running = 3\nmax_outstanding = 7\n")
    runner = make_runner(store="memory", workspace=tmp_path)
    assert (runner.settings.max_running, runner.settings.max_outstanding) == (3, 7)
    runner = make_runner(store="memory", workspace=tmp_path, max_running=1)
    assert (runner.settings.max_running, runner.settings.max_outstanding) == (1, 7)


def test_the_cli_resume_command_names_the_store_the_run_is_in(tmp_path):
    """Run with ``--store``: the resume command the error prints names that store (the runner
    does not know it; the CLI says its own command), and it completes the run."""
    (tmp_path / "spec.stratum.yaml").write_text(LISTED)
    (tmp_path / "lister.py").write_text(
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'items': [f'i{k}' for k in range(6)]}))\n")
    (tmp_path / "worker.py").write_text(
        "import json, sys\nt = json.load(sys.stdin)\nprint(json.dumps({'name': t['prompt'].split()[-1]}))\n")
    agents = ('[agents.lister]\ntype = "command"\ncommand = ["python3", "lister.py"]\n'
              '[agents.worker]\ntype = "command"\ncommand = ["python3", "worker.py"]\n')
    config = tmp_path / "lockgate.toml"
    config.write_text(agents + "[runner]\nmax_running = 2\nmax_outstanding = 2\n")
    first = _cli(tmp_path, "run", "spec.stratum.yaml", "--input", "n=6", "--no-prompt", "--store", "elsewhere.db")
    assert first.returncode == 1, first.stderr
    command = first.stderr.strip().splitlines()[-1].rsplit("then: ", 1)[1]
    assert command.startswith("lockgate run --resume ") and command.endswith("--store elsewhere.db"), command
    config.write_text(agents + "[runner]\nmax_running = 2\nmax_outstanding = 10\n")
    second = _cli(tmp_path, *shlex.split(command)[1:], "--no-prompt")
    assert second.returncode == 0, second.stderr
