"""Per-transition overhead of the run engine with instant agents, side by side with LangGraph and
pydantic-graph in the same process.

Workloads: a 1,000-step linear flow and a 1,000-item fanout. Lockgate is driven through its
consumer protocol (plan, then step_done for every dispatch, each call persisted before it
answers) on three stores: none (a store that keeps nothing: the engine's own cost), the memory
store (JSON encoding and the hash chain included) and SQLite (WAL, the embedded default).
LangGraph runs the same shapes as a StateGraph (a chain of 1,000 nodes; a Send fanout to 1,000
workers) in memory and with its SQLite checkpointer when ``langgraph-checkpoint-sqlite`` is
installed; pydantic-graph runs them with its builder API in memory. Also timed: one gate decision
round trip on SQLite and ``import lockgate`` in a fresh interpreter.

Run: ``python benchmarks/engine.py [--n 1000] [--repeat 3]``. Prints medians and ratios; this
is a measurement script, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).parent))
from _util import fmt_time, print_table  # noqa: E402

try:  # module level: pydantic-graph resolves the steps' annotations in this module's globals
    from pydantic_graph import GraphBuilder, StepContext, reduce_list_append
except ImportError:  # reported as n/a
    GraphBuilder = StepContext = reduce_list_append = None


class NullStore:
    """Accepts every write and keeps nothing: isolates the engine's own per-transition cost."""

    def __init__(self) -> None:
        self.versions: dict[str, int] = {}

    def create_run(self, run_id: str, header: dict, steps: dict, events: list) -> int:
        self.versions[run_id] = 1
        return 1

    def save_run(self, run_id: str, *, expected_version: int, header: dict, steps: dict, events: list) -> int:
        self.versions[run_id] += 1
        return self.versions[run_id]

    def current_version(self, run_id: str) -> int:
        return self.versions[run_id]

    def close(self) -> None:
        pass


# -- specs --------------------------------------------------------------------------------------


def linear_spec(n: int) -> str:
    steps = ['      - id: s0\n        do: "step 0"\n        out: V']
    steps += [f'      - id: s{i}\n        do: "step {i} after ${{s{i - 1}.output.v}}"\n        out: V'
              for i in range(1, n)]
    return ("version: 1\ncontracts:\n  V:\n    v: integer\nflows:\n  entry: main\n  main:\n    input: {}\n"
            f'    output:\n      from: "${{s{n - 1}.output}}"\n      contract: V\n    steps:\n' + "\n".join(steps) + "\n")


def fanout_spec(n: int) -> str:
    return f"""version: 1
contracts:
  V:
    v: integer
flows:
  entry: main
  main:
    input:
      items: integer[]
    output:
      from: "${{fan.output[0]}}"
      contract: V
    steps:
      - id: fan
        fanout:
          over: "${{input.items}}"
          concurrency: {n}
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "item ${{item}}"
              out: V
"""


GATE_SPEC = """version: 1
contracts:
  V:
    v: integer
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${work.output}"
      contract: V
    max_rounds: 100000
    steps:
      - id: work
        do: "work"
        out: V
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
"""


# -- lockgate -------------------------------------------------------------------------------------


def lockgate_run(store_factory: Any, spec: Any, inputs: dict) -> float:
    """Seconds per transition (one step_done) to drive a run to completion."""
    from lockgate.engine import Engine

    engine = Engine(store=store_factory())
    resp = engine.plan(spec, inputs)
    run_id = resp["run_id"]
    queue = list(resp["ready"])
    transitions = 0
    start = time.perf_counter()
    while resp["status"] != "complete":
        entry = queue.pop() if queue else resp
        resp = engine.step_done(run_id, entry["step_id"], {"v": 1}, entry["token"])
        queue.extend(resp.get("ready") or ())
        transitions += 1
    elapsed = time.perf_counter() - start
    engine.close()
    return elapsed / transitions


def gate_round_trip(store_factory: Any, rounds: int) -> float:
    """Seconds per gate decision (gate_resolve -> next dispatch), persisted."""
    from lockgate.engine import Engine

    engine = Engine(store=store_factory())
    resp = engine.plan(GATE_SPEC, {})
    run_id = resp["run_id"]
    samples = []
    for _ in range(rounds):
        gate = engine.step_done(run_id, "work", {"v": 1}, resp["token"])
        start = time.perf_counter()
        resp = engine.gate_resolve(run_id, "review", "revise", "again", "bench", gate["token"])
        samples.append(time.perf_counter() - start)
    engine.close()
    return statistics.median(samples)


# -- LangGraph ------------------------------------------------------------------------------------


class LinearState(TypedDict):
    v: int


class FanState(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]


def langgraph_linear(n: int, checkpointer: Any = None) -> float:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(LinearState)
    for i in range(n):
        graph.add_node(f"s{i}", lambda state: {"v": state["v"] + 1})
    graph.add_edge(START, "s0")
    for i in range(1, n):
        graph.add_edge(f"s{i - 1}", f"s{i}")
    graph.add_edge(f"s{n - 1}", END)
    app = graph.compile(checkpointer=checkpointer)
    config = {"recursion_limit": n + 10, "configurable": {"thread_id": f"lin-{time.perf_counter_ns()}"}}
    start = time.perf_counter()
    out = app.invoke({"v": 0}, config)
    elapsed = time.perf_counter() - start
    assert out["v"] == n
    return elapsed / n


