"""``%flow runs`` lists runs as ``lockgate runs`` does, and a spec's summary counts in English."""

from __future__ import annotations

import re

import pytest
from kernel_session import DONE_AGENTS, REVIEWED_WORK, KernelSession

ONE_STEP = """version: 1
contracts:
  R:
    value: string
  Unused:
    value: string
flows:
  entry: main
  main:
    input:
      text: string
    output:
      from: "${a.output}"
      contract: R
    steps:
      - id: a
        do: "say ${input.text}"
        agent: codex
        out: R
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    session = KernelSession(tmp_path_factory.mktemp("kernel"))
    yield session
    session.close()


def test_runs_is_lockgate_runs_table_with_what_each_running_run_waits_on(kernel):
    assert kernel.run("%flow runs").stdout == "no runs\n"
    kernel.bind(rw=REVIEWED_WORK)
    kernel.run(DONE_AGENTS)
    kernel.run('r = rw.start({"text": "hi"}, agents=agents)\nawait r.wait_until(lambda run: run.run_id)')
    out = kernel.run("%flow runs")
    assert out.error is None and out.stderr == "", out.shown
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["RUN", "FLOW", "STATUS", "UPDATED", "WAITING", "ON"]
    run_id, pid = kernel.value("r.run_id"), kernel.value("__import__('os').getpid()")
    [row] = rows
    assert re.fullmatch(rf"{run_id} +reviewed_work +running +\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d +"
                        rf"waiting at gate review; driven by process {pid}", row), row
    assert header.index("FLOW") == row.index("reviewed_work")  # columns line up under the header


def test_the_summary_says_1_step_and_1_warning(kernel):
    kernel.bind(one=ONE_STEP, rw=REVIEWED_WORK)
    text = kernel.run("one").data[0]["text/plain"]
    assert "flow 'main': 1 step (1 do); inputs: text" in text
    assert "\n1 warning:\n  line 6: LG901 contract 'Unused'" in text
    assert "2 steps (1 do, 1 gate)" in kernel.run("rw").data[0]["text/plain"]
