"""The terminal gate prompt (:class:`TerminalGates`) with real processes and pipes: a gate decided
elsewhere ends the prompt, a decision typed after that is reported as not applied, end of input
at the optional note keeps the decision (a revise needs its note), and only the decisions the gate offers are offered.

The prompting run is a child process reading a pipe as its standard input; the test reads what
it says (stderr) up to the line it waits for, and decides gates through the engine on the same
SQLite store, as ``lockgate gate approve`` in another terminal does. Nothing sleeps: the only
timeout is a guard that fails a broken prompt instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import select
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lockgate.engine.engine import Engine
from lockgate.engine.gatechannel import TerminalGates
from lockgate.engine.runner import run
from lockgate.engine.store import open_store

GUARD_S = 60  # a bound for a broken prompt, never a pace

SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Note: {text: string}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${after.output}", contract: Note}
        max_rounds: 2
        steps:
          - id: work
            do: "work"
            agent: quick
            out: Note
          - id: review
            after: [work]
            gate: {on_approve: null, on_revise: work, on_kill: null}
          - id: after
            do: "after"
            agent: held
            out: Note
            after: [review]
    """).lstrip()

DRIVER = textwrap.dedent("""
    import asyncio, json, sys
    from pathlib import Path
    from lockgate.engine.engine import Engine
    from lockgate.engine.gatechannel import TerminalGates
    from lockgate.engine.runner import run
    from lockgate.engine.store import open_store

    spec, db, release = sys.argv[1:4]

    async def quick(task):
        return {"text": "done"}

    async def held(task):  # goes on once the test writes to the FIFO (when there is one)
        if release != "-":
            await asyncio.to_thread(Path(release).read_text)
        return {"text": "after"}

    def say(text):
        print(text, file=sys.stderr, flush=True)

    def prompt(text):
        sys.stderr.write(text)
        sys.stderr.flush()

    engine = Engine(store=open_store(db), workspace=Path(db).parent)
    gates = TerminalGates(say=say, prompt=prompt, store=engine.store, resolved_by="cli")
    result = asyncio.run(run(Path(spec).read_text(), {}, engine=engine, gates=gates,
                             agents={"quick": quick, "held": held}))
    print(json.dumps({"run_id": result.run_id, "status": result.status}))
    """)


