"""A script for the abandon tests: ``lockgate.run_sync`` on a SQLite store with a plain agent
function that never returns. The function prints ``inside RUN_ID`` once it is running and then
blocks for good; when ``run_sync`` returns, the script prints ``ended STATUS`` and exits, the
function still inside.

usage: python_agent_abandon_driver.py STORE_PATH
"""

from __future__ import annotations

import sys
import threading

import lockgate
from lockgate.engine.agents import Task
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${stuck.output}", contract: Note}
    steps:
      - {id: stuck, agent: stuck, do: "never answer", out: Note}
"""


def stuck(task: Task) -> dict:
    print(f"inside {task.run_id}", flush=True)
    threading.Event().wait()  # nobody ever sets it
    return {"text": "never"}


def main() -> None:
    result = lockgate.run_sync(SPEC, {}, agents={"stuck": stuck}, store=open_store(sys.argv[1]))
    print(f"ended {result.status}", flush=True)


if __name__ == "__main__":
    main()
