"""Per-transition overhead of the run engine with instant agents, side by side with LangGraph and
pydantic-graph in the same process.

Workloads: a 1,000-step linear flow and a 1,000-item fanout, the same work on every side: each
step or item renders its task text from the previous output (or the item) and answers ``{"v": 1}``
at once. Lockgate is driven through its consumer protocol (plan, then step_done for every
dispatch, each call persisted before it answers) on these stores: none (a store that keeps
nothing: the engine's own cost), the memory store (JSON copies and the hash chain included) and
SQLite (WAL, the embedded default). LangGraph runs the same shapes as a StateGraph (a chain of
1,000 nodes; a ``Send`` map-reduce over 1,000 items, results gathered by a reducer) without a
checkpointer, with its in-memory checkpointer (InMemorySaver, ``durability="sync"``: the
counterpart of Lockgate's memory store) and with its SQLite checkpointer
(``langgraph-checkpoint-sqlite``: WAL, and SQLite's default synchronous=FULL, an fsync per commit),
the latter both with its default ``durability="async"`` (a
checkpoint written in the background while the next step runs) and with ``durability="sync"``
(written before the next step, as Lockgate persists every transition before it answers). Lockgate
on SQLite runs with its default synchronous=NORMAL (safe against a process crash; the last commits
may be lost to a power cut) and with synchronous=FULL (the checkpointer's durability).
Then the same runs through ``lockgate.run``
with an instant agent (a coroutine function answering ``{"v": 1}``), on the memory store and on
SQLite: the path users' Python agents take, and the counterpart of the peers' own runtimes
(LangGraph's ``invoke``, pydantic-graph's ``run`` call node functions the same way).
pydantic-graph runs them with its builder API in memory. Also timed: a gate decision round trip
(memory and SQLite) and ``import lockgate`` in a fresh interpreter.

Each figure is the median over ``--repeat`` runs of (run time / transitions), the run time taken
from ``plan`` (or ``invoke``) to the final answer, in wall time and in
CPU time of the process (all threads); on a machine shared with other work the CPU column is the
steadier one. Ratios are peer / its Lockgate counterpart (the row keeping as much: no persistence against the
engine alone, an in-memory checkpointer against the memory store, SQLite against SQLite), from
the wall medians.

Run: ``python benchmarks/engine.py [--n 1000] [--repeat 3] [--baseline DIR]``; ``--baseline``
also measures the Lockgate rows with the ``lockgate`` package found in DIR (e.g. a ``git
worktree`` of an older commit), in a subprocess at the start of the same run, for a before/after
column. This is a measurement script, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

#: (wall seconds, CPU seconds) per transition of one measured run
Sample = tuple[float, float]


def lockgate_run(store_factory: Any, spec: Any, inputs: dict) -> Sample:
    """Time to drive a run from ``plan`` to completion, per transition (one step_done).

    ``plan`` is inside the timed region, as LangGraph's and pydantic-graph's start is inside
    ``invoke``/``run``: for a fanout it issues every item (render, token, record, event).
    """
    from lockgate.engine import Engine

    engine = Engine(store=store_factory())
    cpu, start = time.process_time(), time.perf_counter()
    resp = engine.plan(spec, inputs)
    run_id = resp["run_id"]
    queue = list(resp["ready"])
    transitions = 0
    while resp["status"] != "complete":
        entry = queue.pop() if queue else resp
        resp = engine.step_done(run_id, entry["step_id"], {"v": 1}, entry["token"])
        queue.extend(resp.get("ready") or ())
        transitions += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    engine.close()
    return elapsed / transitions, cpu / transitions


async def _instant_agent(task: Any) -> dict:
    return {"v": 1}


def lockgate_runner(store_factory: Any, spec: Any, inputs: dict) -> Sample:
    """Time for ``lockgate.run`` to drive a run to completion with an instant agent, per agent
    call: the whole path a user's Python agents take (the runner's event loop, the agent adapter,
    progress events, then the same engine transitions), which is what LangGraph's ``invoke`` and
    pydantic-graph's ``run`` do with their node functions. The agent is a coroutine function
    (a plain function would run in a worker thread, so that a slow one cannot block the loop).
    The global limit of running agent calls keeps its default (10); ``max_outstanding`` is
    raised to the fanout's width, which the default (100) refuses with a clear error."""
    from lockgate import run_sync

    n = len(inputs.get("items") or ()) or len(spec.flows["main"].steps)
    store = store_factory()
    cpu, start = time.process_time(), time.perf_counter()
    result = run_sync(spec, inputs, agents={"claude": _instant_agent}, store=store,
                      max_outstanding=max(n, 100))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.ok, result
    store.close()
    return elapsed / n, cpu / n