def langgraph_fanout(n: int, checkpointer: Any = None) -> float:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    graph = StateGraph(FanState)
    graph.add_node("plan", lambda state: {})
    graph.add_node("work", lambda item: {"results": [item["item"] * 2]})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("work", {"item": i}) for i in state["items"]], ["work"])
    graph.add_edge("work", END)
    app = graph.compile(checkpointer=checkpointer)
    config = {"recursion_limit": 100, "configurable": {"thread_id": f"fan-{time.perf_counter_ns()}"}}
    start = time.perf_counter()
    out = app.invoke({"items": list(range(n)), "results": []}, config)
    elapsed = time.perf_counter() - start
    assert len(out["results"]) == n
    return elapsed / n


def sqlite_checkpointer(directory: str) -> Any:
    try:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(os.path.join(directory, f"lg-{time.perf_counter_ns()}.db"), check_same_thread=False)
    return SqliteSaver(conn)


# -- pydantic-graph -------------------------------------------------------------------------------


def pydantic_graph_linear(n: int) -> float:
    builder = GraphBuilder(input_type=int, output_type=int)

    async def bump(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs + 1

    steps = [builder.step(bump, node_id=f"s{i}") for i in range(n)]
    builder.add_edge(builder.start_node, steps[0])
    for prev, nxt in zip(steps, steps[1:]):
        builder.add_edge(prev, nxt)
    builder.add_edge(steps[-1], builder.end_node)
    graph = builder.build()
    start = time.perf_counter()
    out = asyncio.run(graph.run(inputs=0))
    elapsed = time.perf_counter() - start
    assert out == n
    return elapsed / n


def pydantic_graph_fanout(n: int) -> float:
    builder = GraphBuilder(input_type=list, output_type=list)

    async def items(ctx: StepContext[None, None, list]) -> list:
        return ctx.inputs

    async def work(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs * 2

    source = builder.step(items, node_id="items")
    worker = builder.step(work, node_id="work")
    collect = builder.join(reduce_list_append, initial_factory=list, node_id="collect")
    builder.add_edge(builder.start_node, source)
    builder.add_mapping_edge(source, worker)
    builder.add_edge(worker, collect)
    builder.add_edge(collect, builder.end_node)
    graph = builder.build()
    start = time.perf_counter()
    out = asyncio.run(graph.run(inputs=list(range(n))))
    elapsed = time.perf_counter() - start
    assert len(out) == n
    return elapsed / n


# -- running ----------------------------------------------------------------------------------------


def median_of(fn: Any, repeat: int) -> float | None:
    samples = []
    for _ in range(repeat):
        try:
            samples.append(fn())
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            print(f"  (skipped: {type(exc).__name__}: {exc})")
            return None
    return statistics.median(samples)


def import_time(what: str) -> float:
    code = f"import time; t = time.perf_counter(); {what}; print(time.perf_counter() - t)"
    samples = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(5)]
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, repeat = args.n, args.repeat

    from lockgate.dsl.loader import load
    from lockgate.engine.store import open_store

    tmp = tempfile.mkdtemp(prefix="lockgate-bench-")
    counter = iter(range(10**6))

    def sqlite() -> Any:
        return open_store(os.path.join(tmp, f"lg-{next(counter)}.db"))

    specs = {"linear": (load(linear_spec(n)).spec, {}), "fanout": (load(fanout_spec(n)).spec, {"items": list(range(n))})}
    results: dict[tuple[str, str], float | None] = {}
    for shape, (spec, inputs) in specs.items():
        print(f"measuring {shape} ({n}) ...")
        results[(shape, "lockgate, engine only")] = median_of(lambda: lockgate_run(NullStore, spec, inputs), repeat)
        results[(shape, "lockgate, memory store")] = median_of(lambda: lockgate_run(lambda: open_store("memory"), spec, inputs), repeat)
        results[(shape, "lockgate, SQLite")] = median_of(lambda: lockgate_run(sqlite, spec, inputs), repeat)
        lg_linear = shape == "linear"
        results[(shape, "LangGraph, memory")] = median_of(
            lambda: langgraph_linear(n) if lg_linear else langgraph_fanout(n), repeat)
        if sqlite_checkpointer(tmp) is not None:
            results[(shape, "LangGraph, SQLite checkpointer")] = median_of(
                lambda: langgraph_linear(n, sqlite_checkpointer(tmp)) if lg_linear
                else langgraph_fanout(n, sqlite_checkpointer(tmp)), repeat)
        results[(shape, "pydantic-graph, memory")] = median_of(
            lambda: pydantic_graph_linear(n) if lg_linear else pydantic_graph_fanout(n), repeat)

    for shape in specs:
        rows = []
        mem = results.get((shape, "lockgate, memory store"))
        disk = results.get((shape, "lockgate, SQLite"))
        for (s, name), value in results.items():
            if s != shape:
                continue
            base = disk if "SQLite" in name else mem
            ratio = f"{value / base:6.1f}x" if value and base and not name.startswith("lockgate") else ""
            rows.append((name, fmt_time(value) if value else "n/a", ratio))
        print_table(f"{shape}, {n} transitions: median time per transition "
                    "(ratio = peer / lockgate on the same kind of store)", rows, ("system", "per transition", "ratio"))

    gate = gate_round_trip(sqlite, 200)
    imp = import_time("import lockgate")
    imp_engine = import_time("from lockgate import Engine")
    print_table("other", [("gate decision round trip (SQLite)", fmt_time(gate), ""),
                          ("import lockgate (fresh interpreter)", fmt_time(imp), ""),
                          ("from lockgate import Engine (fresh interpreter)", fmt_time(imp_engine), "")],
                ("measure", "median", ""))


if __name__ == "__main__":
    main()
