"""``lockgate gate``, ``revert`` and ``resume`` take ``--agents MODULE``: a run whose judge was a
function of its ``--agents`` module can be moved on by them when given that module (real
``lockgate`` processes). Before, a revert of such a run, when a step the engine settles itself
has a judged ensure, was refused with no command that could revert it (session 10's weak point).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_support import lockgate_argv, lockgate_env
from judged_flows import GATED_SPEC as SPEC
from judged_flows import JUDGE_AGENTS as AGENTS


def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True,
                          text=True, timeout=120, check=False)


def _judged(folder: Path) -> int:
    log = folder / "judged.log"
    return len(log.read_text().split()) if log.exists() else 0


def _killed_at_checkpoint(folder: Path, store: Path) -> str:
    """A run driven with ``--judge judge`` (a function of agents.py), checkpointed at its gate,
    then rejected there (killed)."""
    (folder / "flow.stratum.yaml").write_text(SPEC)
    (folder / "agents.py").write_text(AGENTS)
    started = _lockgate(folder, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    assert _lockgate(folder, "commit", run_id, "cp1", "--store", str(store)).returncode == 0
    assert _lockgate(folder, "gate", "reject", run_id, "review", "--store", str(store)).returncode == 0
    return run_id


def _status(folder: Path, store: Path, run_id: str) -> str:
    shown = _lockgate(folder, "show", run_id, "--store", str(store), "--format", "json")
    return json.loads(shown.stdout)["status"]["status"]


def test_a_revert_refused_for_want_of_the_judge_names_the_option_and_works_with_it(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    run_id = _killed_at_checkpoint(tmp_path, store)
    refused = _lockgate(tmp_path, "revert", run_id, "cp1", "--store", str(store))
    assert refused.returncode == 1, refused.stdout
    assert "Nothing was changed; run this command again with --agents agents.py" in refused.stderr, refused.stderr
    assert "--resume" not in refused.stderr  # a resume would not revert the run
    assert _status(tmp_path, store, run_id) == "killed"

    reverted = _lockgate(tmp_path, "revert", run_id, "cp1", "--agents", "agents.py", "--store", str(store))
    assert reverted.returncode == 0, reverted.stderr
    assert _status(tmp_path, store, run_id) == "await_gate"

    judged = _judged(tmp_path)
    approved = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--agents", "agents.py", "--store", str(store))
    assert approved.returncode == 0, approved.stderr
    assert _status(tmp_path, store, run_id) == "complete"
    assert _judged(tmp_path) == judged + 1  # the set step's judged ensure, by the module's judge


def test_a_module_without_the_judge_is_refused_saying_so(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    run_id = _killed_at_checkpoint(tmp_path, store)
    (tmp_path / "agents.py").write_text("def writer(task):\n    return {'answer': 'a'}\n")  # judge gone
    refused = _lockgate(tmp_path, "revert", run_id, "cp1", "--agents", "agents.py", "--store", str(store))
    assert refused.returncode == 1, refused.stdout
    assert "the --agents module given here has no agent named 'judge'" in refused.stderr, refused.stderr
    assert _status(tmp_path, store, run_id) == "killed"


def test_a_gate_refusal_offers_the_option_beside_the_resume(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    store = tmp_path / "runs.db"
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    refused = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", str(store))
    assert refused.returncode == 1
    assert "answer the gate's prompt there; or run this command again with --agents agents.py" in refused.stderr
    assert _status(tmp_path, store, run_id) == "await_gate"


def test_the_gate_commands_printed_give_the_module_that_defines_the_judge(tmp_path: Path) -> None:
    """The commands `run --no-prompt`, `why` and `resume` print to decide the gate carry
    ``--agents agents.py``: without it each would be refused (the approve reaches a judged ensure)."""
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    store = tmp_path / "runs.db"
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    approve = f"lockgate gate approve {run_id} review --agents agents.py --store {store}"
    assert approve in started.stderr, started.stderr
    why = _lockgate(tmp_path, "why", run_id, "--store", str(store))
    assert f"lockgate gate approve {run_id} review --note \"...\" --agents agents.py --store {store}" in why.stdout
    resumed = _lockgate(tmp_path, "resume", run_id, "--store", str(store))
    assert approve in resumed.stdout, resumed.stdout
    approved = _lockgate(tmp_path, *approve.split()[1:])
    assert approved.returncode == 0, approved.stderr
    assert _status(tmp_path, store, run_id) == "complete"


def test_a_toml_judge_the_run_took_from_its_module_is_that_modules(tmp_path: Path) -> None:
    """lockgate.toml says ``judge = "judge"`` and the --agents module has a ``judge`` function,
    which the run took (a module's agents come first): deciding the gate needs that module
    too (review s11 r2 #5: the commands printed had no --agents, and given it by hand the
    module was ignored, the judged ensure failed closed and the run failed for good, exit 0)."""
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "lockgate.toml").write_text('judge = "judge"\n')
    store = tmp_path / "runs.db"
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--store", str(store), "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    approve = f"lockgate gate approve {run_id} review --agents agents.py --store {store}"
    assert approve in started.stderr, started.stderr
    refused = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--store", str(store))
    assert refused.returncode == 1 and "run this command again with --agents agents.py" in refused.stderr
    assert _status(tmp_path, store, run_id) == "await_gate"
    judged = _judged(tmp_path)
    approved = _lockgate(tmp_path, *approve.split()[1:])
    assert approved.returncode == 0, approved.stderr
    assert _status(tmp_path, store, run_id) == "complete" and _judged(tmp_path) == judged + 1


def test_another_module_with_a_function_of_the_judges_name_is_refused(tmp_path: Path) -> None:
    """The judge is the run's module's: another module's ``judge`` does not decide for it
    (review s11 r2 #6: it did, and failed the run)."""
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "liar.py").write_text('def judge(task):\n    return {"holds": False, "reason": "no"}\n')
    store = tmp_path / "runs.db"
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    refused = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--agents", "liar.py", "--store", str(store))
    assert refused.returncode == 1, refused.stdout
    assert f"the --agents module given here is another one ({tmp_path / 'liar.py'})" in refused.stderr
    assert "run this command again with --agents agents.py" in refused.stderr
    assert _status(tmp_path, store, run_id) == "await_gate"


def test_a_toml_judge_from_the_module_is_found_from_any_folder(tmp_path: Path) -> None:
    """Decided from a folder without lockgate.toml, or with another one naming another judge,
    the run's own recorded configuration says which judge it had (review s11 r3 #2: the
    folder's configuration was read, and the run failed for good, or another judge decided)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "flow.stratum.yaml").write_text(SPEC)
    (project / "agents.py").write_text(AGENTS)
    (project / "lockgate.toml").write_text('judge = "judge"\n')
    (elsewhere / "lockgate.toml").write_text('judge = "liar"\n[agents.liar]\ntype = "python"\ncallable = "liar:liar"\n')
    (elsewhere / "liar.py").write_text('def liar(task):\n    open("liar.log", "a").write("x\\n")\n'
                                       '    return {"holds": False, "reason": "no"}\n')
    store = tmp_path / "runs.db"
    started = _lockgate(project, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--store", str(store), "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    why = _lockgate(elsewhere, "why", run_id, "--store", str(store))
    assert f"--agents {project / 'agents.py'}" in why.stdout, why.stdout
    judged = _judged(project)
    approved = _lockgate(elsewhere, "gate", "approve", run_id, "review", "--agents", str(project / "agents.py"),
                         "--store", str(store))
    assert approved.returncode == 0, approved.stderr
    assert _status(elsewhere, store, run_id) == "complete"
    assert _judged(project) == judged + 1 and not (elsewhere / "liar.log").exists()


def test_the_runs_module_named_the_other_way_is_the_same_module(tmp_path: Path) -> None:
    """Driven with ``--agents mypkg.agents``, decided with ``--agents mypkg/agents.py``: one
    module, taken (review s11 r3 #9: refused as another one)."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "agents.py").write_text(AGENTS)
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    store = tmp_path / "runs.db"
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "mypkg.agents",
                        "--judge", "judge", "--store", str(store), "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    approved = _lockgate(tmp_path, "gate", "approve", run_id, "review", "--agents", "mypkg/agents.py",
                         "--store", str(store))
    assert approved.returncode == 0, approved.stderr
    assert _status(tmp_path, store, run_id) == "complete" and _judged(tmp_path / "mypkg") == 2