def gate_round_trip(store_factory: Any, rounds: int) -> float:
    """Median seconds per gate decision (gate_resolve -> next dispatch), persisted, over ``rounds``
    revise rounds of one run (the gate's record keeps every decision, so later rounds write more)."""
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
    task: str


class FanState(TypedDict):
    items: list[int]
    results: Annotated[list[dict], operator.add]


def _timed(fn: Any, count: int) -> Sample:
    cpu, start = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - start) / count, (time.process_time() - cpu) / count


def langgraph_linear(n: int, checkpointer: Any = None, durability: str = "async") -> Sample:
    """A chain of ``n`` nodes; each renders its task from the previous output and answers."""
    from langgraph.graph import END, START, StateGraph

    def node(i: int) -> Any:
        return lambda state: {"task": f"step {i} after {state['v']}", "v": 1}

    graph = StateGraph(LinearState)
    for i in range(n):
        graph.add_node(f"s{i}", node(i))
    graph.add_edge(START, "s0")
    for i in range(1, n):
        graph.add_edge(f"s{i - 1}", f"s{i}")
    graph.add_edge(f"s{n - 1}", END)
    app = graph.compile(checkpointer=checkpointer)
    config = {"recursion_limit": n + 10, "configurable": {"thread_id": f"lin-{time.perf_counter_ns()}"}}
    out: dict[str, Any] = {}
    sample = _timed(lambda: out.update(app.invoke({"v": 0, "task": ""}, config, durability=durability)), n)
    assert out["task"] == f"step {n - 1} after 1"
    return sample


