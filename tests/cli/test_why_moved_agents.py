"""In a moved project whose ``--agents`` module (which defines the run's judge) is gone from
where the run recorded it, the gate commands ``lockgate why`` prints ask for the module as the
refusal of a decision without it does: ``--agents <your agents module>`` (session 11's weak
point: they had no ``--agents`` at all, and the command printed was refused). Real ``lockgate``
processes, a real project folder moved with ``os.rename``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_support import lockgate_argv, lockgate_env
from judged_flows import GATED_SPEC, JUDGE_AGENTS

from lockgate.cli.hints import AGENTS_PLACEHOLDER


def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True,
                          text=True, timeout=120, check=False)


def _moved_run(tmp_path: Path) -> tuple[Path, str]:
    """A run driven with ``--judge judge`` (a function of agents.py) waiting at its gate, its
    project folder then moved: (the folder now, the run's id)."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    (before / "flow.stratum.yaml").write_text(GATED_SPEC)
    (before / "agents.py").write_text(JUDGE_AGENTS)
    started = _lockgate(before, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", "runs.db", "--no-prompt")
    assert started.returncode == 3, started.stderr
    os.rename(before, after)
    return after, json.loads(started.stdout)["run_id"]


def test_why_asks_for_the_gone_module_as_the_refusal_does(tmp_path: Path) -> None:
    folder, run_id = _moved_run(tmp_path)
    why = _lockgate(folder, "why", run_id, "--store", "runs.db")
    assert why.returncode == 0, why.stderr
    approve = f'lockgate gate approve {run_id} review --note "..." --store runs.db --agents {AGENTS_PLACEHOLDER}'
    assert approve in why.stdout.splitlines()[2], why.stdout

    refused = _lockgate(folder, "gate", "approve", run_id, "review", "--store", "runs.db")
    assert refused.returncode == 1
    assert f"run this command again with --agents {AGENTS_PLACEHOLDER}" in refused.stderr, refused.stderr

    # the printed command, its placeholder filled in with the module where it is now, decides
    typed = approve.replace('--note "..."', "--note ok").replace(AGENTS_PLACEHOLDER, "agents.py").split()[1:]
    approved = _lockgate(folder, *typed)
    assert approved.returncode == 0, approved.stderr
    assert (folder / "judged.log").read_text().split() == ["judged", "judged"]  # answer's, then final's


def test_the_modules_own_folder_names_it_as_before(tmp_path: Path) -> None:
    """Not moved, the module is named as it is typed here (the placeholder only stands for a
    module that is gone)."""
    folder = tmp_path / "here"
    folder.mkdir()
    (folder / "flow.stratum.yaml").write_text(GATED_SPEC)
    (folder / "agents.py").write_text(JUDGE_AGENTS)
    started = _lockgate(folder, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--judge", "judge", "--store", "runs.db", "--no-prompt")
    run_id = json.loads(started.stdout)["run_id"]
    why = _lockgate(folder, "why", run_id, "--store", "runs.db")
    assert f'lockgate gate approve {run_id} review --note "..." --agents agents.py --store runs.db' in why.stdout
    assert AGENTS_PLACEHOLDER not in why.stdout
