"""A run started with ``--judge NAME`` keeps its judge when resumed (real ``lockgate`` processes;
review s10 F7 #1). The drive records the judge's name with its claim, as it records the
``--agents`` module and the configuration file, so that:

- the resume commands ``gate revise``, ``resume`` and ``why`` print name it (``--judge NAME``;
  they left it out, and that resume ran every judged ensure with no judge: it failed closed, the
  run ended error/retries_exhausted for good, its agent calls spent);
- a resume given no ``--judge`` judges with the recorded one, and says so on stderr;
- a resume whose recorded judge names no agent here is refused before any agent is called, with
  the command that gives it (its configuration file is gone);
- a run whose judge came from lockgate.toml records none, and its commands name none.

Review s10 F9: the recorded judge is a name lockgate.toml may define, so a resume from a folder
finding another configuration file is refused; a ``gate approve`` that runs an evaluate command
keeps it; a flow with no judged ensure needs none; the refusal's command names the run's
lockgate.toml from another folder, and a notebook's refusal says how a notebook gives the judge.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from cli_support import lockgate_argv, lockgate_env
from judged_flows import JUDGE_AGENTS as AGENTS

SPEC = """version: 1
contracts:
  Answer: {answer: string}
flows:
  entry: research
  research:
    input: {question: string}
    output: {from: "${answer.output}", contract: Answer}
    max_rounds: 2
    steps:
      - id: answer
        do: "Answer ${input.question}"
        agent: writer
        out: Answer
        ensure:
          - judged: {statement: "The answer is supported", stakes: default}
      - id: review
        after: [answer]
        gate: {on_approve: null, on_revise: answer, on_kill: null}
"""



def _lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True,
                          text=True, timeout=120)


def _started(tmp_path: Path, *options: str) -> str:
    """A run of SPEC in ``tmp_path`` waiting at its gate (driven with ``options``)."""
    return _started_with(tmp_path, SPEC, *options)


def _started_with(tmp_path: Path, spec: str, *options: str) -> str:
    """A run of ``spec`` in ``tmp_path`` waiting at its gate (driven with ``options``), its
    answer step judged once."""
    (tmp_path / "flow.stratum.yaml").write_text(spec)
    (tmp_path / "agents.py").write_text(AGENTS)
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        *options, "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    assert (tmp_path / "judged.log").read_text().count("judged") == 1
    return run_id


def test_printed_resume_commands_name_the_judge_and_a_bare_resume_keeps_it(tmp_path: Path) -> None:
    run_id = _started(tmp_path, "--judge", "judge")
    expected = f"lockgate run --resume {run_id} --agents agents.py --judge judge"
    revised = _lockgate(tmp_path, "gate", "revise", run_id, "review", "--note", "again")
    assert revised.returncode == 0, revised.stderr
    assert expected in revised.stdout + revised.stderr
    for command in (("why", run_id), ("resume", run_id)):
        shown = _lockgate(tmp_path, *command)
        assert expected in shown.stdout + shown.stderr, (command, shown.stdout, shown.stderr)

    resumed = _lockgate(tmp_path, "run", "--resume", run_id, "--agents", "agents.py", "--no-prompt")
    assert resumed.returncode == 3, resumed.stderr  # at the gate again: the judge held the answer
    assert f"judging with --judge judge, the judge run {run_id} was driven with" in resumed.stderr
    assert (tmp_path / "judged.log").read_text().count("judged") == 2
    assert f"then continue it with: {expected}" in resumed.stderr  # recorded again by this drive


def test_a_recorded_judge_that_names_no_agent_here_is_refused_with_the_command(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "lockgate.toml"
    config.parent.mkdir()
    config.write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    run_id = _started(tmp_path, "--config", "cfg/lockgate.toml", "--judge", "verifier")
    assert _lockgate(tmp_path, "gate", "revise", run_id, "review", "--note", "again").returncode == 0
    config.unlink()  # the agent named verifier is gone with it

    resumed = _lockgate(tmp_path, "run", "--resume", run_id, "--agents", "agents.py", "--no-prompt")
    assert resumed.returncode == 2, resumed.stderr
    assert (f"run {run_id} was driven with --judge verifier, and no agent named 'verifier' is here"
            in resumed.stderr)
    assert f"lockgate run --resume {run_id} --agents agents.py --judge verifier" in resumed.stderr
    assert (tmp_path / "judged.log").read_text().count("judged") == 1  # nothing was called
    listed = json.loads(_lockgate(tmp_path, "runs", "--format", "json").stdout)
    assert [run["status"] for run in listed] == ["running"]  # left to resume once the judge is given


def test_a_judge_from_lockgate_toml_is_not_named(tmp_path: Path) -> None:
    (tmp_path / "lockgate.toml").write_text('judge = "judge"\n')
    run_id = _started(tmp_path)
    revised = _lockgate(tmp_path, "gate", "revise", run_id, "review", "--note", "again")
    assert revised.returncode == 0, revised.stderr
    assert f"lockgate run --resume {run_id} --agents agents.py\n" in revised.stdout + revised.stderr
    assert "--judge" not in revised.stdout + revised.stderr
    resumed = _lockgate(tmp_path, "run", "--resume", run_id, "--agents", "agents.py", "--no-prompt")
    assert resumed.returncode == 3, resumed.stderr
    assert "judging with" not in resumed.stderr
    assert (tmp_path / "judged.log").read_text().count("judged") == 2


def test_a_recorded_judge_from_another_folders_config_is_refused(tmp_path: Path) -> None:
    """The recorded judge is a name lockgate.toml resolves: a bare resume from a folder whose
    lockgate.toml defines that name otherwise is refused, as for the flow's own agents (review s10
    F9 #1: it judged with the other folder's adapter)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "lockgate.toml").write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    (b / "lockgate.toml").write_text('[agents.verifier]\ntype = "python"\ncallable = "bjudge:judge"\n')
    (b / "bjudge.py").write_text(AGENTS.replace("judged.log", "judged-b.log"))
    run_id = _started(a, "--judge", "verifier")
    assert _lockgate(a, "gate", "revise", run_id, "review", "--note", "again").returncode == 0
    store = ("--store", str(a / ".lockgate" / "lockgate.db"))

    refused = _lockgate(b, "run", "--resume", run_id, "--agents", "../a/agents.py", *store, "--no-prompt")
    assert refused.returncode != 0
    assert (f"run {run_id} was driven with the configuration {(a / 'lockgate.toml').resolve()}, but this "
            f"resume found {(b / 'lockgate.toml').resolve()}") in refused.stderr
    assert "judging with --judge" not in refused.stderr  # said only of a resume taken (review s10 F12 #4)
    assert not (b / "judged-b.log").exists()
    assert (a / "judged.log").read_text().count("judged") == 1

    chosen = _lockgate(b, "run", "--resume", run_id, "--agents", "../a/agents.py", *store, "--config",
                       "../a/lockgate.toml", "--no-prompt")
    assert chosen.returncode == 3, chosen.stderr  # at the gate again, judged by a's verifier
    assert (a / "judged.log").read_text().count("judged") == 2
    assert not (b / "judged-b.log").exists()


