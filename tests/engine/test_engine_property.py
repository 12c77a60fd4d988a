"""A random walk over the state machine: random results, failures, stale tokens, gate decisions and
checkpoints; after every call the persisted run equals the in-memory one, every status is legal
and no token is ever issued twice."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.engine import Engine
from lockgate.engine.model import RUN_STATUSES, STEP_STATUSES
from lockgate.errors import EngineError

SPEC = """
version: 1
contracts:
  N:
    n: integer
flows:
  entry: main
  main:
    input:
      items: integer[]
    output:
      from: "${last.output}"
      contract: N
    max_rounds: 3
    steps:
      - id: a
        do: "a"
        out: N
        ensure:
          - expr: "result.n >= 0"
        on_fail: rescue
      - id: rescue
        do: "rescue"
        out: N
      - id: fan
        after: [a]
        attempts: 2
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: any
          merge: sequential
          dispatch: consumer
          steps:
            - do: "item ${item}"
              out: N
              ensure:
                - expr: "result.n != 13"
      - id: sub
        run: child
        with:
          x: "${input.items}"
      - id: gate
        after: [fan, sub]
        gate:
          on_approve: null
          on_revise: a
          on_kill: null
          max_rounds: 2
      - id: last
        after: [gate, rescue]
        do: "last"
        out: N
        iterate:
          max: 3
          until: "result.n > 5"
  child:
    input:
      x: integer[]
    output:
      from: "${c.output}"
      contract: N
    steps:
      - id: c
        do: "child ${input.x}"
        out: N
"""

RESPONSE_STATUSES = {"execute_step", "await_gate", "ensure_failed", "schema_failed", "complete", "error",
                     "killed", "cancelled"}

actions = st.lists(
    st.tuples(st.sampled_from(["good", "good", "good", "low", "bad_schema", "failure", "ensure13", "stale",
                               "approve", "revise", "kill", "commit", "revert", "cancel"]),
              st.integers(0, 5)),
    min_size=1, max_size=60,
)


def check_invariants(engine: Engine, run_id: str, seen: dict[str, str], resp: dict) -> None:
    assert resp["status"] in RESPONSE_STATUSES
    live = engine._live.get(run_id)
    stored = engine.store.load_run(run_id)
    if live is not None and live.version == stored.version:
        assert live.header.to_dict() == stored.header
        records = {k: v for k, v in stored.steps.items() if not k.startswith("@")}
        assert live.record_dicts() == records
    header = stored.header
    assert header["status"] in RUN_STATUSES
    for key, record in stored.steps.items():
        if key.startswith("@"):
            continue
        assert record["status"] in STEP_STATUSES
        token = record.get("token")
        if token is not None:
            assert seen.setdefault(token, key) == key, f"token {token} issued to {seen[token]} and {key}"
    tokens = [r.get("token") for k, r in stored.steps.items() if not k.startswith("@") and r.get("token")]
    assert len(tokens) == len(set(tokens))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(st.integers(0, 20), max_size=3), walk=actions)
def test_random_walk_keeps_the_invariants(items: list[int], walk: list[tuple[str, int]]) -> None:
    engine = Engine()
    resp = engine.plan(SPEC, {"items": items})
    run_id = resp["run_id"]
    seen: dict[str, str] = {}
    stale: list[tuple[str, str]] = []
    check_invariants(engine, run_id, seen, resp)
    for action, pick in walk:
        state = engine.status(run_id)
        if state["status"] in ("complete", "error", "killed", "cancelled") and action != "revert":
            continue
        try:
            resp = _act(engine, run_id, state, action, pick, stale)
        except EngineError:
            resp = engine.status(run_id)
        check_invariants(engine, run_id, seen, resp)


def _act(engine: Engine, run_id: str, state: dict, action: str, pick: int, stale: list) -> dict:
    ready = state.get("ready") or []
    gates = state.get("gates") or []
    if action in ("approve", "revise", "kill"):
        if not gates:
            return state
        gate = gates[pick % len(gates)]
        return engine.gate_resolve(run_id, gate["step_id"], action, "walk", "test", gate["token"])
    if action == "commit":
        return {**state, **engine.commit(run_id, f"cp{pick % 2}"), "status": state["status"]}
    if action == "revert":
        return engine.revert(run_id, f"cp{pick % 2}")
    if action == "cancel":
        return engine.cancel(run_id) if pick == 0 else state
    if action == "stale":
        if not stale:
            return state
        step_id, token = stale[pick % len(stale)]
        return engine.step_done(run_id, step_id, {"n": 1}, token)
    if not ready:
        return state
    entry = ready[pick % len(ready)]
    stale.append((entry["step_id"], entry["token"]))
    result = {"good": {"n": 7 + pick}, "low": {"n": -1}, "bad_schema": {"n": "x"}, "ensure13": {"n": 13}}.get(action)
    if action == "failure":
        return engine.step_done(run_id, entry["step_id"], None, entry["token"], failure="walk failure")
    return engine.step_done(run_id, entry["step_id"], result, entry["token"])
