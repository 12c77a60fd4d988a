"""A consumer process for the crash tests: drives (or resumes) a run on a SQLite store, printing
one line per transition so the test can SIGKILL it at a chosen point.

usage: engine_crash_driver.py STORE_PATH SPEC_PATH (plan | resume RUN_ID)
"""

from __future__ import annotations

import json
import sys

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import StaleToken


def result_for(entry: dict) -> dict:
    """Deterministic agent: a step's output depends only on its id and task."""
    if entry["kind"] == "fanout_item":
        return {"n": entry["item"] * 10}
    return {"n": len(entry["task"])}


def main() -> None:
    store_path, spec_path, mode = sys.argv[1:4]
    engine = Engine(store=open_store(store_path))
    if mode == "plan":
        resp = engine.plan(open(spec_path).read(), {"items": list(range(6))})
        run_id = resp["run_id"]
    else:
        run_id = sys.argv[4]
        resp = engine.resume(run_id)
    print(json.dumps({"run_id": run_id}), flush=True)
    while resp["status"] not in ("complete", "error", "killed", "cancelled"):
        if resp["status"] == "await_gate":
            resp = engine.gate_resolve(run_id, resp["step_id"], "approve", "ok", "crash-test", resp["token"])
        else:
            entry = resp["ready"][0] if resp["ready"] else resp
            try:
                engine.step_done(run_id, entry["step_id"], result_for(entry), entry["token"])
            except StaleToken:
                pass
            resp = engine.status(run_id)
        print(json.dumps({"status": resp["status"]}), flush=True)
    print(json.dumps({"final": resp["status"], "output": resp.get("output")}), flush=True)


if __name__ == "__main__":
    main()