CHECKED_SPEC = SPEC.replace("gate: {on_approve: null, on_revise: answer, on_kill: null}", """gate: {on_approve: check, on_revise: answer, on_kill: null}
      - id: check
        evaluate: {command: "cat > /dev/null; cat verdict.json", timeout_ms: 60000}
        out: Verdict
      - id: final
        after: [check]
        do: "Final"
        agent: writer
        out: Answer
        ensure:
          - judged: {statement: "The final is supported", stakes: default}""").replace(
    "  Answer: {answer: string}\n", "  Answer: {answer: string}\n  Verdict: {status: string, children: array, reason: string}\n")


def test_gate_approve_running_a_command_keeps_the_judge(tmp_path: Path) -> None:
    """``gate approve`` runs the evaluate command it released under a claim of its own: that
    claim keeps the recorded judge, so the resume it prints names it and a bare resume judges
    with it (review s10 F9 #2: both had lost it, and the run ended error/retries_exhausted)."""
    (tmp_path / "verdict.json").write_text('{"status": "closed", "children": [], "reason": "ok"}')
    run_id = _started_with(tmp_path, CHECKED_SPEC, "--judge", "judge")
    approved = _lockgate(tmp_path, "gate", "approve", run_id, "review")
    assert approved.returncode == 0, approved.stderr
    assert "running the command of evaluate step check" in approved.stdout + approved.stderr
    expected = f"lockgate run --resume {run_id} --agents agents.py --judge judge"
    assert expected in approved.stdout + approved.stderr
    assert expected in _lockgate(tmp_path, "resume", run_id).stdout

    resumed = _lockgate(tmp_path, "run", "--resume", run_id, "--agents", "agents.py", "--no-prompt")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"answer": "a"}
    assert (tmp_path / "judged.log").read_text().count("judged") == 2


