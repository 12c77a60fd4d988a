"""``%flow approve`` of a run no kernel drives judges it as the CLI does (a real kernel; review
s10 F12 #2): with lockgate.toml's ``judge =`` for a run that recorded none (before: with no
judge at all, so the judged set step after the gate failed the run for good), and refused before
deciding, saying how a notebook gives the judge, for a run whose ``--judge`` was a function of
its ``--agents`` module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from judged_flows import GATED_SPEC as SPEC
from judged_flows import JUDGE_AGENTS as AGENTS
from kernel_session import KernelSession


def _started(cwd: Path, *options: str) -> str:
    """A run of SPEC driven in ``cwd`` by ``lockgate run`` (the default store), at its gate."""
    (cwd / "flow.stratum.yaml").write_text(SPEC)
    (cwd / "agents.py").write_text(AGENTS)
    started = subprocess.run([sys.executable, "-m", "lockgate", "run", "flow.stratum.yaml", "--input", "question=q",
                              "--agents", "agents.py", *options, "--no-prompt"], cwd=cwd, capture_output=True,
                             text=True, timeout=120, check=False)
    assert started.returncode == 3, started.stderr
    return json.loads(started.stdout)["run_id"]


def _judged(cwd: Path) -> int:
    log = cwd / "judged.log"
    return len(log.read_text().split()) if log.exists() else 0


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return tmp_path


def test_flow_approve_judges_with_the_projects_judge(folder: Path) -> None:
    (folder / "lockgate.toml").write_text('judge = "verifier"\n\n[agents.verifier]\ntype = "python"\n'
                                          'callable = "agents:judge"\n')
    run_id = _started(folder)
    assert _judged(folder) == 1
    kernel = KernelSession(folder)
    try:
        out = kernel.run(f"%flow approve {run_id} review")
    finally:
        kernel.close()
    assert out.error is None, out.shown
    assert "complete" in out.shown, out.shown
    assert _judged(folder) == 2  # the set step's judged ensure, by the project's judge


def test_flow_approve_is_refused_when_the_runs_judge_is_not_here(folder: Path) -> None:
    run_id = _started(folder, "--judge", "judge")
    kernel = KernelSession(folder)
    try:
        out = kernel.run(f"%flow approve {run_id} review")
        status = kernel.run(f"from lockgate.engine.engine import Engine\nfrom lockgate.engine.store import open_store\n"
                            f"print(Engine(store=open_store('.lockgate/lockgate.db')).status({run_id!r})['gates'])")
    finally:
        kernel.close()
    assert out.error is not None, out.shown
    assert "Nothing was decided" in out.error["evalue"], out.error["evalue"]
    assert f"%flow resume {run_id} --agents VAR" in out.error["evalue"], out.error["evalue"]
    assert "'review'" in status.stdout, status.shown  # still waiting at its gate
    assert _judged(folder) == 1