def langgraph_fanout(n: int, checkpointer: Any = None, durability: str = "async") -> Sample:
    """``Send`` map-reduce: one task per item (render, answer), results gathered by a reducer."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    graph = StateGraph(FanState)
    graph.add_node("plan", lambda state: {})
    graph.add_node("work", lambda arg: {"results": [{"task": f"item {arg['item']}", "v": 1}]})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("work", {"item": i}) for i in state["items"]], ["work"])
    graph.add_edge("work", END)
    app = graph.compile(checkpointer=checkpointer)
    config = {"recursion_limit": 100, "configurable": {"thread_id": f"fan-{time.perf_counter_ns()}"}}
    out: dict[str, Any] = {}
    sample = _timed(lambda: out.update(app.invoke({"items": list(range(n)), "results": []}, config,
                                                  durability=durability)), n)
    assert len(out["results"]) == n
    return sample


def memory_checkpointer() -> Any:
    """LangGraph's InMemorySaver: checkpoints kept in the process, like Lockgate's memory store."""
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


def sqlite_checkpointer(directory: str) -> Any:
    try:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(os.path.join(directory, f"lg-{time.perf_counter_ns()}.db"), check_same_thread=False)
    return SqliteSaver(conn)


# -- pydantic-graph -------------------------------------------------------------------------------


def pydantic_graph_linear(n: int) -> Sample:
    builder = GraphBuilder(input_type=dict, output_type=dict)

    def bump(i: int) -> Any:
        async def step(ctx: StepContext[None, None, dict]) -> dict:
            return {"task": f"step {i} after {ctx.inputs['v']}", "v": 1}

        return step

    steps = [builder.step(bump(i), node_id=f"s{i}") for i in range(n)]
    builder.add_edge(builder.start_node, steps[0])
    for prev, nxt in zip(steps, steps[1:]):
        builder.add_edge(prev, nxt)
    builder.add_edge(steps[-1], builder.end_node)
    graph = builder.build()
    out: dict[str, Any] = {}
    sample = _timed(lambda: out.update(asyncio.run(graph.run(inputs={"v": 0}))), n)
    assert out["task"] == f"step {n - 1} after 1"
    return sample


def pydantic_graph_fanout(n: int) -> Sample:
    builder = GraphBuilder(input_type=list, output_type=list)

    async def items(ctx: StepContext[None, None, list]) -> list:
        return ctx.inputs

    async def work(ctx: StepContext[None, None, int]) -> dict:
        return {"task": f"item {ctx.inputs}", "v": 1}

    source = builder.step(items, node_id="items")
    worker = builder.step(work, node_id="work")
    collect = builder.join(reduce_list_append, initial_factory=list, node_id="collect")
    builder.add_edge(builder.start_node, source)
    builder.add_mapping_edge(source, worker)
    builder.add_edge(worker, collect)
    builder.add_edge(collect, builder.end_node)
    graph = builder.build()
    out: list[Any] = []
    sample = _timed(lambda: out.extend(asyncio.run(graph.run(inputs=list(range(n))))), n)
    assert len(out) == n
    return sample


# -- running ----------------------------------------------------------------------------------------

LOCKGATE_ROWS = ("lockgate, engine only", "lockgate, memory store", "lockgate, SQLite",
                 "lockgate, SQLite, synchronous=FULL", "lockgate.run + agent, memory store",
                 "lockgate.run + agent, SQLite")


def median_of(fn: Any, repeat: int) -> Sample | None:
    samples = []
    for _ in range(repeat):
        try:
            samples.append(fn())
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            print(f"  (skipped: {type(exc).__name__}: {exc})", file=sys.stderr)
            return None
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def import_time(what: str, path: str | None = None) -> float:
    code = f"import time; t = time.perf_counter(); {what}; print(time.perf_counter() - t)"
    samples = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    env=_env(path)).stdout) for _ in range(5)]
    return statistics.median(samples)


def _env(path: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    return env


class Bench:
    """The workloads and stores of one run (specs are loaded once, stores made fresh per run)."""

    def __init__(self, n: int) -> None:
        from lockgate.dsl.loader import load

        self.n = n
        self.tmp = tempfile.mkdtemp(prefix="lockgate-bench-")
        self.counter = iter(range(10**6))
        self.specs = {"linear": (load(linear_spec(n)).spec, {}),
                      "fanout": (load(fanout_spec(n)).spec, {"items": list(range(n))})}

    def sqlite(self, synchronous: str = "NORMAL") -> Any:
        from lockgate.engine.store import open_store

        return open_store(os.path.join(self.tmp, f"lg-{next(self.counter)}.db"), synchronous=synchronous)

    def sqlite_full(self) -> Any:
        """fsync at every commit, as LangGraph's SQLite checkpointer does (WAL, SQLite's default
        synchronous=FULL): the same durability on both sides, power loss included."""
        return self.sqlite("FULL")

    @staticmethod
    def memory() -> Any:
        from lockgate.engine.store import open_store

        return open_store("memory")

    def lockgate(self, shape: str, row: str, repeat: int) -> Sample | None:
        spec, inputs = self.specs[shape]
        factory = dict(zip(LOCKGATE_ROWS, (NullStore, self.memory, self.sqlite, self.sqlite_full, self.memory,
                                           self.sqlite)))[row]
        drive = lockgate_runner if row.startswith("lockgate.run") else lockgate_run
        return median_of(lambda: drive(factory, spec, inputs), repeat)

    def others(self) -> dict[str, float]:
        return {"gate decision round trip (memory)": gate_round_trip(self.memory, 200),
                "gate decision round trip (SQLite)": gate_round_trip(self.sqlite, 200)}


def lockgate_only(n: int, repeat: int) -> None:
    """The Lockgate rows as JSON on stdout (the ``--baseline`` subprocess)."""
    bench = Bench(n)
    out = {f"{shape}|{row}": bench.lockgate(shape, row, repeat) for shape in bench.specs for row in LOCKGATE_ROWS}
    out.update(bench.others())
    out["import lockgate (fresh interpreter)"] = import_time("import lockgate")
    out["from lockgate import Engine (fresh interpreter)"] = import_time("from lockgate import Engine")
    print(json.dumps(out))


def baseline_results(path: str, n: int, repeat: int) -> dict[str, Any]:
    script = os.path.abspath(__file__)
    done = subprocess.run([sys.executable, script, "--n", str(n), "--repeat", str(repeat), "--lockgate-only"],
                          capture_output=True, text=True, env=_env(path), cwd=tempfile.gettempdir(), check=False)
    if done.returncode != 0:
        raise SystemExit(f"the baseline run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fmt(sample: Sample | None) -> tuple[str, str]:
    return (fmt_time(sample[0]), fmt_time(sample[1])) if sample else ("n/a", "n/a")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="DIR", help="also measure the lockgate package found in DIR")
    parser.add_argument("--lockgate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n, repeat = args.n, args.repeat
    if args.lockgate_only:
        lockgate_only(n, repeat)
        return

    bench = Bench(n)
    before: dict[str, Any] = {}
    if args.baseline:
        print(f"measuring the baseline in {args.baseline} ...")
        before = baseline_results(args.baseline, n, repeat)
    has_sqlite_saver = sqlite_checkpointer(bench.tmp) is not None
    results: dict[tuple[str, str], Sample | None] = {}
    for shape in bench.specs:
        print(f"measuring {shape} ({n}) ...")
        for row in LOCKGATE_ROWS:
            results[(shape, row)] = bench.lockgate(shape, row, repeat)
        linear = shape == "linear"
        lg = langgraph_linear if linear else langgraph_fanout
        results[(shape, "LangGraph, no checkpointer")] = median_of(lambda lg=lg: lg(n), repeat)
        results[(shape, "LangGraph, in-memory checkpointer (sync)")] = median_of(
            lambda lg=lg: lg(n, memory_checkpointer(), "sync"), repeat)
        if has_sqlite_saver:
            for durability in ("async", "sync"):
                results[(shape, f"LangGraph, SQLite checkpointer, durability={durability}")] = median_of(
                    lambda lg=lg, d=durability: lg(n, sqlite_checkpointer(bench.tmp), d), repeat)
        if GraphBuilder is not None:
            pg = pydantic_graph_linear if linear else pydantic_graph_fanout
            results[(shape, "pydantic-graph, memory")] = median_of(lambda pg=pg: pg(n), repeat)

    header = ("system", "wall", "CPU", "ratio", "vs lockgate.run")
    if before:
        header = (*header, "before: wall", "CPU", "ratio")
    for shape in bench.specs:
        now_rows = {row: results.get((shape, row)) for row in LOCKGATE_ROWS}
        old_rows = {row: before.get(f"{shape}|{row}") for row in LOCKGATE_ROWS}
        rows = []
        for (s, name), value in results.items():
            if s != shape:
                continue
            peer = not name.startswith("lockgate")
            row = [name, *_fmt(value), *(_peer_ratios(name, value, now_rows) if peer else ("", ""))]
            if before:
                row += ["", "", _peer_ratios(name, value, old_rows)[0]] if peer else [*_fmt(old_rows.get(name)), ""]
            rows.append(tuple(row))
        print_table(f"{shape}, {n} transitions: median time per transition (ratio = peer / its Lockgate "
                    "counterpart: no persistence against the engine alone, the in-memory checkpointer against "
                    "the memory store, SQLite against SQLite, then against SQLite with synchronous=FULL; "
                    "vs lockgate.run = peer / lockgate.run with an agent on the same kind of store)",
                    rows, header)

    other = bench.others()
    other["import lockgate (fresh interpreter)"] = import_time("import lockgate")
    other["from lockgate import Engine (fresh interpreter)"] = import_time("from lockgate import Engine")
    rows = [(name, fmt_time(value), fmt_time(before[name]) if name in before else "") for name, value in other.items()]
    print_table("other", rows, ("measure", "median", "before" if before else ""))


def _peer_ratios(name: str, value: Sample | None, lockgate: dict[str, Any]) -> tuple[str, str]:
    """A peer row's ratio to the Lockgate consumer-protocol row keeping as much as it does, and
    to the ``lockgate.run`` row on the same kind of store (memory for the in-memory peers)."""
    engine, memory, disk, full, run_memory, run_disk = (lockgate.get(row) for row in LOCKGATE_ROWS)
    if "SQLite" in name:
        return _ratio(value, disk, full), _ratio(value, run_disk)
    return _ratio(value, memory if "in-memory checkpointer" in name else engine), _ratio(value, run_memory)


def _ratio(value: Sample | None, base: Sample | list[float] | None,
           full: Sample | list[float] | None = None) -> str:
    if not value or not base:
        return ""
    text = f"{value[0] / base[0]:5.1f}x"
    return f"{text} / {value[0] / full[0]:4.1f}x" if full else text


if __name__ == "__main__":
    main()
