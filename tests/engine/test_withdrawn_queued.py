"""A revert made in another process withdraws work a ``lockgate run`` has in flight but not yet
running: an agent call waiting for a run slot (``max_running``), and the judge asked about an
agent's result. The drive must start none of the withdrawn calls and stop a withdrawn judge
within a second or so, then go on from the run as stored: every agent and judge then runs once
for the new issuance only.

Everything runs as real processes: ``lockgate run`` with command agents in a process of its own,
the revert in this one (another terminal)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from processes import GUARD_S, reaped, running, written_pid

from lockgate.engine import Engine
from lockgate.engine.store import open_store

#: How soon a withdrawn judge must be gone: the drive looks every second; it would sleep a minute.
STOPPED_WITHIN_S = 10.0

CONFIG = """[runner]
max_running = 1

[agents.slow]
type = "command"
command = ["sh", "agent.sh"]
timeout = 120

[agents.judge]
type = "command"
command = ["sh", "judge.sh"]
timeout = 120
"""

#: Every call appends its step and pid to ``ran``. While ``hold`` exists, a call writes its pid
#: to ``pid`` and then either sleeps a minute (the drive stops it) or, with ``released``, waits
#: until the test writes to the FIFO ``release`` (it answers on its own, refused as stale).
AGENT = f"""step=$({sys.executable} -c 'import json,sys; print(json.load(sys.stdin)["step_id"])')
echo "$step $$" >> ran
if [ -e hold ]; then
  echo $$ > pid.tmp; mv pid.tmp pid
  if [ -e released ]; then cat release > /dev/null; else exec sleep 60; fi
fi
echo '{{"text": "ok"}}'
"""

#: The judge: held the same way while ``hold-judge`` exists (it sleeps), logged to ``judged``.
JUDGE = """cat > /dev/null
echo $$ >> judged
if [ -e hold-judge ]; then echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 60; fi
echo '{"holds": true, "reason": "fine"}'
"""

HEAD = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
"""
#: a and b may run at once, but max_running = 1 queues b behind a; the run then waits at last
PARALLEL = HEAD + """    output: {from: "${b.output}", contract: Note}
    steps:
      - {id: a, do: "a", agent: slow, out: Note}
      - {id: b, do: "b", agent: slow, out: Note}
      - {id: last, after: [a, b], gate: {on_approve: null, on_revise: null, on_kill: null}}
"""
JUDGED = HEAD + """    output: {from: "${a.output}", contract: Note}
    steps:
      - id: a
        do: "a"
        agent: slow
        out: Note
        ensure:
          - judged: {statement: "the note is fine", stakes: default}
      - {id: last, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
"""


@contextmanager
def lockgate_run(where: Path, spec: str, *, judged: bool = False) -> Iterator[subprocess.Popen[str]]:
    """``lockgate run spec.yaml --no-prompt`` in ``where``, the first agent call held (the
    first judge's with ``judged``); killed on the way out if it still runs, with the call it
    may have left."""
    (where / "lockgate.toml").write_text(('judge = "judge"\n\n' if judged else "") + CONFIG)
    (where / "agent.sh").write_text(AGENT)
    (where / "judge.sh").write_text(JUDGE)
    (where / "spec.yaml").write_text(spec)
    (where / ("hold-judge" if judged else "hold")).touch()
    child = subprocess.Popen([sys.executable, "-m", "lockgate", "run", "spec.yaml", "--no-prompt",
                              "--store", str(where / "runs.db")], cwd=where, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with reaped(child, where / "pid"):
        yield child


def held_call(where: Path) -> int:
    """The pid of the held call, once it has started."""
    return written_pid(where / "pid", "the first call to start")


def revert_meanwhile(where: Path) -> str:
    """Another terminal: checkpoint the run while its first call is held, let every later call
    answer at once, and revert to the checkpoint (which issues the steps in flight again)."""
    other = Engine(store=open_store(where / "runs.db"), workspace=where)
    try:
        (summary,) = other.runs()
        run_id = summary["run_id"]
        other.commit(run_id, "cp")
        for hold in where.glob("hold*"):
            hold.unlink()
        assert other.revert(run_id, "cp")["driven_by"]  # the new issuance is the drive's
        return run_id
    finally:
        other.close()


def release(where: Path) -> None:
    """Let the held call answer (nothing to do when the drive stopped it already)."""
    try:
        fd = os.open(where / "release", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # no reader: the call is gone
            raise
        return
    os.close(fd)


def gone_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ends within ``seconds`` (looked at until then, not slept)."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def waits_at_last(where: Path, child: subprocess.Popen[str], run_id: str) -> None:
    """The drive ended with the run waiting at ``last``: it went on from the stored run."""
    _, err = child.communicate(timeout=GUARD_S)
    engine = Engine(store=open_store(where / "runs.db"))
    try:
        assert [g["step_id"] for g in engine.status(run_id)["gates"]] == ["last"], err
    finally:
        engine.close()


def calls(where: Path) -> list[str]:
    """The steps of the agent calls made, in order."""
    return [line.split()[0] for line in (where / "ran").read_text().splitlines()]


@pytest.mark.parametrize("released", [False, True], ids=["held call stopped", "held call answers"])
def test_a_call_waiting_for_a_slot_is_not_started_once_withdrawn(tmp_path: Path, released: bool) -> None:
    """b waits for a's slot. Stopped by the drive or answering on its own right after the
    revert, a frees the slot: the withdrawn b must not start (its agent would run twice)."""
    if released:
        os.mkfifo(tmp_path / "release")
        (tmp_path / "released").touch()
    with lockgate_run(tmp_path, PARALLEL) as driving:
        held_call(tmp_path)
        run_id = revert_meanwhile(tmp_path)
        if released:
            release(tmp_path)
        waits_at_last(tmp_path, driving, run_id)
    made = calls(tmp_path)
    assert made[0] == "a" and sorted(made[1:]) == ["a", "b"], made


def test_the_judge_of_a_withdrawn_result_is_stopped(tmp_path: Path) -> None:
    """a answered; the judge asked about its result is held. The revert withdraws a's issuance:
    the drive stops that judge within a second or so (it would run its full time beside the new
    issuance's judge), then goes on: a and its judge run once more."""
    with lockgate_run(tmp_path, JUDGED, judged=True) as driving:
        judge = held_call(tmp_path)
        run_id = revert_meanwhile(tmp_path)
        assert gone_within(judge, STOPPED_WITHIN_S), "the withdrawn judge ran on"
        waits_at_last(tmp_path, driving, run_id)
    assert calls(tmp_path) == ["a", "a"]
    judged = (tmp_path / "judged").read_text().split()
    assert len(judged) == 2 and judged[0] == str(judge), judged