def test_a_recorded_judge_the_flow_never_asks_is_not_required(tmp_path: Path) -> None:
    """A flow with no judged ensure needs no judge: a resume whose recorded judge names no agent
    here goes on, and the printed commands name none (review s10 F9 #3: it was refused)."""
    config = tmp_path / "cfg" / "lockgate.toml"
    config.parent.mkdir()
    config.write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    unjudged = SPEC.replace('        ensure:\n          - judged: {statement: "The answer is supported", stakes: default}\n', "")
    (tmp_path / "flow.stratum.yaml").write_text(unjudged)
    (tmp_path / "agents.py").write_text(AGENTS)
    started = _lockgate(tmp_path, "run", "flow.stratum.yaml", "--input", "question=q", "--agents", "agents.py",
                        "--config", "cfg/lockgate.toml", "--judge", "verifier", "--no-prompt")
    assert started.returncode == 3, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    revised = _lockgate(tmp_path, "gate", "revise", run_id, "review", "--note", "again")
    assert revised.returncode == 0, revised.stderr
    assert "--judge" not in revised.stdout + revised.stderr
    config.unlink()  # no agent named verifier here any more

    resumed = _lockgate(tmp_path, "run", "--resume", run_id, "--agents", "agents.py", "--no-prompt")
    assert resumed.returncode == 3, resumed.stderr  # answered again, at the gate for round 2
    assert "verifier" not in resumed.stderr
    assert not (tmp_path / "judged.log").exists()


def _given_command(refusal: str) -> list[str]:
    """The resume command a judge refusal gives, as argv for this Python."""
    command = re.search(r"Give the agents that define it: lockgate (.*?), or choose", refusal)
    assert command is not None, refusal
    return shlex.split(command.group(1))


def test_the_judge_refusal_from_another_folder_gives_a_command_that_works(tmp_path: Path) -> None:
    """From a folder without the run's lockgate.toml (which defines its recorded judge), the
    refusal's command names that file too; typed as given, it resumes the run with that judge
    (review s10 F9 #4: the command left --config out, and was refused in turn)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "lockgate.toml").write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    run_id = _started(a, "--judge", "verifier")
    assert _lockgate(a, "gate", "revise", run_id, "review", "--note", "again").returncode == 0
    store = str(a / ".lockgate" / "lockgate.db")

    refused = _lockgate(b, "run", "--resume", run_id, "--agents", "../a/agents.py", "--store", store, "--no-prompt")
    assert refused.returncode == 2, refused.stderr
    command = _given_command(refused.stderr)
    assert command[command.index("--config") + 1] == "../a/lockgate.toml"
    resumed = _lockgate(b, *command, "--no-prompt")
    assert resumed.returncode == 3, resumed.stderr  # answered again and judged, at the gate for round 2
    assert (a / "judged.log").read_text().count("judged") == 2


def test_a_notebook_resume_refused_for_its_judge_says_what_works_there(tmp_path: Path, monkeypatch) -> None:
    """``%flow resume RUN --agents VAR`` of a run driven with ``--judge verifier``, no agent of
    that name being here: the refusal says how a notebook gives it (review s10 F9 #4: it gave the
    CLI's ``--judge`` words, which ``%flow resume`` has no option for)."""
    from kernel_ext.kernel_session import KernelSession

    config = tmp_path / "cfg" / "lockgate.toml"
    config.parent.mkdir()
    config.write_text('[agents.verifier]\ntype = "python"\ncallable = "agents:judge"\n')
    run_id = _started(tmp_path, "--config", "cfg/lockgate.toml", "--judge", "verifier")
    assert _lockgate(tmp_path, "gate", "revise", run_id, "review", "--note", "again").returncode == 0
    config.unlink()  # the agent named verifier is gone with it
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)

    kernel = KernelSession(tmp_path)
    try:
        kernel.run("def writer(task):\n    return {'answer': 'a'}\nmy_agents = {'writer': writer}")
        out = kernel.run(f"%flow resume {run_id} --agents my_agents")
    finally:
        kernel.close()
    assert out.error is not None, out.shown
    said = out.error["evalue"]
    assert f"run {run_id} was driven with the judge 'verifier', and no agent named 'verifier' is here" in said
    assert f"add 'verifier' to my_agents (a dict: agent name -> function) and run `%flow resume {run_id} " \
           "--agents my_agents` again" in said
    assert "--judge" not in said and "lockgate run" not in said
    assert (tmp_path / "judged.log").read_text().count("judged") == 1