class Child:
    """A run prompting at its gate in a child process whose stdin is a pipe."""

    def __init__(self, where: Path, spec: str = SPEC, release: Path | None = None) -> None:
        (where / "driver.py").write_text(DRIVER)
        (where / "flow.yaml").write_text(spec)
        self.db = where / "runs.db"
        self.proc = subprocess.Popen(
            [sys.executable, str(where / "driver.py"), str(where / "flow.yaml"), str(self.db),
             str(release) if release else "-"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=where)
        self.said = ""

    def until(self, marker: str) -> str:
        """What the child said (stderr) up to ``marker``; fails if it never says it."""
        fd = self.proc.stderr.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + GUARD_S
        while marker not in self.said:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            data = os.read(fd, 65536) if ready else b""
            if not data:
                raise AssertionError(f"never said {marker!r}; said: {self.said!r}")
            self.said += data.decode()
        return self.said

    def type(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def close_input(self) -> None:
        """End of input, as at the end of ``printf 'a\\n' | lockgate run ...``."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.stdin = None  # communicate() then leaves it alone

    def result(self) -> dict[str, Any]:
        """How the run ended (the child exits without its stdin being closed)."""
        out, err = self.proc.communicate(timeout=GUARD_S)
        self.said += err.decode()
        assert self.proc.returncode == 0, self.said
        return json.loads(out.decode().strip().splitlines()[-1])

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def run_id(self) -> str:
        said = self.until("is waiting for a decision")
        return said.split(" of run ", 1)[1].split()[0]


def decide_elsewhere(db: Path, run_id: str, outcome: str = "approve", by: str = "ana") -> None:
    engine = Engine(store=open_store(db))
    try:
        engine.resolve_waiting_gate(run_id, "review", outcome, "looked at it", by)
    finally:
        engine.close()


@pytest.fixture
def child_in(tmp_path: Path):
    started: list[Child] = []

    def start(**options: Any) -> Child:
        started.append(Child(tmp_path, **options))
        return started[-1]

    yield start
    for child in started:
        child.end()


# -- decided elsewhere ------------------------------------------------------------------------


def test_a_gate_decided_elsewhere_ends_the_prompt_and_the_run_goes_on(child_in) -> None:
    child = child_in()
    run_id = child.run_id()
    child.until("Decision [a]pprove / [r]evise / [k]ill: ")
    decide_elsewhere(child.db, run_id)
    child.until("gate review was decided elsewhere: approve by ana\n")
    assert child.result() == {"run_id": run_id, "status": "complete"}  # stdin still open


def test_a_decision_typed_after_the_gate_was_decided_elsewhere_is_not_applied(child_in, tmp_path) -> None:
    release = tmp_path / "release"
    os.mkfifo(release)
    child = child_in(release=release)
    run_id = child.run_id()
    child.until("[k]ill: ")
    decide_elsewhere(child.db, run_id)
    child.until("decided elsewhere: approve by ana\n")
    child.type("k\n")  # the run is still going (``after`` is held): the kill must be refused aloud
    child.until("your answer 'k' was not applied: gate review was decided elsewhere: approve by ana\n")
    release.write_text("go\n")
    assert child.result()["status"] == "complete"
    engine = Engine(store=open_store(child.db))
    decided = [e["detail"] for e in engine.audit(run_id)["events"] if e["type"] == "gate_resolved"]
    assert [(d["decision"], d["resolved_by"]) for d in decided] == [("approve", "ana")]


# -- end of input -------------------------------------------------------------------------------


def test_end_of_input_at_the_rationale_prompt_keeps_the_approval(child_in) -> None:
    child = child_in()
    child.until("[k]ill: ")
    child.type("a\n")
    child.close_input()
    assert child.result()["status"] == "complete"
    assert "Rationale (optional): " in child.said and "stays waiting" not in child.said


def test_end_of_input_before_any_decision_leaves_the_gate_waiting(child_in) -> None:
    child = child_in()
    child.until("[k]ill: ")
    child.close_input()
    assert child.result()["status"] == "await_gate"
    assert "No terminal input: the gate stays waiting." in child.said


def test_a_revise_needs_a_note_and_end_of_input_before_one_leaves_the_gate_waiting(child_in) -> None:
    child = child_in()
    child.until("[k]ill: ")
    child.type("r\n\n")
    child.until("A revision needs a note saying what to change.")
    child.close_input()
    assert child.result()["status"] == "await_gate"
    assert "No revision note: the gate stays waiting." in child.said


# -- the decisions offered ----------------------------------------------------------------------


def test_revise_is_offered_only_when_the_gate_lists_it(child_in) -> None:
    no_target = SPEC.replace("on_revise: work", "on_revise: null")
    assert no_target != SPEC
    child = child_in(spec=no_target)
    child.until("revise is not offered: the gate has no on_revise target\n")
    child.until("Decision [a]pprove / [k]ill: ")
    child.type("r\n")
    child.until("revise is not offered: the gate has no on_revise target\n"
                "Decision [a]pprove / [k]ill: ")
    child.type("x\n")
    child.until("Please answer a or k (got 'x').")
    child.type("a\nfine\n")
    assert child.result()["status"] == "complete"


# -- ask in a worker thread ---------------------------------------------------------------------


async def test_a_line_ask_reads_after_the_gate_was_decided_elsewhere_is_reported(tmp_path: Path) -> None:
    """A custom ``ask`` cannot be interrupted: its line, once typed, is reported not applied."""
    lines: queue.Queue[str] = queue.Queue()
    asked, said = threading.Event(), []
    loop = asyncio.get_running_loop()
    elsewhere, reported = asyncio.Event(), asyncio.Event()

    def ask(prompt: str) -> str:
        asked.set()
        return lines.get(timeout=GUARD_S)

    def say(text: str) -> None:
        said.append(text)
        if "decided elsewhere" in text:
            elsewhere.set()
        if "was not applied" in text:
            reported.set()

    engine = Engine(store=open_store(tmp_path / "runs.db"))
    release = asyncio.Event()

    async def held(task: Any) -> dict[str, Any]:
        await release.wait()
        return {"text": "after"}

    async def quick(task: Any) -> dict[str, Any]:
        return {"text": "done"}

    gates = TerminalGates(ask=ask, say=say, store=engine.store)
    running = asyncio.ensure_future(run(SPEC, {}, engine=engine, gates=gates, agents={"quick": quick, "held": held}))
    async with asyncio.timeout(GUARD_S):
        await asyncio.to_thread(asked.wait)
        (waiting,) = engine.pending_gates()
        await loop.run_in_executor(None, decide_elsewhere, tmp_path / "runs.db", waiting["run_id"])
        await elsewhere.wait()
        lines.put("k")
        await reported.wait()
        release.set()
        result = await running
    assert result.status == "complete"
    assert said[-1] == "your answer 'k' was not applied: gate review was decided elsewhere: approve by ana"


async def test_a_decision_typed_as_the_gate_is_decided_elsewhere_is_not_applied_aloud(tmp_path: Path) -> None:
    """The typed kill reaches the engine after someone else's approve: it is refused, and said."""
    engine, said = Engine(store=open_store(tmp_path / "runs.db")), []

    def ask(prompt: str) -> str:
        if prompt.startswith("Decision"):  # someone approves while the person types k
            (waiting,) = Engine(store=engine.store).pending_gates()
            decide_elsewhere(tmp_path / "runs.db", waiting["run_id"])
            return "k"
        return ""

    async def quick(task: Any) -> dict[str, Any]:
        return {"text": "done"}

    gates = TerminalGates(ask=ask, say=said.append)  # no store: only the engine can tell
    result = await run(SPEC, {}, engine=engine, gates=gates, agents={"quick": quick, "held": quick})
    assert result.status == "complete"
    assert said[-1] == ("gate review was already decided for this token: approve by ana (looked at it); "
                        "your kill was not applied and nothing changed")
