"""The commands a run prints to move it on (``gate approve``, ``lockgate resume``) judge it with
the judge it was driven with (real ``lockgate`` processes; review s10 F12 #1).

- a run driven with ``--judge verifier`` (an agent of lockgate.toml, which names no ``judge``)
  is judged by ``verifier`` when ``gate approve`` reaches a judged ensure; before, by
  lockgate.toml's judge only: none, the run failed for good ("no judge is configured") and the
  command exited 0;
- a run whose judge was a function of its ``--agents`` module cannot be judged by these
  commands: a decision that would reach a judged ensure here is refused before deciding (exit 1,
  nothing changed) with the resume command that judges; a reject that ends the run needs no
  judge and is taken (as is a revise back to an agent's step, judged where the run resumes);
- from a folder whose lockgate.toml defines another ``verifier``, they refuse as
  ``lockgate run --resume`` does, and that ``verifier`` is never asked.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_support import lockgate_argv, lockgate_env
from judged_flows import GATED_SPEC as SPEC
from judged_flows import JUDGE_AGENTS as AGENTS

VERIFIER = '[agents.verifier]\ntype = "python"\ncallable = "agents:{}"\n'


def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True,
                          text=True, timeout=120, check=False)


def _started(folder: Path, judge: str, store: Path) -> str:
    """A run driven in ``folder`` with ``--judge judge``, waiting at its gate (answer judged once)."""
    folder.mkdir(exist_ok=True)
    (folder / "flow.stratum.yaml").write_text(SPEC)
    (folder / "agents.py").write_text(AGENTS)
    started = _lockgate(folder, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", judge, "--store", str(store), "--no-prompt")
    assert started.returncode == 3, started.stderr
    assert _count(folder / "judged.log") == 1
    return json.loads(started.stdout)["run_id"]


def _count(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def _status(cwd: Path, store: Path, run_id: str) -> dict:
    shown = _lockgate(cwd, "show", run_id, "--store", str(store), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["status"]


def test_gate_approve_judges_with_the_recorded_judge_of_lockgate_toml(tmp_path: Path) -> None:
    (tmp_path / "lockgate.toml").write_text(VERIFIER.format("judge"))  # no `judge =` line
    store = tmp_path / "runs.db"
    run_id = _started(tmp_path, "verifier", store)
    approved = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", str(store))
    assert approved.returncode == 0, approved.stderr
    assert "complete" in approved.stdout, approved.stdout
    assert _count(tmp_path / "judged.log") == 2  # the set step's judged ensure, by verifier


def test_gate_commands_refuse_before_deciding_when_the_judge_was_a_module_function(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    run_id = _started(tmp_path, "judge", store)
    refused = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", str(store))
    assert refused.returncode == 1, refused.stdout  # approved, the set step `final` is judged here
    assert "Nothing was changed" in refused.stderr, refused.stderr
    assert (f"lockgate run --resume {run_id} --agents agents.py --store {store} --judge judge"
            in refused.stderr), refused.stderr
    status = _status(tmp_path, store, run_id)
    assert status["status"] == "await_gate" and [g["step_id"] for g in status["gates"]] == ["review"]
    rejected = _lockgate(tmp_path, "gate", "reject", run_id, "review", "--store", str(store))
    assert rejected.returncode == 0, rejected.stderr  # on_kill: null ends the run, judging nothing
    assert _status(tmp_path, store, run_id)["status"] == "killed"


def test_gate_approve_from_another_configuration_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    b.mkdir()
    a.mkdir()
    (a / "lockgate.toml").write_text(VERIFIER.format("judge"))
    (b / "lockgate.toml").write_text(VERIFIER.format("other"))
    (b / "agents.py").write_text(AGENTS)
    store = tmp_path / "runs.db"
    run_id = _started(a, "verifier", store)
    refused = _lockgate(b, "gate", "approve", run_id, "review", "--store", str(store))
    assert refused.returncode == 1, refused.stdout
    assert f"resolved through {a / 'lockgate.toml'}" in refused.stderr, refused.stderr
    assert "--config ../a/lockgate.toml" in refused.stderr, refused.stderr
    assert _count(b / "other.log") == 0
    assert _status(b, store, run_id)["gates"][0]["step_id"] == "review"


def test_a_route_through_a_step_its_when_skips_still_needs_the_judge(tmp_path: Path) -> None:
    """review approves to `fix`, an agent's step whose `when` is false: skipped at once, it
    releases `final`, whose judged ensure is then evaluated by the deciding process (review s10
    R11 #1: the approve was let through and failed the run for want of the judge)."""
    spec = SPEC.replace("gate: {on_approve: final,", "gate: {on_approve: fix,").replace(
        "      - id: final\n        after: [review]",
        "      - id: fix\n        after: [review]\n        when: \"input.question == 'never'\"\n        do: \"Fix it\"\n"
        "        agent: writer\n        out: Answer\n      - id: final\n        after: [fix]")
    store = tmp_path / "runs.db"
    (tmp_path / "flow.stratum.yaml").write_text(spec)
    (tmp_path / "agents.py").write_text(AGENTS)
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    refused = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", str(store))
    assert refused.returncode == 1 and "Nothing was changed" in refused.stderr, refused.stderr
    assert _status(tmp_path, store, run_id)["status"] == "await_gate"


def test_decisions_the_engine_refuses_anyway_say_why_not_the_judge(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    run_id = _started(tmp_path, "judge", store)
    typo = _lockgate(tmp_path, "gate", "approve", run_id, "reveiw", "--store", str(store))
    assert typo.returncode == 1 and "step reveiw of run" in typo.stderr and "is not a waiting gate" in typo.stderr
    assert _lockgate(tmp_path, "gate", "reject", run_id, "review", "--store", str(store)).returncode == 0
    late = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", str(store))
    assert late.returncode == 1 and f"run {run_id} was killed; its gates take no more decisions" in late.stderr


def test_a_revert_needs_the_judge_only_when_a_step_the_engine_settles_is_judged(tmp_path: Path) -> None:
    """Only `answer`, an agent's step, is judged (where the run resumes): reverting a killed run
    to its gate needs no judge, even one that was a function of the --agents module."""
    spec = SPEC.replace('        ensure:\n          - judged: {statement: "The final answer is supported", stakes: default}\n',
                        "")
    assert "final answer" not in spec
    store = tmp_path / "runs.db"
    (tmp_path / "flow.stratum.yaml").write_text(spec)
    (tmp_path / "agents.py").write_text(AGENTS)
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    assert _lockgate(tmp_path, "commit", run_id, "cp1", "--store", str(store)).returncode == 0
    assert _lockgate(tmp_path, "gate", "reject", run_id, "review", "--store", str(store)).returncode == 0
    reverted = _lockgate(tmp_path, "revert", run_id, "cp1", "--store", str(store))
    assert reverted.returncode == 0, reverted.stderr
    assert _status(tmp_path, store, run_id)["status"] == "await_gate"
