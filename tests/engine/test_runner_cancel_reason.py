"""A run the runner cancels because of its max_outstanding limit keeps why in its audit."""

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
    flows:
      entry: main
      main:
        input: {items: "string[]"}
        output: {from: "${done.output}", contract: Item}
        steps:
          - id: each
            fanout:
              over: "${input.items}"
              concurrency: 5
              isolation: none
              require: all
              merge: sequential
              steps:
                - do: "Handle ${item}"
                  agent: worker
                  out: Item
          - id: done
            do: "Count ${each.output}"
            agent: worker
            out: Item
    """).lstrip()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_the_outstanding_limit_is_the_reason_of_flow_cancelled(backend, tmp_path):
    engine = Engine(store=open_store("memory" if backend == "memory" else tmp_path / "runs.db"))

    async def worker(task):
        await asyncio.Event().wait()

    events = []
    with pytest.raises(RunnerError, match="more than max_outstanding = 3") as raised:
        await asyncio.wait_for(run(FAN, {"items": list("abcde")}, agents={"worker": worker}, engine=engine,
                                   max_running=1, max_outstanding=3, on_event=events.append), GUARD)
    (cancelled,) = [e for e in engine.audit(events[0].run_id)["events"] if e["type"] == "flow_cancelled"]
    assert cancelled["detail"]["reason"] == str(raised.value)
    assert events[-1].message == str(raised.value)
