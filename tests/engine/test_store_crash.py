"""Crash safety: a writer process SIGKILLed in the middle of a save_run loop loses nothing it
reported as committed, leaves nothing half-written, and its chain still verifies."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

from lockgate.engine.store import Store

RUN = "crashy"
KILLS = 3
STEP_SLOTS = 5

# The writer: continue the run from its committed version, print each version once committed.
WRITER = """
import json, sys
from lockgate.engine.store import open_store
store = open_store(sys.argv[1], **json.loads(sys.argv[2]))
version = store.current_version(sys.argv[3])
while True:
    new = version + 1
    version = store.save_run(
        sys.argv[3], expected_version=version,
        header={"status": "running", "flow": "main", "n": new, "pad": "x" * 2000},
        steps={f"s{new % 5}": {"n": new}},
        events=[{"type": "step_started", "step_id": f"s{new % 5}", "detail": {"v": new}},
                {"type": "step_done", "step_id": f"s{new % 5}", "detail": {"v": new}}],
    )
    print(version, flush=True)
"""


def _kill_writer_after(target: str, options: dict[str, object], commits: int) -> int:
    """Start a writer, SIGKILL it once it has reported ``commits`` versions; return the last."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, target, json.dumps(options), RUN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    last = 0
    try:
        for _ in range(commits):
            line = writer.stdout.readline()
            assert line, f"the writer died early: {writer.stderr.read()}"
            last = int(line)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(30)
        writer.stdout.close()
        writer.stderr.close()
    assert writer.returncode == -signal.SIGKILL
    return last


def _assert_every_committed_version_is_there(store: Store, reported: int) -> None:
    run = store.load_run(RUN)
    assert run.version >= reported
    assert run.header["n"] == run.version
    for slot in range(STEP_SLOTS):
        latest = max((n for n in range(2, run.version + 1) if n % STEP_SLOTS == slot), default=None)
        if latest is not None:
            assert run.steps[f"s{slot}"] == {"n": latest}
    events = store.events(RUN)
    assert [e.detail["v"] for e in events] == [v for v in range(2, run.version + 1) for _ in (0, 1)]
    report = store.verify(RUN)
    assert report.ok and report.count == 2 * (run.version - 1), report


def test_sigkilled_writer_loses_no_committed_version(durable_backend) -> None:
    store = durable_backend.open()
    store.create_run(RUN, {"status": "running", "flow": "main", "n": 1}, {}, [])
    chooser = random.Random(1234)
    for _ in range(KILLS):
        reported = _kill_writer_after(durable_backend.target, durable_backend.options, chooser.randint(20, 120))
        reopened = durable_backend.open()
        _assert_every_committed_version_is_there(reopened, reported)
        reopened.close()
