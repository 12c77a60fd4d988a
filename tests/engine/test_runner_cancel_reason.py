"""A run that reaches its max_outstanding limit part-way is not cancelled (review s11, finding 3;
before, the runner cancelled it with the limit as the reason in its audit): no ``flow_cancelled``,
the run stays ``running``, and its drive's claim is given up so that a resume may go on."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from lockgate.engine.engine import Engine
from lockgate.engine.runner import run
from lockgate.engine.store import open_store
from lockgate.errors import RunnerError

GUARD = 30  # seconds: only a bound for a broken runner, never a pace

FAN = textwrap.dedent("""
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
            agent: worker
            out: List
          - id: each
            fanout:
              over: "${list.output.items}"
              concurrency: 5
              isolation: none
              require: all
              merge: sequential
              steps:
                - do: "Handle ${item}"
                  agent: worker
                  out: Item
    """).lstrip()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_the_outstanding_limit_does_not_cancel_the_run(backend, tmp_path):
    engine = Engine(store=open_store("memory" if backend == "memory" else tmp_path / "runs.db"))

    async def worker(task):
        return {"items": list("abcde")} if task.step_id == "list" else {"name": task.prompt}

    events = []
    with pytest.raises(RunnerError, match="more than max_outstanding = 3") as raised:
        await asyncio.wait_for(run(FAN, {"n": 5}, agents={"worker": worker}, engine=engine,
                                   max_running=1, max_outstanding=3, on_event=events.append), GUARD)
    run_id = events[0].run_id
    assert "resumable" in str(raised.value)
    assert "flow_cancelled" not in [e["type"] for e in engine.audit(run_id)["events"]]
    assert [r["status"] for r in engine.runs()] == ["running"] and engine.driver_of(run_id) is None
